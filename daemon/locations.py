"""Where distilld keeps its machine-local files, and the default store, without loading pydantic:
`distilld check` and `distilld --help` need these and nothing heavier.

Each folder comes from platformdirs and can be moved with an environment variable.
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from pathlib import Path

import platformdirs

APP = "distilld"
DEFAULT_STORE = "~/.aura-distill"
CONFIG_NAME = "config.toml"


def _env_dir(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser().absolute() if value else None


def config_dir() -> Path:
    return _env_dir("DISTILLD_CONFIG_DIR") or Path(platformdirs.user_config_dir(APP))


def config_file(explicit: Path | None = None) -> Path:
    """The config file: --config, else $DISTILLD_CONFIG, else config.toml in the config dir."""
    if explicit is not None:
        return Path(explicit).expanduser().absolute()
    return _env_dir("DISTILLD_CONFIG") or config_dir() / CONFIG_NAME


def state_dir() -> Path:
    return _env_dir("DISTILLD_STATE_DIR") or Path(platformdirs.user_state_dir(APP))


def runtime_dir() -> Path:
    found = _env_dir("DISTILLD_RUNTIME_DIR")
    if found:
        return found
    with warnings.catch_warnings():
        # Without $XDG_RUNTIME_DIR platformdirs warns and falls back to /tmp/runtime-<uid>;
        # ensure_private_dir() then checks that folder really is ours.
        warnings.simplefilter("ignore")
        return Path(platformdirs.user_runtime_dir(APP))


def default_store() -> Path:
    """The store when none is given: $DISTILLD_STORE, else the config file's, else ~/.aura-distill.
    Only a config file that exists is parsed and validated (with the full settings)."""
    from_env = os.environ.get("DISTILLD_STORE")
    if from_env:
        return Path(from_env).expanduser().absolute()
    if not config_file().exists():
        return Path(DEFAULT_STORE).expanduser()
    from .settings import load_settings

    return load_settings().store


def instance_key(store: Path) -> str:
    """A short, stable name for one store: its folder name and a hash of its full path."""
    resolved = str(Path(store).expanduser().absolute())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name).strip(".-")[:24] or "store"
    return f"{slug}-{hashlib.sha256(resolved.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"
