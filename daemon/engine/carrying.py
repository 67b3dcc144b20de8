"""How a pass's journal is gated and carried out: the one respect in which the passes on the
driver (engine/driver.py) and the generic recovery (engine/passes/``journalled_pass``) differ."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..store.snapshot import Snapshot
    from .apply import JournalRun
    from .context import PassContext


class JournalFormat(Protocol):
    """How a pass's journal is written, before its first write, and carried out. The internal
    format (engine/driver.py) serves every pass whose journal the store format does not fix;
    gc's manifest is the other (engine/passes/gc/apply.py)."""

    def refuse(self, ctx: PassContext, made: Any) -> None:
        """Raise when the plan is one the format cannot journal or carry out (before the gate)."""

    def start(self, ctx: PassContext, name: str, journals: str, made: Any) -> Any:
        """Write the journal of the plan ``made`` to disk, in the store folder ``journals``."""

    def carry(self, ctx: PassContext, journal: Any, before: Snapshot, carrying: Carrying) -> JournalRun:
        """Carry it out and finish the pass (catalog, self-check)."""


@dataclass(frozen=True)
class Carrying:
    # A file changed under the pass, or its self-check failed: undo what it wrote. False: the
    # pass is only ever rolled forward (a restore's ledger line stays once written), so a changed
    # file stops it, naming the file, until the file is as planned again.
    rolls_back: bool = True
    # Each write on disk, and the lock's heartbeat, before the next (the store format's order
    # for a restore); otherwise writes are synced in batches, at the pacer's barriers.
    durable: bool = False
    # The gate and the self-check hold the pass to C4 (no line lost) against the store before
    # it. False for a pass that takes a file out of the archive on purpose: its ledger says so.
    lossless: bool = True
    # What a person can do when the gate refuses the planned store.
    advice: str = "reword or merge that entry by hand, or report the case"
    # The journal's format; None: the internal one.
    journal_format: JournalFormat | None = None

    @property
    def heartbeat_interval(self) -> float:
        return 0.0 if self.durable else 1.0


REVERSIBLE = Carrying()
