"""Reading config.toml without pydantic: a read-only command given its store reads only the one
setting it needs (check: git.extra_folders), so a typo elsewhere in the file, or the cost of
the full settings model, does not touch it (issue 27). The daemon and `config check` validate
the whole file (settings.py)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .locations import config_file

EXTRA_FOLDERS_ENV = "DISTILLD_GIT__EXTRA_FOLDERS"


def read_config(path: Path, explicit: bool) -> dict[str, Any]:
    """The parsed file; {} when it is absent and was not asked for by name."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {path}: not found; create it or drop --config", file=path) from None
        return {}
    except OSError as error:
        raise ConfigError(f"config file {path}: cannot read it ({error.strerror or error})", file=path) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path}: not UTF-8 text", file=path) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path}: not valid TOML: {error}", file=path) from None
    return data


def extra_folders_setting() -> tuple[str, ...]:
    """git.extra_folders from $DISTILLD_GIT__EXTRA_FOLDERS (a JSON list) or the config file, and
    nothing else of it; a bad value of this one key is refused as the settings would refuse it."""
    from .store.unmanaged import check_extra_folder

    from_env = os.environ.get(EXTRA_FOLDERS_ENV)
    if from_env:
        source = f"${EXTRA_FOLDERS_ENV}"
        import json  # only when the variable is set: check does not load json otherwise

        try:
            value: Any = json.loads(from_env)
        except ValueError:
            value = None
    else:
        path = config_file()
        if not path.exists():
            return ()
        source = str(path)
        git = read_config(path, explicit=False).get("git", {})
        value = git.get("extra_folders", []) if isinstance(git, dict) else []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"config error at git.extra_folders: give a list of folder names (fix it in {source})",
                          file=None if source.startswith("$") else source)
    try:
        return tuple(check_extra_folder(name) for name in value)
    except ValueError as error:
        raise ConfigError(f"config error at git.extra_folders: {error} (fix it in {source})",
                          file=None if source.startswith("$") else source) from None
