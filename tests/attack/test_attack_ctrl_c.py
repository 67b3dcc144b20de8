"""Ctrl-C during `distilld compact --apply`. The first Ctrl-C asks the pass to stop at its next
step, as the daemon's SIGTERM does: what it wrote is undone, the store is as it was, nothing is
committed, exit 130. A second Ctrl-C stops it at once: its journal is left unfinished, the
message names it and says the next write pass finishes it (the exit table: a write pass says how
it is finished). The child pauses after its second step (crashpoints.py) while the test presses
Ctrl-C, so the signals land mid-pass whatever the machine's speed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
from maintenance_fixtures import migrated_store_over_targets
from waiting import wait_for

from distilld.actions.sync import run_init
from distilld.engine.recovery import interrupted_passes
from distilld.policy import load_policy

POLICY = load_policy()


def distilld(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "distilld", *args], capture_output=True, text=True, timeout=300)


def knowledge(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if not p.relative_to(root).as_posix().startswith(("data/", ".git/"))}


def compact_with_ctrl_c(root: Path, tmp_path: Path, presses: int) -> subprocess.CompletedProcess[str]:
    """`compact --apply`, paused after its second step while Ctrl-C is pressed ``presses`` times."""
    flag = tmp_path / "paused"
    env = {**os.environ, "DISTILLD_PAUSE_AT": "step-marked:2", "DISTILLD_PAUSE_FILE": str(flag)}
    child = subprocess.Popen([sys.executable, "-m", "distilld", "compact", "--apply", str(root)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(flag.exists, timeout=240, what="the compaction to pause after its second step")
        for press in range(presses):
            child.send_signal(signal.SIGINT)
            if press == 0 and presses > 1:  # the second press only once the first was heard
                wait_for(lambda: "stopping the compaction" in _peek(child), timeout=60,
                         what="the first Ctrl-C to be heard")
        flag.unlink()
        out, err = child.communicate(timeout=240)
    finally:
        if child.poll() is None:
            child.kill()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


_seen: dict[int, str] = {}


def _peek(child: subprocess.Popen[str]) -> str:
    """What the child wrote on stderr so far (read without waiting for its end)."""
    import select

    assert child.stderr is not None
    while select.select([child.stderr], [], [], 0)[0]:
        line = child.stderr.readline()
        if not line:
            break
        _seen[child.pid] = _seen.get(child.pid, "") + line
    return _seen.get(child.pid, "")


@pytest.fixture
def committed_store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    run_init(root, POLICY, lambda: datetime.now(UTC))
    return root


@pytest.mark.slow
def test_one_ctrl_c_stops_compact_apply_at_its_next_step_and_undoes_what_it_wrote(
        committed_store: Path, tmp_path: Path) -> None:
    root = committed_store
    head, before = pygit2.Repository(str(root)).head.target, knowledge(root)

    stopped = compact_with_ctrl_c(root, tmp_path, presses=1)

    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert "rolled back" in stopped.stderr and "the store is as it was" in stopped.stderr, stopped.stderr
    assert knowledge(root) == before and interrupted_passes(root) == []
    assert pygit2.Repository(str(root)).head.target == head  # nothing of it committed
    assert not (root / ".lock").exists()


@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once_and_says_how_the_pass_is_finished(committed_store: Path,
                                                                          tmp_path: Path) -> None:
    root = committed_store
    head = pygit2.Repository(str(root)).head.target

    stopped = compact_with_ctrl_c(root, tmp_path, presses=2)

    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    left = interrupted_passes(root)
    assert left and left[0] in stopped.stderr, stopped.stderr
    assert "`distilld compact --apply`" in stopped.stderr and "finishes it" in stopped.stderr
    assert pygit2.Repository(str(root)).head.target == head

    finished = distilld("compact", "--apply", str(root))
    assert finished.returncode in (0, 1), finished.stdout + finished.stderr
    assert "finished an interrupted compaction" in finished.stdout
    assert distilld("check", str(root)).returncode == 0
    assert interrupted_passes(root) == []
    repo = pygit2.Repository(str(root))
    assert {p: f for p, f in repo.status().items() if not p.startswith(("data/", ".status"))} == {}


def compact_with_ctrl_c_at(root: Path, boundary: str) -> subprocess.CompletedProcess[str]:
    """`compact --apply` given a Ctrl-C at ``boundary`` (crashpoints.py sends the child SIGINT)."""
    env = {**os.environ, "DISTILLD_CRASH_AT": boundary, "DISTILLD_CRASH_SIGNAL": "SIGINT"}
    return subprocess.run([sys.executable, "-m", "distilld", "compact", "--apply", str(root)], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_ctrl_c_after_the_last_step_still_undoes_the_pass(committed_store: Path) -> None:
    """While the catalog is rebuilt and the store checked (seconds on a big store), the pass is not
    finished: a Ctrl-C there used to be ignored (it said "undone", then committed and exited 0)."""
    root = committed_store
    head, before = pygit2.Repository(str(root)).head.target, knowledge(root)

    stopped = compact_with_ctrl_c_at(root, "catalog-written")

    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert "the store is as it was" in stopped.stderr, stopped.stderr
    assert knowledge(root) == before and interrupted_passes(root) == []
    assert pygit2.Repository(str(root)).head.target == head
    assert not (root / ".lock").exists()


@pytest.mark.slow
def test_a_ctrl_c_during_the_commit_of_a_finished_pass_says_it_is_kept(committed_store: Path) -> None:
    root = committed_store
    head = pygit2.Repository(str(root)).head.target

    finished = compact_with_ctrl_c_at(root, "branch-moved")

    assert finished.returncode in (0, 1), finished.stdout + finished.stderr  # 1: debt it reports
    assert "Traceback" not in finished.stderr
    assert "had finished before it could stop: what it wrote is kept" in finished.stderr, finished.stderr
    assert "undoing" in finished.stderr  # the first Ctrl-C's own line, which promised no more than it could
    assert pygit2.Repository(str(root)).head.target != head
    assert interrupted_passes(root) == [] and distilld("check", str(root)).returncode == 0
