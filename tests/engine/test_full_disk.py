"""A full disk at every byte of the append-only and journal writes of restore, gc, compaction and
migration (issue 23, items 0 and 3).

The write is cut after N bytes and the disk stays full (store/fs.py's low-level write raises
ENOSPC from there on, see tests/full_disk.py). After each fault the ledger's lines are whole and
every journal reads; once space is freed, the same command (its recovery first) ends exactly
where an uninterrupted run ends. The every-byte sweeps are slow: the full run faults an even
sample of their points, and DISTILLD_TEST_EVERY_BYTE=1 every one. The fast variant takes the
first, second, middle and last byte of the first writes of each kind.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, KESTREL_ENTRY, healthy_store
from distilld.actions.compaction import run_compaction
from distilld.actions.gc import run_gc_apply
from distilld.actions.migrate import run_migrate
from distilld.actions.restore import run_restore
from distilld.engine.passes.migration.checklist import migration_dirs
from distilld.policy import load_policy
from full_disk import fault_points, full_disk_at, record_writes, tree, whole_store_problems
from maintenance_fixtures import migrated_store_over_targets, unmigrated_store

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


def stale_store(root: Path) -> None:
    """healthy_store plus two stale project files for gc (one with an evidence twin)."""
    b = healthy_store(root)
    b.tier("projects/b.md", "# B\n\n- B dashboards moved to the new BI tool.\n",
           domain="project", scope="B dashboards", last_updated="2025-01-01")
    b.tier("projects/c.md", "# C\n\n- C was a one-off migration.\n- Rollback script in ops.\n",
           domain="project", scope="C migration", last_updated="2025-02-01")
    b.write("evidence/projects/b.md", "---\nevidence_for: projects/b.md\n---\n## Evidence log\n\n"
            "- 2025-01-01 observe: dashboards moved\n")
    spine = b.read("SPINE.md").decode()
    entries = (f"- [B](projects/b.md) {EM} B dashboards \\| moved to the BI tool. Read for dashboards.\n"
               f"- [C](projects/c.md) {EM} C one-off migration of the billing tables. Read for C.\n")
    b.write("SPINE.md", spine.replace(KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + entries))
    b.rebuild_catalog(NOW)


def archived_store(root: Path) -> None:
    stale_store(root)
    report = run_gc_apply(root, POLICY, clock)
    assert report.outcome is not None and report.outcome.moved, report


def gc(root: Path) -> None:
    run_gc_apply(root, POLICY, clock)


def restore(root: Path) -> None:
    run_restore(root, "archive/projects/c.md", POLICY, clock)


def compact(root: Path) -> None:
    run_compaction(root, POLICY, clock)


def migrate(root: Path) -> None:
    if any(d.pending.exists() for d in migration_dirs(root)):
        run_migrate(root, POLICY, clock, "finish")
    else:
        run_migrate(root, POLICY, clock, "apply")


def recover_restore(root: Path) -> None:
    try:
        restore(root)
    except Exception as error:  # noqa: BLE001 - finished by the recovery: nothing archived there any more
        assert "archive/projects/c.md" in str(error), error


SCENARIOS: dict[str, tuple[Callable[[Path], None], Callable[[Path], None], Callable[[Path], None]]] = {
    # name: (build the store, the pass, the pass run again once space is freed)
    "gc": (stale_store, gc, gc),
    "restore": (archived_store, restore, recover_restore),
    "compaction": (lambda root: migrated_store_over_targets(root, projects=12), compact, compact),
    "migration": (unmigrated_store, migrate, migrate),
}


# The every-byte sweep has thousands of points a scenario (each a pass and its rerun): the full run
# faults an evenly spread sample of them, and DISTILLD_TEST_EVERY_BYTE=1 faults every one.
SAMPLED_POINTS = 100


def spread(points: list[tuple[int, int, str]], keep: int) -> list[tuple[int, int, str]]:
    """``keep`` points spread evenly over ``points`` (all of them when DISTILLD_TEST_EVERY_BYTE=1)."""
    if os.environ.get("DISTILLD_TEST_EVERY_BYTE") == "1" or len(points) <= keep:
        return points
    step = len(points) / keep
    return [points[int(i * step)] for i in range(keep)]


def sweep(tmp_path: Path, scenario: str, every_byte: bool) -> tuple[int, list[str]]:
    """Fault every point; the number of points and what went wrong."""
    build, run, again = SCENARIOS[scenario]
    template = tmp_path / "template"
    build(template)
    reference = tmp_path / "reference"
    shutil.copytree(template, reference)
    with record_writes(reference) as writes:
        run(reference)
    expected = tree(reference)
    points = fault_points(writes, every_byte)
    if every_byte:
        points = spread(points, SAMPLED_POINTS)
    failures: list[str] = []
    for number, (call, offset, kind) in enumerate(points):
        root = tmp_path / f"run-{number}"
        shutil.copytree(template, root)
        where = f"{kind} ({writes[call].path}) cut after {offset} of {writes[call].size} bytes"
        with full_disk_at(call, offset):
            try:
                run(root)
            except Exception:  # noqa: BLE001 - a full disk may stop the pass; what it leaves is judged
                pass
        failures += [f"{where}: {p}" for p in whole_store_problems(root)]
        try:
            again(root)
            again(root) if scenario == "migration" else None  # a finish, then nothing more to do
        except Exception as error:  # noqa: BLE001
            failures.append(f"{where}: the rerun failed: {error}")
        else:
            got = tree(root)
            differ = sorted(p for p in expected.keys() | got.keys() if expected.get(p) != got.get(p))
            if differ:
                failures.append(f"{where}: ended unlike an uninterrupted run in {differ[:4]}")
            failures += [f"{where}, after the rerun: {p}" for p in whole_store_problems(root)]
        shutil.rmtree(root)
    return len(points), failures


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_full_disk_in_an_append_or_journal_write_leaves_whole_lines_and_a_rerun_finishes(
        tmp_path: Path, scenario: str) -> None:
    points, failures = sweep(tmp_path, scenario, every_byte=False)
    assert points >= 4
    assert failures == [], "\n".join(failures[:10])


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_full_disk_at_every_byte_of_every_append_and_journal_write(tmp_path: Path, scenario: str) -> None:
    points, failures = sweep(tmp_path, scenario, every_byte=True)
    assert points >= min(50, SAMPLED_POINTS)
    assert failures == [], f"{len(failures)} of {points} faults:\n" + "\n".join(failures[:10])
