"""Benchmark the lifecycle pass: planning gc on a large store, and applying its moves, each
against a plain-Python baseline of the same run.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_gc.py                 # plan at 1x/10x/100x, apply 100 moves at 1x/10x
    python tests/benchmarks/bench_gc.py --plan-scales 1,10 --apply-scales 1 --moves 50 --stores DIR

Every figure is CPU (user+sys) and wall time in-process, the median of ``--rounds`` rounds (at
least 5) after a warm-up round, interleaved with its baseline; the load average heads each table.

* Plan: ``plan_gc`` on a snapshot taken beforehand (planning is pure: snapshot in, plan out), and
  ``take_snapshot`` itself, against the baseline reading every file of the store.
* Apply: ``apply_gc`` of the first ``--moves`` moves (a split family is never cut), each round on
  a fresh copy of the store (copy, snapshot and plan untimed). It writes for real with fsync:
  manifest, ledger line, byte-exact move, SPINE edit, done flag and a lock heartbeat per move,
  then one catalog rebuild and the self-check (C1-C3 and C4 against the store before the pass).
  The baseline does the same moves in plain Python: each file written to its archive path and
  fsync'd, the original removed, a ledger line appended and the SPINE rewritten without the
  file's line, both fsync'd; then every file read once (the least a closing check must do).

The clock is set past every project's threshold so all of them are stale.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import (MIN_RUNS, Sample, Series, header, interleaved, make_store, ms, on_fresh_copy,  # noqa: E402
                       read_every_file, row, run_call, show, versus)

from distilld.engine.context import PassContext  # noqa: E402
from distilld.engine.lock import StoreLock  # noqa: E402
from distilld.engine.passes.gc import apply as gc_engine  # noqa: E402
from distilld.engine.passes.gc.apply import apply_gc  # noqa: E402
from distilld.engine.passes.gc.model import GcPlan  # noqa: E402
from distilld.engine.passes.gc.plan import plan_gc  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.snapshot import Snapshot, take_snapshot  # noqa: E402

LIMITS = load_policy().limits
LATER = datetime(2028, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
PLAN_TARGET_S = 2.0  # at 100x


def plan_of(snapshot: Snapshot) -> GcPlan:
    return plan_gc(snapshot, LATER.date(), "2028-01-01T12:00:00Z", LIMITS)


def first_moves(plan: GcPlan, count: int) -> GcPlan:
    """The first ``count`` moves or a little more: a split family is never cut in two."""
    chosen = []
    for move in plan.moves:
        if len(chosen) >= count and (not move.family or move.family[0] == move.source):
            break
        chosen.append(move)
    return GcPlan(now=plan.now, moves=chosen)


def bench_plan(scale: int, scratch: Path, stores: Path | None, rounds: int) -> None:
    root = make_store(scratch / f"x{scale}", scale, stores)
    snapshot = take_snapshot(root)
    found = interleaved({"plan_gc": lambda: run_call(lambda: plan_of(snapshot)),
                         "take_snapshot": lambda: run_call(lambda: take_snapshot(root)),
                         "read every file": lambda: run_call(lambda: read_every_file(root))}, rounds)
    plan = plan_of(snapshot)
    print(f"\n  x{scale} ({len(snapshot.tier_paths)} tier files; {len(plan.moves)} moves, "
          f"{len(plan.skipped)} skipped):")
    show(found)
    print(f"    {versus(found['plan_gc'], found['read every file'])}")
    print(f"    {versus(found['take_snapshot'], found['read every file'])}")
    if scale == 100:
        planned = found["plan_gc"]
        row("plan_gc at x100 (wall)", ms(planned.wall), f"< {PLAN_TARGET_S:.0f} s", planned.wall < PLAN_TARGET_S)


class Closing:
    """Times the once-per-pass closing (catalog rebuild and self-check) inside apply_gc."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.original = gc_engine._finish

    def __enter__(self) -> "Closing":
        def timed(*args):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return self.original(*args)
            finally:
                self.seconds.append(time.perf_counter() - started)
        gc_engine._finish = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *_: object) -> None:
        gc_engine._finish = self.original  # type: ignore[assignment]


def distilld_apply(root: Path, moves: int, counts: list[int]) -> Sample:
    before = take_snapshot(root)
    plan = first_moves(plan_of(before), moves)
    lock = StoreLock(root, "distilld.bench")
    lock.acquire()
    try:
        ctx = PassContext(root, lock, lambda: LATER, LIMITS)
        ctx.take_baseline()
        done: list[int] = []
        sample = run_call(lambda: done.append(len(apply_gc(ctx, plan, before).moved)))
    finally:
        lock.release()
    counts.append(done[0])
    return sample


def synced_write(path: Path, data: bytes, append: bool = False) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def plain_moves(root: Path, moves: int) -> Sample:
    """The baseline: the same moves' writes in plain Python, then every file read once."""
    plan = first_moves(plan_of(take_snapshot(root)), moves)

    def work() -> None:
        spine = (root / "SPINE.md").read_bytes()
        for move in plan.moves:
            target = root / move.target
            target.parent.mkdir(parents=True, exist_ok=True)
            synced_write(target, (root / move.source).read_bytes())
            os.unlink(root / move.source)
            synced_write(root / "archive" / "LEDGER.md", f"- {move.source} -> {move.target}\n".encode(), append=True)
            pointer = f"]({move.source})".encode()
            spine = b"".join(line for line in spine.splitlines(keepends=True) if pointer not in line)
            synced_write(root / "SPINE.md", spine)
        read_every_file(root)
    return run_call(work)


def bench_apply(scale: int, scratch: Path, stores: Path | None, moves: int, rounds: int) -> None:
    pristine = make_store(scratch / f"apply-x{scale}", scale, stores)
    counts: list[int] = []
    with Closing() as closing:
        found = interleaved({
            "apply_gc": on_fresh_copy(pristine, scratch, lambda root: distilld_apply(root, moves, counts)),
            "the same moves in plain Python": on_fresh_copy(pristine, scratch, lambda root: plain_moves(root, moves)),
        }, rounds)
    applied, closing_s = found["apply_gc"], Series("closing", [Sample(0.0, s) for s in closing.seconds[1:]])
    count = max(1, counts[-1])
    print(f"\n  apply_gc at x{scale}: {counts[-1]} moves a round")
    show(found)
    print(f"    {versus(applied, found['the same moves in plain Python'])}")
    print(f"    per move (manifest flag, ledger line, fsync'd rename, SPINE rewrite, heartbeat), wall: "
          f"{ms((applied.wall - closing_s.wall) / count)}; once per pass (catalog rebuild, self-check C1-C4), "
          f"wall: {ms(closing_s.wall)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan-scales", default="1,10,100")
    parser.add_argument("--apply-scales", default="1,10")
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=MIN_RUNS, help="rounds (at least 5) after a warm-up")
    parser.add_argument("--stores", type=Path, help="a folder holding x<scale> stores to copy instead of generating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="distilld-bench-gc-") as temp:
        scratch = Path(temp)
        os.environ["DISTILLD_STATE_DIR"] = str(scratch / "state")  # no log lines in the user's own
        header("plan_gc and take_snapshot against reading every file (in-process)", args.rounds)
        for scale in (int(s) for s in args.plan_scales.split(",") if s):
            bench_plan(scale, scratch, args.stores, args.rounds)
        header("apply_gc against the same moves in plain Python (in-process, a fresh copy a round)", args.rounds)
        for scale in (int(s) for s in args.apply_scales.split(",") if s):
            bench_apply(scale, scratch, args.stores, args.moves, args.rounds)


if __name__ == "__main__":
    main()
