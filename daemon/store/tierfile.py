"""Knowledge files: frontmatter, activity stamps, markers, protected blocks (STORE-FORMAT.md 1.4).

The same reading applies to tier files, archived files and evidence twins; each is a
``KnowledgeFile`` over its raw bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from .lazy import cached
from .text import (
    decode,
    dominant_ending,
    encode,
    escape_free_text,
    lines_with_endings,
    sha256_hex,
    sha256_norm_hex,
    split_lines,
    trim,
)

STAMP_IN_FILE_RE = re.compile(r"last_(?:validated|updated): *([0-9]{4}-[0-9]{2}-[0-9]{2})")
# Searched over whole texts: like grep, a marker never spans a line break.
NON_NEGOTIABLE_RE = re.compile(r"\[NON-NEGOTIABLE[^\]\n]*\]")
DIRECTIVE_RE = re.compile(r"\[DIRECTIVE[^\]\n]*\]")
# Protected markers plus the retrieval markers of Step 1d: lines that must never be lost.
MARKER_RE = re.compile(
    r"\[(?:NON-NEGOTIABLE|DIRECTIVE|UPDATED|DEPRECATED|CORRECTED|IMPORTANT|CONTEXT|PROVISIONAL)[^\]]*\]"
)
HEADING_RE = re.compile(r"^(#+) ")
CONTINUATION_RE = re.compile(r"^[ \t]+[^ \t]")
FENCE = "---"


@dataclass(frozen=True)
class Frontmatter:
    """The lines between the opening ``---`` and the next ``---`` (or the end of the file)."""

    lines: tuple[str, ...]
    closed: bool

    def value(self, key: str) -> str | None:
        """The checker's ``fm_value``: first ``key:`` line, key and following blanks removed.

        No quote handling and no trailing-space trim, exactly like the reference parser.
        """
        if ":" in key:
            prefix = key + ":"
            return next((line[len(prefix):].lstrip(" \t") for line in self.lines if line.startswith(prefix)), None)
        return self._first_values.get(key)

    @cached_property
    def _first_values(self) -> dict[str, str]:
        # A line starts with ``key:`` exactly when the text before its first colon is ``key``.
        values: dict[str, str] = {}
        for line in self.lines:
            key, colon, value = line.partition(":")
            if colon and key not in values:
                values[key] = value.lstrip(" \t")
        return values

    def has(self, key: str) -> bool:
        return self.value(key) is not None


NO_FRONTMATTER = Frontmatter(lines=(), closed=False)


def parse_frontmatter(lines: list[str]) -> tuple[Frontmatter | None, int]:
    """Frontmatter (or None) and the index of the first body line."""
    if not lines or lines[0] != FENCE:
        return None, 0
    for index in range(1, len(lines)):
        if lines[index] == FENCE:
            return Frontmatter(tuple(lines[1:index]), closed=True), index + 1
    return Frontmatter(tuple(lines[1:]), closed=False), len(lines)


def parse_inline_list(value: str) -> list[str] | None:
    """Items of ``[a.md, b.md]``; None when the value is not an inline list."""
    if len(value) < 2 or not (value.startswith("[") and value.endswith("]")):
        return None
    items = (item.strip(" \t") for item in value[1:-1].split(","))
    return [item for item in items if item]


def marked_blocks(lines: list[str], marker: re.Pattern[str] = MARKER_RE) -> list[list[int]]:
    """The line indexes of each block ``marker`` marks, in order: a marked heading with its
    section, which runs to the next heading of equal or higher level; a marked ``- `` bullet with
    its indented continuation lines; any other marked line alone (STORE-FORMAT.md 1.4, 3.5 item 9).
    """
    blocks: list[list[int]] = []
    section_level = 0
    in_block = False
    for index, line in enumerate(lines):
        heading = HEADING_RE.match(line)
        if heading:
            level = len(heading.group(1))
            if section_level and level <= section_level:
                section_level = 0
            if marker.search(line):
                section_level, in_block = level, False
                blocks.append([index])
                continue
        if section_level or (in_block and CONTINUATION_RE.match(line)):
            blocks[-1].append(index)
            continue
        in_block = False
        if marker.search(line):
            blocks.append([index])
            in_block = line.startswith("- ")
    return blocks


def protected_line_indexes(lines: list[str]) -> list[int]:
    """Indexes of the lines that belong to a marked heading section, a marked bullet block, or
    carry a marker (any of MARKER_RE's)."""
    return [index for block in marked_blocks(lines) for index in block]


def select_protected_lines(lines: list[str]) -> list[str]:
    """The protected and marker lines themselves (see ``protected_line_indexes``)."""
    return [lines[index] for index in protected_line_indexes(lines)]


# The facts below are read from the raw bytes, each when first asked for: a check needs line
# counts and a few frontmatter keys, the catalog a heading, the lifecycle the markers. Bytes
# patterns give the same answers as the text ones: every byte they name is ASCII, and a
# decoded non-ASCII byte is never one of them.
# The same matches as STAMP_IN_FILE_RE, found from their '_' (a rarer byte than 'l', so the regex
# engine's scan for where a match may start stops less often) with "last" checked behind it.
STAMP_IN_BYTES_RE = re.compile(rb"_(?<=last_)(?:validated|updated): *([0-9]{4}-[0-9]{2}-[0-9]{2})")
NON_NEGOTIABLE_BYTES_RE = re.compile(NON_NEGOTIABLE_RE.pattern.encode())
DIRECTIVE_BYTES_RE = re.compile(DIRECTIVE_RE.pattern.encode())
FENCE_BYTES = FENCE.encode()


def _without_cr(raw: bytes) -> bytes:
    """The bytes the CR-blind views read (``tr -d '\\r'``)."""
    return raw.replace(b"\r", b"") if b"\r" in raw else raw


def _cr_blind_text_bytes(raw: bytes) -> tuple[bytes, str]:
    """CR-free bytes that decode (with the error mode returned) to exactly the text the checker
    reads: the file decoded first, then its CRs dropped. A CR inside a multi-byte sequence must
    not join its halves into a character, so with CRs present the text takes a round trip."""
    if b"\r" not in raw:
        return raw, "surrogateescape"
    return decode(raw).replace("\r", "").encode("utf-8", "surrogatepass"), "surrogatepass"


def _count_lines(flat: bytes) -> int:
    return flat.count(b"\n") + (1 if flat and not flat.endswith(b"\n") else 0)


def _closing_fence(flat: bytes) -> int | None:
    """Offset of the first line exactly ``---`` after line 1, or None."""
    second = len(FENCE_BYTES) + 1
    if flat.startswith(FENCE_BYTES, second) and flat[second + 3:second + 4] in (b"", b"\n"):
        return second
    inside = flat.find(b"\n" + FENCE_BYTES + b"\n", second)
    if inside >= 0:
        return inside + 1
    if flat.endswith(b"\n" + FENCE_BYTES) and len(flat) - len(FENCE_BYTES) > second:
        return len(flat) - len(FENCE_BYTES)
    return None


def _frontmatter_block(flat: bytes, errors: str) -> tuple[str | None, bool]:
    """The text from the line break that ends the opening ``---`` line up to the closing line
    (to the end of the file when none closes it), or None without an opening line; and whether
    a line closes it. Kept with its first line break, so that ``"\\nkey:"`` finds a key's first line."""
    if not (flat == FENCE_BYTES or flat.startswith(FENCE_BYTES + b"\n")):
        return None, False
    fence = _closing_fence(flat)
    return flat[len(FENCE_BYTES):fence if fence is not None else len(flat)].decode("utf-8", errors), \
        fence is not None


def _first_heading(raw: bytes) -> str | None:
    flat, errors = _cr_blind_text_bytes(raw)
    if flat.startswith(b"#"):
        start = 0
    else:
        start = flat.find(b"\n#") + 1
        if start == 0:
            return None
    end = flat.find(b"\n", start)
    return flat[start:end if end >= 0 else len(flat)].decode("utf-8", errors)


def _starts_a_line(flat: bytes, prefix: bytes) -> int:
    """How many lines start with ``prefix`` (a multiline ``^prefix`` count, without the regex)."""
    return flat.startswith(prefix) + flat.count(b"\n" + prefix)


class KnowledgeFile:
    """One Markdown file of the store, read as raw bytes."""

    def __init__(self, path: str, raw: bytes) -> None:
        self.path = path
        self.raw = raw

    @property
    def text(self) -> str:
        # Decoded on demand and not kept: a 10,000-file store would otherwise hold every file
        # three times (bytes, text, lines). The few facts the checks need are cached one by one.
        return decode(self.raw)

    @cached
    def lines(self) -> list[str]:
        return split_lines(self.text)

    @cached
    def _block(self) -> tuple[str | None, bool]:
        # What a check reads of the frontmatter is its text; the line tuple is made only if asked.
        flat = self._flat
        if flat is self.raw:  # no CR: the bytes decode to the checker's text as they are
            return _frontmatter_block(flat, "surrogateescape")
        return _frontmatter_block(*_cr_blind_text_bytes(self.raw))

    @cached
    def _frontmatter(self) -> Frontmatter | None:
        text, closed = self._block
        if text is None:
            return None
        lines = text[1:].split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return Frontmatter(tuple(lines), closed)

    @cached
    def _flat(self) -> bytes:
        """The bytes the CR-blind views read (``tr -d '\\r'``), made once per file."""
        return _without_cr(self.raw)

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def line_count(self) -> int:
        return self._line_count

    @property
    def frontmatter(self) -> Frontmatter:
        found = self._frontmatter
        return found if found is not None else NO_FRONTMATTER

    @property
    def has_frontmatter(self) -> bool:
        return self._block[0] is not None

    @property
    def frontmatter_unclosed(self) -> bool:
        """Opened by ``---`` but never closed: the whole file reads as frontmatter."""
        text, closed = self._block
        return text is not None and not closed

    @property
    def body_lines(self) -> list[str]:
        found = self._frontmatter
        start = len(found.lines) + (2 if found.closed else 1) if found is not None else 0
        return self.lines[start:]

    def fm(self, key: str) -> str | None:
        """``frontmatter.value(key)``, found in the block's text: a check asks a few keys of each
        file, most of them absent, and one search each costs less than reading every line."""
        block = self._block[0] or ""
        start = block.find("\n" + key + ":")
        if start < 0:
            return None
        start += len(key) + 2
        end = block.find("\n", start)
        return block[start:end if end >= 0 else len(block)].lstrip(" \t")

    @cached
    def _line_count(self) -> int:
        return _count_lines(self._flat)

    @cached
    def newest_stamp(self) -> str | None:
        """The activity stamp: the newest ``last_validated:``/``last_updated:`` date anywhere."""
        stamps = STAMP_IN_BYTES_RE.findall(self._flat)
        return decode(max(stamps)) if stamps else None

    @property
    def pinned(self) -> bool:
        """Pinned as the catalog and C2 read it: the frontmatter value is exactly ``pinned``."""
        return self.fm("lifecycle") == "pinned"

    @cached
    def looks_pinned(self) -> bool:
        """Pinned by any reading (a trailing blank, or a ``lifecycle: pinned`` line anywhere):
        the lifecycle never moves such a file, since C4 would count the move as a loss."""
        return self.pinned or _starts_a_line(self._flat, b"lifecycle: pinned") > 0

    @property
    def oversize_reason(self) -> str | None:
        return self.fm("oversize")

    @property
    def split_from(self) -> str | None:
        return self.fm("split_from")

    @cached
    def scope(self) -> str:
        """The catalog's second column: ``scope:``, else the first heading, else ``(no scope)``."""
        value = self.fm("scope") or trim((_first_heading(self.raw) or "").lstrip("#"))
        return escape_free_text(value) if value else "(no scope)"

    @cached
    def has_non_negotiable(self) -> bool:
        return b"[NON-NEGOTIABLE" in self.raw and NON_NEGOTIABLE_BYTES_RE.search(self.raw) is not None

    @cached
    def directive_count(self) -> int:
        return len(DIRECTIVE_BYTES_RE.findall(self.raw)) if b"[DIRECTIVE" in self.raw else 0

    @cached
    def sha256(self) -> str:
        return sha256_hex(self.raw)

    @cached
    def sha256_norm(self) -> str:
        return sha256_norm_hex(self.raw)

    @cached
    def protected_lines(self) -> list[str]:
        return select_protected_lines(self.lines)

    def dash_entry_count(self) -> int:
        """Lines starting ``- ``: the catalog's entry count for an evidence twin."""
        return _starts_a_line(self._flat, b"- ")


# -- edits (pure: bytes in, bytes out; every other line and ending kept) --------------------

INDEX_DETAIL = "## Index detail (moved from SPINE {date})"


def set_frontmatter(raw: bytes, updates: dict[str, str], drop: tuple[str, ...]) -> bytes:
    """Set keys in (or add) the frontmatter, drop others; every other line and ending kept."""
    text = decode(raw)
    ending = dominant_ending(text)
    lines = lines_with_endings(text)
    clean = [line.rstrip("\r\n") for line in lines]
    found, body_start = parse_frontmatter([c.replace("\r", "") for c in clean])
    if found is None or not found.closed:
        block = "---" + ending + "".join(f"{k}: {v}{ending}" for k, v in updates.items()) + "---" + ending
        return encode(block + text)
    head = lines[1:body_start - 1]
    kept: list[str] = []
    pending = dict(updates)
    for line in head:
        key = line.split(":", 1)[0]
        if key in drop:
            continue
        if key in pending and line.startswith(key + ":"):
            kept.append(f"{key}: {pending.pop(key)}{ending}")
            continue
        kept.append(line)
    kept += [f"{k}: {v}{ending}" for k, v in pending.items()]
    return encode("".join([lines[0], *kept, *lines[body_start - 1:]]))


def append_index_detail(raw: bytes, hook: str, today: str) -> bytes:
    text = decode(raw)
    ending = dominant_ending(text)
    if text and not text.endswith("\n"):
        text += ending
    return encode(text + ending + INDEX_DETAIL.format(date=today) + ending + ending + hook + ending)


def append_index_details(raw: bytes, hooks: list[str], today: str) -> bytes:
    """One ``## Index detail`` section holding several whole hooks, a blank line between them."""
    text = decode(raw)
    ending = dominant_ending(text)
    if text and not text.endswith("\n"):
        text += ending
    body = (ending + ending).join(hooks)
    return encode(text + ending + INDEX_DETAIL.format(date=today) + ending + ending + body + ending)
