"""distilld's git work as a user runs it, one process per command, against plain git doing the same.
Not collected by pytest; run it by hand (issue 26, "Git work"):

    python tests/benchmarks/bench_git_ratios.py --scales 10,100 --stores /tmp/stores
    python tests/benchmarks/bench_git_ratios.py --scales 10 --skip daemon
    python tests/benchmarks/bench_git_ratios.py --scales 100 --skip daemon,diverged --tree AFTER --before BEFORE

Each pair runs interleaved, round by round, after a warm-up round; the figures are medians of the
rounds. CPU is user+sys of the child process and everything it waited for (wait4, the same as a
RUSAGE_CHILDREN delta), wall is what a user waits; the ratio is of CPU:

* the daemon, one agent edit -> its commit (the daemon's own CPU from /proc, from the write until
  HEAD moved) vs ``git add -A && git commit`` of a like edit in a plain clone;
* ``distilld run --once`` after one changed file vs ``git commit --only FILE``;
* ``distilld sync`` with nothing to do vs ``git fetch && git status``;
* ``distilld sync`` of a divergence (the other machine pushed, this one changed a file) vs
  ``git pull --no-rebase`` of a like divergence in plain clones;
* ``distilld --help`` vs ``python -c pass``.

With ``--before TREE`` the distilld side of the one-shot pairs (run --once, the no-op sync,
--help) also runs from TREE, a third candidate in the same rounds: a before/after, interleaved,
each against the same git baseline.

Everything lives in a temporary directory: an empty HOME, no system git config, distilld's config,
state and runtime folders in it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchutil import Sample, Series, describe, header, interleaved, make_store, ratio, row, run_child  # noqa: E402

PY = sys.executable
TICKS = os.sysconf("SC_CLK_TCK")
TARGETS = {"daemon": 2.0, "once": 3.0, "sync": 3.0, "diverged": 5.0, "help": 4.0}


def now() -> datetime:
    return datetime.now(UTC)


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / TICKS  # self + children


def append(path: Path, text: str) -> None:
    with open(path, "ab") as handle:
        handle.write(text.encode())


def summed(*samples: Sample) -> Sample:
    return Sample(sum(s.cpu for s in samples), sum(s.wall for s in samples))


class Setup:
    """One scale: the distilld store (adopted, pushed to a bare origin), a second distilld machine,
    and plain clones of the same history for git's side."""

    def __init__(self, base: Path, scale: int, stores: Path | None, tree: Path | None = None,
                 before: Path | None = None) -> None:
        self.base = base
        self.before = before
        home = base / "home"
        home.mkdir()
        (base / "config").mkdir()
        (base / "config" / "config.toml").write_text("[watch]\nquiet_seconds = 0.5\n")
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
                    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
                    "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0",
                    "DISTILLD_CONFIG_DIR": str(base / "config"), "DISTILLD_STATE_DIR": str(base / "state"),
                    "DISTILLD_RUNTIME_DIR": tempfile.mkdtemp(prefix="dgr-", dir="/tmp")}
        if tree is not None:
            self.env["PYTHONPATH"] = str(tree.resolve())
        self.store = make_store(base / "store", scale, stores)
        self.origin = base / "origin.git"
        self.git_quiet("init", "-q", "--bare", "-b", "main", str(self.origin))
        self.distilld_quiet("init", "--store", str(self.store), "--remote", str(self.origin))
        self.wait_for_gc(self.store)
        self.distilld_quiet("sync", "--store", str(self.store))
        self.other = base / "other"
        self.distilld_quiet("init", "--store", str(self.other), "--remote", str(self.origin))
        self.wait_for_gc(self.other)
        self.plain_origin = base / "plain-origin.git"
        self.git_quiet("clone", "-q", "--bare", "--no-local", str(self.origin), str(self.plain_origin))
        self.left, self.right = base / "plain-left", base / "plain-right"
        for clone in (self.left, self.right):
            self.git_quiet("clone", "-q", "--no-local", str(self.plain_origin), str(clone))
        tiers = sorted((self.store / "projects").glob("*.md"))
        self.one = tiers[0].relative_to(self.store).as_posix()
        self.spare = sorted((self.store / "craft").glob("*.md"))[0].relative_to(self.store).as_posix()
        self.counter = iter(range(1_000_000))

    def wait_for_gc(self, store: Path) -> None:
        deadline = time.monotonic() + 900
        while (store / ".git" / "gc.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.2)

    def git(self, *args: str, cwd: Path) -> Sample:
        return run_child(["git", *args], env=self.env, cwd=cwd)

    def git_quiet(self, *args: str, cwd: Path | None = None) -> None:
        subprocess.run(["git", *args], env=self.env, cwd=cwd, check=True, capture_output=True)

    def distilld(self, *args: str) -> Sample:
        return run_child([PY, "-m", "distilld", *args], env=self.env, ok_codes=(0, 1))  # check may report

    def distilld_before(self, *args: str) -> Sample:
        """The same command from the --before tree."""
        assert self.before is not None
        env = {**self.env, "PYTHONPATH": str(self.before.resolve())}
        return run_child([PY, "-m", "distilld", *args], env=env, ok_codes=(0, 1))

    def with_before(self, pair: dict[str, Callable[[], Sample]],
                    before: Callable[[], Sample]) -> dict[str, Callable[[], Sample]]:
        """The pair, and when --before is given, distilld's side from that tree as a third."""
        if self.before is None:
            return pair
        ours, theirs = pair
        return {ours: pair[ours], theirs: pair[theirs], f"{ours} (before)": before}

    def distilld_quiet(self, *args: str) -> None:
        subprocess.run([PY, "-m", "distilld", *args], env=self.env, check=False, capture_output=True)

    def head(self, store: Path) -> str:
        return subprocess.run(["git", "rev-parse", "HEAD"], env=self.env, cwd=store, check=True,
                              capture_output=True, text=True).stdout.strip()

    # -- the pairs ---------------------------------------------------------------------------------

    def once(self) -> dict[str, Callable[[], Sample]]:
        def ours() -> Sample:
            append(self.store / self.one, f"\n- once {next(self.counter)}\n")
            return self.distilld("run", "--once", "--store", str(self.store))

        def theirs() -> Sample:
            append(self.left / self.one, f"\n- once {next(self.counter)}\n")
            return self.git("commit", "-q", "--only", "-m", "bench", "--", self.one, cwd=self.left)

        def before() -> Sample:
            append(self.store / self.one, f"\n- once {next(self.counter)}\n")
            return self.distilld_before("run", "--once", "--store", str(self.store))
        return self.with_before({"distilld run --once, one changed file": ours, "git commit --only FILE": theirs},
                                before)

    def sync(self) -> dict[str, Callable[[], Sample]]:
        self.distilld_quiet("sync", "--store", str(self.store))
        self.git_quiet("push", "-q", "origin", "HEAD:main", cwd=self.left)
        return self.with_before(
            {"distilld sync, nothing to do": lambda: self.distilld("sync", "--store", str(self.store)),
             "git fetch && git status": lambda: summed(self.git("fetch", "-q", "origin", cwd=self.left),
                                                       self.git("status", "--porcelain", cwd=self.left))},
            lambda: self.distilld_before("sync", "--store", str(self.store)))

    def diverged(self) -> dict[str, Callable[[], Sample]]:
        def ours() -> Sample:
            n = next(self.counter)
            append(self.other / self.spare, f"\n- other machine {n}\n")
            self.distilld_quiet("sync", "--store", str(self.other))
            append(self.store / self.one, f"\n- this machine {n}\n")
            return self.distilld("sync", "--store", str(self.store))  # commits the change, then merges

        def theirs() -> Sample:
            n = next(self.counter)
            self.git_quiet("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=self.left)
            append(self.left / self.spare, f"\n- left {n}\n")
            self.git_quiet("commit", "-q", "-am", "left", cwd=self.left)
            self.git_quiet("push", "-q", "origin", "HEAD:main", cwd=self.left)
            self.git_quiet("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=self.right)
            append(self.right / self.one, f"\n- right {n}\n")
            self.git_quiet("commit", "-q", "-am", "right", cwd=self.right)
            sample = self.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main", cwd=self.right)
            self.git_quiet("push", "-q", "origin", "HEAD:main", cwd=self.right)
            return sample
        return {"distilld sync, diverged": ours, "git pull --no-rebase, diverged": theirs}

    def help(self) -> dict[str, Callable[[], Sample]]:
        return self.with_before({"distilld --help": lambda: self.distilld("--help"),
                                 "python -c pass": lambda: run_child([PY, "-c", "pass"], env=self.env)},
                                lambda: self.distilld_before("--help"))

    def daemon(self, rounds: int) -> dict[str, Series]:
        """The running daemon's CPU from one edit to the commit it makes of it, interleaved with git's
        add and commit of a like edit (not through benchutil.interleaved: the daemon is one process)."""
        process = subprocess.Popen([PY, "-m", "distilld", "run", "--store", str(self.store)], env=self.env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ours, theirs = Series("the daemon, edit -> commit"), Series("git add -A && git commit")
        try:
            time.sleep(3)
            settle = self.head(self.store)
            for _ in range(600):  # its start-up passes: wait until HEAD stays put for 3 s
                time.sleep(3)
                if self.head(self.store) == settle and process.poll() is None:
                    break
                settle = self.head(self.store)
            for n in range(rounds + 1):
                before, cpu, started = self.head(self.store), proc_cpu(process.pid), time.perf_counter()
                append(self.store / self.one, f"\n- daemon {n}\n")
                deadline = time.monotonic() + 600
                while self.head(self.store) == before and time.monotonic() < deadline:
                    time.sleep(0.05)
                sample = Sample(proc_cpu(process.pid) - cpu, time.perf_counter() - started)
                append(self.left / self.one, f"\n- git {n}\n")
                cli = summed(self.git("add", "-A", cwd=self.left),
                             self.git("commit", "-q", "-m", "bench", cwd=self.left))
                if n:
                    ours.samples.append(sample)
                    theirs.samples.append(cli)
                time.sleep(1)  # the daemon's after-commit work, off the next round's clock
        finally:
            process.terminate()
            process.wait(120)
        return {"ours": ours, "theirs": theirs}


def report(scale: int, work: str, found: dict[str, Series]) -> float:
    ours, theirs, *before = list(found.values())
    for series in (ours, theirs, *before):
        print(f"    {describe(series)}")
    for series in before:
        b = ratio(series, theirs)
        row(f"{work} (x{scale}), {series.name} / {theirs.name}, CPU",
            f"{series.cpu:.3f} s / {theirs.cpu:.3f} s = {b:.1f}x (wall {ratio(series, theirs, wall=True):.1f}x)",
            f"<= {TARGETS[work]}x", b <= TARGETS[work])
    r = ratio(ours, theirs)
    row(f"{work} (x{scale}), {ours.name} / {theirs.name}, CPU",
        f"{ours.cpu:.3f} s / {theirs.cpu:.3f} s = {r:.1f}x (wall {ratio(ours, theirs, wall=True):.1f}x)",
        f"<= {TARGETS[work]}x", r <= TARGETS[work])
    for series in before:
        print(f"    after / before: CPU {ratio(ours, series):.2f}x, wall {ratio(ours, series, wall=True):.2f}x")
    return r


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="10,100")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stores", type=Path, help="a folder holding x<scale> stores to copy instead of generating")
    parser.add_argument("--tree", type=Path, help="a folder holding another distilld package (a `distilld` folder), "
                        "put first on PYTHONPATH: the before of a before/after")
    parser.add_argument("--before", type=Path, help="a folder holding the distilld package to compare with: "
                        "the one-shot pairs run from it too, in the same rounds")
    parser.add_argument("--skip", default="", help="comma-separated: daemon,once,sync,diverged,help")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    for scale in (int(s) for s in args.scales.split(",")):
        with tempfile.TemporaryDirectory(prefix="distilld-bench-ratios-") as temp:
            setup = Setup(Path(temp), scale, args.stores, args.tree, args.before)
            header(f"distilld's git work against git, one process per command, x{scale}", args.rounds)
            print(f"  distilld children run from {args.tree or 'this tree'}"
                  + (f"; the before from {args.before}" if args.before else ""))
            try:
                for work in ("once", "sync", "diverged", "help"):
                    if work not in skip:
                        report(scale, work, interleaved(getattr(setup, work)(), args.rounds))
                if "daemon" not in skip:
                    report(scale, "daemon", setup.daemon(max(args.rounds, 5)))
            finally:
                shutil.rmtree(setup.env["DISTILLD_RUNTIME_DIR"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
