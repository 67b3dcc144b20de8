"""Daemon SIGKILL trials: the real `distilld run` is killed 1-3 times at random while a writer that
never takes the lock adds files, appends lines, and edits and lengthens SPINE entries.

Not a speed benchmark: it measures whether a killed daemon comes back to a whole, clean,
committed store (the trial itself is tests/daemon_kill_trial.py), and how long it takes to
settle after its last start (the stale period of a dead lock would be 300 s). It has no
baseline; the CPU and wall it prints only say how long the trials took.
Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_daemon_kill_trial.py                  # 40 trials
    python tests/benchmarks/bench_daemon_kill_trial.py --trials 5 --seed 7
    python tests/benchmarks/bench_daemon_kill_trial.py --only 1234      # replay one trial by its seed

Every trial prints its seed, kills, writes and settle time; the summary gives the count that
passed and the settle times (median, 90th percentile, max), and lists failing seeds (exit 1 if
any). --keep DIR keeps the folders of failed trials there.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from benchutil import Stopwatch, load_average  # noqa: E402
from daemon_kill_trial import TrialResult, run_trial  # noqa: E402


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None, help="base seed (default: random)")
    parser.add_argument("--only", type=int, default=None, help="run the one trial of this seed")
    parser.add_argument("--writer-seconds", type=float, default=8.0)
    parser.add_argument("--entry-limit", type=int, default=390,
                        help="how long the writer lets a SPINE entry grow, in bytes (over 400: the daemon compacts)")
    parser.add_argument("--keep", type=Path, default=None, help="keep failed trials' folders here")
    args = parser.parse_args()
    base_seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    seeds = [args.only] if args.only is not None else [base_seed + n for n in range(args.trials)]
    print(f"daemon kill trials: {len(seeds)} trial(s), base seed {base_seed}, writer {args.writer_seconds:g} s, "
          f"entries up to {args.entry_limit} bytes; "
          f"load {load_average()}", flush=True)
    watch = Stopwatch()
    results: list[TrialResult] = []
    for seed in seeds:
        folder = Path(tempfile.mkdtemp(prefix=f"killtrial-{seed}-"))
        try:
            result = run_trial(seed, folder, args.writer_seconds, say=lambda line: print(line, flush=True),
                               entry_limit=args.entry_limit)
        except Exception as error:  # a trial that crashes is a failed trial, and the run goes on
            result = TrialResult(seed, False, 0, None, [f"the trial crashed: {error!r}"])
        results.append(result)
        settle = "never" if result.settle_seconds is None else f"{result.settle_seconds:.1f} s"
        if result.after_start_seconds is not None:
            settle += f" ({result.after_start_seconds:.1f} s after the last start)"
        print(f"  seed {seed}: {'ok  ' if result.ok else 'FAIL'} kills {result.kills}, writes {result.writes}, "
              f"tokens {result.tokens}, settled in {settle}", flush=True)
        for problem in result.problems:
            print(f"    - {problem}", flush=True)
        if not result.ok and args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.copytree(folder, args.keep / folder.name, symlinks=True, dirs_exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
    spent = watch.sample()
    passed = sum(r.ok for r in results)
    settles = [r.settle_seconds for r in results if r.settle_seconds is not None]
    print(f"passed {passed} of {len(results)}; kills {sum(r.kills for r in results)} in all; "
          f"writer tokens {sum(r.tokens for r in results)}")
    if settles:
        print(f"settled after the writer stopped (or the last start, if later): median "
              f"{statistics.median(settles):.1f} s, p90 {quantile(settles, 0.9):.1f} s, max {max(settles):.1f} s "
              f"(n={len(settles)})")
    starts = [r.after_start_seconds for r in results if r.after_start_seconds is not None]
    if starts:
        print(f"settled after the last start (the writer may still be writing then): median "
              f"{statistics.median(starts):.1f} s, max {max(starts):.1f} s")
    print(f"took {spent.wall:.0f} s wall, {spent.cpu:.0f} s CPU (this process and its children); "
          f"load {load_average()}")
    failed = [r.seed for r in results if not r.ok]
    if failed:
        print("failing seeds (replay with --only SEED): " + " ".join(map(str, failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
