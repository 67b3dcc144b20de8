"""Policy files (policies/*.toml) -> a validated Policy.

A policy holds the numbers the design fixes: caps, compaction targets, lifecycle rules and
lock timings. Unknown keys and bad values are refused with one line naming the key.

The models are frozen dataclasses checked by a few lines of code rather than pydantic models:
every command loads a policy, and importing pydantic for four tables of numbers was most of a
short command's start-up.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import LockUsageError, PolicyError
from .store.caps import Caps
from .store.paths import TIERS


class _Invalid(ValueError):
    """A bad value; ``key`` is the dotted name of what it was given for."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")


def _positive_int(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(key, f"must be a whole number (got {value!r})")
    if value <= 0:
        raise _Invalid(key, f"must be greater than 0 (got {value!r})")
    return value


def _positive_number(key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Invalid(key, f"must be a number (got {value!r})")
    if value <= 0:
        raise _Invalid(key, f"must be greater than 0 (got {value!r})")
    return float(value) if isinstance(value, float) else value


def _names(key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Invalid(key, f"must be a list of names (got {value!r})")
    return tuple(value)


def _not_above(section: str, low: str, high: str, values: Any) -> None:
    if getattr(values, low) > getattr(values, high):
        raise _Invalid(f"{section}.{low}", f"must not exceed {high} ({getattr(values, high)})")


@dataclass(frozen=True)
class SpinePolicy:
    max_lines: int = 80
    max_bytes: int = 16000
    entry_max_bytes: int = 400
    compact_at_lines: int = 60
    compact_at_bytes: int = 12000
    entry_target_bytes: int = 200
    migrate_max_lines: int = 75  # a migration aims at or under these (and the caps): room to grow
    migrate_max_bytes: int = 15000

    def __post_init__(self) -> None:
        _not_above("spine", "compact_at_lines", "max_lines", self)
        _not_above("spine", "compact_at_bytes", "max_bytes", self)
        _not_above("spine", "entry_target_bytes", "entry_max_bytes", self)


@dataclass(frozen=True)
class TierFilePolicy:
    max_lines: int = 60
    max_bytes: int = 6000
    compact_at_lines: int = 45
    compact_at_bytes: int = 4500

    def __post_init__(self) -> None:
        _not_above("tier_file", "compact_at_lines", "max_lines", self)
        _not_above("tier_file", "compact_at_bytes", "max_bytes", self)


@dataclass(frozen=True)
class LifecyclePolicy:
    staleness_threshold_days: int = 90
    candidate_dirs: tuple[str, ...] = ("projects",)

    def __post_init__(self) -> None:
        unknown = [d for d in self.candidate_dirs if d not in TIERS]
        if unknown:
            raise _Invalid("lifecycle.candidate_dirs",
                           f"not a tier directory: {', '.join(unknown)} (tiers: {', '.join(TIERS)})")


@dataclass(frozen=True)
class LockTimings:
    """The [lock] table: the store lock's timings in seconds (STORE-FORMAT.md 2.2). These defaults
    are the one place the numbers live; engine/lock takes them from here."""

    stale_seconds: int = 300  # a .lock older than this may be taken over
    poll_seconds: float = 2  # acquire(wait) looks at a held lock again this often
    takeover_wait_seconds: float = 10  # longest wait for the .lock.takeover mutex
    mutex_poll_seconds: float = 0.05  # how often that wait tries the mutex (the script's 50 ms)
    # A daemon job waiting for a held lock looks again after 5 polls, or this long if sooner: the
    # watcher normally wakes it as soon as the lock is released.
    waiting_recheck_seconds: float = 10

    def __post_init__(self) -> None:
        # The lock's usage errors: code builds these directly too, not only from a policy file.
        if not self.stale_seconds > 0:
            raise LockUsageError(f"stale_seconds must be positive (got {self.stale_seconds!r})")
        if not self.poll_seconds > 0:
            raise LockUsageError(f"poll_seconds must be positive (got {self.poll_seconds!r})")
        if not self.takeover_wait_seconds >= 0:  # 0: try the mutex once
            raise LockUsageError(f"takeover_wait_seconds must be >= 0 (got {self.takeover_wait_seconds!r})")
        for name in ("mutex_poll_seconds", "waiting_recheck_seconds"):
            if not getattr(self, name) > 0:
                raise LockUsageError(f"{name} must be positive (got {getattr(self, name)!r})")


@dataclass(frozen=True)
class Policy:
    spine: SpinePolicy = SpinePolicy()
    tier_file: TierFilePolicy = TierFilePolicy()
    lifecycle: LifecyclePolicy = LifecyclePolicy()
    lock: LockTimings = LockTimings()

    @property
    def caps(self) -> Caps:
        return Caps(
            spine_max_lines=self.spine.max_lines,
            spine_max_bytes=self.spine.max_bytes,
            entry_max_bytes=self.spine.entry_max_bytes,
            file_max_lines=self.tier_file.max_lines,
            file_max_bytes=self.tier_file.max_bytes,
        )


# How each key's value is checked, by its declared type.
_CHECKS = {"int": _positive_int, "float": _positive_number, "tuple[str, ...]": _names}


def _section(name: str, model: type[Any], data: object) -> Any:
    if not isinstance(data, dict):
        raise _Invalid(name, f"must be a table (got {data!r})")
    declared = {f.name: str(f.type) for f in dataclasses.fields(model)}
    for key in data:
        if key not in declared:
            raise _Invalid(f"{name}.{key}", "unknown key")
    return model(**{key: _CHECKS[declared[key]](f"{name}.{key}", value) for key, value in data.items()})


def policy_from_data(data: dict[str, Any]) -> Policy:
    """A Policy from parsed TOML; raises ValueError naming the first bad key."""
    sections = {f.name: f.default.__class__ for f in dataclasses.fields(Policy)}
    for name in data:
        if name not in sections:
            raise _Invalid(name, "unknown key")
    return Policy(**{name: _section(name, sections[name], value) for name, value in data.items()})


def parse_policy(text: str, source: str) -> Policy:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(f"policy file {source}: not valid TOML: {error}") from None
    try:
        return policy_from_data(data)
    except ValueError as error:
        raise PolicyError(f"policy file {source}: {error}") from None


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
