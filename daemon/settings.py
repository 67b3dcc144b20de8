"""Machine-local settings: a TOML file in the user's config directory, `DISTILLD_*` environment
variables and command-line options, validated strictly (unknown keys and bad values refused).

Precedence, highest first: command-line options, environment, config file, defaults. Settings
never live in the store: the store is shared between machines, these choices are not.

The directories come from platformdirs and can be moved with environment variables, which is
how tests keep away from the real home directory:

* ``DISTILLD_CONFIG`` (the config file itself) or ``DISTILLD_CONFIG_DIR`` (its folder);
* ``DISTILLD_STATE_DIR``: status.json, the activity log and the JSON log, one folder per store;
* ``DISTILLD_RUNTIME_DIR``: the single-instance lock and the control socket.
"""

from __future__ import annotations

import os
import re
import stat
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .config_file import read_config as _read_config
from .errors import ConfigError
# Where things live is in locations.py (no pydantic there, so light commands stay light).
from .locations import APP as APP
from .locations import CONFIG_NAME as CONFIG_NAME
from .locations import DEFAULT_STORE as DEFAULT_STORE
from .locations import config_dir as config_dir
from .locations import config_file as config_file
from .locations import instance_key as instance_key
from .locations import runtime_dir as runtime_dir
from .locations import state_dir as state_dir
# The environment's checks and the model's rules without pydantic, for commands that need little.
from .plain_settings import ENV_PREFIX as ENV_PREFIX
from .plain_settings import refuse_unknown_variables as refuse_unknown_variables

# Linux allows 108 bytes for a Unix socket path, macOS 104; stay under both.
SOCKET_PATH_MAX = 100


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WatchSettings(_Section):
    """How changes in the store are followed."""

    quiet_seconds: float = Field(default=2.0, gt=0, le=600,
                                 description="a change counts once the store has been quiet this long")
    max_wait_seconds: float = Field(default=30.0, gt=0, le=3600,
                                    description="longest wait while changes keep coming")
    observer: Literal["auto", "polling"] = Field(default=
        "auto", description="auto: the OS's file events (polling if they run out); polling: stat the tree")
    polling_interval_seconds: float = Field(default=5.0, gt=0, le=3600,
                                            description="how often the polling observer looks")

    @model_validator(mode="after")
    def _max_wait_covers_quiet(self) -> WatchSettings:
        if self.max_wait_seconds < self.quiet_seconds:
            raise ValueError(f"max_wait_seconds: must be at least quiet_seconds ({self.quiet_seconds})")
        return self


class ScheduleSettings(_Section):
    """How often each scheduled job runs; 0 turns a job off."""

    compaction_minutes: int = Field(default=360, ge=0, le=525600)
    lifecycle_minutes: int = Field(default=1440, ge=0, le=525600)
    sync_minutes: int = Field(default=15, ge=0, le=525600)
    reconcile_minutes: int = Field(default=30, ge=0, le=525600)
    report_minutes: int = Field(default=1440, ge=0, le=525600,
                                description="write the health report (`distilld report`) into the state folder")
    jitter_seconds: int = Field(default=30, ge=0, le=3600)
    compact_on_breach: bool = Field(default=
        True, description="run compaction as soon as a hard cap is breached, not only on schedule")


class GitSettings(_Section):
    """Committing the agents' changes and syncing with a remote (set up by `distilld init`)."""

    commit: bool = Field(default=True, description="commit the agents' changes once the store is quiet")
    push: bool = Field(default=True, description="sync (pull and push) right after a commit, not only on schedule")
    remote: str | None = Field(default=None, min_length=1, pattern=r"^[A-Za-z0-9._-]+$",
                               description="the remote to sync with; default: the one `distilld init` set")
    author_name: str = Field(default="distilld", min_length=1)
    author_email: str = Field(default="distilld@localhost", min_length=1)
    ssh_user: str = Field(default="git", min_length=1)
    ssh_key: Path | None = Field(default=None, description="private key file (libgit2 does not read ~/.ssh/config)")
    use_ssh_agent: bool = True
    token_file: Path | None = Field(default=None, description="a file holding an HTTPS token (keep it 0600)")
    extra_folders: tuple[str, ...] = Field(default=(), description=(
        "top-level store folders to sync as they are (e.g. topics); never moved, cataloged or archived"))

    @field_validator("extra_folders")
    @classmethod
    def _folders(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from .store.unmanaged import check_extra_folder

        return tuple(check_extra_folder(name) for name in value)

    @field_validator("ssh_key", "token_file")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return Path(os.path.abspath(value.expanduser())) if value is not None else None


class LogSettings(_Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    console: Literal["auto", "plain", "journal", "json", "off"] = Field(default=
        "auto", description="what goes to stderr: auto picks journal under systemd, plain on a terminal")
    max_bytes: int = Field(default=1_000_000, ge=10_000, le=1_000_000_000)
    backups: int = Field(default=5, ge=0, le=100)

    @field_validator("level", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


_config_data: ContextVar[dict[str, Any] | None] = ContextVar("distilld_config_data", default=None)


class _ConfigFileSource(PydanticBaseSettingsSource):
    """The already parsed config file (parsed by load_settings, which names the file in errors)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ returns the whole mapping

    def __call__(self) -> dict[str, Any]:
        return dict(_config_data.get() or {})


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        env_ignore_empty=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
    )

    store: Path = Field(default=Path(DEFAULT_STORE), description="the store's folder")
    policy: Path | None = Field(default=None, description="policy file (TOML); the shipped default if unset")
    watch: WatchSettings = WatchSettings()
    schedule: ScheduleSettings = ScheduleSettings()
    git: GitSettings = GitSettings()
    log: LogSettings = LogSettings()

    @field_validator("store", "policy")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        if not str(value).strip():
            raise ValueError("must not be empty")
        return Path(os.path.abspath(value.expanduser()))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _ConfigFileSource(settings_cls))


# -- where things live ---------------------------------------------------------------------


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) or check an existing one is ours and not open to others."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError as error:
        raise ConfigError(f"{path}: cannot create this folder ({error.strerror or error}); "
                          "set DISTILLD_STATE_DIR / DISTILLD_RUNTIME_DIR to a folder you own") from None
    if not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"{path}: not a folder; remove it or point distilld elsewhere")
    if info.st_uid != os.getuid():
        raise ConfigError(f"{path}: owned by another user; distilld keeps its lock and socket only "
                          "in a folder you own (set DISTILLD_RUNTIME_DIR)")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


@dataclass(frozen=True)
class InstancePaths:
    """Where one store's daemon keeps its state (not in the store: these are machine-local)."""

    store: Path
    state: Path
    runtime: Path

    @classmethod
    def for_store(cls, store: Path) -> InstancePaths:
        key = instance_key(store)
        return cls(Path(store), state_dir() / key, runtime_dir())

    @property
    def key(self) -> str:
        return self.state.name

    @property
    def status_file(self) -> Path:
        return self.state / "status.json"

    @property
    def activity_log(self) -> Path:
        return self.state / "activity.log"

    @property
    def json_log(self) -> Path:
        return self.state / "distilld.jsonl"

    @property
    def instance_lock(self) -> Path:
        return self.runtime / f"{self.key}.lock"

    @property
    def control_socket(self) -> Path:
        return self.runtime / f"{self.key}.sock"

    def check_socket_length(self) -> None:
        if len(os.fsencode(self.control_socket)) > SOCKET_PATH_MAX:
            raise ConfigError(f"{self.control_socket}: path too long for a Unix socket "
                              f"(over {SOCKET_PATH_MAX} bytes); set DISTILLD_RUNTIME_DIR to a shorter folder")


# -- loading -------------------------------------------------------------------------------


def _env_name(loc: tuple[Any, ...]) -> str:
    return ENV_PREFIX + "__".join(str(part).upper() for part in loc)


def describe_errors(error: ValidationError, source: Path) -> str:
    """All problems on one line: key, what is wrong, the value given, and where to fix it."""
    parts = []
    for item in error.errors(include_url=False):
        loc = tuple(item["loc"])
        key = ".".join(str(part) for part in loc) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        named = re.match(r"^([a-z_]+): ", message) if item["type"] == "value_error" else None
        if named:  # a cross-field rule names the key it is about
            loc = (*loc, named.group(1))
            key = ".".join(str(part) for part in loc)
            message = message[named.end():]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif "input" in item and item["type"] != "value_error":
            message += f" (got {item['input']!r})"
        parts.append(f"{key}: {message}")
    where = f"fix it in {source} or ${_env_name(tuple(error.errors()[0]['loc']))}"
    return "config error at " + "; ".join(parts) + f" ({where})"


def load_settings(config: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Read and validate the settings; raises ConfigError with one line naming every bad key."""
    refuse_unknown_variables()
    path = config_file(config)
    explicit = config is not None or bool(os.environ.get("DISTILLD_CONFIG"))
    data = _read_config(path, explicit)
    token = _config_data.set(data)
    try:
        return Settings(**(overrides or {}))
    except ValidationError as error:
        raise ConfigError(describe_errors(error, path), file=path if path.exists() else None) from None
    finally:
        _config_data.reset(token)


def default_store() -> Path:
    """The store when none is given: $DISTILLD_STORE, else the config file's, else ~/.aura-distill."""
    return load_settings().store


# -- showing -------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_toml(settings: Settings) -> str:
    """The effective settings as a config file a user could copy (unset values as comments)."""
    data = settings.model_dump(mode="json")
    top: list[str] = []
    sections: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            sections.append(f"\n[{key}]")
            sections += [f"# {k} = (unset)" if v is None else f"{k} = {_toml_value(v)}" for k, v in value.items()]
        elif value is None:
            top.append(f"# {key} = (unset)")
        else:
            top.append(f"{key} = {_toml_value(value)}")
    return "\n".join(top + sections) + "\n"
