"""SPINE.md: entries, pointers, hooks and the catalog line (STORE-FORMAT.md 1.3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from .text import byte_len, decode, ltrim, rtrim, split_lines

ENTRY_START = "- ["
POINTER_RE = re.compile(r"\]\(([^)]*\.md)\)")
LEADING_GROUP_RE = re.compile(r"^- \[[^\]]*\]\([^)]*\)(?: *\+ *\[[^\]]*\]\([^)]*\))*")
GROUP_LINK_RE = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
CATALOG_LINE_RE = re.compile(r"^- \[[^\]]*\]\(CATALOG.md\)")  # '.' is any character, as in grep
EM_DASH_RE = re.compile(r"^ *\u2014 *")
DOUBLE_DASH_RE = re.compile(r"^ *-- *")


def hook_of_entry(entry: str) -> str:
    """The text after the leading pointer group and its separating dash (not trimmed)."""
    rest = LEADING_GROUP_RE.sub("", entry, count=1)
    rest = EM_DASH_RE.sub("", rest, count=1)
    return DOUBLE_DASH_RE.sub("", rest, count=1)


def pointers_in_line(line: str) -> list[str]:
    """Every ``](….md)`` target on an entry line, hook text included (the C2 extraction)."""
    return POINTER_RE.findall(line)


def is_continuation(line: str) -> bool:
    """May this line continue the entry above it (a wrapped entry)?"""
    if not line.strip(" \t\v\f"):
        return False
    return not (line.startswith("#") or line.startswith("- ") or line.startswith("<!--"))


@dataclass(frozen=True)
class Pointer:
    title: str
    path: str


@dataclass(frozen=True)
class SpineEntry:
    """A ``- [`` line plus its wrapped continuation lines."""

    line_index: int
    first_line: str
    continuations: tuple[str, ...]  # left-trimmed, as the joiner sees them

    @cached_property
    def joined(self) -> str:
        return " ".join((self.first_line, *self.continuations))

    @property
    def byte_len(self) -> int:
        return byte_len(self.joined)

    @property
    def line_count(self) -> int:
        return 1 + len(self.continuations)

    @cached_property
    def leading_group(self) -> tuple[Pointer, ...]:
        match = LEADING_GROUP_RE.match(self.first_line)
        if not match:
            return ()
        return tuple(Pointer(t, p) for t, p in GROUP_LINK_RE.findall(match.group(0)))

    @property
    def pointers(self) -> list[str]:
        return pointers_in_line(self.first_line)

    @property
    def hook(self) -> str:
        return rtrim(hook_of_entry(self.joined))

    @property
    def first_line_hook(self) -> str:
        return rtrim(hook_of_entry(self.first_line))

    @property
    def is_catalog_line(self) -> bool:
        return CATALOG_LINE_RE.match(self.first_line) is not None


class Spine:
    """A parsed SPINE.md (or local/SPINE.md)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(decode(self.raw))

    @property
    def line_count(self) -> int:
        return len(self.lines)

    @property
    def size(self) -> int:
        return len(self.raw)

    @cached_property
    def entries(self) -> list[SpineEntry]:
        found: list[SpineEntry] = []
        lines = self.lines
        index = 0
        while index < len(lines):
            line = lines[index]
            if not line.startswith(ENTRY_START):
                index += 1
                continue
            following = index + 1
            continuations: list[str] = []
            while following < len(lines) and is_continuation(lines[following]):
                continuations.append(ltrim(lines[following]))
                following += 1
            found.append(SpineEntry(index, line, tuple(continuations)))
            index = following
        return found

    @cached_property
    def pointer_set(self) -> set[str]:
        """Unique pointers from every ``- [`` line, in first-seen order as a dict-backed set."""
        return set(self.pointer_list)

    @cached_property
    def pointer_list(self) -> list[str]:
        seen: dict[str, None] = {}
        for line in self.lines:
            if line.startswith(ENTRY_START):
                for pointer in pointers_in_line(line):
                    seen.setdefault(pointer, None)
        return list(seen)

    @property
    def has_catalog_line(self) -> bool:
        return any(CATALOG_LINE_RE.match(line) for line in self.lines)
