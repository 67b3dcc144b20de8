"""The two-machine soak (issue 23, item 11), as long as you like. Not collected by pytest; run it
by hand:

    python tests/benchmarks/bench_soak.py --rounds 40 --seed 7

Two clones of one store with a shared bare remote, lockless writers on both, both machines'
compaction passes in-process, syncs in a random order, and one user commit with conflict
markers in SPINE.md that the user resolves two rounds later (tests/soak_machines.py). It prints
the soak's figures: commits and merges on the remote, writer lines written and lost, remote
tips that held a conflict-marker line, passes refused while the markers stood, pointers on
duplicate entries, duplicated Index-detail blocks, the share of Index detail in the store
(SPINE and tier files) after the first round and at the end, and whether both clones ended
byte-identical; then the CPU (user+sys) and wall time of the whole soak. Exit 1 when a figure
that must be zero is not, or the clones differ.

``--baseline`` first runs the same soak (same seed) with issue 23's soak rules switched off in
this process: no refusal of conflict-marker lines, no merge of doubled SPINE entries, and
compaction appending every cut hook and cutting re-cut entries back to the cap only. The two
sets of figures are printed one after the other.

git and libgit2 read no configuration from this machine (an empty HOME, GIT_CONFIG_NOSYSTEM).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parent, HERE.parent / "gitstore"):
    sys.path.insert(0, str(extra))

import pygit2  # noqa: E402
from benchutil import Stopwatch, load_average  # noqa: E402
from pygit2.enums import ConfigLevel  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds; each machine writes, compacts and syncs once a round")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--baseline", action="store_true", help="run it first with the soak rules off")
    parser.add_argument("--share-every", type=int, default=0, metavar="N",
                        help="also print the Index-detail share every N rounds (its course, not only first -> last)")
    args = parser.parse_args()
    if args.baseline:
        with rules_off():
            soak_once(args.rounds, args.seed, "without the soak rules (baseline)", args.share_every)
    return soak_once(args.rounds, args.seed, "with the soak rules", args.share_every)


@contextmanager
def rules_off() -> Iterator[None]:
    import distilld.actions.passes as passes
    import distilld.engine.passes.compaction.plan as plan
    from distilld.store.merge import _Merger

    saved = (passes.refuse_conflict_markers, plan.hooks_not_held, plan.was_cut_before, _Merger.doubled_entries)
    passes.refuse_conflict_markers = lambda root: None
    plan.hooks_not_held = lambda files, target, hooks: hooks
    plan.was_cut_before = lambda files, target, hook: False
    _Merger.doubled_entries = lambda self, limits: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        passes.refuse_conflict_markers, plan.hooks_not_held, plan.was_cut_before, _Merger.doubled_entries = saved


def soak_once(rounds: int, seed: int, title: str, share_every: int = 0) -> int:
    with tempfile.TemporaryDirectory(prefix="distilld-soak-") as scratch:
        base = Path(scratch)
        home = base / "home"
        home.mkdir()
        for level in (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM):
            pygit2.settings.search_path[level] = str(home)
        os.environ.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"})
        os.environ.pop("XDG_CONFIG_HOME", None)
        from gitmachines import GitCli, Origin
        from soak_machines import Soak

        user_home = base / "user-home"
        user_home.mkdir()
        watch = Stopwatch()
        soak = Soak(base, Origin.create(base / "origin.git"), GitCli(user_home), rounds, seed)
        soak.figures.share_every = share_every
        figures = soak.run()
        took = watch.sample()
    print(f"two-machine soak, {title} ({load_average()})")
    for line in figures.lines():
        print(f"    {line}")
    print(f"    time: {took.cpu:.1f} s CPU, {took.wall:.1f} s wall")
    bad = (figures.lines_lost or figures.marked_tips or figures.duplicate_entries or figures.duplicate_details
           or figures.problems or not figures.identical)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
