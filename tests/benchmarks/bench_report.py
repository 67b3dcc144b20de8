"""Benchmark `distilld report` on the Store-B-shaped store with its replayed git history, against
reading the store's files and the git CLI walking the same history, in the same run.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_report.py --repeat 5

Builds the store (tests/storeb.py) in a temporary directory, then times, interleaved round by
round after a warm-up round, ``--repeat`` rounds (at least 5) of each stage in-process: the figures
without the history (snapshot and the five store sections), the whole report (git history
included) and the HTML page; and of two baselines: plain Python reading every file of the store
(for the figures), and ``git log --raw`` of the whole history with every commit's message (the
walk the report's history makes, by the git CLI; CPU from wait4). Prints the medians of CPU
(user+sys) and wall time, the load average, and figures / reading, whole report / (reading + git
log). The HTML page has no baseline that does the same work; it is shown against the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from benchutil import (Sample, Series, header, interleaved, read_every_file, run_call, run_child, show,  # noqa: E402
                       versus)
from storeb import NOW, SINCE, TODAY, build_store_b_with_history  # noqa: E402

from distilld.actions.health import build_report  # noqa: E402
from distilld.actions.health_html import render_html  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.health import archive_and_ledger, index_cost, lifecycle, links, tier_files  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402


def git_log(root: Path) -> Sample:
    """The git CLI's walk of the history: every commit, its message and its changed paths."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(root / ".git"), "GIT_CONFIG_NOSYSTEM": "1"}
    return run_child(["git", "-C", str(root), "log", "--raw", "--no-abbrev", "--topo-order", "--reverse",
                      "--format=%H %ad%n%B"], env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds (at least 5) after a warm-up")
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
        header("`distilld report` on Store B with its history, against reading the files and git log "
               "(in-process; git as a child)", args.repeat)
        found = interleaved({
            "figures (no history)": lambda: run_call(figures),
            "whole report": lambda: run_call(lambda: build_report(root, policy, NOW, SINCE)),
            "HTML page": lambda: run_call(lambda: render_html(report)),
            "read every file": lambda: run_call(lambda: read_every_file(root)),
            "git log --raw": lambda: git_log(root),
        }, args.repeat)
    show(found)
    reading, log = found["read every file"], found["git log --raw"]
    both = Series("(reading + git log)", [Sample(r.cpu + g.cpu, r.wall + g.wall)
                                          for r, g in zip(reading.samples, log.samples)])
    print(f"    {versus(found['figures (no history)'], reading)}")
    print(f"    {versus(found['whole report'], both)}")
    print(f"    {versus(found['HTML page'], found['figures (no history)'])}")


if __name__ == "__main__":
    main()
