"""Paths written out in the text of a knowledge file (prose, frontmatter, anything). Pure.

The lifecycle lists a project file's prose referrers with it, and the health report counts
cross-references and the files "named by path in another file" with the same reading.
"""

from __future__ import annotations

import re

PATH_MENTION_RE = re.compile(r"[a-z]+/[^\s()\[\]`'\"<>|,;]+?\.md")
PATH_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-")


def path_mentions(text: str, directories: tuple[str, ...]) -> set[str]:
    """Paths under ``directories`` written out in ``text`` (a plain search first: it is fast)."""
    found: set[str] = set()
    for directory in directories:
        needle = directory + "/"
        at = text.find(needle)
        while at != -1:
            if at == 0 or text[at - 1] not in PATH_CHARS:
                match = PATH_MENTION_RE.match(text, at)
                if match:
                    found.add(match.group(0))
            at = text.find(needle, at + len(needle))
    return found


# The same reading over a file's bytes, for the walks over every tier file (check's broken
# cross-references at x100: decoding each file first cost a quarter of the walk). Whitespace
# ends a path as in the text form; the C1 separators \x1c-\x1f and a non-breaking space too.
_RAW_MENTION_RE = re.compile(rb"[a-z]+/(?:[^\s\x1c-\x1f()\[\]`'\"<>|,;\xc2]|\xc2(?!\xa0|\x85))+?\.md")
_RAW_PATH_CHARS = frozenset(ord(ch) for ch in PATH_CHARS)


def raw_path_mentions(raw: bytes, directories: tuple[str, ...]) -> set[str]:
    """path_mentions over the bytes (decoded as the store decodes them: stray bytes kept)."""
    found: set[str] = set()
    for directory in directories:
        needle = directory.encode("ascii") + b"/"
        at = raw.find(needle)
        while at != -1:
            if at == 0 or raw[at - 1] not in _RAW_PATH_CHARS:
                match = _RAW_MENTION_RE.match(raw, at)
                if match:
                    found.add(match.group(0).decode("utf-8", "surrogateescape"))
            at = raw.find(needle, at + len(needle))
    return found
