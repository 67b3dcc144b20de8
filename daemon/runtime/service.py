"""`distilld service`: render, install, check and remove the user service.

The templates (systemd/distilld.service.in, launchd/distilld.plist.in) are filled in with the
absolute path of the running interpreter, so the service runs the very distilld that installed
it, whatever PATH the service manager has. Installing writes the file, reads it back and checks
it (systemd-analyze verify when present; a plist round trip with a key and type check), and
reloads the manager; it starts nothing unless asked to with --start.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from xml.sax.saxutils import escape

from ..errors import DistilldError
from ..store.fs import atomic_write

Manager = Literal["systemd", "launchd"]
UNIT_NAME = "distilld.service"
LAUNCHD_LABEL = "io.distilld.daemon"
COMMAND_TIMEOUT = 30

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


@dataclass
class ServiceReport:
    manager: Manager
    path: Path
    lines: list[str] = field(default_factory=list)
    ok: bool = True


@dataclass
class ServiceState:
    manager: Manager
    path: Path
    installed: bool
    current: bool | None  # the installed file is what this distilld would write now
    enabled: str | None = None
    active: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"manager": self.manager, "path": str(self.path), "installed": self.installed,
                "current": self.current, "enabled": self.enabled, "active": self.active, "note": self.note}


def default_manager() -> Manager:
    return "launchd" if sys.platform == "darwin" else "systemd"


def _home() -> Path:
    return Path(os.path.expanduser("~")).absolute()


def unit_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    config = Path(base) if base and os.path.isabs(base) else _home() / ".config"
    return config / "systemd" / "user" / UNIT_NAME


def plist_path() -> Path:
    return _home() / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


def service_path(manager: Manager) -> Path:
    return unit_path() if manager == "systemd" else plist_path()


def run_arguments(store: Path | None = None, config: Path | None = None) -> list[str]:
    """The command the service runs: this interpreter, as an absolute path (not resolved: a
    virtualenv's python is a symlink whose location is what selects the environment)."""
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
    if any("\n" in a for a in args):
        raise ServiceError("a path with a line break cannot go into a systemd unit")
    return _template("distilld.systemd", "distilld.service.in").replace(
        "@EXEC_START@", " ".join(systemd_quote(a) for a in args))


def render_launchd(args: list[str], home: Path | None = None) -> str:
    home = home or _home()
    program = "\n".join(f"\t\t<string>{escape(a)}</string>" for a in args)
    return (_template("distilld.launchd", "distilld.plist.in")
            .replace("@LABEL@", escape(LAUNCHD_LABEL))
            .replace("@PROGRAM_ARGUMENTS@", program)
            .replace("@HOME@", escape(str(home)))
            .replace("@LOG_DIR@", escape(str(home / "Library" / "Logs" / "distilld"))))


def render(manager: Manager, args: list[str]) -> str:
    return render_systemd(args) if manager == "systemd" else render_launchd(args)


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


def _run(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
                              stdin=subprocess.DEVNULL, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return subprocess.CompletedProcess(command, 127, "", str(error))


@dataclass
class Verdict:
    """What systemd-analyze verify said: about distilld's own unit, and about anything else."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def judge_verify(stderr: str, returncode: int, path: Path) -> Verdict:
    """systemd-analyze also loads the machine's other user units and warns about them (a socket
    path too long under a long runtime dir, say): only lines naming our unit judge it; the others
    are shown as notes. It exits 0 even for an unknown key, so any line about us is a problem."""
    names = {str(path), path.name}
    verdict = Verdict()
    for line in (line.strip() for line in stderr.splitlines()):
        if line:
            (verdict.problems if any(name in line for name in names) else verdict.notes).append(line)
    if returncode != 0 and not verdict.problems and not verdict.notes:
        verdict.problems.append(f"systemd-analyze exited {returncode}")
    return verdict


def verify_systemd(path: Path) -> Verdict | None:
    """Run systemd-analyze verify on a unit; None when the tool is not installed."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        return None
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="distilld-verify-") as scratch:
        if not env.get("XDG_RUNTIME_DIR"):
            env["XDG_RUNTIME_DIR"] = scratch  # --user needs one, even only to verify
        done = _run(tool, "verify", "--user", "--man=no", str(path), env=env)
    return judge_verify(done.stderr or "", done.returncode, path)


def systemd_reachable() -> bool:
    """A user manager we can talk to (never the case in tests, whose runtime dir is a temp dir)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return bool(shutil.which("systemctl") and runtime and Path(runtime, "systemd", "private").exists())


def launchd_reachable() -> bool:
    return sys.platform == "darwin" and shutil.which("launchctl") is not None


def _write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"), mode=0o644)


def install(manager: Manager, args: list[str], start: bool = False) -> ServiceReport:
    path = service_path(manager)
    text = render(manager, args)
    report = ServiceReport(manager, path)
    if manager == "launchd":
        check_plist(text.encode("utf-8"))  # refuse to write what would not load
    try:
        _write(path, text)
    except OSError as error:
        raise ServiceError(f"{path}: cannot write the service file ({error.strerror or error})") from None
    written = path.read_text("utf-8")
    if written != text:
        raise ServiceError(f"{path}: reads back different from what was written; check the disk")
    report.lines.append(f"wrote {path}")
    if manager == "systemd":
        verdict = verify_systemd(path)
        if verdict is not None and verdict.problems:
            raise ServiceError(f"{path}: systemd-analyze verify reports: {' | '.join(verdict.problems)}")
        report.lines.append("verified: read back identical" + (
            ", systemd-analyze verify clean for distilld's unit" if verdict is not None else
            " (systemd-analyze not found, unit syntax not checked)"))
        if verdict is not None:
            report.lines += [f"note: about another unit, not distilld's: {note}" for note in verdict.notes]
        _after_systemd_install(report, start)
    else:
        check_plist(written.encode("utf-8"))
        report.lines.append("verified: read back identical, plist parses with every required key and type")
        _after_launchd_install(report, path, start)
    return report


def _after_systemd_install(report: ServiceReport, start: bool) -> None:
    if not systemd_reachable():
        report.lines.append("no systemd user manager reachable here; when there is one, run:")
        report.lines.append(f"    systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}")
        if start:
            report.ok = False
            report.lines.append("not started: --start needs a running systemd user manager")
        return
    done = _run("systemctl", "--user", "daemon-reload")
    if done.returncode != 0:
        report.ok = False
        report.lines.append(f"systemctl --user daemon-reload failed: {done.stderr.strip()}")
        return
    report.lines.append("reloaded the systemd user manager")
    if start:
        done = _run("systemctl", "--user", "enable", "--now", UNIT_NAME)
        if done.returncode != 0:
            report.ok = False
            report.lines.append(f"could not start it: {done.stderr.strip()} "
                                f"(journalctl --user -u {UNIT_NAME} says why)")
            return
        report.lines.append(f"enabled and started {UNIT_NAME}; `distilld status` shows it working")
        report.lines.append('to keep it running while you are logged out: loginctl enable-linger "$USER"')
    else:
        report.lines.append(f"not started (nothing starts unasked); start it with: "
                            f"systemctl --user enable --now {UNIT_NAME}")


def _after_launchd_install(report: ServiceReport, path: Path, start: bool) -> None:
    domain = f"gui/{os.getuid()}"
    if not launchd_reachable():
        report.lines.append(f"launchctl not available here; on the Mac run: launchctl bootstrap {domain} {path}")
        if start:
            report.ok = False
            report.lines.append("not started: --start needs launchctl")
        return
    if not start:
        report.lines.append(f"not loaded (nothing starts unasked); it loads at your next login, "
                            f"or now with: launchctl bootstrap {domain} {path}")
        return
    _run("launchctl", "bootout", f"{domain}/{LAUNCHD_LABEL}")  # a loaded old copy; may not exist
    done = _run("launchctl", "bootstrap", domain, str(path))
    if done.returncode != 0:
        report.ok = False
        report.lines.append(f"launchctl bootstrap failed: {done.stderr.strip()}")
        return
    report.lines.append(f"loaded and started {LAUNCHD_LABEL}; `distilld status` shows it working")


def uninstall(manager: Manager) -> ServiceReport:
    path = service_path(manager)
    report = ServiceReport(manager, path)
    if manager == "systemd" and systemd_reachable():
        done = _run("systemctl", "--user", "disable", "--now", UNIT_NAME)
        if done.returncode == 0:
            report.lines.append(f"stopped and disabled {UNIT_NAME}")
    if manager == "launchd" and launchd_reachable():
        done = _run("launchctl", "bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}")
        if done.returncode == 0:
            report.lines.append(f"unloaded {LAUNCHD_LABEL}")
    try:
        path.unlink()
        report.lines.append(f"removed {path}")
    except FileNotFoundError:
        report.lines.append(f"{path} was not installed")
    except OSError as error:
        raise ServiceError(f"{path}: cannot remove it ({error.strerror or error})") from None
    if manager == "systemd" and systemd_reachable():
        _run("systemctl", "--user", "daemon-reload")
    return report


def service_state(manager: Manager | None = None) -> ServiceState:
    manager = manager or default_manager()
    path = service_path(manager)
    installed = path.is_file()
    current: bool | None = None
    if installed:
        # Current: it runs this very interpreter (a reinstall after moving distilld fixes it).
        exe = os.path.abspath(sys.executable)
        word = systemd_quote(exe) if manager == "systemd" else f"<string>{escape(exe)}</string>"
        try:
            current = word in path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            current = False
    state = ServiceState(manager, path, installed, current)
    if manager == "systemd":
        if systemd_reachable():
            state.enabled = _run("systemctl", "--user", "is-enabled", UNIT_NAME).stdout.strip() or None
            state.active = _run("systemctl", "--user", "is-active", UNIT_NAME).stdout.strip() or None
        else:
            state.note = "no systemd user manager reachable"
    elif launchd_reachable():
        done = _run("launchctl", "print", f"gui/{os.getuid()}/{LAUNCHD_LABEL}")
        state.active = "loaded" if done.returncode == 0 else "not loaded"
    else:
        state.note = "launchctl not available here"
    return state


def render_state(state: ServiceState) -> str:
    if not state.installed:
        return f"service ({state.manager}): not installed (`distilld service install` installs it)"
    parts = [f"installed at {state.path}"]
    if state.current is False:
        parts.append("out of date: reinstall with `distilld service install`")
    if state.enabled:
        parts.append(state.enabled)
    if state.active:
        parts.append(state.active)
    if state.note:
        parts.append(state.note)
    return f"service ({state.manager}): " + ", ".join(parts)
