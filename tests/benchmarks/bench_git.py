"""Benchmark the git-backed store on a large synthetic store. Not collected by pytest; run it by hand.

    python tests/benchmarks/bench_git.py              # the 100x store, 20 rounds each
    python tests/benchmarks/bench_git.py --scale 10 --rounds 50

Measures, in a temporary folder with a local bare remote:
* a one-operation commit (three paths: a tier file, the ledger and the SPINE) through
  distilld's private index and compare-and-swap (target: under 50 ms at 100x);
* a sync with nothing to do against the local remote (target: under 100 ms at 100x);
* the same one-path commit through the git command line (`git commit --only`) against pygit2,
  reported as a ratio;
* for reference: committing agents' changes (one file), which needs a status scan.
git and libgit2 read no configuration from this machine (an empty HOME, GIT_CONFIG_NOSYSTEM).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pygit2
from distilld.actions.sync import run_init
from distilld.gitstore.commit import Identity, commit_agent_changes, commit_operation
from distilld.gitstore.repo import open_store
from distilld.gitstore.sync import sync_store
from distilld.policy import load_policy
from pygit2.enums import ConfigLevel
from storegen import generate_store

NOW = datetime(2027, 1, 15, 12, 0, 0, tzinfo=UTC)
IDENTITY = Identity("bench", "bench@localhost")


def median_ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:.1f} ms (min {min(samples) * 1000:.1f}, " \
           f"max {max(samples) * 1000:.1f}, n={len(samples)})"


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def no_lock() -> AbstractContextManager[object]:
    return nullcontext()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="distilld-bench-git-") as temp:
        base = Path(temp)
        home = base / "home"
        home.mkdir()
        for level in (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM):
            pygit2.settings.search_path[level] = str(home)
        os.environ.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"})  # for distilld's own `git gc`
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
        store, origin = base / "store", base / "origin.git"
        started = time.perf_counter()
        shape = generate_store(store, args.scale, layout="migrated")
        print(f"store at {args.scale}x: {shape.get('files_total', '?')} files, {shape.get('bytes_total', 0) // 1_000_000} MB, generated in "
              f"{time.perf_counter() - started:.1f} s")
        pygit2.init_repository(str(origin), bare=True, initial_head="main")
        policy = load_policy()
        started = time.perf_counter()
        run_init(store, policy, lambda: NOW, remote_url=str(origin), identity=IDENTITY)
        print(f"init (first commit of the whole store, then git gc --auto): {time.perf_counter() - started:.1f} s")
        repo_store = open_store(store)
        signature = IDENTITY.signature(NOW)
        sync_store(repo_store, lambda: NOW, IDENTITY, no_lock)  # first push

        tier = next(p for p in sorted((store / "projects").glob("*.md")))
        paths = [tier.relative_to(store).as_posix(), "archive/LEDGER.md", "SPINE.md"]
        commits: list[float] = []
        for n in range(args.rounds):
            for path in paths:
                with open(store / path, "ab") as handle:
                    handle.write(f"<!-- bench {n} -->\n".encode())
            commits.append(timed(lambda n=n: commit_operation(repo_store, "bench", paths, "bench: one operation",
                                                              signature, f"bench-{n}")))
        sizes = ", ".join(f"{p} {(store / p).stat().st_size // 1024} KiB" for p in paths)
        print(f"one-operation commit, 3 paths ({sizes}): {median_ms(commits)}")

        sync_store(repo_store, lambda: NOW, IDENTITY, no_lock)  # push those, so the next ones are no-ops
        noops: list[float] = []
        for _ in range(args.rounds):
            noops.append(timed(lambda: sync_store(open_store(store), lambda: NOW, IDENTITY, no_lock)))
        report = sync_store(open_store(store), lambda: NOW, IDENTITY, no_lock)
        assert report.state == "up-to-date", report
        print(f"sync with nothing to do (local bare remote): {median_ms(noops)}")

        one = paths[0]
        ours: list[float] = []
        cli: list[float] = []
        for n in range(args.rounds):
            with open(store / one, "ab") as handle:
                handle.write(f"<!-- pygit2 {n} -->\n".encode())
            ours.append(timed(lambda n=n: commit_operation(repo_store, "bench", [one], "bench: pygit2", signature,
                                                           f"p-{n}")))
            with open(store / one, "ab") as handle:
                handle.write(f"<!-- cli {n} -->\n".encode())
            cli.append(timed(lambda: subprocess.run(["git", "commit", "-q", "--only", "-m", "bench: cli", "--", one],
                                                    cwd=store, env=env, check=True)))
        print(f"one-operation commit, 1 tier file ({one}): {median_ms(ours)}")
        print(f"the same 1-path commit, git CLI (`git commit --only`): {median_ms(cli)}")
        print(f"ratio git CLI / pygit2: {statistics.median(cli) / statistics.median(ours):.1f}x")

        captures: list[float] = []
        for n in range(args.rounds):
            with open(store / one, "ab") as handle:
                handle.write(f"<!-- agent {n} -->\n".encode())
            captures.append(timed(lambda n=n: commit_agent_changes(repo_store, signature, f"a-{n}", time.time())))
        print(f"agents' changes commit (status scan + one path): {median_ms(captures)}")

        sync_store(repo_store, lambda: NOW, IDENTITY, no_lock)
        other = base / "other"
        started = time.perf_counter()
        run_init(other, policy, lambda: NOW, remote_url=str(origin), identity=Identity("other", "o@localhost"))
        print(f"a second machine joins (fetch and first checkout of the whole store): "
              f"{time.perf_counter() - started:.1f} s")
        with open(store / one, "ab") as handle:
            handle.write(b"<!-- edited on the first machine -->\n")
        with open(other / one, "ab") as handle:
            handle.write(b"<!-- edited on the second machine -->\n")
        sync_store(repo_store, lambda: NOW, IDENTITY, no_lock)
        started = time.perf_counter()
        merged = sync_store(open_store(other), lambda: NOW, Identity("other", "o@localhost"), no_lock)
        print(f"a diverged sync (merge in memory, catalog rebuilt, C1-C3 on three trees, push): "
              f"{time.perf_counter() - started:.1f} s ({merged.state}, {merged.integration}, "
              f"{len(merged.inbox)} inbox item)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
