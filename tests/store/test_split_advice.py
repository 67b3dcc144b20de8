"""The advice a refused split gives (store/split.py) is true for the case it is given in.

`oversize: <reason>` lifts the byte cap only. So it is offered only where the byte cap is what
binds, and each case here follows the advice (or the offer it does not make) on a real file,
then checks C3 on the result: the advice given works, and the advice held back would not.
"""

from __future__ import annotations

from pathlib import Path

from distilld.policy import load_policy
from distilld.store.invariants import check_c3
from distilld.store.snapshot import snapshot_from_files
from distilld.store.split import split_knowledge_file

LIMITS = load_policy().limits
FRONT = "---\nscope: Release rules\nlast_updated: 2026-08-01\n---\n\n# Releases\n\n"
PATH = "craft/releases.md"


def never_taken(path: str) -> bool:
    return False


def advice(raw: str) -> str:
    out = split_knowledge_file(PATH, raw.encode(), 60, 6000, never_taken)
    assert out is not None and len(out.over_cap) == 1, out
    return out.over_cap[0]


def cap_codes(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, str]]:
    snapshot = snapshot_from_files(tmp_path, {p: t.encode() for p, t in files.items()})
    return {(f.path, f.code) for f in check_c3(snapshot, LIMITS) if f.code in ("file-lines", "file-bytes")}


def with_oversize(text: str) -> str:
    return text.replace("---\n", "---\noversize: one long reference table\n", 1)


def short_bullets(count: int) -> str:
    return "".join(f"- Rule {n}: tag the release candidate.\n" for n in range(count))


def long_paragraph(words: int) -> str:
    return " ".join(f"word{n}" for n in range(words)) + "\n"


# -- a file with no place to cut -------------------------------------------------------------------

def test_no_place_to_cut_over_the_line_cap_only_does_not_offer_oversize(tmp_path: Path) -> None:
    text = FRONT + "".join(f"line {n}\n" for n in range(70))
    message = advice(text)
    assert message.endswith("Break it into sections or bullets by hand") and "oversize" not in message
    assert cap_codes(tmp_path, {PATH: with_oversize(text)}) == {(PATH, "file-lines")}  # it would not have helped


def test_no_place_to_cut_over_the_byte_cap_only_offers_oversize_and_that_works(tmp_path: Path) -> None:
    text = FRONT + long_paragraph(900)
    message = advice(text)
    assert "or declare `oversize: <reason>` in its frontmatter (that lifts the byte cap, and the file is within " \
           "its 60-line cap)" in message
    assert cap_codes(tmp_path, {PATH: text}) == {(PATH, "file-bytes")}
    assert cap_codes(tmp_path, {PATH: with_oversize(text)}) == set()


def test_no_place_to_cut_over_both_caps_says_why_oversize_would_not_help(tmp_path: Path) -> None:
    text = FRONT + "".join(f"{long_paragraph(20).rstrip()} {n}\n" for n in range(70))
    message = advice(text)
    assert "`oversize:` would not help: it lifts the byte cap only, and the file is over its 60-line cap" in message
    assert "or declare `oversize" not in message
    assert cap_codes(tmp_path, {PATH: with_oversize(text)}) == {(PATH, "file-lines")}


# -- one unit too big for a piece ------------------------------------------------------------------

def test_a_unit_over_the_line_room_does_not_offer_oversize(tmp_path: Path) -> None:
    marked = "## [NON-NEGOTIABLE] Never deploy on Fridays\n\n" + "".join(f"- reason {n}\n" for n in range(70))
    text = FRONT + "## Intro\n\n" + short_bullets(20) + "\n" + marked
    message = advice(text)
    assert "the marked section '## [NON-NEGOTIABLE] Never deploy on Fridays'" in message
    assert message.endswith("Shorten it or move part of it to another file by hand") and "oversize" not in message
    assert (PATH, "file-lines") in cap_codes(tmp_path, {PATH: with_oversize(text)})


def test_a_unit_over_the_byte_room_in_a_file_within_its_line_cap_offers_oversize_and_that_works(
        tmp_path: Path) -> None:
    text = FRONT + "## Intro\n\n" + short_bullets(5) + "\n## Reference\n\n- " + long_paragraph(900)
    message = advice(text)
    assert "one bullet with its continuation lines at lines" in message
    assert message.endswith("or declare `oversize: <reason>` in the frontmatter (that lifts the byte cap, and the "
                            "file is within its 60-line cap)")
    assert cap_codes(tmp_path, {PATH: with_oversize(text)}) == set()


def test_a_unit_over_the_byte_room_in_a_file_over_its_line_cap_is_moved_to_a_file_of_its_own(
        tmp_path: Path) -> None:
    unit = "## Reference\n\n- " + long_paragraph(900)
    text = FRONT + "## Intro\n\n" + short_bullets(60) + "\n" + unit
    message = advice(text)
    assert "or move it whole into a file of its own (with a SPINE entry) that declares `oversize: <reason>`" in message
    assert "`oversize:` here would not help, as this file is over its 60-line cap" in message
    # Declaring it on this file would not help ...
    assert (PATH, "file-lines") in cap_codes(tmp_path, {PATH: with_oversize(text)})
    # ... what the advice says does: the unit in a file of its own passes, and the rest can be split.
    own = "craft/release-reference.md"
    rest = text.replace(unit, "")
    assert cap_codes(tmp_path, {own: with_oversize(FRONT + unit)}) == set()
    split = split_knowledge_file(PATH, rest.encode(), 60, 6000, never_taken)
    assert split is not None and split.children and not split.over_cap
