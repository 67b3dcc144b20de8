"""Migrate many adversarial Store-B-shaped stores (tests/realshapes.py) and report how they end.

Not a speed benchmark: an acceptance run on real-shaped stores (do they migrate, and pass C1-C4
afterwards?), with no baseline. The apply time it reports per store (CPU, user+sys, and wall;
medians and worst over the stores, with the load average) is there to spot a store that takes
far longer than the others, not to compare speeds.
Not a pytest test: run it by hand.

    python tests/benchmarks/bench_realshapes.py --stores 30            # seeds 1..30
    python tests/benchmarks/bench_realshapes.py --stores 5 --oracle    # also the bash checker

For each store: preview, apply, then C1-C4 against the migration's backup (distilld's checks,
and with --oracle the independent bash checker in tests/oracle/). Reported: how many stores
migrate, why the others are refused, SPINE lines and bytes after, tier files over their caps
and over the compaction target, children created, and the apply time (CPU and wall).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from benchutil import Stopwatch, load_average  # noqa: E402

from distilld.actions.migrate import run_migrate  # noqa: E402
from distilld.engine.passes.migration.apply import MigrationRefused  # noqa: E402
from distilld.engine.passes.migration.checklist import migration_dirs  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.invariants import check_store  # noqa: E402
from distilld.store.lossless import check_c4  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402
from distilld.store.tierfile import KnowledgeFile  # noqa: E402
from realshapes import generate  # noqa: E402

NOW = datetime(2026, 10, 1, 12, 0, 0, tzinfo=UTC)
ORACLE = HERE.parent / "oracle" / "distill-check-store.sh"


def one(root: Path, seed: int, oracle: bool, overlay: bool) -> dict[str, object]:
    generate(root, seed, overlay=overlay)
    policy = load_policy(None)
    preview = run_migrate(root, policy, lambda: NOW, "preview")
    plan = preview.plan
    assert plan is not None
    if plan.refused:
        return {"seed": seed, "refused": plan.refusal[0]}
    clock = Stopwatch()
    try:
        outcome = run_migrate(root, policy, lambda: NOW, "apply")
    except MigrationRefused as refused:
        return {"seed": seed, "refused": str(refused).splitlines()[-1]}
    spent = clock.sample()
    backup = migration_dirs(root)[-1].backup
    after = take_snapshot(root)
    failing = [f for f in check_store(after, policy.limits) + check_c4(take_snapshot(backup), after)
               if f.severity == "fail"]
    result: dict[str, object] = {"seed": seed, "finished": outcome.finished, "failing": len(failing),
                                 "first_failure": failing[0].message if failing else "", "cpu": spent.cpu,
                                 "wall": spent.wall}
    spine = after.spine
    assert spine is not None
    result["spine_lines"], result["spine_bytes"] = spine.line_count, spine.size
    over_cap = over_target = 0
    for path in after.tier_paths:
        file = KnowledgeFile(path, after.contents[path])
        over_cap += file.line_count > 60 or (file.oversize_reason is None and file.size > 6000)
        over_target += file.line_count > 45 or file.size > 4500
    result["tier_files"], result["over_cap"], result["over_target"] = len(after.tier_paths), over_cap, over_target
    if oracle:
        done = subprocess.run(["bash", str(ORACLE), str(root), "--before", str(backup)], capture_output=True,
                              text=True, errors="replace", check=False)
        result["oracle"] = "PASS" if done.returncode == 0 else done.stdout.strip().splitlines()[:4]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=int, default=30)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--oracle", action="store_true", help="also run the independent bash checker")
    parser.add_argument("--no-overlay", action="store_true", help="stores without a local/ overlay")
    args = parser.parse_args(argv)
    results = []
    print(load_average(), flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["DISTILLD_STATE_DIR"] = str(Path(scratch) / "state")  # no log lines in the user's own
        for seed in range(args.first_seed, args.first_seed + args.stores):
            result = one(Path(scratch) / f"s{seed}", seed, args.oracle, not args.no_overlay)
            results.append(result)
            print(result, flush=True)
    migrated = [r for r in results if "refused" not in r]
    clean = [r for r in migrated if r["finished"] and not r["failing"]]
    print(f"\n{len(clean)} of {len(results)} stores migrated and pass C1-C4 against their backup; {load_average()}")
    reasons = Counter(str(r["refused"]).split(":")[0] for r in results if "refused" in r)
    for reason, count in reasons.most_common():
        print(f"  refused x{count}: {reason}")
    if migrated:
        for key in ("spine_lines", "spine_bytes", "over_cap", "over_target", "tier_files", "cpu", "wall"):
            values = [float(str(r[key])) for r in migrated]
            print(f"  {key}: median {statistics.median(values):.2f}, max {max(values):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
