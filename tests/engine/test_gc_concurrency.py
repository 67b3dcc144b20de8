"""gc under the store lock, with other lock holders around (STORE-FORMAT.md 2.2, 4.4).

* Real agent processes take the lock in a loop, the way the distiller's bin/distill-lock.sh
  does, while distilld's gc applies and reverts in child processes: one holder at a time, and
  distilld never writes a knowledge file while an agent holds the lock.
  distilld runs with a copy of the default policy that polls the lock every 50 ms like the
  agents (the default 2 s poll would rarely find a lock that is free 60% of the time).
* A pass whose lock is taken over as stale stops at its next heartbeat (LockLost), never touches
  the new owner's `.lock`, and leaves a state the new owner can recover.
* Two passes within one clock second: `gc --revert` still undoes the newest.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from distilld.actions.gc import gc_planner, run_gc_apply, run_gc_revert
from distilld.engine.context import PassContext
from distilld.crashpoints import CRASH_ENV
from distilld.engine.passes.gc.apply import apply_gc, recover_gc
from distilld.engine.passes.gc.manifest import all_manifests
from distilld.engine.lock import AcquireKind, StoreLock, read_lock
from distilld.engine.driver import apply_journalled
from distilld.engine.passes.restore.apply import PASS as RESTORE_PASS
from distilld.engine.passes.restore.apply import RESTORE_CARRYING
from distilld.engine.passes.restore.plan import RestoreRefused, plan
from distilld.store.local import RESTORE_JOURNALS_DIR
from distilld.errors import LockHeld, LockLost
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot
from test_crash_safety import (
    failing,
    ledger_tree_disagreements,
    leftovers,
    lost_lines,
    stale_store,
    stubs,
)

LIMITS = load_policy().limits

pytestmark = pytest.mark.slow

_CTX: Any = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
MOVED = ["projects/a.md", "projects/a-2.md", "projects/b.md", "projects/c.md"]
AGENTS = 3
MIN_ITERATIONS = 15
GC_ROUNDS = 3  # each round: one gc --apply, then a gc --revert of that pass


def knowledge_hash(root: Path) -> str:
    """One hash over every shared file: SPINE, catalog, tiers, evidence, archive and ledger."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(("data/", ".lock", ".status")):
            digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _log(log: str, text: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _agent(root_text: str, index: int, log: str, stop: Any, results: Any) -> None:
    """Hold the lock briefly, again and again, until told to stop (and at least MIN_ITERATIONS)."""
    root = Path(root_text)
    owner = f"agent{index}"
    problems: list[str] = []
    done = timeouts = 0
    rng = random.Random(index)
    try:
        lock = StoreLock(root, owner, stale_seconds=300, poll_seconds=0.05)
        while done < MIN_ITERATIONS or not stop.is_set():
            try:
                lock.acquire(wait=5)
            except LockHeld:
                timeouts += 1  # liveness under load is not what this test is about
                continue
            _log(log, f"acquire {owner} {time.monotonic_ns()}\n")
            at_acquire = knowledge_hash(root)
            line = read_lock(root)
            if line is None or (line.owner, line.epoch) != (owner, lock.epoch):
                problems.append(f"iteration {done}: .lock says {line} right after acquire")
            marker = root / "data" / "agents" / f"{owner}-{done}"
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{owner} {done}\n")
            time.sleep(rng.uniform(0.002, 0.008))  # deliberate: an agent's work, held a seeded random while
            line = read_lock(root)
            if line is None or (line.owner, line.epoch) != (owner, lock.epoch):
                problems.append(f"iteration {done}: .lock says {line} while {owner} holds it")
            if knowledge_hash(root) != at_acquire:
                problems.append(f"iteration {done}: the store changed while {owner} held the lock")
            _log(log, f"release {owner} {time.monotonic_ns()}\n")
            lock.release()
            done += 1
            time.sleep(rng.uniform(0.01, 0.04))  # deliberate: seeded random gaps interleave the agents and gc
    except Exception as error:
        problems.append(repr(error))
    results.put((index, done, timeouts, problems))


def fast_policy(path: Path) -> Path:
    """The default policy, but polling the lock every 50 ms like the agents (not every 2 s)."""
    text = load_policy_text()
    text, count = re.subn(r"(?m)^poll_seconds = .*$", "poll_seconds = 0.05", text)
    assert count == 1
    path.write_text(text)
    return path


def load_policy_text() -> str:
    from importlib import resources
    return resources.files("distilld.policies").joinpath("default.toml").read_text("utf-8")


def distilld(policy: Path, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    done = subprocess.run([sys.executable, "-m", "distilld", "--policy", str(policy), *args],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return json.loads(done.stdout)


def test_gc_and_lock_holders_take_turns(tmp_path: Path) -> None:
    root = tmp_path / "store"
    stale_store(root)
    policy = fast_policy(tmp_path / "fast.toml")
    log = tmp_path / "holders.log"
    stop = _CTX.Event()
    results = _CTX.Queue()
    agents = [_CTX.Process(target=_agent, args=(str(root), i, str(log), stop, results)) for i in range(AGENTS)]
    for agent in agents:
        agent.start()
    takeover_stat = None
    gc_started = time.monotonic_ns()
    try:
        for _ in range(GC_ROUNDS):
            applied = distilld(policy, "gc", str(root), "--apply", "--wait", "30", "--json")
            assert applied["ok"] and applied["outcome"]["moved"] == MOVED, applied
            manifest = applied["outcome"]["manifest"]
            reverted = distilld(policy, "gc", str(root), "--revert", "--manifest", manifest, "--wait", "30", "--json")
            assert reverted["ok"] and sorted(reverted["outcome"]["reverted"]) == sorted(MOVED), reverted
            if takeover_stat is None and (root / ".lock.takeover").exists():
                st = os.stat(root / ".lock.takeover")
                takeover_stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        gc_ended = time.monotonic_ns()
    finally:
        stop.set()
        reports = [results.get(timeout=120) for _ in agents]
        for agent in agents:
            agent.join(timeout=10)
            if agent.is_alive():
                agent.kill()

    assert [problems for _, _, _, problems in sorted(reports)] == [[]] * AGENTS
    iterations = {f"agent{i}": done for i, done, _, _ in reports}
    assert all(done >= MIN_ITERATIONS for done in iterations.values()), iterations

    # One holder at a time: every acquire is followed by the same owner's release.
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * sum(iterations.values())
    for acquire, release in zip(lines[::2], lines[1::2]):
        kind, owner, started = acquire.split()
        assert kind == "acquire", acquire
        kind2, owner2, ended = release.split()
        assert (kind2, owner2) == ("release", owner), (acquire, release)
        assert int(ended) >= int(started)
    during_gc = [a for a in lines[::2] if gc_started <= int(a.split()[2]) <= gc_ended]
    assert len(during_gc) >= 2 * GC_ROUNDS, f"the agents barely ran while gc did: {len(during_gc)} holds"
    assert sorted(p.name for p in (root / "data/agents").iterdir()) == sorted(
        f"{owner}-{k}" for owner, done in iterations.items() for k in range(done))

    # Nothing left behind; the takeover mutex is never written, deleted or replaced.
    assert leftovers(root) == []
    assert not (root / ".lock").exists()
    assert (root / ".status").read_text().startswith("idle ")
    assert takeover_stat is not None
    st = os.stat(root / ".lock.takeover")
    assert (st.st_ino, st.st_size, st.st_mtime_ns) == takeover_stat
    assert st.st_size == 0

    # Every pass was whole: the store is back to its first state, with 2 ledger lines per move.
    assert failing(check_store(take_snapshot(root), LIMITS)) == []
    assert ledger_tree_disagreements(root) == [] and stubs(root) == []
    ledger = take_snapshot(root).ledger
    assert ledger is not None and len(ledger.events) == 1 + 2 * len(MOVED) * GC_ROUNDS
    assert len(all_manifests(root)) == GC_ROUNDS


# -- a pass whose lock is taken over as stale --------------------------------------------------------

def _real_clock() -> datetime:
    return datetime.now(timezone.utc)


class FrozenClock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> float:
        return float(self.now)


def _steal(root: Path, stale_seconds: int, t0: int) -> tuple[StoreLock, bytes]:
    """A second owner whose clock reads 301 s later takes the lock over as stale."""
    thief = StoreLock(root, "agent.thief", stale_seconds=stale_seconds, clock=FrozenClock(t0 + stale_seconds + 1))
    result = thief.acquire()
    assert result.kind is AcquireKind.TOOK_OVER and result.previous_owner == "distilld.test"
    return thief, (root / ".lock").read_bytes()


def test_gc_pass_taken_over_as_stale_stops_at_its_next_heartbeat(tmp_path: Path) -> None:
    root = tmp_path / "store"
    stale_store(root)
    t0 = int(time.time())
    lock = StoreLock(root, "distilld.test", stale_seconds=300, clock=FrozenClock(t0))
    lock.acquire()
    ctx = PassContext(root, lock, _real_clock, LIMITS)
    before = take_snapshot(root)
    plan = gc_planner(before, ctx)
    assert [m.source for m in plan.moves] == MOVED
    ledger_lines = len(before.ledger.events) if before.ledger else 0

    thief, thief_line = _steal(root, 300, t0)
    with pytest.raises(LockLost):
        apply_gc(ctx, plan, before)

    assert (root / ".lock").read_bytes() == thief_line, "the stopped pass touched the new owner's .lock"
    moved = [m.source for m in plan.moves if (root / m.target).exists()]
    assert len(moved) <= 1, f"the pass kept moving files after losing its lock: {moved}"
    ledger = take_snapshot(root).ledger
    assert ledger is not None and len(ledger.events) - ledger_lines <= 1
    (manifest,) = all_manifests(root)
    assert sum(m.done for m in manifest.moves) <= 1 and manifest.unfinished
    assert stubs(root) == []

    # The new owner can recover the interrupted pass to a whole store.
    outcome = recover_gc(PassContext(root, thief, _real_clock, LIMITS))
    assert outcome.self_check == []
    after = take_snapshot(root)
    assert failing(check_store(after, LIMITS)) == []
    assert failing(check_c4(before, after)) == []
    assert ledger_tree_disagreements(root) == [] and stubs(root) == []
    assert (root / ".lock").read_bytes().startswith(b"agent.thief ")
    thief.release()
    assert not (root / ".lock").exists() and leftovers(root) == []
    with pytest.raises(LockLost):
        lock.release()  # the old owner learns it lost the lock; nothing is removed


def test_restore_taken_over_as_stale_stops_at_its_next_heartbeat(tmp_path: Path) -> None:
    root = tmp_path / "store"
    stale_store(root)
    policy = load_policy()
    run_gc_apply(root, policy, _real_clock)
    before_dir = tmp_path / "before"
    shutil.copytree(root, before_dir)

    t0 = int(time.time())
    lock = StoreLock(root, "distilld.test", stale_seconds=300, clock=FrozenClock(t0))
    lock.acquire()
    ctx = PassContext(root, lock, _real_clock, LIMITS)
    before = take_snapshot(root)
    restore_plan = plan(before, ctx, given="projects/a.md")
    members = restore_plan.members
    assert [m.path for m in members] == ["projects/a.md", "projects/a-2.md"]

    thief, thief_line = _steal(root, 300, t0)
    with pytest.raises(LockLost):
        apply_journalled(ctx, "restore", RESTORE_JOURNALS_DIR, restore_plan, before, RestoreRefused, "restored",
                         RESTORE_CARRYING)

    assert (root / ".lock").read_bytes() == thief_line
    back = [m.path for m in members if (root / m.path).exists()]
    assert len(back) <= 1, f"the restore kept moving files after losing its lock: {back}"
    assert len(RESTORE_PASS.unfinished(root)) == 1

    assert RESTORE_PASS.recover is not None
    RESTORE_PASS.recover(PassContext(root, thief, _real_clock, LIMITS))
    assert failing(check_store(take_snapshot(root), LIMITS)) == []
    assert ledger_tree_disagreements(root) == [] and stubs(root) == []
    assert lost_lines(before_dir, root, frozenset({"projects/a.md", "projects/a-2.md"})) == []
    thief.release()
    assert leftovers(root) == []


# -- two passes within one second ---------------------------------------------------------------------

def test_revert_undoes_the_newest_pass_even_when_two_passes_share_a_second(tmp_path: Path) -> None:
    """apply, revert, apply, revert with no --manifest, all within one clock second: the second
    revert must undo the second pass (the newest manifest), not the already reverted first."""
    root = tmp_path / "store"
    stale_store(root)
    policy = load_policy()
    fixed = datetime.now(timezone.utc).replace(microsecond=0)

    def clock() -> datetime:
        return fixed

    first = run_gc_apply(root, policy, clock).outcome
    assert first is not None and first.moved == MOVED
    assert run_gc_revert(root, policy, clock, None).outcome.reverted  # type: ignore[union-attr]
    second = run_gc_apply(root, policy, clock).outcome
    assert second is not None and second.moved == MOVED and second.manifest != first.manifest
    report = run_gc_revert(root, policy, clock, None)
    chose = report.outcome.manifest if report.outcome else "; ".join(report.notes)
    names = sorted(p.name for p in (root / "data/gc-manifests").glob("*.json"))
    assert all((root / x).is_file() for x in MOVED), (
        f"gc --revert without --manifest did not undo the newest pass ({second.manifest}); "
        f"it chose {chose} (manifests in sorted order: {names})")
    assert report.outcome is not None and report.outcome.manifest == second.manifest
    assert failing(check_store(take_snapshot(root), LIMITS)) == []
