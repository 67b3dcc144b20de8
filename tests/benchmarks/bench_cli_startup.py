"""Start-up of `distilld --help` and of a real `distilld check STORE` on a fresh (tiny) store,
against a bare Python in the same run, and optionally against another checkout of distilld.

Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_cli_startup.py --repeat 11
    python tests/benchmarks/bench_cli_startup.py --against /tmp/base-pkg   # a folder holding an older `distilld`

bench_startup.py measures the same `--help` start-up against the same baseline; this script keeps
what that one does not: the A/B of two trees (``--against DIR`` is put first on PYTHONPATH, e.g. a
folder with a symlink `distilld` to another checkout's daemon/), a whole `check` of a store made by
`distilld new`, and the heavy libraries each command imports.

Child processes, one of each per round, interleaved (the order rotated each round) after a
warm-up round; medians of ``--repeat`` rounds (at least 5) of CPU (user+sys, from wait4) and wall
time; the load average; each command's ratio to ``python -c pass`` and, with ``--against``, this
tree / the other. The heavy imports come from one more run under ``-X importtime``, untimed (the
option slows start-up down).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchutil import Sample, header, interleaved, run_child, show, versus  # noqa: E402

PY = sys.executable
HEAVY = ("pydantic_settings", "pydantic", "pygit2", "watchdog", "apscheduler", "structlog")
BARE = "bare python"


def env_for(tree: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree
    return env


def heavy_imports(argv: list[str], tree: str | None) -> str:
    done = subprocess.run([PY, "-X", "importtime", "-m", "distilld", *argv], env=env_for(tree),
                          capture_output=True, text=True, check=False)
    modules = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()
               if line.startswith("import time:")}
    return ", ".join(sorted(modules & set(HEAVY))) or "none"


def command(argv: list[str], tree: str | None) -> Sample:
    return run_child([PY, "-m", "distilld", *argv], env=env_for(tree), ok_codes=(0, 1))  # check may FAIL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=11, help="rounds (at least 5) after a warm-up")
    parser.add_argument("--against", help="a folder holding another `distilld` package (put on PYTHONPATH)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-startup-") as scratch:
        store = Path(scratch) / "store"
        subprocess.run([PY, "-m", "distilld", "new", str(store)], check=True, capture_output=True)
        commands = {"--help": ["--help"], "check": ["check", str(store)]}
        trees = {"this tree": None, **({"other tree": args.against} if args.against else {})}
        candidates = {BARE: lambda: run_child([PY, "-c", "pass"])}
        for name, argv in commands.items():
            for tree, path in trees.items():
                candidates[f"{name}, {tree}"] = lambda argv=argv, path=path: command(argv, path)
        header("distilld start-up against a bare Python (child processes)", args.repeat)
        found = interleaved(candidates, args.repeat)
        show(found)
        for name, argv in commands.items():
            for tree, path in trees.items():
                ours = found[f"{name}, {tree}"]
                print(f"    {versus(ours, found[BARE])}; heavy imports: {heavy_imports(argv, path)}")
            if args.against:
                print(f"    {versus(found[f'{name}, this tree'], found[f'{name}, other tree'])}")


if __name__ == "__main__":
    main()
