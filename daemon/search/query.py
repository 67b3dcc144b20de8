"""A query made safe, ranked by fused SPINE-line and body ranks, and judged found or not.

* Safe: the query is cut into plain words (letters and digits, as the index's tokenizer cuts
  text) and every word is quoted, so FTS5 syntax in it (``"``, ``*``, ``NEAR(``, ``AND``, a lone
  ``-``) is only ever text to look for.
* Ranked: BM25 over the files' own text, and BM25 over their SPINE lines and catalog hooks,
  each gives a rank; the ranks are fused by reciprocal rank fusion, score = sum of w / (K + rank).
* Judged (search/judge.py): a file is an answer only when the query words it holds carry at least half of the
  query's weight, each word weighted by its IDF in this store (a word no file holds weighs the
  most), and at least as much as one word held by fewer than one file in eight. Below that the
  answer is an honest not-found, never a weak guess.
"""

from __future__ import annotations

import math
import re
import sqlite3
import unicodedata
from dataclasses import dataclass, field

from ..errors import DistilldError

MAX_QUERY_BYTES = 8192
MAX_TERMS = 64
MAX_K = 50
RRF_K = 60
BODY_WEIGHT, SPINE_WEIGHT = 1.0, 0.6
BODY_BM25 = (4.0, 2.0, 1.0, 0.5, 0.5)  # title, headings, body, index detail, evidence
SPINE_BM25 = (1.0, 0.6)  # SPINE line, catalog hook
JUDGED_BEYOND_K = 10  # candidates past k looked at before the answer is "nothing more"
DEPTH = 50  # how deep each ranking is read before fusion
FETCHED = 2 * DEPTH  # how many FTS5 ranks alone before the status filter and the path tie-break
MIN_COVERAGE = 0.5
MIN_COVERAGE_TASK = 1 / 3
COVERAGE_STEP = 0.1
NEGLIGIBLE_IDF = 0.5  # words nearly every file holds: left out of the rankings (they rank nothing)
RARE_SHARE = 8  # "a word held by fewer than one file in eight"
TOKEN_RE = re.compile(r"[^\W_]+")
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"
MARKED_RE = re.compile(f"{MARK_OPEN}([^{MARK_CLOSE}]*){MARK_CLOSE}")
FIELD_NAMES = {"title": "title", "headings": "headings", "body": "body", "detail": "index detail",
               "evidence": "evidence", "spine": "SPINE line", "catalog": "catalog"}
# "split family" (words held by a split child or parent of the file) is added by _family_words.
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have how i if in into is it its of on or so that the their "
    "then there these this to was were what when where which who why will with".split())


class QueryError(DistilldError):
    """The query cannot be searched as given (empty, too long, no words): say what to give."""


def words_of(text: str) -> list[str]:
    """Words as the index's tokenizer (unicode61, diacritics removed) makes them, lowercased."""
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return TOKEN_RE.findall(folded)


@dataclass(frozen=True)
class Terms:
    words: tuple[str, ...]
    cut: bool  # more distinct words than MAX_TERMS were given; the first ones are searched


def parse_query(query: object, what: str = "query") -> Terms:
    if not isinstance(query, str):
        raise QueryError(f"the {what} must be text")
    size = len(query.encode("utf-8", "surrogatepass"))
    if size > MAX_QUERY_BYTES:
        raise QueryError(f"the {what} is {size} bytes, over the {MAX_QUERY_BYTES}-byte limit: "
                         "give the distinctive words (names, identifiers, error text)")
    if not query.strip():
        raise QueryError(f"the {what} is empty: give the words to look for")
    distinct = list(dict.fromkeys(w for w in words_of(query) if w not in STOPWORDS))
    if not distinct:
        raise QueryError(f"the {what} {query.strip()[:60]!r} has no words to look for (only punctuation, "
                         "operators or very common words): give names, identifiers or error text")
    return Terms(tuple(distinct[:MAX_TERMS]), len(distinct) > MAX_TERMS)


def match_expression(terms: Terms) -> str:
    return " OR ".join(f'"{word}"' for word in terms.words)


@dataclass
class Hit:
    doc_id: int
    path: str
    status: str
    score: float
    coverage: float = 0.0
    own: set[str] = field(default_factory=set)  # query words the file holds
    family: set[str] = field(default_factory=set)  # and those only the rest of its split family holds
    matched: dict[str, set[str]] = field(default_factory=dict)  # field -> words (for the answered files)
    snippet: str = ""

    @property
    def words(self) -> set[str]:
        return self.own | self.family


def _ranked(conn: sqlite3.Connection, table: str, weights: tuple[float, ...], expression: str,
            archived: bool) -> list[int]:
    """The first DEPTH files by BM25 (ties by path), archived ones left out unless asked for.

    FTS5 ranks on its own first (a join with ``docs`` would look up every matching file), and
    only when its best FETCHED leave fewer than DEPTH certain places (files the status filter
    keeps, scored strictly better than the worst fetched) is the full ranking asked for."""
    bm25 = f"bm25({table}, {', '.join(map(str, weights))})"
    rows = conn.execute(f"SELECT rowid, {bm25} FROM {table} WHERE {table} MATCH ? ORDER BY 2 LIMIT {FETCHED}",
                        (expression,)).fetchall()
    marks = ",".join("?" * len(rows))
    known = {int(i): (str(p), str(st)) for i, p, st in conn.execute(
        f"SELECT id, path, status FROM docs WHERE id IN ({marks})", [r[0] for r in rows])}
    kept = sorted((float(score), known[int(i)][0], int(i)) for i, score in rows
                  if int(i) in known and (archived or known[int(i)][1] == "active"))
    if len(rows) < FETCHED:
        return [i for _, _, i in kept[:DEPTH]]  # every matching file was ranked
    worst = float(rows[-1][1])
    certain = [i for score, _, i in kept if score < worst]
    if len(certain) >= DEPTH:
        return certain[:DEPTH]
    status = "" if archived else " AND d.status = 'active'"
    sql = (f"SELECT d.id FROM {table} JOIN docs d ON d.id = {table}.rowid WHERE {table} MATCH ?{status} "
           f"ORDER BY {bm25}, d.path LIMIT {DEPTH}")
    return [int(row[0]) for row in conn.execute(sql, (expression,))]


def fused(conn: sqlite3.Connection, terms: Terms, archived: bool, rare: tuple[str, ...] = (),
          ranked: Terms | None = None) -> list[tuple[int, float]]:
    """(doc id, fused score), best first; ties broken by path order through the rankings.

    Three rankings are fused: the files' own text, their SPINE lines, and (when the query has
    rare words) the files' text on the rare words alone, so that a file holding the query's
    rare words is never crowded out by files holding only its common ones."""
    expression = match_expression(ranked or terms)
    rankings = [(BODY_WEIGHT, _ranked(conn, "body_fts", BODY_BM25, expression, archived)),
                (SPINE_WEIGHT, _ranked(conn, "spine_fts", SPINE_BM25, expression, archived))]
    if rare and len(rare) < len(terms.words):
        rankings.append((BODY_WEIGHT, _ranked(conn, "body_fts", BODY_BM25, match_expression(Terms(rare, False)),
                                              archived)))
    scores: dict[int, float] = {}
    for weight, ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def doc_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0]) or 1


_COUNTS: dict[tuple[str, str], int] = {}  # (index's stamps key, word) -> files holding it
_COUNTS_KEPT = 20_000


def frequencies(conn: sqlite3.Connection, terms: Terms) -> dict[str, int]:
    """How many files hold each word (in their text or their SPINE line), from the index's counts.

    fts5vocab counts a word by walking its posting list, so a long-running server keeps the
    counts it has seen until the index it read them from changes (its stamps key moves)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'stamps_key'").fetchone()
    key = f"{id(conn)}:{row[0] if row else ''}"
    found: dict[str, int] = {}
    for word in terms.words:
        if (key, word) not in _COUNTS:
            counts = [conn.execute(f"SELECT doc FROM {vocab} WHERE term = ?", (word,)).fetchone()
                      for vocab in ("body_vocab", "spine_vocab")]
            if len(_COUNTS) >= _COUNTS_KEPT:
                _COUNTS.clear()
            _COUNTS[key, word] = max((int(c[0]) for c in counts if c is not None), default=0)
        found[word] = _COUNTS[key, word]
    return found


def weights(df: dict[str, int], total: int) -> dict[str, float]:
    """Each word's IDF in this store (BM25's formula)."""
    return {word: idf(total, count) for word, count in df.items()}


def idf(total: int, df: int) -> float:
    return math.log((total - df + 0.5) / (df + 0.5) + 1.0)


def rare_mass(total: int) -> float:
    return idf(total, max(1, total // RARE_SHARE))
