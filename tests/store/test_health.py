"""The health report's figures: exactly the research's Store B aggregates on a store built to
them, its growth from a git history that replays it, and unknown (never 0) where a figure
cannot be known."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import EM, StoreBuilder, healthy_store
from distilld.actions.health import build_report
from distilld.actions.health_render import render_text
from distilld.policy import load_policy, parse_policy
from distilld.store.health import archive_and_ledger, index_cost, lifecycle, links, tier_files
from distilld.store.health_blocks import body_blocks
from distilld.store.health_model import HealthReport
from distilld.store.snapshot import snapshot_from_files
from distilld.store.text import split_lines
from storeb import (
    NOW,
    SINCE,
    SPINE_BYTES,
    SPINE_BYTES_SINCE,
    TODAY,
    build_store_b,
    build_store_b_with_history,
)

LIMITS = load_policy().limits


@pytest.fixture(scope="module")
def store_b_snapshot() -> object:
    return snapshot_from_files(Path("store-b"), build_store_b().files)


def test_store_b_index_cost_is_exactly_the_research_figures(store_b_snapshot: object) -> None:
    section = index_cost(store_b_snapshot, LIMITS, helpers=4)  # type: ignore[arg-type]
    assert section.value("spine_bytes") == SPINE_BYTES == 51_203
    assert section.value("spine_lines") == 79
    assert section.value("entries") == 65
    assert section.value("entries_over_cap") == 44
    assert section.value("entry_median_bytes") == 553
    assert section.value("links") == 95
    assert section.value("spine_bytes_vs_cap") == 3.2
    assert section.value("tokens_per_session") == round(51_203 / 4)
    assert section.value("tokens_with_helpers") == 5 * round(51_203 / 4)
    assert section.figure("tokens_per_session").estimate and section.figure("tokens_per_session_chars").estimate
    assert not section.figure("spine_bytes").estimate


def test_store_b_tier_files_and_lifecycle_are_exactly_the_research_figures(store_b_snapshot: object) -> None:
    tiers = tier_files(store_b_snapshot, LIMITS)  # type: ignore[arg-type]
    assert (tiers.value("files"), tiers.value("over_any_cap")) == (95, 56)
    life = lifecycle(store_b_snapshot, LIMITS, TODAY, None)  # type: ignore[arg-type]
    assert life.value("project_files") == 23
    assert life.value("named_elsewhere") == 18
    assert life.value("past_threshold") == 7
    assert life.value("exempt") == 3
    assert (life.value("blocked"), life.value("movable")) == (1, 3)  # current rule: only read_with blocks
    assert (life.value("blocked_older_rule"), life.value("movable_older_rule")) == (2, 2)  # any mention blocks
    rows = {row["path"]: row for row in life.items["past_threshold"]}
    assert rows["projects/delta.md"]["read_with_of"] == ["craft/contracts.md"]
    assert (rows["projects/fjord.md"]["current_rule"], rows["projects/fjord.md"]["older_rule"]) == ("movable", "blocked")
    assert rows["projects/quill.md"]["exempt"].startswith("carries [NON-NEGOTIABLE]")
    # garnet is past its own 30-day threshold but not a flat 90-day one.
    assert (life.value("past_flat_60"), life.value("past_flat_90")) == (7, 6)
    assert life.value("store_age_days") is None and "no git history" in str(life.figure("store_age_days").unknown)


def test_store_b_links_and_archive(store_b_snapshot: object) -> None:
    found = links(store_b_snapshot)  # type: ignore[arg-type]
    assert found.value("broken_index_links") == 0 and found.value("unindexed_files") == 0
    assert found.value("broken_cross_references") == 0
    assert found.value("archive_references") == 1  # ops/runbook.md names the archived projects/ember.md
    archive = archive_and_ledger(store_b_snapshot)  # type: ignore[arg-type]
    assert (archive.value("archived_files"), archive.value("legacy_flat"), archive.value("legacy_nested")) == (1, 1, 0)
    assert (archive.value("ledger_archive"), archive.value("restores")) == (1, 0)


def test_the_three_bounds_count_blocks_as_the_research_defined_them() -> None:
    text = ("---\nscope: x\n---\n# T\n\n## S\n\n"
            "- 2026-05-03 observe: the retry ladder held\n"
            "- The ladder changed on 2026-04-12 after the outage\n"
            "- Confirmed by the load test twice\n"
            "- [NON-NEGOTIABLE 2026-05-02] never replay into prod\n"
            "- [DIRECTIVE] measured weekly\n"
            "- plain principle\n  with a continuation\n\n"
            "A paragraph\nover two lines, observed once.\n\n```\n2026-01-01 in a fence\n```\n")
    lines = split_lines(text)
    blocks = body_blocks(lines, 3)
    assert [b.end - b.start for b in blocks] == [1, 1, 1, 1, 1, 2, 2, 3]
    movable = {bound: [b.text.split("\n")[0][:12] for b in blocks if b.movable(bound)]
               for bound in ("strict", "generous", "very_generous")}
    assert movable["strict"] == ["- 2026-05-03"]
    assert movable["generous"] == ["- 2026-05-03", "- The ladder", "```"]
    assert movable["very_generous"] == ["- 2026-05-03", "- The ladder", "- Confirmed ", "A paragraph", "```"]


@pytest.fixture(scope="module")
def history_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("store-b")
    return root, build_store_b_with_history(root).expected_spine_bytes_lost


@pytest.fixture(scope="module")
def history_report(history_store: tuple[Path, int]) -> tuple[HealthReport, int]:
    root, lost = history_store
    return build_report(root, load_policy(), NOW, SINCE, helpers=2), lost


def test_the_history_gives_the_growth_figure(history_report: tuple[HealthReport, int]) -> None:
    report, _ = history_report
    growth = report.section("growth")
    assert growth.value("since") == "2026-08-01"
    assert (growth.value("spine_bytes_then"), growth.value("spine_bytes_now")) == (SPINE_BYTES_SINCE, SPINE_BYTES)
    assert growth.value("growth_spine_bytes_pct") == 65.0
    assert (growth.value("entries_then"), growth.value("entries_now")) == (65, 65)  # entries stayed at 65
    assert (growth.value("links_then"), growth.value("links_now")) == (95, 95)
    assert growth.value("spine_commits") == 10
    days = [point["day"] for point in report.series["growth"]]
    assert days[0] == "2026-08-01" and days[-1] == "2026-09-19" and len(days) == 10
    assert [point["entries"] for point in report.series["growth"]] == [65] * 10
    assert "since 2026-08-01: SPINE 31,032 B -> 51,203 B (+65.0%); entries 65 -> 65" in render_text(report)
    assert report.value("lifecycle", "store_age_days") == 49


def test_the_history_says_what_distilld_did(history_report: tuple[HealthReport, int]) -> None:
    report, lost = history_report
    did = report.section("distilld")
    assert did.value("managed_since") == "2026-08-30"
    assert (did.value("commits"), did.value("passes")) == (6, 6)
    assert did.items["commits_by_operation"] == [
        {"operation": "adopt", "commits": 1}, {"operation": "agent-changes", "commits": 3},
        {"operation": "compaction", "commits": 1}, {"operation": "lifecycle", "commits": 1}]
    assert (did.value("entries_shortened"), did.value("files_split"), did.value("files_archived")) == (4, 1, 1)
    assert did.value("spine_bytes_lost") == lost > 0
    assert did.value("tokens_saved_per_session") == round(lost / 4)
    assert did.figure("tokens_saved_per_session").estimate
    assert did.value("activity_lines") is None  # no log given: unknown, not 0


def test_since_after_the_first_commit_takes_that_day(history_store: tuple[Path, int]) -> None:
    from datetime import date

    report = build_report(history_store[0], load_policy(), NOW, date(2026, 9, 11))
    growth = report.section("growth")
    assert growth.value("since") == "2026-09-10"  # the store as it was on the 11th
    assert [p["day"] for p in report.series["growth"]] == ["2026-09-10", "2026-09-12", "2026-09-19"]


def _unknown(report: HealthReport, section: str, key: str) -> str:
    figure = report.section(section).figure(key)
    assert figure.value is None, f"{section}.{key} should be unknown, is {figure.value!r}"
    assert figure.unknown
    return figure.unknown


def test_a_store_without_git_history_says_growth_is_unknown(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    report = build_report(store, load_policy(), NOW)
    assert "not a git repository" in _unknown(report, "growth", "growth_spine_bytes_pct")
    assert "not a git repository" in _unknown(report, "distilld", "commits")
    assert _unknown(report, "distilld", "entries_shortened")
    assert "no git history" in _unknown(report, "lifecycle", "store_age_days")
    assert report.value("index_cost", "entries") == 6  # what can be measured still is
    text = render_text(report)
    assert "unknown: the store is not a git repository" in text
    assert "since 0" not in text and "0 commits" not in text


def test_the_report_measures_against_the_policy_it_is_given(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    policy = parse_policy("[spine]\nentry_max_bytes = 300\nentry_target_bytes = 150\n"
                          "[lifecycle]\nstaleness_threshold_days = 45\n", "test.toml")
    report = build_report(store, policy, NOW)
    index = report.section("index_cost")
    assert index.figure("entries_over_cap").label == "entries over 300 B"
    assert "300-byte cap" in index.figure("entries").how
    assert "(default 45 days)" in report.section("lifecycle").figure("past_threshold").how
    assert "; 0 over 400 B, 6 at or under 240 B" in render_text(build_report(store, load_policy(), NOW))
    assert "; 0 over 300 B, 6 at or under 240 B" in render_text(report)
    pytest.importorskip("pygal")
    pytest.importorskip("jinja2")
    from distilld.actions.health_html import render_html

    page = render_html(report)
    assert "cap 300 B" in page and "cap 400 B" not in page


def test_an_empty_store_says_what_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    report = build_report(tmp_path / "empty", load_policy(), NOW)
    assert report.layout == "new"
    assert "no SPINE.md" in _unknown(report, "index_cost", "spine_bytes")
    assert "no SPINE.md" in _unknown(report, "links", "broken_index_links")
    assert _unknown(report, "tier_files", "median_blocks")
    assert _unknown(report, "lifecycle", "median_days_since_confirmed")
    assert "no archive/LEDGER.md" in _unknown(report, "archive", "ledger_archive")
    assert report.value("tier_files", "files") == 0  # counted: there are none
    text = render_text(report)
    assert "unknown: the store has no SPINE.md" in text


def test_a_pre_1_2_store_says_its_archive_moves_are_unknown(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path / "old")
    b.spine([f"- [Kestrel](projects/kestrel.md) {EM} Kestrel ingest. Read when in kestrel."],
            catalog_line=False, header="# Distill Knowledge Index")
    b.tier("projects/kestrel.md", "# Kestrel\n\n- 2026-04-01 observed lag.\n", scope="Kestrel", last_updated="2026-04-01")
    b.write("archive/old-notes.md", "# Old notes\n")
    report = build_report(b.root, load_policy(), NOW)
    assert report.layout == "pre-1.2"
    assert "pre-1.2" in _unknown(report, "archive", "ledger_archive")
    assert _unknown(report, "archive", "restores")
    assert report.value("archive", "legacy_flat") == 1
    assert _unknown(report, "growth", "growth_spine_bytes_pct")
    assert report.value("lifecycle", "past_threshold") == 1  # measured, as the budget reports it
    assert "(layout pre-1.2)" in render_text(report)


def test_the_summary_fits_one_screen(history_report: tuple[HealthReport, int]) -> None:
    report, _ = history_report
    lines = render_text(report).splitlines()
    assert len(lines) <= 40
    assert max(len(line) for line in lines if "unknown:" not in line) <= 125


def test_broken_links_unindexed_files_restores_and_pending_adoptions_are_counted(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    spine = b.read("SPINE.md").decode() + f"- [Gone](projects/gone.md) {EM} a file that is not there.\n"
    b.write("SPINE.md", spine)
    b.tier("ops/orphan.md", "# Orphan\n\n- See `craft/missing.md` and `projects/marlin.md`.\n",
           scope="no SPINE entry", last_updated="2026-09-01")
    b.write("craft/archive/old.md", "# An old client's archive\n")
    b.append_ledger("- 2026-11-01T10:00:00Z restore | from: archive/projects/nope.md | to: projects/nope.md"
                    " | reason: move never completed")
    snapshot = snapshot_from_files(b.root, {p.relative_to(b.root).as_posix(): p.read_bytes()
                                            for p in b.root.rglob("*") if p.is_file()})
    found = links(snapshot)
    assert found.value("broken_index_links") == 1 and found.items["broken_index_links"] == [{"path": "projects/gone.md"}]
    assert found.value("unindexed_files") == 1
    assert found.items["broken_cross_references"] == [{"from": "ops/orphan.md", "to": "craft/missing.md"}]
    assert found.value("archive_references") == 1  # projects/marlin.md is archived
    archive = archive_and_ledger(snapshot)
    assert archive.value("pending_adoption") == 1  # craft/archive/old.md
    assert (archive.value("restores"), archive.value("moves_never_completed")) == (1, 1)


def test_the_flat_thresholds_the_report_compares_with_come_from_the_policy(tmp_path: Path) -> None:
    """issue 26: no number outside the policy; a policy that names other days gets those columns."""
    from dataclasses import replace
    from datetime import UTC, date, datetime

    from distilld.store.snapshot import take_snapshot

    limits = load_policy().limits
    assert limits.lifecycle.report_flat_days == (60, 90)
    root = tmp_path / "store"
    healthy_store(root)
    other = replace(limits, lifecycle=replace(limits.lifecycle, report_flat_days=(30,)))
    section = lifecycle(take_snapshot(root), other, date(2026, 11, 30), None)
    keys = {f.key for f in section.figures}
    report = build_report(root, replace(load_policy(), limits=other), datetime(2026, 11, 30, 12, tzinfo=UTC))
    assert "flat 30 days: " in render_text(report) and "flat 60 days" not in render_text(report)
    assert {"past_flat_30", "movable_flat_30"} <= keys and "past_flat_60" not in keys
