"""How a pass's journal is gated and carried out: the one respect in which the passes on the
driver (engine/driver.py) and the generic recovery (engine/passes/``journalled_pass``) differ."""

from __future__ import annotations

from dataclasses import dataclass


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

    @property
    def heartbeat_interval(self) -> float:
        return 0.0 if self.durable else 1.0


REVERSIBLE = Carrying()
