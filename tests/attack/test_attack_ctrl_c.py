"""Ctrl-C during `distilld compact --apply`: the pass stops part way (its journal unfinished, nothing
committed). It said only "distilld: interrupted" (exit 130), where the exit table promises that a
write pass says how it is finished; the next write pass finishes it."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
from maintenance_fixtures import migrated_store_over_targets

from distilld.actions.sync import run_init
from distilld.engine.recovery import interrupted_passes
from distilld.policy import load_policy

POLICY = load_policy()


def distilld(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "distilld", *args], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_ctrl_c_during_compact_apply_says_how_it_is_finished(tmp_path: Path) -> None:
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    run_init(root, POLICY, lambda: datetime.now(UTC))
    head = pygit2.Repository(str(root)).head.target

    stopped = distilld("compact", "--apply", str(root), DISTILLD_CRASH_AT="step-marked:2",
                       DISTILLD_CRASH_SIGNAL="SIGINT")
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    left = interrupted_passes(root)
    assert left and left[0] in stopped.stderr, stopped.stderr
    assert "`distilld compact --apply`" in stopped.stderr and "finishes it" in stopped.stderr
    assert pygit2.Repository(str(root)).head.target == head  # nothing of it committed

    finished = distilld("compact", "--apply", str(root))
    assert finished.returncode in (0, 1), finished.stdout + finished.stderr
    assert "finished an interrupted compaction" in finished.stdout
    assert distilld("check", str(root)).returncode == 0
    assert interrupted_passes(root) == []
    repo = pygit2.Repository(str(root))
    assert {p: f for p, f in repo.status().items() if not p.startswith(("data/", ".status"))} == {}
