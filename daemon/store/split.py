"""Splitting an over-cap tier file into a split family (STORE-FORMAT.md 1.5, 4.3). Pure.

``craft/x.md`` keeps its frontmatter and the first part; the rest goes to ``craft/x-2.md``
(then ``-3`` …, the next free numbers), each with ``split_from: craft/x.md``. Every piece but
the last ends with ``Continued in `<next piece>`.``; a trailing evidence citation stays in the
parent, and an older ``Continued in`` line stays last in the chain.

Where a cut may fall. Agents often write a whole topic as one long ``## Principles`` section,
so cutting only at ``## `` headings is not enough: a cut may also fall between the blocks of a
section (a bullet with its continuation lines, a paragraph, a table, a code fence, a ``###``
subsection). It never falls inside a code fence, a marked heading's section or a bullet's
continuation lines, and never right after a heading (a heading stays with its first block). A
piece that starts inside a section opens with that section's heading plus ``(continued)``, so a
reader of the child knows where it stands; those repeated headings are the only added lines.

How the cuts are chosen: the fewest pieces that each fit the packing limit (the compaction
target, so that every piece has room to grow; or the caps), and among those, cuts at section
boundaries before cuts inside sections. A stretch between two possible cuts that alone is over
the caps cannot be split: it is reported with its size and the room a child has.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .text import byte_len, decode, dominant_ending, encode, lines_with_endings, split_lines
from .tierfile import HEADING_RE, MARKER_RE, KnowledgeFile, parse_frontmatter

CITATION_RE = re.compile(r"^Evidence: .* in `evidence/[^`]*`")
CONTINUED_LINE_RE = re.compile(r"^Continued in `[^`]+`")
FENCE_RE = re.compile(r"^(```|~~~)")
BULLET_RE = re.compile(r"^(?:[-*+]|[0-9]+[.)])(?: |$)")
CONTINUED = "Continued in `{path}`."
CONTINUED_MARK = " (continued)"
NUMBERED_RE = re.compile(r"-([0-9]+)$")
UNCAPPED = 1 << 62  # the byte cap of a file that declares `oversize:`


@dataclass(frozen=True)
class Limit:
    lines: int
    bytes: int


@dataclass(frozen=True)
class Cut:
    """A line where a piece may start, the headings that piece reopens, and how much a reader
    pays for a cut there (0 at a section boundary)."""

    index: int
    reopen: tuple[str, ...] = ()
    penalty: int = 0


@dataclass
class SplitOutcome:
    parent: bytes  # the parent's new bytes
    children: list[tuple[str, bytes]] = field(default_factory=list)  # new files, in order
    over_cap: list[str] = field(default_factory=list)  # stretches that alone are over a cap
    over_target: int = 0  # pieces that end over the packing limit (but within the caps)


def _reopened(heading: str) -> str:
    heading = heading.rstrip(" \t")
    return heading if heading.endswith(CONTINUED_MARK) else heading + CONTINUED_MARK


def find_cuts(lines: list[str], body_start: int, end: int) -> list[Cut]:
    """Every line in ``[body_start, end)`` where a piece may start (see the module docstring)."""
    cuts: list[Cut] = []
    stack: list[tuple[int, str]] = []  # open headings (level, text)
    fenced = False
    marked_level = 0
    after_heading = False  # the previous non-blank line is a heading
    previous_blank = True
    previous_table = False
    block_ended = False  # a fence just closed
    for index in range(body_start, end):
        line = lines[index]
        if fenced:
            if FENCE_RE.match(line):
                fenced, block_ended = False, True
            continue
        heading = HEADING_RE.match(line)
        if heading:
            level = len(heading.group(1))
            if marked_level and level <= marked_level:
                marked_level = 0
            while stack and stack[-1][0] >= level:
                stack.pop()
            if not marked_level and index > body_start:
                reopen = tuple(text for lvl, text in stack if 2 <= lvl < level)
                cuts.append(Cut(index, reopen, 0 if level <= 2 else 1 + len(reopen)))
            stack.append((level, line))
            if MARKER_RE.search(line) and not marked_level:
                marked_level = level
            after_heading, previous_blank, previous_table, block_ended = True, False, False, False
            continue
        if not line.strip():
            previous_blank = True
            continue
        table = line.startswith("|")
        starts_block = line[0] not in " \t" and (
            previous_blank or block_ended or BULLET_RE.match(line) is not None
            or table != previous_table or FENCE_RE.match(line) is not None)
        if starts_block and not marked_level and not after_heading and index > body_start:
            reopen = tuple(text for lvl, text in stack if lvl >= 2) or tuple(text for lvl, text in stack[:1])
            cuts.append(Cut(index, reopen, 2 + len(reopen)))
        if FENCE_RE.match(line):
            fenced = True
        after_heading, previous_blank, previous_table, block_ended = False, False, table, False
    return cuts


def cut_points(lines: list[str], body_start: int, end: int) -> list[int]:
    """The section boundaries among the cuts: where the format itself cuts (``## `` headings)."""
    return [c.index for c in find_cuts(lines, body_start, end)
            if c.penalty == 0 and lines[c.index].startswith("## ")]


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
        fields.append(f"scope: {_reopened(scope)[:-len(CONTINUED_MARK)]}{CONTINUED_MARK}")
    fields.append(f"split_from: {parent}")
    if file.newest_stamp:
        fields.append(f"last_updated: {file.newest_stamp}")  # the family's activity, not newer
    if file.pinned:
        fields.append("lifecycle: pinned")
    if file.oversize_reason is not None:
        fields.append(f"oversize: {file.oversize_reason}")  # the family keeps the exemption its file declared
    return [f"{line}{ending}" for line in ("---", *fields, "---")]


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


class _Packer:
    """The fewest pieces within a limit, by dynamic programming over the possible cuts."""

    def __init__(self, raw_lines: list[str], starts: list[Cut], end: int, ending: str,
                 header: list[str], footer: list[str], limit: Limit, caps: Limit, link: str = "") -> None:
        self.starts = starts  # starts[0] is the parent's start (line 0)
        self.end = end
        self.ending = ending
        self.limit, self.caps = limit, caps
        self.offsets = [0]
        for line in raw_lines[:end]:
            self.offsets.append(self.offsets[-1] + byte_len(line))
        self.header = (len(header), sum(byte_len(h) for h in header))
        self.footer = (len(footer) + 1, sum(byte_len(f) for f in footer) + len(ending)) if footer else (0, 0)
        self.continued = (2, byte_len(CONTINUED.format(path="x" * 120 + ".md")) + 2 * len(ending))
        self.link = (2, byte_len(link) + len(ending)) if link else (0, 0)  # an older Continued line, last
        self.reopen = [(len(c.reopen), sum(byte_len(_reopened(h) + ending) for h in c.reopen)) for c in starts]

    def size(self, first: int, last: int) -> tuple[int, int]:
        """Lines and bytes of the piece from starts[first] to starts[last] (or the end)."""
        begin = self.starts[first].index
        stop = self.starts[last].index if last < len(self.starts) else self.end
        lines, size = stop - begin, self.offsets[stop] - self.offsets[begin] + len(self.ending)
        if first == 0:
            lines, size = lines + self.footer[0], size + self.footer[1]
        else:
            lines += self.header[0] + self.reopen[first][0]
            size += self.header[1] + self.reopen[first][1]
        if last < len(self.starts):
            lines, size = lines + self.continued[0], size + self.continued[1]
        else:
            lines, size = lines + self.link[0], size + self.link[1]
        return lines, size

    def within(self, size: tuple[int, int], limit: Limit) -> bool:
        return size[0] <= limit.lines and size[1] <= limit.bytes

    def pack(self) -> tuple[list[int], list[int], int]:
        """(the start of every piece as an index into ``starts``, the single stretches over the
        caps, how many pieces end over the limit).

        Linear in the file: a piece ending at a start is tried only from the starts whose content
        up to it is within the limit (a bounded window: the limit's lines), and each try costs a
        few additions, not a call."""
        count = len(self.starts)
        index = [c.index for c in self.starts] + [self.end]
        offsets, ending = self.offsets, len(self.ending)
        # what a piece adds to its content: at its start (the parent's footer, or a child's
        # frontmatter and reopened headings) and at its end (a Continued line, or the older link)
        head_lines = [self.footer[0]] + [self.header[0] + r[0] for r in self.reopen[1:]]
        head_bytes = [self.footer[1] + ending] + [self.header[1] + r[1] + ending for r in self.reopen[1:]]
        limit_lines, limit_bytes = self.limit.lines, self.limit.bytes
        cap_lines, cap_bytes = self.caps.lines, self.caps.bytes
        penalty = [c.penalty for c in self.starts]
        Score = tuple[int, int, int]
        best: list[tuple[Score, int] | None] = [None] * (count + 1)
        best[0] = ((0, 0, 0), -1)
        for last in range(1, count + 1):
            stop = index[last]
            stop_offset = offsets[stop]
            tail_lines, tail_bytes = self.continued if last < count else self.link
            current = best[last]
            for first in range(last - 1, -1, -1):
                begin = index[first]
                content_lines, content_bytes = stop - begin, stop_offset - offsets[begin]
                alone = first == last - 1
                if not alone and (content_lines > limit_lines or content_bytes > limit_bytes):
                    break  # earlier starts only add to it
                known = best[first]
                if known is None:
                    continue
                lines = content_lines + head_lines[first] + tail_lines
                size = content_bytes + head_bytes[first] + tail_bytes
                if not alone and (lines > limit_lines or size > limit_bytes):
                    continue
                over = 0 if lines <= cap_lines and size <= cap_bytes else 1
                score = (known[0][0] + over, known[0][1] + 1, known[0][2] + penalty[first])
                if current is None or score < current[0]:
                    current = (score, first)
            best[last] = current
        chosen: list[int] = []
        at = count
        while at > 0:
            entry = best[at]
            assert entry is not None
            chosen.append(entry[1])
            at = entry[1]
        chosen.reverse()
        ends = [*chosen[1:], count]
        over_caps = [first for first, last in zip(chosen, ends)
                     if not self.within(self.size(first, last), self.caps)]
        over_limit = sum(1 for first, last in zip(chosen, ends)
                         if not self.within(self.size(first, last), self.limit))
        return chosen, over_caps, over_limit - len(over_caps)


def _describe(lines: list[str], begin: int, stop: int) -> str:
    first = next((lines[i] for i in range(begin, stop) if lines[i].strip() and not HEADING_RE.match(lines[i])), "")
    opening = lines[begin]
    if HEADING_RE.match(opening) and MARKER_RE.search(opening):
        return f"the marked section '{opening.rstrip()}'"
    if FENCE_RE.match(first):
        return "a code fence"
    if BULLET_RE.match(first):
        return "a protected bullet" if MARKER_RE.search(first) else "one bullet with its continuation lines"
    if first.startswith("|"):
        return "a table"
    return "a paragraph"


def _uncuttable_advice(file: KnowledgeFile, caps: Limit) -> str:
    """What a person can do with a file that has nowhere to cut. ``oversize:`` lifts the byte
    cap only, so it is offered only where the line cap holds."""
    if file.line_count > caps.lines:
        also = (f" (`oversize:` would not help: it lifts the byte cap only, and the file is over its "
                f"{caps.lines}-line cap)" if file.size > caps.bytes else "")
        return f"Break it into sections or bullets by hand{also}"
    return (f"Break it into sections or bullets by hand, or declare `oversize: <reason>` in its frontmatter "
            f"(that lifts the byte cap, and the file is within its {caps.lines}-line cap)")


def _unit_advice(file: KnowledgeFile, caps: Limit, fits_lines: bool) -> str:
    """What a person can do with one unit too big for a piece: shorten or move it; where only
    its bytes are too many, a file that declares ``oversize:`` can hold it."""
    advice = "Shorten it or move part of it to another file by hand"
    if file.line_count <= caps.lines:
        return (f"{advice}, or declare `oversize: <reason>` in the frontmatter (that lifts the byte cap, and "
                f"the file is within its {caps.lines}-line cap)")
    if not fits_lines:
        return advice
    return (f"{advice}, or move it whole into a file of its own (with a SPINE entry) that declares `oversize: "
            f"<reason>`: that lifts the byte cap, which is the only cap it breaks; `oversize:` here would not "
            f"help, as this file is over its {caps.lines}-line cap")


def split_knowledge_file(path: str, raw: bytes, max_lines: int, max_bytes: int,
                         taken: Callable[[str], bool], target: Limit | None = None) -> SplitOutcome | None:
    """Split ``path`` into pieces within ``target`` (default: the caps) where its blocks allow;
    None when the file is within its caps. A file with nowhere to cut gives no children and a
    message in ``over_cap``."""
    file = KnowledgeFile(path, raw)
    exempt = file.oversize_reason is not None  # `oversize:` lifts the byte cap, never the line cap
    if exempt:
        max_bytes = UNCAPPED
        target = Limit(target.lines, UNCAPPED) if target is not None else None
    if file.line_count <= max_lines and file.size <= max_bytes:
        return None
    caps = Limit(max_lines, max_bytes)
    limit = target or caps
    text = decode(raw)
    raw_lines = lines_with_endings(text)
    clean = split_lines(text)
    ending = dominant_ending(text)
    _, body_start = parse_frontmatter(clean)
    tail = footer_start(clean, len(clean))
    # An older Continued line goes last in the new chain, whatever an agent appended after it.
    at = next((i for i in range(tail - 1, body_start - 1, -1) if CONTINUED_LINE_RE.match(clean[i])), None)
    link = ""
    if at is not None:
        link = raw_lines.pop(at)
        link = link if link.endswith("\n") else link + ending
        del clean[at]
        tail -= 1
    # The parent keeps at least one block of its own.
    content = next((i for i in range(body_start, tail) if clean[i].strip() and not HEADING_RE.match(clean[i])), tail)
    cuts = [c for c in find_cuts(clean, body_start, tail) if content < c.index]
    footer = raw_lines[tail:]
    while footer and not footer[0].strip():
        footer = footer[1:]  # one blank line will separate it from the Continued line
    header = _child_header(file, path, ending)
    starts = [Cut(0), *cuts]
    packer = _Packer(raw_lines, starts, tail, ending, header, footer, limit, caps, link)
    chosen, over_caps, over_target = packer.pack()
    outcome = SplitOutcome(parent=b"", over_target=over_target)
    ends = [*chosen[1:], len(starts)]
    for first in over_caps:
        last = ends[chosen.index(first)]
        begin = starts[first].index
        stop = starts[last].index if last < len(starts) else tail
        if len(chosen) == 1 and not cuts:
            outcome.over_cap.append(
                f"{path}: over its caps ({file.line_count} lines, {file.size} bytes) with no place to cut: "
                "no section heading, bullet or paragraph boundary outside a code fence or marked section. "
                + _uncuttable_advice(file, caps))
            continue
        room_lines = max_lines - len(header) - 1 - packer.continued[0]
        room_bytes = max_bytes - packer.header[1] - packer.continued[1]
        piece_lines = packer.size(first, last)[0]
        outcome.over_cap.append(
            f"{path}: {_describe(clean, begin, stop)} at lines {begin + 1}-{stop} is {stop - begin} lines, "
            f"{packer.offsets[stop] - packer.offsets[begin]} bytes, more than a split piece can hold "
            + (f"(about {room_lines} lines: the {max_lines}-line cap, which `oversize:` does not lift, " if exempt else
               f"(about {room_lines} lines and {room_bytes} bytes: the caps {max_lines} lines / {max_bytes} bytes ")
            + f"minus the child's {len(header)}-line frontmatter, a continued heading and the Continued line); "
            "it is never cut inside. " + _unit_advice(file, caps, piece_lines <= max_lines))
    if len(chosen) == 1:
        return outcome if outcome.over_cap else None
    if link:  # the older link ends the last piece: the chain reads on into the older children
        pieces_end = _closed(raw_lines[:tail], ending)
        raw_lines = [*pieces_end, *([ending] if pieces_end and pieces_end[-1].strip() else []), link,
                     *raw_lines[tail:]]
        tail = len(pieces_end) + (1 if pieces_end and pieces_end[-1].strip() else 0) + 1
    linked = re.findall(r"`([^`]+)`", link)  # the file the older Continued line names is taken, even if missing
    names = child_names(path, bool(file.split_from), lambda p: taken(p) or p in linked, len(chosen) - 1)
    pieces: list[list[str]] = []
    for number, (first, last) in enumerate(zip(chosen, ends)):
        begin = starts[first].index
        stop = starts[last].index if last < len(starts) else tail
        body = raw_lines[begin:stop] if number else raw_lines[:stop]
        if number:
            body = header + [_reopened(h) + ending for h in starts[first].reopen] + body
        pieces.append(body)
    parent = _with_continued(pieces[0], names[0], ending)
    if footer:
        parent = _closed(parent, ending) + [ending] + footer
    outcome.parent = encode("".join(parent))
    for number, (name, piece) in enumerate(zip(names, pieces[1:])):
        body = piece if number == len(names) - 1 else _with_continued(piece, names[number + 1], ending)
        outcome.children.append((name, encode("".join(body))))
    return outcome
