"""SPINE.md: entries, pointers, hooks and the catalog line (STORE-FORMAT.md 1.3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from .lazy import cached

from .text import (
    byte_len,
    decode,
    dominant_ending,
    encode,
    lines_with_endings,
    ltrim,
    replace_line_body,
    rtrim,
    split_lines,
)

ENTRY_START = "- ["
POINTER_RE = re.compile(r"\]\(([^)]*\.md)\)")
LEADING_GROUP_RE = re.compile(r"^- \[[^\]]*\]\([^)]*\)(?: *\+ *\[[^\]]*\]\([^)]*\))*")
# Real SPINEs also join pointers with ", ", " / ", " and " or "; ": the checker reads only " + ".
JOINED_GROUP_RE = re.compile(r"^- \[[^\]]*\]\([^)]*\)(?:(?: *\+ *|, |; | / | and | & )\[[^\]]*\]\([^)]*\))*")
GROUP_LINK_RE = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
CATALOG_LINE_RE = re.compile(r"^- \[[^\]]*\]\(CATALOG.md\)")  # '.' is any character, as in grep
EM_DASH_RE = re.compile(r"^ *\u2014 *")
DOUBLE_DASH_RE = re.compile(r"^ *-- *")


def hook_of_entry(entry: str) -> str:
    """The text after the leading pointer group and its separating dash (not trimmed)."""
    rest = LEADING_GROUP_RE.sub("", entry, count=1)
    rest = EM_DASH_RE.sub("", rest, count=1)
    return DOUBLE_DASH_RE.sub("", rest, count=1)


def joined_group(line: str) -> tuple[tuple[Pointer, ...], str] | None:
    """(every pointer, the rest of the line) when the line's leading pointers are joined by
    something other than " + "; None when they are not (or there is one pointer)."""
    match = JOINED_GROUP_RE.match(line)
    if match is None:
        return None
    plain = LEADING_GROUP_RE.match(line)
    if plain is not None and plain.end() == match.end():
        return None
    pointers = tuple(Pointer(t, p) for t, p in GROUP_LINK_RE.findall(match.group(0)))
    return pointers, line[match.end():]


def group_and_hook(entry: SpineEntry) -> tuple[tuple[Pointer, ...], str]:
    """The entry's leading pointers and its hook, reading a group joined by ", ", " / ", ...
    as one group (where the checker would read the other pointers as hook text)."""
    found = joined_group(entry.joined)
    if found is None:
        return entry.leading_group, entry.hook
    pointers, rest = found
    return pointers, rtrim(DOUBLE_DASH_RE.sub("", EM_DASH_RE.sub("", rest, count=1), count=1))


def pointers_in_line(line: str) -> list[str]:
    """Every ``](….md)`` target on an entry line, hook text included (the C2 extraction)."""
    return POINTER_RE.findall(line)


def is_continuation(line: str) -> bool:
    """May this line continue the entry above it (a wrapped entry)?"""
    if line[:1] in " \t\v\f" and not line.strip(" \t\v\f"):  # strip copies: only when it may be blank
        return False
    return not (line.startswith("#") or line.startswith("- ") or line.startswith("<!--"))


class Pointer(NamedTuple):
    title: str
    path: str


@dataclass(frozen=True)
class SpineEntry:
    """A ``- [`` line plus its wrapped continuation lines."""

    line_index: int
    first_line: str
    continuations: tuple[str, ...]  # left-trimmed, as the joiner sees them

    @cached
    def joined(self) -> str:
        return " ".join((self.first_line, *self.continuations))

    @cached
    def byte_len(self) -> int:
        return byte_len(self.joined)

    @property
    def line_count(self) -> int:
        return 1 + len(self.continuations)

    @cached
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

    @cached
    def foreign_joiners(self) -> bool:
        """Are the leading pointers joined by something the checker does not read (", ", …)?"""
        return joined_group(self.first_line) is not None

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


# -- edits (pure: text in, text out, every other line and line ending kept) ------------------

EM_DASH = "\u2014"


class PointerRemoval(NamedTuple):
    text: str  # the SPINE after the edit
    spine_entry: str  # the ledger's spine-entry: the removed line, or the derived single-pointer entry
    whole_entry: bool  # the entry went; False when other pointers kept the line


def _format_group(pointers: tuple[Pointer, ...] | list[Pointer]) -> str:
    return " + ".join(f"[{p.title}]({p.path})" for p in pointers)


def find_entry(spine: Spine, path: str) -> SpineEntry | None:
    """The entry whose leading pointer group names ``path``."""
    for entry in spine.entries:
        if any(pointer.path == path for pointer in entry.leading_group):
            return entry
    return None


def replace_entry(raw: bytes, entry: SpineEntry, line: str) -> bytes:
    """``raw`` with ``entry`` (all its lines) replaced by the one line ``line``, whose line
    ending is the entry's last one (or the SPINE's own)."""
    lines = lines_with_endings(decode(raw))
    end = entry.line_index + entry.line_count
    last = lines[end - 1]
    ending = last[len(last.rstrip("\r\n")):] or dominant_ending(decode(raw))
    return encode("".join(lines[:entry.line_index] + [line + ending] + lines[end:]))


def remove_pointer(spine: Spine, path: str) -> PointerRemoval | None:
    """Remove ``path`` from the SPINE: its whole entry, or just its pointer of a merged line."""
    editor = SpineEditor(spine)
    removal = editor.remove(path)
    if removal is None:
        return None
    return PointerRemoval(editor.text(), removal.spine_entry, removal.whole_entry)


TIER_HEADINGS: dict[str, str] = {
    "profile": "## Profile",
    "craft": "## Craft",
    "ops": "## Ops",
    "projects": "## Projects",
    "feedback": "## Feedback",
}


def _entry_with_hook(spine: Spine, hook: str) -> SpineEntry | None:
    for entry in spine.entries:
        if entry.hook == hook and len(entry.leading_group) >= 1:
            return entry
    return None


def add_entry(spine: Spine, entry_line: str, path: str, entry_max_bytes: int | None = None) -> str:
    """Re-add a saved entry: join a merged line that carries the same hook (when the joined entry
    stays within ``entry_max_bytes``), else add the line at the end of its tier's section (a new
    section at the end when there is none)."""
    saved = Spine(encode(entry_line + "\n")).entries
    text = decode(spine.raw)
    raw_lines = lines_with_endings(text)
    ending = dominant_ending(text)
    if saved:
        hook = saved[0].hook
        host = _entry_with_hook(spine, hook)
        if host is not None and not any(p.path == path for p in host.leading_group):
            mine = [p for p in saved[0].leading_group if p.path == path] or list(saved[0].leading_group)
            group = list(host.leading_group)
            # A split parent goes before its children (x.md before x-2.md), wherever it is re-added.
            stem = path[:-3] + "-"
            at = next((i for i, p in enumerate(group) if p.path.startswith(stem)), len(group))
            group[at:at] = mine
            rest_of_line = LEADING_GROUP_RE.sub("", host.first_line, count=1)
            merged = "- " + _format_group(group) + rest_of_line
            grown = byte_len(" ".join((merged, *host.continuations)))
            if entry_max_bytes is None or grown <= entry_max_bytes:
                raw_lines[host.line_index] = replace_line_body(raw_lines[host.line_index], merged)
                return "".join(raw_lines)
    if raw_lines and not raw_lines[-1].endswith("\n"):
        raw_lines[-1] += ending
    heading = TIER_HEADINGS.get(path.split("/", 1)[0])
    lines = spine.lines
    section_start = next((i for i, line in enumerate(lines) if heading and rtrim(line) == heading), None)
    if section_start is None:
        if raw_lines and rtrim(raw_lines[-1]):
            raw_lines.append(ending)
        if heading:
            raw_lines.append(heading + ending)
        raw_lines.append(entry_line + ending)
        return "".join(raw_lines)
    insert_at = section_start + 1
    for index in range(section_start + 1, len(lines)):
        if lines[index].startswith("#"):
            break
        if lines[index].startswith("- ") or (is_continuation(lines[index]) and index == insert_at):
            insert_at = index + 1
    raw_lines.insert(insert_at, entry_line + ending)
    return "".join(raw_lines)


def with_entries(spine: Spine, additions: list[tuple[str, str]], entry_max_bytes: int | None = None) -> Spine:
    """The SPINE as it will be once each (entry, path) is re-added with ``add_entry``: the only
    exact way to know whether there is room (headings, line endings and all)."""
    current = spine
    for entry, path in additions:
        if entry and find_entry(current, path) is None:
            current = Spine(encode(add_entry(current, entry, path, entry_max_bytes)))
    return current


def room_problem(spine: Spine, additions: list[tuple[str, str]], max_lines: int, max_bytes: int,
                 entry_max_bytes: int | None = None) -> str | None:
    """Why these entries do not fit within the SPINE caps, or None when they do."""
    after = with_entries(spine, additions, entry_max_bytes)
    if after.line_count <= max_lines and after.size <= max_bytes:
        return None
    count = sum(1 for entry, _ in additions if entry)
    return (f"SPINE.md has no room for {count} more entr{'y' if count == 1 else 'ies'}: it would have "
            f"{after.line_count} lines and {after.size} bytes (caps {max_lines} and {max_bytes}); "
            "compact the SPINE first")


class SpineEditor:
    """Pointer removals on a parsed SPINE, without re-parsing it after each one.

    The planner simulates a whole pass with it: each ``remove`` gives exactly the ``spine-entry``
    that ``remove_pointer`` on the file at that moment would give, and ``text`` the final SPINE.
    """

    def __init__(self, spine: Spine) -> None:
        self.spine = spine
        self._groups: dict[int, list[Pointer]] = {}
        self._removed: set[int] = set()
        self._entry_of: dict[str, int] = {}
        self.occurrences: dict[str, int] = {}  # path -> entry lines that point at it
        for index, entry in enumerate(spine.entries):
            for pointer in entry.leading_group:
                self._entry_of.setdefault(pointer.path, index)
            for path in entry.pointers:
                self.occurrences[path] = self.occurrences.get(path, 0) + 1

    def entry_text(self, path: str) -> str:
        """The joined text of the entry whose leading group names ``path`` ("" when none)."""
        index = self._entry_of.get(path)
        return self.spine.entries[index].joined if index is not None else ""

    def _group(self, index: int) -> list[Pointer]:
        if index not in self._groups:
            self._groups[index] = list(self.spine.entries[index].leading_group)
        return self._groups[index]

    def _first_line(self, index: int) -> str:
        entry = self.spine.entries[index]
        if index not in self._groups:
            return entry.first_line  # untouched: keep its exact spelling
        rest = LEADING_GROUP_RE.sub("", entry.first_line, count=1)
        return "- " + _format_group(self._groups[index]) + rest

    def remove(self, path: str) -> PointerRemoval | None:
        index = self._entry_of.get(path)
        if index is None or index in self._removed:
            return None
        entry = self.spine.entries[index]
        group = self._group(index)
        mine = next((p for p in group if p.path == path), None)
        if mine is None:
            return None
        if len(group) == 1:
            joined = " ".join((self._first_line(index), *entry.continuations))
            self._removed.add(index)
            return PointerRemoval("", joined, True)
        group.remove(mine)
        return PointerRemoval("", f"- {_format_group([mine])} {EM_DASH} {entry.hook}", False)

    def text(self) -> str:
        raw_lines = lines_with_endings(decode(self.spine.raw))
        dropped: set[int] = set()
        for index in sorted(self._groups):
            entry = self.spine.entries[index]
            if index in self._removed:
                dropped.update(range(entry.line_index, entry.line_index + entry.line_count))
            else:
                raw_lines[entry.line_index] = replace_line_body(raw_lines[entry.line_index], self._first_line(index))
        for index in self._removed:
            entry = self.spine.entries[index]
            dropped.update(range(entry.line_index, entry.line_index + entry.line_count))
        return "".join(line for number, line in enumerate(raw_lines) if number not in dropped)
