"""Benchmark the daemon: idle footprint, and the time from the end of the quiet period to the commit.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_daemon.py                    # the 1x and 100x stores
    python tests/benchmarks/bench_daemon.py --scales 1 --idle 120

For each scale it generates the migrated benchmark store (storegen.py), makes it a git repository
with `distilld init` semantics (no remote), starts the real `distilld run` process with the default
settings except that compaction and lifecycle are off (so the numbers are the watcher's and the
commit's, not a compaction of the deliberately bloated store), waits until its start-up passes are
done, then:

* idle: resident memory (VmRSS) and CPU time (utime + stime from /proc) over ``--idle`` seconds in
  which nothing changes, scaled to one hour; plus the cost of the periodic full rescan (every
  30 min by default) measured once, for the hourly estimate;
* latency: a file is changed ``--rounds`` times (at least 5, after one warm-up change); for each,
  the daemon's own JSON log gives the instant the quiet period ended (``watch.quiet``) and the
  instant the commit was made (the ``committed …`` activity record), and /proc gives the daemon's
  CPU time for the pass. The baseline, measured in the same run and interleaved with the rounds, is
  a cold pass in this process: ``run_follow`` without the daemon's kept snapshot (every file read
  and checked again), plus the same commit. Medians, the worst, and the ratio are reported.

Every figure is CPU (user+sys) and wall time; the load average heads the run and closes each
scale's lines. ``--stores DIR`` copies DIR/x<scale> (a store storegen.py wrote) instead of
generating it.

Everything lives in a temporary directory; nothing touches your home, config or real store.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import (MIN_RUNS, Sample, Series, describe, header, load_average, make_store, ms, ratio,  # noqa: E402
                       row, run_call, versus)

from distilld.actions.follow import run_follow  # noqa: E402
from distilld.gitstore.agent_changes import commit_agent_changes  # noqa: E402
from distilld.gitstore.commit import Identity  # noqa: E402
from distilld.gitstore.repo import open_store  # noqa: E402

from distilld.actions.sync import run_init  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.settings import instance_key  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
QUIET = 2.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def parse_ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


class Run:
    def __init__(self, base: Path, scale: int, stores: Path | None = None) -> None:
        self.base = base
        self.store = base / "store"
        self.state = base / "state"
        self.runtime = Path(tempfile.mkdtemp(prefix="ddb-", dir="/tmp"))
        (base / "config").mkdir()
        (base / "config" / "config.toml").write_text(
            f"[watch]\nquiet_seconds = {QUIET}\n[schedule]\ncompaction_minutes = 0\nlifecycle_minutes = 0\n"
            "compact_on_breach = false\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILLD_")}
        self.env.update(DISTILLD_CONFIG_DIR=str(base / "config"), DISTILLD_STATE_DIR=str(self.state),
                        DISTILLD_RUNTIME_DIR=str(self.runtime), HOME=str(base / "home"))
        started = time.perf_counter()
        make_store(self.store, scale, stores)
        run_init(self.store, load_policy(), lambda: datetime.now(timezone.utc))
        gc_pid = self.store / ".git" / "gc.pid"  # init packs in the background: not under the measurements
        while gc_pid.exists():
            time.sleep(0.2)
        self.setup_seconds = time.perf_counter() - started
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def folder(self) -> Path:
        return self.state / instance_key(self.store)

    def status(self) -> dict[str, Any]:
        try:
            return json.loads((self.folder / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in (self.folder / "distilld.jsonl").read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def settled(self) -> bool:
        status = self.status()
        worker = status.get("worker") or {}
        return (self.process is not None and status.get("pid") == self.process.pid
                and status.get("state") == "idle" and not worker.get("running") and not worker.get("pending")
                and (status.get("watcher") or {}).get("pending_paths") == 0)

    def start(self) -> float:
        started = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--store", str(self.store)],
                                        env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 1800
        while not self.settled():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the daemon did not settle")
            time.sleep(0.2)
        time.sleep(QUIET * 2)  # its own start-up writes, flushed and dropped
        while not self.settled():
            time.sleep(0.2)
        return time.perf_counter() - started

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(120)
        shutil.rmtree(self.runtime, ignore_errors=True)


def measure_idle(run: Run, seconds: float) -> dict[str, float]:
    assert run.process is not None
    pid = run.process.pid
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    samples = []
    while time.monotonic() - wall0 < seconds:
        samples.append(rss_mb(pid))
        time.sleep(min(5.0, seconds / 10))
    cpu = cpu_seconds(pid) - cpu0
    wall = time.monotonic() - wall0
    return {"seconds": wall, "cpu_seconds": cpu, "cpu_per_hour": cpu * 3600 / wall, "rss_mb": max(samples)}


def measure_rescan(run: Run) -> float:
    """CPU seconds of one scheduled full rescan (run-now reconcile), for the hourly estimate."""
    assert run.process is not None
    pid = run.process.pid
    before = cpu_seconds(pid)
    done_before = (run.status().get("passes") or {}).get("reconcile", {}).get("at")
    subprocess.run([sys.executable, "-m", "distilld", "run-now", "reconcile", "--store", str(run.store)],
                   env=run.env, check=True, capture_output=True)
    while (run.status().get("passes") or {}).get("reconcile", {}).get("at") == done_before or not run.settled():
        time.sleep(0.1)
    return cpu_seconds(pid) - before


def cold_pass(store: Path) -> Sample:
    """The baseline: the same pass without a kept snapshot, and the same commit, in this process."""
    def one() -> None:
        run_follow(store, load_policy(), lambda: datetime.now(timezone.utc))
        commit_agent_changes(open_store(store), Identity("bench", "b@localhost").signature(datetime.now(timezone.utc)),
                             "bench-cold", time.time())
    return run_call(one)


def measure_latency(run: Run, rounds: int) -> tuple[Series, Series]:
    """(the daemon from end of quiet period to commit, the cold pass), interleaved round by round."""
    assert run.process is not None
    target = run.store / "projects"
    victim = sorted(p for p in target.iterdir() if p.suffix == ".md")[0]
    original = victim.read_bytes()
    daemon, cold = Series("daemon: end of quiet period -> commit"), Series("cold pass (read+check all) + commit")
    for index in range(max(rounds, MIN_RUNS) + 1):  # the first round is the warm-up
        seen = len(run.records())
        cpu_before = cpu_seconds(run.process.pid)
        victim.write_bytes(original + f"\n- benchmark note {index}\n".encode())
        deadline = time.monotonic() + 600
        quiet_at = committed_at = None
        while committed_at is None and time.monotonic() < deadline:
            time.sleep(0.1)
            for record in run.records()[seen:]:
                if record.get("event") == "watch.quiet" and quiet_at is None:
                    quiet_at = parse_ts(record["timestamp"])
                if (record.get("event") == "activity" and str(record.get("message", "")).startswith("committed")
                        and quiet_at is not None):
                    committed_at = parse_ts(record["timestamp"])
        if quiet_at is None or committed_at is None:
            raise RuntimeError("no commit seen")
        while not run.settled():
            time.sleep(0.1)
        if index:
            daemon.samples.append(Sample(cpu_seconds(run.process.pid) - cpu_before, committed_at - quiet_at))
        time.sleep(QUIET)
        victim.write_bytes(original + f"\n- cold note {index}\n".encode())
        sample = cold_pass(run.store)  # committed here; the daemon then sees nothing to commit
        if index:
            cold.samples.append(sample)
        while not run.settled():
            time.sleep(0.1)
        time.sleep(QUIET * 1.5)
        while not run.settled():
            time.sleep(0.1)
    return daemon, cold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="1,100", help="comma-separated store scales (default 1,100)")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle measurement (default 60)")
    parser.add_argument("--rounds", type=int, default=5, help="changes committed for the latency (default 5)")
    parser.add_argument("--stores", type=Path, help="a folder holding x<scale> stores to copy instead of generating")
    args = parser.parse_args()
    header("the daemon: idle footprint, and end of quiet period -> commit", args.rounds)
    for scale in (int(s) for s in args.scales.split(",")):
        with tempfile.TemporaryDirectory(prefix=f"bench-daemon-{scale}x-") as folder:
            run = Run(Path(folder), scale, args.stores)
            try:
                startup = run.start()
                idle = measure_idle(run, args.idle)
                rescan = measure_rescan(run)
                daemon, cold = measure_latency(run, args.rounds)
            finally:
                run.stop()
            files = sum(1 for _ in run.store.rglob("*.md")) if run.store.exists() else 0
            hourly = idle["cpu_per_hour"] + 2 * rescan  # two rescans an hour by default
            print(f"\n  {scale}x store ({files} Markdown files; made and committed in {run.setup_seconds:.1f} s; "
                  f"daemon settled in {startup:.1f} s); measured until {load_average()}")
            print(f"    idle over {idle['seconds']:.0f} s: RSS {idle['rss_mb']:.1f} MB; CPU {idle['cpu_seconds']:.3f} s "
                  f"= {idle['cpu_per_hour']:.2f} s/hour; one full rescan {rescan:.2f} s CPU; "
                  f"estimated with the default two rescans an hour: {hourly:.2f} s/hour")
            print(f"    {describe(daemon)}; worst {ms(max(s.wall for s in daemon.samples))}")
            print(f"    {describe(cold)}")
            print(f"    {versus(daemon, cold)}")
            target = 0.15 if scale <= 10 else 0.5
            row(f"daemon: end of quiet period -> commit (x{scale})",
                f"{daemon.wall * 1000:.0f} ms wall, {daemon.cpu * 1000:.0f} ms CPU "
                f"({ratio(daemon, cold, wall=True):.2f}x a cold pass)", f"<= {target} s", daemon.wall <= target)


if __name__ == "__main__":
    main()
