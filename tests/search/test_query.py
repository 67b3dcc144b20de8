"""find: fused ranking, the fields that matched, honest not-found, archived files, and queries
that carry FTS5 syntax or are empty or huge."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import StoreBuilder, healthy_store

from distilld.search.answers import find_answer
from distilld.search.query import MAX_QUERY_BYTES, QueryError, parse_query
from distilld.search.session import SearchIndex


@pytest.fixture
def index(tmp_path: Path) -> SearchIndex:
    b = healthy_store(tmp_path / "store")
    body = b.read("projects/kestrel.md").decode()
    b.write("projects/kestrel.md", body + "\n## Index detail (moved from SPINE 2026-10-01)\n\nAvro to Parquet via "
            "the flamingo bridge.\n")
    return SearchIndex(b.root)


def top(answer: dict[str, object]) -> dict[str, object]:
    return answer["results"][0]  # type: ignore[index,no-any-return]


def test_body_words_find_the_file_and_say_which_fields_matched(index: SearchIndex) -> None:
    answer = find_answer(index, "schema registry source of truth")
    assert answer["found"] and top(answer)["path"] == "projects/kestrel.md"
    assert {"body", "SPINE line"} <= set(top(answer)["matched_fields"])  # type: ignore[arg-type]
    assert "[schema] [registry]" in str(top(answer)["snippet"]).lower()


def test_index_detail_and_evidence_are_searched(index: SearchIndex) -> None:
    detail = find_answer(index, "flamingo bridge")
    assert top(detail)["path"] == "projects/kestrel.md" and top(detail)["matched_fields"] == ["index detail"]
    evidence = find_answer(index, "temp-dir path bug")
    assert top(evidence)["path"] == "craft/testing.md" and "evidence" in top(evidence)["matched_fields"]  # type: ignore[operator]


def test_a_query_of_words_no_file_holds_is_an_honest_not_found(index: SearchIndex) -> None:
    for query in ("zebra quantum", "zebra quantum kestrel", "photosynthesis of the canary"):
        answer = find_answer(index, query)
        assert not answer["found"] and answer["results"] == [], query
        assert "holds nothing on" in answer["not_found"]["message"]  # type: ignore[index]


def test_an_archived_file_is_named_as_archived_with_how_to_restore_it(index: SearchIndex) -> None:
    answer = find_answer(index, "Marlin reporting backfill")
    assert not answer["found"]
    assert answer["not_found"]["archived"] == [  # type: ignore[index]
        {"path": "archive/projects/marlin.md",
         "note": "archived on 2026-09-11; restore with `distilld restore projects/marlin.md`"}]
    ranked = find_answer(index, "Marlin reporting backfill", archived=True)
    assert top(ranked)["status"] == "archived" and top(ranked)["path"] == "archive/projects/marlin.md"
    assert "distilld restore projects/marlin.md" in str(top(ranked)["archived"])
    legacy = find_answer(index, "early compaction", archived=True)
    assert "legacy archive" in str(top(legacy)["archived"])


@pytest.mark.parametrize("query", ['"', '"schema registry', "schema*", "*", "NEAR(schema registry)", "NEAR(",
                                   "schema AND", "AND", "OR OR", "-schema", "schema NOT registry", "{body}: x",
                                   "col:schema", "^schema", "schema + registry", "'; DROP TABLE docs; --",
                                   "\u00fcber \u0301", "schema\x00registry"])
def test_fts_syntax_in_a_query_is_only_text_to_look_for(index: SearchIndex, query: str) -> None:
    try:
        answer = find_answer(index, query)
    except QueryError as error:
        assert "no words to look for" in str(error)
        return
    assert isinstance(answer["found"], bool)
    if set(answer["terms"]["words"]) <= {"schema", "registry", "not"} and "schema" in query:  # type: ignore[index]
        assert top(answer)["path"] == "projects/kestrel.md"  # operators were read as words, not syntax
    assert find_answer(index, "schema registry")["found"]  # the index is still whole


@pytest.mark.parametrize("query,message", [("", "is empty"), ("   \n\t", "is empty"), ("-", "no words to look for"),
                                           ("the and of", "no words to look for"),
                                           ("x" * 100_000, f"over the {MAX_QUERY_BYTES}-byte limit")])
def test_an_empty_or_huge_query_gets_a_clear_answer(index: SearchIndex, query: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        find_answer(index, query)


def test_k_is_checked_and_many_words_are_cut_with_a_note(index: SearchIndex) -> None:
    for k in (0, 51, -1):
        with pytest.raises(QueryError, match="k must be"):
            find_answer(index, "schema", k)
    words = " ".join(f"word{i}" for i in range(100))
    terms = parse_query(words + " schema")
    assert terms.cut and len(terms.words) == 64


def test_ranking_is_deterministic_and_ties_fall_to_path_order(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path / "store")
    for name in ("b", "a", "c"):
        b.tier(f"craft/{name}.md", "# Same\n\n- the pelican rule\n", scope="Same words")
    b.spine([f"- [{n}](craft/{n}.md) \u2014 same." for n in ("b", "a", "c")])
    b.rebuild_catalog()
    first = find_answer(SearchIndex(b.root), "pelican")
    assert [r["path"] for r in first["results"]] == ["craft/a.md", "craft/b.md", "craft/c.md"]
    assert find_answer(SearchIndex(b.root), "pelican") == first
