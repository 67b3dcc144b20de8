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
UNIT_TEMPLATE = "distilld@.service"  # one instance per store: distilld@<escaped store path>.service
LEGACY_UNIT = "distilld.service"     # what older versions installed (one store only)
LAUNCHD_LABEL = "io.distilld.daemon"  # + "." + the store's instance key: one agent per store
DROPIN_NAME = "distilld.conf"
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
    store: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"manager": self.manager, "path": str(self.path), "installed": self.installed,
                "current": self.current, "enabled": self.enabled, "active": self.active, "note": self.note,
                "store": str(self.store) if self.store is not None else None}


def default_manager() -> Manager:
    return "launchd" if sys.platform == "darwin" else "systemd"


def _home() -> Path:
    return Path(os.path.expanduser("~")).absolute()


def units_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    config = Path(base) if base and os.path.isabs(base) else _home() / ".config"
    return config / "systemd" / "user"


def unit_path() -> Path:
    """The template unit, shared by every store's instance."""
    return units_dir() / UNIT_TEMPLATE


def escape_path(path: Path) -> str:
    """`systemd-escape --path`: the store's absolute path as an instance name (%f gives it back)."""
    text = str(path).strip("/")
    if not text:
        return "-"
    out = []
    for index, byte in enumerate(os.fsencode(text)):
        char = chr(byte)
        if char == "/":
            out.append("-")
        elif (char.isascii() and (char.isalnum() or char in ":_")) or (char == "." and index > 0):
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def unescape_path(name: str) -> str:
    raw = bytearray()
    index = 0
    while index < len(name):
        if name.startswith("\\x", index):
            raw.append(int(name[index + 2:index + 4], 16))
            index += 4
            continue
        raw += b"/" if name[index] == "-" else name[index].encode()
        index += 1
    return "/" + raw.decode("utf-8", "surrogateescape")


def instance_unit(store: Path) -> str:
    return f"distilld@{escape_path(store)}.service"


def dropin_path(store: Path) -> Path:
    return units_dir() / f"{instance_unit(store)}.d" / DROPIN_NAME


def launchd_label(store: Path) -> str:
    from ..settings import instance_key

    return f"{LAUNCHD_LABEL}.{instance_key(store)}"


def plist_path(store: Path) -> Path:
    return _home() / "Library" / "LaunchAgents" / f"{launchd_label(store)}.plist"


def service_path(manager: Manager, store: Path) -> Path:
    """The file that says this store has a service: its drop-in (systemd) or its plist (launchd)."""
    return dropin_path(store) if manager == "systemd" else plist_path(store)


def resolve_store(store: Path | None) -> Path:
    """The store a service is for: the one given, else the default (the settings')."""
    if store is None:
        from ..locations import default_store

        store = default_store()
    return Path(os.path.abspath(os.path.expanduser(store)))


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
    home = home or _home()
    program = "\n".join(f"\t\t<string>{escape(a)}</string>" for a in args)
    if label is None:
        store = args[args.index("--store") + 1] if "--store" in args else None
        label = launchd_label(resolve_store(Path(store) if store else None))
    return (_template("distilld.launchd", "distilld.plist.in")
            .replace("@LABEL@", escape(label))
            .replace("@PROGRAM_ARGUMENTS@", program)
            .replace("@HOME@", escape(str(home)))
            .replace("@LOG_DIR@", escape(str(home / "Library" / "Logs" / "distilld"))))


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


def _analyze(*args: str) -> subprocess.CompletedProcess[str] | None:
    """systemd-analyze --user with the arguments; None when the tool is not installed."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        return None
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="distilld-analyze-") as scratch:
        if not env.get("XDG_RUNTIME_DIR") or not Path(env["XDG_RUNTIME_DIR"]).is_dir():
            env["XDG_RUNTIME_DIR"] = scratch  # --user needs one, even only to verify
        return _run(tool, args[0], "--user", *args[1:], env=env)


def verify_systemd(path: Path) -> Verdict | None:
    """Run systemd-analyze verify on a unit; None when the tool is not installed."""
    done = _analyze("verify", "--man=no", str(path))
    return None if done is None else judge_verify(done.stderr or "", done.returncode, path)


def systemd_reachable() -> bool:
    """A user manager we can talk to (never the case in tests, whose runtime dir is a temp dir)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return bool(shutil.which("systemctl") and runtime and Path(runtime, "systemd", "private").exists())


def launchd_reachable() -> bool:
    return sys.platform == "darwin" and shutil.which("launchctl") is not None


def _write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"), mode=0o644)


def security_score(path: Path) -> str | None:
    """`systemd-analyze security --offline` of the instance: its exposure line, or None."""
    done = _analyze("security", "--offline=yes", "--no-pager", str(path))
    if done is None:
        return None
    for line in reversed((done.stdout or "").splitlines()):
        if "Overall exposure level" in line:
            return " ".join(line.encode("ascii", "ignore").decode().split())
    return None


def _verify_instance(store: Path, text: str, dropin: str, report: ServiceReport) -> None:
    """Verify the instance as systemd will load it: the template under the instance's name, with
    its drop-in, in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="distilld-unit-") as scratch:
        unit = Path(scratch) / instance_unit(store)
        unit.write_text(text, "utf-8")
        (Path(scratch) / f"{unit.name}.d").mkdir()
        (Path(scratch) / f"{unit.name}.d" / DROPIN_NAME).write_text(dropin, "utf-8")
        verdict = verify_systemd(unit)
        if verdict is not None and verdict.problems:
            raise ServiceError(f"{unit_path()}: systemd-analyze verify reports: {' | '.join(verdict.problems)}")
        report.lines.append("verified: read back identical" + (
            ", systemd-analyze verify clean for distilld's unit" if verdict is not None else
            " (systemd-analyze not found, unit syntax not checked)"))
        if verdict is not None:
            report.lines += [f"note: about another unit, not distilld's: {note}" for note in verdict.notes]
        score = security_score(unit)
        if score:
            report.lines.append(f"hardening: systemd-analyze security: {score}")


def install(manager: Manager, store: Path | None, config: Path | None, start: bool = False) -> ServiceReport:
    """Install the service for one store (another store's service is left as it is)."""
    where = resolve_store(store)
    path = service_path(manager, where)
    report = ServiceReport(manager, path)
    if manager == "launchd":
        text = render_launchd(run_arguments(where, config))
        check_plist(text.encode("utf-8"))  # refuse to write what would not load
        _write_checked(path, text)
        report.lines.append(f"wrote {path}")
        check_plist(path.read_bytes())
        report.lines.append("verified: read back identical, plist parses with every required key and type")
        _after_launchd_install(report, path, launchd_label(where), start)
        return report
    text, dropin = render_systemd(run_arguments()), render_dropin(where, config)
    _write_checked(unit_path(), text)
    _write_checked(path, dropin)
    report.lines.append(f"wrote {unit_path()} and {path} (instance {instance_unit(where)})")
    _verify_instance(where, text, dropin, report)
    if not where.is_dir():
        report.lines.append(f"note: {where} does not exist yet; create it (`distilld new {where}`) before "
                            "starting the service, which may write only to an existing store")
    _after_systemd_install(report, instance_unit(where), start)
    return report


def _write_checked(path: Path, text: str) -> None:
    try:
        _write(path, text)
    except OSError as error:
        raise ServiceError(f"{path}: cannot write the service file ({error.strerror or error})") from None
    if path.read_text("utf-8") != text:
        raise ServiceError(f"{path}: reads back different from what was written; check the disk")


def _after_systemd_install(report: ServiceReport, unit: str, start: bool) -> None:
    if not systemd_reachable():
        report.lines.append("no systemd user manager reachable here; when there is one, run:")
        report.lines.append(f"    systemctl --user daemon-reload && systemctl --user enable --now '{unit}'")
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
        done = _run("systemctl", "--user", "enable", "--now", unit)
        if done.returncode != 0:
            report.ok = False
            report.lines.append(f"could not start it: {done.stderr.strip()} "
                                f"(journalctl --user -u '{unit}' says why)")
            return
        report.lines.append(f"enabled and started {unit}; `distilld status` shows it working")
        report.lines.append('to keep it running while you are logged out: loginctl enable-linger "$USER"')
    else:
        report.lines.append(f"not started (nothing starts unasked); start it with: "
                            f"systemctl --user enable --now '{unit}'")


def _after_launchd_install(report: ServiceReport, path: Path, label: str, start: bool) -> None:
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
    _run("launchctl", "bootout", f"{domain}/{label}")  # a loaded old copy; may not exist
    done = _run("launchctl", "bootstrap", domain, str(path))
    if done.returncode != 0:
        report.ok = False
        report.lines.append(f"launchctl bootstrap failed: {done.stderr.strip()}")
        return
    report.lines.append(f"loaded and started {label}; `distilld status` shows it working")


def uninstall(manager: Manager, store: Path | None = None) -> ServiceReport:
    """Remove one store's service; the systemd template goes with the last instance."""
    where = resolve_store(store)
    path = service_path(manager, where)
    report = ServiceReport(manager, path)
    if manager == "systemd" and systemd_reachable():
        done = _run("systemctl", "--user", "disable", "--now", instance_unit(where))
        if done.returncode == 0:
            report.lines.append(f"stopped and disabled {instance_unit(where)}")
    if manager == "launchd" and launchd_reachable():
        done = _run("launchctl", "bootout", f"gui/{os.getuid()}/{launchd_label(where)}")
        if done.returncode == 0:
            report.lines.append(f"unloaded {launchd_label(where)}")
    try:
        path.unlink()
        report.lines.append(f"removed {path}")
        if manager == "systemd":
            path.parent.rmdir()
    except FileNotFoundError:
        report.lines.append(f"{path} was not installed")
    except OSError as error:
        raise ServiceError(f"{path}: cannot remove it ({error.strerror or error})") from None
    if manager == "systemd" and not installed_stores("systemd") and unit_path().exists():
        unit_path().unlink()
        report.lines.append(f"removed {unit_path()} (no store uses it any more)")
    if manager == "systemd" and systemd_reachable():
        _run("systemctl", "--user", "daemon-reload")
    return report


def installed_stores(manager: Manager) -> list[Path]:
    """Every store with a service installed, from the files on disk."""
    if manager == "systemd":
        found = []
        for folder in sorted(units_dir().glob("distilld@*.service.d")):
            if (folder / DROPIN_NAME).is_file():
                found.append(Path(unescape_path(folder.name[len("distilld@"):-len(".service.d")])))
        return found
    stores = []
    for plist in sorted((_home() / "Library" / "LaunchAgents").glob(f"{LAUNCHD_LABEL}.*.plist")):
        try:
            arguments = plistlib.loads(plist.read_bytes()).get("ProgramArguments") or []
        except Exception:
            continue
        if "--store" in arguments:
            stores.append(Path(arguments[arguments.index("--store") + 1]))
    return stores


def service_state(manager: Manager | None = None, store: Path | None = None) -> ServiceState:
    """One store's service (the default store's when none is given)."""
    manager = manager or default_manager()
    where = resolve_store(store)
    path = service_path(manager, where)
    installed = path.is_file() and (manager == "launchd" or unit_path().is_file())
    current: bool | None = None
    if installed:
        # Current: it runs this very interpreter (a reinstall after moving distilld fixes it).
        exe = os.path.abspath(sys.executable)
        word = systemd_quote(exe) if manager == "systemd" else f"<string>{escape(exe)}</string>"
        try:
            current = word in (unit_path() if manager == "systemd" else path).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            current = False
    state = ServiceState(manager, path, installed, current, store=where)
    if manager == "systemd":
        if systemd_reachable():
            unit = instance_unit(where)
            state.enabled = _run("systemctl", "--user", "is-enabled", unit).stdout.strip() or None
            state.active = _run("systemctl", "--user", "is-active", unit).stdout.strip() or None
        else:
            state.note = "no systemd user manager reachable"
        if (units_dir() / LEGACY_UNIT).is_file():
            state.note = ((state.note + "; ") if state.note else "") + (
                f"an older single-store {units_dir() / LEGACY_UNIT} is also installed: remove it with "
                f"`systemctl --user disable --now {LEGACY_UNIT} && rm {units_dir() / LEGACY_UNIT}`")
    elif launchd_reachable():
        done = _run("launchctl", "print", f"gui/{os.getuid()}/{launchd_label(where)}")
        state.active = "loaded" if done.returncode == 0 else "not loaded"
    else:
        state.note = "launchctl not available here"
    return state


def render_state(state: ServiceState) -> str:
    which = f" for {state.store}" if state.store is not None else ""
    if not state.installed:
        return f"service ({state.manager}){which}: not installed (`distilld service install` installs it)"
    parts = [f"installed at {state.path}"]
    if state.current is False:
        parts.append("out of date: reinstall with `distilld service install`")
    if state.enabled:
        parts.append(state.enabled)
    if state.active:
        parts.append(state.active)
    if state.note:
        parts.append(state.note)
    return f"service ({state.manager}){which}: " + ", ".join(parts)
