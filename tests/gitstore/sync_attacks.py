"""Helpers of tests/gitstore/test_sync_adversarial.py: syncing two machines both ways, what a
store must still hold afterwards, and a machine's sync in a child process that the test may
SIGKILL at any moment."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pygit2
from distilld.actions.compaction import run_compaction
from distilld.store.spine import Spine
from gitmachines import Machine, Origin, assert_converged, shared_files

SPINE = "SPINE.md"
WORD = re.compile(r"\w+")


def sync_both_ways(a: Machine, b: Machine) -> dict[str, bytes]:
    """a, b, a, b: every machine ends at the remote's commit; the shared files returned."""
    for machine in (a, b, a, b):
        report = machine.sync()
        assert report.ok, (machine.name, report.state, report.reason, report.notes)
    return shared_files(a.root)


def knowledge_text(files: dict[str, bytes]) -> str:
    """SPINE, the tier files and their Index detail, one text (line endings dropped)."""
    return "\n".join(raw.decode().replace("\r", "") for path, raw in files.items()
                     if path.endswith(".md") and not path.startswith(("archive/", "evidence/", "CATALOG")))


def assert_words_kept(files: dict[str, bytes], *texts: str) -> None:
    """Every word of each text is somewhere in the knowledge (SPINE, tier files, Index detail)."""
    held = {w.casefold() for w in WORD.findall(knowledge_text(files))}
    for text in texts:
        lost = {w for w in WORD.findall(text) if w.casefold() not in held}
        assert not lost, (lost, text)


def assert_lines_kept(files: dict[str, bytes], *lines: str) -> None:
    text = knowledge_text(files)
    for line in lines:
        assert line in text, line


def set_spine(machine: Machine, old: str, new: str) -> None:
    raw = machine.read(SPINE)
    crlf = b"\r\n" in raw
    text = raw.decode()
    assert old in text, old
    machine.write(SPINE, text.replace(old, new).encode())
    assert (b"\r\n" in machine.read(SPINE)) == crlf


def to_crlf(machine: Machine, path: str = SPINE) -> None:
    raw = machine.read(path).replace(b"\r\n", b"\n")
    machine.write(path, raw.replace(b"\n", b"\r\n"))


def kestrel_entries(files: dict[str, bytes]) -> list[str]:
    return [e.joined for e in Spine(files[SPINE]).entries if "projects/kestrel.md" in e.pointers]


def settle(a: Machine, b: Machine, origin: Origin) -> dict[str, bytes]:
    files = sync_both_ways(a, b)
    assert_converged(origin, a, b)
    return files


def compact(machine: Machine) -> None:
    def run(record):  # type: ignore[no-untyped-def]
        record.subject = "distilld: compaction"
        return run_compaction(machine.root, machine.policy, machine.clock)

    machine.operation("compaction", run)


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
