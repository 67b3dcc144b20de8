"""Whether a file the passes must parse can be read as text at all. A stray invalid byte is
text with a flaw (check notes it, and writers keep the byte); binary junk (NUL bytes, or mostly
control and undecodable bytes) is not, and no write pass should edit around it."""

from __future__ import annotations

import re
from pathlib import Path

# Control bytes that text files do hold: tab, LF, VT, FF, CR.
_TEXT_CONTROLS = frozenset(b"\t\n\x0b\x0c\r")
# The other control bytes, and DEL: counted with bytes.translate, at C speed (a SPINE can be megabytes).
_ODD_CONTROLS = bytes(byte for byte in [*range(0x20), 0x7F] if byte not in _TEXT_CONTROLS)
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of an undecodable byte
BINARY_SHARE = 0.05  # more than this share of odd bytes: it is not text


def binary_reason(raw: bytes) -> str | None:
    """Why ``raw`` is not text, or None when it is."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        return f"it holds NUL bytes (first at offset {nul})"
    if not raw:
        return None
    undecodable = _undecodable_bytes(raw)
    controls = len(raw) - len(raw.translate(None, _ODD_CONTROLS))
    odd = undecodable + controls
    if odd > max(8, BINARY_SHARE * len(raw)):
        return f"{odd} of its {len(raw)} bytes are control or invalid UTF-8 bytes"
    return None


def _undecodable_bytes(raw: bytes) -> int:
    """How many bytes of ``raw`` are not part of valid UTF-8 (0 at once for the usual clean file)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return len(_ESCAPED_BYTE.findall(raw.decode("utf-8", "surrogateescape")))
    return 0


def unreadable_reason(path: Path) -> str | None:
    """Why ``path`` cannot be read as text (an OS error, or binary content); None when it can,
    or when it does not exist or is a symlink (never read through: the checks report both)."""
    if path.is_symlink():
        return None
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "it is a folder"
    except OSError as error:
        return f"it cannot be read ({error.strerror or error})"
    return binary_reason(raw)
