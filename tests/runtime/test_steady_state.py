"""Steady state, end to end: the real daemon keeps a migrated store within its budgets while an
agent goes on writing the way agents do.

A simulated agent repeatedly takes the store's lock, adds topic files written as one long
`## Principles` section, adds long SPINE entries, appends principles to existing files and
lengthens hooks, then releases the lock. After each quiet period and the compaction the daemon
runs: C1-C3 pass or the daemon reports the debt with its reason; no line the agent or the first
store ever held is lost (counted over each file's whole split family, the format's unit of
conservation); and every compaction also passed C4 against the store just before it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from random import Random
from typing import Any

import pytest
from distilld.actions.migrate import run_migrate
from distilld.engine.lock import StoreLock
from distilld.log import utc_stamp
from distilld.policy import load_policy
from distilld.settings import instance_key
from distilld.store.invariants import check_store
from distilld.store.snapshot import Snapshot, take_snapshot
from distilld.store.text import trim
from realshapes import Writer, generate
from waiting import wait_for

pytestmark = pytest.mark.slow

EM = "\u2014"
NOW = datetime(2026, 10, 1, 12, 0, 0, tzinfo=UTC)
ROUNDS = 4


def families(snapshot: Snapshot) -> dict[str, str]:
    """Every tier file's family root: split_from followed to the file that has none."""
    parent = {p: snapshot.knowledge(p).split_from for p in snapshot.tier_paths}

    def root(path: str) -> str:
        seen = {path}
        while parent.get(path) and parent[path] in parent and parent[path] not in seen:
            path = parent[path] or path
            seen.add(path)
        return path
    return {p: root(p) for p in snapshot.tier_paths}


def lines_by_family(snapshot: Snapshot) -> dict[str, Counter[str]]:
    pools: dict[str, Counter[str]] = {}
    for path, family in families(snapshot).items():
        pool = pools.setdefault(family, Counter())
        for source in (path, "evidence/" + path):
            if source in snapshot.contents:
                pool.update(trim(line) for line in snapshot.knowledge(source).lines if trim(line))
    return pools


class Agent:
    """Writes as agents do: under the lock, long single sections, long entries, appends."""

    def __init__(self, store: Path, seed: int) -> None:
        self.store = store
        self.rng = Random(seed)
        self.writer = Writer(self.rng)
        self.written: dict[str, Counter[str]] = {}  # what the agent wrote, by file

    def remember(self, path: str, text: str) -> None:
        self.written.setdefault(path, Counter()).update(trim(x) for x in text.splitlines() if trim(x))

    def session(self, number: int) -> None:
        lock = StoreLock(self.store, f"agent-{number}")
        lock.acquire()
        try:
            spine = (self.store / "SPINE.md").read_text()
            for k in range(2):
                path = f"craft/agent-topic-{number}-{k}.md"
                lines = ["---", f"scope: what session {number} learned ({k})",
                         f"last_updated: 2026-10-{1 + number:02d}", "---", "", "## Principles", ""]
                target = self.rng.randrange(20, 140)
                while len(lines) < target:
                    lines += self.writer.bullet()
                text = "\n".join(lines) + "\n"
                (self.store / path).write_text(text)
                self.remember(path, text)
                hook = self.writer.hook("Orca", self.rng.choice((350, 600, 900)), False)
                spine = spine.replace("\n## Ops", f"\n- [Session {number} topic {k}]({path}) {EM} {hook}\n## Ops", 1)
            entries = [line for line in spine.splitlines() if line.startswith("- [") and "CATALOG.md" not in line]
            longer = self.rng.choice(entries)  # an agent lengthens a hook
            spine = spine.replace(longer, longer + " Also: " + self.writer.sentence(25), 1)
            (self.store / "SPINE.md").write_text(spine)
            roots = sorted(p for p in take_snapshot(self.store).tier_paths
                           if p.startswith("craft/") and not take_snapshot(self.store).knowledge(p).split_from)
            for path in self.rng.sample(roots, 4):
                added = "".join("\n".join(self.writer.bullet()) + "\n" for _ in range(self.rng.randrange(3, 10)))
                with (self.store / path).open("a") as handle:
                    handle.write(added)
                self.remember(path, added)
        finally:
            lock.release()


def test_the_daemon_keeps_a_migrated_store_within_budget_while_an_agent_writes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    generate(store, 11)
    policy = load_policy(None)
    run_migrate(store, policy, lambda: NOW, "apply")
    assert check_store(take_snapshot(store), policy.limits) == [] or all(
        f.severity != "fail" for f in check_store(take_snapshot(store), policy.limits))
    first = lines_by_family(take_snapshot(store))

    runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))
    config_dir, state = tmp_path / "config", tmp_path / "state"
    config_dir.mkdir()
    (config_dir / "config.toml").write_text(
        "[watch]\nquiet_seconds = 0.5\nmax_wait_seconds = 5\n"
        "[schedule]\njitter_seconds = 0\nreconcile_minutes = 0\n[git]\ncommit = false\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("DISTILLD_")}
    env.update(DISTILLD_CONFIG_DIR=str(config_dir), DISTILLD_STATE_DIR=str(state), DISTILLD_RUNTIME_DIR=str(runtime),
               HOME=str(tmp_path / "home"), PYTHONUNBUFFERED="1")
    status_file = state / instance_key(store) / "status.json"

    def status() -> dict[str, Any]:
        try:
            return dict(json.loads(status_file.read_text()))
        except (OSError, ValueError):
            return {}

    def idle() -> bool:
        worker = status().get("worker") or {}
        return status().get("state") == "idle" and not worker.get("running") and not worker.get("pending")

    process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--store", str(store)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    agent = Agent(store, 5)
    try:
        wait_for(lambda: idle() and "compaction" in status().get("passes", {}), 120, "the daemon's first passes")
        for number in range(ROUNDS):
            at = (status().get("passes", {}).get("compaction") or {}).get("at")
            # A pass is stamped to the second: the next compaction is told apart by its stamp only
            # once the clock has left the second of the last one (a fast pass can finish in it).
            wait_for(lambda: utc_stamp() != at, 30, "the clock to leave the last compaction's second")
            agent.session(number)
            # The agent's entries breach the 400-byte cap: the daemon compacts on its own.
            wait_for(lambda: (status().get("passes", {}).get("compaction") or {}).get("at") != at and idle(),
                     180, f"the compaction after session {number}")
            snapshot = take_snapshot(store)
            failing = [f for f in check_store(snapshot, policy.limits) if f.severity == "fail"]
            compaction = status()["passes"]["compaction"]
            assert compaction["ok"] is True, compaction
            if failing:  # over a cap still: then the daemon names the file, and compaction said why
                said = json.dumps(status()) + (state / instance_key(store) / "activity.log").read_text()
                assert all(f.path in said for f in failing), (failing, said[-2000:])
            # Nothing the first store or the agent ever wrote is gone from its family.
            now_lines = lines_by_family(snapshot)
            roots = families(snapshot)
            for path, wanted in [*first.items(), *agent.written.items()]:
                family = roots.get(path, path)
                have = now_lines.get(family, Counter())
                lost = {line: count for line, count in wanted.items() if have[line] < count}
                assert not lost, (path, list(lost)[:3])
        assert not [d for d in (store / "data" / "compact-journals").glob("*") if d.suffix == ".tmp"]
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(runtime, ignore_errors=True)
    assert process.stderr is not None and b"Traceback" not in process.stderr.read()
