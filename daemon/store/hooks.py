"""Short SPINE hooks, written mechanically: keep the pointers, the lead clauses and the
"Read when…" clause, cut at clause and word boundaries, never inside a UTF-8 character.
"""

from __future__ import annotations

import re

from .spine import LEADING_GROUP_RE, hook_of_entry
from .text import byte_len, rtrim

CLAUSE_END_RE = re.compile(r"(?<=[.;])\s+")
READ_CLAUSE_RE = re.compile(r"^(?:Read|Consult|Use|Open|Check)\b")
ELLIPSIS = "\u2026"


def clauses(hook: str) -> list[str]:
    return [c for c in CLAUSE_END_RE.split(hook.strip()) if c]


def _cut_words(text: str, limit: int) -> str:
    """The longest prefix of whole words within ``limit`` bytes, with an ellipsis."""
    words = text.split(" ")
    kept: list[str] = []
    for word in words:
        candidate = " ".join([*kept, word])
        if byte_len(candidate + ELLIPSIS) > limit:
            break
        kept.append(word)
    return (rtrim(" ".join(kept)).rstrip(",;:") + ELLIPSIS) if kept else ""


def short_hook(hook: str, limit: int, must_keep: tuple[str, ...] = ()) -> str:
    """A hook of at most ``limit`` bytes: lead clauses in order, then the read-when clause."""
    parts = clauses(hook)
    read = next((c for c in reversed(parts) if READ_CLAUSE_RE.match(c)), "")
    body = [c for c in parts if c is not read]
    tail = " ".join([*[w for w in must_keep if w not in hook], read]).strip()
    budget = limit - (byte_len(tail) + 1 if tail else 0)
    chosen: list[str] = []
    for clause in body:
        if byte_len(" ".join([*chosen, clause])) <= budget:
            chosen.append(clause)
        else:
            if not chosen:
                cut = _cut_words(clause, budget)
                if cut:
                    chosen.append(cut)
            break
    result = " ".join([*chosen, tail]).strip()
    if byte_len(result) > limit:  # even the read clause is too long: cut it by words
        result = _cut_words(result, limit)
    return result


def short_entry(group: str, hook: str, limit: int, must_keep: tuple[str, ...] = ()) -> str:
    """``- <group> — <short hook>`` within ``limit`` bytes (the group itself is never cut)."""
    head = f"- {group} \u2014 "
    return head + short_hook(hook, max(0, limit - byte_len(head)), must_keep)


def entry_within_cap(entry: str, path: str, pinned: bool, entry_cap: int, target: int) -> tuple[str, str]:
    """(entry to write, hook for Index detail): the saved entry, or a fresh short one."""
    if byte_len(entry) <= entry_cap:
        return entry, ""
    match = LEADING_GROUP_RE.match(entry)
    group = match.group(0)[2:] if match else f"[{path}]({path})"
    hook = rtrim(hook_of_entry(entry))
    return short_entry(group, hook, target, ("pinned",) if pinned else ()), hook
