"""What the health report cannot measure, and why: said as unknown, never as a number."""

from __future__ import annotations

from .paths import SPINE
from .readable import binary_reason
from .snapshot import Snapshot

NO_SPINE = "the store has no SPINE.md"


def spine_unknown_reason(snapshot: Snapshot) -> str | None:
    """Why nothing can be measured from SPINE.md: absent, unreadable, or not text (issue 27: an
    unreadable one showed as 0 B, a binary one as 20,000 B and 68 lines)."""
    if snapshot.spine is None:
        return NO_SPINE
    failed = next((error.message for error in snapshot.read_errors if error.path == SPINE), None)
    if failed is not None:
        return f"SPINE.md {failed}"
    why = binary_reason(snapshot.spine.raw)
    return f"SPINE.md is not text: {why}" if why else None
