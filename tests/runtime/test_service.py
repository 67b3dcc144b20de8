"""`distilld service`: the unit and the plist are rendered with this interpreter's absolute path,
verified (systemd-analyze with nothing on stderr; a plist round trip with every key and type),
installed into the user's folders (here: a temporary HOME) and never started unasked."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from distilld.cli import main
from distilld.runtime.service import install, service_state, uninstall
from distilld.runtime.service_paths import plist_path, unit_path
from distilld.runtime.service_render import (
    PLIST_SCHEMA,
    ServiceError,
    check_plist,
    render_launchd,
    render_systemd,
    run_arguments,
    systemd_quote,
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    runtime = tmp_path / "xdg-runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # no systemd/private socket: no user manager
    return home


def test_unit_runs_this_interpreter() -> None:
    text = render_systemd(run_arguments())
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_line == f"ExecStart={systemd_quote(os.path.abspath(sys.executable))} -m distilld run --store %f"
    for required in ("Type=notify", "Restart=on-failure", "RestartPreventExitStatus=78", "WatchdogSec=",
                     "NotifyAccess=main", "WantedBy=default.target"):
        assert required in text
    assert "network-online.target" not in text.replace("No network-online.target", "")
    assert "@" not in exec_line.replace("%f", "")


def test_quoting_of_awkward_paths() -> None:
    assert systemd_quote("/a/b") == "/a/b"
    assert systemd_quote("/my notes/x") == '"/my notes/x"'
    assert systemd_quote("/100%/$HOME") == '"/100%%/$$HOME"'


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed (.ci/run installs the systemd package)")
@pytest.mark.parametrize("store", [None, "/tmp/a store with spaces/and 100%"])
def test_systemd_analyze_verify_is_clean(tmp_path: Path, store: str | None) -> None:
    from distilld.runtime.service_paths import instance_unit

    unit = tmp_path / instance_unit(Path(store or "/srv/someone/.aura-distill"))
    unit.write_text(render_systemd(run_arguments(config=Path(store) / "c.toml" if store else None)))
    # A short runtime folder: the user manager's socket units (gpg-agent's among them) put
    # socket paths under it, and a unix socket path is limited to about 108 bytes, which a
    # worker's tmp_path under pytest-xdist exceeds.
    with tempfile.TemporaryDirectory(prefix="xr") as runtime:
        env = {**os.environ, "XDG_RUNTIME_DIR": runtime}
        done = subprocess.run(["systemd-analyze", "verify", "--user", "--man=no", str(unit)],
                              capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_plist_round_trips_with_required_keys_and_types(home: Path) -> None:
    data = render_launchd(run_arguments(Path("/opt/stores/notes & more"))).encode()
    agent = plistlib.loads(data)
    assert plistlib.loads(plistlib.dumps(agent)) == agent
    assert set(agent) == set(PLIST_SCHEMA)
    assert agent["ProgramArguments"] == [os.path.abspath(sys.executable), "-m", "distilld", "run", "--store",
                                         "/opt/stores/notes & more"]
    marker = agent["EnvironmentVariables"]["DISTILLD_BAD_SETTINGS_FILE"]
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"PathState": {marker: False}}
    assert isinstance(agent["ThrottleInterval"], int)
    assert agent["StandardErrorPath"] == str(home / f"Library/Logs/distilld/{agent['Label']}.stderr.log")
    assert check_plist(data) == agent


@pytest.mark.parametrize("change, words", [
    (lambda a: a.update(RunAtLaod=a.pop("RunAtLoad")), "unknown key 'RunAtLaod'"),
    (lambda a: a.update(ThrottleInterval="30"), "ThrottleInterval has the wrong type"),
    (lambda a: a.update(StandardOutPath="~/Library/Logs/x.log"), "StandardOutPath must be an absolute path"),
    (lambda a: a["ProgramArguments"].__setitem__(0, "python3"), "ProgramArguments[0] must be an absolute"),
])
def test_check_plist_refuses_mistakes(change: object, words: str) -> None:
    agent = plistlib.loads(render_launchd(run_arguments()).encode())
    change(agent)  # type: ignore[operator]
    with pytest.raises(ServiceError) as raised:
        check_plist(plistlib.dumps(agent))
    assert words in str(raised.value)


def test_check_plist_refuses_broken_xml() -> None:
    with pytest.raises(ServiceError, match="does not parse"):
        check_plist(b"<plist><dict><key>Label</key></plist>")


def test_install_writes_verifies_and_starts_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["service", "install", "--systemd"])
    out = capsys.readouterr().out
    assert code == 0
    path = home / ".config/systemd/user/distilld@.service"
    assert unit_path() == path and path.is_file()
    assert path.read_text() == render_systemd(run_arguments())
    assert "verified: read back identical" in out
    assert "distilld@" in out and ".aura\\x2ddistill.service" in out  # the default store's instance
    assert "not started" in out or "no systemd user manager" in out
    state = service_state("systemd")
    assert state.installed and state.current
    assert main(["service", "status", "--systemd"]) == 0
    assert "installed at" in capsys.readouterr().out
    assert main(["service", "uninstall", "--systemd"]) == 0
    assert not path.exists()  # the template goes with its last instance
    assert main(["service", "status", "--systemd"]) == 3


def test_install_with_start_but_no_manager_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["service", "install", "--systemd", "--start"]) == 1
    assert "not started: --start needs a running systemd user manager" in capsys.readouterr().out


def test_launchd_install_and_uninstall(home: Path) -> None:
    from distilld.runtime.service_paths import launchd_label, resolve_store

    store = resolve_store(None)
    report = install("launchd", None, None)
    label = launchd_label(store)
    path = home / f"Library/LaunchAgents/{label}.plist"
    assert label.startswith("io.distilld.daemon.") and report.path == path == plist_path(store)
    agent = check_plist(path.read_bytes())
    assert agent["Label"] == label and agent["ProgramArguments"][-2:] == ["--store", str(store)]
    uninstall("launchd")
    assert not path.exists()


def test_print_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["service", "print", "--launchd", "--store", "/srv/notes"]) == 0
    assert "<string>/srv/notes</string>" in capsys.readouterr().out
    assert not any(home.rglob("*.plist"))


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed (.ci/run installs the systemd package)")
def test_install_judges_only_distillds_unit_and_shows_other_units_warnings_as_notes(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Another user unit that systemd-analyze loads and warns about: a socket whose path is too
    # long under this runtime dir (seen with gpg-agent-browser.socket).
    units = home / ".config/systemd/user"
    (units / "sockets.target.wants").mkdir(parents=True)
    (units / "other.socket").write_text(f"[Socket]\nListenStream=%t/{'d' * 120}/S.agent\n"
                                        "[Install]\nWantedBy=sockets.target\n")
    (units / "sockets.target.wants" / "other.socket").symlink_to("../other.socket")
    code = main(["service", "install", "--systemd"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "systemd-analyze verify clean for distilld's unit" in out
    assert "note: about another unit, not distilld's: " in out and "other.socket" in out


def test_a_problem_in_distillds_own_unit_still_fails_the_verification(tmp_path: Path) -> None:
    from distilld.runtime.service_checks import judge_verify

    unit = tmp_path / "distilld.service"
    verdict = judge_verify(f"{unit}:12: Unknown key name 'Bogus' in section 'Service', ignoring.\n"
                           "other.socket: Unit has no Listen setting. Refusing.\n", 0, unit)
    assert verdict.problems == [f"{unit}:12: Unknown key name 'Bogus' in section 'Service', ignoring."]
    assert verdict.notes == ["other.socket: Unit has no Listen setting. Refusing."]


def test_two_stores_get_two_services_and_status_lists_both(home: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from distilld.runtime.service import installed_stores
    from distilld.runtime.service_paths import dropin_path

    first, second = tmp_path / "notes one", tmp_path / "notes-two"
    for store in (first, second):
        assert main(["service", "install", "--systemd", str(store)]) == 0
    capsys.readouterr()
    assert dropin_path(first).is_file() and dropin_path(second).is_file()  # the first one not replaced
    assert installed_stores("systemd") == sorted([first, second])
    assert main(["service", "status", "--systemd"]) == 0
    out = capsys.readouterr().out
    assert f"for {first}: installed" in out and f"for {second}: installed" in out
    for store in (first, second):
        assert main(["service", "install", "--launchd", "--store", str(store)]) == 0
    assert len(list((home / "Library/LaunchAgents").glob("io.distilld.daemon.*.plist"))) == 2
    assert main(["service", "uninstall", "--systemd", str(first)]) == 0
    assert installed_stores("systemd") == [second] and unit_path().exists()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_the_unit_is_hardened_and_its_score_reported(home: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    text = render_systemd(run_arguments())
    for setting in ("NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=-%f", "StateDirectory=distilld",
                    "RuntimeDirectory=distilld", "PrivateTmp=yes", "ProtectKernelTunables=yes",
                    "ProtectKernelModules=yes", "ProtectKernelLogs=yes", "RestrictSUIDSGID=yes",
                    "LockPersonality=yes", "SystemCallFilter=@system-service"):
        assert setting in text
    assert main(["service", "install", "--systemd", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("hardening: systemd-analyze security: "))
    score = float(line.split("level for ")[1].split(": ")[1].split()[0])
    assert score < 5.0, line  # it was 9.8 (UNSAFE) with no hardening


def test_install_warns_when_private_tmp_would_hide_the_store(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 27: a store under /tmp is hidden by PrivateTmp=yes, and install said nothing
    import tempfile

    store = Path(tempfile.mkdtemp(prefix="distilld-store-", dir="/tmp"))
    try:
        assert main(["service", "install", "--systemd", "--store", str(store)]) == 0
        assert "PrivateTmp=yes" in capsys.readouterr().out
        from distilld.runtime.service import hidden_by_private_tmp

        unit = render_systemd(run_arguments())
        assert not hidden_by_private_tmp(Path("/srv/notes/.aura-distill"), unit)  # (tmp_path is under /tmp)
        assert hidden_by_private_tmp(Path("/var/tmp/notes"), unit)
    finally:
        store.rmdir()
