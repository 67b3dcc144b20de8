"""A new user's first run, with the real process: `distilld run` on a store that does not exist
yet says so in one plain line (terminal or not), with the command that fixes it, and waits for
the store instead of exiting; `distilld new` then gives it a store to follow."""

from __future__ import annotations

import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))  # short: a socket path lives in it
    home = tmp_path / "home"
    home.mkdir()
    values = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILLD_", "JOURNAL_STREAM", "INVOCATION_ID"))}
    values.update(HOME=str(home), DISTILLD_CONFIG_DIR=str(tmp_path / "config"),
                  DISTILLD_STATE_DIR=str(tmp_path / "state"), DISTILLD_RUNTIME_DIR=str(runtime),
                  PYTHONUNBUFFERED="1")
    yield values
    shutil.rmtree(runtime, ignore_errors=True)


def distilld(*args: str) -> list[str]:
    return [sys.executable, "-m", "distilld", *args]


def test_run_without_a_store_says_so_in_one_line_and_waits_for_it(env: dict[str, str], tmp_path: Path) -> None:
    store = Path(env["HOME"]) / ".aura-distill"  # the default store, missing
    process = subprocess.Popen(distilld("run"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        first = process.stderr.readline().decode()
        assert first.startswith(f"distilld: no store at {store}")
        assert f"`distilld new {store}`" in first and "waiting" in first
        made = subprocess.run(distilld("new"), env=env, capture_output=True, text=True, timeout=60)
        assert made.returncode == 0 and (store / "CATALOG.md").exists()

        def followed() -> bool:
            # Alive at every look, from its first line until it has checked the new store.
            assert process.poll() is None, "a missing store must not end the daemon (a service would crash-loop)"
            return "C1-C3 pass" in subprocess.run(distilld("status", "--json"), env=env, capture_output=True,
                                                  text=True, timeout=60).stdout

        # The watcher notices the new folder (it looks every 15 s), rescans it and checks it.
        wait_for(followed, 90, "the daemon to follow and check the new store")
    finally:
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=60)
    assert process.returncode == 0
    everything = first + rest.decode()
    assert "Traceback" not in everything and everything.count("\n") == 1


def test_run_on_a_terminal_prints_plain_lines_and_no_traceback(env: dict[str, str]) -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen(distilld("run"), env=env, stdin=subprocess.DEVNULL, stdout=follower,
                               stderr=follower)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"waiting" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                seen += os.read(leader, 65536)
        # Everything it prints, to its end: stopped, it has written all it ever will.
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        while select.select([leader], [], [], 0)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all was read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
        os.close(leader)
    text = seen.decode(errors="replace")
    assert "waiting" in text and "`distilld new" in text
    assert "Traceback" not in text and "[error" not in text and "[info" not in text
    lines = [line for line in text.replace("\r", "").splitlines() if line.strip()]
    assert all(line.startswith("distilld: ") for line in lines), lines


def test_run_once_without_a_store_exits_2_with_one_line(env: dict[str, str]) -> None:
    done = subprocess.run(distilld("run", "--once"), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "`distilld new" in done.stderr and "Traceback" not in done.stderr
