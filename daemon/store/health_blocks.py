"""Blocks of a tier file and the research's three mechanical bounds on dated history. Pure.

A block is what a reader takes as one item: a ``- `` (or ``*``, ``+``, ``1.``) bullet with its
indented continuation lines, a paragraph (a run of non-blank lines, tables included), or a
code fence. Headings and blank lines are not blocks; the frontmatter is not part of the body.

The bounds (how much of a file is dated history that could move to its evidence twin):
* strict: a block that opens with a date;
* generous: a block that mentions a date anywhere;
* very generous: a block that mentions a date or an evidence word ("confirmed", "observed",
  "measured").
A block carrying [NON-NEGOTIABLE…] or [DIRECTIVE…] never counts as movable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from .split import FENCE_RE
from .text import byte_len, lines_with_endings
from .tierfile import DIRECTIVE_RE, HEADING_RE, NON_NEGOTIABLE_RE, KnowledgeFile

BOUNDS: tuple[str, ...] = ("strict", "generous", "very_generous")
BOUND_LABELS = {"strict": "strict (opens with a date)", "generous": "generous (mentions a date)",
                "very_generous": "very generous (a date or an evidence word)"}
DATE_RE = re.compile(r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}\b")
OPENS_WITH_DATE_RE = re.compile(r"^\s*(?:[-*+]|[0-9]+\.)?\s*[*_\[(`]*[0-9]{4}-[0-9]{2}-[0-9]{2}\b")
EVIDENCE_WORD_RE = re.compile(r"\b(?:confirmed|observed|measured)\b", re.IGNORECASE)
BULLET_RE = re.compile(r"^(?:[-*+] |[0-9]+\. )")
INDENTED_RE = re.compile(r"^[ \t]+\S")


@dataclass(frozen=True)
class Block:
    start: int  # index of the first line (in the file's CR-free lines)
    end: int  # one past the last line
    text: str

    @property
    def protected(self) -> bool:
        return bool(NON_NEGOTIABLE_RE.search(self.text) or DIRECTIVE_RE.search(self.text))

    def movable(self, bound: str) -> bool:
        if self.protected:
            return False
        if bound == "strict":
            return OPENS_WITH_DATE_RE.match(self.text) is not None
        if bound == "generous":
            return DATE_RE.search(self.text) is not None
        return DATE_RE.search(self.text) is not None or EVIDENCE_WORD_RE.search(self.text) is not None


def body_blocks(lines: list[str], body_start: int) -> list[Block]:
    blocks: list[Block] = []
    index = body_start
    count = len(lines)
    while index < count:
        line = lines[index]
        if not line.strip() or HEADING_RE.match(line):
            index += 1
            continue
        start = index
        if FENCE_RE.match(line):
            index += 1
            while index < count and not FENCE_RE.match(lines[index]):
                index += 1
            index = min(index + 1, count)
        elif BULLET_RE.match(line):
            index += 1
            while index < count and INDENTED_RE.match(lines[index]):
                index += 1
        else:
            index += 1
            while (index < count and lines[index].strip() and not HEADING_RE.match(lines[index])
                   and not BULLET_RE.match(lines[index]) and not FENCE_RE.match(lines[index])):
                index += 1
        blocks.append(Block(start, index, "\n".join(lines[start:index])))
    return blocks


@dataclass(frozen=True)
class FileBlocks:
    """One tier file read as blocks, with what each bound would move out of it."""

    file: KnowledgeFile
    blocks: tuple[Block, ...]

    @classmethod
    def of(cls, file: KnowledgeFile) -> FileBlocks:
        body_start = len(file.lines) - len(file.body_lines)
        return cls(file, tuple(body_blocks(file.lines, body_start)))

    def block_bytes(self) -> int:
        return sum(self._bytes(block) for block in self.blocks)

    def _bytes(self, block: Block) -> int:
        return sum(byte_len(line) for line in self._raw_lines[block.start:block.end])

    @cached_property
    def _raw_lines(self) -> list[str]:
        return lines_with_endings(self.file.text)

    def movable(self, bound: str) -> list[Block]:
        return [block for block in self.blocks if block.movable(bound)]

    def moved_bytes(self, bound: str) -> int:
        raw = self._raw_lines
        return sum(byte_len(line) for block in self.movable(bound) for line in raw[block.start:block.end])

    def without(self, bound: str) -> bytes:
        """The file's bytes with the bound's movable blocks taken out (every other line kept)."""
        drop: set[int] = set()
        for block in self.movable(bound):
            drop.update(range(block.start, block.end))
        raw = self._raw_lines
        return "".join(line for number, line in enumerate(raw) if number not in drop).encode(
            "utf-8", "surrogateescape")
