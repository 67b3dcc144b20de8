"""Entries both machines changed, made one by the sync merge (issue 23, item 11), and `check`'s
note for a pointer that stands on two entries."""

from __future__ import annotations

from pathlib import Path

from builders import EM, FIXED_NOW, KESTREL_ENTRY, healthy_store
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.merge import BytesFiles, Sides, merge_stores
from distilld.store.snapshot import snapshot_from_files, take_snapshot
from distilld.store.spine import Spine
from distilld.store.spine_dedupe import doubled_pointers, merge_doubled_entries

LIMITS = load_policy().limits
OURS_ENTRY = (f"- [Kestrel](projects/kestrel.md) {EM} Kestrel ingest pipeline (Kafka to Parquet); "
              "late events go to the quarantine topic. Read when working in the kestrel repo.")
THEIRS_ENTRY = (f"- [Kestrel](projects/kestrel.md) {EM} Kestrel ingest (Kafka to Parquet, schema registry); "
                "replays run from the nightly snapshot. Read when working in the kestrel repo.")


def store_files(root: Path) -> dict[str, bytes]:
    snapshot = take_snapshot(root)
    return {p: snapshot.contents.get(p, (root / p).read_bytes()) for p in snapshot.files}


def merged_tree(ours: dict[str, bytes], changes: dict[str, bytes | None]) -> dict[str, bytes]:
    out = dict(ours)
    for path, raw in changes.items():
        if raw is None:
            out.pop(path, None)
        else:
            out[path] = raw
    return out


def words(text: str) -> set[str]:
    return set(text.replace(";", " ").replace(",", " ").split())


def both_edit(tmp_path: Path, ours_entry: str, theirs_entry: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    base = store_files(healthy_store(tmp_path / "base").root)
    ours, theirs = dict(base), dict(base)
    ours["SPINE.md"] = base["SPINE.md"].replace(KESTREL_ENTRY.encode(), ours_entry.encode())
    theirs["SPINE.md"] = base["SPINE.md"].replace(KESTREL_ENTRY.encode(), theirs_entry.encode())
    result = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS,
                          Sides("local", "remote"))
    assert result.ok, result.blocked_by
    return ours, merged_tree(ours, result.changes)


def test_an_entry_both_machines_edited_ends_as_one_entry_with_every_word(tmp_path: Path) -> None:
    _, merged = both_edit(tmp_path, OURS_ENTRY, THEIRS_ENTRY)

    spine = Spine(merged["SPINE.md"])
    kestrel = [e for e in spine.entries if "projects/kestrel.md" in e.pointers]
    assert len(kestrel) == 1, [e.joined for e in kestrel]
    assert words(OURS_ENTRY) | words(THEIRS_ENTRY) <= words(kestrel[0].joined)
    assert doubled_pointers(spine) == {}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert [f.message for f in check_store(snapshot_from_files(empty, merged), LIMITS) if f.severity == "fail"] == []


def test_hooks_too_long_together_keep_the_second_in_index_detail(tmp_path: Path) -> None:
    long_ours = OURS_ENTRY.replace("late events", "late events (" + "ours " * 30 + ")")
    long_theirs = THEIRS_ENTRY.replace("replays run", "replays (" + "theirs " * 30 + ") run")
    _, merged = both_edit(tmp_path, long_ours, long_theirs)

    spine = Spine(merged["SPINE.md"])
    kestrel = [e for e in spine.entries if "projects/kestrel.md" in e.pointers]
    assert len(kestrel) == 1 and kestrel[0].byte_len <= LIMITS.spine.entry_max_bytes
    detail = merged["projects/kestrel.md"].decode()
    assert "## Index detail" in detail
    assert (words(long_ours) | words(long_theirs)) <= words(kestrel[0].joined) | words(detail)


def test_two_entries_leading_with_the_same_file_are_merged_in_the_first_ones_place() -> None:
    raw = (f"# I\n\n- [Catalog](CATALOG.md) {EM} all.\n- [A](a/x.md) {EM} one\n  wrapped.\n"
           f"- [B](b/y.md) {EM} bee\n- [A again](a/x.md) + [A2](a/x-2.md) {EM} two\n").encode()
    done = merge_doubled_entries(raw, {"a/x.md"}, 400)
    assert done.raw.decode() == (f"# I\n\n- [Catalog](CATALOG.md) {EM} all.\n- [A](a/x.md) + [A2](a/x-2.md) {EM} "
                                 f"one wrapped. two\n- [B](b/y.md) {EM} bee\n")
    assert done.merged == ["a/x.md"] and done.details == {}


def test_check_notes_a_pointer_on_two_entries(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    b.write("SPINE.md", b.read("SPINE.md") + f"- [Kestrel again](projects/kestrel.md) {EM} again.\n".encode())
    found = check_store(take_snapshot(b.root), LIMITS)
    notes = [f.message for f in found if f.code == "pointer-on-two-entries"]
    assert len(notes) == 1 and "projects/kestrel.md" in notes[0] and notes[0].endswith("merge them into one")
    assert all(f.severity == "note" for f in found if f.code == "pointer-on-two-entries")


def test_two_versions_of_one_hook_share_their_common_words_once() -> None:
    """Both machines lengthened one entry: its start and its "Read when" ending are written once,
    each machine's own sentences between them (issue 23, item 11: Index detail stays flat)."""
    ours = (f"- [Ibis](projects/ibis.md) {EM} ibis service notes. b11 cutover rule 6909. a79 owner rule 3654. "
            "Read when working on ibis.")
    theirs = (f"- [Ibis](projects/ibis.md) {EM} ibis service notes. b11 cutover rule 6909. b104 replay rule 6485. "
              "Read when working on ibis.")
    raw = f"# I\n\n- [Catalog](CATALOG.md) {EM} all.\n{ours}\n{theirs}\n".encode()
    done = merge_doubled_entries(raw, {"projects/ibis.md"}, 400)
    assert done.raw.decode().splitlines()[-1] == (
        f"- [Ibis](projects/ibis.md) {EM} ibis service notes. b11 cutover rule 6909. a79 owner rule 3654. "
        "b104 replay rule 6485. Read when working on ibis.")
    assert done.raw.decode().count("ibis service notes") == 1


def test_an_entry_the_merge_makes_longer_than_the_cap_is_cut_and_its_hook_kept(tmp_path: Path) -> None:
    """One machine lengthened the kestrel hook, the other gave the entry a second pointer: each
    within the cap, the merged entry not. The merge cuts it as compaction would (its whole hook
    to kestrel's Index detail) instead of failing C1 on every sync to come."""
    ours_hook = "Kestrel ingest pipeline (Kafka to Parquet); " + " ".join(
        f"late event rule k{n} goes to quarantine." for n in range(7)) + " Read when working in the kestrel repo."
    ours = f"- [Kestrel](projects/kestrel.md) {EM} {ours_hook}"
    theirs = (f"- [Kestrel](projects/kestrel.md) + [Deploy runbook](ops/deploy.md) {EM} Kestrel ingest, "
              "replays from the nightly snapshot. " + " ".join(f"replay rule r{n} runs at night." for n in range(7))
              + " Read when working in the kestrel repo.")
    assert len(ours.encode()) <= LIMITS.spine.entry_max_bytes and len(theirs.encode()) <= LIMITS.spine.entry_max_bytes
    _, merged = both_edit(tmp_path, theirs, ours)  # the remote's lengthened hook, our extra pointer

    spine = Spine(merged["SPINE.md"])
    [kestrel] = [e for e in spine.entries if "projects/kestrel.md" in e.pointers]
    assert kestrel.byte_len <= LIMITS.spine.entry_max_bytes, kestrel.joined
    assert "ops/deploy.md" in kestrel.pointers
    detail = merged["projects/kestrel.md"].decode()
    assert "## Index detail" in detail
    assert (words(ours) | words(theirs)) <= words(kestrel.joined) | words(detail)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert [f.message for f in check_store(snapshot_from_files(empty, merged), LIMITS) if f.severity == "fail"] == []
