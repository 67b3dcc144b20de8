"""Policy files (policies/*.toml) -> a validated Policy.

A policy holds the numbers the design fixes: caps, compaction targets, lifecycle rules and
lock timings. Unknown keys and bad values are refused with one line naming the key.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import PolicyError
from .store.caps import Caps
from .store.paths import TIERS

PositiveInt = Annotated[int, Field(gt=0, strict=True)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SpinePolicy(_Strict):
    max_lines: PositiveInt = 80
    max_bytes: PositiveInt = 16000
    entry_max_bytes: PositiveInt = 400
    compact_at_lines: PositiveInt = 60
    compact_at_bytes: PositiveInt = 12000
    entry_target_bytes: PositiveInt = 200
    migrate_max_lines: PositiveInt = 75  # a migration aims at or under these (and the caps): room to grow
    migrate_max_bytes: PositiveInt = 15000

    @model_validator(mode="after")
    def _targets_within_caps(self) -> "SpinePolicy":
        if self.compact_at_lines > self.max_lines:
            raise ValueError(f"compact_at_lines: must not exceed max_lines ({self.max_lines})")
        if self.compact_at_bytes > self.max_bytes:
            raise ValueError(f"compact_at_bytes: must not exceed max_bytes ({self.max_bytes})")
        if self.entry_target_bytes > self.entry_max_bytes:
            raise ValueError(f"entry_target_bytes: must not exceed entry_max_bytes ({self.entry_max_bytes})")
        return self


class TierFilePolicy(_Strict):
    max_lines: PositiveInt = 60
    max_bytes: PositiveInt = 6000
    compact_at_lines: PositiveInt = 45
    compact_at_bytes: PositiveInt = 4500

    @model_validator(mode="after")
    def _targets_within_caps(self) -> "TierFilePolicy":
        if self.compact_at_lines > self.max_lines:
            raise ValueError(f"compact_at_lines: must not exceed max_lines ({self.max_lines})")
        if self.compact_at_bytes > self.max_bytes:
            raise ValueError(f"compact_at_bytes: must not exceed max_bytes ({self.max_bytes})")
        return self


class LifecyclePolicy(_Strict):
    staleness_threshold_days: PositiveInt = 90
    candidate_dirs: tuple[str, ...] = ("projects",)

    @model_validator(mode="after")
    def _known_tiers(self) -> "LifecyclePolicy":
        unknown = [d for d in self.candidate_dirs if d not in TIERS]
        if unknown:
            raise ValueError(f"candidate_dirs: not a tier directory: {', '.join(unknown)} (tiers: {', '.join(TIERS)})")
        return self


class LockPolicy(_Strict):
    stale_seconds: PositiveInt = 300
    poll_seconds: Annotated[float, Field(gt=0)] = 2
    takeover_wait_seconds: Annotated[float, Field(gt=0)] = 10


class Policy(_Strict):
    spine: SpinePolicy = SpinePolicy()
    tier_file: TierFilePolicy = TierFilePolicy()
    lifecycle: LifecyclePolicy = LifecyclePolicy()
    lock: LockPolicy = LockPolicy()

    @property
    def caps(self) -> Caps:
        return Caps(
            spine_max_lines=self.spine.max_lines,
            spine_max_bytes=self.spine.max_bytes,
            entry_max_bytes=self.spine.entry_max_bytes,
            file_max_lines=self.tier_file.max_lines,
            file_max_bytes=self.tier_file.max_bytes,
        )


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    named = re.match(r"^([a-z_]+): ", message) if first["type"] == "value_error" else None
    if named:  # a cross-field rule names the key it is about
        key = f"{key}.{named.group(1)}" if key != "(top level)" else named.group(1)
        message = message[named.end():]
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    elif "input" in first and first["type"] != "value_error":
        message += f" (got {first['input']!r})"
    return f"{key}: {message}"


def parse_policy(text: str, source: str) -> Policy:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(f"policy file {source}: not valid TOML: {error}") from None
    try:
        return Policy.model_validate(data)
    except ValidationError as error:
        raise PolicyError(f"policy file {source}: {_first_error(error)}") from None


def load_policy(path: Path | str | None = None) -> Policy:
    """Load a policy file, or the shipped default.toml when ``path`` is None."""
    if path is None:
        text = resources.files("distilld.policies").joinpath("default.toml").read_text("utf-8")
        return parse_policy(text, "default.toml")
    location = Path(path).expanduser()
    try:
        text = location.read_text("utf-8")
    except FileNotFoundError:
        raise PolicyError(f"policy file {location}: not found; pass an existing file or drop --policy") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyError(f"policy file {location}: cannot read it ({error})") from None
    return parse_policy(text, str(location))
