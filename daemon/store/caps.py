"""The hard caps the invariants enforce (STORE-FORMAT.md 1.3, 1.4, 3.1)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Caps:
    spine_max_lines: int = 80
    spine_max_bytes: int = 16000
    entry_max_bytes: int = 400
    file_max_lines: int = 60
    file_max_bytes: int = 6000


DEFAULT_CAPS = Caps()
