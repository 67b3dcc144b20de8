"""The quick look that spares most names the full unsafe-name check never spares an unsafe one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distilld.store.hygiene import maybe_unsafe_name
from distilld.store.safety import unsafe_name_reason

PIECES = ["/", "-", ".", "..", " ", "a", "x.md", "con", "CON", "Com1", "lpt9", "nul.md", "aux", "prn", "com",
          "\u0131", "\u017f", "\ufb05", "\u212a", "\x00", "\n", "\x7f", "|", " | ", ":", "<", "?", "*", '"',
          "\u2014", "\udcff", "1", "0"]


@pytest.mark.slow  # many examples: in the full run, not the default one
@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8))
def test_a_name_the_quick_look_passes_is_safe(pieces: list[str]) -> None:
    path = "".join(pieces)
    if not maybe_unsafe_name(path):
        assert unsafe_name_reason(path) is None, path


@given(st.text(max_size=12))
def test_any_text_the_quick_look_passes_is_safe(path: str) -> None:
    if not maybe_unsafe_name(path):
        assert unsafe_name_reason(path) is None, path
