"""A budgeted bundle of knowledge for a task: deterministic, no model in the path.

Order of what goes in, each piece only while the running total stays within the budget:

1. the binding rules ([NON-NEGOTIABLE...] and [DIRECTIVE...] blocks) of every file that
   answers the task, in rank order;
2. the answering files whole, pinned ones first, each followed by its ``read_with``
   companions (depth one, D6);
3. whatever answered but did not fit is listed as overflow, with its size, never dropped
   silently.

Tokens are estimated as the store format does (characters / 4, rounded up), per piece.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..store.paths import contained
from .documents import estimate_tokens
from .query import Hit
from .reader import Refused

MAX_FILES = 20  # answering files a bundle considers
DEFAULT_BUDGET = 8000
MAX_BUDGET = 2_000_000


@dataclass
class Packer:
    budget: int
    used: int = 0
    binding: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    overflow: list[dict[str, Any]] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)

    def fits(self, tokens: int) -> bool:
        return self.used + tokens <= self.budget

    def take(self, tokens: int) -> None:
        self.used += tokens


def _row(conn: sqlite3.Connection, path: str) -> tuple[bool, list[str], list[str], int, str] | None:
    row = conn.execute("SELECT pinned, read_with, binding, tokens, sha FROM docs WHERE path = ?", (path,)).fetchone()
    if row is None:
        return None
    return bool(row[0]), list(json.loads(row[1])), list(json.loads(row[2])), int(row[3]), str(row[4])


ReadText = Callable[[str, str], str]  # (path, expected sha256) -> text; raises if it moved


def pack(conn: sqlite3.Connection, hits: list[Hit], budget: int, read_text: ReadText) -> Packer:
    packer = Packer(budget)
    rows = {hit.path: _row(conn, hit.path) for hit in hits}
    for rank, hit in enumerate(hits, start=1):
        row = rows[hit.path]
        for rule in row[2] if row else []:
            tokens = estimate_tokens(rule)
            if packer.fits(tokens):
                packer.take(tokens)
                packer.binding.append({"path": hit.path, "rank": rank, "tokens": tokens, "rule": rule})
            else:
                packer.overflow.append({"kind": "binding rule", "path": hit.path, "rank": rank, "tokens": tokens,
                                        "first_line": rule.split("\n", 1)[0][:200]})
    ranked = list(enumerate(hits, start=1))
    ranked.sort(key=lambda item: (not (rows[item[1].path] or (False,))[0], item[0]))  # pinned first, stable
    for rank, hit in ranked:
        row = rows[hit.path]
        if row is None or hit.path in packer.taken:
            continue
        reason = "pinned" if row[0] else "answers the task"
        _add_file(conn, packer, hit.path, row, {"rank": rank, "why": reason}, read_text)
        if hit.path not in packer.taken:
            continue
        for companion in row[1]:
            if not contained(companion, "store") or companion in packer.taken:
                continue
            found = _row(conn, companion)
            if found is None:
                packer.overflow.append({"kind": "read_with companion", "path": companion, "of": hit.path,
                                        "tokens": 0, "why": "not an indexed knowledge file"})
                continue
            _add_file(conn, packer, companion, found, {"why": "read_with", "of": hit.path}, read_text)
    return packer


def _add_file(conn: sqlite3.Connection, packer: Packer, path: str, row: tuple[bool, list[str], list[str], int, str],
              about: dict[str, Any], read_text: ReadText) -> None:
    tokens = row[3]
    if not packer.fits(tokens):
        kind = "read_with companion" if about.get("why") == "read_with" else "file"
        packer.overflow.append({"kind": kind, "path": path, "tokens": tokens, **about})
        return
    try:
        text = read_text(path, row[4])
    except Refused as refused:
        packer.overflow.append({"kind": "file", "path": path, "tokens": tokens, **about, "why": str(refused)})
        return
    tokens = estimate_tokens(text)  # the bytes just read were verified equal to the indexed ones
    packer.take(tokens)
    packer.taken.add(path)
    packer.files.append({"path": path, **about, "tokens": tokens, "text": text})
