"""Splitting an over-cap tier file at ``## `` section boundaries (STORE-FORMAT.md 1.5, 4.3). Pure.

``craft/x.md`` keeps its frontmatter, its preamble and the first sections; the rest goes to
``craft/x-2.md`` (then ``-3`` …, the next free numbers), each with ``split_from: craft/x.md``.
Every piece but the last ends with ``Continued in `<next piece>`.``. A cut never falls inside a
code fence or inside a marked heading section; a trailing evidence citation stays in the parent.
Each piece is packed up to the caps; a section that alone is over a cap cannot be split and is
reported (declare ``oversize: <reason>`` for the byte cap).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

from .text import byte_len, decode, dominant_ending, encode, lines_with_endings, split_lines
from .tierfile import HEADING_RE, MARKER_RE, KnowledgeFile, parse_frontmatter

CITATION_RE = re.compile(r"^Evidence: .* in `evidence/[^`]*`")
FENCE_RE = re.compile(r"^(```|~~~)")
CONTINUED = "Continued in `{path}`."
NUMBERED_RE = re.compile(r"-([0-9]+)$")


@dataclass
class SplitOutcome:
    parent: bytes  # the parent's new bytes
    children: list[tuple[str, bytes]] = field(default_factory=list)  # new files, in order
    over_cap: list[str] = field(default_factory=list)  # blocks that alone are over a cap


def cut_points(lines: list[str], body_start: int, end: int) -> list[int]:
    """Where a cut may go: a ``## `` heading outside code fences and outside a marked ``# ``
    section (a marked heading's section runs to the next heading of its level or higher)."""
    points: list[int] = []
    fenced = False
    marked_level = 0
    for index in range(body_start, end):
        line = lines[index]
        if FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = HEADING_RE.match(line)
        if not heading:
            continue
        level = len(heading.group(1))
        if marked_level and level <= marked_level:
            marked_level = 0
        if line.startswith("## ") and not marked_level and index > body_start:
            points.append(index)
        if MARKER_RE.search(line) and not marked_level:
            marked_level = level
    return points


def footer_start(lines: list[str], end: int) -> int:
    """The first line of a trailing block of blank and citation lines holding a citation."""
    index = end
    seen = False
    while index > 0 and (not lines[index - 1].strip() or CITATION_RE.match(lines[index - 1])):
        seen = seen or bool(CITATION_RE.match(lines[index - 1]))
        index -= 1
    return index if seen else end


def child_names(path: str, is_child: bool, taken: Callable[[str], bool], count: int) -> list[str]:
    """The next ``count`` free ``<name>-N.md`` paths (N from 2); a split child's own ``-N``
    suffix is dropped first, so a family keeps one numbering."""
    stem = path[:-3]
    if is_child:
        stem = NUMBERED_RE.sub("", stem)
    names: list[str] = []
    number = 2
    while len(names) < count:
        candidate = f"{stem}-{number}.md"
        if candidate != path and not taken(candidate):
            names.append(candidate)
        number += 1
    return names


def _child_header(file: KnowledgeFile, parent: str, ending: str) -> list[str]:
    scope = file.fm("scope") or (file.scope if file.scope != "(no scope)" else "")
    fields = []
    if scope:
        fields.append(f"scope: {scope} (continued)")
    fields.append(f"split_from: {parent}")
    if file.newest_stamp:
        fields.append(f"last_updated: {file.newest_stamp}")  # the family's activity, not newer
    if file.pinned:
        fields.append("lifecycle: pinned")
    return [f"{line}{ending}" for line in ("---", *fields, "---")]


def _size(lines: list[str]) -> tuple[int, int]:
    return len(lines), sum(byte_len(line) for line in lines)


def _closed(lines: list[str], ending: str) -> list[str]:
    """The lines with a final line break (a piece that gets more text after it needs one)."""
    if lines and not lines[-1].endswith("\n"):
        return [*lines[:-1], lines[-1] + ending]
    return list(lines)


def _with_continued(lines: list[str], next_path: str, ending: str) -> list[str]:
    out = _closed(lines, ending)
    if out and out[-1].strip():
        out.append(ending)
    out.append(CONTINUED.format(path=next_path) + ending)
    return out


def split_knowledge_file(path: str, raw: bytes, max_lines: int, max_bytes: int,
                         taken: Callable[[str], bool]) -> SplitOutcome | None:
    """Split ``path`` so every piece is within the caps where the sections allow; None when
    the file is within its caps or has nowhere to cut."""
    file = KnowledgeFile(path, raw)
    text = decode(raw)
    if file.line_count <= max_lines and file.size <= max_bytes:
        return None
    raw_lines = lines_with_endings(text)
    clean = split_lines(text)
    ending = dominant_ending(text)
    _, body_start = parse_frontmatter(clean)
    tail = footer_start(clean, len(clean))
    points = cut_points(clean, body_start, tail)
    if not points:
        return None
    bounds = [0, *points, tail]
    blocks = [raw_lines[a:b] for a, b in pairwise(bounds)]
    footer = raw_lines[tail:]
    while footer and not footer[0].strip():
        footer = footer[1:]  # one blank line will separate it from the Continued line
    header = _child_header(file, path, ending)
    continued_cost = (2, byte_len(CONTINUED.format(path=path[:-3] + "-99.md")) + 2 * len(ending))
    over: list[str] = []

    def fits(lines: list[str], extra: tuple[int, int]) -> bool:
        count, size = _size(lines)
        return count + extra[0] <= max_lines and size + extra[1] <= max_bytes

    pieces: list[list[str]] = []
    current = list(blocks[0])
    footer_cost = _size(footer)
    first_extra = (continued_cost[0] + footer_cost[0], continued_cost[1] + footer_cost[1])
    if not fits(current, first_extra):
        over.append(f"{path}: the frontmatter and text before the first `## ` section are over the caps")
    for block in blocks[1:]:
        extra = first_extra if not pieces else continued_cost
        if fits(current + block, extra):
            current += block
            continue
        pieces.append(current)
        current = header + block
        if not fits(current, continued_cost):
            title = block[0].rstrip("\r\n")
            over.append(f"{path}: section '{title}' alone is over the caps "
                        f"({_size(block)[0]} lines, {_size(block)[1]} bytes); it cannot be split "
                        "(declare oversize: <reason> for the byte cap, or shorten it by hand)")
    pieces.append(current)
    if len(pieces) == 1:
        return None
    names = child_names(path, bool(file.split_from), taken, len(pieces) - 1)
    outcome = SplitOutcome(parent=b"", over_cap=over)
    parent = _with_continued(pieces[0], names[0], ending)
    if footer:
        parent = _closed(parent, ending) + [ending] + footer
    outcome.parent = encode("".join(parent))
    for number, (name, piece) in enumerate(zip(names, pieces[1:])):
        body = piece if number == len(names) - 1 else _with_continued(piece, names[number + 1], ending)
        outcome.children.append((name, encode("".join(body))))
    return outcome
