"""The one self-check gate: C1-C4 on the store a plan would leave, before its first write.

The planned store is the store as read under the lock with every planned operation laid over
it, the rebuilt catalog included. A plan that would make a check fail where the store passes
now (a pointer lost, an entry over its cap, a line lost) is refused, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..errors import DistilldError
from ..store import fs
from ..store.catalog import render_catalog
from ..store.findings import Finding
from ..store.invariants import check_store
from ..store.ledger import LEDGER_HEADER, Ledger, ledger_stamp
from ..store.paths import CATALOG, LEDGER, SPINE
from ..store.snapshot import Snapshot, planned_snapshot
from .context import PassContext
from .executor import FileMove, FileRemove, FileWrite, FrontmatterEdit, LedgerAppend, SpineEdit, Step, TwinAppend


def planned_files(before: Snapshot, steps: list[Step], now_stamp: str) -> dict[str, bytes]:
    """Every file of ``before`` as the steps would leave it (a moved file under its new name)."""
    files = before.file_contents()
    for op in (op for step in steps for op in step.ops):
        if isinstance(op, FileWrite):
            files[op.path] = op.data
        elif isinstance(op, FileRemove):
            files.pop(op.path, None)
        elif isinstance(op, FileMove):
            if op.source in files:
                files[op.target] = files.pop(op.source)
        elif isinstance(op, TwinAppend):
            files[op.path] = op.result(files.get(op.path))
        elif isinstance(op, FrontmatterEdit) and op.path in files:
            files[op.path] = op.result(files[op.path])
        elif isinstance(op, LedgerAppend):
            current = files.get(LEDGER)
            ledger = Ledger(current) if current is not None else None
            if not op.done_in(ledger):
                line = op.line(ledger_stamp(ledger, now_stamp))
                files[LEDGER] = fs.appended(current, line, LEDGER_HEADER)
        elif isinstance(op, SpineEdit) and SPINE in files:
            edited = op.result(files[SPINE])
            if edited is not None:
                files[SPINE] = edited
    return files


def new_failures(ctx: PassContext, before: Snapshot, files: dict[str, bytes], now: datetime,
                 lossless: bool = True, tolerated: Callable[[Finding], bool] | None = None) -> list[Finding]:
    """The failures the planned store (``files`` with its catalog rebuilt) would have that
    ``before`` has not. ``lossless=False`` leaves C4 out, for a pass that takes a file out of the
    archive on purpose (a restore: its ledger line says so). ``tolerated`` findings are the
    pass's to report afterwards, not to refuse (a restored file over its caps: the person asked
    for it back as it was)."""
    files = dict(files)
    files[CATALOG] = fs.with_line_ending(render_catalog(planned_snapshot(before, files), now).encode(
        "utf-8", "surrogateescape"), fs.line_ending_of(files[CATALOG]) if CATALOG in files else b"\n")
    known = {(f.code, f.message) for f in check_store(before, ctx.limits) if f.severity == "fail"}
    new, _ = ctx.split_failures(planned_snapshot(before, files), before if lossless else None)
    return [f for f in new if (f.code, f.message) not in known and not (tolerated and tolerated(f))]


def refuse_unless_plan_passes(ctx: PassContext, before: Snapshot, files: dict[str, bytes], what: str,
                              refused: type[DistilldError] = DistilldError, lossless: bool = True,
                              tolerated: Callable[[Finding], bool] | None = None,
                              advice: str = "reword or merge that entry by hand, or report the case") -> None:
    """Raise ``refused`` naming the first failures when the ``what`` (planned) store would fail its
    self-check, with ``advice`` on what a person can do."""
    new = new_failures(ctx, before, files, ctx.now(), lossless, tolerated)
    if new:
        shown = "; ".join(f"[{f.group}] {f.message}" for f in new[:5])
        more = f" (and {len(new) - 5} more)" if len(new) > 5 else ""
        raise refused(f"the {what} store would fail its self-check: {shown}{more}. Nothing was "
                      f"changed; {advice}")
