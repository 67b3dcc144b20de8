"""The one recovery: finish what a killed pass left, before any new pass plans.

Every write pass calls ``finish_interrupted`` first, under the lock, so no pass ever plans
from a half-written store and every recovery is said in the report. It asks each registered
pass (daemon/registry.py) for its unfinished journals and has the pass finish, or roll
back, each one through the one executor and the one finish step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..errors import DistilldError
from .context import PassContext
from .passes import registered_passes


Outcome = TypeVar("Outcome")


@dataclass
class Resumed:
    notes: dict[str, list[str]] = field(default_factory=dict)  # by pass: what was finished or rolled back
    outcomes: dict[str, object] = field(default_factory=dict)  # by pass: its own outcome

    @property
    def all_notes(self) -> list[str]:
        return [note for notes in self.notes.values() for note in notes]

    def notes_besides(self, name: str) -> list[str]:
        """The notes of the other passes (for a report that shows this pass's outcome itself)."""
        return [note for pass_name, notes in self.notes.items() if pass_name != name for note in notes]

    def outcome(self, name: str, kind: type[Outcome]) -> Outcome | None:
        found = self.outcomes.get(name)
        return found if isinstance(found, kind) else None


def finish_interrupted(ctx: PassContext) -> Resumed:
    resumed = Resumed()
    if ctx.notes:
        resumed.notes["store"] = list(ctx.notes)
    for plugin in registered_passes(ctx.root):
        if plugin.recover is not None and plugin.unfinished(ctx.root):
            recovered = plugin.recover(ctx)
            ctx.wrote()
            resumed.notes[plugin.name] = recovered.notes
            resumed.outcomes[plugin.name] = recovered.outcome
    return resumed


def interrupted_passes(root: Path) -> list[str]:
    """Every pass left unfinished in the store (its journal, relative to the store): while one is
    there the store is mid-pass, so nothing of it is committed and status shows it as stuck."""
    try:
        found = [path for plugin in registered_passes(root) for path in plugin.unfinished(root)]
    except (DistilldError, OSError, ValueError) as error:
        return [f"an unreadable journal: {error}"]
    return [path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path) for path in found]
