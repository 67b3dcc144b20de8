"""C4, the lossless oracle (STORE-FORMAT.md 3.5): one breaking case and one valid counterpart per rule.

Every case copies a healthy store as "before", changes the copy ("after") the way a migration,
a gc pass or a careless writer would, and compares the two with ``check_c4``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, StoreBuilder, healthy_store

from distilld.cli import main
from distilld.store.findings import Finding
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot
from distilld.store.text import sha256_hex, sha256_norm_hex

KESTREL_LINE = "- Schema registry is the source of truth for topics."
KESTREL_HOOK = "Kestrel ingest pipeline (Kafka to Parquet, schema registry); Read when working in the kestrel repo."
TESTING_FIRST_HOOK = "real files, failing test first [NON-NEGOTIABLE]; generic personas."
TESTING_CONTINUATION = "Read before writing any test."


# -- helpers ----------------------------------------------------------------------------------
def make_pair(tmp_path: Path, setup=None) -> tuple[StoreBuilder, StoreBuilder]:
    """A healthy "before" store (optionally extended by ``setup``) and a byte-exact copy "after"."""
    before = healthy_store(tmp_path / "before")
    if setup is not None:
        setup(before)
    shutil.copytree(before.root, tmp_path / "after")
    return before, StoreBuilder(tmp_path / "after")


def c4(before: StoreBuilder, after: StoreBuilder) -> list[Finding]:
    found = check_c4(take_snapshot(before.root), take_snapshot(after.root))
    assert all(f.group == "C4" for f in found)
    return found


def fails(found: list[Finding]) -> list[str]:
    return [f.message for f in found if f.severity == "fail"]


def notes(found: list[Finding]) -> list[str]:
    return [f.message for f in found if f.severity == "note"]


def text(b: StoreBuilder, rel: str) -> str:
    return b.read(rel).decode("utf-8")


def edit(b: StoreBuilder, rel: str, old: str, new: str) -> None:
    current = text(b, rel)
    assert current.count(old) == 1, f"{old!r} must occur once in {rel}"
    b.write(rel, current.replace(old, new))


def append(b: StoreBuilder, rel: str, addition: str) -> None:
    b.write(rel, text(b, rel) + addition)


def move(b: StoreBuilder, source: str, target: str) -> None:
    destination = b.path(target)
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.replace(b.path(source), destination)


def gc_archive(b: StoreBuilder, tier_path: str, stamp: str, spine_entry: str) -> None:
    """Move a tier file to archive/<path> byte-exact and ledger it (the order does not matter to C4)."""
    move(b, tier_path, "archive/" + tier_path)
    b.append_ledger(b.archive_line(stamp, tier_path, spine_entry))


def new_twin(b: StoreBuilder, tier_path: str, lines: list[str]) -> None:
    b.write("evidence/" + tier_path, f"---\nevidence_for: {tier_path}\n---\n" + "".join(l + "\n" for l in lines))


def add_spine_entry(b: StoreBuilder, entry: str) -> None:
    edit(b, "SPINE.md", KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + entry + "\n")


def lost(path: str, before: int, after: int, line: str) -> str:
    return f"line lost from {path} (before x{before}, after x{after}): {line}"


# -- baseline ---------------------------------------------------------------------------------
def test_identical_copy_has_no_findings(tmp_path: Path) -> None:
    before, after = make_pair(tmp_path)
    assert c4(before, after) == []


# -- 1. multiset conservation -------------------------------------------------------------------
class TestConservation:
    def test_line_moved_into_the_evidence_twin_is_kept(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "projects/kestrel.md", KESTREL_LINE + "\n", "")
        new_twin(after, "projects/kestrel.md", [KESTREL_LINE])
        assert c4(before, after) == []

    def test_deleted_line_fails_with_before_and_after_counts(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "projects/kestrel.md", KESTREL_LINE + "\n", "")
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 1, 0, KESTREL_LINE)]

    def test_long_lost_line_is_clipped_to_70_bytes(self, tmp_path: Path) -> None:
        long_line = "- " + "Kafka partitions are rebalanced by the coordinator every ninety seconds or so."
        before, after = make_pair(tmp_path, lambda b: append(b, "projects/kestrel.md", long_line + "\n"))
        edit(after, "projects/kestrel.md", long_line + "\n", "")
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 1, 0, long_line[:70])]

    def test_duplicated_line_must_survive_as_often_as_it_appeared(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, lambda b: append(b, "projects/kestrel.md", "- Retry twice.\n- Retry twice.\n"))
        edit(after, "projects/kestrel.md", "- Retry twice.\n- Retry twice.\n", "- Retry twice.\n")
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 2, 1, "- Retry twice.")]

    def test_duplicate_kept_once_in_file_and_once_in_twin_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, lambda b: append(b, "projects/kestrel.md", "- Retry twice.\n- Retry twice.\n"))
        edit(after, "projects/kestrel.md", "- Retry twice.\n- Retry twice.\n", "- Retry twice.\n")
        new_twin(after, "projects/kestrel.md", ["- Retry twice."])
        assert c4(before, after) == []

    def test_line_in_both_file_and_twin_before_must_be_kept_twice(self, tmp_path: Path) -> None:
        shared = "- 2026-05-02 confirm: a temp-dir test caught a path bug"

        def setup(b: StoreBuilder) -> None:
            append(b, "craft/testing.md", shared + "\n")

        before, after = make_pair(tmp_path, setup)
        edit(after, "craft/testing.md", shared + "\n", "")  # "deduplicated" by a migration
        assert fails(c4(before, after)) == [lost("craft/testing.md", 2, 1, shared)]

    def test_blank_lines_and_indentation_and_line_endings_do_not_count(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        rowan = text(after, "profile/rowan.md")
        squeezed = "\n".join(line.strip() for line in rowan.split("\n") if line.strip()) + "\n"
        after.write("profile/rowan.md", squeezed.replace("\n", "\r\n").encode())
        assert c4(before, after) == []

    def test_lines_moved_into_a_split_child_and_its_twin_count(self, tmp_path: Path) -> None:
        extra = "- Lag alerts page the on-call after ten minutes.\n- Compaction runs nightly.\n"
        before, after = make_pair(tmp_path, lambda b: append(b, "projects/kestrel.md", extra))
        edit(after, "projects/kestrel.md", extra, "\nContinued in `projects/kestrel-2.md`.\n")
        after.tier("projects/kestrel-2.md", "- Lag alerts page the on-call after ten minutes.\n",
                   split_from="projects/kestrel.md")
        new_twin(after, "projects/kestrel-2.md", ["- Compaction runs nightly."])
        assert c4(before, after) == []

    def test_child_without_split_from_does_not_count(self, tmp_path: Path) -> None:
        extra = "- Lag alerts page the on-call after ten minutes.\n"
        before, after = make_pair(tmp_path, lambda b: append(b, "projects/kestrel.md", extra))
        edit(after, "projects/kestrel.md", extra, "")
        after.tier("projects/kestrel-2.md", extra, scope="Kestrel (continued)")
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 1, 0, extra.strip())]

    def test_child_whose_split_from_names_another_parent_does_not_count(self, tmp_path: Path) -> None:
        extra = "- Lag alerts page the on-call after ten minutes.\n"
        before, after = make_pair(tmp_path, lambda b: append(b, "projects/kestrel.md", extra))
        edit(after, "projects/kestrel.md", extra, "")
        after.tier("projects/kestrel-2.md", extra, split_from="projects/osprey.md")
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 1, 0, extra.strip())]

    def test_archived_split_child_and_its_twin_count(self, tmp_path: Path) -> None:
        extra = "- Lag alerts page the on-call after ten minutes.\n- Compaction runs nightly.\n"
        before, after = make_pair(tmp_path, lambda b: append(b, "projects/kestrel.md", extra))
        edit(after, "projects/kestrel.md", extra, "")
        after.tier("archive/projects/kestrel-2.md", "- Lag alerts page the on-call after ten minutes.\n",
                   split_from="projects/kestrel.md")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/kestrel-2.md",
                                               f"- [Kestrel 2](projects/kestrel-2.md) {EM} more"))
        new_twin(after, "projects/kestrel-2.md", ["- Compaction runs nightly."])
        assert c4(before, after) == []

    def test_frontmatter_lines_count(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "projects/kestrel.md", "scope: Kestrel ingest pipeline\n", "")
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 1, 0, "scope: Kestrel ingest pipeline")]

    def test_frontmatter_fences_count(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        body = text(after, "projects/kestrel.md")
        after.write("projects/kestrel.md", body.replace("---\n", "", 2))
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 2, 0, "---")]

    def test_file_moved_to_archive_byte_exact_keeps_every_line(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        gc_archive(after, "projects/kestrel.md", "2026-11-30T10:00:00Z", KESTREL_ENTRY)
        assert c4(before, after) == []

    def test_file_deleted_loses_every_line(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.remove("projects/kestrel.md")
        messages = fails(c4(before, after))
        assert lost("projects/kestrel.md", 1, 0, KESTREL_LINE) in messages
        assert lost("projects/kestrel.md", 2, 0, "---") in messages
        assert lost("projects/kestrel.md", 1, 0, "# Kestrel") in messages
        assert all(m.startswith("line lost from projects/kestrel.md ") for m in messages)

    def test_line_moved_to_another_tier_file_is_lost_for_its_own_file(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "projects/kestrel.md", KESTREL_LINE + "\n", "")
        append(after, "ops/deploy.md", KESTREL_LINE + "\n")
        assert fails(c4(before, after)) == [lost("projects/kestrel.md", 1, 0, KESTREL_LINE)]


# -- 2. pinned files stay active ----------------------------------------------------------------
class TestPinned:
    def test_pinned_file_moved_to_the_archive_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        gc_archive(after, "projects/osprey.md", "2026-11-30T10:00:00Z",
                   f"- [Osprey](projects/osprey.md) {EM} exports under legal hold")
        assert fails(c4(before, after)) == ["pinned file was moved: projects/osprey.md"]

    def test_pinned_file_edited_in_place_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        append(after, "projects/osprey.md", "- Exports are listed in the retention register.\n")
        assert c4(before, after) == []


# -- 3. [NON-NEGOTIABLE] files are never archived ------------------------------------------------
class TestNonNegotiable:
    def test_non_negotiable_file_archived_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        gc_archive(after, "craft/testing.md", "2026-11-30T10:00:00Z",
                   f"- [Testing](craft/testing.md) {EM} real files")
        assert fails(c4(before, after)) == ["file carrying [NON-NEGOTIABLE] was archived: craft/testing.md"]

    def test_dated_non_negotiable_marker_counts(self, tmp_path: Path) -> None:
        before, after = make_pair(
            tmp_path, lambda b: append(b, "projects/kestrel.md", "- [NON-NEGOTIABLE 2026-05-02] Never drop a topic.\n"))
        gc_archive(after, "projects/kestrel.md", "2026-11-30T10:00:00Z", KESTREL_ENTRY)
        assert fails(c4(before, after)) == ["file carrying [NON-NEGOTIABLE] was archived: projects/kestrel.md"]

    def test_directive_file_may_be_archived(self, tmp_path: Path) -> None:
        before, after = make_pair(
            tmp_path, lambda b: append(b, "projects/kestrel.md", "- [DIRECTIVE 2026-05-02] Never drop a topic.\n"))
        gc_archive(after, "projects/kestrel.md", "2026-11-30T10:00:00Z", KESTREL_ENTRY)
        assert c4(before, after) == []

    def test_non_negotiable_file_kept_active_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        append(after, "craft/testing.md", "- [PRINCIPLE] Name the fixture after its behaviour.\n")
        assert c4(before, after) == []


# -- 4. evidence twins are append-only ------------------------------------------------------------
class TestTwins:
    TWIN = "evidence/craft/testing.md"
    LINE = "- 2026-05-02 confirm: a temp-dir test caught a path bug"

    def test_appended_twin_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        append(after, self.TWIN, "- 2026-11-29 confirm: another path bug caught\n")
        assert c4(before, after) == []

    def test_deleted_twin_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.remove(self.TWIN)
        assert sorted(fails(c4(before, after))) == sorted([
            "evidence twin deleted: evidence/craft/testing.md",
            lost("craft/testing.md", 1, 0, "## Evidence log"),
            lost("craft/testing.md", 1, 0, "- 2026-04-18 directive: real files only (recorded as NON-NEGOTIABLE)"),
            lost("craft/testing.md", 1, 0, self.LINE),
        ])

    def test_twin_of_an_archived_file_deleted_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.remove("evidence/projects/marlin.md")
        assert fails(c4(before, after)) == ["evidence twin deleted: evidence/projects/marlin.md"]

    def test_shortened_twin_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, self.TWIN, self.LINE + "\n", "")
        assert sorted(fails(c4(before, after))) == sorted([
            lost(self.TWIN, 1, 0, self.LINE),
            lost("craft/testing.md", 1, 0, self.LINE),
        ])

    def test_twin_line_moved_back_into_the_principle_file_fails_for_the_twin_only(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, self.TWIN, self.LINE + "\n", "")
        append(after, "craft/testing.md", self.LINE + "\n")
        assert fails(c4(before, after)) == [lost(self.TWIN, 1, 0, self.LINE)]

    def test_twin_frontmatter_is_kept_too(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "evidence/projects/marlin.md", "evidence_for: projects/marlin.md\n", "")
        assert fails(c4(before, after)) == [
            lost("evidence/projects/marlin.md", 1, 0, "evidence_for: projects/marlin.md")
        ]


# -- 5. unledgered archive/<tier>/ files are adopted byte-exact ------------------------------------
HERON = "archive/projects/heron.md"
HERON_ADOPTED = "archive/legacy/archive/projects/heron.md"
HERON_BYTES = "---\narchived_from: projects/heron.md\nrecall_count: 2\n---\n\n# Heron\n\n- Old feed, retired.\n"


def with_unledgered_heron(b: StoreBuilder) -> None:
    b.write(HERON, HERON_BYTES)


class TestUnledgeredAdoption:
    def test_adopted_byte_exact_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_unledgered_heron)
        move(after, HERON, HERON_ADOPTED)
        assert c4(before, after) == []

    def test_adopted_with_recall_count_drift_passes_with_a_note(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_unledgered_heron)
        move(after, HERON, HERON_ADOPTED)
        edit(after, HERON_ADOPTED, "recall_count: 2\n", "recall_count: 3\n")
        found = c4(before, after)
        assert fails(found) == []
        assert notes(found) == [f"recall_count drift only (tolerated): {HERON_ADOPTED}"]

    def test_adopted_but_changed_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_unledgered_heron)
        move(after, HERON, HERON_ADOPTED)
        append(after, HERON_ADOPTED, "- a new line\n")
        assert fails(c4(before, after)) == [f"legacy archive file changed: {HERON_ADOPTED}"]

    def test_not_adopted_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_unledgered_heron)
        assert fails(c4(before, after)) == [
            f"unledgered archive not adopted: {HERON} (expected {HERON_ADOPTED})"
        ]

    def test_not_adopted_and_deleted_fails_twice(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_unledgered_heron)
        after.remove(HERON)
        assert sorted(fails(c4(before, after))) == sorted([
            f"unledgered archive not adopted: {HERON} (expected {HERON_ADOPTED})",
            f"archive file deleted: {HERON}",
        ])

    def test_ledgered_archive_needs_no_adoption(self, tmp_path: Path) -> None:
        # archive/projects/marlin.md has a ledger line: it stays where it is.
        before, after = make_pair(tmp_path)
        assert take_snapshot(before.root).archive_paths == ["archive/old-notes.md", "archive/projects/marlin.md"]
        assert c4(before, after) == []


# -- 6. archive files are never deleted -------------------------------------------------------------
class TestArchiveDeleted:
    def test_flat_legacy_file_deleted_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.remove("archive/old-notes.md")
        assert fails(c4(before, after)) == ["archive file deleted: archive/old-notes.md"]

    def test_ledgered_archive_file_deleted_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.remove("archive/projects/marlin.md")
        assert fails(c4(before, after)) == ["archive file deleted: archive/projects/marlin.md"]

    def test_flat_legacy_file_left_in_place_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        assert "archive/old-notes.md" in take_snapshot(after.root).archive_paths
        assert c4(before, after) == []

    def test_flat_legacy_file_moved_to_legacy_plus_its_path_passes(self, tmp_path: Path) -> None:
        # Item 6 accepts S/archive/legacy/<a>; item 8 accepts it as an adoption of B/<a>.
        before, after = make_pair(tmp_path)
        move(after, "archive/old-notes.md", "archive/legacy/archive/old-notes.md")
        assert c4(before, after) == []

    def test_flat_legacy_file_moved_elsewhere_is_deleted_and_has_no_original(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        move(after, "archive/old-notes.md", "archive/legacy/old-notes.md")
        assert sorted(fails(c4(before, after))) == [
            "archive file deleted: archive/old-notes.md",
            "archived file has no original: archive/legacy/old-notes.md",
        ]


# -- 7. nested <tier>/**/archive/** files are adopted ---------------------------------------------
NESTED = "craft/archive/x.md"
NESTED_ADOPTED = "archive/legacy/craft/archive/x.md"


def with_nested(b: StoreBuilder) -> None:
    b.write(NESTED, "# Old craft notes\n\n- rewritten by a 1.1 compaction\n")


class TestNestedArchive:
    def test_adopted_byte_exact_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_nested)
        move(after, NESTED, NESTED_ADOPTED)
        assert c4(before, after) == []

    def test_not_adopted_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_nested)
        assert fails(c4(before, after)) == [
            f"nested legacy archive not adopted: {NESTED} (expected {NESTED_ADOPTED})"
        ]

    def test_adopted_but_changed_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_nested)
        move(after, NESTED, NESTED_ADOPTED)
        append(after, NESTED_ADOPTED, "- edited\n")
        assert fails(c4(before, after)) == [f"legacy archive file changed: {NESTED_ADOPTED}"]

    def test_adopted_with_recall_count_drift_passes_with_a_note(self, tmp_path: Path) -> None:
        def setup(b: StoreBuilder) -> None:
            b.write(NESTED, "---\nrecall_count: 1\n---\n# Old craft notes\n")

        before, after = make_pair(tmp_path, setup)
        move(after, NESTED, NESTED_ADOPTED)
        edit(after, NESTED_ADOPTED, "recall_count: 1\n", "recall_count: 2\n")
        found = c4(before, after)
        assert fails(found) == []
        assert notes(found) == [f"recall_count drift only (tolerated): {NESTED_ADOPTED}"]

    def test_adopted_with_crlf_conversion_is_a_change(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_nested)
        move(after, NESTED, NESTED_ADOPTED)
        after.write(NESTED_ADOPTED, after.read(NESTED_ADOPTED).replace(b"\n", b"\r\n"))
        assert fails(c4(before, after)) == [f"legacy archive file changed: {NESTED_ADOPTED}"]


# -- 8. every archived file after has an original -----------------------------------------------------
EMBER = "archive/legacy/archive/projects/ember.md"
EMBER_BYTES = (
    "---\narchived_from: projects/ember.md\narchived_on: 2026-05-20\nreason: finished\nrecall_count: 2\n---\n\n"
    "# Ember\n\n- Carrier-rate import, finished in May.\n"
)


def with_ember(b: StoreBuilder) -> None:
    b.write(EMBER, EMBER_BYTES)


class TestArchivedOriginals:
    def test_legacy_file_unchanged_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_ember)
        assert c4(before, after) == []

    def test_legacy_file_changed_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_ember)
        edit(after, EMBER, "- Carrier-rate import, finished in May.\n", "- Carrier-rate import, finished.\n")
        assert fails(c4(before, after)) == [f"legacy archive file changed: {EMBER}"]

    def test_flat_legacy_file_changed_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        append(after, "archive/old-notes.md", "- appended by someone\n")
        assert fails(c4(before, after)) == ["legacy archive file changed: archive/old-notes.md"]

    def test_legacy_recall_count_drift_only_passes_with_a_note(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_ember)
        edit(after, EMBER, "recall_count: 2\n", "recall_count: 7\n")
        found = c4(before, after)
        assert fails(found) == []
        assert notes(found) == [f"recall_count drift only (tolerated): {EMBER}"]

    def test_recall_count_outside_the_frontmatter_is_a_change(self, tmp_path: Path) -> None:
        def setup(b: StoreBuilder) -> None:
            append(b, EMBER, "recall_count: 1\n")

        before, after = make_pair(tmp_path, lambda b: (with_ember(b), setup(b)))
        edit(after, EMBER, "\nrecall_count: 1\n", "\nrecall_count: 2\n")
        assert fails(c4(before, after)) == [f"legacy archive file changed: {EMBER}"]

    def test_new_flat_archive_file_has_no_original(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.write("archive/stray.md", "# Stray\n")
        assert fails(c4(before, after)) == ["archived file has no original: archive/stray.md"]

    def test_new_legacy_file_without_a_source_has_no_original(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.write("archive/legacy/archive/projects/ghost.md", "# Ghost\n")
        assert fails(c4(before, after)) == ["archived file has no original: archive/legacy/archive/projects/ghost.md"]

    def test_new_non_legacy_archive_file_has_no_original_even_with_a_ledger_line(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.write("archive/projects/ghost.md", "---\nscope: Ghost\n---\n\n# Ghost\n")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/ghost.md",
                                               f"- [Ghost](projects/ghost.md) {EM} nothing"))
        assert fails(c4(before, after)) == ["archived file has no original: archive/projects/ghost.md"]

    def _archive_modified_kestrel(self, after: StoreBuilder) -> tuple[bytes, bytes]:
        original = after.read("projects/kestrel.md")
        move(after, "projects/kestrel.md", "archive/projects/kestrel.md")
        append(after, "archive/projects/kestrel.md", "- Note added while archiving.\n")
        return original, after.read("archive/projects/kestrel.md")

    def test_archived_bytes_differ_from_original_but_match_ledger_sha256(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        self._archive_modified_kestrel(after)
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/kestrel.md", KESTREL_ENTRY))
        assert c4(before, after) == []

    def test_archived_bytes_match_ledger_sha256_norm_only(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        _, archived = self._archive_modified_kestrel(after)
        after.append_ledger(
            f"- 2026-11-30T10:00:00Z archive | from: projects/kestrel.md | to: archive/projects/kestrel.md"
            f" | sha256: {'0' * 64} | sha256-norm: {sha256_norm_hex(archived)} | reason: stale"
            f" | spine-entry: {KESTREL_ENTRY}"
        )
        assert c4(before, after) == []

    def test_archived_bytes_differ_from_original_and_from_ledger(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        original, _ = self._archive_modified_kestrel(after)
        after.append_ledger(
            f"- 2026-11-30T10:00:00Z archive | from: projects/kestrel.md | to: archive/projects/kestrel.md"
            f" | sha256: {sha256_hex(original)} | sha256-norm: {sha256_norm_hex(original)} | reason: stale"
            f" | spine-entry: {KESTREL_ENTRY}"
        )
        assert fails(c4(before, after)) == [
            "archived file differs from original and from its ledger checksum: archive/projects/kestrel.md"
        ]

    def test_archived_bytes_differ_and_no_ledger_line(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        self._archive_modified_kestrel(after)
        assert fails(c4(before, after)) == [
            "archived file differs from original and from its ledger checksum: archive/projects/kestrel.md"
        ]

    def test_archived_byte_exact_needs_no_ledger_line_for_c4(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        move(after, "projects/kestrel.md", "archive/projects/kestrel.md")
        assert c4(before, after) == []

    def test_ledgered_archive_with_recall_count_drift_passes_with_a_note(self, tmp_path: Path) -> None:
        # same_file tolerates the recall_count line and "adds a note" (3.5 item 5, used by item 8).
        before, after = make_pair(tmp_path)
        edit(after, "archive/projects/marlin.md", "last_updated: 2026-04-01\n",
             "last_updated: 2026-04-01\nrecall_count: 1\n")
        found = c4(before, after)
        assert fails(found) == []
        assert notes(found) == ["recall_count drift only (tolerated): archive/projects/marlin.md"]

    def test_new_archived_split_child_with_matching_ledger_line_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.tier("archive/projects/kestrel-2.md", "- Continuation notes.\n", split_from="projects/kestrel.md")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/kestrel-2.md",
                                               f"- [Kestrel 2](projects/kestrel-2.md) {EM} more"))
        assert c4(before, after) == []

    def test_new_archived_split_child_with_wrong_ledger_checksum_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.tier("archive/projects/kestrel-2.md", "- Continuation notes.\n", split_from="projects/kestrel.md")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/kestrel-2.md",
                                               f"- [Kestrel 2](projects/kestrel-2.md) {EM} more"))
        append(after, "archive/projects/kestrel-2.md", "- changed after the ledger line\n")
        assert fails(c4(before, after)) == [
            "archived file differs from original and from its ledger checksum: archive/projects/kestrel-2.md"
        ]

    def test_new_archived_file_whose_split_parent_never_existed_has_no_original(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        after.tier("archive/projects/ghost-2.md", "- Continuation notes.\n", split_from="projects/ghost.md")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/ghost-2.md",
                                               f"- [Ghost 2](projects/ghost-2.md) {EM} more"))
        assert fails(c4(before, after)) == ["archived file has no original: archive/projects/ghost-2.md"]


# -- 9. protected and marker lines --------------------------------------------------------------------
GUARD = "projects/guard.md"
GUARD_BODY = (
    "# Guard\n"
    "\n"
    "## [DIRECTIVE 2026-08-01] Guard fixtures\n"
    "\n"
    "Synthetic data only.\n"
    "- non-indented bullet in the section\n"
    "### Sub heading inside\n"
    "sub text in the section\n"
    "\n"
    "## Ordinary\n"
    "\n"
    "plain line after the section\n"
    "- [IMPORTANT] marked bullet\n"
    "  indented continuation\n"
    "\ttab continuation\n"
    "next plain line ends the block\n"
    "lone [CONTEXT 2026-01-02] marker line\n"
    "- unmarked bullet\n"
    "  its unmarked continuation\n"
)
PROTECTED = [
    "## [DIRECTIVE 2026-08-01] Guard fixtures",
    "Synthetic data only.",
    "- non-indented bullet in the section",
    "### Sub heading inside",
    "sub text in the section",
    "- [IMPORTANT] marked bullet",
    "  indented continuation",
    "\ttab continuation",
    "lone [CONTEXT 2026-01-02] marker line",
]
UNPROTECTED = [
    "## Ordinary",
    "plain line after the section",
    "next plain line ends the block",
    "- unmarked bullet",
    "  its unmarked continuation",
]


def with_guard(b: StoreBuilder) -> None:
    b.tier(GUARD, GUARD_BODY, scope="Guard rules", last_updated="2026-10-01")


def move_line_to_twin(b: StoreBuilder, path: str, line: str) -> None:
    edit(b, path, line + "\n", "")
    new_twin(b, path.removeprefix("archive/"), [line.strip()])


class TestProtectedLines:
    @pytest.mark.parametrize("line", PROTECTED)
    def test_protected_line_moved_to_evidence_fails(self, tmp_path: Path, line: str) -> None:
        before, after = make_pair(tmp_path, with_guard)
        move_line_to_twin(after, GUARD, line)
        assert fails(c4(before, after)) == [
            f"protected block line not in active/archive ({GUARD}): {line.strip()}"
        ]

    @pytest.mark.parametrize("line", UNPROTECTED)
    def test_unprotected_line_moved_to_evidence_passes(self, tmp_path: Path, line: str) -> None:
        before, after = make_pair(tmp_path, with_guard)
        move_line_to_twin(after, GUARD, line)
        assert c4(before, after) == []

    def test_protected_line_moved_into_a_split_child_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_guard)
        edit(after, GUARD, "- non-indented bullet in the section\n", "")
        after.tier("projects/guard-2.md", "- non-indented bullet in the section\n", split_from=GUARD)
        assert c4(before, after) == []

    def test_protected_line_kept_in_any_active_file_satisfies_item_9(self, tmp_path: Path) -> None:
        # Item 9's pool is every active and archived file; conservation (item 1) is per family.
        before, after = make_pair(tmp_path, with_guard)
        edit(after, GUARD, "Synthetic data only.\n", "")
        append(after, "ops/deploy.md", "Synthetic data only.\n")
        assert fails(c4(before, after)) == [lost(GUARD, 1, 0, "Synthetic data only.")]

    def test_protected_lines_kept_in_an_archived_file_pass(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_guard)
        gc_archive(after, GUARD, "2026-11-30T10:00:00Z", f"- [Guard](projects/guard.md) {EM} guard rules")
        assert c4(before, after) == []

    def test_protected_line_lost_from_an_archived_file_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path, with_guard)
        move(after, GUARD, "archive/" + GUARD)
        move_line_to_twin(after, "archive/" + GUARD, "- non-indented bullet in the section")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", GUARD,
                                               f"- [Guard](projects/guard.md) {EM} guard rules"))
        assert fails(c4(before, after)) == [
            f"protected block line not in active/archive ({GUARD}): - non-indented bullet in the section"
        ]


# -- 10. SPINE hooks -----------------------------------------------------------------------------------
SHORT_KESTREL = f"- [Kestrel](projects/kestrel.md) {EM} Kestrel ingest. Read in the kestrel repo."


class TestSpineHooks:
    def test_hook_moved_into_index_detail_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", KESTREL_ENTRY, SHORT_KESTREL)
        append(after, "projects/kestrel.md", f"\n## Index detail (moved from SPINE 2026-11-30)\n\n{KESTREL_HOOK}\n")
        assert c4(before, after) == []

    def test_hook_dropped_fails(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", KESTREL_ENTRY, SHORT_KESTREL)
        assert fails(c4(before, after)) == [f"SPINE hook lost: {KESTREL_HOOK[:70]}"]

    def test_hook_only_in_an_evidence_twin_is_lost(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", KESTREL_ENTRY, SHORT_KESTREL)
        new_twin(after, "projects/kestrel.md", [f"- 2026-11-30 observe: {KESTREL_HOOK}"])
        assert fails(c4(before, after)) == [f"SPINE hook lost: {KESTREL_HOOK[:70]}"]

    def test_hook_only_in_the_ledger_is_lost(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        gc_archive(after, "projects/kestrel.md", "2026-11-30T10:00:00Z", KESTREL_ENTRY)
        edit(after, "SPINE.md", KESTREL_ENTRY + "\n", "")
        assert KESTREL_HOOK in text(after, "archive/LEDGER.md")
        assert fails(c4(before, after)) == [f"SPINE hook lost: {KESTREL_HOOK[:70]}"]

    def test_hook_only_under_data_is_lost(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", KESTREL_ENTRY, SHORT_KESTREL)
        after.write("data/migration/20261130T120000Z/PLAN.md", f"- [x] cut entry: {KESTREL_HOOK}\n")
        after.write("local/kestrel.md", f"{KESTREL_HOOK}\n")
        assert fails(c4(before, after)) == [f"SPINE hook lost: {KESTREL_HOOK[:70]}"]

    def test_hook_in_the_rebuilt_catalog_of_an_archived_file_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        gc_archive(after, "projects/kestrel.md", "2026-11-30T10:00:00Z", KESTREL_ENTRY)
        edit(after, "SPINE.md", KESTREL_ENTRY + "\n", "")
        after.rebuild_catalog(FIXED_NOW)
        assert c4(before, after) == []

    def test_continuation_line_dropped_fails_on_its_own(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", "  " + TESTING_CONTINUATION + "\n", "")
        assert fails(c4(before, after)) == [f"SPINE hook lost: {TESTING_CONTINUATION}"]

    def test_first_line_hook_dropped_fails_while_continuation_kept(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", f" {EM} {TESTING_FIRST_HOOK}\n", f" {EM} tests.\n")
        assert fails(c4(before, after)) == [f"SPINE hook lost: {TESTING_FIRST_HOOK}"]

    def test_wrapped_entry_joined_onto_one_line_passes(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", f"{TESTING_FIRST_HOOK}\n  {TESTING_CONTINUATION}\n",
             f"{TESTING_FIRST_HOOK} {TESTING_CONTINUATION}\n")
        assert c4(before, after) == []

    def test_one_line_hook_rewrapped_over_two_lines_is_lost(self, tmp_path: Path) -> None:
        # The hook must occur as one fixed substring; a line break inside it breaks the match.
        before, after = make_pair(tmp_path)
        edit(after, "SPINE.md", "(Kafka to Parquet, schema registry); Read when",
             "(Kafka to Parquet, schema registry);\n  Read when")
        assert fails(c4(before, after)) == [f"SPINE hook lost: {KESTREL_HOOK[:70]}"]

    def test_hook_with_a_pipe_found_in_catalog_with_the_escape_removed(self, tmp_path: Path) -> None:
        heron_entry = f"- [Heron](projects/heron.md) {EM} Heron feeds a|b split; Read when replaying feeds."

        def setup(b: StoreBuilder) -> None:
            b.tier("projects/heron.md", "# Heron\n\n- Feeds are split.\n", scope="Heron feeds",
                   last_updated="2026-10-01")
            add_spine_entry(b, heron_entry)

        before, after = make_pair(tmp_path, setup)
        move(after, "projects/heron.md", "archive/projects/heron.md")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/heron.md",
                                               heron_entry.replace("|", "\\|")))
        edit(after, "SPINE.md", heron_entry + "\n", "")
        after.rebuild_catalog(FIXED_NOW)
        catalog = text(after, "CATALOG.md")
        assert "hook: Heron feeds a\\|b split; Read when replaying feeds." in catalog
        assert "a|b" not in catalog
        assert c4(before, after) == []

    def test_hook_with_a_pipe_missing_from_a_stale_catalog_is_lost(self, tmp_path: Path) -> None:
        heron_entry = f"- [Heron](projects/heron.md) {EM} Heron feeds a|b split; Read when replaying feeds."

        def setup(b: StoreBuilder) -> None:
            b.tier("projects/heron.md", "# Heron\n\n- Feeds are split.\n", scope="Heron feeds",
                   last_updated="2026-10-01")
            add_spine_entry(b, heron_entry)

        before, after = make_pair(tmp_path, setup)
        move(after, "projects/heron.md", "archive/projects/heron.md")
        after.append_ledger(after.archive_line("2026-11-30T10:00:00Z", "projects/heron.md",
                                               heron_entry.replace("|", "\\|")))
        edit(after, "SPINE.md", heron_entry + "\n", "")
        assert fails(c4(before, after)) == ["SPINE hook lost: Heron feeds a|b split; Read when replaying feeds."]

    def test_no_before_spine_means_no_hook_check(self, tmp_path: Path) -> None:
        before, after = make_pair(tmp_path)
        before.remove("SPINE.md")
        after.remove("SPINE.md")
        assert c4(before, after) == []


# -- CLI --------------------------------------------------------------------------------------------
def test_cli_check_with_before_prints_c4_fail_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = make_pair(tmp_path)
    edit(after, "projects/kestrel.md", KESTREL_LINE + "\n", "")
    code = main(["check", str(after.root), "--before", str(before.root)])
    out = capsys.readouterr().out
    assert code == 1
    assert out == (
        "C1 PASS\nC2 PASS\nC3 PASS\nC4 FAIL\n"
        f"    - {lost('projects/kestrel.md', 1, 0, KESTREL_LINE)}\n"
        "summary: C1 pass, C2 pass, C3 pass, C4 1 failing\n"  # a failing check ends with a count per group
    )


def test_cli_check_with_before_passes_a_lossless_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = make_pair(tmp_path)
    code = main(["check", str(after.root), "--before", str(before.root)])
    out = capsys.readouterr().out
    assert code == 0
    assert out == "C1 PASS\nC2 PASS\nC3 PASS\nC4 PASS\n"


def test_cli_check_without_before_prints_no_c4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, after = make_pair(tmp_path)
    assert main(["check", str(after.root)]) == 0
    assert "C4" not in capsys.readouterr().out
