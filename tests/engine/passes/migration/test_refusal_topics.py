"""A migration refused for the SPINE's caps names topics to archive or merge, by files that
exist, with the bytes each frees (issue 24: the list named split children not made yet)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from storegen import generate_store  # noqa: E402

from distilld.engine.passes.migration.plan import plan_migration  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402


@pytest.mark.slow
def test_a_store_too_big_for_any_spine_is_told_which_existing_topics_to_archive_or_merge(tmp_path: Path) -> None:
    root = tmp_path / "store"
    generate_store(root, 2, "unmigrated", 1)
    plan = plan_migration(take_snapshot(root), load_policy(None).limits, datetime(2026, 10, 1, tzinfo=UTC), False)
    assert plan.refused
    topics = [s for s in plan.suggestions if s.startswith("archive or merge the topic")]
    assert topics
    for suggestion in topics:
        paths = suggestion.split(" (", 1)[1].split("): ", 1)[0].split(", ")
        assert all((root / p).is_file() for p in paths), suggestion  # no file the plan would only create
        assert "frees" in suggestion and int(suggestion.split("frees ")[1].split(" ")[0]) > 0
    assert not any("a long entry to reword" in s for s in plan.suggestions)
