"""A compaction leaves a store the next compaction has nothing to do in: right after a migration
(whose compaction aims at the headroom), and right after a compaction. Otherwise the daemon's
first scheduled pass rewrote a dozen entries the migration had just written, and each rewrite
copied their hooks into Index detail once more."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from storegen import generate_store  # noqa: E402

from distilld.actions.compaction import preview_compaction, run_compaction  # noqa: E402
from distilld.actions.migrate import run_migrate  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.invariants import check_store  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402
from realshapes import generate  # noqa: E402

POLICY = load_policy()
NOW = datetime(2026, 10, 1, 12, 0, 0, tzinfo=UTC)


def failing(root: Path) -> list[str]:
    return [f.message for f in check_store(take_snapshot(root), POLICY.limits) if f.severity == "fail"]


def settles(root: Path) -> None:
    outcome = run_migrate(root, POLICY, lambda: NOW, "apply")
    assert outcome.ok and outcome.finished, outcome.notes
    assert failing(root) == []
    after_migration = preview_compaction(root, POLICY, NOW).plan
    assert after_migration is not None
    assert [step.title for step in after_migration.steps] == []  # nothing left for the daemon to redo


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2])  # seeds 1-4 all planned 11-14 steps here before
def test_a_compaction_after_a_migration_has_nothing_to_do(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "store"
    generate_store(root, 1, "unmigrated", seed=seed)
    settles(root)


@pytest.mark.slow
def test_a_compaction_after_a_compaction_has_nothing_to_do(tmp_path: Path) -> None:
    root = generate(tmp_path / "store", 5)
    settles(root)
    spine = root / "SPINE.md"
    spine.write_bytes(spine.read_bytes() + b"".join(
        f"- [Note {n}](projects/note-{n}.md) \u2014 {'the long hook of a new entry, ' * 14}Read when noting.\n".encode()
        for n in range(3)))
    for n in range(3):
        (root / f"projects/note-{n}.md").write_text(f"# Note {n}\n\n- a new note\n", encoding="utf-8")
    report = run_compaction(root, POLICY, lambda: NOW, apply=True)
    assert report.pass_ok and report.plan is not None and report.plan.steps
    assert [step.title for step in preview_compaction(root, POLICY, NOW).plan.steps] == []  # type: ignore[union-attr]


def test_a_chained_plan_reports_an_entry_an_earlier_plan_made_as_new_not_as_shortened() -> None:
    from distilld.engine.passes.compaction.plan import CompactionPlan, EntryChange, _chained

    first = CompactionPlan(changes=[EntryChange("cut", ["craft/a.md"], "A as read", "A cut", "craft/a.md")])
    then = CompactionPlan(changes=[
        EntryChange("cut", ["craft/a.md"], "A cut", "A cut again", "craft/a.md"),  # the same entry, again
        EntryChange("merged", ["craft/b.md"], "B as read", "B merged", "craft/b.md"),  # untouched by the first
        EntryChange("cut", ["craft/a-2.md"], "the first plan's new entry", "it cut", "craft/a-2.md"),
    ])
    chained = _chained(first, then, {"A as read", "B as read"})
    assert [(c.kind, c.before, c.after) for c in chained.changes] == [
        ("cut", "A as read", "A cut again"), ("merged", "B as read", "B merged")]
    assert len(chained.cut) == 1  # what "entries shortened" counts
