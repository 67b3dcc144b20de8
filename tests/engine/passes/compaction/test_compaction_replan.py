"""A compaction whose self-check fails because a writer added a file after the catalog was
rebuilt (issue 23, item 9): the rollback keeps the writer's file, and the pass plans again at
once, so the store it leaves passes C1-C3 (the catalog lists the new file) and is never
committed with C2 failing."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, healthy_store
from distilld.actions.compaction import run_compaction
from distilld.engine import finish
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot
from maintenance_fixtures import migrated_store_over_targets

NOTE = "---\ndomain: craft\nscope: A writer's note on flags\nlast_updated: 2026-11-30\n---\n\n# Flags\n\n- Flags default off.\n"
ENTRY = f"- [Flags](craft/writer-flags.md) {EM} feature flags default off. Read before adding a flag."


def write_new_file(root: Path) -> None:
    """What a lockless writer does: a new tier file and its SPINE entry."""
    (root / "craft/writer-flags.md").write_text(NOTE)
    spine = (root / "SPINE.md").read_text()
    (root / "SPINE.md").write_text(spine.replace("## Craft\n", f"## Craft\n{ENTRY}\n", 1))


def test_a_rollback_that_kept_a_writers_new_file_plans_again_and_leaves_c2_passing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    real = finish.crashpoint
    written: list[bool] = []

    def writer_between_catalog_and_check(boundary: str) -> None:
        real(boundary)
        if boundary == "catalog-written" and not written:
            written.append(True)
            write_new_file(root)

    monkeypatch.setattr(finish, "crashpoint", writer_between_catalog_and_check)
    policy = load_policy()
    report = run_compaction(root, policy, lambda: FIXED_NOW)

    assert written
    assert any("rolled back" in note for note in report.notes), report.notes
    failing = [f"[{f.group}] {f.message}" for f in check_store(take_snapshot(root), policy.limits)
               if f.severity == "fail"]
    assert failing == []
    assert "craft/writer-flags.md" in (root / "CATALOG.md").read_text()
    assert (root / "craft/writer-flags.md").read_text() == NOTE
    assert report.pass_ok, report.to_dict()


def test_a_rollback_that_kept_the_spine_never_leaves_a_pointer_to_a_removed_split_child(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak's "SPINE pointer to missing file: projects/<name>-2.md": a pass that split a
    file, whose SPINE a writer edited after the pass wrote it and whose self-check then failed.
    The rollback keeps the edited SPINE (with the child's pointer) and removes the child it
    made; planned again at once, the split is made again and the pointer has its file."""
    b = healthy_store(tmp_path / "store")
    b.tier("projects/kestrel.md", "# Kestrel\n\n" + "".join(
        f"## Part {n}\n\n" + "".join(f"- kestrel fact {n}.{k} about topics and the schema registry.\n"
                                      for k in range(8)) + "\n" for n in range(8)),
           domain="project", scope="Kestrel ingest pipeline", last_updated="2026-11-02")
    b.rebuild_catalog()
    root = b.root
    real = finish.crashpoint
    written: list[bool] = []

    def writer_between_catalog_and_check(boundary: str) -> None:
        real(boundary)
        if boundary == "catalog-written" and not written:
            written.append(True)
            write_new_file(root)

    monkeypatch.setattr(finish, "crashpoint", writer_between_catalog_and_check)
    policy = load_policy()
    report = run_compaction(root, policy, lambda: FIXED_NOW)

    assert written and report.plan is not None
    failing = [f"[{f.group}] {f.message}" for f in check_store(take_snapshot(root), policy.limits)
               if f.severity == "fail"]
    assert failing == [], (failing, report.notes)
    assert (root / "projects/kestrel-2.md").is_file()
    assert "(projects/kestrel-2.md)" in (root / "SPINE.md").read_text()
