"""Start-up: what a command costs before it does anything, against a bare Python in the same run.

Not collected by pytest; run it by hand.

    python tests/benchmarks/bench_startup.py --runs 7
    python tests/benchmarks/bench_startup.py --importtime        # also the ten slowest imports of --help

Child processes, interleaved: ``python -c pass`` (the baseline), ``distilld --help``,
``distilld check --help`` (the CLI's import cost for check), importing only what ``check`` needs
(``distilld.actions.check``: what the CLI costs once it imports per command), and loading the
default policy (``distilld.policy.load_policy``). Target (issue 12): ``--help`` <= 0.12 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from benchutil import describe, header, interleaved, ratio, row, run_child  # noqa: E402

PY = sys.executable
COMMANDS = {
    "bare python": [PY, "-c", "pass"],
    "distilld --help": [PY, "-m", "distilld", "--help"],
    "distilld check --help": [PY, "-m", "distilld", "check", "--help"],
    "import check action only": [PY, "-c", "import distilld.actions.check"],
    "load the default policy": [PY, "-c", "from distilld.policy import load_policy; load_policy()"],
}
HELP_TARGET_S = 0.12


def slowest_imports(argv: list[str], count: int = 10) -> list[str]:
    done = subprocess.run([PY, "-X", "importtime", *argv[1:]], capture_output=True, text=True, check=False)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    rows.sort(reverse=True)
    return [f"{micros / 1000:8.1f} ms cumulative {name}" for micros, name in rows[:count]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--importtime", action="store_true")
    args = parser.parse_args(argv)
    found = interleaved({name: (lambda argv=argv: run_child(argv)) for name, argv in COMMANDS.items()}, args.runs)
    header("start-up of distilld commands (child processes)", args.runs)
    bare = found["bare python"]
    for series in found.values():
        print(f"    {describe(series)}  = {ratio(series, bare, wall=True):.1f}x bare python (wall)")
    helped = found["distilld --help"]
    row("`distilld --help` start-up (wall)", f"{helped.wall:.3f} s ({ratio(helped, bare, wall=True):.1f}x bare)",
        f"<= {HELP_TARGET_S} s", helped.wall <= HELP_TARGET_S)
    row("`distilld check` start-up (check --help, wall)", f"{found['distilld check --help'].wall:.3f} s", "-")
    row("what check imports, once the CLI imports per command (wall)",
        f"{found['import check action only'].wall:.3f} s", "-")
    row("loading the default policy (wall)", f"{found['load the default policy'].wall:.3f} s", "-")
    if args.importtime:
        print("\n  slowest imports of `distilld --help` (python -X importtime):")
        for line in slowest_imports(COMMANDS["distilld --help"]):
            print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
