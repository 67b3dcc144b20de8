"""Compaction never appends a hook a file's Index detail already holds (issue 23, item 11): an
entry lengthened again, or brought back by a merge, is cut again without a second copy of the
same words; new words still go in."""

from __future__ import annotations

from pathlib import Path

from builders import EM, FIXED_NOW, KESTREL_ENTRY, healthy_store
from distilld.actions.compaction import run_compaction
from distilld.store.index_detail import hooks_not_held, index_detail_text, was_cut_before
from distilld.policy import load_policy

POLICY = load_policy()
LONG_HOOK = ("Kestrel ingest pipeline (Kafka to Parquet, schema registry); the compaction window is six hours, "
             "late events go to the quarantine topic, the registry owner is the data platform team, replays run "
             "from the nightly snapshot, the dead letter queue is drained by hand every Monday morning, alerts "
             "page the on-call data engineer, the schema diff job runs before every deploy and blocks on breaking changes. Read when working in the kestrel repo.")
LONG_ENTRY = f"- [Kestrel](projects/kestrel.md) {EM} {LONG_HOOK}"


def detail_sections(root: Path) -> int:
    return (root / "projects/kestrel.md").read_text().count("## Index detail")


def with_spine_entry(root: Path, entry: str) -> None:
    spine = (root / "SPINE.md").read_text()
    lines = spine.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("- [Kestrel]"))
    lines[at] = entry + "\n"
    (root / "SPINE.md").write_text("".join(lines))


def test_an_entry_cut_twice_leaves_its_words_in_index_detail_once(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    spine = b.read("SPINE.md").decode().replace(KESTREL_ENTRY, LONG_ENTRY)
    b.write("SPINE.md", spine)
    b.rebuild_catalog()

    first = run_compaction(b.root, POLICY, lambda: FIXED_NOW)
    assert first.ok and detail_sections(b.root) == 1
    held = (b.root / "projects/kestrel.md").read_bytes()
    with_spine_entry(b.root, LONG_ENTRY)  # the other machine's long entry, back after a merge

    second = run_compaction(b.root, POLICY, lambda: FIXED_NOW)

    assert second.ok, second.to_dict()
    assert "(projects/kestrel.md)" in (b.root / "SPINE.md").read_text()
    assert len(next(line for line in (b.root / "SPINE.md").read_text().splitlines()
                    if "(projects/kestrel.md)" in line).encode()) <= 400
    assert detail_sections(b.root) == 1
    assert (b.root / "projects/kestrel.md").read_bytes() == held


def test_new_words_are_still_appended_and_repeats_among_new_hooks_dropped() -> None:
    """Held means verbatim, as C4 looks for a hook: a wrapped copy does not count."""
    files = {"projects/k.md": b"# K\n\n## Index detail (moved from SPINE 2026-11-01)\n\nold words, here.\n"
                              b"wrapped,\n  words.\n",
             "projects/k-2.md": b"## Index detail (moved from SPINE 2026-11-02)\n\nchild words\n",
             "projects/other.md": b"## Index detail (moved from SPINE 2026-11-02)\n\nfresh words\n"}
    assert index_detail_text(files["projects/k.md"]) == "\nold words, here.\nwrapped,\n  words."
    assert hooks_not_held(files, "projects/k.md", ["old words, here.", "old words", "wrapped, words.",
                                                   "child words", "fresh words", "fresh words"]) == [
        "wrapped, words.", "fresh words"]


def test_an_entry_cut_before_is_cut_to_the_entry_target_so_new_words_do_not_resend_its_hook(tmp_path: Path) -> None:
    """The soak's Index-detail growth: an entry cut to the cap and lengthened by a few words is
    over the cap again at once, and each cut appends its whole hook. Cut again, it goes to the
    entry target, so the next few words fit without a cut."""
    b = healthy_store(tmp_path / "store")
    b.write("SPINE.md", b.read("SPINE.md").decode().replace(KESTREL_ENTRY, LONG_ENTRY))
    b.rebuild_catalog()
    assert run_compaction(b.root, POLICY, lambda: FIXED_NOW).ok

    def lengthened(words: str) -> None:
        entry = next(line for line in (b.root / "SPINE.md").read_text().splitlines() if "(projects/kestrel.md)" in line)
        with_spine_entry(b.root, entry.replace(" Read when", f" {words}. Read when") if " Read when" in entry
                         else entry + f" {words}.")

    lengthened("the backfill job needs the registry lock first, and the quota owner signs off every replay")
    assert run_compaction(b.root, POLICY, lambda: FIXED_NOW).ok
    entry = next(line for line in (b.root / "SPINE.md").read_text().splitlines() if "(projects/kestrel.md)" in line)
    assert len(entry.encode()) <= POLICY.limits.spine.entry_target_bytes + 40, entry
    sections = detail_sections(b.root)
    assert sections <= 2  # the first cut may have left room for these words already
    lengthened("late rows wait a day")

    third = run_compaction(b.root, POLICY, lambda: FIXED_NOW)

    assert third.ok and detail_sections(b.root) == sections  # room to grow: no cut, no further copy


def test_an_earlier_cut_is_known_whatever_the_case_of_its_first_letter() -> None:
    """A shortened hook opens with a capital where the writer's did not ("wren service notes" ->
    "Wren service notes"): it is the same entry's earlier cut, so it is cut again to the floor, not
    copied whole once more."""
    held = "wren service notes. b16 alerts owner cutover rule 2720. a12 retention quota cutover rule 9723."
    files = {"projects/wren.md": f"# Wren\n\n## Index detail (moved from SPINE 2026-11-01)\n\n{held}\n".encode()}
    assert was_cut_before(files, "projects/wren.md", "W" + held[1:] + " b23 budget rule 8386.")
    assert not was_cut_before(files, "projects/wren.md", "Heron service notes: heron queue rules, heron replay rules.")
