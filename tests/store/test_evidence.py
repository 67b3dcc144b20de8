"""Dated observation lines to evidence twins (store/evidence.py; STORE-FORMAT.md 1.6, 4.3, 4.6).

Only ``- `` lines that start with a date, carry no marker, sit in no protected block and have
no indented continuation move; a section whose bullets all move takes its heading along; the
principle file gets one citation line; appends are idempotent by count, so a line that was in
both the file and the twin before stays twice.
"""

from __future__ import annotations

from collections import Counter

from distilld.store.evidence import plan_evidence, twin_after
from distilld.store.text import split_lines

PRINCIPLES = (
    "---\nscope: Testing discipline\nlast_updated: 2026-09-01\n---\n\n# Testing\n\n"
    "## [DIRECTIVE 2026-07-20] Fixtures\n\n"
    "- 2026-07-20 directive: fixtures use invented names\n\n"
    "## Principles\n\n"
    "- [NON-NEGOTIABLE] A failing test comes before the fix.\n"
    "- 2026-04-18 confirm: a temp-dir test caught a path bug\n"
    "- 2026-05-09 correct: a flaky test was a hypothesis, not noise\n"
    "  Why: the seed was fixed after the fact\n"
    "- [CORRECTED 2026-06-01] 2026-06-01 sleeps replaced by polling\n"
    "- 2026-06-02 [IMPORTANT] never retry a red build blindly\n\n"
    "## Observations\n\n"
    "- 2026-06-11 observe: property tests found the CRLF bug first\n"
    "- 2026-06-30 observe: property tests found the CRLF bug first\n\n"
    "## Shell\n\n```\n- 2026-01-01 inside a fence stays\n```\n"
)


def test_only_plain_dated_bullets_move_and_a_section_of_them_takes_its_heading() -> None:
    move = plan_evidence("craft/testing.md", PRINCIPLES.encode(), None)
    assert move is not None
    assert move.lines == [
        "- 2026-04-18 confirm: a temp-dir test caught a path bug",
        "## Observations",
        "- 2026-06-11 observe: property tests found the CRLF bug first",
        "- 2026-06-30 observe: property tests found the CRLF bug first",
    ]
    left = move.principle.decode()
    for stays in ("- 2026-07-20 directive: fixtures use invented names",  # inside a DIRECTIVE section
                  "- 2026-05-09 correct: a flaky test was a hypothesis, not noise",  # has a continuation
                  "  Why: the seed was fixed after the fact",
                  "- [CORRECTED 2026-06-01] 2026-06-01 sleeps replaced by polling",  # carries a marker
                  "- 2026-06-02 [IMPORTANT] never retry a red build blindly",
                  "- 2026-01-01 inside a fence stays"):
        assert stays in left
    assert "## Observations" not in left and "2026-04-18 confirm" not in left
    assert left.endswith("```\n\nEvidence: 2026-04-18 to 2026-06-30 in `evidence/craft/testing.md` (3 entries).\n")
    assert move.twin_header == "---\nevidence_for: craft/testing.md\n---\n## Evidence log\n\n"


def test_nothing_moves_from_a_file_without_dated_observations() -> None:
    assert plan_evidence("craft/x.md", b"# X\n\n- [NON-NEGOTIABLE] 2026-01-01 keep\n- plain rule\n", None) is None


def test_no_line_is_lost_between_the_file_and_its_twin() -> None:
    move = plan_evidence("craft/testing.md", PRINCIPLES.encode(), None)
    assert move is not None
    twin = twin_after(None, move.twin_header, move.lines, Counter(), move.ending)
    before = Counter(line.strip() for line in split_lines(PRINCIPLES) if line.strip())
    after = Counter(line.strip() for line in split_lines(move.principle.decode() + twin.decode()) if line.strip())
    assert before - after == Counter()


def test_the_twin_append_is_idempotent_by_count_and_keeps_duplicates_that_were_in_both() -> None:
    old_twin = (b"---\nevidence_for: craft/testing.md\n---\n## Evidence log\n\n"
                b"- 2026-04-18 confirm: a temp-dir test caught a path bug\n")
    move = plan_evidence("craft/testing.md", PRINCIPLES.encode(), old_twin)
    assert move is not None and move.twin_header == ""
    base = Counter({line: 1 for line in move.lines if line == "- 2026-04-18 confirm: a temp-dir test caught a path bug"})
    once = twin_after(old_twin, "", move.lines, base, move.ending)
    assert once.decode().count("- 2026-04-18 confirm: a temp-dir test caught a path bug") == 2
    assert twin_after(once, "", move.lines, base, move.ending) == once  # a resumed run appends nothing
    half = once[: once.index(b"- 2026-06-30")]  # as if a crash cut the append short
    assert twin_after(half, "", move.lines, base, move.ending) == once


def test_a_crlf_file_keeps_crlf_and_its_new_twin_takes_crlf_too() -> None:
    raw = PRINCIPLES.replace("\n", "\r\n").encode()
    move = plan_evidence("craft/testing.md", raw, None)
    assert move is not None and move.ending == "\r\n"
    assert move.principle.count(b"\n") == move.principle.count(b"\r\n")
    twin = twin_after(None, move.twin_header, move.lines, Counter(), move.ending)
    assert twin.count(b"\n") == twin.count(b"\r\n")
