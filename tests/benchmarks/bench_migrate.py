"""Benchmark the migration of the store-engine benchmark's unmigrated stores, end to end.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_migrate.py                # 1x and 10x
    python tests/benchmarks/bench_migrate.py --scales 1     # 1x only
    python tests/benchmarks/bench_migrate.py --scales 10 --policy big.toml   # caps of your own

For each scale: generate the unmigrated store (storegen, outside the timing), then time the
preview (plan + PLAN.md), the apply (plan again, backup and verification, every checklist item
with its writes, catalog, and the self-check C1-C3 + C4 against the backup), both in-process
under the store lock as the CLI runs them. A store whose SPINE cannot fit is refused by the
plan; then the time to that refusal is reported with its reason. Also reported: SPINE size
before and after, entries shortened and merged, files split and files created, and the splits
a pure byte-cap count would need (the design research's measure).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from distilld.actions.migrate import run_migrate
from distilld.engine.passes.migration.apply import MigrationRefused
from distilld.engine.passes.migration.checklist import migration_dirs
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot
from benchutil import header, run_call
from storegen import generate_store

NOW = datetime(2026, 9, 23, 12, 0, 0, tzinfo=UTC)  # storegen's own "now"
DATED = re.compile(r"^- [0-9]{4}-[0-9]{2}-[0-9]{2} ")


def byte_cap_splits(root: Path, move_history: bool) -> int:
    """Children a pure 6,000-byte count needs (ceil(bytes / 6000) - 1 per file), with or without
    the dated observation lines: the measure the design research used (74 and 67 at 1x)."""
    total = 0
    snapshot = take_snapshot(root)
    for path in snapshot.tier_paths:
        raw = snapshot.contents[path]
        if move_history:
            raw = b"".join(line for line in raw.splitlines(keepends=True)
                           if not DATED.match(line.decode("utf-8", "replace")))
        total += max(0, math.ceil(len(raw) / 6000) - 1)
    return total


def bench(scale: int, policy_file: Path | None = None) -> None:
    policy = load_policy(policy_file)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "store"
        generate_store(root, scale, "unmigrated")
        research = (byte_cap_splits(root, False), byte_cap_splits(root, True))
        found = []
        previewed = run_call(lambda: found.append(run_migrate(root, policy, lambda: NOW, "preview")))
        preview, preview_s = found[0], previewed.wall
        plan = preview.plan
        assert plan is not None
        print(f"scale {scale}x: {plan.budget_before['tier_files']} tier files, SPINE "
              f"{plan.budget_before['spine_lines']} lines / {plan.budget_before['spine_bytes']} bytes "
              f"({plan.budget_before['entries_over_cap']} entries over 400 bytes)")
        print(f"  byte-cap-only split count (research measure): {research[0]} with history, {research[1]} after "
              "moving dated history")
        print(f"  preview: {preview_s:.2f} s (CPU {previewed.cpu:.2f} s; one run: a migration happens once)")
        if plan.refused:
            print("  refused (nothing changed):")
            for reason in plan.refusal[:3]:
                print(f"    - {reason}")
            return
        started = time.perf_counter()
        try:
            outcome = run_migrate(root, policy, lambda: NOW, "apply")
        except MigrationRefused as refused:
            print(f"  apply refused: {str(refused).splitlines()[1]}")
            return
        apply_s = time.perf_counter() - started
        compact = plan.compact
        assert compact is not None
        print(f"  apply (backup, {len(outcome.items_done)} checklist items, {outcome.written} writes, catalog, "
              f"self-check C1-C4): {apply_s:.2f} s -> {'DONE' if outcome.finished else 'PENDING'}")
        print(f"  end to end (preview + apply + self-check): {preview_s + apply_s:.2f} s")
        after = plan.budget_after
        print(f"  SPINE: {plan.budget_before['spine_lines']} -> {after['spine_lines']} lines, "
              f"{plan.budget_before['spine_bytes']} -> {after['spine_bytes']} bytes; entries shortened "
              f"{len(compact.cut)}, merged {len(compact.merged)}; hook floor {compact.floor} bytes")
        print(f"  files split: {len({s.path for s in compact.splits})} ({len(compact.splits)} splits, "
              f"{sum(1 for s in compact.splits if s.after_index_detail)} of them after Index detail; "
              f"{compact.children} new files); tier files "
              f"{plan.budget_before['tier_files']} -> {after['tier_files']} (over a cap: "
              f"{plan.budget_before['tier_files_over_cap']} -> {after['tier_files_over_cap']})")
        print(f"  legacy archives adopted: {len(plan.adoptions)}; files with dated history moved: "
              f"{len(plan.evidence)} ({sum(n for _, n in plan.evidence)} lines)")
        backup = migration_dirs(root)[-1].backup
        started = time.perf_counter()
        now = take_snapshot(root)
        failing = [f for f in check_store(now, policy.limits) + check_c4(take_snapshot(backup), now)
                   if f.severity == "fail"]
        print(f"  independent re-check C1-C4: {'PASS' if not failing else failing[:3]} "
              f"({time.perf_counter() - started:.2f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,10", help="comma-separated scales (default 1,10)")
    parser.add_argument("--policy", type=Path, help="a policy file (e.g. SPINE caps raised, to time a 10x "
                        "store that the default caps refuse)")
    args = parser.parse_args(argv)
    header("migration of the unmigrated benchmark store (single runs)", 1)
    for scale in (int(s) for s in args.scales.split(",")):
        bench(scale, args.policy)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
