"""Benchmark the migration of the store-engine benchmark's unmigrated stores, end to end, against
plain baselines of the same run.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_migrate.py                # 1x and 10x
    python tests/benchmarks/bench_migrate.py --scales 1     # 1x only
    python tests/benchmarks/bench_migrate.py --scales 10 --policy big.toml   # caps of your own

For each scale, storegen writes the unmigrated store once (untimed). One migration on a copy,
untimed, gives the report: SPINE size before and after, entries shortened and merged, files split
and created, the splits a pure byte-cap count would need (the design research's measure), and an
independent re-check C1-C4 of the result. A store whose SPINE cannot fit is refused by the plan;
then only the preview is timed, and the reason is printed.

Then, in-process under the store lock as the CLI runs them, interleaved round by round after a
warm-up round, each round on a fresh copy (the copy untimed), medians of ``--rounds`` (at least 5)
of CPU (user+sys) and wall time:

* ``migrate`` preview (plan + PLAN.md), against the baseline reading every file of the store;
* ``migrate`` apply (plan again, backup and verification, every checklist item with its writes,
  catalog, and the self-check C1-C3 + C4 against the backup), against the baseline ``cp -a`` of
  the store (every file read and written once: the backup alone is that much).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import (MIN_RUNS, Sample, Series, Stopwatch, header, interleaved, ms, on_fresh_copy,  # noqa: E402
                       read_every_file, run_call, run_child, show, versus)
from storegen import generate_store  # noqa: E402

from distilld.actions.migrate import MigrateOutcome, run_migrate  # noqa: E402
from distilld.engine.passes.migration.apply import MigrationRefused  # noqa: E402
from distilld.engine.passes.migration.checklist import migration_dirs  # noqa: E402
from distilld.policy import Policy, load_policy  # noqa: E402
from distilld.store.invariants import check_store  # noqa: E402
from distilld.store.lossless import check_c4  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402

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


def migrate(root: Path, policy: Policy, mode: str) -> MigrateOutcome:
    return run_migrate(root, policy, lambda: NOW, mode)


def describe_once(pristine: Path, scratch: Path, policy: Policy) -> bool:
    """One untimed migration on a copy, reported in full; True when the store can be migrated."""
    root = scratch / "report-run"
    shutil.copytree(pristine, root, symlinks=True)
    research = (byte_cap_splits(root, False), byte_cap_splits(root, True))
    plan = migrate(root, policy, "preview").plan
    assert plan is not None
    before = plan.budget_before
    print(f"    {before['tier_files']} tier files, SPINE {before['spine_lines']} lines / {before['spine_bytes']} "
          f"bytes ({before['entries_over_cap']} entries over 400 bytes)")
    print(f"    byte-cap-only split count (research measure): {research[0]} with history, {research[1]} after "
          "moving dated history")
    if plan.refused:
        print("    refused by the plan (nothing changed):")
        for reason in plan.refusal[:3]:
            print(f"      - {reason}")
        return False
    try:
        outcome = migrate(root, policy, "apply")
    except MigrationRefused as refused:
        print(f"    apply refused: {str(refused).splitlines()[1]}")
        return False
    compact, after = plan.compact, plan.budget_after
    assert compact is not None
    print(f"    apply: backup, {len(outcome.items_done)} checklist items, {outcome.written} writes, catalog, "
          f"self-check C1-C4 -> {'DONE' if outcome.finished else 'PENDING'}")
    print(f"    SPINE: {before['spine_lines']} -> {after['spine_lines']} lines, {before['spine_bytes']} -> "
          f"{after['spine_bytes']} bytes; entries shortened {len(compact.cut)}, merged {len(compact.merged)}; "
          f"hook floor {compact.floor} bytes")
    print(f"    files split: {len({s.path for s in compact.splits})} ({len(compact.splits)} splits, "
          f"{sum(1 for s in compact.splits if s.after_index_detail)} of them after Index detail; "
          f"{compact.children} new files); tier files {before['tier_files']} -> {after['tier_files']} "
          f"(over a cap: {before['tier_files_over_cap']} -> {after['tier_files_over_cap']})")
    print(f"    legacy archives adopted: {len(plan.adoptions)}; files with dated history moved: "
          f"{len(plan.evidence)} ({sum(n for _, n in plan.evidence)} lines)")
    clock = Stopwatch()
    now = take_snapshot(root)
    backup = take_snapshot(migration_dirs(root)[-1].backup)
    failing = [f for f in check_store(now, policy.limits) + check_c4(backup, now) if f.severity == "fail"]
    spent = clock.sample()
    print(f"    independent re-check C1-C4: {'PASS' if not failing else failing[:3]} "
          f"(one run: CPU {ms(spent.cpu)}, wall {ms(spent.wall)})")
    shutil.rmtree(root)
    return True


def copied(pristine: Path, scratch: Path) -> Sample:
    """The apply's baseline: `cp -a` of the whole store (its CPU from wait4)."""
    target = scratch / "cp-baseline"
    try:
        return run_child(["cp", "-a", str(pristine), str(target)])
    finally:
        shutil.rmtree(target, ignore_errors=True)


def bench(scale: int, scratch: Path, policy: Policy, rounds: int) -> None:
    pristine = scratch / f"unmigrated-x{scale}"
    generate_store(pristine, scale, "unmigrated")
    print(f"\n  x{scale}:")
    migrates = describe_once(pristine, scratch, policy)

    def timed(mode: str) -> Callable[[], Sample]:
        return on_fresh_copy(pristine, scratch, lambda root: run_call(lambda: migrate(root, policy, mode)))
    candidates = {"migrate preview": timed("preview"),
                  "read every file": lambda: run_call(lambda: read_every_file(pristine))}
    if migrates:
        candidates |= {"migrate apply": timed("apply"), "cp -a of the store": lambda: copied(pristine, scratch)}
    found: dict[str, Series] = interleaved(candidates, rounds)
    show(found)
    print(f"    {versus(found['migrate preview'], found['read every file'])}")
    if migrates:
        print(f"    {versus(found['migrate apply'], found['cp -a of the store'])}")
        both = found["migrate preview"].wall + found["migrate apply"].wall
        print(f"    end to end (preview + apply), wall: {ms(both)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="1,10", help="comma-separated scales (default 1,10)")
    parser.add_argument("--rounds", type=int, default=MIN_RUNS, help="rounds (at least 5) after a warm-up")
    parser.add_argument("--policy", type=Path, help="a policy file (e.g. SPINE caps raised, to time a 10x "
                        "store that the default caps refuse)")
    args = parser.parse_args(argv)
    policy = load_policy(args.policy)
    with tempfile.TemporaryDirectory(prefix="distilld-bench-migrate-") as temp:
        os.environ["DISTILLD_STATE_DIR"] = str(Path(temp) / "state")  # no log lines in the user's own
        header("migration of the unmigrated benchmark store: preview against reading every file, apply against "
               "cp -a (in-process, a fresh copy a round)", args.rounds)
        for scale in (int(s) for s in args.scales.split(",")):
            bench(scale, Path(temp), policy, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
