"""Policy files (policies/*.toml) -> a validated Policy.

A policy holds the numbers the design fixes: caps, compaction targets, lifecycle rules and
lock timings. Unknown keys and bad values are refused with one line naming the key. A file
sets what it changes: every other key keeps the value of the shipped default.toml, the only
place a default number is written (``Policy.limits`` carries them to every check and planner).

The models are frozen dataclasses checked by a few lines of code rather than pydantic models:
every command loads a policy, and importing pydantic for four tables of numbers was most of a
short command's start-up. The limits' tables are store/limits.py's models, so that the store's
own checks take them without importing this module.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import tomllib
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from .errors import LockUsageError, PolicyError
from .store.limits import LifecycleLimits, Limits, SpineLimits, TierFileLimits
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


def _whole_numbers(key: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise _Invalid(key, f"must be a list of whole numbers (got {value!r})")
    return tuple(value)


def _not_above(table: str, low: str, high: str, values: Any) -> None:
    if getattr(values, low) > getattr(values, high):
        raise _Invalid(f"{table}.{low}", f"must not exceed {high} ({getattr(values, high)})")


def _check_spine(spine: SpineLimits) -> None:
    _not_above("spine", "compact_at_lines", "max_lines", spine)
    _not_above("spine", "compact_at_bytes", "max_bytes", spine)
    _not_above("spine", "entry_target_bytes", "entry_max_bytes", spine)
    floors = spine.hook_floors
    if not floors or min(floors) < 0 or any(high <= low for high, low in pairwise(floors)):
        raise _Invalid("spine.hook_floors", f"must be one or more whole numbers of 0 or more, each below "
                                            f"the one before (got {list(floors)!r})")


def _check_tier_file(tier_file: TierFileLimits) -> None:
    _not_above("tier_file", "compact_at_lines", "max_lines", tier_file)
    _not_above("tier_file", "compact_at_bytes", "max_bytes", tier_file)


def _check_lifecycle(lifecycle: LifecycleLimits) -> None:
    unknown = [d for d in lifecycle.candidate_dirs if d not in TIERS]
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
    limits: Limits  # every check, budget and planner works to these
    lock: LockTimings = LockTimings()


# The policy file's tables, and the model each one is read into.
_TABLES: dict[str, type[Any]] = {
    "spine": SpineLimits, "tier_file": TierFileLimits, "lifecycle": LifecycleLimits, "lock": LockTimings}
# How each key's value is checked, by its declared type.
_CHECKS = {"int": _positive_int, "float": _positive_number, "tuple[str, ...]": _names,
           "tuple[int, ...]": _whole_numbers}


def _unknown(key: str, known: list[str]) -> str:
    """"unknown key", with the nearest known one when a typo is likely."""
    import difflib  # only a bad policy pays for it

    near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"unknown key (did you mean {near[0]!r}?)" if near else f"unknown key (known: {', '.join(sorted(known))})"


def _section(name: str, model: type[Any], data: dict[str, Any]) -> Any:
    declared = {f.name: str(f.type) for f in dataclasses.fields(model)}
    for key in data:
        if key not in declared:
            raise _Invalid(f"{name}.{key}", _unknown(key, list(declared)))
    return model(**{key: _CHECKS[declared[key]](f"{name}.{key}", value) for key, value in data.items()})


def _shipped_text(name: str) -> str:
    """A policy file shipped with distilld. Read from the package's folder when it is one:
    importlib.resources (and the zipfile it brings) costs `check` more than the whole policy;
    it only serves an install that is not plain files (a zip)."""
    policies = importlib.import_module(f"{__package__}.policies")  # policies/ is mapped in, not daemon/
    spec = policies.__spec__
    if spec is not None and spec.has_location and spec.origin and os.path.isfile(spec.origin):
        return Path(spec.origin).with_name(name).read_text("utf-8")
    from importlib import resources

    return resources.files(policies).joinpath(name).read_text("utf-8")


@cache
def _default_data() -> dict[str, Any]:
    """The shipped default.toml, parsed: the one place every default number is written."""
    text = _shipped_text("default.toml")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(f"policy file default.toml (shipped with distilld): not valid TOML: {error}; "
                          f"reinstall distilld") from None


def policy_from_data(data: dict[str, Any]) -> Policy:
    """A Policy from parsed TOML, each table over the shipped default's; raises ValueError naming
    the first bad key."""
    for name, table in data.items():
        if name not in _TABLES:
            raise _Invalid(name, _unknown(name, list(_TABLES)))
        if not isinstance(table, dict):
            raise _Invalid(name, f"must be a table (got {table!r})")
    defaults = _default_data()
    tables = {name: _section(name, model, {**defaults.get(name, {}), **data.get(name, {})})
              for name, model in _TABLES.items()}
    limits = Limits(tables["spine"], tables["tier_file"], tables["lifecycle"])
    _check_spine(limits.spine)
    _check_tier_file(limits.tier_file)
    _check_lifecycle(limits.lifecycle)
    return Policy(limits, tables["lock"])


def parse_policy(text: str, source: str) -> Policy:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PolicyError(f"policy file {source}: not valid TOML: {error}", file=source) from None
    try:
        return policy_from_data(data)
    except ValueError as error:
        raise PolicyError(f"policy file {source}: {error}", file=source) from None


def load_policy(path: Path | str | None = None) -> Policy:
    """Load a policy file, or the shipped default.toml when ``path`` is None."""
    if path is None:
        return parse_policy("", "default.toml")
    location = Path(path).expanduser()
    try:
        text = location.read_text("utf-8")
    except FileNotFoundError:
        raise PolicyError(f"policy file {location}: not found; pass an existing file or drop --policy",
                          file=location) from None
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyError(f"policy file {location}: cannot read it ({error})", file=location) from None
    return parse_policy(text, str(location))
