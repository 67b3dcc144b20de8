"""SIGTERM during a long pass of `distilld run --once` (issue 27 item 4), with the real process:
systemd stops a unit 90 s after SIGTERM, so a pass must stop at its next boundary within seconds
and leave the store as it was (or finished), never half done.

The child pauses inside its compaction after two of its steps are written (``DISTILLD_PAUSE_AT``,
crashpoints.py); the test sends SIGTERM there and lets it go on. The compaction must stop before
its next step, roll back what it wrote, and the process exit 130 (the exit table's "interrupted")
saying so. Every file of the store then has its bytes from before, no journal is left unfinished,
no lock is left behind, and the next `run --once` compacts the store to the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distilld.crashpoints import CRASH_ENV, PAUSE_ENV, PAUSE_FILE_ENV
from distilld.engine.passes.compaction.apply import compaction_journals
from maintenance_fixtures import migrated_store_over_targets
from waiting import wait_for

pytestmark = pytest.mark.slow
DEADLINE = 120.0
STOP_DEADLINE = 60.0  # generous on a loaded machine; systemd allows 90 s
PAUSE_AT = "step-marked:2"


def knowledge(root: Path) -> dict[str, bytes]:
    """Every file of the store but distilld's local state (data/, dotfiles)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not p.relative_to(root).as_posix().startswith(("data/", "."))
            and not any(part.startswith(".") for part in p.relative_to(root).parts)}


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (CRASH_ENV, PAUSE_ENV, PAUSE_FILE_ENV)}
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


def run_once(root: Path, **extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "distilld", "run", "--once", "--store", str(root)],
                            env=child_env(**extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_sigterm_during_a_compaction_stops_it_at_the_next_step_and_rolls_it_back(tmp_path: Path) -> None:
    root = tmp_path / "store"
    migrated_store_over_targets(root).rebuild_catalog()
    flag = tmp_path / "paused"
    before = knowledge(root)
    child = run_once(root, **{PAUSE_ENV: PAUSE_AT, PAUSE_FILE_ENV: str(flag)})
    try:
        wait_for(lambda: flag.exists() or child.poll() is not None, DEADLINE, "the compaction to pause mid-pass")
        assert child.poll() is None, child.communicate()
        assert knowledge(root) != before  # two steps of the compaction are on disk
        child.send_signal(signal.SIGTERM)
        stopped_at = time.monotonic()
        flag.unlink()  # go on: the next boundary is the next step
        out, err = child.communicate(timeout=STOP_DEADLINE)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    took = time.monotonic() - stopped_at
    said = err.decode()
    assert child.returncode == 130, (child.returncode, said)
    assert took < STOP_DEADLINE
    assert "rolled back" in said and "the store is as it was" in said, said
    assert "Traceback" not in said
    assert knowledge(root) == before  # every byte as before: nothing lost, nothing half done
    assert compaction_journals(root) == []  # the journal is closed, as rolled back
    assert not (root / ".lock").exists()

    # The next cycle, not stopped, compacts the store to its end.
    done = run_once(root)
    out, err = done.communicate(timeout=DEADLINE * 3)
    assert done.returncode in (0, 1), err.decode()
    assert compaction_journals(root) == []
    assert knowledge(root) != before
    check = subprocess.run([sys.executable, "-m", "distilld", "check", str(root)], env=child_env(),
                           capture_output=True, text=True, timeout=DEADLINE)
    assert "C2 PASS" in check.stdout and "C1 PASS" in check.stdout, check.stdout
