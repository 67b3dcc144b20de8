"""A machine's sync in a child process that the test may SIGKILL at any moment, and what a
killed checkout can leave (tests/gitstore/test_sync_adversarial.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pygit2
from gitmachines import Machine, shared_files

CHILD = """
import sys, json, time
from datetime import datetime
from pathlib import Path
import pygit2
from pygit2.enums import ConfigLevel
for level in (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM):
    pygit2.settings.search_path[level] = sys.argv[3]
from distilld.actions.sync import run_sync
from distilld.gitstore.commit import Identity
from distilld.policy import load_policy
now = datetime.fromisoformat(sys.argv[2])
print("ready", flush=True)
started = time.monotonic()
report = run_sync(Path(sys.argv[1]), load_policy(), lambda: now, identity=Identity("distilld on b", "b@x.invalid"))
print(json.dumps({"state": report.state, "seconds": time.monotonic() - started}), flush=True)
"""


def sync_in_child(machine: Machine, empty: Path, kill_after: float | None) -> dict[str, object] | None:
    """``machine``'s sync in a child process, SIGKILLed ``kill_after`` seconds after it starts
    syncing (None: let it finish). What the child reported, or None when it was killed first."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(machine.root), machine.now.isoformat(), str(empty)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", child.stderr.read() if child.stderr else ""
        if kill_after is not None:
            try:
                child.wait(kill_after)  # the kill's moment, not a wait for something
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGKILL)
                child.wait(30)
                return None
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)


def half_written(machine: Machine, before: dict[str, bytes]) -> list[str]:
    """Shared files that hold neither what they held before the sync nor any version git has
    (a checkout killed while writing them)."""
    repo = machine.repo()
    return [p for p, raw in shared_files(machine.root).items()
            if raw != before.get(p) and pygit2.hash(raw) not in repo]
