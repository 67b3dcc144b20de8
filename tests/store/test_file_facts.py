"""A knowledge file's facts, read lazily from its bytes, equal the whole-text regex reading they replace.

The reference below is the earlier one-pass reading (multiline regexes over the decoded,
CR-stripped text); random files built from the pieces that matter (CRs, fences, headings,
stamps, markers, broken UTF-8) must give the same facts either way.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distilld.store.text import decode
from distilld.store.tierfile import (
    DIRECTIVE_RE,
    NON_NEGOTIABLE_RE,
    STAMP_IN_FILE_RE,
    Frontmatter,
    KnowledgeFile,
    _first_heading,
    _starts_a_line,
    _without_cr,
)

FENCE_LINE_RE = re.compile(r"^---$", re.MULTILINE)
FIRST_HEADING_RE = re.compile(r"^#[^\n]*", re.MULTILINE)
DASH_LINE_RE = re.compile(r"^- ", re.MULTILINE)
PINNED_LINE_RE = re.compile(r"^lifecycle: pinned", re.MULTILINE)
KEYS = ("scope", "lifecycle", "read_with", "oversize", "x", "", "x:")


def reference_facts(raw: bytes) -> dict[str, object]:
    text = decode(raw)
    flat = text.replace("\r", "")
    frontmatter, body_start = None, 0
    if flat == "---" or flat.startswith("---\n"):
        fence = FENCE_LINE_RE.search(flat, 4)
        head = flat[4:fence.start() if fence else len(flat)].split("\n")
        if head and head[-1] == "":
            head.pop()
        frontmatter = Frontmatter(tuple(head), closed=fence is not None)
        body_start = len(head) + (2 if fence else 1)
    stamps = STAMP_IN_FILE_RE.findall(flat)
    heading = FIRST_HEADING_RE.search(flat)
    return {
        "line_count": flat.count("\n") + (1 if flat and not flat.endswith("\n") else 0),
        "frontmatter": frontmatter,
        "body_start": body_start,
        "newest_stamp": max(stamps) if stamps else None,
        "first_heading": heading.group(0) if heading else None,
        "non_negotiable": NON_NEGOTIABLE_RE.search(text) is not None,
        "directives": len(DIRECTIVE_RE.findall(text)),
        "dash_lines": len(DASH_LINE_RE.findall(flat)),
        "pinned_line": PINNED_LINE_RE.search(flat) is not None,
        "values": {key: frontmatter.value(key) if frontmatter else None for key in KEYS},
    }


def lazy_facts(raw: bytes) -> dict[str, object]:
    file = KnowledgeFile("craft/x.md", raw)
    facts: dict[str, object] = {
        "line_count": file.line_count,
        "frontmatter": file.frontmatter if file.has_frontmatter else None,
        "body_start": len(file.lines) - len(file.body_lines),
        "newest_stamp": file.newest_stamp,
        "first_heading": _first_heading(raw),
        "non_negotiable": file.has_non_negotiable,
        "directives": file.directive_count,
        "dash_lines": file.dash_entry_count(),
        "pinned_line": _starts_a_line(_without_cr(raw), b"lifecycle: pinned") > 0,
        "values": {key: file.fm(key) for key in KEYS},
    }
    return facts


PIECES = [b"---", b"\n", b"\r", b"\r\n", b"- ", b"#", b"# Title", b"lifecycle: pinned", b"last_updated: 2026-01-02",
          b"last_validated:   2025-12-31", b"[NON-NEGOTIABLE]", b"[NON-NEGOTIABLE 2026]", b"[DIRECTIVE x]", b"]",
          b"scope: s", b"x", b" ", b"\xe2\x80\x94", b"\xe2", b"\x80", b"\x00", b"read_with: [a.md]",
          b"lifecycle:\tpinned", b"oversize", b":", b"\t", b"last", b"_validated: 2027-01-01"]


@pytest.mark.slow  # many examples: in the full run, not the default one
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_lazy_facts_equal_the_whole_text_reading(pieces: list[bytes]) -> None:
    raw = b"".join(pieces)
    assert lazy_facts(raw) == reference_facts(raw)
