"""The hook of a split family's continuation line: what its children hold, then which file they
continue. Pure.

A family whose pointers outgrow its entry gives its later children lines of their own. A reader
of the SPINE decides from it which file to open, so such a line says what is in its children:
each child's own lead heading (the first heading that starts in it, not one reopened with
"(continued)"), or else its most distinctive names (those the rest of its family does not
mention first) as ``keywords: a, b``, or else the heading of the section it continues. The words come first and ``continues `<parent>`.`` ends
the hook, so the bare form of earlier versions is still part of every such hook:

    - [7](craft/x-7.md) + [8](craft/x-8.md) — Retry budgets; keywords: `jitter_ms`; continues `craft/x.md`.

The words take at most the room the packing gives every entry's hook (the hook floor), and none
when that floor leaves no more than the bare form.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from ....store.hook_clauses import distinctive_phrases
from ....store.hooks import KEYWORDS, short_hook
from ....store.split import CONTINUED_MARK
from ....store.text import byte_len
from ....store.tierfile import HEADING_RE, KnowledgeFile

CONTINUES_RE = re.compile(r"(?:^|; )continues `([^`]+)`\.$")
NAMES = 3  # distinctive names a child without a heading of its own is summed up by


def bare_hook(parent: str) -> str:
    return f"continues `{parent}`."


def continued_parent(hook: str) -> str | None:
    """The file a continuation line's hook says its children continue (None for any other hook)."""
    found = CONTINUES_RE.search(hook)
    return found.group(1) if found else None


def _headings(file: KnowledgeFile) -> list[str]:
    """The headings below the title, as text."""
    found = []
    for line in file.body_lines:
        heading = HEADING_RE.match(line)
        if heading is not None and len(heading.group(1)) >= 2 and line[heading.end():].strip(" \t#"):
            found.append(line[heading.end():].strip(" \t#"))
    return found


def own_heading(file: KnowledgeFile) -> str:
    """The first heading below the title that starts in this file ("" when it has none)."""
    mark = CONTINUED_MARK.strip()
    return next((h for h in _headings(file) if not h.endswith(mark)), "")


def family_names(family: Iterable[KnowledgeFile]) -> Counter[str]:
    """In how many files of a family each distinctive name stands: counted once per family, so
    that summing up each of its N children costs one pass over the family, not N."""
    counts: Counter[str] = Counter()
    for member in family:
        counts.update(_names_of(member))
    return counts


def _names_of(file: KnowledgeFile) -> list[str]:
    return distinctive_phrases("; ".join(_lines(file)))


def child_summary(file: KnowledgeFile, family: Iterable[KnowledgeFile],
                  names_in_family: Counter[str] | None = None) -> str:
    """A few words of what ``file`` holds: its own heading, or its rarest names in its family.
    ``names_in_family`` is ``family_names(family)`` when the caller has it already."""
    heading = own_heading(file)
    if heading:
        return heading
    mine: Counter[str] = Counter()  # in how many of its lines a name is
    for line in _lines(file):
        mine.update(distinctive_phrases(line))
    members = list(family)
    elsewhere = Counter(names_in_family) if names_in_family is not None else family_names(members)
    if any(other.path == file.path for other in members):
        elsewhere.subtract(_names_of(file))  # in how many *other* files of the family
    names = sorted((p for p in mine if not p.startswith("[")), key=lambda p: (elsewhere[p], -mine[p], len(p)))
    if names:
        return KEYWORDS + ", ".join(names[:NAMES])
    # nothing it names: the section it continues, at least
    mark = CONTINUED_MARK.strip()
    return next((h.removesuffix(mark).rstrip() for h in _headings(file) if h.endswith(mark)), "")


def _lines(file: KnowledgeFile) -> list[str]:
    """The body's lines but its headings (its names, not its sections')."""
    return [line for line in file.body_lines if line.strip() and not HEADING_RE.match(line)]


def continuation_hook(parent: str, summaries: list[str], room: int) -> str:
    """The words of the children, in their order, within ``room`` bytes with the bare form after
    them; the bare form alone when there is no room for a word."""
    bare = bare_hook(parent)
    words_room = room - byte_len(bare) - 2  # "; " joins the words to the bare form
    words = "; ".join(s for s in summaries if s)
    if words_room <= 0 or not words:
        return bare
    kept = short_hook(words, words_room).rstrip(" ;,.")
    if not kept or byte_len(kept) > words_room:
        return bare
    return f"{kept}; {bare}"
