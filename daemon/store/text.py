"""Text conventions shared by every store file (STORE-FORMAT.md 1.2).

Files are kept as raw bytes; text views decode with ``surrogateescape`` so that invalid UTF-8
survives a round trip and byte counts stay exact. Line views drop every CR, split on LF only
(never ``str.splitlines``, which also splits on form feeds and U+2028), and count a final line
without a newline as a line, the way ``tr -d '\\r' | grep -c ''`` does.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

ASCII_SPACE = " \t\r\n\v\f"  # the C locale's [[:space:]]; Unicode spaces are content
WORD_RE = re.compile(r"\w\w+")  # a word has two or more word characters


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def byte_len(text: str) -> int:
    return len(encode(text))


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` with CRs removed; a trailing newline does not start a new line."""
    if "\r" in text:  # replace would copy even a text without one
        text = text.replace("\r", "")
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def distinct_words(text: str) -> frozenset[str]:
    """The words of ``text``, lowercased: what a reader's search finds a line by, and what
    SPINE hooks are weighed by."""
    return _distinct_words_cached(text)


@lru_cache(maxsize=65536)  # a hook is weighed again and again while a SPINE is planned
def _distinct_words_cached(text: str) -> frozenset[str]:
    return frozenset(WORD_RE.findall(text.lower()))


def trim(s: str) -> str:
    return s.strip(ASCII_SPACE)


def rtrim(s: str) -> str:
    return s.rstrip(ASCII_SPACE)


def ltrim(s: str) -> str:
    return s.lstrip(ASCII_SPACE)


def sha256_hex(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def sha256_norm_hex(raw: bytes) -> str:
    """sha256 of the file with its frontmatter ``recall_count:`` line removed (STORE-FORMAT 1.7).

    Mirrors the reference awk: records are split on LF, CRs are kept, and every record is
    re-emitted with a LF, so a file without a final newline gains one.
    """
    records = raw.split(b"\n")
    if records[-1] == b"":
        records.pop()
    out: list[bytes] = []
    in_frontmatter = False
    for number, record in enumerate(records, start=1):
        is_fence = record in (b"---", b"---\r")
        if number == 1 and is_fence:
            in_frontmatter = True
        elif in_frontmatter and is_fence:
            in_frontmatter = False
        elif in_frontmatter and record.startswith(b"recall_count:"):
            continue
        out.append(record)
        out.append(b"\n")
    return hashlib.sha256(b"".join(out)).hexdigest()


def clip(s: str, limit: int) -> str:
    """The first ``limit`` bytes of ``s`` for a message, never cutting a UTF-8 character."""
    # The first ``limit`` characters hold at least the first ``limit`` bytes: encode only those.
    head = s[:limit]
    raw = encode(head)
    if len(raw) <= limit and len(head) == len(s):
        return s
    cut = raw[:limit]
    # Step back over continuation bytes so the clip ends on a character boundary.
    while cut and (cut[-1] & 0xC0) == 0x80:
        cut = cut[:-1]
    if cut and cut[-1] >= 0xC0:
        cut = cut[:-1]
    return decode(cut)


def escape_free_text(s: str) -> str:
    """Escape a bare ``|`` as ``\\|``; an already escaped ``\\|`` is kept."""
    out: list[str] = []
    previous = ""
    for ch in s:
        if ch == "|" and previous != "\\":
            out.append("\\|")
        else:
            out.append(ch)
        previous = ch
    return "".join(out)


def unescape_free_text(s: str) -> str:
    return s.replace("\\|", "|")


def split_segments(line: str) -> list[str]:
    """Split a ledger or catalog line on the literal `` | ``, from the left."""
    return line.split(" | ")


def field(line: str, key: str) -> str | None:
    """Value of the first `` | `` segment that starts with ``key: ``, trailing space trimmed."""
    prefix = key + ": "
    for segment in split_segments(line):
        if segment.startswith(prefix):
            return rtrim(segment[len(prefix):])
    return None


def lines_with_endings(text: str) -> list[str]:
    """Lines of ``text`` each keeping its own ending (LF, CRLF or none), split on LF only.

    Index i here is index i of ``split_lines(text)``: edits made on the CR-free view can be
    applied to these, so a writer keeps every line's ending as it was.
    """
    parts = text.split("\n")
    out = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def dominant_ending(text: str) -> str:
    """CRLF when most line breaks are CRLF, else LF: the ending for a line we add."""
    breaks = text.count("\n")
    return "\r\n" if breaks and text.count("\r\n") * 2 > breaks else "\n"


def replace_line_body(line_with_ending: str, body: str) -> str:
    """Swap a line's content and keep its ending."""
    if line_with_ending.endswith("\r\n"):
        return body + "\r\n"
    if line_with_ending.endswith("\n"):
        return body + "\n"
    return body


def whole_lines(raw: bytes) -> bytes:
    """``raw`` without a torn final line (one without a line break): a write that never
    finished, which no reader builds on."""
    return raw if not raw or raw.endswith(b"\n") else raw[: raw.rfind(b"\n") + 1]


# Control characters, tab and line breaks included, and the C1 controls: a printed name or
# text holding one must stay one line and must not steer the terminal.
_UNPRINTABLE = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F)}
_UNPRINTABLE.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})
_UNPRINTABLE.update({code: f"\\u{code:04x}" for code in range(0x80, 0xA0)})
_UNPRINTABLE.update({0xDC00 + byte: f"\\x{byte:02x}" for byte in range(0x80, 0x100)})  # invalid UTF-8 bytes


def shown(text: str | bytes) -> str:
    """A file name or a file's text as printed anywhere (plans, check reasons, notes, logs): one
    line, each control character, line break or invalid UTF-8 byte written as an escape."""
    if isinstance(text, bytes):
        text = decode(text)
    if text.isprintable() and text.isascii():
        return text
    return text.translate(_UNPRINTABLE)
