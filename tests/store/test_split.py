"""Splitting an over-cap tier file (store/split.py; STORE-FORMAT.md 1.5, 4.3).

Cuts only at ``## `` boundaries, never inside a code fence or a marked ``# `` section; the
parent keeps frontmatter and preamble and ends with ``Continued in``; children are the next
free ``-N.md`` with ``split_from:``; line endings are kept; every line survives as often as it
was there; a section over the caps alone is reported.
"""

from __future__ import annotations

from collections import Counter

from distilld.store.split import cut_points, split_knowledge_file
from distilld.store.text import split_lines
from distilld.store.tierfile import KnowledgeFile
from maintenance_fixtures import long_file

FRONT = "---\nscope: Retry rules\nlast_updated: 2026-08-01\n---\n\n# Retries\n\nIntro line.\n\n"


def nonblank(raw: bytes) -> Counter[str]:
    return Counter(line.strip() for line in raw.decode().replace("\r", "").split("\n") if line.strip())


def never_taken(path: str) -> bool:
    return False


def test_a_file_within_its_caps_is_not_split() -> None:
    assert split_knowledge_file("craft/retries.md", (FRONT + long_file("Retry", 2)).encode(), 60, 6000,
                                never_taken) is None


def test_the_parent_keeps_the_start_and_the_children_take_the_rest_at_section_boundaries() -> None:
    raw = (FRONT + long_file("Retry", 12)).encode()  # 9 + 72 lines
    out = split_knowledge_file("craft/retries.md", raw, 60, 6000, never_taken)
    assert out is not None and [name for name, _ in out.children] == ["craft/retries-2.md"]
    parent = out.parent.decode()
    assert parent.startswith(FRONT + "## Retry rule 0\n")
    assert parent.endswith("\nContinued in `craft/retries-2.md`.\n")
    child = out.children[0][1].decode()
    assert child.startswith("---\nscope: Retry rules (continued)\nsplit_from: craft/retries.md\n"
                            "last_updated: 2026-08-01\n---\n## Retry rule ")
    for piece in (out.parent, out.children[0][1]):
        file = KnowledgeFile("x", piece)
        assert file.line_count <= 60 and file.size <= 6000
    assert nonblank(out.parent) + nonblank(out.children[0][1]) - nonblank(raw) == Counter({
        "Continued in `craft/retries-2.md`.": 1, "---": 2, "scope: Retry rules (continued)": 1,
        "split_from: craft/retries.md": 1, "last_updated: 2026-08-01": 1})


def test_many_pieces_chain_their_continued_lines_and_take_the_next_free_numbers() -> None:
    raw = (FRONT + long_file("Retry", 30)).encode()
    taken = {"craft/retries-2.md", "archive/craft/retries-4.md"}
    out = split_knowledge_file("craft/retries.md", raw, 60, 6000,
                               lambda p: p in taken or "archive/" + p in taken)
    assert out is not None
    names = [name for name, _ in out.children]
    assert names == ["craft/retries-3.md", "craft/retries-5.md", "craft/retries-6.md"]
    assert out.parent.decode().endswith("Continued in `craft/retries-3.md`.\n")
    assert out.children[0][1].decode().endswith("Continued in `craft/retries-5.md`.\n")
    assert not out.children[-1][1].decode().rstrip().endswith(".md`.")
    assert all("split_from: craft/retries.md\n" in data.decode() for _, data in out.children)


def test_a_split_child_split_again_keeps_the_family_numbering_and_names_itself_as_parent() -> None:
    raw = ("---\nsplit_from: craft/retries.md\nlast_updated: 2026-08-01\n---\n" + long_file("Retry", 12)).encode()
    out = split_knowledge_file("craft/retries-2.md", raw, 60, 6000,
                               lambda p: p in ("craft/retries.md", "craft/retries-3.md"))
    assert out is not None and out.children[0][0] == "craft/retries-4.md"
    assert "split_from: craft/retries-2.md\n" in out.children[0][1].decode()  # C4 counts it for its source


def test_no_cut_inside_a_code_fence_or_a_marked_top_level_section() -> None:
    lines = split_lines(
        "# Notes\n\n## A\n\nx\n\n```sh\n## not a heading\n```\n\n"
        "# [DIRECTIVE 2026-07-20] Fixtures\n\n## Inside the directive\n\n- kept with it\n\n"
        "# Other\n\n## B\n\ny\n")
    assert [lines[i] for i in cut_points(lines, 0, len(lines))] == ["## A", "## B"]


def test_a_protected_heading_section_travels_whole() -> None:
    protected = ("## [NON-NEGOTIABLE] Keys\n\n" + "".join(f"- key rule {n}\n" for n in range(20))
                 + "  origin: directive (Ines, 2026-03-04)\n\n")
    raw = (FRONT + long_file("Retry", 7) + protected + long_file("Retry", 3, 7)).encode()
    out = split_knowledge_file("craft/retries.md", raw, 60, 6000, never_taken)
    assert out is not None
    holders = [data.decode() for data in [out.parent] + [d for _, d in out.children]
               if "## [NON-NEGOTIABLE] Keys" in data.decode()]
    assert len(holders) == 1 and protected in holders[0]


def test_crlf_stays_crlf_in_the_parent_and_in_every_child() -> None:
    raw = (FRONT + long_file("Retry", 12)).replace("\n", "\r\n").encode()
    out = split_knowledge_file("craft/retries.md", raw, 60, 6000, never_taken)
    assert out is not None
    for data in [out.parent] + [d for _, d in out.children]:
        assert data.count(b"\n") == data.count(b"\r\n") > 0
    assert nonblank(raw) - (nonblank(out.parent) + nonblank(out.children[0][1])) == Counter()


def test_duplicate_lines_survive_as_often_as_they_were_there() -> None:
    dup = "## Same\n\n- Run the whole suite before a commit.\n- Run the whole suite before a commit.\n\n"
    raw = (FRONT + dup + long_file("Retry", 10) + dup).encode()
    out = split_knowledge_file("craft/retries.md", raw, 60, 6000, never_taken)
    assert out is not None
    together = nonblank(out.parent) + sum((nonblank(d) for _, d in out.children), Counter())
    assert together["- Run the whole suite before a commit."] == 4
    assert nonblank(raw) - together == Counter()


def test_a_unit_over_the_caps_alone_is_named_with_its_size_and_the_room_a_child_has() -> None:
    big = "## Huge table\n\n" + "".join(f"| row {n} | value |\n" for n in range(70)) + "\n"
    raw = (FRONT + long_file("Retry", 3) + big + long_file("Retry", 3, 3)).encode()
    out = split_knowledge_file("craft/retries.md", raw, 60, 6000, never_taken)
    assert out is not None
    assert out.over_cap == [("craft/retries.md: a table at lines 28-100 is 73 lines, 1336 bytes, more than a "
                            "split piece can hold (about 52 lines and 5766 bytes: the caps 60 lines / 6000 bytes "
                            "minus the child's 5-line frontmatter, a continued heading and the Continued line); "
                            "it is never cut inside. Shorten it or move part of it to another file by hand")]
    # What can be split around it still is: the pieces before and after it are within the caps.
    sizes = [KnowledgeFile("x", data) for data in (out.parent, *(d for _, d in out.children))]
    assert sum(1 for f in sizes if f.line_count > 60) == 1


def test_a_trailing_evidence_citation_stays_with_the_parent() -> None:
    citation = "Evidence: 2026-04-18 to 2026-06-30 in `evidence/craft/retries.md` (4 entries).\n"
    raw = (FRONT + long_file("Retry", 12) + "\n" + citation).encode()
    out = split_knowledge_file("craft/retries.md", raw, 60, 6000, never_taken)
    assert out is not None
    assert out.parent.decode().endswith("Continued in `craft/retries-2.md`.\n\n" + citation)
    assert all(citation not in d.decode() for _, d in out.children)
