"""bundle: binding rules first, then whole files (pinned first) with their read_with
companions, then an explicit overflow; deterministic, stamped, never over the budget."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import healthy_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distilld.search.answers import bundle_answer
from distilld.search.documents import binding_rules, estimate_tokens
from distilld.search.query import QueryError
from distilld.search.session import SearchIndex


@pytest.fixture
def index(tmp_path: Path) -> SearchIndex:
    return SearchIndex(healthy_store(tmp_path / "store").root)


def test_binding_rules_come_first_then_whole_files(index: SearchIndex) -> None:
    answer = bundle_answer(index, "write a test with fixtures and personas", 8000)
    assert answer["found"]
    rules = [(r["path"], r["rule"].split("\n")[0]) for r in answer["binding"]]
    assert ("craft/testing.md", "- [NON-NEGOTIABLE] Real files in temporary folders, never mocks of the disk.") in rules
    assert ("craft/testing-2.md", "## [DIRECTIVE 2026-07-20] Fixtures") in rules
    section = next(r["rule"] for r in answer["binding"] if r["path"] == "craft/testing-2.md")
    assert section.endswith("No production data.")  # a marked heading's section travels whole
    whole = {f["path"]: f["text"] for f in answer["files"]}
    assert whole["craft/testing.md"] == (index.root / "craft/testing.md").read_text()
    assert answer["used_tokens"] == sum(r["tokens"] for r in answer["binding"]) + sum(f["tokens"] for f in answer["files"])
    assert answer["fingerprint"] and answer["token_estimate"].startswith("characters / 4")


def test_read_with_companions_follow_their_file(index: SearchIndex) -> None:
    answer = bundle_answer(index, "deploy canary soak", 8000)
    order = [(f["path"], f.get("of")) for f in answer["files"]]
    assert order[:2] == [("ops/deploy.md", None), ("craft/testing.md", "ops/deploy.md")]


def test_pinned_files_come_before_better_ranked_ones(index: SearchIndex) -> None:
    answer = bundle_answer(index, "exports deploy canary legal hold soak", 8000)
    paths = [f["path"] for f in answer["files"]]
    assert paths.index("projects/osprey.md") < paths.index("ops/deploy.md")
    assert answer["files"][0]["why"] == "pinned"


def test_what_does_not_fit_is_listed_as_overflow(index: SearchIndex) -> None:
    answer = bundle_answer(index, "deploy canary soak", 30)
    assert answer["used_tokens"] <= 30
    overflow = {(o["kind"], o["path"]) for o in answer["overflow"]}
    assert ("file", "ops/deploy.md") in overflow or ("read_with companion", "craft/testing.md") in overflow
    assert all(o["tokens"] > 0 for o in answer["overflow"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(min_value=1, max_value=1500),
       task=st.sampled_from(["write a test with fixtures", "deploy canary soak", "legal hold exports",
                             "schema registry topics", "short answers command first"]))
def test_never_over_the_budget_and_the_same_every_time(index: SearchIndex, budget: int, task: str) -> None:
    answer = bundle_answer(index, task, budget)
    pieces = [r["rule"] for r in answer["binding"]] + [f["text"] for f in answer["files"]]
    assert sum(estimate_tokens(p) for p in pieces) == answer["used_tokens"] <= budget
    assert bundle_answer(index, task, budget) == answer


def test_a_task_nothing_answers_and_bad_budgets(index: SearchIndex) -> None:
    answer = bundle_answer(index, "photosynthesis in kelp forests", 1000)
    assert not answer["found"] and answer["files"] == [] and answer["binding"] == []
    for budget in (0, -5, 10**9):
        with pytest.raises(QueryError, match="budget"):
            bundle_answer(index, "deploy", budget)


def test_binding_rules_are_the_protected_blocks_only() -> None:
    lines = ["# T", "- [NON-NEGOTIABLE 2026-05-02] Never X.", "  Why: because.", "- plain", "[DIRECTIVE] inline",
             "## [DIRECTIVE] Section", "- a", "### sub", "- b", "## Next", "- [UPDATED] not binding"]
    assert binding_rules(lines) == ["- [NON-NEGOTIABLE 2026-05-02] Never X.\n  Why: because.", "[DIRECTIVE] inline",
                                    "## [DIRECTIVE] Section\n- a\n### sub\n- b"]
