"""Which query words a file holds, field by field, read from the index's stored text.

Asking FTS5 "does file N hold word W" (a MATCH with ``rowid = N``) decodes W's whole posting
list, so for a common word each such question costs as much as listing every file that holds
it; the candidates' own fields are short by comparison and a row fetch is one B-tree seek.
The words are found in the text as the index's tokenizer cuts it: runs of letters and digits,
folded as ``words_of`` folds them, a word found only where no letter or digit touches it.
"""

from __future__ import annotations

import sqlite3
import unicodedata

from .index import BODY_COLUMNS, SPINE_COLUMNS

Fields = dict[str, set[str]]  # column -> the query words it holds


def _holds_token(folded: str, word: str) -> bool:
    """``word`` occurs in ``folded`` with no letter or digit on either side."""
    start, size = folded.find(word), len(word)
    while start >= 0:
        end = start + size
        if (start == 0 or not folded[start - 1].isalnum()) and (end == len(folded) or not folded[end].isalnum()):
            return True
        start = folded.find(word, start + 1)
    return False


def _folded_char(ch: str) -> str:
    """One non-ASCII character as unicode61 with remove_diacritics 2 keeps it: a Latin letter
    with diacritics becomes its base letter, a combining accent goes, anything else stays."""
    code = ord(ch)
    if 0x300 <= code < 0x370:
        return ""
    if 0xC0 <= code < 0x250 or 0x1E00 <= code < 0x1F00:
        base = unicodedata.normalize("NFD", ch)[0]
        return base if base.isascii() else ch
    return ch


def fold(text: str) -> str:
    """``text`` lowercased and folded as the index's tokenizer folds it, separators kept (only
    the few distinct non-ASCII characters are looked at, one by one)."""
    folded = text.lower()
    if folded.isascii():
        return folded
    table = {ord(ch): _folded_char(ch) for ch in set(folded) if not ch.isascii()}
    table = {code: to for code, to in table.items() if to != chr(code)}  # dashes, arrows: kept as they are
    return folded.translate(table) if table else folded


def held_words(text: str, words: tuple[str, ...]) -> set[str]:
    """The ``words`` (already folded, as parse_query gives them) that ``text`` holds as tokens."""
    folded = fold(text)
    return {w for w in words if _holds_token(folded, w)}


FEW = 100  # a word held by at most this many files: its holders listed once (a short posting list)


class Presence:
    """The query words each candidate holds. A rare word's holders come from one short FTS5
    lookup; a common word is looked for in the candidate's fields, each file's text fetched
    once (and only when a common word or a field list is asked for)."""

    def __init__(self, conn: sqlite3.Connection, words: tuple[str, ...], df: dict[str, int]) -> None:
        self.conn, self.words = conn, words
        self.rare = tuple(w for w in words if 0 < df.get(w, 0) <= FEW)
        self.common = tuple(w for w in words if df.get(w, 0) > FEW)
        self._holders: dict[str, set[int]] = {}
        self._fields: dict[int, Fields] = {}

    def _holders_of(self, word: str) -> set[int]:
        if word not in self._holders:
            found: set[int] = set()
            for table in ("body_fts", "spine_fts"):
                found.update(int(r[0]) for r in self.conn.execute(
                    f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (f'"{word}"',)))
            self._holders[word] = found
        return self._holders[word]

    def fields(self, doc_id: int) -> Fields:
        """Each field of the file with the query words it holds (fields holding none left out)."""
        if doc_id not in self._fields:
            found: Fields = {}
            for table, columns in (("body_fts", BODY_COLUMNS), ("spine_fts", SPINE_COLUMNS)):
                row = self.conn.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE rowid = ?",
                                        (doc_id,)).fetchone()
                for column, text in zip(columns, row or ()):
                    held = held_words(str(text or ""), self.words)
                    if held:
                        found[column] = held
            self._fields[doc_id] = found
        return self._fields[doc_id]

    def words_of_doc(self, doc_id: int) -> set[str]:
        """The query words the file holds in any field."""
        held = {w for w in self.rare if doc_id in self._holders_of(w)}
        if self.common:
            held |= set().union(*self.fields(doc_id).values()) & set(self.common)
        return held
