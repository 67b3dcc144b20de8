"""A command's index object that answered before compares only the stamps that moved since its
last scan; after every kind of change it must answer exactly as an index built from nothing."""

from __future__ import annotations

from pathlib import Path

from builders import healthy_store

from distilld.search.answers import find_answer
from distilld.search.session import SearchIndex

QUERIES = ("ibis rule", "heron ledger", "canary", "schema registry", "ocelot")


def _same_as_fresh(kept: SearchIndex, root: Path, scratch: Path, step: int) -> None:
    fresh = SearchIndex(root, scratch / f"fresh-{step}.sqlite3")
    for query in QUERIES:
        assert find_answer(kept, query) == find_answer(fresh, query), (step, query)
    fresh.close()


def test_the_incremental_update_answers_as_a_fresh_index(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    kept = SearchIndex(b.root, tmp_path / "kept.sqlite3")
    find_answer(kept, "canary")
    changes = [
        lambda: b.write("ops/deploy.md", b.read("ops/deploy.md") + b"- The ibis rule.\n"),  # in place
        lambda: b.tier("craft/heron.md", "# Heron\n\n- The heron ledger.\n", scope="Heron"),  # added
        lambda: b.write("evidence/craft/heron.md", "# Heron evidence\n\n- the ocelot incident\n"),  # a twin
        lambda: b.write("craft/heron.md", b.read("craft/heron.md") + b"- The ibis rule, twice.\n"),
        lambda: b.remove("evidence/craft/heron.md"),
        lambda: b.remove("ops/deploy.md"),  # removed
    ]
    for step, change in enumerate(changes):
        change()
        _same_as_fresh(kept, b.root, tmp_path, step)
    assert kept.rebuilds == 1  # every step was an update, never a rebuild
