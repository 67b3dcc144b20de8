"""Benchmark `distilld report` on the Store-B-shaped store with its replayed git history.

Not a pytest test: run it by hand.

    python tests/benchmarks/bench_report.py --repeat 5

Builds the store (tests/storeb.py) in a temporary directory, runs one warm-up report, then times
``--repeat`` runs of each stage in-process, interleaved: the figures without the history
(snapshot and the five store sections), the whole report (git history included), and the HTML
page. Prints the median wall and CPU (user+sys) seconds of each, and each against the first.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distilld.actions.health import build_report
from distilld.actions.health_html import render_html
from distilld.policy import load_policy
from distilld.store.health import archive_and_ledger, index_cost, lifecycle, links, tier_files
from distilld.store.snapshot import take_snapshot
from storeb import NOW, SINCE, TODAY, build_store_b_with_history


def cpu() -> float:
    times = os.times()
    return times.user + times.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    policy = load_policy()
    limits = policy.limits
    with tempfile.TemporaryDirectory(prefix="bench-report-") as folder:
        root = Path(folder)
        build_store_b_with_history(root)

        def figures() -> object:
            snapshot = take_snapshot(root)
            return [index_cost(snapshot, limits, 0), tier_files(snapshot, limits),
                    lifecycle(snapshot, limits, TODAY, None), links(snapshot), archive_and_ledger(snapshot)]

        report = build_report(root, policy, NOW, SINCE)
        stages: dict[str, Callable[[], object]] = {
            "figures (no history)": figures,
            "whole report": lambda: build_report(root, policy, NOW, SINCE),
            "HTML page": lambda: render_html(report),
        }
        for stage in stages.values():
            stage()  # warm-up
        wall: dict[str, list[float]] = {name: [] for name in stages}
        used: dict[str, list[float]] = {name: [] for name in stages}
        for _ in range(args.repeat):
            for name, stage in stages.items():
                started, started_cpu = time.perf_counter(), cpu()
                stage()
                wall[name].append(time.perf_counter() - started)
                used[name].append(cpu() - started_cpu)
    base = statistics.median(used["figures (no history)"])
    for name in stages:
        w, c = statistics.median(wall[name]), statistics.median(used[name])
        print(f"{name:<22} wall {w:6.3f} s   cpu {c:6.3f} s   cpu x{c / base:5.2f}")


if __name__ == "__main__":
    main()
