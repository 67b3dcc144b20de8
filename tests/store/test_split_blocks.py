"""Splitting below the section (store/split.py): the shapes agents really write.

A topic written as one long `## Principles` section is cut between its blocks; the continuation
piece reopens the heading with "(continued)"; no cut falls inside a code fence, a marked section
or a bullet's continuation lines; pieces end at the compaction target when asked; what cannot be
cut is named with its size and the room a piece has; no byte of knowledge is lost.
"""

from __future__ import annotations

from collections import Counter

from distilld.store.split import Limit, find_cuts, split_knowledge_file
from distilld.store.text import split_lines
from distilld.store.tierfile import KnowledgeFile

FRONT = "---\nscope: Release rules\nlast_updated: 2026-08-01\n---\n\n# Releases\n\n"
TARGET = Limit(45, 4500)


def bullet(n: int, continuations: int = 2) -> str:
    lines = [f"- [PRINCIPLE] Rule {n}: tag every release candidate and keep its changelog entry short."]
    lines += [f"  confidence: validated ({n} confirmations, 0 corrections)", "  last_validated: 2026-07-01",
              "  Why: a reviewer reads the tag before the diff."][:continuations]
    return "\n".join(lines) + "\n"


def one_section(count: int, heading: str = "## Principles") -> str:
    return FRONT + heading + "\n\n" + "".join(bullet(n, 1 + n % 3) for n in range(count))


def never_taken(path: str) -> bool:
    return False


def pieces(out: object) -> list[bytes]:
    assert out is not None
    return [out.parent, *(data for _, data in out.children)]  # type: ignore[attr-defined]


def nonblank(raw: bytes) -> Counter[str]:
    return Counter(line.strip() for line in raw.decode().replace("\r", "").split("\n") if line.strip())


def added_lines(raw: bytes, out: object) -> Counter[str]:
    together = sum((nonblank(p) for p in pieces(out)), Counter())
    assert not nonblank(raw) - together  # every line of the file is still there, as often
    return together - nonblank(raw)


def test_one_long_section_is_cut_between_bullets_and_the_pieces_reopen_its_heading() -> None:
    raw = one_section(40).encode()
    out = split_knowledge_file("craft/releases.md", raw, 60, 6000, never_taken, TARGET)
    parts = pieces(out)
    assert len(parts) >= 3
    for part in parts:
        file = KnowledgeFile("x", part)
        assert file.line_count <= 45 and file.size <= 4500
    for _, child in out.children:  # type: ignore[union-attr]
        body = child.decode().split("---\n", 2)[2]
        assert body.startswith("## Principles (continued)\n- [PRINCIPLE] Rule ")
    extra = added_lines(raw, out)
    assert extra["## Principles (continued)"] == len(parts) - 1
    # A bullet never leaves its continuation lines behind: each piece starts at a bullet.
    for part in parts[1:]:
        first = part.decode().split("## Principles (continued)\n", 1)[1].splitlines()[0]
        assert first.startswith("- [PRINCIPLE]")


def test_packed_to_the_caps_it_needs_fewer_pieces_than_to_the_target() -> None:
    raw = one_section(40).encode()
    at_caps = split_knowledge_file("craft/releases.md", raw, 60, 6000, never_taken)
    at_target = split_knowledge_file("craft/releases.md", raw, 60, 6000, never_taken, TARGET)
    assert len(pieces(at_caps)) < len(pieces(at_target))
    assert at_caps is not None and at_caps.over_target == 0


def test_cuts_prefer_section_boundaries_when_the_piece_count_is_the_same() -> None:
    raw = (FRONT + "## First\n\n" + "".join(bullet(n) for n in range(12)) + "\n## Second\n\n"
           + "".join(bullet(n) for n in range(12, 24))).encode()
    out = split_knowledge_file("craft/releases.md", raw, 60, 6000, never_taken)
    assert out is not None and len(out.children) == 1
    assert out.children[0][1].decode().split("---\n", 2)[2].startswith("## Second\n")


def test_no_cut_inside_a_fence_a_marked_section_or_a_bullet() -> None:
    text = ("## Principles\n\n- a\n  continued\n- b\n\n```sh\n- not a bullet\n\n## not a heading\n```\n"
            "## [DIRECTIVE 2026-07-20] Fixtures\n\n- kept with it\n\n- and this\n\n### inside too\n\n- yes\n"
            "## After\n\n- c\n| t | u |\n|---|---|\n| 1 | 2 |\nplain\n")
    lines = split_lines(text)
    cut_lines = [lines[c.index] for c in find_cuts(lines, 0, len(lines))]
    assert cut_lines == ["- b", "```sh", "## [DIRECTIVE 2026-07-20] Fixtures", "## After", "| t | u |", "plain"]


def test_a_subsection_cut_reopens_both_headings() -> None:
    raw = (FRONT + "## Principles\n\n### Tags\n\n" + "".join(bullet(n) for n in range(30))).encode()
    out = split_knowledge_file("craft/releases.md", raw, 60, 6000, never_taken)
    assert out is not None
    assert "## Principles (continued)\n### Tags (continued)\n- " in out.children[0][1].decode()


def test_crlf_no_final_newline_and_a_heading_with_trailing_spaces_keep_every_byte() -> None:
    text = one_section(30, "## Principles   ").rstrip("\n")
    raw = text.replace("\n", "\r\n").encode()
    out = split_knowledge_file("craft/releases.md", raw, 60, 6000, never_taken, TARGET)
    for part in pieces(out):
        assert part.count(b"\n") == part.count(b"\r\n")
    assert b"## Principles (continued)\r\n" in out.children[0][1]  # type: ignore[union-attr]
    assert added_lines(raw, out)["## Principles (continued)"] == len(out.children)  # type: ignore[union-attr]


def test_an_older_continued_line_goes_last_whatever_was_appended_after_it() -> None:
    raw = (one_section(20) + "\nContinued in `craft/releases-2.md`.\n" + "".join(bullet(n) for n in range(20, 40))).encode()
    out = split_knowledge_file("craft/releases.md", raw, 60, 6000, lambda p: p == "craft/releases-2.md", TARGET)
    assert out is not None and not out.over_cap
    last = out.children[-1][1].decode().rstrip("\n")
    assert last.endswith("Continued in `craft/releases-2.md`.")
    assert all(KnowledgeFile("x", p).line_count <= 45 for p in pieces(out))
    added_lines(raw, out)


def test_one_enormous_bullet_is_refused_with_its_size_and_what_to_do() -> None:
    huge = "- " + " ".join(f"word{n}" for n in range(1200)) + "\n" + "".join(f"  note {n}\n" for n in range(80))
    raw = (FRONT + "## Principles\n\n" + bullet(1) + huge + bullet(2)).encode()
    out = split_knowledge_file("craft/releases.md", raw, 60, 6000, never_taken)
    assert out is not None and len(out.over_cap) == 1
    message = out.over_cap[0]
    assert message.startswith("craft/releases.md: one bullet with its continuation lines at lines ")
    assert "more than a split piece can hold (about 52 lines" in message and "by hand" in message


def test_a_file_that_is_one_code_fence_or_one_protected_section_is_refused_by_name() -> None:
    fence = FRONT + "## Script\n\n```sh\n" + "".join(f"echo {n}\n" for n in range(80)) + "```\n"
    out = split_knowledge_file("ops/script.md", fence.encode(), 60, 6000, never_taken)
    assert out is not None and not out.children
    assert "no place to cut" in out.over_cap[0]
    marked = (FRONT + "## Intro\n\n- one\n\n## [NON-NEGOTIABLE] Never deploy on Fridays\n\n"
              + "".join(f"- reason {n}\n" for n in range(90)))
    out = split_knowledge_file("ops/fridays.md", marked.encode(), 60, 6000, never_taken)
    assert out is not None
    assert out.over_cap[0].startswith("ops/fridays.md: the marked section '## [NON-NEGOTIABLE] Never deploy on "
                                      "Fridays' at lines 12-103 is 92 lines")


def test_a_new_child_never_takes_the_name_an_older_continued_line_points_at() -> None:
    raw = (one_section(20) + "\nContinued in `craft/releases-3.md`.\n" + "".join(bullet(n) for n in range(20, 40))).encode()
    out = split_knowledge_file("craft/releases-2.md", b"---\nsplit_from: craft/releases.md\n---\n" + raw.split(b"---\n", 2)[2],
                               60, 6000, lambda p: p in ("craft/releases.md", "craft/releases-2.md"), TARGET)
    assert out is not None and out.children
    assert "craft/releases-3.md" not in [name for name, _ in out.children]  # it would point at itself
