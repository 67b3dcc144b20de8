"""Benchmark the store lock (engine/lock/): what one heartbeat and one acquire+release cost.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_lock.py                    # 2,000 iterations in a temp dir
    python tests/benchmarks/bench_lock.py -n 500 --dir /mnt/x  # another file system

distilld heartbeats after every file it writes or moves, so the heartbeat cost is paid once per
file of a pass. Each operation fsyncs its temp file before the rename or link, so the numbers
mostly measure the file system's fsync; run it on the file system the store lives on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import MIN_RUNS, header, run_call  # noqa: E402

from distilld.engine.lock import StoreLock, lock_status  # noqa: E402


def measure(label: str, iterations: int, operation: Callable[[], object]) -> None:
    operation()  # warm-up: creates .lock.takeover and .status, fills the page cache
    samples = [run_call(operation) for _ in range(max(iterations, MIN_RUNS))]
    walls = sorted(s.wall for s in samples)
    p99 = walls[min(len(walls) - 1, int(len(walls) * 0.99))]
    print(f"{label:<34} wall median {statistics.median(walls) * 1e6:9.1f} us   p99 {p99 * 1e6:9.1f} us   "
          f"CPU median {statistics.median(s.cpu for s in samples) * 1e6:9.1f} us   ({len(samples)} runs)")


def run(root: Path, iterations: int) -> None:
    lock = StoreLock(root, "bench")

    def acquire_release() -> None:
        lock.acquire()
        lock.release()

    measure("acquire + release", iterations, acquire_release)
    lock.acquire()
    measure("heartbeat()", iterations, lock.heartbeat)
    measure("heartbeat(step, signals)", iterations, lambda: lock.heartbeat(step=1, signals=2))
    measure("lock_status()", iterations, lambda: lock_status(root))
    lock.release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--iterations", type=int, default=2000)
    parser.add_argument("--dir", type=Path, help="parent directory for the temp store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lock-", dir=args.dir) as tmp:
        header(f"the store lock (store: {tmp})", args.iterations)
        run(Path(tmp), args.iterations)


if __name__ == "__main__":
    main()
