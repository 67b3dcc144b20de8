"""The gc planner (STORE-FORMAT.md 4.4): who moves, who stays and why, and what the SPINE becomes.

Every store is built from ``healthy_store`` (persona Rowan) in tmp_path, with a fixed "today"
(2026-11-30). ``plan_gc`` is pure: a snapshot in, a GcPlan out; the preview renders that plan.
A few tests apply the plan to prove that what the planner announced (SPINE lines and bytes,
spine-entry values) is what the store then has.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import distilld.cli as cli_module
import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, StoreBuilder, healthy_store
from distilld.actions.gc import preview_gc, render_text, run_gc_apply
from distilld.cli import main as cli_main
from distilld.engine.passes.gc.plan import plan_gc
from distilld.engine.passes.gc.model import GcPlan, Move, Skip, render_gc_plan
from distilld.policy import load_policy
from distilld.store.snapshot import take_snapshot
from distilld.store.text import clip

POLICY = load_policy()
TODAY = FIXED_NOW.date()  # 2026-11-30
NOW_STAMP = "2026-11-30T12:00:00Z"
OSPREY_EXEMPT = Skip("projects/osprey.md", "exempt", "pinned (lifecycle: pinned)")

HERON_BODY = "# Heron\n\n- Heron streams clickstream events into the lake.\n"
HERON_ENTRY = f"- [Heron](projects/heron.md) {EM} Heron clickstream streaming into the lake. Read when working on heron."
PELICAN_ENTRY = (f"- [Pelican](projects/pelican.md) + [Pelican, continued](projects/pelican-2.md) {EM} "
                 "Pelican CDC replication off the old CRM. Read when touching CRM replication.")
FAMILY = "(its split family projects/pelican.md, projects/pelican-2.md moves together or not at all)"


# -- helpers --------------------------------------------------------------------------------------

def clock():
    return FIXED_NOW


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def project(b: StoreBuilder, path: str, body: str = HERON_BODY, **frontmatter: str) -> StoreBuilder:
    return b.tier(path, body, domain="project", **frontmatter)


def with_entries(b: StoreBuilder, entries: list[str]) -> StoreBuilder:
    """Add SPINE entries right after Kestrel's (in the Projects section) and rebuild the catalog."""
    spine = b.read("SPINE.md").decode()
    assert KESTREL_ENTRY + "\n" in spine
    spine = spine.replace(KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + "".join(e + "\n" for e in entries))
    b.write("SPINE.md", spine)
    return b.rebuild_catalog()


def plan_of(root: Path) -> GcPlan:
    return plan_gc(take_snapshot(root), TODAY, NOW_STAMP, POLICY.limits)


def moved(plan: GcPlan) -> list[str]:
    return [m.source for m in plan.moves]


def preview_text(root: Path) -> str:
    return render_text(preview_gc(root, POLICY, FIXED_NOW))


def spine_line_number(root: Path, needle: str) -> int:
    lines = (root / "SPINE.md").read_bytes().decode().replace("\r", "").split("\n")
    return next(i for i, line in enumerate(lines, start=1) if line.startswith("- [") and needle in line)


def tree_state(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file's bytes and every file's and folder's mtime (ns), the store root included."""
    state: dict[str, tuple[bytes | None, int]] = {".": (None, root.stat().st_mtime_ns)}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        stat = path.stat()
        state[rel] = (path.read_bytes() if path.is_file() else None, stat.st_mtime_ns)
    return state


@pytest.fixture
def b(tmp_path: Path) -> StoreBuilder:
    return healthy_store(tmp_path / "store")


# -- eligibility ----------------------------------------------------------------------------------

def test_a_stale_project_file_moves_with_its_reason_stamp_age_and_threshold(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2026-05-01")
    with_entries(b, [HERON_ENTRY])
    raw = b.read("projects/heron.md")

    plan = plan_of(b.root)

    assert plan.moves == [Move(
        source="projects/heron.md", target="archive/projects/heron.md", sha256=sha(raw), sha256_norm=sha(raw),
        spine_entry=HERON_ENTRY, reason="no activity for 213 days (threshold 90)", stamp="2026-05-01",
        age_days=213, threshold_days=90, directives=0, referrers=(), family=(),
    )]
    assert plan.skipped == [OSPREY_EXEMPT]
    assert plan.now == NOW_STAMP
    text = preview_text(b.root)
    assert text.startswith("gc preview (nothing changed)\nmoves: 1\n")
    assert ("    - archive projects/heron.md -> archive/projects/heron.md (no activity for 213 days "
            "(threshold 90); last activity 2026-05-01)\n") in text
    assert f"SPINE changes:\n    remove line: {clip(HERON_ENTRY, 100)}\n" in text


def test_the_newest_stamp_anywhere_in_the_file_is_the_activity(b: StoreBuilder) -> None:
    """Old frontmatter, but a per-principle last_validated from last week: recent."""
    project(b, "projects/heron.md", HERON_BODY + "  last_validated: 2026-11-20\n", last_updated="2025-01-01")
    with_entries(b, [HERON_ENTRY])

    plan = plan_of(b.root)

    assert plan.moves == []
    assert plan.skipped == [OSPREY_EXEMPT]


def test_recent_files_are_neither_moved_nor_listed(b: StoreBuilder) -> None:
    # projects/kestrel.md (2026-11-02) is recent in the healthy store already.
    plan = plan_of(b.root)

    assert plan.moves == []
    assert plan.skipped == [OSPREY_EXEMPT]
    text = preview_text(b.root)
    assert "kestrel" not in text
    assert text == ("gc preview (nothing changed)\nmoves: 0\nexempt: 1\n"
                    "    - projects/osprey.md: pinned (lifecycle: pinned)\nblocked: 0\nineligible: 0\n"
                    f"SPINE: {plan.spine_lines_before} -> {plan.spine_lines_before} lines, "
                    f"{plan.spine_bytes_before} -> {plan.spine_bytes_before} bytes\n")


@pytest.mark.parametrize(("stamp", "moves"), [("2026-09-01", False), ("2026-08-31", True)],
                         ids=["exactly-90-days-stays", "91-days-moves"])
def test_stale_means_older_than_the_threshold(b: StoreBuilder, stamp: str, moves: bool) -> None:
    project(b, "projects/heron.md", last_updated=stamp)
    with_entries(b, [HERON_ENTRY])

    assert moved(plan_of(b.root)) == (["projects/heron.md"] if moves else [])


def test_files_in_subfolders_of_projects_are_never_candidates(b: StoreBuilder) -> None:
    project(b, "projects/sub/x.md", "# X\n", last_updated="2024-01-01")
    project(b, "projects/heron.md", last_updated="2024-01-01")
    with_entries(b, [f"- [X](projects/sub/x.md) {EM} x notes. Read for x.", HERON_ENTRY])

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/heron.md"]
    assert all(s.path != "projects/sub/x.md" for s in plan.skipped)


def test_other_tiers_are_never_candidates(b: StoreBuilder) -> None:
    # Only files directly under projects/ age out: a two-year-old ops file stays.
    b.tier("ops/old.md", "# Old\n", domain="ops", last_updated="2024-01-01")
    with_entries(b, [f"- [Old](ops/old.md) {EM} old ops. Read never."])

    assert plan_of(b.root).moves == []


def test_a_file_without_any_activity_stamp_is_ineligible(b: StoreBuilder) -> None:
    project(b, "projects/tern.md", "# Tern\n\n- Tern had no dates at all.\n", scope="Tern")
    with_entries(b, [f"- [Tern](projects/tern.md) {EM} tern. Read for tern."])

    plan = plan_of(b.root)

    assert plan.moves == []
    assert plan.skipped == [OSPREY_EXEMPT,
                            Skip("projects/tern.md", "ineligible", "it has no activity stamp (unknown, not inactive)")]
    assert "ineligible: 1\n    - projects/tern.md: it has no activity stamp (unknown, not inactive)\n" in preview_text(b.root)


@pytest.mark.parametrize(("frontmatter", "body", "reason"), [
    ({"lifecycle": "pinned"}, HERON_BODY, "pinned (lifecycle: pinned)"),
    ({}, HERON_BODY + "- [NON-NEGOTIABLE] Never drop the raw clickstream.\n",
     "carries [NON-NEGOTIABLE] (treated as pinned)"),
    ({}, HERON_BODY + "- [NON-NEGOTIABLE 2026-05-02] Never drop the raw clickstream.\n",
     "carries [NON-NEGOTIABLE] (treated as pinned)"),
    ({}, "# Heron\n\n## [NON-NEGOTIABLE 2026-05-02] Retention\n\nKeep it.\n",
     "carries [NON-NEGOTIABLE] (treated as pinned)"),
], ids=["pinned", "non-negotiable", "non-negotiable-dated", "non-negotiable-heading"])
def test_pinned_and_non_negotiable_files_are_exempt(b: StoreBuilder, frontmatter: dict[str, str], body: str,
                                                     reason: str) -> None:
    project(b, "projects/heron.md", body, last_updated="2025-01-01", **frontmatter)
    with_entries(b, [HERON_ENTRY])

    plan = plan_of(b.root)

    assert plan.moves == []
    assert Skip("projects/heron.md", "exempt", reason) in plan.skipped
    assert f"    - projects/heron.md: {reason}\n" in preview_text(b.root)


def test_a_file_in_another_files_read_with_is_blocked(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    deploy = b.read("ops/deploy.md").replace(b"read_with: [craft/testing.md]",
                                             b"read_with: [craft/testing.md, projects/heron.md]")
    b.write("ops/deploy.md", deploy)
    with_entries(b, [HERON_ENTRY])

    plan = plan_of(b.root)

    assert plan.moves == []
    assert Skip("projects/heron.md", "blocked", "it is in the read_with of ops/deploy.md") in plan.skipped
    assert "blocked: 1\n    - projects/heron.md: it is in the read_with of ops/deploy.md\n" in preview_text(b.root)


def test_prose_mentions_do_not_block_and_name_the_referrers(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    b.write("projects/kestrel.md", b.read("projects/kestrel.md") + b"- Heron (`projects/heron.md`) feeds it.\n")
    b.write("profile/rowan.md", b.read("profile/rowan.md") + b"- Owns the stream in [heron](projects/heron.md).\n")
    # None of these count: SPINE, CATALOG (rebuilt below, it names the path), evidence, the ledger,
    # an archived file.
    b.write("evidence/projects/heron.md", "---\nevidence_for: projects/heron.md\n---\n"
                                          "- 2025-01-01 observe: projects/heron.md went quiet\n")
    b.write("archive/old-notes.md", b.read("archive/old-notes.md") + b"- superseded by projects/heron.md\n")
    with_entries(b, [HERON_ENTRY.replace("Read when", "See also projects/heron.md. Read when")])

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/heron.md"]
    assert plan.moves[0].referrers == ("profile/rowan.md", "projects/kestrel.md")
    assert ("      referred to in prose by: profile/rowan.md, projects/kestrel.md "
            "(readers will look in archive/projects/heron.md)\n") in preview_text(b.root)


def test_a_mention_only_in_spine_catalog_or_evidence_is_no_referrer(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    b.write("evidence/projects/heron.md", "---\nevidence_for: projects/heron.md\n---\n"
                                          "- 2025-01-01 observe: see projects/heron.md\n")
    with_entries(b, [HERON_ENTRY.replace("Read when", "Also projects/heron.md. Read when")])

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/heron.md"]
    assert plan.moves[0].referrers == ()
    assert "referred to in prose" not in preview_text(b.root)


# -- split families -----------------------------------------------------------------------------------

def pelican_family(b: StoreBuilder, parent: dict[str, str], child: dict[str, str]) -> StoreBuilder:
    """projects/pelican.md + projects/pelican-2.md on one SPINE line. The child's name sorts before
    the parent's (C order: '-' < '.'), so "parent first" cannot come from sorting."""
    project(b, "projects/pelican.md", "# Pelican\n\n## Setup\n\n- Debezium reads the CRM binlog.\n\n"
            "Continued in `projects/pelican-2.md`.\n", scope="Pelican CDC", **parent)
    project(b, "projects/pelican-2.md", "## Cut-over\n\n- The CRM was retired; see projects/pelican.md.\n",
            scope="Pelican CDC (continued)", split_from="projects/pelican.md", **child)
    return with_entries(b, [PELICAN_ENTRY])


def test_a_stale_split_family_moves_together_parent_first(b: StoreBuilder) -> None:
    pelican_family(b, {"last_updated": "2025-03-01"}, {"last_updated": "2025-04-01"})
    assert take_snapshot(b.root).tier_paths.index("projects/pelican-2.md") < \
        take_snapshot(b.root).tier_paths.index("projects/pelican.md")

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/pelican.md", "projects/pelican-2.md"]
    family = ("projects/pelican.md", "projects/pelican-2.md")
    assert [m.family for m in plan.moves] == [family, family]
    # Its own family never counts as a referrer, though each names the other.
    assert [m.referrers for m in plan.moves] == [(), ()]
    hook = "Pelican CDC replication off the old CRM. Read when touching CRM replication."
    assert [m.spine_entry for m in plan.moves] == [
        f"- [Pelican](projects/pelican.md) {EM} {hook}",
        f"- [Pelican, continued](projects/pelican-2.md) {EM} {hook}",
    ]
    assert plan.spine_changes == [
        "remove pointer: " + clip(f"- [Pelican](projects/pelican.md) {EM} {hook}", 100),
        "remove line: " + clip(f"- [Pelican, continued](projects/pelican-2.md) {EM} {hook}", 100),
    ]


@pytest.mark.parametrize(("parent", "child", "recent"), [
    ("2026-03-01", "2026-11-25", "projects/pelican-2.md"),
    ("2026-11-25", "2026-03-01", "projects/pelican.md"),
], ids=["child-recent", "parent-recent"])
def test_a_family_with_one_recent_member_stays_whole_with_a_reason_naming_the_family(
        b: StoreBuilder, parent: str, child: str, recent: str) -> None:
    """One member is 274 days idle, the other was touched last week. Nothing moves, and the plan
    and preview say why the stale member stays (STORE-FORMAT 4.4: a family moves together or not
    at all; the preview lists every file that does not move with its reason)."""
    pelican_family(b, {"last_updated": parent}, {"last_updated": child})

    plan = plan_of(b.root)

    assert plan.moves == []
    listed = [s for s in plan.skipped if s.path.startswith("projects/pelican")]
    assert listed, "a stale family member is held back by a recent one, but the plan does not say so"
    assert all(recent in s.reason and FAMILY in s.reason for s in listed), listed
    assert FAMILY in preview_text(b.root)


def test_a_family_with_a_pinned_member_stays_whole(b: StoreBuilder) -> None:
    pelican_family(b, {"last_updated": "2025-03-01"}, {"last_updated": "2025-03-01", "lifecycle": "pinned"})

    plan = plan_of(b.root)

    assert plan.moves == []
    assert Skip("projects/pelican.md", "exempt",
                f"pinned (lifecycle: pinned) (projects/pelican-2.md) {FAMILY}") in plan.skipped
    assert f"    - projects/pelican.md: pinned (lifecycle: pinned) (projects/pelican-2.md) {FAMILY}\n" \
        in preview_text(b.root)


def test_a_family_with_a_blocked_member_stays_whole(b: StoreBuilder) -> None:
    pelican_family(b, {"last_updated": "2025-03-01"}, {"last_updated": "2025-03-01"})
    b.write("ops/deploy.md", b.read("ops/deploy.md").replace(
        b"read_with: [craft/testing.md]", b"read_with: [craft/testing.md, projects/pelican-2.md]"))
    b.rebuild_catalog()

    plan = plan_of(b.root)

    assert plan.moves == []
    assert Skip("projects/pelican.md", "blocked",
                f"projects/pelican-2.md is in the read_with of ops/deploy.md {FAMILY}") in plan.skipped


# -- markers and thresholds -----------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "count", "shown"), [
    (HERON_BODY + "- [DIRECTIVE] Replay only from the raw zone.\n", 1, " [carries 1 [DIRECTIVE] marker]"),
    (("# Heron\n\n## [DIRECTIVE 2026-07-20] Replays\n\n- [DIRECTIVE] Replay only from the raw zone.\n"
     "- [DIRECTIVE 2026-01-02] Ask before a backfill.\n"), 3, " [carries 3 [DIRECTIVE] markers]"),
], ids=["one", "three"])
def test_directive_markers_do_not_block_and_are_counted_in_the_preview(b: StoreBuilder, body: str, count: int,
                                                                       shown: str) -> None:
    project(b, "projects/heron.md", body, last_updated="2025-01-01")
    with_entries(b, [HERON_ENTRY])

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/heron.md"]
    assert plan.moves[0].directives == count
    assert ("    - archive projects/heron.md -> archive/projects/heron.md (no activity for 698 days (threshold 90); "
            f"last activity 2025-01-01){shown}\n") in preview_text(b.root)


def test_a_file_without_directives_shows_no_marker_count(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    with_entries(b, [HERON_ENTRY])

    assert "DIRECTIVE" not in preview_text(b.root)


def test_a_per_file_staleness_threshold_is_honoured(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2026-05-01", staleness_threshold="365")  # 213 days: keeps
    project(b, "projects/ibis.md", "# Ibis\n", last_updated="2026-10-01", staleness_threshold="30")  # 60 days: goes
    with_entries(b, [HERON_ENTRY, f"- [Ibis](projects/ibis.md) {EM} ibis. Read for ibis."])

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/ibis.md"]
    move = plan.moves[0]
    assert (move.reason, move.stamp, move.age_days, move.threshold_days) == (
        "no activity for 60 days (threshold 30)", "2026-10-01", 60, 30)
    assert all(s.path != "projects/heron.md" for s in plan.skipped)


# -- the SPINE --------------------------------------------------------------------------------------------

def test_a_file_linked_from_another_entrys_hook_is_blocked(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    project(b, "projects/lumen.md", "# Lumen\n", last_updated="2026-11-20")
    lumen = f"- [Lumen](projects/lumen.md) {EM} Lumen dashboards, fed by [Heron](projects/heron.md). Read for lumen."
    with_entries(b, [lumen, HERON_ENTRY])
    line = spine_line_number(b.root, "[Lumen](projects/lumen.md)")

    plan = plan_of(b.root)

    assert plan.moves == []
    assert Skip("projects/heron.md", "blocked",
                f"it is linked from the hook of the SPINE entry on line {line}; edit that hook first") in plan.skipped


def test_a_file_with_two_spine_lines_is_blocked(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    with_entries(b, [HERON_ENTRY, f"- [Heron, again](projects/heron.md) {EM} the batch side. Read for batch."])

    plan = plan_of(b.root)

    assert plan.moves == []
    assert Skip("projects/heron.md", "blocked",
                "projects/heron.md has more than one SPINE line; merge them first") in plan.skipped
    assert plan.spine_changes == []
    assert (plan.spine_lines_after, plan.spine_bytes_after) == (plan.spine_lines_before, plan.spine_bytes_before)


def test_a_wrapped_entry_is_saved_as_its_joined_text(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    with_entries(b, [f"- [Heron](projects/heron.md) {EM} Heron clickstream,", "   streamed into the lake.",
                     "\tRead when working on heron."])

    plan = plan_of(b.root)

    assert [m.spine_entry for m in plan.moves] == [
        f"- [Heron](projects/heron.md) {EM} Heron clickstream, streamed into the lake. Read when working on heron."]
    assert plan.spine_lines_before - plan.spine_lines_after == 3


def test_a_pointer_on_a_merged_line_is_saved_as_a_derived_single_pointer_entry(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    project(b, "projects/lumen.md", "# Lumen\n", last_updated="2026-11-20")
    with_entries(b, [("- [Lumen](projects/lumen.md) + [Heron](projects/heron.md) -- clickstream and its dashboards."
                     " Read for either.")])

    plan = plan_of(b.root)

    assert [m.spine_entry for m in plan.moves] == [
        f"- [Heron](projects/heron.md) {EM} clickstream and its dashboards. Read for either."]
    assert plan.spine_changes == [
        f"remove pointer: - [Heron](projects/heron.md) {EM} clickstream and its dashboards. Read for either."]
    assert plan.spine_lines_after == plan.spine_lines_before

    run_gc_apply(b.root, POLICY, clock)
    spine = b.read("SPINE.md").decode()
    assert "- [Lumen](projects/lumen.md) -- clickstream and its dashboards. Read for either.\n" in spine
    assert "heron" not in spine


def build_busy_spine(b: StoreBuilder, crlf: bool) -> StoreBuilder:
    """Whole lines, a wrapped entry, a merged line losing one pointer and a family losing two."""
    pelican_family(b, {"last_updated": "2025-03-01"}, {"last_updated": "2025-03-01"})
    project(b, "projects/heron.md", last_updated="2025-01-01")
    project(b, "projects/lumen.md", "# Lumen\n", last_updated="2026-11-20")
    project(b, "projects/ibis.md", "# Ibis\n", last_updated="2025-01-01")
    with_entries(b, [HERON_ENTRY,
                     f"- [Lumen](projects/lumen.md) + [Ibis](projects/ibis.md) {EM} dashboards,",
                     "  and the ibis exports. Read for either."])
    if crlf:
        b.write("SPINE.md", b.read("SPINE.md").replace(b"\n", b"\r\n"))
        b.rebuild_catalog()
    return b


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_spine_lines_and_bytes_in_the_plan_are_what_the_store_has_after_apply(b: StoreBuilder, crlf: bool) -> None:
    build_busy_spine(b, crlf)
    before = b.read("SPINE.md")
    plan = plan_of(b.root)
    assert moved(plan) == ["projects/heron.md", "projects/ibis.md", "projects/pelican.md", "projects/pelican-2.md"]
    assert (plan.spine_lines_before, plan.spine_bytes_before) == (
        before.replace(b"\r", b"").count(b"\n"), len(before))

    report = run_gc_apply(b.root, POLICY, clock)

    assert report.outcome is not None and report.outcome.moved == moved(plan)
    after = b.read("SPINE.md")
    assert (plan.spine_lines_after, plan.spine_bytes_after) == (after.replace(b"\r", b"").count(b"\n"), len(after))
    assert report.plan is not None and report.plan.spine_bytes_after == len(after)
    if crlf:
        assert after.count(b"\n") == after.count(b"\r\n")
    assert f"SPINE: {plan.spine_lines_before} -> {plan.spine_lines_after} lines, " \
           f"{plan.spine_bytes_before} -> {plan.spine_bytes_after} bytes\n" in render_gc_plan(plan)


# -- purity -------------------------------------------------------------------------------------------------

def test_plan_gc_and_preview_change_nothing(b: StoreBuilder, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    build_busy_spine(b, crlf=False)
    deploy = b.read("ops/deploy.md").replace(b"read_with: [craft/testing.md]",
                                             b"read_with: [craft/testing.md, projects/kestrel.md]")
    b.write("ops/deploy.md", deploy)
    b.rebuild_catalog()
    # Make every mtime distinct from "now", so a rewrite with the same bytes would still show.
    for path in [b.root, *b.root.rglob("*")]:
        os.utime(path, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    state = tree_state(b.root)
    monkeypatch.setattr(cli_module, "_now", clock)

    plan = plan_of(b.root)
    assert len(plan.moves) == 4
    assert tree_state(b.root) == state

    preview_gc(b.root, POLICY, FIXED_NOW)
    assert tree_state(b.root) == state

    for args in (["gc", str(b.root)], ["gc", str(b.root), "--preview"], ["gc", str(b.root), "--json"]):
        assert cli_main(args) == 0
        out = capsys.readouterr().out
        assert "projects/heron.md" in out
        assert tree_state(b.root) == state, args


def test_a_file_read_only_with_a_file_this_plan_archives_moves_in_the_same_plan(b: StoreBuilder) -> None:
    """Issue 23, item 10: heron is in the read_with of ibis alone, and ibis is archived by this
    very plan, so a second `gc --apply` would find heron free: the plan reaches that fixed
    point at once, and a second plan moves nothing."""
    project(b, "projects/heron.md", last_updated="2025-01-01")
    project(b, "projects/ibis.md", "# Ibis\n\n- Ibis reads heron.\n", last_updated="2025-01-01",
            read_with="[projects/heron.md]")
    with_entries(b, [HERON_ENTRY, f"- [Ibis](projects/ibis.md) {EM} ibis. Read for ibis."])

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/heron.md", "projects/ibis.md"]
    assert [s.path for s in plan.by_status("blocked")] == []
    report = run_gc_apply(b.root, POLICY, clock)
    assert report.outcome is not None and report.outcome.moved == ["projects/heron.md", "projects/ibis.md"]
    assert moved(plan_of(b.root)) == []


def test_a_file_read_with_an_active_file_and_a_leaving_one_stays_blocked(b: StoreBuilder) -> None:
    project(b, "projects/heron.md", last_updated="2025-01-01")
    project(b, "projects/ibis.md", "# Ibis\n", last_updated="2025-01-01", read_with="[projects/heron.md]")
    deploy = b.read("ops/deploy.md").replace(b"read_with: [craft/testing.md]",
                                             b"read_with: [craft/testing.md, projects/heron.md]")
    b.write("ops/deploy.md", deploy)
    with_entries(b, [HERON_ENTRY, f"- [Ibis](projects/ibis.md) {EM} ibis. Read for ibis."])

    plan = plan_of(b.root)

    assert moved(plan) == ["projects/ibis.md"]
    assert Skip("projects/heron.md", "blocked", "it is in the read_with of ops/deploy.md") in plan.skipped
