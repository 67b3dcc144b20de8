"""How long `distilld --help` and `distilld check STORE` take to start, as CPU (user+sys of the
child) and wall time: medians of --repeat runs after one warm-up, interleaved with a baseline
when --baseline DIR names a folder holding an older `distilld` package (e.g. a symlink to another
checkout's daemon/). Also lists the heavy libraries each command imports.

    python tests/benchmarks/bench_cli_startup.py --repeat 15 [--baseline /tmp/base-pkg]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("pydantic_settings", "pydantic", "pygit2", "watchdog", "apscheduler", "structlog")


def one_run(argv: list[str], pythonpath: str | None) -> tuple[float, float, set[str]]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "distilld", *argv], env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    modules = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
               if line.startswith("import time:")}
    return cpu, wall, modules & set(HEAVY)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--baseline", help="a folder holding another `distilld` package (PYTHONPATH)")
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp()) / "store"
    subprocess.run([sys.executable, "-m", "distilld", "new", str(store)], check=True, capture_output=True)
    commands = {"--help": ["--help"], "check": ["check", str(store)]}
    trees = {"this tree": None, **({"baseline": args.baseline} if args.baseline else {})}
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    heavy: dict[tuple[str, str], set[str]] = {}
    for name, argv in commands.items():
        for tree, path in trees.items():
            one_run(argv, path)  # warm-up
        for _ in range(args.repeat):
            for tree, path in trees.items():  # interleaved
                cpu, wall, loaded = one_run(argv, path)
                results.setdefault((name, tree), []).append((cpu, wall))
                heavy[(name, tree)] = loaded
    for (name, tree), runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"{name:<7} {tree:<10} cpu {cpu * 1000:6.0f} ms  wall {wall * 1000:6.0f} ms  "
              f"heavy: {', '.join(sorted(heavy[(name, tree)])) or 'none'}")
    if args.baseline:
        for name in commands:
            ratio = (statistics.median(r[0] for r in results[(name, "this tree")])
                     / statistics.median(r[0] for r in results[(name, "baseline")]))
            print(f"{name}: cpu ratio this tree / baseline = {ratio:.2f}")


if __name__ == "__main__":
    main()
