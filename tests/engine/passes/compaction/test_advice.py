"""What a person is told to do by hand about a SPINE over a cap (engine/passes/compaction/advice.py)
is true for that SPINE: an entry is called long only when it is over the entry target, merges are
proposed between entries that share a topic, and a SPINE within its caps gets no advice."""

from __future__ import annotations

import re
from pathlib import Path

from builders import EM
from distilld.engine.passes.compaction.advice import cap_failures, spine_advice
from distilld.policy import load_policy
from distilld.store.snapshot import snapshot_from_files
from distilld.store.spine import Spine

LIMITS = load_policy().limits
CATALOG = f"- [Catalog](CATALOG.md) {EM} complete inventory; not loaded at start."


def spine(entries: list[str]) -> Spine:
    return Spine(("# Index\n\n" + CATALOG + "\n\n## Craft\n" + "".join(e + "\n" for e in entries)).encode())


def short(n: int, words: str = "") -> str:
    return f"- [Note {n}](craft/note-{n}.md) {EM} note {n}{words}. Read for note {n}."


def test_a_spine_within_its_caps_gets_no_advice() -> None:
    assert spine_advice(spine([short(n) for n in range(20)]), LIMITS) == []


def test_over_the_line_cap_with_short_entries_none_is_called_long() -> None:
    advice = spine_advice(spine([short(n) for n in range(85)]), LIMITS)
    assert not any("long" in line for line in advice)
    assert advice == [f"the SPINE has 90 lines (cap 80) and no two entries share a topic: archive files that are "
                      f"done with, or join entries by hand into multi-pointer lines (`- [A](a.md) + [B](b.md) {EM} "
                      f"…`: one line saved per join)"]


def test_over_the_line_cap_entries_that_share_a_topic_are_proposed_for_a_merge() -> None:
    entries = [short(n) for n in range(83)]
    entries[10] = f"- [Kafka consumers](craft/kafka-consumers.md) {EM} consumer lag, the `orders-v2` topic offsets."
    entries[70] = f"- [Kafka retention](craft/kafka-retention.md) {EM} retention of the `orders-v2` topic."
    advice = spine_advice(spine(entries), LIMITS)
    assert len(advice) == 1
    line = advice[0]
    assert line.startswith("entries that share a topic (")
    assert "kafka" in line and "orders-v2" in line and line.endswith(": line 16 and line 76")


def test_over_the_byte_cap_only_entries_over_the_target_are_called_long() -> None:
    hook = "the long one " + " ".join(f"term{n}" for n in range(50))
    entries = [f"- [Long {n}](craft/long-{n}.md) {EM} {hook}." for n in range(45)]
    entries += [f"- [Short {n}](craft/short-{n}.md) {EM} short {n}." for n in range(20)]
    advice = spine_advice(spine(entries), LIMITS)
    named = [line for line in advice if line.startswith("a long entry")]
    assert len(named) == 5
    for line in named:
        size = int(re.search(r"\((\d+) bytes, over the 200-byte target", line).group(1))  # type: ignore[union-attr]
        assert size > LIMITS.spine.entry_target_bytes and "Long" in line


def test_over_the_byte_cap_with_no_entry_over_the_target_names_the_pointer_groups() -> None:
    # Within 80 lines, entries of at most 200 bytes cannot reach 16,000: over both caps, then.
    entries = [f"- {' + '.join(f'[Part {k}](craft/a-long-family-name-{n}-{k}.md)' for k in range(4))} {EM} p{n}."
               for n in range(90)]
    assert all(len(e.encode()) <= LIMITS.spine.entry_target_bytes for e in entries)
    advice = spine_advice(spine(entries), LIMITS)
    assert not any(line.startswith("a long entry") for line in advice)
    [line] = [a for a in advice if a.startswith("no entry is over")]
    assert "the pointer groups alone take" in line


def test_cap_failures_name_every_failing_file_once_with_its_reason(tmp_path: Path) -> None:
    body = "---\nscope: Wall\n---\n\n# Wall\n\n" + "".join(f"line {n} " + "x" * 90 + "\n" for n in range(70))
    files = {"SPINE.md": spine([short(1)]).raw, "craft/note-1.md": body.encode()}
    [failure] = cap_failures(snapshot_from_files(tmp_path, files), LIMITS)
    assert failure.path == "craft/note-1.md" and len(failure.problems) == 2  # the line cap and the byte cap
    [why] = failure.why
    assert "with no place to cut" in why and "`oversize:` would not help" in why


def every_pair_scored(entries: list, count: int) -> list:
    """The plain reference: every pair of the first entries scored, best first."""
    from distilld.engine.passes.compaction.advice import PAIRED
    from distilld.store.topics import TopicOverlap, topic_words

    entries = entries[:PAIRED]
    words = [topic_words(e.joined) for e in entries]
    overlap = TopicOverlap(words)
    scored = sorted(((overlap.score(words[i], words[j]), i, j) for i in range(len(entries))
                     for j in range(i + 1, len(entries))), key=lambda s: (-s[0], s[1], s[2]))
    used: set[int] = set()
    out = []
    for score, i, j in scored:
        if score <= 0 or len(out) == count:
            break
        if i not in used and j not in used:
            used |= {i, j}
            out.append((entries[i].line_index, entries[j].line_index, overlap.shared(words[i], words[j])))
    return out


def test_merge_suggestions_equal_those_of_scoring_every_pair() -> None:
    import random

    from distilld.engine.passes.compaction.advice import topical_pairs

    vocabulary = [f"w{n:03d}" for n in range(400)] + ["read", "rules", "project", "sqlite", "tmux", "rust"]
    for seed in range(40):
        rng = random.Random(seed)
        lines = [short(n, " " + " ".join(rng.choices(vocabulary, k=rng.randint(0, 8))))
                 for n in range(rng.randint(2, 340))]
        entries = [e for e in spine(lines).entries if not e.is_catalog_line]
        for count in (1, 5, 200):
            made = [(one.line_index, two.line_index, words) for one, two, words in topical_pairs(entries, count)]
            assert made == every_pair_scored(entries, count), (seed, count)
