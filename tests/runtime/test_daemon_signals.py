"""The real process and its service manager: READY/WATCHDOG/STOPPING on $NOTIFY_SOCKET, SIGHUP
reloads the settings (and keeps the old ones when the new ones are invalid), SIGTERM exits 0."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from builders import healthy_store
from waiting import wait_for

from distilld.settings import instance_key

pytestmark = pytest.mark.slow


def test_notify_reload_and_stop(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text("[watch]\nquiet_seconds = 0.5\n")
    notify_path = runtime / "notify.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(notify_path))
    listener.settimeout(30)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILLD_")}
    env.update(DISTILLD_CONFIG_DIR=str(config), DISTILLD_STATE_DIR=str(tmp_path / "state"),
               DISTILLD_RUNTIME_DIR=str(runtime), HOME=str(tmp_path / "home"), NOTIFY_SOCKET=str(notify_path),
               WATCHDOG_USEC="2000000")
    process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--store", str(store)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    activity = tmp_path / "state" / instance_key(store) / "activity.log"
    status_file = activity.with_name("status.json")
    try:
        messages: list[str] = []
        while not any(m.startswith("READY=1") for m in messages):
            messages.append(listener.recv(4096).decode())
        while "WATCHDOG=1" not in messages:  # every WATCHDOG_USEC/2
            messages.append(listener.recv(4096).decode())

        (config / "config.toml").write_text("[watch]\nquiet_seconds = 1.5\n")
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded the settings" in activity.read_text(), 20, "the reload to be logged")
        assert json.loads(status_file.read_text())["watcher"]["quiet_seconds"] == 1.5

        (config / "config.toml").write_text("[watch]\nquiet_seconds = -1\n")
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload refused" in activity.read_text(), 20, "the refused reload to be logged")
        assert "reload refused, keeping the settings in use: config error at watch.quiet_seconds" in activity.read_text()
        assert process.poll() is None  # still running on the previous settings

        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        while not any(m.startswith("STOPPING=1") for m in messages):
            messages.append(listener.recv(4096).decode())
        assert json.loads(status_file.read_text())["state"] == "stopped"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        listener.close()
        for leftover in runtime.iterdir():
            leftover.unlink()
        runtime.rmdir()
