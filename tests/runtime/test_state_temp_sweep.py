"""A killed daemon's `.status.json.distilld-tmp.*` in the state folder goes at the next start,
also while the killed process is still a zombie its supervisor has not reaped (issue 23, 10)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from builders import healthy_store
from distilld.settings import InstancePaths
from waiting import wait_for

pytestmark = pytest.mark.slow


def test_a_killed_daemons_status_temp_file_is_swept_at_the_next_start(tmp_path: Path) -> None:
    store = tmp_path / "store"
    healthy_store(store)
    state = InstancePaths.for_store(store.resolve()).state
    killed = subprocess.Popen([sys.executable, "-m", "distilld", "run", str(store)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: (state / "status.json").exists(), timeout=60, what="the daemon's status.json")
        killed.kill()
        # Not reaped yet (no wait): the pid stays a zombie, as under a supervisor that is slow to reap.
        wait_for(lambda: Path(f"/proc/{killed.pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()[0] == b"Z",
                   timeout=30, what="the killed daemon to become a zombie")
        left = state / f".status.json.distilld-tmp.{killed.pid}.0123abcd"  # what the kill left mid-write
        left.write_text("{")
        again = subprocess.run([sys.executable, "-m", "distilld", "run", "--once", str(store)],
                               capture_output=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert not left.exists()
        assert not list(state.glob(".*distilld-tmp*"))
    finally:
        killed.kill()
        killed.wait()
