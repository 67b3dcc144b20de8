"""Benchmark the git-backed store against the git command line, in the same run. Not collected by
pytest; run it by hand.

    python tests/benchmarks/bench_git.py --scale 100 --stores /tmp/stores     # copies /tmp/stores/x100
    python tests/benchmarks/bench_git.py --scale 10 --rounds 7                # generates the store

Every figure is CPU (user+sys) and wall time, the median of ``--rounds`` runs (at least 5) after a
warm-up, interleaved with its baseline, which is the git CLI doing the same thing:

* ``init`` (the first commit of the whole store) vs ``git init && git add -A && git commit``, each
  on a fresh copy of the store (``--init-runs``, default 1 at 100x: it is the slow one). Ratios of
  git work are of wall time: distilld's own ``git gc`` child is not in this process's CPU;
* a one-operation commit of 3 paths (a tier file, the ledger, the SPINE) vs ``git commit --only``
  of the same paths, and the floor of it: writing the three blobs alone (hashing and compressing
  their bytes; storegen's SPINE and ledger grow with the scale); a commit of 3 small tier files
  in three folders, the same bytes at every scale, shows what grows with the store itself; a
  1-path commit likewise (target: pygit2 / git CLI <= 0.5);
* a sync with nothing to do vs ``git fetch`` with nothing to fetch;
* a diverged sync (fetch, merge in memory, catalog, checks, push) vs ``git pull --no-rebase``
  of a like divergence in plain clones;
* a second machine joining vs ``git clone --no-local`` of the same remote.

git and libgit2 read no configuration from this machine (an empty HOME, GIT_CONFIG_NOSYSTEM).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pygit2  # noqa: E402
from benchutil import Sample, Series, describe, header, interleaved, ratio, row, run_call, run_child  # noqa: E402
from pygit2.enums import ConfigLevel  # noqa: E402
from storegen import generate_store  # noqa: E402

from distilld.actions.sync import run_init  # noqa: E402
from distilld.gitstore.commit import Identity, commit_operation  # noqa: E402
from distilld.gitstore.repo import open_store  # noqa: E402
from distilld.gitstore.sync import sync_store  # noqa: E402
from distilld.policy import load_policy  # noqa: E402

NOW = datetime(2027, 1, 15, 12, 0, 0, tzinfo=UTC)
LIMITS = load_policy().limits
IDENTITY = Identity("bench", "bench@localhost")


def no_lock() -> AbstractContextManager[object]:
    return nullcontext()


class Bench:
    def __init__(self, base: Path, scale: int, stores: Path | None) -> None:
        self.base, self.scale = base, scale
        home = base / "home"
        home.mkdir()
        for level in (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM):
            pygit2.settings.search_path[level] = str(home)
        os.environ.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"})  # for distilld's own `git gc`
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
                    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
                    # no background `git gc --auto` under the baseline's feet (or the folder's removal)
                    "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0"}
        self.pristine = base / "pristine"
        if stores is not None:
            shutil.copytree(stores / f"x{scale}", self.pristine, symlinks=True)
        else:
            generate_store(self.pristine, scale, layout="migrated")
        self.copies = 0
        self.policy = load_policy()

    def copy(self) -> Path:
        self.copies += 1
        target = self.base / f"copy-{self.copies}"
        shutil.copytree(self.pristine, target, symlinks=True)
        return target

    def git(self, *args: str, cwd: Path | None = None) -> Sample:
        return run_child(["git", *args], env=self.env, cwd=cwd)

    def git_quiet(self, *args: str, cwd: Path | None = None) -> None:
        subprocess.run(["git", *args], env=self.env, cwd=cwd, check=True, capture_output=True)


def wait_for_gc(store: Path) -> None:
    """distilld's init leaves `git gc --auto` packing in the background, as git does: let it finish
    (untimed) before the next measurement, or it runs under it."""
    pid = store / ".git" / "gc.pid"
    deadline = time.monotonic() + 900
    time.sleep(0.5)
    while pid.exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def append(path: Path, text: str) -> None:
    with open(path, "ab") as handle:
        handle.write(text.encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--init-runs", type=int, default=None, help="init and join runs (default 5, 1 at 100x)")
    parser.add_argument("--stores", type=Path, help="a folder holding x<scale> stores to copy instead of generating")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: init,commit,sync,diverged,join")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    slow_runs = args.init_runs if args.init_runs is not None else (1 if args.scale >= 100 else 5)
    with tempfile.TemporaryDirectory(prefix="distilld-bench-git-") as temp:
        bench = Bench(Path(temp), args.scale, args.stores)
        header(f"git work on the x{args.scale} store, against the git CLI", args.rounds)
        x = f"x{args.scale}"

        # -- init ------------------------------------------------------------------------------
        if "init" not in skip:
            found = interleaved_slow(bench, slow_runs)
            for series in found.values():
                print(f"    {describe(series)}")
            r = ratio(found["ours"], found["cli"], wall=True)
            row(f"`init` (first commit of the whole store, {x}), distilld / git CLI (wall, n={slow_runs})",
                f"{found['ours'].wall:.1f} s vs {found['cli'].wall:.1f} s = {r:.2f}", "<= 1.5", r <= 1.5)
        store = bench.copy()
        origin = bench.base / "origin.git"
        pygit2.init_repository(str(origin), bare=True, initial_head="main")
        run_init(store, bench.policy, lambda: NOW, remote_url=str(origin), identity=IDENTITY)
        wait_for_gc(store)
        repo_store = open_store(store)
        signature = IDENTITY.signature(NOW)
        sync_store(repo_store, lambda: NOW, IDENTITY, no_lock, LIMITS)  # the first push

        # -- commits ----------------------------------------------------------------------------
        if "commit" not in skip:
            tier = sorted((store / "projects").glob("*.md"))[0].relative_to(store).as_posix()
            three = [tier, "archive/LEDGER.md", "SPINE.md"]
            # Three tier files in three folders: the same few KiB at every scale, so what grows
            # with the store (its trees, its index) is all that can make this row grow.
            small = [sorted((store / folder).glob("*.md"))[1].relative_to(store).as_posix()
                     for folder in ("projects", "craft", "ops")]
            counter = iter(range(1_000_000))

            def ours(paths: list[str]) -> Sample:
                n = next(counter)
                for path in paths:
                    append(store / path, f"<!-- pygit2 {n} -->\n")
                return run_call(lambda: commit_operation(repo_store, "bench", paths, "bench: pygit2", signature,
                                                         f"p-{n}"))

            def cli(paths: list[str]) -> Sample:
                n = next(counter)
                for path in paths:
                    append(store / path, f"<!-- cli {n} -->\n")
                return bench.git("commit", "-q", "--only", "-m", "bench: cli", "--", *paths, cwd=store)

            def blobs_only(paths: list[str]) -> Sample:
                # The floor of any commit of these paths: hashing and compressing their new bytes
                # into loose objects, as git and libgit2 both must (nothing else of a commit).
                n = next(counter)
                contents = [(store / path).read_bytes() + f"<!-- blob {n} -->\n".encode() for path in paths]
                return run_call(lambda: [repo_store.repo.create_blob(data) for data in contents])

            found = interleaved({"3 paths, distilld": lambda: ours(three), "3 paths, git commit --only":
                                 lambda: cli(three), "3 paths, their blobs alone": lambda: blobs_only(three),
                                 "1 path, distilld": lambda: ours([tier]),
                                 "1 path, git commit --only": lambda: cli([tier]),
                                 "3 small tier files, distilld": lambda: ours(small),
                                 "3 small tier files, git commit --only": lambda: cli(small)}, args.rounds)
            for series in found.values():
                print(f"    {describe(series)}")
            sizes = ", ".join(f"{p} {(store / p).stat().st_size // 1024} KiB" for p in three + small)
            print(f"    (the paths: {sizes})")
            three_ours, floor = found["3 paths, distilld"], found["3 paths, their blobs alone"]
            row(f"one-operation commit, 3 paths ({x}), wall", f"{three_ours.wall * 1000:.0f} ms "
                f"(min {three_ours.min_wall * 1000:.0f}; CPU {three_ours.cpu * 1000:.0f} ms; "
                f"{ratio(three_ours, found['3 paths, git commit --only'], wall=True):.2f}x git CLI; "
                f"{(three_ours.wall - floor.wall) * 1000:.0f} ms above writing their blobs alone, "
                f"{floor.wall * 1000:.0f} ms)", "<= 30 ms, flat in store size", three_ours.wall <= 0.030)
            small_ours = found["3 small tier files, distilld"]
            row(f"one-operation commit, 3 small tier files ({x}), wall", f"{small_ours.wall * 1000:.0f} ms "
                f"(min {small_ours.min_wall * 1000:.0f}; CPU {small_ours.cpu * 1000:.0f} ms; "
                f"{ratio(small_ours, found['3 small tier files, git commit --only'], wall=True):.2f}x git CLI)",
                "<= 30 ms, flat in store size", small_ours.wall <= 0.030)
            one = ratio(found["1 path, distilld"], found["1 path, git commit --only"], wall=True)
            row(f"1-path commit, distilld (pygit2) / `git commit --only` ({x}), wall", f"{one:.2f}", "<= 0.5",
                one <= 0.5)
            sync_store(repo_store, lambda: NOW, IDENTITY, no_lock, LIMITS)  # push them: the next syncs are no-ops

        # -- no-op sync -------------------------------------------------------------------------
        if "sync" not in skip:
            found = interleaved({
                "distilld sync, nothing to do": lambda: run_call(
                    lambda: sync_store(open_store(store), lambda: NOW, IDENTITY, no_lock, LIMITS)),
                "git fetch, nothing to fetch": lambda: bench.git("fetch", "-q", "origin", cwd=store),
            }, args.rounds)
            report = sync_store(open_store(store), lambda: NOW, IDENTITY, no_lock, LIMITS)
            assert report.state == "up-to-date", report
            for series in found.values():
                print(f"    {describe(series)}")
            noop = found["distilld sync, nothing to do"]
            row(f"no-op sync ({x}), wall", f"{noop.wall * 1000:.0f} ms (min {noop.min_wall * 1000:.0f}; "
                f"{ratio(noop, found['git fetch, nothing to fetch'], wall=True):.2f}x git fetch)", "<= 50 ms",
                noop.wall <= 0.050)

        # -- joining ----------------------------------------------------------------------------
        other = bench.base / "other"
        if "join" not in skip:
            joins, clones = Series("distilld init --remote (join)"), Series("git clone")
            for n in range(slow_runs):
                target, plain = bench.base / f"join-{n}", bench.base / f"clone-{n}"

                def join(target: Path = target) -> None:
                    joins.samples.append(run_call(lambda: run_init(target, bench.policy, lambda: NOW,
                                                                   remote_url=str(origin),
                                                                   identity=Identity("other", "o@localhost"))))
                    wait_for_gc(target)

                def clone(plain: Path = plain) -> None:
                    # --no-local: a clone from a local path would hardlink the object files, which no
                    # clone from another machine can do; this is the transfer a real remote makes.
                    clones.samples.append(bench.git("clone", "-q", "--no-local", str(origin), str(plain)))

                # Whatever runs right after the last round's two 115 MB trees were removed (or the
                # other one's were written) pays for the disk catching up: up to 2x at x100. So
                # each starts with the disk synced (untimed), and the two take turns going first.
                for step in (join, clone) if n % 2 == 0 else (clone, join):
                    os.sync()
                    step()
                if n:
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.rename(other)
                shutil.rmtree(plain, ignore_errors=True)
            for series in (joins, clones):
                print(f"    {describe(series)}")
            r = ratio(joins, clones, wall=True)
            row(f"second machine joins ({x}), distilld / git clone (wall, n={slow_runs})",
                f"{joins.wall:.1f} s vs {clones.wall:.1f} s = {r:.2f}", "<= 1.5", r <= 1.5)
        elif not other.exists():
            run_init(other, bench.policy, lambda: NOW, remote_url=str(origin), identity=Identity("other", "o@l"))

        # -- diverged sync ----------------------------------------------------------------------
        if "diverged" not in skip:
            plain_origin = bench.base / "plain-origin.git"
            left, right = bench.base / "plain-left", bench.base / "plain-right"
            bench.git_quiet("clone", "-q", "--bare", "--no-local", str(origin), str(plain_origin))
            bench.git_quiet("clone", "-q", "--no-local", str(plain_origin), str(left))
            bench.git_quiet("clone", "-q", "--no-local", str(plain_origin), str(right))
            one = sorted((store / "projects").glob("*.md"))[1].relative_to(store).as_posix()
            spare = sorted((store / "craft").glob("*.md"))[0].relative_to(store).as_posix()
            ours_series, cli_series = Series("distilld sync, diverged"), Series("git pull --no-rebase, diverged")
            for n in range(args.rounds + 1):
                append(store / one, f"<!-- first machine {n} -->\n")
                append(other / spare, f"<!-- second machine {n} -->\n")
                sync_store(repo_store, lambda: NOW, IDENTITY, no_lock, LIMITS)
                sample = run_call(lambda: sync_store(open_store(other), lambda: NOW, Identity("other", "o@l"),
                                                     no_lock, LIMITS))
                append(left / one, f"<!-- left {n} -->\n")
                bench.git_quiet("commit", "-q", "-am", "left", cwd=left)
                bench.git_quiet("push", "-q", "origin", "HEAD:main", cwd=left)
                append(right / spare, f"<!-- right {n} -->\n")
                bench.git_quiet("commit", "-q", "-am", "right", cwd=right)
                cli_sample = bench.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=right)
                bench.git_quiet("push", "-q", "origin", "HEAD:main", cwd=right)
                bench.git_quiet("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=left)
                sync_store(repo_store, lambda: NOW, IDENTITY, no_lock, LIMITS)
                sync_store(open_store(other), lambda: NOW, Identity("other", "o@l"), no_lock, LIMITS)
                if n:
                    ours_series.samples.append(sample)
                    cli_series.samples.append(cli_sample)
                else:
                    cold = sample  # the process's first merge: nothing kept from an earlier one
            for series in (ours_series, cli_series):
                print(f"    {describe(series)}")
            print(f"    (the first diverged sync of this process, with nothing kept from an earlier merge, as a "
                  f"one-shot `distilld sync` runs: CPU {cold.cpu * 1000:.0f} ms, wall {cold.wall * 1000:.0f} ms)")
            target = 0.5 if args.scale <= 10 else 5.0
            row(f"diverged sync (merge, catalog, checks, push) ({x}), wall",
                f"{ours_series.wall:.2f} s ({ratio(ours_series, cli_series, wall=True):.1f}x git pull)",
                f"<= {target} s", ours_series.wall <= target)
    return 0


def interleaved_slow(bench: Bench, runs: int) -> dict[str, Series]:
    ours, cli = Series("distilld init (adopt, first commit; git gc --auto in the background)"), Series("git init && add -A && commit")
    for n in range(runs):
        store, plain = bench.copy(), bench.copy()

        def adopt() -> None:
            ours.samples.append(run_call(lambda: run_init(store, bench.policy, lambda: NOW, identity=IDENTITY)))
            wait_for_gc(store)

        def plain_git() -> None:
            parts = [bench.git("init", "-q", "-b", "main", cwd=plain), bench.git("add", "-A", cwd=plain),
                     bench.git("commit", "-q", "-m", "init", cwd=plain)]
            cli.samples.append(Sample(sum(p.cpu for p in parts), sum(p.wall for p in parts)))

        # As for joining: each starts on a synced disk (the copies were just written), and the
        # two take turns going first, so neither always pays for the other's writes.
        for step in (adopt, plain_git) if n % 2 == 0 else (plain_git, adopt):
            os.sync()
            step()
        shutil.rmtree(store, ignore_errors=True)
        shutil.rmtree(plain, ignore_errors=True)
    return {"ours": ours, "cli": cli}

if __name__ == "__main__":
    sys.exit(main())
