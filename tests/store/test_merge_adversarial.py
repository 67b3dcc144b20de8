"""Doubled SPINE entries in shapes the sync merge was not written with in mind, as pure functions
over bytes (the same cases end to end, with real repositories: tests/gitstore/test_sync_adversarial.py)."""

from __future__ import annotations

import pytest
from builders import EM
from distilld.store.spine import Spine
from distilld.store.spine_dedupe import doubled_pointers, merge_doubled_entries

HEAD = f"# I\n\n- [Catalog](CATALOG.md) {EM} all.\n"


@pytest.mark.parametrize("joiner", [", ", " / ", " and ", "; "])
def test_a_doubled_entry_whose_pointers_a_foreign_joiner_joins_keeps_each_pointer_once(joiner: str) -> None:
    group = f"- [K](projects/k.md){joiner}[K, continued](projects/k-2.md)"
    raw = (HEAD + f"{group} {EM} ingest. Late events go to quarantine. Read when in k.\n"
           f"{group} {EM} ingest. Replays run nightly. Read when in k.\n").encode()
    done = merge_doubled_entries(raw, {"projects/k.md"}, 400)
    [entry] = [e for e in Spine(done.raw).entries if "projects/k.md" in e.pointers]
    # Read as one group: before, ", [K, continued](projects/k-2.md)" counted as hook text and
    # stood in the merged hook once per version, after a dash put before the joiner.
    assert entry.joined == (f"- [K](projects/k.md) + [K, continued](projects/k-2.md) {EM} ingest. Late events go "
                            "to quarantine. Replays run nightly. Read when in k.")
    assert doubled_pointers(Spine(done.raw)) == {}


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_a_doubled_entry_in_a_crlf_spine_keeps_the_line_endings(ending: str) -> None:
    raw = (HEAD + f"- [A](a/x.md) {EM} one.\n  wrapped.\n- [B](b/y.md) {EM} bee.\n- [A](a/x.md) {EM} two.\n"
           "<!-- end -->").replace("\n", ending).encode()
    done = merge_doubled_entries(raw, {"a/x.md"}, 400)
    assert done.raw == (HEAD + f"- [A](a/x.md) {EM} one. wrapped. two.\n- [B](b/y.md) {EM} bee.\n<!-- end -->"
                        ).replace("\n", ending).encode()


def test_the_second_entry_as_the_last_line_without_a_line_break() -> None:
    raw = (HEAD + f"- [A](a/x.md) {EM} one.\n- [B](b/y.md) {EM} bee.\n- [A](a/x.md) {EM} two.").encode()
    done = merge_doubled_entries(raw, {"a/x.md"}, 400)
    assert done.raw == (HEAD + f"- [A](a/x.md) {EM} one. two.\n- [B](b/y.md) {EM} bee.\n").encode()
