"""What the checks before every write pass cost (engine/guard.py: the link scan, the ledger
comparison and the temp-file sweep), against reading the store's files, in the same run.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_guard.py --scales 1,100 --repeat 5
    python tests/benchmarks/bench_guard.py --scales 10 --stores DIR    # copies DIR/x10

In-process, interleaved round by round after a warm-up round: ``check_before_writing`` (the
guard), ``take_snapshot`` (the read every pass does anyway) and the baseline, plain Python
reading every file's bytes. Prints the CPU (user+sys) and wall medians of ``--repeat`` rounds (at
least 5), the load average, and guard / reading and guard / snapshot.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import header, interleaved, make_store, read_every_file, run_call, show, versus  # noqa: E402

from distilld.engine.guard import check_before_writing, remember_ledger  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402


def measure(root: Path, repeat: int) -> None:
    remember_ledger(root)  # the ledger as the last pass left it: the comparison finds no change
    found = interleaved({"guard": lambda: run_call(lambda: check_before_writing(root)),
                         "snapshot": lambda: run_call(lambda: take_snapshot(root)),
                         "read every file": lambda: run_call(lambda: read_every_file(root))}, repeat)
    files = sum(len(names) for _, _, names in os.walk(root))
    print(f"\n  {root.name} ({files} files):")
    show(found)
    print(f"    {versus(found['guard'], found['read every file'])}")
    print(f"    {versus(found['guard'], found['snapshot'])}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="1,100")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (at least 5) after a warm-up")
    parser.add_argument("--stores", type=Path, help="a folder holding x<scale> stores to copy instead of generating")
    args = parser.parse_args()
    header("the guard before every write pass, against reading the files (in-process)", args.repeat)
    with tempfile.TemporaryDirectory(prefix="distilld-bench-guard-") as scratch:
        os.environ["DISTILLD_STATE_DIR"] = str(Path(scratch) / "state")
        for scale in (int(s) for s in args.scales.split(",")):
            measure(make_store(Path(scratch) / f"x{scale}", scale, args.stores), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
