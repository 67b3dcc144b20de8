"""Compaction (STORE-FORMAT.md 4.2, 4.3): `distilld compact` and the scheduled pass run_compaction.

Stores are built in tmp_path (maintenance_fixtures: persona Ines); the clock is fixed at
2026-11-30T12:00:00Z. After every apply the independent reference checker must pass C1-C3,
and C4 against a copy of the store taken before.
"""

from __future__ import annotations

import re

import hashlib
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, StoreBuilder
from distilld.actions.compaction import render_json, render_plan, render_text, run_compaction
from distilld.engine.context import PreviewInputs
from distilld.engine.passes.compaction.plan import plan as plan_compaction_of
from distilld.cli import main as cli_main
from distilld.engine.passes.compaction.apply import CompactionRefused
from distilld.policy import load_policy, parse_policy
from distilld.store.snapshot import take_snapshot
from distilld.store.spine import Spine
from distilld.store.tierfile import KnowledgeFile
from maintenance_fixtures import (
    QUILL_HOOK,
    have_bash,
    long_file,
    migrated_store_over_targets,
    oracle_passes,
    project_hook,
    unmigrated_store,
)

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
TODAY = "2026-11-30"
DETAIL = f"## Index detail (moved from SPINE {TODAY})"
pytestmark = pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")


def clock() -> datetime:
    return NOW


def tree(root: Path, skip: tuple[str, ...] = ("data/", ".lock", ".status")) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()
            and not any(p.relative_to(root).as_posix().startswith(s) for s in skip)}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    shutil.copytree(root, tmp_path / "before")
    return root


def test_compaction_brings_the_store_within_its_caps_and_loses_nothing(store: Path, tmp_path: Path) -> None:
    report = run_compaction(store, POLICY, clock)

    assert report.ok and report.outcome is not None and report.outcome.self_check == []
    oracle_passes(store, tmp_path / "before")
    spine = Spine((store / "SPINE.md").read_bytes())
    assert spine.line_count <= 60 and spine.size <= 12000
    assert all(e.byte_len <= 400 for e in spine.entries)
    assert not (store / "data/compact-journals").glob("*.jsonl").__next__().read_text().endswith("\n\n")


def test_every_cut_entry_leaves_its_whole_hook_verbatim_under_index_detail(store: Path, tmp_path: Path) -> None:
    before = Spine((tmp_path / "before/SPINE.md").read_bytes())
    run_compaction(store, POLICY, clock)
    after = Spine((store / "SPINE.md").read_bytes())
    kept = {e.hook for e in after.entries}
    cut = [e for e in before.entries if e.hook not in kept and not e.is_catalog_line]
    assert len(cut) >= 40
    for entry in cut:
        target = entry.leading_group[0].path
        text = "\n".join(take_snapshot(store).knowledge(p).text
                         for p in [target] + [f"{target[:-3]}-{n}.md" for n in range(2, 5)]
                         if (store / p).exists())
        assert DETAIL in text and entry.hook in text, target
    quill = (store / "projects/quill.md").read_text()
    assert quill.endswith(f"\n{DETAIL}\n\n{QUILL_HOOK}\n")


def test_a_shortened_entry_reads_as_sentences_without_a_keyword_list(store: Path) -> None:
    """Issue 24: a shortened hook is made of whole clauses of the old one and its Read sentence
    (or that sentence's trigger words); no keyword list, no ellipsis; the store still passes."""
    report = run_compaction(store, POLICY, clock)
    assert report.ok and report.plan is not None and report.plan.cut
    lines = (store / "SPINE.md").read_text().splitlines()
    for change in report.plan.cut:
        entry = next(line for line in lines if f"]({change.paths[0]})" in line)
        assert "keywords:" not in entry and "\u2026" not in entry, entry
        assert "Read " in entry, entry


def test_a_file_with_an_invalid_byte_or_control_characters_compacts_and_the_spine_stays_clean_text(
        store: Path) -> None:
    """An invalid UTF-8 byte is only a check note, so compaction must not stop at a term that
    holds one; and no such byte, nor a NUL, form feed or line separator, reaches the synced SPINE."""
    birch = store / "projects/birch.md"
    birch.write_bytes(birch.read_bytes() + b"- The `caf\xe9_reindex` job, `nul\x00byte` and \"line\xe2\x80\xa8sep\" "
                                           b"page `form\x0cfeed` and ZORBLAT-77.\n")
    report = run_compaction(store, POLICY, clock)
    assert report.ok
    spine = (store / "SPINE.md").read_bytes()
    spine.decode("utf-8")  # strict: no invalid byte
    assert not any(char in spine.decode() for char in "\x00\x0c\u2028\t"), spine
    assert "(projects/birch.md)" in spine.decode()


def test_short_entries_keep_pointers_read_clause_markers_and_pinned(store: Path) -> None:
    run_compaction(store, POLICY, clock)
    spine = (store / "SPINE.md").read_text()
    quill = next(line for line in spine.splitlines() if "(projects/quill.md)" in line)
    assert quill.startswith(f"- [Quill](projects/quill.md) {EM} Quill payments gateway")
    assert "[NON-NEGOTIABLE]" in quill and re.search(r"\bpinned\b", quill) and "`POST /v2/charges`" in quill
    assert quill.endswith(("Read before changing anything in quill-api or quill-recon.", "quill-api, quill-recon."))
    alder = next(line for line in spine.splitlines() if "(projects/alder.md)" in line)
    assert "`alder_sync`" in alder and alder.endswith(("Read when working in the alder repo.", "Read when: alder."))
    # a wrapped entry becomes one line; its continuation's words are in its Index detail
    lines = spine.splitlines()
    assert not any(line.startswith("  owners in the platform guild") for line in lines)
    dogwood = next(line for line in lines if "(projects/dogwood.md)" in line)
    assert dogwood.endswith(("Read when working in the dogwood repo.", "Read when: dogwood."))
    assert "owners in the platform guild, and the 2023 migration notes" in (store / "projects/dogwood.md").read_text()


def test_a_split_child_joins_its_parents_line_and_blank_lines_go_before_any_merge(store: Path) -> None:
    report = run_compaction(store, POLICY, clock)
    lines = (store / "SPINE.md").read_text().splitlines()
    assert f"- [Retries](craft/retries.md) + [Retries, continued](craft/retries-2.md) {EM} retry budgets per " \
           "call site. Read before adding a retry." in lines
    assert not any(line.startswith("- [Retries, continued]") for line in lines)
    assert report.plan is not None and len(report.plan.merged) == 1  # only the child's own line went
    assert (store / "craft/retries-2.md").read_text().endswith(
        f"{DETAIL}\n\nmore retry rules. Read with retries.\n")
    assert all(line.startswith(("#", "- [", "<!--")) or line == "" for line in lines)
    assert lines.count("") == 2  # the rest of the blank lines were reclaimed, headings stayed
    assert [line for line in lines if line.startswith("## ")] == [
        "## Profile", "## Craft", "## Ops", "## Projects", "## Feedback"]


def test_entries_of_one_tier_and_section_merge_when_blank_lines_are_not_enough(tmp_path: Path) -> None:
    root = tmp_path / "store"
    b = migrated_store_over_targets(root, projects=56)
    shutil.copytree(root, tmp_path / "before")

    report = run_compaction(root, POLICY, clock)

    assert report.ok and report.plan is not None
    assert len(report.plan.merged) > 2
    spine = Spine(b.read("SPINE.md"))
    assert spine.line_count <= 60 or any("self-query score" in d for d in report.plan.debt)
    assert spine.line_count <= POLICY.limits.spine.migrate_max_lines
    merged = [e for e in spine.entries if len(e.leading_group) == 2 and e.leading_group[0].path.startswith("projects/")
              and e.leading_group[1].path.startswith("projects/") and "tundra" not in e.first_line]
    assert merged, "no multi-pointer project line"
    for entry in merged:  # one Read sentence for both (issue 24), and both hooks say something of their own
        assert entry.hook.count("Read ") <= 1, entry.joined
        names = [p.title for p in entry.leading_group]
        assert all(name in entry.hook for name in names), entry.joined
    oracle_passes(root, tmp_path / "before")


def test_an_index_detail_append_that_pushes_a_file_over_its_caps_splits_it(store: Path, tmp_path: Path) -> None:
    assert KnowledgeFile("ops/runbook.md", (store / "ops/runbook.md").read_bytes()).line_count == 57
    report = run_compaction(store, POLICY, clock)
    assert report.plan is not None
    assert [(s.path, s.children, s.after_index_detail) for s in report.plan.splits if s.after_index_detail] == [
        ("ops/runbook.md", ["ops/runbook-2.md"], True)]
    line = next(x for x in (store / "SPINE.md").read_text().splitlines() if "(ops/runbook.md)" in x)
    assert line.startswith(f"- [Runbook](ops/runbook.md) + [2](ops/runbook-2.md) {EM} ")
    for path in ("ops/runbook.md", "ops/runbook-2.md"):
        file = KnowledgeFile(path, (store / path).read_bytes())
        assert file.line_count <= 60 and file.size <= 6000
    assert (store / "ops/runbook.md").read_text().rstrip().endswith("Continued in `ops/runbook-2.md`.")


def test_protected_blocks_and_the_fence_travel_whole_and_crlf_stays_crlf(store: Path) -> None:
    run_compaction(store, POLICY, clock)
    family = sorted(p.relative_to(store).as_posix() for p in (store / "craft").glob("testing*.md"))
    assert len(family) >= 2  # pieces end at the compaction target, so there may be more than two
    texts = {p: (store / p).read_text() for p in family}
    holder = [p for p, t in texts.items() if "## [DIRECTIVE 2026-07-20] Fixtures" in t]
    assert len(holder) == 1
    assert ("- [NON-NEGOTIABLE] A failing test comes before the fix.\n  origin: directive (Ines, 2026-03-04)\n"
            in "".join(texts.values()))
    assert "```sh\n## not a heading: a comment inside a fence\npytest -q -m 'not slow'\n```" in "".join(texts.values())
    deploys = sorted((store / "ops").glob("deploy*.md"))
    assert len(deploys) >= 2
    for path in deploys:
        raw = path.read_bytes()
        assert raw.count(b"\n") == raw.count(b"\r\n"), path
    assert "".join(texts.values()).count("- Run the whole suite before a commit.") == 2


def test_an_oversize_file_is_left_alone(store: Path, tmp_path: Path) -> None:
    run_compaction(store, POLICY, clock)
    assert (store / "feedback/tables.md").read_bytes() == (tmp_path / "before/feedback/tables.md").read_bytes()
    assert not (store / "feedback/tables-2.md").exists()


def test_preview_changes_nothing_and_a_second_apply_has_nothing_to_do(store: Path) -> None:
    untouched = tree(store, ())
    report = run_compaction(store, POLICY, clock, apply=False)
    assert report.mode == "preview" and report.plan is not None and report.plan.steps
    assert tree(store, ()) == untouched
    assert "compact preview (nothing changed)" in render_text(report)

    run_compaction(store, POLICY, clock)
    after = tree(store)
    again = run_compaction(store, POLICY, clock)
    assert again.plan is not None and again.plan.steps == [] and again.outcome is not None
    assert again.outcome.journal is None
    assert tree(store) == after


def test_a_store_within_its_targets_is_not_touched(tmp_path: Path) -> None:
    root = tmp_path / "store"
    b = StoreBuilder(root)
    b.tier("projects/alder.md", "# Alder\n\n- notes\n", scope="Alder", last_updated="2026-09-01")
    b.spine(["## Projects", f"- [Alder](projects/alder.md) {EM} {project_hook(0, 'alder')}"])
    b.rebuild_catalog()
    entry = Spine(b.read("SPINE.md")).entries[-1]
    assert 200 < entry.byte_len <= 400  # over the target, but the SPINE is within its compaction point
    before = tree(root)
    report = run_compaction(root, POLICY, clock)
    assert report.plan is not None and report.plan.steps == []
    assert tree(root) == before


def test_refused_on_an_unmigrated_store_and_during_a_pending_migration(tmp_path: Path) -> None:
    old = tmp_path / "old"
    unmigrated_store(old)
    with pytest.raises(CompactionRefused, match="pre-1.2 store .*distilld migrate"):
        run_compaction(old, POLICY, clock)
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    (root / "data/migration/20261130T000000Z").mkdir(parents=True)
    (root / "data/migration/20261130T000000Z/PENDING").write_text("data/migration/20261130T000000Z/PLAN.md\n")
    before = tree(root)
    with pytest.raises(CompactionRefused, match="PENDING"):
        run_compaction(root, POLICY, clock)
    with pytest.raises(CompactionRefused, match="PENDING"):
        run_compaction(root, POLICY, clock, apply=False)
    assert tree(root) == before


def test_debt_is_reported_when_the_targets_cannot_be_reached_within_the_caps(tmp_path: Path) -> None:
    """Entries of alternating tiers in one section cannot merge: lines stay over the target."""
    root = tmp_path / "store"
    b = StoreBuilder(root)
    lines = ["## Mixed"]
    for n in range(64):
        tier = ("craft", "ops")[n % 2]
        b.tier(f"{tier}/topic-{n}.md", f"# Topic {n}\n\n- note\n", scope=f"Topic {n}", last_updated="2026-09-01")
        lines.append(f"- [Topic {n}]({tier}/topic-{n}.md) {EM} topic {n} in short. Read for topic {n}.")
    b.spine(lines)
    b.rebuild_catalog()
    shutil.copytree(root, tmp_path / "before")

    report = run_compaction(root, POLICY, clock)

    assert report.plan is not None and report.plan.merged == [] and report.plan.breaches == []
    assert report.plan.debt == ["SPINE.md has 68 lines (target 60)"]
    assert "debt: SPINE.md has 68 lines (target 60)" in render_text(report)
    oracle_passes(root, tmp_path / "before")


def test_the_cli_compacts_and_reports_json(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["compact", str(store), "--apply", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert '"mode": "apply"' in out and '"ok": true' in out and '"files_split": 3' in out
    oracle_passes(store, tmp_path / "before")
    assert cli_main(["compact", str(store)]) == 0
    assert "compact preview (nothing changed)" in capsys.readouterr().out


def test_render_json_names_the_figures_the_daemon_reports(store: Path) -> None:
    report = run_compaction(store, POLICY, clock, apply=False)
    text = render_json(report)
    for key in ('"spine_before"', '"entries_cut"', '"entries_merged"', '"files_split"', '"debt"', '"breaches"'):
        assert key in text


def test_a_file_over_its_caps_without_sections_is_reported_not_split(tmp_path: Path) -> None:
    root = tmp_path / "store"
    b = StoreBuilder(root)
    b.tier("craft/wall.md", "# Wall\n\n" + "".join(f"line {n}\n" for n in range(70)), scope="Wall",
           last_updated="2026-09-01")
    b.tier("craft/ok.md", "# Ok\n\n" + long_file("Ok", 2), scope="Ok", last_updated="2026-09-01")
    b.spine(["## Craft", f"- [Wall](craft/wall.md) {EM} wall. Read never.", f"- [Ok](craft/ok.md) {EM} ok."])
    b.rebuild_catalog()
    report = run_compaction(root, POLICY, clock, apply=False)
    assert report.plan is not None and report.plan.splits == []
    assert report.plan.unsplittable == [
        "craft/wall.md: over its caps (77 lines, 604 bytes) with no place to cut: no section heading, bullet or "
        "paragraph boundary outside a code fence or marked section. Break it into sections or bullets by hand"]
    assert "craft/wall.md is still over its caps" in report.plan.debt


def test_a_crlf_spine_keeps_crlf_on_every_line_it_rewrites(tmp_path: Path) -> None:
    root = tmp_path / "store"
    b = migrated_store_over_targets(root)
    b.write("SPINE.md", b.read("SPINE.md").replace(b"\n", b"\r\n"))
    b.rebuild_catalog()
    shutil.copytree(root, tmp_path / "before")
    assert run_compaction(root, POLICY, clock).ok
    raw = b.read("SPINE.md")
    assert raw.count(b"\n") == raw.count(b"\r\n") > 40
    oracle_passes(root, tmp_path / "before")


def test_the_hook_floors_and_the_note_come_from_the_policy(tmp_path: Path) -> None:
    migrated_store_over_targets(tmp_path)
    snapshot = take_snapshot(tmp_path)

    def plan(spine: str) -> tuple[int, bool, bool]:
        compaction = plan_compaction_of(snapshot, PreviewInputs(parse_policy(f"[spine]\nentry_target_bytes = 150\n{spine}", "test.toml").limits, lambda: NOW))
        noted = any(line.startswith("note: the pointer groups leave room") for line in render_plan(compaction, "h"))
        return compaction.floor, compaction.floor_lowered, noted

    assert plan("") == (80, False, False)  # the first floor of default.toml
    assert plan("hook_floors = [40, 0]\n") == (40, False, False)
    # A SPINE cap that even bare pointer groups miss: the floor goes down the policy's ladder to its end.
    tight = "max_bytes = 3000\ncompact_at_bytes = 3000\n"
    assert plan(tight) == (0, True, True)
    assert plan(tight + "hook_floors = [0]\n") == (0, False, False)  # nothing lowered: no note
