"""Which entries keep how many bytes: the SPINE's byte goal shared out by findability. Pure.

Every entry that may be shortened offers a ladder of versions, from its shortest allowed one
to its longest (STORE-FORMAT.md 1.3: never below the entry target or the hook floor, never over
the entry cap). All start on their lowest rung; then, while the SPINE stays within its goal, the
step up that adds most findability per byte is taken, wherever it is. A hook rich in what the
store's self-queries ask for keeps more of its words than one that says little, instead of every
entry being cut to one length.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Rung:
    size: int  # bytes of the entry at this rung
    value: float  # what the store's self-queries find in it
    text: str | None  # None: the entry as it is


def allocate(ladders: Mapping[Key, Sequence[Rung]], other_bytes: int, goal: int) -> dict[Key, int]:
    """The rung each entry takes so that ``other_bytes`` plus the entries' sizes stays within
    ``goal`` where it can (all lowest rungs when it cannot), with the most value."""
    top = {key: len(ladder) - 1 for key, ladder in ladders.items()}
    if other_bytes + sum(ladder[-1].size for ladder in ladders.values()) <= goal:
        return top  # every entry fits as long as it may be
    chosen = {key: 0 for key in ladders}
    total = other_bytes + sum(ladder[0].size for ladder in ladders.values())
    while True:
        best: tuple[float, Key, int] | None = None
        for key, ladder in ladders.items():
            at = ladder[chosen[key]]
            for step in range(chosen[key] + 1, len(ladder)):
                rung = ladder[step]
                grow = rung.size - at.size
                if total + grow > goal:
                    break
                gain = rung.value - at.value
                ratio = gain / max(1, grow) if grow > 0 else (float("inf") if gain >= 0 else -1.0)
                # a step that adds nothing is taken only when no other fits: words a reader reads
                if ratio >= 0 and (best is None or ratio > best[0]):
                    best = (ratio, key, step)
        if best is None:
            return chosen
        _, key, step = best
        total += ladders[key][step].size - ladders[key][chosen[key]].size
        chosen[key] = step
