"""Compaction on big inputs (issue 23 item 4, issue 27 items 2 and 4): what `distilld compact`
(the preview: it plans, or refuses with the figures) costs on a huge tier file and on a bloated
SPINE, and how long `distilld run --once` takes to exit after SIGTERM during a long pass.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_big_inputs.py                  # everything (about 10 minutes)
    python tests/benchmarks/bench_big_inputs.py --only files --rounds 5

* Tier files: a store with one 1, 5 or 20 MB single-section tier file. Targets: a 20 MB file
  planned or refused in <= 2 s CPU.
* SPINEs: a SPINE padded to 100 KB, 400 KB or 5 MB with entries of their own small files (the
  shape of the x100 store and of the issue's padded SPINE: refused at once), and, where it fits,
  with long wrapped hooks (planned: hooks are cut). Targets: a 5 MB SPINE planned or refused
  with figures in <= 5 s CPU and <= 200 MB.
* SIGTERM: `run --once` paused inside its compaction after two written steps (crashpoints.py),
  SIGTERM, and let go: the seconds until it exited (it rolls back). And SIGTERM one second into
  a compaction that plans a long time (the 400 KB SPINE of long hooks). systemd allows 90 s.

Every candidate is a child process measured with wait4 (CPU user+sys, wall, peak RSS), medians
of ``--rounds`` rounds (at least 5) after a warm-up round, interleaved with the baseline: a child
Python that reads every file of the same store.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from benchutil import MIN_RUNS, header, ms, row  # noqa: E402
from builders import EM, StoreBuilder, healthy_store  # noqa: E402

from distilld.settings import InstancePaths  # noqa: E402

MB = 1_000_000
FILE_TARGET_CPU = 2.0  # a 20 MB tier file
SPINE_TARGET_CPU, SPINE_TARGET_RSS_MB = 5.0, 200.0  # a 5 MB SPINE
SIGTERM_LIMIT = 90.0  # systemd's default stop timeout
READ_EVERY_FILE = ("import os,sys\nfor d,s,n in os.walk(sys.argv[1]):\n s[:]=[x for x in s if x!='.git']\n"
                   " for f in n: open(os.path.join(d,f),'rb').read()\n")
# The child's own peak RSS: wait4's ru_maxrss keeps the high-water mark of the forked copy of
# this process from before exec, so the child says its VmHWM (its memory since exec) at exit.
PEAK = ("import atexit,sys\natexit.register(lambda: sys.stderr.write('VmHWM ' + next(l.split()[1] for l in "
        "open('/proc/self/status') if l.startswith('VmHWM')) + '\\n'))\n")
DISTILLD = PEAK + "import runpy\nsys.argv = ['distilld', *sys.argv[1:]]\nrunpy.run_module('distilld', run_name='__main__')\n"


@dataclass(frozen=True)
class Run:
    cpu: float
    wall: float
    rss_mb: float


def child(argv: list[str], ok: tuple[int, ...] = (0, 1)) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        raise RuntimeError(f"{' '.join(argv)} exited {code}: {errors.decode(errors='replace')[-2000:]}")
    peak = [line.split()[1] for line in errors.decode(errors="replace").splitlines() if line.startswith("VmHWM ")]
    return Run(usage.ru_utime + usage.ru_stime, wall, int(peak[-1]) / 1024 if peak else float("nan"))


def compact_preview(store: Path) -> Run:
    return child([sys.executable, "-c", DISTILLD, "compact", str(store)])


def read_files(store: Path) -> Run:
    return child([sys.executable, "-c", PEAK + READ_EVERY_FILE, str(store)])


def interleave(candidates: dict[str, Callable[[], Run]], rounds: int) -> dict[str, list[Run]]:
    rounds = max(rounds, MIN_RUNS)
    names = list(candidates)
    found: dict[str, list[Run]] = {n: [] for n in names}
    for number in range(rounds + 1):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            sample = candidates[name]()
            if number:  # the first round warms up
                found[name].append(sample)
    return found


def median(runs: list[Run]) -> Run:
    return Run(statistics.median(r.cpu for r in runs), statistics.median(r.wall for r in runs),
               statistics.median(r.rss_mb for r in runs))


def describe(name: str, runs: list[Run]) -> str:
    m = median(runs)
    return f"{name}: CPU {ms(m.cpu)}, wall {ms(m.wall)}, peak RSS {m.rss_mb:.0f} MB (n={len(runs)})"


# -- stores ----------------------------------------------------------------------------------

def file_store(root: Path, size: int) -> Path:
    b = healthy_store(root)
    line = "- Rule {n}: the ingest job retries a failed batch three times, then parks it for review.\n"
    body, total, n = [], 0, 0
    while total < size:
        text = line.format(n=n)
        body.append(text)
        total += len(text)
        n += 1
    b.tier("craft/huge.md", "# Huge\n\n## Principles\n\n" + "".join(body), domain="craft", scope="Ingest rules",
           last_updated="2026-10-01")
    b.write("SPINE.md", b.read("SPINE.md").decode() + f"- [Ingest rules](craft/huge.md) {EM} retries. Read when.\n")
    b.rebuild_catalog()
    return root


WORDS = "Kestrel schema registry Parquet backfill Osprey legal hold exports Lumen dashboards Marlin".split()


def entries_spine(root: Path, size: int) -> Path:
    """The SPINE padded to ``size`` with entries, each of its own small file."""
    b = healthy_store(root)
    spine = b.read("SPINE.md").decode()
    extra: list[str] = []
    total, n = len(spine), 0
    while total < size:
        b.tier(f"projects/p{n}.md", f"# P{n}\n\n- Note {n}.\n", domain="project", scope=f"P{n}",
               last_updated="2026-10-01")
        words = " ".join(f"{WORDS[(n + k) % len(WORDS)]}{n}" for k in range(40))
        extra.append(f"- [Project {n}](projects/p{n}.md) {EM} {words}. Read when asked.")
        total += len(extra[-1]) + 1
        n += 1
    b.write("SPINE.md", spine + "\n## More projects\n" + "\n".join(extra) + "\n")
    b.rebuild_catalog()
    return root


def hooks_spine(root: Path, size: int) -> Path:
    """The SPINE padded to ``size`` with wrapped continuation lines of its entries' hooks."""
    b: StoreBuilder = healthy_store(root)
    lines = b.read("SPINE.md").decode().splitlines()
    entries = [i for i, line in enumerate(lines) if line.startswith("- [") and "CATALOG" not in line]
    per = size // len(entries)
    out: list[str] = []
    count = 0
    for index, line in enumerate(lines):
        out.append(line)
        if index in entries:
            written = 0
            while written < per:
                text = "  " + " ".join(f"{WORDS[(count + k) % len(WORDS)]}{count + k}" for k in range(8)) + "; more."
                out.append(text)
                written += len(text) + 1
                count += 8
    b.write("SPINE.md", "\n".join(out) + "\n")
    b.rebuild_catalog()
    return root


# -- SIGTERM ---------------------------------------------------------------------------------

def sigterm_while_paused(store: Path, scratch: Path) -> float:
    """Seconds from SIGTERM to exit, the compaction paused after two written steps."""
    flag = scratch / "paused"
    env = {**os.environ, "DISTILLD_PAUSE_AT": "step-marked:2", "DISTILLD_PAUSE_FILE": str(flag)}
    process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--once", "--store", str(store)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not flag.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the compaction never paused")
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    flag.unlink()
    code = process.wait(600)
    took = time.monotonic() - started
    if code != 130:
        raise RuntimeError(f"run --once exited {code} after SIGTERM, not 130")
    return took


def sigterm_while_planning(store: Path, delay: float) -> float:
    """Seconds from SIGTERM to exit, sent ``delay`` s after the compaction job began."""
    status = InstancePaths.for_store(store.resolve()).status_file
    process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--once", "--store", str(store)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while '"job": "compaction"' not in (status.read_text() if status.exists() else ""):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the compaction never started")
        time.sleep(0.02)
    time.sleep(delay)  # a point inside the long planning, not a wait for a condition
    process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    process.wait(600)
    return time.monotonic() - started


# -- the benchmark ---------------------------------------------------------------------------

def bench_previews(title: str, stores: dict[str, Path], rounds: int) -> dict[str, Run]:
    print(f"\n  {title}")
    medians: dict[str, Run] = {}
    for name, store in stores.items():
        found = interleave({f"compact {name}": lambda s=store: compact_preview(s),
                            f"read every file ({name})": lambda s=store: read_files(s)}, rounds)
        for label, runs in found.items():
            print(f"    {describe(label, runs)}", flush=True)
        medians[name] = median(found[f"compact {name}"])
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=MIN_RUNS, help="rounds (at least 5) after a warm-up")
    parser.add_argument("--only", choices=("files", "spines", "sigterm"), help="one part only")
    args = parser.parse_args()
    header("compaction on big inputs: `distilld compact` (preview) against reading the store's files", args.rounds)
    summary: list[tuple[str, str, str, bool | None]] = []
    with tempfile.TemporaryDirectory(prefix="distilld-bench-big-") as scratch_name:
        scratch = Path(scratch_name)
        for name in ("DISTILLD_CONFIG_DIR", "DISTILLD_STATE_DIR", "DISTILLD_RUNTIME_DIR"):
            os.environ[name] = str(scratch / name.lower())
        if args.only in (None, "files"):
            stores = {f"{n} MB tier file": file_store(scratch / f"file{n}", n * MB) for n in (1, 5, 20)}
            found = bench_previews("tier files (one section):", stores, args.rounds)
            big = found["20 MB tier file"]
            summary.append(("20 MB tier file, planned or refused", f"{ms(big.cpu)} CPU, {big.rss_mb:.0f} MB",
                            f"<= {FILE_TARGET_CPU:.0f} s CPU", big.cpu <= FILE_TARGET_CPU))
        if args.only in (None, "spines"):
            stores = {f"{k} KB SPINE of entries": entries_spine(scratch / f"entries{k}", k * 1000)
                      for k in (100, 400, 5000)}
            stores.update({f"{k} KB SPINE of long hooks": hooks_spine(scratch / f"hooks{k}", k * 1000)
                           for k in (100, 400, 5000)})
            found = bench_previews("bloated SPINEs:", stores, args.rounds)
            for shape, verb in (("entries", "refused"), ("long hooks", "planned")):
                big = found[f"5000 KB SPINE of {shape}"]
                summary.append((f"5 MB SPINE of {shape}, {verb}", f"{ms(big.cpu)} CPU, {big.rss_mb:.0f} MB",
                                f"<= {SPINE_TARGET_CPU:.0f} s CPU, <= {SPINE_TARGET_RSS_MB:.0f} MB",
                                big.cpu <= SPINE_TARGET_CPU and big.rss_mb <= SPINE_TARGET_RSS_MB))
        if args.only in (None, "sigterm"):
            sys.path.insert(0, str(HERE.parent))
            from maintenance_fixtures import migrated_store_over_targets
            paused, planning = [], []
            for number in range(max(args.rounds, MIN_RUNS)):
                store = scratch / f"sigterm{number}"
                migrated_store_over_targets(store).rebuild_catalog()
                paused.append(sigterm_while_paused(store, scratch))
                planning.append(sigterm_while_planning(hooks_spine(scratch / f"planning{number}", 400_000), 1.0))
            print("\n  SIGTERM during a long pass of `run --once`, to the process's exit:")
            print(f"    mid-apply (rolls back): median {ms(statistics.median(paused))}, max {ms(max(paused))}")
            print(f"    mid-planning: median {ms(statistics.median(planning))}, max {ms(max(planning))}")
            worst = max(paused + planning)
            summary.append(("SIGTERM to exit during a long pass", f"{ms(worst)} at most", f"< {SIGTERM_LIMIT:.0f} s",
                            worst < SIGTERM_LIMIT))
    print("\n  | what | measured | target |")
    print("  |---|---|---|")
    for what, value, target, met in summary:
        row(what, value, target, met)
    return 0


if __name__ == "__main__":
    sys.exit(main())
