"""The daemon survives its own SIGKILL: a few trials of tests/daemon_kill_trial.py with the real
process (tests/benchmarks/bench_daemon_kill_trial.py runs forty). Each kills the daemon 1-3 times
while a writer that never takes the lock keeps writing, and checks the settled store: C1-C3,
every writer line in the tree and in HEAD, git status clean, nothing left behind, status ok."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_kill_trial import run_trial

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("seed", "entry_limit"), [(11, 390), (23, 390), (3000, 700)])
def test_a_killed_daemon_settles_whole_and_clean(tmp_path: Path, seed: int, entry_limit: int) -> None:
    # 700: the writer pushes SPINE entries over the 400-byte cap, so the daemon compacts under the kills.
    result = run_trial(seed, tmp_path, writer_seconds=5.0, entry_limit=entry_limit)
    assert result.ok, f"seed {seed}: " + "; ".join(result.problems)
    assert result.tokens > 5 and result.kills >= 1
