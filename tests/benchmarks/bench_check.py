"""`distilld check` against two baselines of the same run: a plain Python checker, and reading the files.

Not collected by pytest; run it by hand.

    python tests/benchmarks/bench_check.py --stores /tmp/s1,/tmp/s100      # stores made by storegen.py
    python tests/benchmarks/bench_check.py --scales 1,100 --runs 5         # generates them in a temp dir

Child processes, one of each per round, interleaved: ``python -m distilld check STORE``, and the
``distilld`` console script beside that Python when there is one (what a user types); the same
check without the CLI's imports of every command (what check costs once the CLI imports per
command); the plain checker
(plain_checker.py, standard library only, written from STORE-FORMAT.md section 3), a Python
process that reads every file of the store's scanned folders and does nothing else, and one that
only imports click (the floor under any click command). Before timing,
the plain checker's PASS/FAIL per group must equal distilld's, or the comparison means nothing.
The header says which install it measured: run it with the Python of a non-editable install
(``pip install .``, as a user has it) for the user's figure; an editable install's import hook
adds its own cost to every start.
Targets (issue 12): check CPU <= 1.0x the plain checker at every size; <= 4x reading every file at 100x.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchutil import Series, describe, header, interleaved, ratio, row, run_child  # noqa: E402

READ_EVERY_FILE = """
import os, sys
root = sys.argv[1]
for top in ("SPINE.md", "CATALOG.md", "craft", "ops", "profile", "projects", "feedback", "archive", "evidence", "local"):
    for folder, _, names in os.walk(os.path.join(root, top)):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                handle.read()
    if os.path.isfile(os.path.join(root, top)):
        with open(os.path.join(root, top), "rb") as handle:
            handle.read()
"""


# What `distilld check` runs once the CLI imports per command (issue 10): the policy and the check
# action, nothing else; the same verdicts, printed the same way.
CHECK_ONLY = """
import sys
from pathlib import Path
from distilld.actions.check import render_text, run_check
from distilld.policy import load_policy
result = run_check(Path(sys.argv[1]), load_policy().limits)
sys.stdout.write(render_text(result))
sys.exit(0 if result.ok else 1)
"""


def verdicts(argv: list[str]) -> list[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return [line for line in done.stdout.splitlines() if line[:2] in ("C1", "C2", "C3")]


def measure(store: Path, runs: int) -> dict[str, Series]:
    ours = [sys.executable, "-m", "distilld", "check", str(store)]
    plain = [sys.executable, str(HERE / "plain_checker.py"), str(store)]
    reader = [sys.executable, "-c", READ_EVERY_FILE, str(store)]
    only = [sys.executable, "-c", CHECK_ONLY, str(store)]
    # What a user types: the console script beside this Python (no runpy, as `-m` has).
    script = Path(sys.executable).with_name("distilld")
    typed = [str(script), "check", str(store)] if script.exists() else None
    if not verdicts(ours) == verdicts(plain) == verdicts(only) == (verdicts(typed) if typed else verdicts(ours)):
        raise SystemExit(f"{store}: verdicts differ: distilld {verdicts(ours)}, plain {verdicts(plain)}")
    candidates = {
        "distilld check": lambda: run_child(ours, ok_codes=(0, 1)),
        "check without the CLI's imports": lambda: run_child(only, ok_codes=(0, 1)),
        "plain checker": lambda: run_child(plain, ok_codes=(0, 1)),
        "read every file": lambda: run_child(reader),
        # the CLI's own floor: check imports click, which the plain checker does not
        "python -c 'import click'": lambda: run_child([sys.executable, "-c", "import click"]),
    }
    if typed:
        candidates["distilld check (console script)"] = lambda: run_child(typed, ok_codes=(0, 1))
    return interleaved(candidates, runs)


def generate(scale: int, folder: Path) -> Path:
    out = folder / f"store-{scale}x"
    subprocess.run([sys.executable, str(HERE / "storegen.py"), "--scale", str(scale), "--layout", "migrated",
                    "--out", str(out)], check=True, capture_output=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stores", help="comma-separated store folders (label = folder name)")
    parser.add_argument("--scales", default="1,100", help="scales to generate when --stores is not given")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="distilld-bench-check-") as temp:
        stores = ([Path(s) for s in args.stores.split(",")] if args.stores
                  else [generate(int(s), Path(temp)) for s in args.scales.split(",")])
        header("distilld check vs a plain Python checker and vs reading every file (child processes)", args.runs)
        for store in stores:
            found = measure(store, args.runs)
            ours, plain, reader = found["distilld check"], found["plain checker"], found["read every file"]
            print(f"\n  {store.name}:")
            for series in found.values():
                print(f"    {describe(series)}")
            bare = found["check without the CLI's imports"]
            row(f"the same, check without the CLI's imports ({store.name})", f"{ratio(bare, plain):.2f}",
                "(once the CLI imports per command)")
            click = found["python -c 'import click'"]
            row(f"importing click alone, CPU / plain Python checker CPU ({store.name})", f"{ratio(click, plain):.2f}",
                "(a floor for any click CLI)")
            if "distilld check (console script)" in found:
                typed = found["distilld check (console script)"]
                row(f"`distilld check` (console script) CPU / plain checker CPU ({store.name})",
                    f"{ratio(typed, plain):.2f}", "<= 1.0", ratio(typed, plain) <= 1.0)
            vs_plain = ratio(ours, plain)
            vs_read = ratio(ours, reader)
            row(f"`distilld check` CPU / plain Python checker CPU ({store.name})", f"{vs_plain:.2f}", "<= 1.0",
                vs_plain <= 1.0)
            row(f"check CPU / reading every file's bytes ({store.name})", f"{vs_read:.2f}", "<= 4 (x100)",
                vs_read <= 4.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
