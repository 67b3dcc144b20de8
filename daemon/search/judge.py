"""Which ranked files answer a query: the words each holds (with its split family), the share
of the query's weight that makes, and, for the files answered, the fields that matched and a
snippet. Files holding more of the query's weight come first; the fused rank orders the rest."""

from __future__ import annotations

import sqlite3

from .index import BODY_COLUMNS, SPINE_COLUMNS
from .query import (
    COVERAGE_STEP,
    FIELD_NAMES,
    JUDGED_BEYOND_K,
    MIN_COVERAGE,
    MIN_COVERAGE_TASK,
    NEGLIGIBLE_IDF,
    Hit,
    Terms,
    doc_count,
    frequencies,
    fused,
    idf,
    match_expression,
    rare_mass,
    weights,
)


FEW = 512  # a word held by at most this many files is looked up once for all; others per file


class Presence:
    """Which files hold which query words, looked up as cheaply as each word allows: the files
    holding a rare word in one query, a common word file by file (a seek in its list)."""

    def __init__(self, conn: sqlite3.Connection, df: dict[str, int]) -> None:
        self.conn, self.df = conn, df
        self._holders: dict[str, set[int]] = {}

    def _all_holders(self, word: str) -> set[int]:
        if word not in self._holders:
            found: set[int] = set()
            for table in ("body_fts", "spine_fts"):
                found.update(int(r[0]) for r in self.conn.execute(
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (f'"{word}"',)))
            self._holders[word] = found
        return self._holders[word]

    def holds(self, doc_id: int, word: str) -> bool:
        if self.df.get(word, 0) == 0:
            return False
        if self.df[word] <= FEW:
            return doc_id in self._all_holders(word)
        return any(self.conn.execute(f"SELECT 1 FROM {table} WHERE {table} MATCH ? AND rowid = ?",
                                     (f'"{word}"', doc_id)).fetchone() for table in ("body_fts", "spine_fts"))


def with_families(conn: sqlite3.Connection, hits: list[Hit], terms: Terms, df: dict[str, int]) -> None:
    """Each file's words, and those the rest of its split family holds: a split child continues
    its parent, so the family is judged as the one file it was."""
    presence = Presence(conn, df)
    for hit in hits:
        hit.own = {w for w in terms.words if presence.holds(hit.doc_id, w)}
        missing = [w for w in terms.words if w not in hit.own and df.get(w, 0)]
        if not missing:
            continue
        members = [int(r[0]) for r in conn.execute(
            "SELECT id FROM docs WHERE family = (SELECT family FROM docs WHERE id = ?) AND id != ? AND status = ?",
            (hit.doc_id, hit.doc_id, hit.status))]
        hit.family = {w for w in missing if any(presence.holds(m, w) for m in members)}


def describe(conn: sqlite3.Connection, hit: Hit, terms: Terms) -> None:
    """Which fields matched (a column filter per field, a seek each), and a snippet, for the
    files answered."""
    words = " OR ".join(f'"{w}"' for w in sorted(hit.own)) or match_expression(terms)
    for table, columns in (("body_fts", BODY_COLUMNS), ("spine_fts", SPINE_COLUMNS)):
        for column in columns:
            if conn.execute(f"SELECT 1 FROM {table} WHERE {table} MATCH ? AND rowid = ?",
                            (f"{{{column}}} : ({words})", hit.doc_id)).fetchone():
                hit.matched[FIELD_NAMES[column]] = set()
    row = conn.execute("SELECT snippet(body_fts, -1, '[', ']', '…', 16) FROM body_fts "
                       "WHERE body_fts MATCH ? AND rowid = ?", (words, hit.doc_id)).fetchone()
    if row is not None:
        hit.snippet = " ".join(str(row[0]).split())
    if hit.family:
        hit.matched["split family"] = set(hit.family)


def search(conn: sqlite3.Connection, terms: Terms, k: int, archived: bool,
           task: bool = False) -> tuple[list[Hit], Hit | None]:
    """The files that answer the query (at most ``k``, best first), and the best file that did
    not pass the threshold (to say how near the miss was).

    A ``task`` (bundle) is prose: its words that no file holds are left out of the weighing,
    a file needs a third of the rest, and at least one rare word's weight."""
    total_docs = doc_count(conn)
    df = frequencies(conn, terms)
    weight = weights(df, total_docs)
    if task:
        absent = idf(total_docs, 0)
        weight = {w: v for w, v in weight.items() if v < absent} or weight
    needed = MIN_COVERAGE_TASK if task else MIN_COVERAGE
    rare_weight = rare_mass(total_docs)
    floor = min(rare_weight, sum(weight.values()))
    rare = tuple(w for w in terms.words if weight.get(w, 0.0) >= rare_weight)
    telling = Terms(tuple(w for w in terms.words if weight.get(w, 0.0) >= NEGLIGIBLE_IDF), False)
    ranked = fused(conn, terms, archived, rare, telling if telling.words else None)[: k + JUDGED_BEYOND_K]
    marks = ",".join("?" * len(ranked))
    known = {int(i): (str(p), str(st)) for i, p, st in
             conn.execute(f"SELECT id, path, status FROM docs WHERE id IN ({marks})", [i for i, _ in ranked])}
    hits = [Hit(doc_id, *known[doc_id], score) for doc_id, score in ranked]
    if hits:
        with_families(conn, hits, terms, df)
    total = sum(weight.values()) or 1.0
    answers: list[Hit] = []
    nearest: Hit | None = None
    for hit in hits:
        mass = sum(weight.get(w, 0.0) for w in hit.words)
        hit.coverage = mass / total
        if hit.coverage >= needed and mass >= floor - 1e-9:
            answers.append(hit)
        elif nearest is None or hit.coverage > nearest.coverage:
            nearest = hit
    answers.sort(key=lambda hit: (-round(hit.coverage / COVERAGE_STEP), -hit.score))
    for hit in answers[:k]:
        describe(conn, hit, terms)
    return answers[:k], nearest
