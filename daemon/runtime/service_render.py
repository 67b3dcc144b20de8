"""What `distilld service install` writes: the systemd template unit and the instance's drop-in,
or the launchd agent, filled in with the running interpreter; and the plist's own check."""

from __future__ import annotations

import os
import plistlib
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from ..errors import DistilldError
from .service_paths import (
    Manager,
    dropin_path,
    instance_unit,
    launchd_label,
    resolve_store,
    unit_path,
    user_home,
)

# What a valid agent plist holds, key by key (a typo such as RunAtLaod, or a string where an
# integer belongs, is refused rather than silently ignored by launchd).
PLIST_SCHEMA: dict[str, type | tuple[type, ...]] = {
    "Label": str,
    "ProgramArguments": list,
    "RunAtLoad": bool,
    "KeepAlive": (bool, dict),
    "ThrottleInterval": int,
    "ProcessType": str,
    "WorkingDirectory": str,
    "EnvironmentVariables": dict,
    "StandardOutPath": str,
    "StandardErrorPath": str,
}
PLIST_PATH_KEYS = ("WorkingDirectory", "StandardOutPath", "StandardErrorPath")


class ServiceError(DistilldError):
    """The service file could not be written, verified, loaded or removed."""

    exit_code = 1



def run_arguments(store: Path | None = None, config: Path | None = None) -> list[str]:
    """The command the service runs: this interpreter, as an absolute path (not resolved: a
    virtualenv's python is a symlink whose location is what selects the environment). The
    systemd template adds ``--store %f``; launchd gets the store here."""
    args = [os.path.abspath(sys.executable), "-m", "distilld", "run"]
    if store is not None:
        args += ["--store", os.path.abspath(os.path.expanduser(store))]
    if config is not None:
        args += ["--config", os.path.abspath(os.path.expanduser(config))]
    return args


def _template(package: str, name: str) -> str:
    return resources.files(package).joinpath(name).read_text("utf-8")


_SYSTEMD_PLAIN = re.compile(r"[A-Za-z0-9_./:@+=,-]+")


def systemd_quote(argument: str) -> str:
    """One ExecStart word: `%` and `$` escaped (specifiers, variables), quoted if needed."""
    text = argument.replace("%", "%%").replace("$", "$$")
    if _SYSTEMD_PLAIN.fullmatch(argument):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_systemd(args: list[str]) -> str:
    """The template unit; ``args`` without the store (the instance name carries it)."""
    if any("\n" in a for a in args):
        raise ServiceError("a path with a line break cannot go into a systemd unit")
    return _template("distilld.systemd", "distilld.service.in").replace(
        "@EXEC_START@", " ".join(systemd_quote(a) for a in args))


def render_dropin(store: Path, config: Path | None) -> str:
    """The instance's own settings: which config file it reads (the store is in its name)."""
    lines = [f"# distilld instance for {store}; written by `distilld service install`.", "[Service]"]
    if config is not None:
        value = os.path.abspath(os.path.expanduser(config))
        lines.append(f"Environment={systemd_quote('DISTILLD_CONFIG=' + value)}")
    return "\n".join(lines) + "\n"


def render_launchd(args: list[str], home: Path | None = None, label: str | None = None) -> str:
    home = home or user_home()
    program = "\n".join(f"\t\t<string>{escape(a)}</string>" for a in args)
    if label is None:
        store = args[args.index("--store") + 1] if "--store" in args else None
        label = launchd_label(resolve_store(Path(store) if store else None))
    logs = home / "Library" / "Logs" / "distilld"
    # each agent its own log files and its own bad-settings file (two stores, two agents)
    return (_template("distilld.launchd", "distilld.plist.in")
            .replace("@BAD_SETTINGS_FILE@", escape(str(logs / f"{label}.bad-settings")))
            .replace("@LABEL@", escape(label))
            .replace("@PROGRAM_ARGUMENTS@", program)
            .replace("@HOME@", escape(str(home)))
            .replace("@LOG_DIR@", escape(str(logs))))


def render(manager: Manager, store: Path | None, config: Path | None) -> str:
    """What `service install` writes for the store: the template and the instance's drop-in
    (systemd), or the store's agent (launchd)."""
    where = resolve_store(store)
    if manager == "launchd":
        return render_launchd(run_arguments(where, config))
    return (f"# {unit_path()}\n{render_systemd(run_arguments())}\n"
            f"# {dropin_path(where)} (instance {instance_unit(where)})\n{render_dropin(where, config)}")


def check_plist(data: bytes) -> dict[str, Any]:
    """Parse a rendered agent and check every key and type; returns the parsed dict."""
    try:
        agent = plistlib.loads(data)
    except Exception as error:  # expat errors and plistlib's own ValueError
        raise ServiceError(f"the launchd plist does not parse: {error}") from None
    if not isinstance(agent, dict):
        raise ServiceError("the launchd plist is not a dictionary")
    problems = [f"unknown key {key!r}" for key in agent if key not in PLIST_SCHEMA]
    for key, kind in PLIST_SCHEMA.items():
        if key not in agent:
            problems.append(f"missing {key}")
        elif not isinstance(agent[key], kind) or (kind is int and isinstance(agent[key], bool)):
            problems.append(f"{key} has the wrong type ({type(agent[key]).__name__})")
    arguments = agent.get("ProgramArguments")
    if isinstance(arguments, list):
        if not arguments or not all(isinstance(a, str) for a in arguments):
            problems.append("ProgramArguments must be a non-empty list of strings")
        elif not os.path.isabs(arguments[0]):
            problems.append("ProgramArguments[0] must be an absolute path (launchd has no PATH to search)")
    for key in PLIST_PATH_KEYS:
        value = agent.get(key)
        if isinstance(value, str) and not os.path.isabs(value):
            problems.append(f"{key} must be an absolute path (launchd expands neither ~ nor $HOME)")
    environment = agent.get("EnvironmentVariables")
    if isinstance(environment, dict) and not all(isinstance(v, str) for v in environment.values()):
        problems.append("EnvironmentVariables values must be strings")
    if problems:
        raise ServiceError("the launchd plist is invalid: " + "; ".join(problems))
    return agent
