"""What a person can do where compaction (or a migration) cannot bring the store within its caps.
Pure: a store (or the store a plan would leave) in, plain sentences out.

Every suggestion is made only where it is true: an entry is called long only when it is over
the entry target; merges are proposed between entries that share a topic; ``oversize:`` is
offered only where the byte cap is the one that binds (store/split.py words the advice for a
unit that cannot be cut, and this module reuses it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ....store.findings import Finding
from ....store.invariants import check_c1, check_c3
from ....store.limits import Limits
from ....store.paths import SPINE
from ....store.snapshot import Snapshot
from ....store.spine import LEADING_GROUP_RE, Spine, SpineEntry
from ....store.split import split_knowledge_file
from ....store.text import byte_len, clip
from ....store.topics import TopicOverlap, topic_words
from ...context import BUDGET_CODES
from .fit import SpineRoom, spine_floor, spine_refusal

MERGE_FORM = "`- [A](a.md) + [B](b.md) \u2014 \u2026`"
SHOWN = 5  # suggestions of one kind
PAIRED = 300  # entries whose pairs are scored for a merge suggestion
TOPICS_SHOWN = 20  # topics a refused plan names at most


@dataclass(frozen=True)
class CapFailure:
    """A file the store fails a cap on (C1 for SPINE.md, C3 for a tier file), why compaction
    could not bring it within, and what a person can do."""

    path: str
    problems: tuple[str, ...]  # the check's own messages
    why: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "problems": list(self.problems), "why": list(self.why)}

    def render(self) -> list[str]:
        return [f"    - {'; '.join(self.problems)}", *(f"      {line}" for line in self.why)]




def cap_failures(after: Snapshot, limits: Limits, breaches: list[str] | None = None) -> list[CapFailure]:
    """Every cap the store ``after`` fails, one item per file. ``breaches`` are the planner's
    words for what binds the SPINE, when a plan was made."""
    found = [f for f in check_c1(after, limits) + check_c3(after, limits)
             if f.severity == "fail" and f.code in BUDGET_CODES]
    by_path: dict[str, list[Finding]] = {}
    for finding in found:
        by_path.setdefault(finding.path, []).append(finding)
    out: list[CapFailure] = []
    spine = after.spine or Spine(b"")
    floor = spine_floor(spine, limits, lambda p: after.exists(p) and bool(after.knowledge(p).split_from))
    spine_full = spine_refusal(floor, spine, limits)
    for path, findings in by_path.items():
        problems = tuple(f.message for f in findings)
        if path == SPINE:
            why = [b for b in breaches or [] if not b.startswith(SPINE)] + spine_advice(spine, limits)
        elif spine_full is not None:  # no split is tried: the SPINE has no room for one more pointer
            why = [f"{path} is not split while the SPINE cannot be brought within its caps (see SPINE.md)"]
        else:
            why = tier_file_advice(after, path, limits, SpineRoom(floor, limits))
        out.append(CapFailure(path, problems, tuple(why)))
    return out


def tier_file_advice(store: Snapshot, path: str, limits: Limits, room: SpineRoom | None = None) -> list[str]:
    """Why a tier file over a cap stays so, in the words a refused split uses."""
    file = store.knowledge(path)
    caps = limits.tier_file
    refused = room.refusal(path, file) if room is not None else None
    if refused is not None:  # its pointers cannot fit: no split is tried
        return [refused]
    outcome = split_knowledge_file(path, store.contents.get(path, b""), caps.max_lines, caps.max_bytes, store.exists)
    if outcome is not None and outcome.over_cap:
        return list(outcome.over_cap)
    return [f"{path} can be split within its caps: `distilld compact --apply` splits it"]


def spine_advice(spine: Spine, limits: Limits) -> list[str]:
    """What could be done by hand for a SPINE over a cap, each true for this SPINE."""
    caps = limits.spine
    entries = [e for e in spine.entries if not e.is_catalog_line]
    out: list[str] = []
    if spine.line_count > caps.max_lines:
        pairs = topical_pairs(entries, SHOWN)
        out += [f"entries that share a topic ({', '.join(words[:3])}), to merge by hand into one multi-pointer "
                f"line ({MERGE_FORM}): line {one.line_index + 1} and line {two.line_index + 1}"
                for one, two, words in pairs]
        if not pairs:
            out.append(f"the SPINE has {spine.line_count} lines (cap {caps.max_lines}) and no two entries share a "
                       f"topic: archive files that are done with, or join entries by hand into multi-pointer lines "
                       f"({MERGE_FORM}: one line saved per join)")
    if spine.size > caps.max_bytes:
        long = sorted((e for e in entries if e.byte_len > caps.entry_target_bytes), key=lambda e: -e.byte_len)
        out += [f"a long entry to reword by hand ({e.byte_len} bytes, over the {caps.entry_target_bytes}-byte "
                f"target; line {e.line_index + 1}): {clip(e.joined, 80)}" for e in long[:SHOWN]]
        if not long:
            groups = sum(_group_bytes(e) for e in entries)
            out.append(f"no entry is over the {caps.entry_target_bytes}-byte target: the pointer groups alone take "
                       f"{groups} of the SPINE's {spine.size} bytes; merge small files of one topic by hand, or "
                       "archive files that are done with")
    for entry in entries:
        if entry.byte_len > caps.entry_max_bytes and _group_bytes(entry) + caps.hook_floor > caps.entry_max_bytes:
            out.append(f"line {entry.line_index + 1}: its pointer group alone takes {_group_bytes(entry)} of the "
                       f"{caps.entry_max_bytes} bytes an entry may have; give some of its pointers a line of their "
                       "own, or merge small files of the family by hand")
    return out


def topic_advice(spine: Spine, exists: Callable[[str], bool], limits: Limits) -> list[str]:
    """For a planned SPINE over a cap: which topics to archive or merge by hand, named by files
    that exist now (never by a split child the plan would create), each with the bytes and the
    line its entry takes, largest first, until they cover what is over the caps."""
    caps = limits.spine
    over_bytes = spine.size - caps.max_bytes
    over_lines = spine.line_count - caps.max_lines
    rows: list[tuple[int, str, list[str]]] = []
    for entry in spine.entries:
        if entry.is_catalog_line:
            continue
        existing = [p.path for p in entry.leading_group if exists(p.path)]
        if existing:
            rows.append((entry.byte_len + 1, entry.leading_group[0].title, existing))
    rows.sort(key=lambda row: (-row[0], row[2]))
    out: list[str] = []
    freed = lines = 0
    for size, title, paths in rows:
        if (freed >= over_bytes and lines >= over_lines) or len(out) == TOPICS_SHOWN:
            break
        out.append(f"archive or merge the topic \"{clip(title, 60)}\" ({', '.join(paths)}): frees {size} bytes "
                   "and 1 line of the SPINE")
        freed, lines = freed + size, lines + 1
    if out:
        need = [f"{over_bytes} bytes" if over_bytes > 0 else "", f"{over_lines} lines" if over_lines > 0 else ""]
        out.insert(0, f"the SPINE would still be over its caps by {' and '.join(n for n in need if n)}; the topics "
                      f"below free {freed} bytes and {lines} lines together")
    return out


def _group_bytes(entry: SpineEntry) -> int:
    match = LEADING_GROUP_RE.match(entry.first_line)
    return byte_len(match.group(0)) if match else 0


def topical_pairs(entries: list[SpineEntry], count: int) -> list[tuple[SpineEntry, SpineEntry, list[str]]]:
    """The pairs of entries whose words overlap most (each entry in one pair at most), with the
    words they share, rarest first."""
    entries = entries[:PAIRED]  # every pair is scored: a bloated SPINE's first entries say enough
    words = [topic_words(e.joined) for e in entries]
    overlap = TopicOverlap(words)
    scored = sorted(((overlap.score(words[i], words[j]), i, j) for i, j in _sharing_pairs(words, overlap)),
                    key=lambda s: (-s[0], s[1], s[2]))
    used: set[int] = set()
    out: list[tuple[SpineEntry, SpineEntry, list[str]]] = []
    for score, i, j in scored:
        if score <= 0 or len(out) == count:
            break
        if i in used or j in used:
            continue
        used |= {i, j}
        out.append((entries[i], entries[j], overlap.shared(words[i], words[j])))
    return out


def _sharing_pairs(words: list[frozenset[str]], overlap: TopicOverlap) -> set[tuple[int, int]]:
    """The pairs (i < j) of entries that share a word with a weight: only those can score above
    0, so only those are scored (a word is held by few entries, or it has no weight)."""
    holders: dict[str, list[int]] = {}
    for index, held in enumerate(words):
        for word in held:
            if word in overlap.weight:
                holders.setdefault(word, []).append(index)
    return {(one, two) for ids in holders.values() for at, one in enumerate(ids) for two in ids[at + 1:]}
