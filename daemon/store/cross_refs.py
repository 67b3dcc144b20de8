"""Cross-references: paths under the tiers or archive/ written in a tier file's text, and where
each one resolves. Pure (over a snapshot).

How a reference resolves (the retrieval protocol, STORE-FORMAT.md 4.7, and the adoption rule,
1.9): a path that exists; else, for an active path P, archive/P (the file was archived); else
archive/legacy/<the path as written> or archive/legacy/archive/P, where migrate-store adopts a
pre-1.2 archive (the adopted path is the old path with archive/legacy/ in front, so it is
found from the old one; the format accepts an evidence twin the same way, 3.2). C4 forbids
rewriting the prose that names the old path: the old name keeps resolving by this rule, and the
migration's preview lists each such reference (docs/migration-links.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .mentions import raw_path_mentions
from .paths import LEGACY_PREFIX, TIERS, contained
from .snapshot import Snapshot


@dataclass(frozen=True)
class Reference:
    source: str  # the tier file whose text names it
    target: str  # the path as written
    kind: str  # active, archived, adopted or broken
    found_at: str | None  # where it resolves (None when broken)


def resolve(target: str, exists: Callable[[str], bool]) -> tuple[str, str | None]:
    """(kind, where) for a contained store path."""
    if exists(target):
        return ("archived" if target.startswith("archive/") else "active"), target
    candidates = [] if target.startswith("archive/") else [("archived", "archive/" + target)]
    if not target.startswith(LEGACY_PREFIX):
        candidates.append(("adopted", LEGACY_PREFIX + target))
        if not target.startswith("archive/"):
            candidates.append(("adopted", LEGACY_PREFIX + "archive/" + target))
    for kind, where in candidates:
        if exists(where):
            return kind, where
    return "broken", None


def references(snapshot: Snapshot) -> Iterator[Reference]:
    """Every (tier file, path it names) once, in path order."""
    # Many files name the same paths (x100: 54,000 references, far fewer targets): each target
    # is judged once (D10 and where it resolves), which halves the cost of this walk.
    judged: dict[str, tuple[str, str | None] | None] = {}
    directories = (*TIERS, "archive")
    for source in snapshot.tier_paths:
        for target in sorted(raw_path_mentions(snapshot.contents.get(source, b""), directories)):
            if target == source:
                continue
            if target not in judged:
                judged[target] = resolve(target, snapshot.exists) if contained(target, "store") else None
            verdict = judged[target]
            if verdict is not None:
                yield Reference(source, target, verdict[0], verdict[1])


def moved_references(before: Snapshot, after: Snapshot) -> list[str]:
    """The references a plan leaves naming a path that no longer exists as written, or as the
    archived copy readers look for: where each one then resolves, or that it breaks."""
    lines = []
    for ref in references(after):
        if ref.kind not in ("adopted", "broken"):
            continue
        was, _ = resolve(ref.target, before.exists)
        if was in ("adopted", "broken"):
            continue  # it did not resolve directly before either: not this plan's doing
        then = f"resolves to {ref.found_at} (the adopted file)" if ref.found_at else "will no longer resolve"
        lines.append(f"{ref.source} names {ref.target}, which moves: it {then}")
    return lines
