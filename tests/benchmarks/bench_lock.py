"""Benchmark the store lock (engine/lock/): what one heartbeat and one acquire+release cost,
against the plain file-system work they cannot do without, in the same run.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_lock.py                      # 2,000 rounds in a temp dir
    python tests/benchmarks/bench_lock.py -n 500 --dir /mnt/x  # another file system

distilld heartbeats after every file it writes or moves, so the heartbeat cost is paid once per
file of a pass. Every lock operation and its baseline run once per round, interleaved (the order
rotated each round), after a warm-up round; each figure is the median CPU (user+sys) and wall time
of ``-n`` rounds (at least 5), with the wall p99. The baselines, plain Python:

* for the operations that write (acquire + release, heartbeat): a small file written with
  O_EXCL, fsync'd and renamed over another, the floor of any crash-safe replacement;
* for ``lock_status()``: reading `.lock` and `.status`.

Each write fsyncs, so the figures mostly measure the file system's fsync: run it on the file
system the store lives on.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import Series, header, interleaved, run_call, versus  # noqa: E402

from distilld.engine.lock import StoreLock, lock_status  # noqa: E402


def synced_replace(root: Path) -> None:
    """The baseline of a write: what a heartbeat must do at the least."""
    temp = root / ".bench.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, b"bench 1700000000\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, root / ".bench")


def read_lock_files(root: Path) -> None:
    """The baseline of lock_status(): the two files it reads, read."""
    for name in (".lock", ".status"):
        try:
            (root / name).read_bytes()
        except FileNotFoundError:
            pass


def us(seconds: float) -> str:
    return f"{seconds * 1e6:7.0f} us"  # these operations take micro- to milliseconds


def report(series: Series, baseline: Series) -> None:
    print(f"    {series.name:<26} CPU {us(series.cpu)}  wall {us(series.wall)}  "
          f"(p99 {us(series.wall_quantile(0.99)).strip()}, n={len(series.samples)});  {versus(series, baseline)}",
          flush=True)


def run(root: Path, rounds: int) -> None:
    lock = StoreLock(root, "bench")

    def acquire_release() -> None:
        lock.acquire()
        lock.release()

    found = interleaved({"acquire + release": lambda: run_call(acquire_release),
                         "synced replace (baseline)": lambda: run_call(lambda: synced_replace(root))}, rounds)
    report(found["acquire + release"], found["synced replace (baseline)"])
    lock.acquire()  # the next operations need it held
    found = interleaved({"heartbeat()": lambda: run_call(lock.heartbeat),
                         "heartbeat(step, signals)": lambda: run_call(lambda: lock.heartbeat(step=1, signals=2)),
                         "lock_status()": lambda: run_call(lambda: lock_status(root)),
                         "synced replace (baseline)": lambda: run_call(lambda: synced_replace(root)),
                         "read the lock's files (baseline)": lambda: run_call(lambda: read_lock_files(root))},
                        rounds)
    lock.release()
    for name in ("heartbeat()", "heartbeat(step, signals)"):
        report(found[name], found["synced replace (baseline)"])
    report(found["lock_status()"], found["read the lock's files (baseline)"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--iterations", type=int, default=2000, help="rounds (at least 5)")
    parser.add_argument("--dir", type=Path, help="parent directory for the temp store")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lock-", dir=args.dir) as tmp:
        header(f"the store lock against plain synced writes and reads (store: {tmp})", args.iterations)
        run(Path(tmp), args.iterations)


if __name__ == "__main__":
    main()
