"""Git conflict markers: lines a failed merge writes, which are never knowledge.

Two rules. A commit or a push refuses a file holding a whole conflict as git writes it
(``has_conflict_markers``: opening, separator and closing marker in that order), so text that
only looks like one is still committed. A pass is stricter (``conflict_marker_lines``): an
opening (``<<<<<<<``) or closing (``>>>>>>>``) marker line outside a code fence is a marker
wherever it stands, alone or out of order, and a ``=======`` line is one in a file that also
holds such a line (alone, it is a Markdown heading underline). Every pass refuses a store whose
SPINE or tier files hold one: it would read them as entry text and move them on (into Index
detail, where no check sees them again), and the commit of a user's marked file stays refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .paths import SPINE, TIERS

OPENING, SEPARATOR, CLOSING = b"<<<<<<<", b"=======", b">>>>>>>"


def _is_edge(line: bytes) -> bool:
    return any(line == mark or line.startswith(mark + b" ") for mark in (OPENING, CLOSING))


def _unfenced(raw: bytes) -> Iterator[tuple[int, bytes]]:
    """Each line (CR stripped, 1-based) that is not inside a fenced code block."""
    fence: bytes | None = None
    for number, line in enumerate(raw.split(b"\n"), start=1):
        line = line.rstrip(b"\r")
        opener = line.lstrip()[:3]
        if opener in (b"```", b"~~~"):
            fence = opener if fence is None else (None if opener == fence else fence)
            continue
        if fence is None:
            yield number, line


def conflict_marker_lines(raw: bytes) -> list[int]:
    """The 1-based numbers of the marker lines in ``raw``, outside code fences (the pass rule)."""
    if OPENING not in raw and CLOSING not in raw:
        return []
    lines = list(_unfenced(raw))
    edges = [n for n, line in lines if _is_edge(line)]
    if not edges:
        return []
    return sorted(edges + [n for n, line in lines if line == SEPARATOR])


def has_conflict_markers(raw: bytes) -> bool:
    """Does ``raw`` hold a conflict as git writes it: an opening marker, a separator and a
    closing marker, in that order, each at the start of a line (the commit and push rule)?"""
    if OPENING not in raw:
        return False
    expect = 0  # 0: opening, 1: separator, 2: closing
    for line in raw.split(b"\n"):
        line = line.rstrip(b"\r")
        if expect == 0 and (line == OPENING or line.startswith(OPENING + b" ")):
            expect = 1
        elif expect == 1 and line == SEPARATOR:
            expect = 2
        elif expect == 2 and (line == CLOSING or line.startswith(CLOSING + b" ")):
            return True
    return False


def knowledge_texts(root: Path) -> Iterator[str]:
    """SPINE.md and every Markdown file under the tier folders, as store paths."""
    if (root / SPINE).is_file():
        yield SPINE
    for tier in TIERS:
        base = root / tier
        if not base.is_dir() or base.is_symlink():
            continue
        for path in sorted(base.rglob("*.md")):
            if path.is_file() and not path.is_symlink():
                yield path.relative_to(root).as_posix()


def marked_files(root: Path) -> list[tuple[str, int]]:
    """Each SPINE or tier file holding a marker line, with its first one's number."""
    found: list[tuple[str, int]] = []
    for relative in knowledge_texts(root):
        try:
            lines = conflict_marker_lines((root / relative).read_bytes())
        except OSError:
            continue  # unreadable files are refused elsewhere, by name
        if lines:
            found.append((relative, lines[0]))
    return found
