"""The answers of find, bundle, spine and read_knowledge, as JSON-ready dicts.

The CLI (`distilld find --json`, ...) and the MCP server call these same functions, so the same
input gives the same answer, byte for byte once serialised. Every answer carries the store's
fingerprint (HEAD plus a digest of the knowledge files as they are on disk) and is computed
from one consistent reading of the index; file text is checked against the hash the index
holds for it, and an answer the store changed under is computed again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from ..store.paths import LOCAL_SPINE, SPINE, is_legacy, strip_archive
from .bundle import DEFAULT_BUDGET, MAX_BUDGET, MAX_FILES, pack
from .judge import search
from .query import MAX_K, Hit, QueryError, Terms, parse_query
from .reader import Refused, check_batch, read_text
from .session import ATTEMPTS, Current, SearchIndex, StoreChanging

T = TypeVar("T")


class Moved(Exception):
    """A file's bytes are no longer those the index saw: compute the answer again."""


def _schema(kind: str) -> str:
    return f"distilld.{kind}/1"


def _consistent(index: SearchIndex, work: Callable[[Current], T]) -> T:
    """Run ``work`` on one reading of an up-to-date index; again if the store moved under it."""
    for _ in range(ATTEMPTS):
        current = index.current()
        try:
            current.conn.execute("BEGIN")  # one snapshot for every statement of this answer
            try:
                return work(current)
            finally:
                _end(current.conn)
        except Moved:
            continue
        except sqlite3.DatabaseError:  # the index was truncated or replaced under us: built again
            index.discard()
            continue
    raise StoreChanging(f"{index.root}: the store kept changing while the answer was read; ask again in a moment")


def _end(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("COMMIT")
    except sqlite3.Error:
        pass  # nothing was written; a broken index is dealt with by the caller


def shown(path: object) -> str:
    """A path as an answer may echo it: printable, valid UTF-8 (a stray surrogate escaped)."""
    text = path if isinstance(path, str) else repr(path)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")[:300]


def _stamp(current: Current) -> dict[str, str]:
    return {"fingerprint": current.fingerprint, "head": current.head}


def _restore_hint(path: str, archived_on: str) -> str:
    if archived_on == "legacy" or is_legacy(path):
        return f"a legacy archive; `distilld restore {path}` makes an active copy"
    return f"archived on {archived_on or 'an unknown date'}; restore with `distilld restore {strip_archive(path)}`"


def _result(current: Current, rank: int, hit: Hit) -> dict[str, Any]:
    spine_line, hook, archived_on = current.conn.execute(
        "SELECT spine_line, catalog_hook, archived_on FROM docs WHERE id = ?", (hit.doc_id,)).fetchone()
    result: dict[str, Any] = {
        "rank": rank, "path": hit.path, "status": hit.status, "score": round(hit.score, 6),
        "coverage": round(hit.coverage, 3), "spine_line": spine_line, "catalog_hook": hook,
        "snippet": hit.snippet, "matched_fields": sorted(hit.matched),
        "matched_words": sorted(hit.words)}
    if hit.status == "archived":
        result["archived"] = _restore_hint(hit.path, str(archived_on))
    return result


def _terms(terms: Terms) -> dict[str, Any]:
    return {"words": list(terms.words), "cut": terms.cut}


def _not_found(current: Current, query: str, nearest: Hit | None, archived: bool,
               terms: Terms) -> dict[str, Any]:
    archived_hits = [] if archived else search(current.conn, terms, 3, True)[0]
    archived_hits = [h for h in archived_hits if h.status == "archived"]
    rebuilt = current.conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    message = (f"The store holds nothing on {query.strip()[:80]!r}: no {'' if archived else 'active '}file "
               f"holds enough of its words (of {rebuilt} indexed files). It may still sit inside a broader "
               "file under other words; this is not proof it was never distilled.")
    return {"message": message,
            "nearest": None if nearest is None else {"path": nearest.path, "coverage": round(nearest.coverage, 3)},
            "archived": [{"path": h.path, "note": _result(current, 1, h)["archived"]} for h in archived_hits]}


def find_answer(index: SearchIndex, query: object, k: int = 5, archived: bool = False) -> dict[str, Any]:
    terms = parse_query(query)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise QueryError(f"k must be a whole number from 1 to {MAX_K}")

    def work(current: Current) -> dict[str, Any]:
        hits, nearest = search(current.conn, terms, k, archived)
        answer: dict[str, Any] = {"schema": _schema("find"), "query": query, "terms": _terms(terms), "k": k,
                                  "archived_included": archived, **_stamp(current), "found": bool(hits),
                                  "results": [_result(current, i, h) for i, h in enumerate(hits, start=1)]}
        if not hits:
            answer["not_found"] = _not_found(current, str(query), nearest, archived, terms)
        return answer

    return _consistent(index, work)


def _verified_text(index: SearchIndex) -> Callable[[str, str], str]:
    def read(path: str, sha: str) -> str:
        _, text, actual = read_text(index.root, path)
        if actual != sha:
            raise Moved(path)
        return text
    return read


def bundle_answer(index: SearchIndex, task: object, budget: int = DEFAULT_BUDGET) -> dict[str, Any]:
    terms = parse_query(task, "task")
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= MAX_BUDGET:
        raise QueryError(f"the budget must be a whole number of tokens from 1 to {MAX_BUDGET}")

    def work(current: Current) -> dict[str, Any]:
        hits, _ = search(current.conn, terms, MAX_FILES, False, task=True)
        packer = pack(current.conn, hits, budget, _verified_text(index))
        assert packer.used <= budget
        answer: dict[str, Any] = {
            "schema": _schema("bundle"), "task": task, "terms": _terms(terms), **_stamp(current),
            "budget": budget, "used_tokens": packer.used,
            "token_estimate": "characters / 4, rounded up, per rule and per file",
            "found": bool(hits), "binding": packer.binding, "files": packer.files, "overflow": packer.overflow}
        if not hits:
            answer["not_found"] = _not_found(current, str(task), None, False, terms)
        return answer

    return _consistent(index, work)


def _indexed_sha(current: Current, path: str) -> str | None:
    row = current.conn.execute("SELECT sha FROM files WHERE path = ?", (path,)).fetchone()
    return None if row is None else str(row[0])


def spine_answer(index: SearchIndex) -> dict[str, Any]:
    def work(current: Current) -> dict[str, Any]:
        answer: dict[str, Any] = {"schema": _schema("spine"), **_stamp(current)}
        for key, path in (("spine", SPINE), ("local_spine", LOCAL_SPINE)):
            sha = _indexed_sha(current, path)
            if sha is None:
                answer[key] = None
                continue
            try:
                answer[key] = _verified_text(index)(path, sha)
            except Refused as refused:
                answer[key] = None
                answer[f"{key}_error"] = f"{path}: {refused}"
        if answer["local_spine"] is None and "local_spine_error" not in answer:
            del answer["local_spine"]  # only where it exists
        return answer

    return _consistent(index, work)


def read_answer(index: SearchIndex, paths: object) -> dict[str, Any]:
    batch = check_batch(paths)

    def work(current: Current) -> dict[str, Any]:
        files: list[dict[str, Any]] = []
        for path in batch:
            try:
                checked, text, sha = read_text(index.root, path)
            except Refused as refused:
                files.append({"path": shown(path), "error": str(refused)})
                continue
            if _indexed_sha(current, checked) != sha:
                raise Moved(checked)
            files.append({"path": checked, "sha256": sha, "text": text})
        return {"schema": _schema("read"), **_stamp(current), "files": files}

    return _consistent(index, work)
