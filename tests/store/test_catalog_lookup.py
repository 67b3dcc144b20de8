"""A catalog row lookup equals the checker's literal one: the first line containing ``- <p> |``.

The index behind ``Catalog.row_for`` keeps one key per ``- `` (the text up to the next ``" |"``);
random catalogs and paths built from the pieces that matter (dashes, pipes, blanks) must give
the row the literal search gives.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from distilld.store.catalog import Catalog, is_known_segment, KNOWN_SEGMENT_RE

PIECES = ["- ", " |", " | ", "|", " ", "-", "a.md", "b", "\n", "\r\n", "validated 2026-01-02", "x - y"]
PATH_PIECES = ["a.md", "b", " ", "-", "|", " |", "- "]


def literal_row(lines: list[str], path: str) -> str | None:
    needle = f"- {path} |"
    return next((line for line in lines if needle in line), None)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30), st.lists(st.sampled_from(PATH_PIECES), max_size=4))
def test_row_for_equals_the_literal_search(pieces: list[str], path_pieces: list[str]) -> None:
    catalog = Catalog("".join(pieces).encode())
    path = "".join(path_pieces)
    assert catalog.row_for(path) == literal_row(catalog.lines, path)
    for line in catalog.lines:  # every path a line names, too
        start = line.find("- ")
        while start != -1:
            for end in range(start + 2, len(line) + 1):
                candidate = line[start + 2:end]
                assert catalog.row_for(candidate) == literal_row(catalog.lines, candidate)
            start = line.find("- ", start + 1)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="validtehrcomfsknp:0123456789 ", max_size=16))
def test_known_segment_equals_its_regex(segment: str) -> None:
    assert is_known_segment(segment) == (KNOWN_SEGMENT_RE.match(segment) is not None)
