"""Where distilld keeps its machine-local files, and the default store, without loading pydantic:
`distilld check` and `distilld --help` need these and nothing heavier.

Each folder comes from platformdirs and can be moved with an environment variable. On Linux
the config and state folders are worked out here, as platformdirs does, without importing it:
platformdirs (and the tempfile, shutil and random it brings) cost `check` more CPU than the
check of a small store, and `check` needs both folders (the config file, the ledger it saw).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

APP = "distilld"
DEFAULT_STORE = "~/.aura-distill"
CONFIG_NAME = "config.toml"


def _env_dir(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser().absolute() if value else None


def _plain_linux() -> bool:
    """Linux and not an Android app: there platformdirs answers from XDG_* and HOME alone."""
    if sys.platform != "linux" or hasattr(sys, "getandroidapilevel"):
        return False
    return not (os.environ.get("ANDROID_DATA") or os.environ.get("ANDROID_ROOT"))


def _xdg_user_dir(variable: str, default: str) -> str | None:
    """platformdirs' answer for a user folder on plain Linux: $VARIABLE if it is absolute, else
    ``default`` under an absolute $HOME when $VARIABLE is unset or empty; None for what only
    platformdirs settles (another platform, a relative $VARIABLE, which its versions treat
    differently, no usable HOME), so that the caller asks it."""
    if not _plain_linux():
        return None
    base = os.environ.get(variable, "")
    if base:
        return os.path.join(base, APP) if os.path.isabs(base) else None
    if not os.path.isabs(os.environ.get("HOME", "")):
        return None
    return os.path.join(os.path.expanduser(default), APP)


def user_config_dir() -> str:
    found = _xdg_user_dir("XDG_CONFIG_HOME", "~/.config")
    if found is not None:
        return found
    import platformdirs  # other platforms, and Linux without a usable HOME

    return platformdirs.user_config_dir(APP)


def user_state_dir() -> str:
    found = _xdg_user_dir("XDG_STATE_HOME", "~/.local/state")
    if found is not None:
        return found
    import platformdirs

    return platformdirs.user_state_dir(APP)


def config_dir() -> Path:
    return _env_dir("DISTILLD_CONFIG_DIR") or Path(user_config_dir())


def config_file(explicit: Path | None = None) -> Path:
    """The config file: --config, else $DISTILLD_CONFIG, else config.toml in the config dir."""
    if explicit is not None:
        return Path(explicit).expanduser().absolute()
    return _env_dir("DISTILLD_CONFIG") or config_dir() / CONFIG_NAME


def state_dir() -> Path:
    return _env_dir("DISTILLD_STATE_DIR") or Path(user_state_dir())


def runtime_dir() -> Path:
    found = _env_dir("DISTILLD_RUNTIME_DIR")
    if found:
        return found
    import warnings

    import platformdirs  # the runtime folder has checks of its own: always platformdirs'

    with warnings.catch_warnings():
        # Without $XDG_RUNTIME_DIR platformdirs warns and falls back to /tmp/runtime-<uid>;
        # ensure_private_dir() then checks that folder really is ours.
        warnings.simplefilter("ignore")
        return Path(platformdirs.user_runtime_dir(APP))


def default_store() -> Path:
    """The store when none is given: $DISTILLD_STORE, else the config file's, else ~/.aura-distill.
    Only a config file that exists is parsed and validated (all of it: without pydantic when it
    is plain, plain_settings.py, else with the full settings)."""
    from_env = os.environ.get("DISTILLD_STORE")
    if from_env:
        return Path(from_env).expanduser().absolute()
    if not config_file().exists():
        return Path(DEFAULT_STORE).expanduser()
    from .plain_settings import checked_config_data

    data = checked_config_data()
    if data is not None:  # as the model's validator makes it: expanded, then absolute
        return Path(os.path.abspath(Path(data.get("store", DEFAULT_STORE)).expanduser()))
    from .settings import load_settings

    return load_settings().store


def instance_key(store: Path) -> str:
    """A short, stable name for one store: its folder name and a hash of its full path."""
    resolved = str(Path(store).expanduser().absolute())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name).strip(".-")[:24] or "store"
    return f"{slug}-{hashlib.sha256(resolved.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"
