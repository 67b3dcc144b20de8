"""Which query words a candidate holds, read from its stored fields, agrees with FTS5's own
tokenizer: word boundaries, underscores, diacritics, ligatures and non-Latin scripts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from builders import healthy_store

from distilld.search.answers import find_answer
from distilld.search.index import TOKENIZER
from distilld.search.presence import held_words
from distilld.search.query import words_of
from distilld.search.session import SearchIndex

TEXTS = (
    "The catalogue lists snake_case names; re-index the cat-alog.",
    "Café naïve résumé — über straße, the ﬁle Ελληνικά κείμενο and 東京 tokyo",
    "Øresund ǅemal Łódź Việt e\u0301tude Ærø",
    "Prices: 42kg, v2.3.1 and x86_64 builds; CamelCaseWord stays whole.",
    "",
)
WORDS = ("catalog", "catalogue", "cat", "alog", "snake", "case", "index", "re", "cafe", "naive", "resume",
         "uber", "strasse", "straße", "file", "ελληνικα", "κειμενο", "東京", "tokyo", "42kg", "42", "v2", "3",
         "1", "x86", "64", "camelcaseword", "camel", "word", "the", "oresund", "øresund", "dzemal", "lodz",
         "łodz", "viet", "etude", "aero", "ærø", "aer")


def test_held_words_agree_with_the_fts5_tokenizer() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{TOKENIZER}')")
    for rowid, text in enumerate(TEXTS, start=1):
        conn.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (rowid, text))
    words = tuple(dict.fromkeys(w for word in WORDS for w in words_of(word)))
    for rowid, text in enumerate(TEXTS, start=1):
        by_fts = {w for w in words if conn.execute("SELECT 1 FROM t WHERE t MATCH ? AND rowid = ?",
                                                  (f'"{w}"', rowid)).fetchone()}
        assert held_words(text, words) == by_fts, text


def test_a_word_inside_a_longer_word_is_not_credited_and_diacritics_fold(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    b.write("craft/accents.md", "# Accents\n\n- The naïve café résumé rule: fold the über words.\n")
    index = SearchIndex(b.root)
    answer = find_answer(index, "naive cafe resume uber")
    top = answer["results"][0]
    assert top["path"] == "craft/accents.md" and "body" in top["matched_fields"]
    assert set(top["matched_words"]) == {"naive", "cafe", "resume", "uber"}
    assert not any(r["path"] == "craft/accents.md" for r in find_answer(index, "accent")["results"])
