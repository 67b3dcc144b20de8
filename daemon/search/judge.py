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
    MARK_CLOSE,
    MARK_OPEN,
    MARKED_RE,
    MIN_COVERAGE,
    MIN_COVERAGE_TASK,
    NEGLIGIBLE_IDF,
    Hit,
    Terms,
    doc_count,
    fused,
    idf,
    match_expression,
    rare_mass,
    weights,
    words_of,
)


def presence(conn: sqlite3.Connection, words: tuple[str, ...], ids: list[int]) -> dict[int, set[str]]:
    """The query words each file (by id) holds in its text or its SPINE line: one look-up per
    word and table, over the given files only."""
    held: dict[int, set[str]] = {doc_id: set() for doc_id in ids}
    marks = ",".join("?" * len(ids))
    for word in words:
        for table in ("body_fts", "spine_fts"):
            rows = conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})",
                                (f'"{word}"', *ids))
            for (doc_id,) in rows:
                held[int(doc_id)].add(word)
    return held


def with_families(conn: sqlite3.Connection, hits: list[Hit], terms: Terms) -> None:
    """Each file's words, and those the rest of its split family holds: a split child continues
    its parent, so the family is judged as the one file it was."""
    ids = [hit.doc_id for hit in hits]
    marks = ",".join("?" * len(ids))
    members: dict[str, list[int]] = {}
    for doc_id, family in conn.execute(
            "SELECT DISTINCT d.id, d.family FROM docs d JOIN docs h ON d.family = h.family AND d.status = h.status "
            f"WHERE h.id IN ({marks})", ids):
        members.setdefault(str(family), []).append(int(doc_id))
    everyone = sorted({doc_id for group in members.values() for doc_id in group} | set(ids))
    held = presence(conn, terms.words, everyone)
    family_of = {doc_id: family for family, group in members.items() for doc_id in group}
    for hit in hits:
        hit.own = held.get(hit.doc_id, set())
        group = members.get(family_of.get(hit.doc_id, ""), [])
        hit.family = set().union(*(held.get(m, set()) for m in group)) - hit.own


def _marked_words(texts: tuple[str, ...], names: tuple[str, ...], wanted: set[str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name, text in zip(names, texts):
        if text and MARK_OPEN in text:
            words = {w for span in MARKED_RE.findall(text) for w in words_of(span)} & wanted
            if words:
                found[FIELD_NAMES[name]] = words
    return found


def describe(conn: sqlite3.Connection, hit: Hit, terms: Terms) -> None:
    """Which fields matched which words, and a snippet (for the files answered)."""
    expression, wanted = match_expression(terms), set(terms.words)
    marks = ", ".join(f"highlight(body_fts, {i}, '{MARK_OPEN}', '{MARK_CLOSE}')" for i in range(len(BODY_COLUMNS)))
    row = conn.execute(f"SELECT {marks}, snippet(body_fts, -1, '[', ']', '…', 16) FROM body_fts "
                       "WHERE body_fts MATCH ? AND rowid = ?", (expression, hit.doc_id)).fetchone()
    if row is not None:
        hit.matched.update(_marked_words(tuple(row[:-1]), BODY_COLUMNS, wanted))
        hit.snippet = " ".join(str(row[-1]).split())
    marks = ", ".join(f"highlight(spine_fts, {i}, '{MARK_OPEN}', '{MARK_CLOSE}')" for i in range(len(SPINE_COLUMNS)))
    row = conn.execute(f"SELECT {marks} FROM spine_fts WHERE spine_fts MATCH ? AND rowid = ?",
                       (expression, hit.doc_id)).fetchone()
    if row is not None:
        hit.matched.update(_marked_words(tuple(row), SPINE_COLUMNS, wanted))
    if hit.family:
        hit.matched["split family"] = set(hit.family)


def search(conn: sqlite3.Connection, terms: Terms, k: int, archived: bool,
           task: bool = False) -> tuple[list[Hit], Hit | None]:
    """The files that answer the query (at most ``k``, best first), and the best file that did
    not pass the threshold (to say how near the miss was).

    A ``task`` (bundle) is prose: its words that no file holds are left out of the weighing,
    a file needs a third of the rest, and at least one rare word's weight."""
    total_docs = doc_count(conn)
    weight = weights(conn, terms, total_docs)
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
        with_families(conn, hits, terms)
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
