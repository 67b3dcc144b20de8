"""Entries a sync merge doubled, merged back into one (issue 23, item 11).

When both machines edit or compact the same SPINE entry, the line replay keeps both versions:
two entries whose leading groups name the same file. They become one entry in the first one's
place: the leading pointers of both (each file once), and one hook holding both: the first whole,
with the second's sentences that the first does not hold put before the sentences both end with
(two versions of one entry share most of their words; writing both whole would double them, and
the doubled words would go to Index detail at the next cut). Where both hooks together would pass the entry cap,
the entry keeps the first hook and the second goes whole to the first target's Index detail,
so every word is kept. Pure: bytes in, bytes out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .spine import EM_DASH, Pointer, Spine, SpineEntry, group_and_hook, replace_entry
from .hook_clauses import inside_pairs
from .text import byte_len, decode, encode, lines_with_endings

_SPACES = re.compile(r"\s+")


def doubled_pointers(spine: Spine) -> dict[str, list[int]]:
    """Each path in the leading group of more than one entry, with those entries' line numbers."""
    seen: dict[str, list[int]] = {}
    for entry in spine.entries:
        for path in dict.fromkeys(p.path for p in entry.leading_group):
            seen.setdefault(path, []).append(entry.line_index + 1)
    return {path: lines for path, lines in seen.items() if len(lines) > 1}


@dataclass
class MergedEntries:
    raw: bytes
    merged: list[str] = field(default_factory=list)  # the paths whose entries became one
    details: dict[str, list[str]] = field(default_factory=dict)  # target -> whole hooks for its Index detail


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _sentences(hook: str) -> list[str]:
    """A hook's sentences: it is cut after a top-level ``.``, ``!`` or ``?`` that a space follows
    (outside brackets, quotes and code, so each piece keeps its pairs balanced)."""
    text = _flat(hook)
    inside = inside_pairs(text)
    found: list[str] = []
    start = 0
    for i, c in enumerate(text):
        if c in ".!?" and not inside[i] and text[i + 1:i + 2] == " ":
            found.append(text[start:i + 1])
            start = i + 2
    if text[start:]:
        found.append(text[start:])
    return found


def union_hook(first: str, second: str) -> str:
    """``first`` with the sentences of ``second`` it lacks, put before their common ending."""
    ours, theirs = _sentences(first), _sentences(second)
    common = 0
    while common < min(len(ours), len(theirs)) and ours[-1 - common] == theirs[-1 - common]:
        common += 1
    held = _flat(first)
    extra = [s for s in theirs[:len(theirs) - common] if s not in held]
    if not extra:
        return first
    pieces = ours[:len(ours) - common] + extra + ours[len(ours) - common:]
    out = pieces[0]
    for piece in pieces[1:]:
        out += (" " if out.endswith((".", "!", "?", ";", ":")) else "; ") + piece
    return out


def _one_entry(first: SpineEntry, second: SpineEntry, entry_max_bytes: int) -> tuple[str, str | None]:
    """The merged entry's text, and the hook that went to Index detail instead (if one did)."""
    # A group joined by ", " (or " / ", ...) is read as one group: else its other pointers
    # would count as hook text, and both versions' copies of them would stand in the hook.
    (g1, h1), (g2, h2) = group_and_hook(first), group_and_hook(second)
    group: list[Pointer] = list(g1)
    group += [p for p in g2 if p.path not in {q.path for q in group}]
    pointers = " + ".join(f"[{p.title}]({p.path})" for p in group)
    if not _flat(h2) or _flat(h2) in _flat(h1):
        hook, spare = h1, None
    elif _flat(h1) in _flat(h2):
        hook, spare = h2, None
    else:
        hook, spare = union_hook(h1, h2), None
    line = f"- {pointers} {EM_DASH} {hook}" if hook else f"- {pointers}"
    if byte_len(line) > entry_max_bytes and hook != h1:
        line = f"- {pointers} {EM_DASH} {h1}" if h1 else f"- {pointers}"
        spare = h2
    return line, spare


def merge_doubled_entries(raw: bytes, paths: set[str], entry_max_bytes: int) -> MergedEntries:
    """``raw`` with every pair of entries that both lead with one of ``paths`` made one."""
    result = MergedEntries(raw)
    for _ in range(len(paths) * 8 + 1):  # each round removes one entry
        spine = Spine(result.raw)
        doubled = {p: lines for p, lines in doubled_pointers(spine).items() if p in paths}
        if not doubled:
            return result
        path = min(doubled, key=lambda p: doubled[p][0])
        first, second = (e for e in spine.entries if e.line_index + 1 in doubled[path][:2])
        line, spare = _one_entry(first, second, entry_max_bytes)
        # The second goes first: it stands below the first, whose line numbers stay as parsed.
        lines = lines_with_endings(decode(result.raw))
        without_second = encode("".join(lines[:second.line_index] + lines[second.line_index + second.line_count:]))
        result.raw = replace_entry(without_second, first, line)
        result.merged.append(path)
        if spare:
            result.details.setdefault(first.leading_group[0].path, []).append(spare)
    return result
