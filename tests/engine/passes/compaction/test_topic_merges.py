"""Merges that save SPINE lines pair entries that share a topic (their titles, file names and
hooks share rare words), wherever they stand in their section; where no two do, neighbours merge,
the smallest pair first, as before. Stores are real, in tmp_path; the format's checker and C4
against the store before must pass."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, StoreBuilder
from distilld.actions.compaction import run_compaction
from distilld.policy import load_policy
from distilld.store.spine import Spine
from maintenance_fixtures import have_bash, oracle_passes

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
         "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor",
         "whiskey", "xray", "yankee", "zulu"]


def clock() -> datetime:
    return datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def word(n: int) -> str:
    return f"{WORDS[n % 26]}{WORDS[n // 26]}"  # a word no other entry has


def store_with(root: Path, entries: int, topical: dict[int, tuple[str, str]]) -> None:
    """``entries`` craft entries in one section, each about a word of its own, but those in
    ``topical``: (slug, hook) that share a topic with another of them."""
    b = StoreBuilder(root)
    lines = ["## Craft"]
    for n in range(entries):
        slug, hook = topical.get(n, (word(n), f"{word(n)} rules"))
        b.tier(f"craft/{slug}.md", f"# {slug}\n\n- one rule\n", scope=slug, last_updated="2026-09-01")
        lines.append(f"- [{slug.capitalize()}](craft/{slug}.md) {EM} {hook}. Read when it comes up.")
    b.spine(lines)
    b.rebuild_catalog()


def lines_with(root: Path, paths: set[str]) -> list[set[str]]:
    spine = Spine((root / "SPINE.md").read_bytes())
    groups = [{p.path for p in e.leading_group} for e in spine.entries]
    return [g for g in groups if g & paths]


def test_entries_that_share_a_topic_merge_though_they_are_not_neighbours(tmp_path: Path) -> None:
    root = tmp_path / "store"
    topical = {5: ("kafka-consumers", "consumer lag on the `orders-v2` Kafka topic"),
               40: ("kafka-retention", "retention of the `orders-v2` Kafka topic"),
               12: ("terraform-state", "the Terraform state bucket and its lock table"),
               50: ("terraform-modules", "Terraform modules and the state they share")}
    store_with(root, 58, topical)
    shutil.copytree(root, tmp_path / "before")

    report = run_compaction(root, POLICY, clock)

    assert report.ok and report.plan is not None and report.plan.debt == []
    assert len(report.plan.merged) == 4  # two merges: the two pairs that share a topic
    kafka = {"craft/kafka-consumers.md", "craft/kafka-retention.md"}
    terraform = {"craft/terraform-state.md", "craft/terraform-modules.md"}
    assert lines_with(root, kafka) == [kafka] and lines_with(root, terraform) == [terraform]
    oracle_passes(root, tmp_path / "before")


def test_where_no_two_entries_share_a_word_the_smallest_neighbours_merge(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store_with(root, 58, {20: ("x", "x"), 21: ("y", "y"), 40: ("z", "z"), 41: ("w", "w")})  # the shortest pairs
    shutil.copytree(root, tmp_path / "before")

    report = run_compaction(root, POLICY, clock)

    assert report.ok and report.plan is not None and report.plan.debt == []
    assert len(report.plan.merged) == 4
    assert lines_with(root, {"craft/x.md"}) == [{"craft/x.md", "craft/y.md"}]
    assert lines_with(root, {"craft/z.md"}) == [{"craft/z.md", "craft/w.md"}]
    oracle_passes(root, tmp_path / "before")
