"""Status that is true, with real repositories and the real command line / daemon process:
a cycle that commits ends pushed, ahead/behind is the repository's, a held lock is a skip (no
push that must fail, no backoff), and a person's sync ignores the backoff."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from gitmachines import GitCli, Machine, Origin, lifecycle_store

from distilld.cli import main
from distilld.engine.lock import StoreLock
from distilld.gitstore.repo import open_store
from distilld.gitstore.sync_state import SyncState, load_state, save_state
from distilld.settings import instance_key


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


@pytest.fixture
def pair(tmp_path: Path, origin: Origin) -> tuple[Machine, Machine]:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    return a, b


def test_sync_while_the_lock_is_held_and_both_moved_is_skipped_without_backoff(
        pair: tuple[Machine, Machine], git: GitCli, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = pair
    b.append("projects/old-b.md", "- from b\n")
    assert b.sync().pushed  # the remote moves on: a is behind
    a.append("projects/old-a.md", "- from a\n")
    git(a.root, "commit", "-qam", "a local commit")  # and ahead
    distiller = StoreLock(a.root, "alpha")
    distiller.acquire()
    try:
        code, out, err = run(capsys, "sync", str(a.root))
    finally:
        distiller.release()
    assert code == 7, out + err
    assert "SKIPPED" in out and ".lock is held" in out and "PUSH FAILED" not in out
    assert "ahead 1, behind 1" in out and "next automatic try" not in out
    assert "note: not pushed: 1 commit(s) on the remote must be taken in first, once the lock is released" in out
    state = load_state(open_store(a.root))
    assert state.failures == 0 and state.retry_at == 0
    code, out, _ = run(capsys, "sync", str(a.root))  # the lock released: it syncs
    assert code == 0 and "pushed" in out


def test_a_manual_sync_ignores_the_backoff(pair: tuple[Machine, Machine], capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = pair
    store = open_store(a.root)
    save_state(store, SyncState(failures=4, retry_at=time.time() + 3600, last_error="offline"))
    a.append("projects/old-a.md", "- a change\n")
    code, out, _ = run(capsys, "sync", str(a.root))
    assert code == 0 and "pushed" in out and "backing off" not in out


# -- the real daemon ------------------------------------------------------------------------

def daemon_env(tmp_path: Path) -> dict[str, str]:
    runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text("[watch]\nquiet_seconds = 0.5\nmax_wait_seconds = 5\n"
                                        "[schedule]\njitter_seconds = 0\nreconcile_minutes = 0\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILLD_")}
    env.update(DISTILLD_CONFIG_DIR=str(config), DISTILLD_STATE_DIR=str(tmp_path / "state"),
               DISTILLD_RUNTIME_DIR=str(runtime), HOME=str(tmp_path / "home"), PYTHONUNBUFFERED="1")
    return env


@pytest.mark.slow
def test_run_once_pushes_what_the_lifecycle_committed_after_the_sync(
        tmp_path: Path, origin: Origin) -> None:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    env = daemon_env(tmp_path)
    try:
        subprocess.run([sys.executable, "-m", "distilld", "lifecycle", "enable", str(a.root)], env=env,
                       check=True, capture_output=True, timeout=60)
        done = subprocess.run([sys.executable, "-m", "distilld", "run", "--once", "--store", str(a.root)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        log = subprocess.run(["git", "--git-dir", str(origin.path), "log", "--format=%s%n%b", "main"],
                             capture_output=True, text=True, check=True).stdout
        assert "lifecycle archived 2 files" in log  # the lifecycle commit reached the remote
        assert origin.head() == a.head()
        status = json.loads((tmp_path / "state" / instance_key(a.root.resolve()) / "status.json").read_text())
        assert status["git"]["ahead"] == 0 and status["git"]["behind"] == 0
        shown = subprocess.run([sys.executable, "-m", "distilld", "status", str(a.root)], env=env,
                               capture_output=True, text=True, timeout=60).stdout
        assert "0 ahead, 0 behind" in shown and "not pushed" not in shown
    finally:
        shutil.rmtree(env["DISTILLD_RUNTIME_DIR"], ignore_errors=True)


@pytest.mark.parametrize("bad", ["markers", "local"])
def test_a_hand_made_commit_that_must_not_be_pushed_is_refused_naming_commit_and_file(
        bad: str, pair: tuple[Machine, Machine], git: GitCli, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = pair
    remote_before = a.origin.head()
    if bad == "markers":
        a.write("projects/old-a.md", a.read("projects/old-a.md").decode()
                + "<<<<<<< HEAD\n- mine\n=======\n- theirs\n>>>>>>> other\n")
        git(a.root, "commit", "-qam", "merge by hand")
        name = "projects/old-a.md"
    else:
        a.write("data/notes.md", "machine-local\n")
        git(a.root, "add", "-f", "data/notes.md")
        git(a.root, "commit", "-qm", "add a local file by hand")
        name = "data/notes.md"
    sha = git(a.root, "rev-parse", "--short=7", "HEAD").stdout.strip()
    code, out, _ = run(capsys, "sync", str(a.root))
    assert code == 7, out
    assert "BLOCKED" in out and f"commit {sha}" in out and name in out and "commit the fix" in out
    assert a.origin.head() == remote_before  # nothing was pushed
    assert load_state(open_store(a.root)).retry_at == 0  # a refusal, not a failure to back off from
