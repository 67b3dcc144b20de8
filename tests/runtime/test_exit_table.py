"""The exit codes the table promises (cli/exits.py), from the real process, and the two service
files that act on them: Ctrl-C on `run` is 130, a bad policy file or bad settings are 78, and
neither systemd nor launchd restarts a daemon that exited 78 (issue 27)."""

from __future__ import annotations

import os
import plistlib
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import healthy_store
from distilld.exits import BAD_SETTINGS, EXIT_CODES, INTERRUPTED, OK
from distilld.runtime.service_render import render_launchd, render_systemd, run_arguments
from distilld.settings import instance_key
from waiting import wait_for

pytestmark = pytest.mark.slow
TABLE = dict(EXIT_CODES)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text("[watch]\nquiet_seconds = 0.5\n")
    values = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILLD_", "NOTIFY_", "WATCHDOG_"))}
    values.update(DISTILLD_CONFIG_DIR=str(tmp_path / "config"), DISTILLD_STATE_DIR=str(tmp_path / "state"),
                  DISTILLD_RUNTIME_DIR=str(runtime), HOME=str(tmp_path / "home"))
    yield values
    for leftover in runtime.iterdir():
        leftover.unlink()
    runtime.rmdir()


def test_the_table_names_the_codes_the_services_act_on() -> None:
    assert "bad policy file" in TABLE[BAD_SETTINGS] and "not restarted" in TABLE[BAD_SETTINGS]
    assert "Ctrl-C" in TABLE[INTERRUPTED]


def test_ctrl_c_on_run_exits_130(tmp_path: Path, env: dict[str, str]) -> None:
    store = healthy_store(tmp_path / "store").root
    process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--store", str(store)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    activity = tmp_path / "state" / instance_key(store) / "activity.log"
    try:
        wait_for(lambda: activity.exists() and "started: following" in activity.read_text(), 60, "the daemon to start")
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == INTERRUPTED
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_sigterm_on_run_is_a_clean_stop(tmp_path: Path, env: dict[str, str]) -> None:
    store = healthy_store(tmp_path / "store").root
    process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--store", str(store)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    activity = tmp_path / "state" / instance_key(store) / "activity.log"
    try:
        wait_for(lambda: activity.exists() and "started: following" in activity.read_text(), 60, "the daemon to start")
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == OK
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


@pytest.mark.parametrize("bad", ["policy", "config"])
def test_bad_settings_exit_78_and_leave_the_file_launchd_waits_on(bad: str, tmp_path: Path,
                                                                  env: dict[str, str]) -> None:
    store = healthy_store(tmp_path / "store").root
    marker = tmp_path / "logs" / "agent.bad-settings"
    argv = [sys.executable, "-m", "distilld", "run", "--store", str(store)]
    if bad == "policy":
        (tmp_path / "p.toml").write_text("[spine]\nmax_line = 80\n")
        argv += ["--policy", str(tmp_path / "p.toml")]
    else:
        (tmp_path / "config" / "config.toml").write_text("[watch]\nquiet = 1\n")
    done = subprocess.run(argv, env={**env, "DISTILLD_BAD_SETTINGS_FILE": str(marker)}, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == BAD_SETTINGS, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert marker.read_text().startswith(done.stderr.strip().removeprefix("distilld: "))
    if bad == "policy":
        assert "did you mean 'max_lines'" in done.stderr


def test_systemd_does_not_restart_on_the_bad_settings_code() -> None:
    unit = render_systemd(run_arguments())
    assert "Restart=on-failure" in unit
    prevent = [line for line in unit.splitlines() if line.startswith("RestartPreventExitStatus=")]
    assert prevent == [f"RestartPreventExitStatus={BAD_SETTINGS}"]


def test_launchd_keeps_the_agent_alive_only_while_no_bad_settings_file_exists(tmp_path: Path) -> None:
    first = plistlib.loads(render_launchd(run_arguments(tmp_path / "a"), home=tmp_path).encode())
    second = plistlib.loads(render_launchd(run_arguments(tmp_path / "b"), home=tmp_path).encode())
    marker = first["EnvironmentVariables"]["DISTILLD_BAD_SETTINGS_FILE"]
    # no SuccessfulExit: launchd ORs the conditions, and any exit code but 0 would restart it
    assert first["KeepAlive"] == {"PathState": {marker: False}}
    assert os.path.isabs(marker)
    # each agent its own files: two stores' daemons do not write one log
    assert first["StandardErrorPath"] != second["StandardErrorPath"]
    assert first["StandardOutPath"] != second["StandardOutPath"]
    assert marker != second["EnvironmentVariables"]["DISTILLD_BAD_SETTINGS_FILE"]
