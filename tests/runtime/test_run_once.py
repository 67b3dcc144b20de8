"""`distilld run --once` with the real process: it never fails in silence (each problem is one line
on stderr), says what it waits for, gives up after --wait, and takes a dead owner's lock over at
once instead of waiting out the stale period."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import healthy_store
from distilld.engine.lock import default_owner
from distilld.policy import load_policy
from hostile import dead_pid

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))  # short: a socket path lives in it
    home = tmp_path / "home"
    home.mkdir()
    values = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILLD_", "JOURNAL_STREAM", "INVOCATION_ID"))}
    values.update(HOME=str(home), DISTILLD_CONFIG_DIR=str(tmp_path / "config"),
                  DISTILLD_STATE_DIR=str(tmp_path / "state"), DISTILLD_RUNTIME_DIR=str(runtime),
                  PYTHONUNBUFFERED="1", GIT_CONFIG_NOSYSTEM="1")
    yield values
    shutil.rmtree(runtime, ignore_errors=True)


def run_once(env: dict[str, str], store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "distilld", "run", "--once", *extra, str(store)], env=env,
                          capture_output=True, text=True, timeout=240)


def write_lock(root: Path, owner: str) -> None:
    now = int(time.time())
    (root / ".lock").write_text(f"{owner} {now} {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))}\n")


def test_a_held_lock_is_named_on_stderr_and_wait_gives_up(env: dict[str, str], tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    write_lock(store, "alpha")  # a distiller's fresh lock: not ours to judge, so it is waited for
    started = time.monotonic()
    done = run_once(env, store, "--wait", "1")
    assert time.monotonic() - started < load_policy().lock.stale_seconds
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("distilld: ") for line in lines), done.stderr
    assert any(f"waiting for {store}/.lock, held by alpha" in line and "gives up after 1 s" in line
               for line in lines), done.stderr
    assert any(line.startswith("distilld: gave up waiting: follow did not run") for line in lines), done.stderr
    assert (store / ".lock").read_text().startswith("alpha ")  # a live holder's lock is never broken


def test_a_dead_daemons_lock_does_not_hold_it_up(env: dict[str, str], tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    write_lock(store, default_owner().rsplit(".", 1)[0] + f".{dead_pid()}")
    started = time.monotonic()
    done = run_once(env, store)
    assert time.monotonic() - started < load_policy().lock.stale_seconds
    assert done.returncode == 0, done.stderr
    assert "waiting" not in done.stderr
    assert not (store / ".lock").exists()


def test_a_failing_pass_is_one_line_on_stderr(env: dict[str, str], tmp_path: Path) -> None:
    from distilld.actions.sync import run_init

    store = healthy_store(tmp_path / "store").root
    run_init(store, load_policy(), lambda: datetime.now(UTC), remote_url=str(tmp_path / "no-such-remote.git"))
    done = run_once(env, store)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert any(line.startswith("distilld: sync failed: ") for line in lines), done.stderr
    assert all(line.startswith("distilld: ") for line in lines), done.stderr
