"""What the index holds of each knowledge file, read from bytes (pure: no I/O).

An active file is indexed with its title (scope and first heading), its headings, its body,
its ``## Index detail`` sections (the SPINE wording moved there by compaction) and its
evidence twin, plus its SPINE line and catalog row. An archived file is indexed the same way
and marked archived, with the date and hook its catalog row gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..store.catalog import Catalog
from ..store.paths import ARCHIVE_PREFIX, is_legacy
from ..store.spine import GROUP_LINK_RE, Spine
from ..store.text import field as row_field
from ..store.text import split_lines, split_segments, trim
from ..store.tierfile import HEADING_RE, KnowledgeFile, marked_blocks, parse_inline_list

BINDING_RE = re.compile(r"\[(?:NON-NEGOTIABLE|DIRECTIVE)[^\]\n]*\]")
INDEX_DETAIL = "## Index detail"
LINK_RE = re.compile(r"\[[^]]*\]\([^)]*\)")
ARCHIVED_DATE_RE = re.compile(r"^archived (\S+)")


def estimate_tokens(text: str) -> int:
    """The store format's own estimate (kb_tokens): characters / 4, rounded up."""
    return -(-len(text) // 4)


@dataclass
class Doc:
    path: str
    status: str  # "active" or "archived"
    title: str
    headings: str
    body: str
    detail: str
    evidence: str
    spine: str  # the pointer titles and hook, as a reader ranks them
    catalog: str
    spine_line: str  # the SPINE entry as written ("" when the file has none)
    catalog_row: str
    catalog_hook: str
    archived_on: str = ""
    split_from: str = ""
    pinned: bool = False
    read_with: list[str] = field(default_factory=list)
    binding: list[str] = field(default_factory=list)
    text: str = ""  # the whole file, as a bundle gives it


def spine_lines_by_path(raw: bytes | None) -> dict[str, str]:
    """Each pointed-at path's SPINE entry (the first entry that points at it)."""
    if raw is None:
        return {}
    found: dict[str, str] = {}
    for entry in Spine(raw).entries:
        if entry.is_catalog_line:
            continue
        for path in entry.pointers:
            found.setdefault(path, entry.joined)
    return found


def spine_search_text(entry: str) -> str:
    """The entry without its link syntax: titles and hook words."""
    titles = " ".join(title for title, _ in GROUP_LINK_RE.findall(entry))
    return f"{titles} {LINK_RE.sub(' ', entry)}".strip()


def catalog_rows(raw: bytes | None) -> Catalog | None:
    return Catalog(raw) if raw is not None else None


def binding_rules(lines: list[str]) -> list[str]:
    """[NON-NEGOTIABLE] and [DIRECTIVE] blocks: a marked heading's section, a marked bullet
    with its indented continuation lines, any other marked line alone."""
    return ["\n".join(lines[index] for index in block).rstrip() for block in marked_blocks(lines, BINDING_RE)]


def _split_body(lines: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(headings, body lines, index-detail lines)."""
    headings: list[str] = []
    body: list[str] = []
    detail: list[str] = []
    in_detail = False
    for line in lines:
        heading = HEADING_RE.match(line)
        if heading:
            if len(heading.group(1)) <= 2:
                in_detail = line.startswith(INDEX_DETAIL)
            if not in_detail:
                headings.append(line.lstrip("#").strip())
            continue
        (detail if in_detail else body).append(line)
    return headings, body, detail


def catalog_hook(row: str, archived: bool) -> tuple[str, str]:
    """(hook, archived date) from a catalog row: an active row's scope, an archived row's hook."""
    segments = split_segments(row) if row else []
    scope = trim(segments[1]) if len(segments) > 1 else ""
    if not archived:
        return scope, ""
    hook = row_field(row, "hook") or scope
    date = next((m.group(1) for m in map(ARCHIVED_DATE_RE.match, segments[2:]) if m), "")
    return hook, date


def _clean(text: str) -> str:
    """Text SQLite can hold: a byte that is not UTF-8 (kept as a surrogate by the store's
    models) becomes U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def make_doc(path: str, raw: bytes, evidence_raw: bytes | None, spine_line: str, catalog_row: str) -> Doc:
    doc = _make_doc(path, raw, evidence_raw, spine_line, catalog_row)
    for name, value in vars(doc).items():
        if isinstance(value, str):
            setattr(doc, name, _clean(value))
    doc.read_with = [_clean(item) for item in doc.read_with]
    doc.binding = [_clean(rule) for rule in doc.binding]
    return doc


def _make_doc(path: str, raw: bytes, evidence_raw: bytes | None, spine_line: str, catalog_row: str) -> Doc:
    archived = path.startswith(ARCHIVE_PREFIX)
    known = KnowledgeFile(path, raw)
    text = raw.decode("utf-8", "replace")
    lines = known.body_lines
    headings, body, detail = _split_body(lines)
    first = next((h for h in headings), "")
    scope = known.fm("scope") or ""
    evidence = ""
    if evidence_raw is not None:
        evidence = "\n".join(KnowledgeFile("evidence/" + path, evidence_raw).body_lines)
    hook, archived_on = catalog_hook(catalog_row, archived)
    if archived and not archived_on and is_legacy(path):
        archived_on = "legacy"
    read_with = parse_inline_list(known.fm("read_with") or "") or []
    return Doc(path=path, status="archived" if archived else "active", title=f"{scope} {first}".strip(),
               headings="\n".join(headings), body="\n".join(body), detail="\n".join(detail),
               evidence=evidence, spine=spine_search_text(spine_line),
               catalog=hook, spine_line=spine_line, catalog_row=catalog_row, catalog_hook=hook,
               archived_on=archived_on, split_from=known.split_from or "", pinned=known.pinned, read_with=read_with,
               binding=binding_rules(split_lines(text)), text=text)
