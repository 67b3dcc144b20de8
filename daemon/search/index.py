"""The search index's tables, and how they are brought up to date with the store.

SQLite FTS5 (in Python's standard library): two full-text tables over the same rows, one for
the file's own text (title, headings, body, index detail, evidence twin) and one for its SPINE
line and catalog hook, so that each is ranked on its own and the ranks can be fused. ``files``
records every knowledge file's stamp and sha256: an update reads only the files whose stamp
moved, and the fingerprint is computed from the hashes without reading anything again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Collection
from functools import cached_property
from pathlib import Path

from ..store.paths import ARCHIVE_PREFIX, CATALOG, EVIDENCE_PREFIX, LEDGER, SPINE, TIERS
from ..store.catalog import Catalog
from ..store.paths import is_legacy
from .documents import (
    Doc,
    catalog_hook,
    catalog_rows,
    estimate_tokens,
    make_doc,
    spine_lines_by_path,
    spine_search_text,
)
from .fingerprint import StoreState, content_digest, fingerprint_of

SCHEMA = "distilld-search/1"
TOKENIZER = "unicode61 remove_diacritics 2"
BODY_COLUMNS = ("title", "headings", "body", "detail", "evidence")
SPINE_COLUMNS = ("spine", "catalog")

DDL = f"""
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(path TEXT PRIMARY KEY, stamp TEXT NOT NULL, sha TEXT NOT NULL);
CREATE TABLE docs(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, status TEXT NOT NULL,
    spine_line TEXT NOT NULL, catalog_row TEXT NOT NULL, catalog_hook TEXT NOT NULL,
    archived_on TEXT NOT NULL, pinned INTEGER NOT NULL, read_with TEXT NOT NULL,
    binding TEXT NOT NULL, tokens INTEGER NOT NULL, sha TEXT NOT NULL,
    split_from TEXT NOT NULL DEFAULT '', family TEXT NOT NULL DEFAULT '');
CREATE INDEX docs_family ON docs(family);
CREATE VIRTUAL TABLE body_fts USING fts5({", ".join(BODY_COLUMNS)}, tokenize='{TOKENIZER}');
CREATE VIRTUAL TABLE spine_fts USING fts5({", ".join(SPINE_COLUMNS)}, tokenize='{TOKENIZER}');
CREATE VIRTUAL TABLE body_vocab USING fts5vocab(body_fts, 'row');
CREATE VIRTUAL TABLE spine_vocab USING fts5vocab(spine_fts, 'row');
"""


def is_doc_path(path: str) -> bool:
    """A file the index ranks: a tier file (not a pre-1.2 nested archive), or an archived file."""
    top = path.split("/", 1)[0]
    if top in TIERS:
        return "/archive/" not in path
    return path.startswith(ARCHIVE_PREFIX) and path != LEDGER and not path.endswith("/LEDGER.md")


def docs_of_evidence(path: str) -> tuple[str, str]:
    """The files an evidence twin may belong to: X while active, archive/X once archived."""
    twin_of = path[len(EVIDENCE_PREFIX):]
    return twin_of, ARCHIVE_PREFIX + twin_of


def create_schema(conn: sqlite3.Connection, root: Path) -> None:
    conn.executescript(DDL)
    conn.executemany("INSERT INTO meta VALUES (?, ?)",
                     [("schema", SCHEMA), ("store", str(root)), ("stamps_key", ""), ("fingerprint", ""),
                      ("head", ""), ("digest", "")])


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def _read(root: Path, path: str) -> bytes | None:
    try:
        with open(os.path.join(root, path), "rb", buffering=0) as handle:
            return handle.read()
    except OSError:
        return None  # gone or unreadable since the scan: not indexed; the next command sees it


class _Reader:
    """The bytes of this update, each file read once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[str, bytes | None] = {}

    def __call__(self, path: str) -> bytes | None:
        if path not in self.cache:
            self.cache[path] = _read(self.root, path)
        return self.cache[path]


def _write_doc(conn: sqlite3.Connection, doc: Doc, sha: str) -> None:
    row = conn.execute("SELECT id FROM docs WHERE path = ?", (doc.path,)).fetchone()
    values = (doc.status, doc.spine_line, doc.catalog_row, doc.catalog_hook, doc.archived_on, int(doc.pinned),
              json.dumps(doc.read_with), json.dumps(doc.binding), estimate_tokens(doc.text), sha, doc.split_from)
    if row is None:
        cursor = conn.execute("INSERT INTO docs(path, status, spine_line, catalog_row, catalog_hook, archived_on, "
                              "pinned, read_with, binding, tokens, sha, split_from) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                              (doc.path, *values))
        doc_id = cursor.lastrowid
    else:
        doc_id = row[0]
        conn.execute("UPDATE docs SET status=?, spine_line=?, catalog_row=?, catalog_hook=?, archived_on=?, "
                     "pinned=?, read_with=?, binding=?, tokens=?, sha=?, split_from=? WHERE id=?", (*values, doc_id))
        conn.execute("DELETE FROM body_fts WHERE rowid = ?", (doc_id,))
        conn.execute("DELETE FROM spine_fts WHERE rowid = ?", (doc_id,))
    conn.execute("INSERT INTO body_fts(rowid, title, headings, body, detail, evidence) VALUES (?,?,?,?,?,?)",
                 (doc_id, doc.title, doc.headings, doc.body, doc.detail, doc.evidence))
    conn.execute("INSERT INTO spine_fts(rowid, spine, catalog) VALUES (?,?,?)", (doc_id, doc.spine, doc.catalog))


def _delete_doc(conn: sqlite3.Connection, path: str) -> None:
    row = conn.execute("SELECT id FROM docs WHERE path = ?", (path,)).fetchone()
    if row is not None:
        conn.execute("DELETE FROM body_fts WHERE rowid = ?", (row[0],))
        conn.execute("DELETE FROM spine_fts WHERE rowid = ?", (row[0],))
        conn.execute("DELETE FROM docs WHERE id = ?", (row[0],))


def _recorded(conn: sqlite3.Connection, state: StoreState, previous: StoreState | None,
              indexed_key: str) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """The files rows to compare with ``state``, and the paths whose stamps may have moved.
    When the index was last stamped from ``previous`` (this process's last scan), only the
    paths whose stamps differ between the two scans are looked up."""
    if previous is None or previous.stamps_key != indexed_key:
        known = {p: (s, h) for p, s, h in conn.execute("SELECT path, stamp, sha FROM files")}
        return known, list(state.stamps)
    before, now = previous.stamps, state.stamps
    moved = [p for p, stamp in now.items() if before.get(p) != stamp]
    asked = [*moved, *(before.keys() - now.keys())]
    known = {}
    for start in range(0, len(asked), 500):
        part = asked[start:start + 500]
        known.update((p, (s, h)) for p, s, h in conn.execute(
            f"SELECT path, stamp, sha FROM files WHERE path IN ({','.join('?' * len(part))})", part))
    return known, moved


def update_index(conn: sqlite3.Connection, root: Path, state: StoreState,
                 previous: StoreState | None = None) -> int:
    """Bring the index in line with ``state`` (the store as just scanned), in one transaction;
    returns how many files were re-indexed. Only files whose stamp moved are read."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        indexed_key = read_meta(conn).get("stamps_key", "")
        if indexed_key == state.stamps_key:
            conn.execute("COMMIT")  # another process brought it up to date meanwhile
            return 0
        known, candidates = _recorded(conn, state, previous, indexed_key)
        read = _Reader(root)
        changed: set[str] = set(known) - set(state.stamps)
        for path in candidates:
            stamp = state.stamps[path]
            before = known.get(path)
            if before is not None and before[0] == stamp:
                continue
            raw = read(path)
            if raw is None:
                changed.add(path)
                conn.execute("DELETE FROM files WHERE path = ?", (path,))
                continue
            sha = hashlib.sha256(raw).hexdigest()
            conn.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?)", (path, stamp, sha))
            if before is None or before[1] != sha:
                changed.add(path)
        for path in set(known) - set(state.stamps):
            conn.execute("DELETE FROM files WHERE path = ?", (path,))
        hashes: dict[str, str] = dict(conn.execute("SELECT path, sha FROM files"))
        count = _reindex(conn, root, read, changed, hashes)
        _stamp_meta(conn, state, hashes)
        conn.execute("COMMIT")
        return count
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _reindex(conn: sqlite3.Connection, root: Path, read: _Reader, changed: set[str], hashes: dict[str, str]) -> int:
    present = hashes.keys()  # the files as recorded by this update
    targets = {p for p in changed if is_doc_path(p)}
    for path in changed:
        if path.startswith(EVIDENCE_PREFIX):
            targets.update(p for p in docs_of_evidence(path) if p in present)
    index_files_changed = bool({SPINE, CATALOG} & changed)
    lookups = _Lookups(read, present)
    count, families_moved = 0, False
    for path in sorted(targets):
        raw = read(path) if path in present else None
        old = conn.execute("SELECT spine_line, catalog_row, split_from FROM docs WHERE path = ?", (path,)).fetchone()
        if raw is None:
            _delete_doc(conn, path)
            families_moved = True
            continue
        sha = hashes[path]
        twin = EVIDENCE_PREFIX + (path[len(ARCHIVE_PREFIX):] if path.startswith(ARCHIVE_PREFIX) else path)
        evidence = read(twin) if twin in present else None
        if old is not None and not index_files_changed:  # its SPINE line and catalog row are as indexed
            line, row = str(old[0]), str(old[1])
        else:
            line, row = lookups.spine_line(path), lookups.catalog_row(path)
        doc = make_doc(path, raw, evidence, line, row)
        _write_doc(conn, doc, str(sha))
        families_moved = families_moved or old is None or str(old[2]) != doc.split_from
        count += 1
    if index_files_changed:  # SPINE lines and catalog rows may have moved for any file
        _respine(conn, lookups.spine, lookups.catalog, targets)
    if families_moved:
        _set_families(conn)
    return count


class _Lookups:
    """SPINE.md and CATALOG.md, parsed only when a file's line or row must be looked up."""

    def __init__(self, read: _Reader, present: Collection[str]) -> None:
        self._read, self._present = read, present

    @cached_property
    def spine(self) -> dict[str, str]:
        return spine_lines_by_path(self._read(SPINE) if SPINE in self._present else None)

    @cached_property
    def catalog(self) -> Catalog | None:
        return catalog_rows(self._read(CATALOG) if CATALOG in self._present else None)

    def spine_line(self, path: str) -> str:
        return self.spine.get(path, "")

    def catalog_row(self, path: str) -> str:
        return (self.catalog.row_for(path) if self.catalog is not None else None) or ""


def _respine(conn: sqlite3.Connection, spine: dict[str, str], catalog: Catalog | None, done: set[str]) -> None:
    """Every other file's SPINE line and catalog row, rewritten where they changed: its own
    text is as indexed, so nothing of it is read again."""
    rows = conn.execute("SELECT id, path, status, spine_line, catalog_row FROM docs").fetchall()
    for doc_id, path, status, old_line, old_row in rows:
        if path in done:
            continue
        line = spine.get(path, "")
        row = (catalog.row_for(path) if catalog is not None else None) or ""
        if line == old_line and row == old_row:
            continue
        hook, archived_on = catalog_hook(row, status == "archived")
        if status == "archived" and not archived_on and is_legacy(path):
            archived_on = "legacy"
        conn.execute("UPDATE docs SET spine_line=?, catalog_row=?, catalog_hook=?, archived_on=? WHERE id=?",
                     (line, row, hook, archived_on, doc_id))
        conn.execute("DELETE FROM spine_fts WHERE rowid = ?", (doc_id,))
        conn.execute("INSERT INTO spine_fts(rowid, spine, catalog) VALUES (?,?,?)",
                     (doc_id, spine_search_text(line), hook))


def _stamp_meta(conn: sqlite3.Connection, state: StoreState, hashes: dict[str, str]) -> None:
    digest = content_digest(hashes)
    values = {"stamps_key": state.stamps_key, "head": state.head, "digest": digest,
              "fingerprint": fingerprint_of(state.head, digest)}
    conn.executemany("UPDATE meta SET value = ? WHERE key = ?", [(v, k) for k, v in values.items()])


def _set_families(conn: sqlite3.Connection) -> None:
    """Each file's split family (the file its split_from chain starts at): a split child
    continues its parent, so a query is judged against the family's words together."""
    parent = {str(p): str(s) for p, s in conn.execute("SELECT path, split_from FROM docs")}
    for path, old in conn.execute("SELECT path, family FROM docs").fetchall():
        root, seen = path, {path}
        while parent.get(root) and parent[root] in parent and parent[root] not in seen:
            root = parent[root]
            seen.add(root)
        if root != old:
            conn.execute("UPDATE docs SET family = ? WHERE path = ?", (root, path))
