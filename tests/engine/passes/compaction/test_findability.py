"""The store's self-queries and the byte allocation the planner optimises with (issue 24)."""

from __future__ import annotations

from distilld.engine.passes.compaction.allocate import Rung, allocate
from distilld.engine.passes.compaction.findability import Findability

FILES = {
    "craft/csv.md": b"---\nscope: csv\n---\n# CSV imports\n\n- The `zorblat_loader` splits rows.\n- zorblat again.\n",
    "craft/csv-2.md": b"---\nsplit_from: craft/csv.md\n---\n## More\n\n- quokka batches.\n",
    "ops/deploy.md": b"---\nscope: deploy\n---\n# Deploy\n\n- canary soak of 30 minutes.\n\n"
                     b"## Index detail (moved from SPINE 2026-09-01)\n\nwombat only in the old hook\n",
}


def family_of(path: str) -> str:
    return "craft/csv.md" if path.startswith("craft/csv") else path


def test_self_queries_come_from_what_the_author_wrote_and_a_family_is_one_topic() -> None:
    found = Findability(FILES, family_of)
    asked = {w for _, words in found.queries for w in words}
    assert {"zorblat", "quokka", "canary"} <= asked
    assert "wombat" not in asked  # Index detail is written by a pass, not by the author
    assert {family for family, _ in found.queries} == {"craft/csv.md", "ops/deploy.md"}


def test_a_spine_that_names_a_topics_rare_words_scores_higher() -> None:
    found = Findability(FILES, family_of)
    plain = [("- [CSV](craft/csv.md) + [2](craft/csv-2.md) — imports.", ["craft/csv.md", "craft/csv-2.md"]),
             ("- [Deploy](ops/deploy.md) — shipping.", ["ops/deploy.md"])]
    rich = [("- [CSV](craft/csv.md) + [2](craft/csv-2.md) — the `zorblat_loader`; quokka batches.",
             ["craft/csv.md", "craft/csv-2.md"]), plain[1]]
    assert found.score(rich) > found.score(plain)
    weights = found.weights(["craft/csv.md"], "[CSV](craft/csv.md)")
    assert weights["zorblat"] > weights.get("csv", 0.0) and "canary" not in weights


def test_bytes_go_where_they_buy_most_findability_within_the_goal() -> None:
    ladders = {
        "rich": [Rung(100, 1.0, "a"), Rung(150, 9.0, "b"), Rung(200, 9.5, None)],
        "poor": [Rung(100, 1.0, "c"), Rung(150, 1.5, "d"), Rung(200, 2.0, None)],
    }
    assert allocate(ladders, 0, 250) == {"rich": 1, "poor": 0}
    assert allocate(ladders, 0, 400) == {"rich": 2, "poor": 2}  # all fit whole: nothing is shortened
    assert allocate(ladders, 0, 150) == {"rich": 0, "poor": 0}  # the lowest rungs when nothing fits
