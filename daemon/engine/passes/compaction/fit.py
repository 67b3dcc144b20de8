"""What no compaction can fit in the SPINE, known before any planning. Pure, linear in the bytes.

Planning a compaction can take long on a huge input (a 20 MB tier file, a 5 MB SPINE); when
even the least it could leave is over the SPINE's hard caps, it is refused at once, with the
figures. The least is a lower bound of what the planner (spine.py) can reach:

* every line that is not an entry and not blank stays (headings, comments, prose);
* every entry keeps its pointer group: its line costs at least ``- `` + group + line break,
  and a merged entry at least `` + `` + group. Hooks can be cut to nothing, blank lines dropped;
* entries merge only within one section and tier, at most ``entry_max_bytes`` a line, so such
  a group takes at least (its pointer bytes / the entry cap) lines; an entry whose pointers
  span tiers (or the catalog line) never merges and keeps a line of its own. A split child's
  entry may join its parent's line: it costs bytes, never a line.

A split of an over-cap tier file into N pieces adds N-1 pointers ``[n](<stem>-n.md)``, and a
file needs at least as many pieces as its size over each cap (``oversize:`` lifts the byte cap).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import ceil

from ....store.limits import Limits
from ....store.spine import LEADING_GROUP_RE, Spine
from ....store.split_need import POINTER_JOINER as JOINER
from ....store.split_need import SplitNeed, split_need
from ....store.text import byte_len
from ....store.tierfile import KnowledgeFile


@dataclass
class SpineFloor:
    """The least lines and bytes the SPINE can be compacted to, and what its entries take."""

    lines: int
    bytes: int
    entries: int
    pointer_bytes: int  # of every pointer group, with its joiner

    def room(self, limits: Limits) -> tuple[int, int]:
        """(lines, bytes) left under the hard caps once the SPINE is at its least."""
        caps = limits.spine
        return caps.max_lines - self.lines, caps.max_bytes - self.bytes


def spine_floor(spine: Spine, limits: Limits, is_split_child: Callable[[str], bool]) -> SpineFloor:
    cap = limits.spine.entry_max_bytes
    kept_lines, kept_bytes = 0, 0
    entry_lines = set()
    for entry in spine.entries:
        entry_lines.add(entry.line_index)
        entry_lines.update(range(entry.line_index + 1, entry.line_index + 1 + len(entry.continuations)))
    section = 0
    sections: dict[int, int] = {}  # the section of each entry's first line
    for index, line in enumerate(spine.lines):
        if line.startswith("#"):
            section += 1
        if index in entry_lines:
            sections[index] = section
        elif line.strip():
            kept_lines += 1
            kept_bytes += byte_len(line) + 1
    groups: dict[tuple[int, str], int] = {}
    alone = 0
    pointer_bytes = 0
    for entry in spine.entries:
        match = LEADING_GROUP_RE.match(entry.first_line)
        group = byte_len(match.group(0)) - 2 if match else 0
        cost = group + JOINER
        pointer_bytes += cost
        paths = [p.path for p in entry.leading_group] or entry.pointers
        if paths and all(is_split_child(p) for p in paths):
            continue  # it may join its parent's line
        tiers = {p.split("/", 1)[0] for p in paths}
        if entry.is_catalog_line or len(tiers) != 1:
            alone += 1
            continue
        key = (sections[entry.line_index], tiers.pop())
        groups[key] = groups.get(key, 0) + min(cost, cap)
    lines = kept_lines + alone + sum(ceil(mass / cap) for mass in groups.values())
    return SpineFloor(lines, kept_bytes + pointer_bytes, len(spine.entries), pointer_bytes)


def spine_refusal(floor: SpineFloor, spine: Spine, limits: Limits) -> str | None:
    """Why no compaction can bring this SPINE within its caps (None when one may)."""
    caps = limits.spine
    if floor.lines <= caps.max_lines and floor.bytes <= caps.max_bytes:
        return None
    return (f"no compaction can bring SPINE.md ({spine.line_count} lines, {spine.size} bytes) within its caps "
            f"({caps.max_lines} lines, {caps.max_bytes} bytes): its {floor.entries} entries' pointers "
            f"alone take {floor.pointer_bytes} bytes, and even with every hook cut, every blank line dropped and "
            f"every entry of one section and tier merged it keeps at least {floor.lines} lines and {floor.bytes} "
            "bytes; nothing was planned. Archive files that are done with, merge small files of one topic, "
            "or move prose out of the SPINE by hand")


class SpineRoom:
    """The room the SPINE has left for new pointers, as splits are planned one after another."""

    def __init__(self, floor: SpineFloor, limits: Limits) -> None:
        self.limits = limits
        self.lines, self.bytes = floor.room(limits)

    def refusal(self, path: str, file: KnowledgeFile) -> str | None:
        """Why ``path`` is not split (its pointers cannot fit), or None: then its room is taken."""
        need = split_need(path, file, self.limits)
        if need.pointer_bytes <= self.bytes and need.lines <= self.lines:
            self.bytes -= need.pointer_bytes
            self.lines -= need.lines
            return None
        return split_refusal_text(path, file, need, self.lines, self.bytes, self.limits)


def split_refusal_text(path: str, file: KnowledgeFile, need: SplitNeed, room_lines: int, room_bytes: int,
                       limits: Limits) -> str:
    caps = limits.spine
    return (f"{path}: {file.line_count} lines, {file.size} bytes would need at least {need.pieces} split pieces, "
            f"whose {need.pieces - 1} new SPINE pointers take at least {need.pointer_bytes} bytes and "
            f"{need.lines} lines, where the SPINE has at most {max(room_bytes, 0)} bytes and "
            f"{max(room_lines, 0)} lines left within its caps ({caps.max_lines} lines, {caps.max_bytes} bytes); "
            "it was not split. Break it by hand into files of one topic each, each with its own SPINE entry, "
            "or archive what is done with")


def tier_split_refusal(path: str, file: KnowledgeFile, spine: Spine, limits: Limits,
                       is_split_child: Callable[[str], bool]) -> str | None:
    """The refusal for one file alone against the SPINE as it is (what `check` and the advice say)."""
    return SpineRoom(spine_floor(spine, limits, is_split_child), limits).refusal(path, file)
