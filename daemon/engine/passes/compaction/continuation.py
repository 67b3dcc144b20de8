"""A split family's continuation lines: what their pointers are titled, and how they are known.
Pure.

A family whose pointers outgrow its entry gives its later children lines of their own. A reader
of the SPINE decides from it which file to open, so each child's pointer on such a line is
titled with words of its own piece: its own lead heading (the first heading that starts in it,
not one reopened with "(continued)"), or else its most distinctive names (those the rest of its
family does not mention first), or else its number. The line has no hook and repeats no path:

    - [Retry budgets](craft/x-7.md) + [`jitter_ms`, ERR_42](craft/x-8.md)

Such a line is known by its pointers and its missing hook: all of them continue one file that is
not on the line.
Lines of earlier versions, whose hook ended ``continues `<parent>`.``, are known by that too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable

from ....store.hook_clauses import distinctive_phrases
from ....store.hooks import KEYWORDS
from ....store.split import CONTINUED_MARK
from ....store.text import byte_len
from ....store.tierfile import HEADING_RE, KnowledgeFile

CONTINUES_RE = re.compile(r"(?:^|; )continues `([^`]+)`\.$")
NAMES = 3  # distinctive names a child without a heading of its own is summed up by


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


TITLE_MAX = 40  # bytes: a title longer than that costs the line more than it tells
UNSAFE_TITLE_RE = re.compile(r"[\[\]()\n]")


def child_title(file: KnowledgeFile, summary: str) -> str:
    """Words of a child's own piece for its pointer's title: its own heading, else its first
    distinctive names, else "" (the caller uses its number)."""
    heading = own_heading(file)
    words = heading if heading else summary.removeprefix(KEYWORDS)
    if not heading and summary.startswith(KEYWORDS):
        words = ", ".join(words.split(", ")[:2])
    words = words.removesuffix(CONTINUED_MARK.strip()).strip()
    if not words or UNSAFE_TITLE_RE.search(words) or byte_len(words) > TITLE_MAX:
        return ""
    return words


def continued_family(hook: str, paths: list[str], parent_of: Callable[[str], str | None]) -> str | None:
    """The file a continuation line continues: the one its hook names (the older form), or, for a
    line without a hook, the parent every pointer shares when that parent is not on the line."""
    named = continued_parent(hook)
    if named is not None or hook.strip():
        return named  # a child's own entry with a hook of its own is an entry like any other
    parents = {parent_of(p) for p in paths}
    if len(parents) != 1:
        return None
    parent = parents.pop()
    return parent if parent is not None and parent not in paths else None
