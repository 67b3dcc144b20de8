"""Each ranking is read from FTS5 alone first, then filtered and tie-broken in Python; it must
give exactly the ranking of the full join (status filter, BM25, then path), also when ties,
archived files or a shallow fetch force the full query."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import healthy_store

from distilld.search import query
from distilld.search.query import BODY_BM25, SPINE_BM25, _ranked
from distilld.search.session import SearchIndex


def _reference(conn: object, table: str, weights: tuple[float, ...], expression: str, archived: bool) -> list[int]:
    status = "" if archived else " AND d.status = 'active'"
    sql = (f"SELECT d.id FROM {table} JOIN docs d ON d.id = {table}.rowid WHERE {table} MATCH ?{status} "
           f"ORDER BY bm25({table}, {', '.join(map(str, weights))}), d.path LIMIT {query.DEPTH}")
    return [int(r[0]) for r in conn.execute(sql, (expression,))]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("depth", "fetched"), [(50, 100), (3, 4), (2, 2), (1, 3)])
def test_the_cut_ranking_equals_the_full_ranking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 depth: int, fetched: int) -> None:
    b = healthy_store(tmp_path / "store")
    for n in range(6):  # identical files: equal scores, so only the path orders them
        b.write(f"craft/twin-{5 - n}.md", "# Heron rule\n\n- The heron ledger heron rule.\n")
        b.write(f"archive/craft/old-{n}.md", "# Heron\n\n- heron heron heron ledger.\n")
    index = SearchIndex(b.root)
    index.current()
    for n in range(4):  # indexed later, so their rowids come after paths that sort after theirs
        b.write(f"craft/a-twin-{n}.md", "# Heron rule\n\n- The heron ledger heron rule.\n")
    monkeypatch.setattr(query, "DEPTH", depth)
    monkeypatch.setattr(query, "FETCHED", fetched)
    conn = index.current().conn
    for expression in ('"heron"', '"heron" OR "ledger"', '"ledger"', '"rule" OR "kestrel"', '"nothingatall"'):
        for table, weights in (("body_fts", BODY_BM25), ("spine_fts", SPINE_BM25)):
            for archived in (False, True):
                assert _ranked(conn, table, weights, expression, archived) == \
                    _reference(conn, table, weights, expression, archived), (expression, table, archived)
