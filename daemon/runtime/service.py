"""`distilld service`: install, check and remove the user service (what is written:
runtime/service_render.py; where: runtime/service_paths.py; the managers' tools:
runtime/service_checks.py).

The templates (systemd/distilld.service.in, launchd/distilld.plist.in) are filled in with the
absolute path of the running interpreter, so the service runs the very distilld that installed
it, whatever PATH the service manager has. Installing writes the file, reads it back and checks
it (systemd-analyze verify when present; a plist round trip with a key and type check), and
reloads the manager; it starts nothing unless asked to with --start.
"""

from __future__ import annotations

import os
import plistlib
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from ..store.fs import atomic_write
from .service_checks import (
    launchd_reachable,
    run_tool,
    security_score,
    systemd_reachable,
    verify_systemd,
)
from .service_paths import (
    DROPIN_NAME,
    LAUNCHD_LABEL,
    LEGACY_UNIT,
    Manager,
    default_manager,
    instance_unit,
    launchd_label,
    resolve_store,
    service_path,
    unescape_path,
    unit_path,
    units_dir,
    user_home,
)
from .service_render import (
    ServiceError,
    check_plist,
    render_dropin,
    render_launchd,
    render_systemd,
    run_arguments,
    systemd_quote,
)


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



def _write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"), mode=0o644)



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
    if hidden_by_private_tmp(where, text):
        report.lines.append(f"warning: {where} is under a temporary folder, which the unit's PrivateTmp=yes "
                            "replaces with an empty one of its own: the service would not see this store. "
                            "Keep the store elsewhere (or give the instance a drop-in with PrivateTmp=no)")
    _after_systemd_install(report, instance_unit(where), start)
    return report


TEMPORARY_FOLDERS = (Path("/tmp"), Path("/var/tmp"))  # what systemd's PrivateTmp= replaces


def hidden_by_private_tmp(store: Path, unit_text: str) -> bool:
    """Would the unit's PrivateTmp=yes hide the store from the service (issue 27)?"""
    if "PrivateTmp=yes" not in unit_text:
        return False
    resolved = Path(os.path.realpath(store))
    return any(resolved == folder or folder in resolved.parents
               for folder in (Path(os.path.realpath(f)) for f in TEMPORARY_FOLDERS))


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
    done = run_tool("systemctl", "--user", "daemon-reload")
    if done.returncode != 0:
        report.ok = False
        report.lines.append(f"systemctl --user daemon-reload failed: {done.stderr.strip()}")
        return
    report.lines.append("reloaded the systemd user manager")
    if start:
        done = run_tool("systemctl", "--user", "enable", "--now", unit)
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
    run_tool("launchctl", "bootout", f"{domain}/{label}")  # a loaded old copy; may not exist
    done = run_tool("launchctl", "bootstrap", domain, str(path))
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
        done = run_tool("systemctl", "--user", "disable", "--now", instance_unit(where))
        if done.returncode == 0:
            report.lines.append(f"stopped and disabled {instance_unit(where)}")
    if manager == "launchd" and launchd_reachable():
        done = run_tool("launchctl", "bootout", f"gui/{os.getuid()}/{launchd_label(where)}")
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
        run_tool("systemctl", "--user", "daemon-reload")
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
    for plist in sorted((user_home() / "Library" / "LaunchAgents").glob(f"{LAUNCHD_LABEL}.*.plist")):
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
            state.enabled = run_tool("systemctl", "--user", "is-enabled", unit).stdout.strip() or None
            state.active = run_tool("systemctl", "--user", "is-active", unit).stdout.strip() or None
        else:
            state.note = "no systemd user manager reachable"
        if (units_dir() / LEGACY_UNIT).is_file():
            state.note = ((state.note + "; ") if state.note else "") + (
                f"an older single-store {units_dir() / LEGACY_UNIT} is also installed: remove it with "
                f"`systemctl --user disable --now {LEGACY_UNIT} && rm {units_dir() / LEGACY_UNIT}`")
    elif launchd_reachable():
        done = run_tool("launchctl", "print", f"gui/{os.getuid()}/{launchd_label(where)}")
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
