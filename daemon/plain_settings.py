"""The settings checked without pydantic when they are plain, for commands that need one or two of
them (`sync` and `init`: git.extra_folders) and must still refuse a bad configuration.

pydantic and pydantic-settings cost a one-shot `distilld sync` about 0.2 s of CPU to import,
three times what its work costs when there is nothing to do. So the environment and the config
file are first checked here, key by key, against a copy of the model's rules (settings.py; a
test keeps the two equal). Only a configuration that certainly passes the model, with every key
known and every value of the exact type and in range, is taken from here. Anything else (a
typo, a value the model would convert or refuse, a nested DISTILLD_ variable) goes to the
model, which accepts it or refuses it with its own message: the answer never differs, only
what it costs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .config_file import read_config
from .errors import ConfigError
from .locations import config_file

ENV_PREFIX = "DISTILLD_"

# DISTILLD_* variables that are not settings keys: folders, command-line option defaults, the
# service's files and the crash-test hooks. Any other top-level one is a typo (DISTILLD_STOR).
OTHER_VARIABLES = frozenset({
    "CONFIG", "CONFIG_DIR", "STATE_DIR", "RUNTIME_DIR", "POLICY", "SSH_KEY", "GIT_EMAIL", "GIT_NAME",
    "GIT_TOKEN", "GIT_USER", "BAD_SETTINGS_FILE", "CRASH_AT", "CRASH_SIGNAL", "PAUSE_AT", "PAUSE_FILE",
})


class Rule:
    """What one key accepts without any conversion by the model: ``kind`` is float, int, bool,
    choice, text, path or folders; the bounds and choices are the model's Field's."""

    __slots__ = ("kind", "gt", "ge", "le", "choices", "lower", "min_length", "pattern")

    def __init__(self, kind: str, *, gt: float | None = None, ge: float | None = None, le: float | None = None,
                 choices: tuple[str, ...] = (), lower: bool = False, min_length: int = 0,
                 pattern: str | None = None) -> None:
        self.kind, self.gt, self.ge, self.le = kind, gt, ge, le
        self.choices, self.lower, self.min_length, self.pattern = choices, lower, min_length, pattern

    def accepts(self, value: Any) -> bool:
        """True only when the model is sure to accept ``value``; False means "ask the model"."""
        kind = self.kind
        if kind in ("float", "int"):
            allowed = (int, float) if kind == "float" else (int,)
            return type(value) in allowed and self._in_bounds(value)
        if kind == "bool":
            return type(value) is bool
        if type(value) is not str and kind != "folders":
            return False
        if kind == "choice":
            return (value.lower() if self.lower else value) in self.choices
        if kind == "text":
            return len(value) >= self.min_length and (self.pattern is None or re.fullmatch(self.pattern, value)
                                                      is not None)
        if kind == "path":
            return _plain_path(value)
        return kind == "folders" and _plain_folders(value)

    def _in_bounds(self, value: float) -> bool:
        return ((self.gt is None or value > self.gt) and (self.ge is None or value >= self.ge)
                and (self.le is None or value <= self.le))


def _plain_path(value: str) -> bool:
    """A path the model takes as it is, then expands: no NUL, not blank (the model refuses a blank
    store or policy, and whether it takes a blank ssh_key is its own business), a ~ that expands."""
    if not value.strip() or "\x00" in value:
        return False
    try:
        Path(value).expanduser()
    except (RuntimeError, KeyError, OSError):  # no home to expand ~ to: the model says what happens
        return False
    return True


def _plain_folders(value: Any) -> bool:
    from .store.unmanaged import check_extra_folder

    if type(value) is not list or not all(type(item) is str for item in value):
        return False
    try:
        for name in value:
            check_extra_folder(name)
    except ValueError:
        return False
    return True


def _minutes() -> Rule:
    return Rule("int", ge=0, le=525600)


# A copy of settings.py's model, key by key (tests/runtime/test_plain_settings.py keeps them equal).
TOP_LEVEL: dict[str, Rule] = {"store": Rule("path"), "policy": Rule("path")}
SECTIONS: dict[str, dict[str, Rule]] = {
    "watch": {
        "quiet_seconds": Rule("float", gt=0, le=600),
        "max_wait_seconds": Rule("float", gt=0, le=3600),
        "observer": Rule("choice", choices=("auto", "polling")),
        "polling_interval_seconds": Rule("float", gt=0, le=3600),
    },
    "schedule": {
        "compaction_minutes": _minutes(), "lifecycle_minutes": _minutes(), "sync_minutes": _minutes(),
        "reconcile_minutes": _minutes(), "report_minutes": _minutes(),
        "jitter_seconds": Rule("int", ge=0, le=3600),
        "compact_on_breach": Rule("bool"),
    },
    "git": {
        "commit": Rule("bool"),
        "push": Rule("bool"),
        "remote": Rule("text", min_length=1, pattern=r"[A-Za-z0-9._-]+"),
        "author_name": Rule("text", min_length=1),
        "author_email": Rule("text", min_length=1),
        "ssh_user": Rule("text", min_length=1),
        "ssh_key": Rule("path"),
        "use_ssh_agent": Rule("bool"),
        "token_file": Rule("path"),
        "extra_folders": Rule("folders"),
    },
    "log": {
        "level": Rule("choice", choices=("debug", "info", "warning", "error"), lower=True),
        "console": Rule("choice", choices=("auto", "plain", "journal", "json", "off")),
        "max_bytes": Rule("int", ge=10_000, le=1_000_000_000),
        "backups": Rule("int", ge=0, le=100),
    },
}
SETTING_NAMES = frozenset(TOP_LEVEL) | frozenset(SECTIONS)
WATCH_DEFAULTS = {"quiet_seconds": 2.0, "max_wait_seconds": 30.0}  # for the one rule across two keys


def refuse_unknown_variables() -> None:
    """A top-level DISTILLD_ variable nothing reads is refused, with the nearest known name
    (issue 27: DISTILLD_STOR=/x was accepted silently). Nested ones (A__B) are the model's."""
    known = {name.upper() for name in SETTING_NAMES} | OTHER_VARIABLES
    for variable in sorted(os.environ):
        name = variable.removeprefix(ENV_PREFIX)
        if variable.startswith(ENV_PREFIX) and "__" not in name and name not in known and not name.startswith("_"):
            import difflib  # only a typo pays for it

            near = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean ${ENV_PREFIX}{near[0]}?" if near else ""
            raise ConfigError(f"config error at ${variable}: unknown setting{hint} (unset it)")


def _plain_environment() -> bool:
    """No DISTILLD_ variable the model would read, but for a plain $DISTILLD_STORE or $DISTILLD_POLICY
    (names in any other case, nested keys, and whole sections as JSON are the model's to read)."""
    for variable, value in os.environ.items():
        upper = variable.upper()
        if not upper.startswith(ENV_PREFIX):
            continue
        name = upper.removeprefix(ENV_PREFIX).lower()
        if name in TOP_LEVEL:  # the model reads these (POLICY is also --policy's default)
            if variable != upper or (value and not TOP_LEVEL[name].accepts(value)):  # an empty one is ignored
                return False
        elif name.upper() not in OTHER_VARIABLES:
            return False
    return True


def plain_config(data: dict[str, Any]) -> bool:
    """True when the model is sure to accept the parsed config file ``data`` as it is."""
    for key, value in data.items():
        if key in TOP_LEVEL:
            if not TOP_LEVEL[key].accepts(value):
                return False
            continue
        rules = SECTIONS.get(key)
        if rules is None or type(value) is not dict:
            return False
        if not all(name in rules and rules[name].accepts(item) for name, item in value.items()):
            return False
    watch = {**WATCH_DEFAULTS, **data.get("watch", {})}
    return bool(watch["max_wait_seconds"] >= watch["quiet_seconds"])


def checked_config_data() -> dict[str, Any] | None:
    """The config file's data when the settings (environment and file) are certainly valid, with
    the same refusals first as settings.load_settings (an unknown variable, an unreadable file or
    bad TOML); None when only the model can tell."""
    refuse_unknown_variables()
    path = config_file()
    data = read_config(path, bool(os.environ.get("DISTILLD_CONFIG")))
    return data if _plain_environment() and plain_config(data) else None


def checked_extra_folders() -> tuple[str, ...]:
    """git.extra_folders of settings that are valid as a whole: a bad configuration anywhere is
    refused as settings.load_settings refuses it (its message, exit 78)."""
    data = checked_config_data()
    if data is None:
        from .settings import load_settings

        extra: tuple[str, ...] = load_settings().git.extra_folders
        return extra
    return tuple(data.get("git", {}).get("extra_folders", ()))
