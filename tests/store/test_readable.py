"""binary_reason counts odd bytes at C speed; these pin it to the plain per-byte definition."""

from __future__ import annotations

import random

import pytest

from daemon.store.readable import BINARY_SHARE, _undecodable_bytes, binary_reason

TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r")


def slow_odd_bytes(raw: bytes) -> int:
    undecodable = sum(1 for ch in raw.decode("utf-8", "surrogateescape") if "\udc80" <= ch <= "\udcff")
    controls = sum(1 for byte in raw if (byte < 0x20 and byte not in TEXT_CONTROLS) or byte == 0x7F)
    return undecodable + controls


def slow_reason(raw: bytes) -> str | None:
    nul = raw.find(b"\x00")
    if nul >= 0:
        return f"it holds NUL bytes (first at offset {nul})"
    odd = slow_odd_bytes(raw) if raw else 0
    if raw and odd > max(8, BINARY_SHARE * len(raw)):
        return f"{odd} of its {len(raw)} bytes are control or invalid UTF-8 bytes"
    return None


@pytest.mark.parametrize("seed", range(200))
def test_matches_the_per_byte_definition(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [b"a", b"\n", b"\t", b"\x01", b"\x7f", b"\xff", b"\xc3\xa9", b"\xe2\x82", b"\x1b", b"\r", b"\x80"]
    raw = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 300)))
    assert binary_reason(raw) == slow_reason(raw)


def test_clean_utf8_has_no_undecodable_bytes() -> None:
    assert _undecodable_bytes("héllo — wörld\n".encode()) == 0
    assert _undecodable_bytes(b"ok \xff\xfe ok \xc3") == 3


def test_control_heavy_text_is_binary_and_plain_text_is_not() -> None:
    assert binary_reason(b"\x01\x02\x03" * 10 + b"text") == "30 of its 34 bytes are control or invalid UTF-8 bytes"
    assert binary_reason(b"# SPINE\n\n- a line\r\n\tindented\x0c\n" * 1000) is None
