"""A migration moves legacy archives to archive/legacy/…, while the tier files' prose still names
the old paths, and C4 forbids rewriting those lines (issue 27). The preview lists every such
reference; afterwards each one still resolves (the adopted path is archive/legacy/ + the old
one, as the report and check follow it); a reference that resolves nowhere is a check note."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import StoreBuilder
from distilld.actions.check import run_check
from distilld.actions.migrate import render_text, run_migrate
from distilld.policy import load_policy
from distilld.store.health import links
from distilld.store.snapshot import take_snapshot
from maintenance_fixtures import unmigrated_store

POLICY = load_policy(None)
NOW = datetime(2026, 9, 12, 10, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


@pytest.fixture
def store(tmp_path: Path) -> StoreBuilder:
    b = unmigrated_store(tmp_path / "store")
    saffron = (b.root / "projects/saffron.md").read_text()
    b.write("projects/saffron.md", saffron + "- The old reindex notes are in archive/projects/marten.md.\n"
            "- Style rules of old: craft/archive/style-2024.md.\n")
    return b


def broken_refs(root: Path) -> list[dict[str, str]]:
    return links(take_snapshot(root)).items["broken_cross_references"]


def test_the_preview_lists_every_reference_whose_file_moves(store: StoreBuilder) -> None:
    outcome = run_migrate(store.root, POLICY, clock, "preview")
    assert outcome.plan is not None
    moved = outcome.plan.moved_references
    assert any("projects/saffron.md names archive/projects/marten.md" in line
               and "archive/legacy/archive/projects/marten.md" in line for line in moved), moved
    assert any("craft/archive/style-2024.md" in line and "archive/legacy/craft/archive/style-2024.md" in line
               for line in moved), moved
    text = render_text(outcome)
    assert "references whose file moves (2;" in text
    plan_md = (Path(str(outcome.directory)) / "PLAN.md").read_text()
    assert "## References whose file moves" in plan_md and "archive/projects/marten.md" in plan_md


def test_after_the_migration_the_old_names_still_resolve(store: StoreBuilder) -> None:
    assert broken_refs(store.root) == []
    outcome = run_migrate(store.root, POLICY, clock, "apply")
    assert outcome.ok, outcome.self_check
    assert (store.root / "archive/legacy/archive/projects/marten.md").is_file()
    assert "archive/projects/marten.md" in (store.root / "projects/saffron.md").read_text()  # prose kept
    assert broken_refs(store.root) == []
    result = run_check(store.root, POLICY.limits)
    assert result.ok and not [f for f in result.findings if f.code == "broken-cross-reference"]


def test_check_notes_a_reference_that_resolves_nowhere(store: StoreBuilder) -> None:
    run_migrate(store.root, POLICY, clock, "apply")
    deploy = (store.root / "ops/deploy.md").read_text()
    store.write("ops/deploy.md", deploy + "- See projects/heron.md for the old rollout.\n")
    result = run_check(store.root, POLICY.limits)
    notes = [f for f in result.findings if f.code == "broken-cross-reference"]
    assert [(f.path, f.severity) for f in notes] == [("ops/deploy.md", "note")]
    assert "projects/heron.md" in notes[0].message
    assert result.ok  # a note: the format's checker does not read prose
    assert json.loads(json.dumps([f.to_dict() for f in notes]))[0]["path"] == "ops/deploy.md"
