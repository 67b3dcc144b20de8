"""Mutation testing of the modules that guard the store's data (not part of CI: it is slow).

    python -m pip install -e '.[mutation]'
    python tests/benchmarks/mutation.py                      # every module, in priority order
    python tests/benchmarks/mutation.py engine/passes/gc/apply.py store/ledger.py --budget 1800
    python tests/benchmarks/mutation.py --list               # the modules and their test subsets
    python tests/benchmarks/mutation.py store/fs.py --sample 60 --seed 1   # a reproducible sample
    python tests/benchmarks/mutation.py gitstore/integrate.py --mutants 4,17 --with-slow   # survivors again, slow tests too

The mutants are mutmut's (its operators, through ``mutmut.list_mutations`` and ``mutmut.mutate``);
this script runs them itself, because mutmut 2's own runner hangs on this suite after a few
dozen mutants (a worker blocks writing to a full pipe). It works on a scratch copy of the
repository, never on the tree you are editing: the tracked files are copied, ``distilld`` is made
importable from the copy (a ``distilld`` link to its ``daemon/`` folder on PYTHONPATH, ahead of
the editable install), and each mutant is written into the copy and tried against the module's
fast test subset (default tests, ``-x``), then a survivor against a wider one. A fast run that takes more than ``--timeout-factor`` times the unmutated run counts as
killed (a mutant that hangs).

The scratch copy and the tests' temporary folders (TMPDIR, so pytest's tmp_path) live on a RAM
disk (``--tmpdir``, /dev/shm by default where it exists): the gc tests' stores are written
durably, and on a disk shared with other work their fsyncs took half of each run's wall time
(test_gc_defensive_checks.py: 8 s on /tmp, 4 s on /dev/shm). The code still makes every fsync
call, so a test that watches the order of the syncs sees the same calls; only their cost goes.

Survivors are printed with their diffs and written to tests/benchmarks/out/mutation-<module>.txt;
each one is either killed by a new test or named, with the reason, as equivalent.
"""

from __future__ import annotations

import argparse
import difflib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "benchmarks" / "out"

# module -> (the fast subset every mutant is tried against; the wider subset a survivor of the
# fast one must also survive). Default (non-slow) tests, except for the modules in WITH_SLOW.
MODULES: dict[str, tuple[list[str], list[str]]] = {
    "engine/passes/gc/apply.py": (["tests/engine/passes/gc/test_gc_defensive_checks.py"],
                                  ["tests/engine/passes/gc/test_gc_apply.py", "tests/engine/passes/restore/test_restore.py",
                                   "tests/test_hostile_corpus.py"]),
    "engine/passes/gc/manifest.py": (["tests/engine/passes/gc/test_gc_defensive_checks.py"],
                                     ["tests/engine/passes/gc/test_gc_apply.py", "tests/test_hostile_corpus.py"]),
    "gitstore/merge.py": (["tests/gitstore/test_merge_checks.py"], ["tests/store/test_sync_merge.py"]),
    # The sync merge rules; the git tests reach them through a diverged sync's merge.
    "store/merge.py": (["tests/store/test_sync_merge.py"],
                       ["tests/gitstore/test_merge_checks.py", "tests/gitstore/test_git_sync.py",
                        "tests/gitstore/test_sync_default.py", "tests/gitstore/test_integrate.py"]),
    "store/ledger.py": (["tests/store/test_ledger.py", "tests/store/test_safety.py", "tests/store/test_sync_merge.py",
                         "tests/store/test_rules_c1_c2_c3.py"],
                        ["tests/engine/passes/gc/test_gc_defensive_checks.py", "tests/engine/passes/gc/test_gc_apply.py"]),
    "engine/lock/store_lock.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_lock_timings.py"]),
    "engine/lock/lock_file.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_lock_timings.py"]),
    "engine/lock/protocol.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_lock_timings.py"]),
    "engine/lock/liveness.py": (["tests/engine/test_guard.py"], ["tests/engine/test_lock.py"]),
    "engine/lock/acquire.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_lock_timings.py"]),
    "engine/lock/status.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_lock_timings.py"]),
    "engine/lock/mutex.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_lock_timings.py"]),
    "engine/lock/files.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_lock_timings.py"]),
    "store/fs.py": (["tests/store/test_fs.py", "tests/store/test_safety.py"], ["tests/engine/passes/gc/test_gc_apply.py", "tests/test_hostile_corpus.py"]),
    "store/invariants.py": (["tests/store/test_rules_c1_c2_c3.py"],
                            ["tests/store/test_bad_input.py", "tests/store/test_differential.py"]),
    # The fast subset in the order that kills soonest under -x: sync_store's own tests first.
    "gitstore/sync.py": (["tests/gitstore/test_sync_default.py", "tests/gitstore/test_truthful_status.py",
                          "tests/gitstore/test_git_sync.py", "tests/gitstore/test_integrate.py",
                          "tests/gitstore/test_git_bytes.py", "tests/gitstore/test_git_cli.py"],
                         ["tests/gitstore/test_merge_checks.py", "tests/gitstore/test_git_commit.py",
                          "tests/gitstore/test_git_repo.py", "tests/gitstore/test_git_verify_changed.py",
                          "tests/gitstore/test_unmanaged_folders.py"]),
    # merge_commits itself is gitstore/merge.py's (test_merge_checks.py); these take a fetched
    # branch in through integrate: a first checkout, a fast-forward, a merge.
    "gitstore/integrate.py": (["tests/gitstore/test_integrate.py", "tests/gitstore/test_sync_default.py",
                               "tests/gitstore/test_git_repo.py",
                               "tests/gitstore/test_git_verify_changed.py", "tests/gitstore/test_unmanaged_folders.py"],
                              # the join's tests: a first checkout through libgit2 (git hidden), killed ones
                              ["tests/gitstore/test_truthful_status.py", "tests/gitstore/test_git_cli.py",
                               "tests/gitstore/test_git_commit.py", "tests/gitstore/test_git_sync.py",
                               "tests/gitstore/test_git_join_cli.py", "tests/gitstore/test_join_attacks.py"]),
    # what every write pass refuses before it writes: links, unsafe names, a shrunken ledger; the sweep
    "store/safety.py": (["tests/store/test_safety.py"], ["tests/test_hostile_corpus.py", "tests/engine/test_guard.py"]),
    "engine/guard.py": (["tests/engine/test_guard.py", "tests/store/test_safety.py",
                         "tests/gitstore/test_committed_ledger.py"],
                        ["tests/test_hostile_corpus.py", "tests/engine/test_crash_safety.py"]),
}


# Modules the default (non-slow) tests barely reach: their mutants are tried against slow tests too.
WITH_SLOW = {"gitstore/sync.py"}


def pytest_command(tests: list[str], with_slow: bool = False) -> str:
    marker = "" if with_slow else "-m 'not slow' "
    return f"{sys.executable} -m pytest -x -q -p no:cacheprovider {marker}--no-header -o addopts='' {' '.join(tests)}"


def scratch_copy(target: Path) -> None:
    """The tracked files (with uncommitted edits) of the repository, and the import shim."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, check=True, capture_output=True).stdout.split(b"\0")
    for raw in filter(None, listed):
        relative = Path(os.fsdecode(raw))
        source = REPO / relative
        if source.is_file() and not source.is_symlink():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / relative)
    (target / "importroot").mkdir()
    (target / "importroot" / "distilld").symlink_to(target / "daemon")


def write_module(target: Path, text: str) -> None:
    """Put ``text`` in the module and drop its cached bytecode: a pyc is checked only against the
    source's size and whole-second mtime, which a mutant written in the same second can match."""
    target.write_text(text)
    for cached in (target.parent / "__pycache__").glob(f"{target.stem}.*.pyc"):
        cached.unlink()


def ram_disk() -> str | None:
    """A RAM-backed folder to work in, where the system has one (fsync costs nothing there)."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def tests_pass(tests: list[str], scratch: Path, timeout: float | None, with_slow: bool = False) -> tuple[bool, float]:
    # tmp_path under the scratch folder, so on the same (RAM) disk and removed with it
    env = {**os.environ, "PYTHONPATH": str(scratch / "importroot"), "TMPDIR": str(scratch / "tmp")}
    # Bytecode is cached even where the environment says not to: else every run compiles the
    # package again and pytest re-rewrites the asserts of the test files and of hypothesis (a
    # pytest plugin), which costs more CPU than the lock's tests themselves.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.monotonic()
    # A session of its own: a mutant that loops is stopped with everything it started (killing
    # only the shell would leave the looping pytest running on).
    with subprocess.Popen(pytest_command(tests, with_slow), shell=True, cwd=scratch, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True) as child:
        try:
            returncode = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return False, time.monotonic() - started
    return returncode in (0, 5), time.monotonic() - started  # 5: nothing collected, nothing killed


def run_module(module: str, fast: list[str], wide: list[str], scratch: Path, timeout_factor: float,
               deadline: float, sample: int | None = None, seed: int = 0,
               only: list[int] | None = None, with_slow: bool = False) -> tuple[int, int, list[str]]:
    """Try the mutants of one module (a seeded random ``sample`` of them, in file order) until
    ``deadline``; returns (tried, total, survivors' diffs)."""
    from mutmut import Context, list_mutations, mutate

    target = scratch / "daemon" / module
    pristine = target.read_text()
    relative = f"daemon/{module}"
    slow = with_slow or module in WITH_SLOW
    ok, baseline = tests_pass(fast, scratch, None, slow)
    if not ok:
        raise SystemExit(f"the fast tests of {module} fail without any mutation: {' '.join(fast)}")
    mutants = list_mutations(Context(source=pristine, filename=relative))
    chosen: list[int] = list(range(len(mutants)))
    if sample is not None and sample < len(mutants):
        chosen = sorted(random.Random(seed).sample(range(len(mutants)), sample))
    if only is not None:  # the numbers a report printed: try those again after adding tests
        chosen = [index for index in chosen if index in only]
    survivors: list[str] = []
    tried = 0
    try:
        for index in chosen:
            mutant = mutants[index]
            if time.monotonic() > deadline:
                break
            text, count = mutate(Context(source=pristine, mutation_id=mutant, filename=relative))
            if not count:
                continue
            write_module(target, text)
            tried += 1
            passed, _ = tests_pass(fast, scratch, baseline * timeout_factor + 10, slow)
            if passed:
                passed, _ = tests_pass(wide, scratch, None, slow)
            if passed:
                diff = "".join(difflib.unified_diff(pristine.splitlines(True), text.splitlines(True),
                                                    relative, relative, n=1))
                survivors.append(diff)
                print(f"SURVIVED {relative}:{mutant.line_number} (mutant {index})\n{diff}", flush=True)
    finally:
        write_module(target, pristine)
    how = f" (sample of {sample}, seed {seed})" if sample is not None else ""
    report = [f"# {relative}: {tried} of {len(mutants)} mutants tried{how}, {len(survivors)} survive", *survivors]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"mutation-{module.replace('/', '-')}.txt").write_text("\n".join(report) + "\n")
    print(report[0], flush=True)
    return tried, len(mutants), survivors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="modules under daemon/ (default: all, in priority order)")
    parser.add_argument("--list", action="store_true", help="print the modules and their test subsets")
    parser.add_argument("--timeout-factor", type=float, default=4.0,
                        help="a mutant whose fast tests take this many times the unmutated run is killed")
    parser.add_argument("--budget", type=float, default=None,
                        help="stop trying new mutants after this many seconds (the report says how far it got)")
    parser.add_argument("--sample", type=int, default=None,
                        help="try only this many mutants of each module, chosen at random (reproducible with --seed)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of --sample")
    parser.add_argument("--with-slow", action="store_true",
                        help="try every module against its slow tests too (to confirm a survivor of the default ones)")
    parser.add_argument("--tmpdir", default=ram_disk(),
                        help="where the scratch copy and the tests' temporary folders go (default: /dev/shm if any)")
    parser.add_argument("--mutants", default=None,
                        help="only these mutant numbers (comma-separated, as a report prints them)")
    args = parser.parse_args()
    if args.list:
        for module, (fast, wide) in MODULES.items():
            print(f"{module}: {' '.join(fast)} (then {' '.join(wide)})")
        return 0
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("mutmut is not installed: python -m pip install -e '.[mutation]'", file=sys.stderr)
        return 2
    chosen = args.modules or list(MODULES)
    unknown = [m for m in chosen if m not in MODULES]
    if unknown:
        print(f"unknown module(s) {unknown}; --list shows them", file=sys.stderr)
        return 2
    only = [int(n) for n in args.mutants.split(",")] if args.mutants else None
    deadline = time.monotonic() + (args.budget if args.budget is not None else float("inf"))
    total: dict[str, tuple[int, int, list[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="distilld-mutation-", dir=args.tmpdir) as folder:
        scratch = Path(folder)
        scratch_copy(scratch)
        (scratch / "tmp").mkdir()
        for module in chosen:
            total[module] = run_module(module, *MODULES[module], scratch, args.timeout_factor, deadline,
                                       args.sample, args.seed, only, args.with_slow)
    for module, (tried, count, survivors) in total.items():
        print(f"{module}: {tried} of {count} mutants tried, {len(survivors)} survive")
    return 1 if any(survivors for _, _, survivors in total.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
