"""What the checks before every write pass cost (engine/guard.py: the link scan, the ledger
comparison and the temp-file sweep), against reading the store's snapshot, which every pass
does anyway. Both are measured in the same run, interleaved, after a warm-up.

    python tests/benchmarks/bench_guard.py --scales 1,100 --repeat 5

Prints wall and CPU (user+sys) medians in milliseconds and the ratio guard / snapshot.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from distilld.engine.guard import check_before_writing, remember_ledger
from distilld.store.snapshot import take_snapshot
from storegen import generate_store


def timed(work: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = os.times(), time.perf_counter()
    work()
    after = os.times()
    return (time.perf_counter() - wall) * 1000, (after.user + after.system - cpu.user - cpu.system) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="1,100")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="distilld-bench-guard-") as scratch:
        os.environ["DISTILLD_STATE_DIR"] = str(Path(scratch) / "state")
        for scale in (int(s) for s in args.scales.split(",")):
            root = Path(scratch) / f"store-{scale}"
            generate_store(root, scale=scale, layout="migrated")
            remember_ledger(root)
            runs: dict[str, list[tuple[float, float]]] = {"guard": [], "snapshot": []}
            for turn in range(args.repeat + 1):
                guard = timed(lambda root=root: check_before_writing(root))
                snapshot = timed(lambda root=root: take_snapshot(root))
                if turn:  # the first turn warms the caches
                    runs["guard"].append(guard)
                    runs["snapshot"].append(snapshot)
            medians = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                       for k, v in runs.items()}
            files = sum(len(f) for _, _, f in os.walk(root))
            print(f"scale {scale} ({files} files): guard {medians['guard'][0]:.1f} ms wall / "
                  f"{medians['guard'][1]:.1f} ms CPU; snapshot {medians['snapshot'][0]:.1f} ms wall / "
                  f"{medians['snapshot'][1]:.1f} ms CPU; guard/snapshot {medians['guard'][0] / medians['snapshot'][0]:.2f} "
                  "(wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
