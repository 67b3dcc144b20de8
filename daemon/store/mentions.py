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
