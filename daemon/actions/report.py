"""Report pieces shared by the write passes (gc, restore, ...)."""

from __future__ import annotations

from ..store.findings import Finding
from ..store.text import shown

SHOWN = 10


def self_check_lines(failed: list[Finding], still_over_budget: list[Finding], passed_label: str) -> list[str]:
    """The self-check's verdict, and the budget breaches the store already had before the pass."""
    if failed:
        out = ["self-check FAILED:"] + [f"    - [{f.group}] {shown(f.message)}" for f in failed]
    else:
        out = [f"self-check passed ({passed_label})"]
    if still_over_budget:
        out.append(f"still over budget from before this pass ({len(still_over_budget)}; "
                   "compaction, not gc or restore, brings these down):")
        out += [f"    - [{f.group}] {shown(f.message)}" for f in still_over_budget[:SHOWN]]
        if len(still_over_budget) > SHOWN:
            out.append(f"    … and {len(still_over_budget) - SHOWN} more (distilld budget lists them)")
    return out
