"""The least a split of an over-cap tier file takes, known from its size alone (no packing):
what a planner weighs before it splits, and what a report shows for a file too big to split. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from .limits import Limits
from .text import byte_len
from .tierfile import KnowledgeFile

POINTER_JOINER = 3  # a SPINE pointer's "- " and line break alone on a line, or " + " in a group


@dataclass(frozen=True)
class SplitNeed:
    pieces: int
    pointer_bytes: int  # of the new children's pointers, with their joiners
    lines: int  # the SPINE lines they need at least, beyond their parent's


def split_need(path: str, file: KnowledgeFile, limits: Limits) -> SplitNeed:
    """The least a split of ``path`` takes: as many pieces as its size over each cap (``oversize:``
    lifts the byte cap), and a SPINE pointer ``[n](<stem>-n.md)`` for each child. O(pieces)."""
    caps = limits.tier_file
    by_bytes = 1 if file.oversize_reason is not None else ceil(file.size / caps.max_bytes)
    pieces = max(1, ceil(file.line_count / caps.max_lines), by_bytes)
    stem = path[:-3]
    pointer_bytes = sum(byte_len(f"[{n}]({stem}-{n}.md)") + POINTER_JOINER for n in range(2, pieces + 1))
    cap = limits.spine.entry_max_bytes
    return SplitNeed(pieces, pointer_bytes, max(0, ceil(pointer_bytes / cap) - 1))
