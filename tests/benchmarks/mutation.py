"""Mutation testing of the modules that guard the store's data (not part of CI: it is slow).

    python -m pip install -e '.[mutation]'
    python tests/benchmarks/mutation.py                      # every module, in priority order
    python tests/benchmarks/mutation.py engine/gc.py store/ledger.py
    python tests/benchmarks/mutation.py --list               # the modules and their test subsets

mutmut (2.x) rewrites a source file in place for each mutant and runs a test command, so this
script works on a scratch copy of the repository (never on the tree you are editing): it copies
the tracked files, makes ``distilld`` importable from the copy (a ``distilld`` link to its
``daemon/`` folder on PYTHONPATH, ahead of the editable install), and runs mutmut there with the
focused test subset of each module (``-x``: a killed mutant stops at its first failing test).

The survivors are printed with their diffs and written to tests/benchmarks/out/mutation-<module>.txt.
Each one is either killed by a new test or named, with the reason, as equivalent.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "benchmarks" / "out"

# module -> (the fast subset mutmut runs for every mutant, default tests only; the wider subset,
# slow tests included, that a survivor of the fast one is run against before it counts).
MODULES: dict[str, tuple[list[str], list[str]]] = {
    "engine/gc.py": (["tests/engine/test_defensive_checks.py"],
                     ["tests/engine/test_gc_apply.py", "tests/engine/test_restore.py", "tests/test_hostile_corpus.py"]),
    "gitstore/merge.py": (["tests/gitstore/test_merge_checks.py"], ["tests/gitstore/test_git_sync.py"]),
    "store/ledger.py": (["tests/engine/test_defensive_checks.py", "tests/store/test_safety.py"],
                        ["tests/store/test_rules_c1_c2_c3.py", "tests/store/test_sync_merge.py",
                         "tests/engine/test_gc_apply.py"]),
    "engine/lock.py": (["tests/engine/test_lock.py"], ["tests/engine/test_guard.py", "tests/engine/test_gc_concurrency.py"]),
    "store/fs.py": (["tests/store/test_safety.py"], ["tests/engine/test_gc_apply.py", "tests/test_hostile_corpus.py"]),
    "store/invariants.py": (["tests/store/test_rules_c1_c2_c3.py"],
                            ["tests/store/test_bad_input.py", "tests/store/test_differential.py"]),
    "gitstore/sync.py": (["tests/gitstore/test_git_sync.py"], ["tests/gitstore/test_git_bytes.py"]),
}


def pytest_command(tests: list[str], slow_too: bool = False) -> str:
    marker = "" if slow_too else "-m 'not slow' "
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


def run_module(module: str, fast: list[str], wide: list[str], scratch: Path, timeout_factor: float) -> list[str]:
    """Run mutmut on one module; returns the ids of the mutants no test kills."""
    env = {**os.environ, "PYTHONPATH": str(scratch / "importroot")}
    cache = scratch / ".mutmut-cache"
    cache.unlink(missing_ok=True)
    started = time.monotonic()
    subprocess.run(["mutmut", "run", "--paths-to-mutate", f"daemon/{module}", "--runner", pytest_command(fast),
                    "--tests-dir", "tests", "--no-progress", "--simple-output",
                    f"--test-time-multiplier={timeout_factor}"], cwd=scratch, env=env)
    results = subprocess.run(["mutmut", "results"], cwd=scratch, env=env, capture_output=True, text=True).stdout
    candidates = _ids_under(results, "Survived") + _ids_under(results, "Suspicious")
    report = [f"# mutmut on daemon/{module}", results]
    survivors: list[str] = []
    pristine = (REPO / "daemon" / module).read_bytes()
    for mutant in candidates:
        shown = subprocess.run(["mutmut", "show", mutant], cwd=scratch, env=env, capture_output=True, text=True)
        subprocess.run(["mutmut", "apply", mutant], cwd=scratch, env=env, capture_output=True)
        wider = subprocess.run(pytest_command(wide, slow_too=True), shell=True, cwd=scratch, env=env, capture_output=True)
        (scratch / "daemon" / module).write_bytes(pristine)
        killed = wider.returncode not in (0, 5)  # 5: pytest collected nothing, which kills nothing
        verdict = "killed by the wider subset" if killed else "SURVIVES"
        if not killed:
            survivors.append(mutant)
        report.append(f"## mutant {mutant}: {verdict}\n{shown.stdout}")
    report.append(f"{module}: {len(candidates)} survived the fast subset, {len(survivors)} survive the wider one "
                  f"({round(time.monotonic() - started)} s)")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"mutation-{module.replace('/', '-')}.txt").write_text("\n".join(report))
    print("\n".join(report), flush=True)
    return survivors


def _ids_under(results: str, heading: str) -> list[str]:
    """The mutant ids that `mutmut results` lists under a heading such as 'Survived'."""
    ids: list[str] = []
    lines = results.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(heading):
            for following in lines[index + 1:]:
                if not following.strip():
                    continue
                if following.startswith("----") or following.startswith("#"):
                    continue
                if following[0].isalpha() and not following.startswith("daemon"):
                    break
                for part in following.replace(",", " ").split():
                    if "-" in part and part.replace("-", "").isdigit():
                        start, end = part.split("-")
                        ids += [str(i) for i in range(int(start), int(end) + 1)]
                    elif part.isdigit():
                        ids.append(part)
    return ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="modules under daemon/ (default: all, in priority order)")
    parser.add_argument("--list", action="store_true", help="print the modules and their test subsets")
    parser.add_argument("--timeout-factor", type=float, default=4.0,
                        help="a mutant whose tests take this many times the baseline counts as timed out")
    args = parser.parse_args()
    if args.list:
        for module, (fast, wide) in MODULES.items():
            print(f"{module}: {' '.join(fast)} (then {' '.join(wide)})")
        return 0
    if shutil.which("mutmut") is None:
        print("mutmut is not installed: python -m pip install -e '.[mutation]'", file=sys.stderr)
        return 2
    chosen = args.modules or list(MODULES)
    unknown = [m for m in chosen if m not in MODULES]
    if unknown:
        print(f"unknown module(s) {unknown}; --list shows them", file=sys.stderr)
        return 2
    total: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="distilld-mutation-") as folder:
        scratch = Path(folder)
        scratch_copy(scratch)
        for module in chosen:
            total[module] = run_module(module, *MODULES[module], scratch, args.timeout_factor)
    for module, survivors in total.items():
        print(f"{module}: {len(survivors)} surviving or suspicious mutant(s): {' '.join(survivors) or '-'}")
    return 1 if any(total.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
