"""Evidence twins (STORE-FORMAT.md 1.6, 4.3): which lines of a principle file are dated
observations that belong in ``evidence/<path>``, and the twin's and the file's new text. Pure.

A line moves only if it is a ``- `` bullet that starts with a date, carries no marker, is not
inside a protected block, has no indented continuation lines and is outside code fences. A
section whose every bullet moves (and that holds nothing but those bullets and blank lines)
takes its heading along, into the twin above its lines. No line is ever dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise

from .text import decode, dominant_ending, encode, lines_with_endings, split_lines
from .tierfile import (
    CONTINUATION_RE,
    HEADING_RE,
    MARKER_RE,
    parse_frontmatter,
    protected_line_indexes,
)

DATED_RE = re.compile(r"^- ([0-9]{4}-[0-9]{2}-[0-9]{2})\b")
CITATION_RE = re.compile(r"^Evidence: .* in `evidence/[^`]*`")
FENCE_RE = re.compile(r"^(```|~~~)")
TWIN_HEADER = "---{e}evidence_for: {path}{e}---{e}## Evidence log{e}{e}"


@dataclass
class EvidenceMove:
    path: str  # the principle file
    twin: str  # evidence/<path>
    lines: list[str] = field(default_factory=list)  # what the twin gains, in order (CR-free)
    principle: bytes = b""  # the principle file without them, with the citation line
    twin_header: str = ""  # the header of a new twin ("" when the twin exists)
    ending: str = "\n"  # the line ending the twin's new lines take


def movable_lines(lines: list[str], body_start: int) -> tuple[set[int], set[int]]:
    """(dated observation lines that may move, headings that move along with them)."""
    protected = set(protected_line_indexes(lines))
    fenced = False
    dated: set[int] = set()
    for index in range(body_start, len(lines)):
        line = lines[index]
        if FENCE_RE.match(line):
            fenced = not fenced
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if (not fenced and DATED_RE.match(line) and not MARKER_RE.search(line) and index not in protected
                and not CONTINUATION_RE.match(following)):
            dated.add(index)
    headings: set[int] = set()
    starts = [i for i in range(body_start, len(lines)) if HEADING_RE.match(lines[i])] + [len(lines)]
    for start, end in pairwise(starts):
        if len(HEADING_RE.match(lines[start]).group(1)) < 2 or start in protected:  # type: ignore[union-attr]
            continue
        inside = range(start + 1, end)
        if any(i in dated for i in inside) and all(i in dated or not lines[i].strip() for i in inside):
            headings.add(start)
    return dated, headings


def twin_citation(twin_lines: list[str], twin: str) -> str | None:
    dates = [m.group(1) for m in (DATED_RE.match(line) for line in twin_lines) if m]
    entries = sum(1 for line in twin_lines if line.startswith("- "))
    if not dates:
        return None
    return f"Evidence: {min(dates)} to {max(dates)} in `{twin}` ({entries} entries)."


def plan_evidence(path: str, raw: bytes, twin_raw: bytes | None) -> EvidenceMove | None:
    """The move of ``path``'s dated observation lines to its twin, or None when it has none."""
    text = decode(raw)
    clean = split_lines(text)
    _, body_start = parse_frontmatter(clean)
    dated, headings = movable_lines(clean, body_start)
    if not dated:
        return None
    twin = "evidence/" + path
    ending = dominant_ending(decode(twin_raw)) if twin_raw else dominant_ending(text)
    move = EvidenceMove(path, twin, ending=ending)
    moving = sorted(dated | headings)
    move.lines = [clean[i] for i in moving]
    # A section that moves whole leaves no stray blank lines behind.
    gone = set(moving)
    for start in headings:
        index = start + 1
        while index < len(clean) and (index in dated or not clean[index].strip()):
            gone.add(index)
            index += 1
    kept = [line for i, line in enumerate(lines_with_endings(text)) if i not in gone]
    twin_lines = split_lines(decode(twin_raw)) if twin_raw else []
    citation = twin_citation(twin_lines + move.lines, twin)
    if citation and not any(CITATION_RE.match(line) for line in clean):
        file_ending = dominant_ending(text)
        if kept and not kept[-1].endswith("\n"):
            kept[-1] += file_ending
        if kept and kept[-1].strip():
            kept.append(file_ending)
        kept.append(citation + file_ending)
    move.principle = encode("".join(kept))
    if twin_raw is None:
        move.twin_header = TWIN_HEADER.format(e=ending, path=path)
    return move


def twin_after(twin_raw: bytes | None, header: str, lines: list[str], base: Counter[str],
               ending: str) -> bytes:
    """The twin once it holds, for every planned line L, base[L] + (count of L in ``lines``)
    copies: what is missing is appended, in plan order. A resumed run appends only the
    difference, so the twin ends the same however often this runs."""
    existing = decode(twin_raw) if twin_raw is not None else header
    have = Counter(split_lines(existing))
    wanted = base + Counter(lines)
    missing: list[str] = []
    for line in lines:
        if have[line] < wanted[line]:
            have[line] += 1
            missing.append(line)
    if not missing:
        return encode(existing)
    if existing and not existing.endswith("\n"):
        existing += ending
    out: list[str] = []
    for line in missing:
        if HEADING_RE.match(line):  # a moved section heading reads as one: blank lines around it
            if (out[-1] if out else existing[-2:-1] if existing.endswith("\n\n") else "x").strip():
                out.append("")
            out += [line, ""]
        else:
            out.append(line)
    return encode(existing + "".join(line + ending for line in out))
