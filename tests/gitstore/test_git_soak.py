"""Two machines, agents writing on both, syncs in a random order: identical bytes at the end,
a ledger in order, a store that passes C1-C3, no conflict markers, and no line lost."""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest
from distilld.store.ledger import Ledger
from distilld.store.stamps import stamp_later
from gitmachines import Machine, Origin, assert_converged, lifecycle_store

pytestmark = pytest.mark.slow

TIER_FILES = ("craft/testing.md", "ops/deploy.md", "profile/rowan.md", "feedback/preferences.md",
              "projects/kestrel.md")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_agents_on_two_machines_lose_nothing(tmp_path: Path, origin: Origin, seed: int) -> None:
    rng = random.Random(seed)
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    written: list[bytes] = []
    operations = {"a": ["gc"], "b": ["restore"]}  # one lifecycle move each, at a random round
    for round_number in range(6):
        for machine in rng.sample([a, b], 2):
            machine.later(rng.randint(1, 30))
            for _ in range(rng.randint(1, 2)):
                line = f"- {machine.name} round {round_number} note {rng.randrange(10**6)}\n"
                if rng.random() < 0.3:
                    name = f"inbox/20261130T{round_number:02d}0000Z-{rng.randrange(16**4):04x}-{machine.name}.md"
                    machine.write(name, f"---\norigin: session-signal\n---\n{line}")
                else:
                    machine.append(rng.choice(TIER_FILES), line)
                written.append(line.encode())
            pending = operations[machine.name]
            if pending and rng.random() < 0.4:
                op = pending.pop()  # the lists stay empty afterwards
                done = machine.gc()[0] if op == "gc" else machine.restore("projects/marlin.md")[0]
                assert done.ok, (machine.name, op, done)
            report = machine.sync()
            assert report.ok, (machine.name, round_number, report)
    if operations["a"]:
        assert a.gc()[0].ok
    if operations["b"]:
        assert b.restore("projects/marlin.md")[0].ok
    for machine in (a, b, a):
        assert machine.sync().ok
    files = assert_converged(origin, a, b)
    everything = b"".join(files.values())
    lost = [line for line in written if line not in everything]
    assert not lost, lost
    stamps = [e.stamp or "" for e in Ledger(files["archive/LEDGER.md"]).events]
    assert all(not stamp_later(x, y) for x, y in pairwise(stamps))
