"""Benchmark the lifecycle pass: planning gc on a large store, and the cost of each move.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_gc.py                 # plan at 1x/10x/100x, apply 100 moves at 10x
    python tests/benchmarks/bench_gc.py --plan-scales 1,10 --moves 50

Planning is pure (snapshot in, plan out) and is timed after the snapshot is taken. Applying
writes for real with fsync: manifest, ledger line, byte-exact move, SPINE edit, done flag and a
lock heartbeat per move, then one catalog rebuild and the self-check (C1-C3 and C4 against the
store before the pass). The clock is set past every project's threshold so all of them are stale.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import MIN_RUNS, Sample, header, run_call  # noqa: E402
from storegen import generate_store  # noqa: E402

from distilld.engine.context import PassContext  # noqa: E402
from distilld.engine.passes.gc.apply import apply_gc  # noqa: E402
from distilld.engine.passes.gc.plan import plan_gc  # noqa: E402
from distilld.engine.lock import StoreLock  # noqa: E402
from distilld.engine.passes.gc.model import GcPlan  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402

LIMITS = load_policy().limits
LATER = datetime(2028, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


def plan_at(root: Path) -> tuple[Sample, Sample, GcPlan]:
    found: list[Any] = []
    read = run_call(lambda: found.append(take_snapshot(root)))
    planned = run_call(lambda: found.append(plan_gc(found[0], LATER.date(), "2028-01-01T12:00:00Z",
                                                    LIMITS)))
    return read, planned, found[1]


def first_moves(plan: GcPlan, count: int) -> GcPlan:
    """The first ``count`` moves or a little more: a split family is never cut in two."""
    chosen = []
    for move in plan.moves:
        if len(chosen) >= count and (not move.family or move.family[0] == move.source):
            break
        chosen.append(move)
    trimmed = GcPlan(now=plan.now, moves=chosen)
    return trimmed


def bench_plan(scales: list[int]) -> None:
    header("plan_gc (snapshot read separately; wall, CPU in brackets)", MIN_RUNS)
    print(f"{'scale':>6} {'tier files':>10} {'read':>9} {'plan':>9} {'(plan CPU)':>10} {'moves':>6} {'skipped':>8}  target")
    for scale in scales:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch) / "store"
            generate_store(root, scale=scale, layout="migrated")
            plan_at(root)  # warm-up
            runs = [plan_at(root) for _ in range(MIN_RUNS)]
            read = statistics.median(r[0].wall for r in runs)
            planned = statistics.median(r[1].wall for r in runs)
            planned_cpu = statistics.median(r[1].cpu for r in runs)
            plan = runs[0][2]
            files = len(take_snapshot(root).tier_paths)
            verdict = f"< 2 s: {'ok' if planned < 2 else 'MISSED'}" if scale == 100 else ""
            print(f"{scale:>5}x {files:>10} {read * 1000:>7.0f}ms {planned * 1000:>7.0f}ms {planned_cpu * 1000:>8.0f}ms "
                  f"{len(plan.moves):>6} {len(plan.skipped):>8}  {verdict}")


def bench_apply(scale: int, moves: int) -> None:
    from distilld.engine.passes.gc import apply as gc_engine

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "store"
        generate_store(root, scale=scale, layout="migrated")
        before = take_snapshot(root)
        plan = first_moves(plan_gc(before, LATER.date(), "2028-01-01T12:00:00Z", LIMITS), moves)
        lock = StoreLock(root, "distilld.bench")
        lock.acquire()
        ctx = PassContext(root, lock, lambda: LATER, LIMITS)
        ctx.take_baseline()
        closing_time: list[float] = []
        closing = gc_engine._finish

        def timed_finish(*args):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return closing(*args)
            finally:
                closing_time.append(time.perf_counter() - started)

        gc_engine._finish = timed_finish  # type: ignore[assignment]
        try:
            started = time.perf_counter()
            outcome = apply_gc(ctx, plan, before)
            total = time.perf_counter() - started
        finally:
            gc_engine._finish = closing  # type: ignore[assignment]
            lock.release()
        count = max(1, len(outcome.moved))
        moving = total - sum(closing_time)
        spine_kb = before.spine.size / 1024 if before.spine else 0
        print(f"\napply_gc at {scale}x ({len(before.tier_paths)} tier files, SPINE {spine_kb:.0f} KB): "
              f"{len(outcome.moved)} moves in {total:.2f} s; new self-check failures: {len(outcome.self_check)}")
        print(f"  per move (manifest flag, ledger line, fsync'd rename, SPINE rewrite, heartbeat): "
              f"{moving / count * 1000:.1f} ms")
        print(f"  once per pass (catalog rebuild, self-check C1-C4): {sum(closing_time):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan-scales", default="1,10,100")
    parser.add_argument("--apply-scales", default="1,10")
    parser.add_argument("--moves", type=int, default=100)
    args = parser.parse_args()
    bench_plan([int(s) for s in args.plan_scales.split(",") if s])
    for scale in [int(s) for s in args.apply_scales.split(",") if s]:
        bench_apply(scale, args.moves)


if __name__ == "__main__":
    main()
