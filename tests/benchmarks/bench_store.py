"""Benchmark distilld's read-check-catalog pass on synthetic stores of growing size, against
reading every file of the same store in the same run.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_store.py                      # scales 1, 10, 100
    python tests/benchmarks/bench_store.py --scales 1,10 --repeat 7 --stores DIR   # reads DIR/x1, DIR/x10

For each scale the parent process writes a migrated store with storegen.py into a temporary
directory (or reads ``--stores``/x<scale> as it is: nothing here writes to the store), then starts
one fresh Python process for that scale so that the process max RSS belongs to that scale alone.
That process imports distilld, records its baseline RSS, runs one pass untimed, and then times,
in-process, interleaved round by round after a warm-up round, ``--repeat`` rounds (at least 5) of

    snapshot = take_snapshot(root); findings = check_store(snapshot)
    catalog_text = render_catalog(snapshot, now)

and of the baseline, plain Python reading every file's bytes (benchutil.read_every_file). It
reports the medians of CPU (user+sys) and wall time, the wall time of the pass's three parts, the
ratio pass / reading (CPU), and the load average. The max RSS (``resource.getrusage``) is read
after the timed rounds; the tracemalloc peak comes from one more pass run under tracemalloc
(tracing slows the pass down, so it is never timed). At scales 1 and 10 it also times
``check_c4(before, after)`` on two snapshots of the same store, each taken fresh (untimed) every
round, interleaved with its baseline: plain Python checking that every line of every file is
still in the same file (the conservation at C4's core).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from datetime import datetime, timezone
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchutil import MIN_RUNS, Sample, header, interleaved, load_average, read_every_file, run_call  # noqa: E402
from distilld.policy import load_policy  # noqa: E402

LIMITS = load_policy().limits
MB = 1024 * 1024
TARGET_1X_MS = 100.0
TARGET_100X_S = 3.0
TARGET_100X_MB = 300.0
C4_SCALES = (1, 10)


def _max_rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux reports KiB


# --------------------------------------------------------------------------------------------
# The measuring process (one per scale).
# --------------------------------------------------------------------------------------------
def lines_kept(before: Any, after: Any) -> bool:
    """C4's baseline in plain Python: every line of every file of ``before`` is still in the
    same file of ``after`` (the conservation at C4's core, none of its exemptions)."""
    for path, raw in before.contents.items():
        if Counter(raw.splitlines()) - Counter(after.contents.get(path, b"").splitlines()):
            return False
    return True


def measure(root: Path, repeat: int, with_c4: bool) -> dict[str, Any]:
    from distilld.store.catalog import render_catalog
    from distilld.store.invariants import check_store
    from distilld.store.lossless import check_c4
    from distilld.store.snapshot import take_snapshot

    baseline_rss = _max_rss_bytes()
    now = datetime.now(timezone.utc)
    parts: list[tuple[float, float, float]] = []

    def one_pass() -> tuple[list[Any], str]:
        t0 = time.perf_counter()
        snapshot = take_snapshot(root)
        t1 = time.perf_counter()
        findings = check_store(snapshot, LIMITS)
        t2 = time.perf_counter()
        catalog_text = render_catalog(snapshot, now)
        parts.append((t1 - t0, t2 - t1, time.perf_counter() - t2))
        return findings, catalog_text

    def timed(work: Callable[[], object]) -> Sample:
        gc.collect()  # no collection of the last round's garbage inside this one
        return run_call(work)

    findings, catalog_text = one_pass()
    files = len(take_snapshot(root).files)
    catalog_matches = (
        catalog_text.split("\n", 3)[3] == (root / "CATALOG.md").read_text("utf-8").split("\n", 3)[3]
    )
    summary: dict[str, Any] = {}
    for group in ("C1", "C2", "C3"):
        fails = Counter(f.code for f in findings if f.group == group and f.severity == "fail")
        notes = Counter(f.code for f in findings if f.group == group and f.severity == "note")
        summary[group] = {
            "status": "FAIL" if fails else "PASS",
            "fails": dict(fails),
            "notes": dict(notes),
        }
    del findings, catalog_text

    # The first round of each is the warm-up (start-up, imports and a cold page cache excluded).
    found = interleaved({"pass": lambda: timed(one_pass),
                         "read every file": lambda: timed(lambda: read_every_file(root))}, repeat)
    timed_parts = parts[2:]  # not the untimed first pass, nor the warm-up round's
    gc.collect()
    rss_after_timing = _max_rss_bytes()

    tracemalloc.start()
    one_pass()
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    ours, reader = found["pass"], found["read every file"]
    result: dict[str, Any] = {
        "files": files,
        "store_bytes": sum(p.stat().st_size for p in root.rglob("*") if p.is_file()),
        "median_s": ours.wall,
        "median_cpu_s": ours.cpu,
        "min_s": ours.min_wall,
        "max_s": max(x.wall for x in ours.samples),
        "read_median_s": reader.wall,
        "read_median_cpu_s": reader.cpu,
        "median_snapshot_s": statistics.median(p[0] for p in timed_parts),
        "median_check_s": statistics.median(p[1] for p in timed_parts),
        "median_catalog_s": statistics.median(p[2] for p in timed_parts),
        "tracemalloc_peak_bytes": traced_peak,
        "max_rss_bytes": rss_after_timing,
        "baseline_rss_bytes": baseline_rss,
        "check": summary,
        "catalog_matches_file": catalog_matches,
        "load": load_average(),  # as this scale's rounds ended
    }

    if with_c4:
        c4_findings: list[int] = []

        def on_two_snapshots(work: Callable[[Any, Any], object]) -> Sample:
            before, after = take_snapshot(root), take_snapshot(root)  # untimed, fresh every round
            return timed(lambda: work(before, after))

        c4 = interleaved({"check_c4": lambda: on_two_snapshots(lambda b, a: c4_findings.append(len(check_c4(b, a)))),
                          "lines kept": lambda: on_two_snapshots(lines_kept)}, repeat)
        result["c4_median_s"], result["c4_median_cpu_s"] = c4["check_c4"].wall, c4["check_c4"].cpu
        result["c4_plain_median_s"], result["c4_plain_median_cpu_s"] = c4["lines kept"].wall, c4["lines kept"].cpu
        result["c4_findings"] = c4_findings[-1]
    return result


# --------------------------------------------------------------------------------------------
# The driving process.
# --------------------------------------------------------------------------------------------
def run_scale(scale: int, repeat: int, seed: int, workdir: Path, stores: Path | None) -> dict[str, Any]:
    # Both steps run in child processes: on Linux a child's ru_maxrss starts at its parent's
    # max RSS at fork time, so the driving process must stay small for RSS to mean anything.
    generated_s = None
    if stores is not None:
        root = stores / f"x{scale}"  # only read, never written: no copy needed
    else:
        root = workdir / f"store-{scale}x"
        t0 = time.perf_counter()
        generate = [sys.executable, str(HERE / "storegen.py"), "--scale", str(scale), "--layout", "migrated",
                    "--seed", str(seed), "--out", str(root)]
        made = subprocess.run(generate, capture_output=True, text=True, check=False)
        if made.returncode != 0:
            raise SystemExit(f"generating {scale}x failed:\n{made.stderr}")
        generated_s = time.perf_counter() - t0
    command = [sys.executable, str(Path(__file__).resolve()), "--measure", str(root), "--repeat", str(repeat)]
    if scale in C4_SCALES:
        command.append("--c4")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measuring {scale}x failed:\n{done.stderr}")
    result = json.loads(done.stdout)
    result.update({"scale": scale, "generated_s": generated_s})
    return result


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def report(results: list[dict[str, Any]], repeat: int) -> None:
    base = next((r for r in results if r["scale"] == 1), None)
    header("distilld read+check+catalog against reading every file (migrated store, in-process, "
           "one process a scale)", repeat)
    table = (
        f"{'scale':>5} {'files':>6} {'store':>8} {'wall':>9} {'CPU':>9} {'read':>9} {'x read':>7} {'snap':>8} "
        f"{'check':>8} {'catalog':>8} {'x vs 1x':>8} {'growth':>6} {'tm peak':>8} {'max RSS':>8}  target"
    )
    print(table)
    print("-" * len(table))
    for r in results:
        ratio = r["median_s"] / base["median_s"] if base else float("nan")
        growth = (
            (math.log(ratio) / math.log(r["scale"])) if base and r["scale"] > 1 else float("nan")
        )
        peak_mb, rss_mb = r["tracemalloc_peak_bytes"] / MB, r["max_rss_bytes"] / MB
        if r["scale"] == 1:
            target = f"< {TARGET_1X_MS:.0f} ms: {verdict(r['median_s'] * 1000 < TARGET_1X_MS)}"
        elif r["scale"] == 100:
            target = (
                f"< {TARGET_100X_S:.0f} s: {verdict(r['median_s'] < TARGET_100X_S)}; "
                f"< {TARGET_100X_MB:.0f} MB: tracemalloc {verdict(peak_mb < TARGET_100X_MB)}, "
                f"RSS {verdict(rss_mb < TARGET_100X_MB)}"
            )
        else:
            target = "-"
        print(
            f"{r['scale']:>4}x {r['files']:>6} {r['store_bytes'] / MB:>6.1f}MB {_ms(r['median_s']):>9} "
            f"{_ms(r['median_cpu_s']):>9} {_ms(r['read_median_cpu_s']):>9} "
            f"{r['median_cpu_s'] / r['read_median_cpu_s']:>6.1f}x "
            f"{_ms(r['median_snapshot_s']):>8} {_ms(r['median_check_s']):>8} {_ms(r['median_catalog_s']):>8} "
            f"{ratio:>7.1f}x {growth:>6.2f} {peak_mb:>6.1f}MB {rss_mb:>6.1f}MB  {target}"
        )
    print("\n  wall and CPU (user+sys) are the pass's medians; read = the baseline's CPU, plain Python reading")
    print("  every file, interleaved with the pass round by round; x read = pass CPU / read CPU;")
    print("  snap, check and catalog are the wall time of the pass's three parts.")
    print("  growth = log(wall ratio to 1x) / log(scale): 1.00 is linear in store size.")
    print(
        "  max RSS is the whole measuring process (interpreter and imports included; baseline "
        + ", ".join(f"{r['scale']}x {r['baseline_rss_bytes'] / MB:.0f}MB" for r in results)
        + ")."
    )
    c4 = [r for r in results if "c4_median_s" in r]
    if c4:
        print("\ncheck_c4(before, after) on two snapshots of the same store (snapshots untimed), against the")
        print("plain-Python check that every line of every file is still there (lines kept), interleaved\n")
        print(f"{'scale':>5} {'files':>6} {'wall':>9} {'CPU':>9} {'kept CPU':>9} {'x kept':>7} {'x vs 1x':>8} "
              f"{'findings':>8}")
        c4_base = next((r for r in c4 if r["scale"] == 1), None)
        for r in c4:
            ratio = r["c4_median_s"] / c4_base["c4_median_s"] if c4_base else float("nan")
            print(
                f"{r['scale']:>4}x {r['files']:>6} {_ms(r['c4_median_s']):>9} {_ms(r['c4_median_cpu_s']):>9} "
                f"{_ms(r['c4_plain_median_cpu_s']):>9} {r['c4_median_cpu_s'] / r['c4_plain_median_cpu_s']:>6.1f}x "
                f"{ratio:>7.1f}x {r['c4_findings']:>8}"
            )
    print(
        "\ncheck_store verdicts (expected at every scale: C1 and C3 FAIL on budgets only, C2 PASS)\n"
    )
    for r in results:
        parts = []
        for group, s in r["check"].items():
            detail = ", ".join(f"{code} x{n}" for code, n in sorted(s["fails"].items()))
            notes = ", ".join(f"{code} x{n}" for code, n in sorted(s["notes"].items()))
            parts.append(
                f"{group} {s['status']}"
                + (f" ({detail})" if detail else "")
                + (f" notes: {notes}" if notes else "")
            )
        same = (
            "catalog rebuild == CATALOG.md"
            if r["catalog_matches_file"]
            else "catalog rebuild DIFFERS from CATALOG.md"
        )
        made = "pre-generated" if r["generated_s"] is None else f"generated in {r['generated_s']:.1f} s"
        print(f"{r['scale']:>4}x  " + "; ".join(parts) + f"; {same}; {made}; measured at {r['load']}")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}ms" if seconds < 10 else f"{seconds:.1f}s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Benchmark take_snapshot + check_store + render_catalog."
    )
    parser.add_argument(
        "--scales", default="1,10,100", help="comma-separated scale factors (default 1,10,100)"
    )
    parser.add_argument(
        "--repeat", type=int, default=MIN_RUNS, help="timed rounds per scale (at least 5, after a warm-up)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--workdir", type=Path, help="keep the generated stores here (default: a temp dir)"
    )
    parser.add_argument("--stores", type=Path, help="a folder holding x<scale> stores to read instead of generating")
    parser.add_argument("--json", action="store_true", help="also print the raw results as JSON")
    parser.add_argument(
        "--measure", type=Path, help=argparse.SUPPRESS
    )  # internal: the per-scale process
    parser.add_argument("--c4", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat < MIN_RUNS:
        parser.error(f"--repeat must be at least {MIN_RUNS}")
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.repeat, args.c4)))
        return 0
    try:
        scales = [int(s) for s in args.scales.split(",") if s.strip()]
    except ValueError:
        parser.error("--scales takes integers, e.g. 1,10,100")
    if not scales or min(scales) < 1:
        parser.error("--scales needs positive integers")
    results = []
    with tempfile.TemporaryDirectory(prefix="distilld-bench-") as temp:
        workdir = args.workdir or Path(temp)
        workdir.mkdir(parents=True, exist_ok=True)
        for scale in scales:
            doing = "measuring" if args.stores else "generating and measuring"
            print(f"{doing} {scale}x ...", file=sys.stderr, flush=True)
            results.append(run_scale(scale, args.repeat, args.seed, workdir, args.stores))
    report(results, args.repeat)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
