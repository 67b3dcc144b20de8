"""Which ranked files answer a query: the words each holds (with its split family), the share
of the query's weight that makes, and, for the files answered, the fields that matched and a
snippet. Files holding more of the query's weight come first; the fused rank orders the rest."""

from __future__ import annotations

import sqlite3

from .presence import Presence
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


def with_families(presence: Presence, hits: list[Hit], terms: Terms, df: dict[str, int]) -> None:
    """Each file's words, and those the rest of its split family holds: a split child continues
    its parent, so the family is judged as the one file it was."""
    known = {w for w in terms.words if df.get(w, 0)}
    for hit in hits:
        hit.own = presence.words_of_doc(hit.doc_id) & known
        missing = known - hit.own
        if not missing:
            continue
        members = [int(r[0]) for r in presence.conn.execute(
            "SELECT id FROM docs WHERE family = (SELECT family FROM docs WHERE id = ?) AND id != ? AND status = ?",
            (hit.doc_id, hit.doc_id, hit.status))]
        hit.family = {w for w in missing if any(w in presence.words_of_doc(m) for m in members)}


def describe(presence: Presence, hit: Hit, terms: Terms) -> None:
    """Which fields matched (from the words each field holds), and a snippet, for the files
    answered."""
    wanted = hit.own or set(terms.words)
    for column, held in presence.fields(hit.doc_id).items():
        if held & wanted:
            hit.matched[FIELD_NAMES[column]] = set()
    words = " OR ".join(f'"{w}"' for w in sorted(hit.own)) or match_expression(terms)
    row = presence.conn.execute("SELECT snippet(body_fts, -1, '[', ']', '…', 16) FROM body_fts "
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
    presence = Presence(conn, terms.words, df)
    if hits:
        with_families(presence, hits, terms, df)
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
        describe(presence, hit, terms)
    return answers[:k], nearest
