"""Randomised crash-and-recover runs of gc apply, gc revert and restore, with real SIGKILLs.

Not a speed benchmark: it measures crash safety (does every interrupted pass recover to a whole
store?), and has no baseline. The times it prints (CPU, this process and its children, and wall,
per run and in all, with the load average) only say how long the fuzzing took.
Not a pytest test (nothing here is collected): run it by hand.

    python tests/benchmarks/bench_crash_random.py                 # 200 runs, random base seed
    python tests/benchmarks/bench_crash_random.py --runs 50 --seed 1234
    python tests/benchmarks/bench_crash_random.py --only 1234     # replay one run by its seed

Each run builds a random store (healthy_store plus a random number of stale, recent and pinned
project files, random split families on one or several SPINE lines, random CRLF files,
recall_count lines, `|` in SPINE hooks, read_with blockers), picks an operation (apply, revert,
restore of a random archived path) and a random boundary and occurrence among those an
uninterrupted run of that operation reaches (counted in-process on a copy), and runs the
operation in a child `python -m distilld` that SIGKILLs itself there. For an apply, a quarter of
the runs also crash the recovering run once more. The killed child's `.lock` is aged past the
staleness limit, the same command is run again (in-process) to recover, and the store is
checked exactly as tests/engine/test_crash_safety.py checks it: C1-C3; C4 against the store
before the pass (apply) or no line lost from any file (revert, restore); the ledger agrees with
the tree and was only appended to; evidence twins unchanged; no stub, no temp file, no `.lock`;
the pass did what was asked; and a second run changes nothing. With --cross P (default 0.25) a
share of the runs is recovered by a *different* write command instead (gc --apply, gc --revert
or restore; each recovers unfinished work first): the store must then be whole as above (minus
C4 and the did-what-was-asked check), and the next gc --apply must succeed and keep it whole.

Every run prints its seed; the summary lists the seeds of the failures (exit 1 if any), each
replayable with --only SEED. --keep DIR keeps the stores of failed runs there.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "engine")]

import distilld.engine.passes.gc.apply as engine_gc
import distilld.engine.passes.restore.apply as engine_restore
from benchutil import Stopwatch, load_average
from builders import EM, KESTREL_ENTRY, healthy_store
from distilld.engine.passes.gc.manifest import all_manifests
from distilld.engine.passes.restore.plan import plan_restore
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.paths import ARCHIVE_PREFIX, LEDGER, is_legacy, strip_archive
from distilld.store.snapshot import take_snapshot
from test_crash_safety import (
    age_dead_owners_lock,
    failing,
    ledger_tree_disagreements,
    leftovers,
    lost_lines,
    recovery_exit_ok,
    run_child,
    run_cli,
    stubs,
    tree_hashes,
)

LIMITS = load_policy().limits

WORDS = ("ingest", "billing", "backfill", "dashboards", "exports", "schema", "warehouse", "retention",
         "latency", "alerts", "parquet", "replay", "quota", "audit", "invoices", "lineage")


# -- random stores ------------------------------------------------------------------------------

@dataclass
class Generated:
    stale: list[str] = field(default_factory=list)  # every stale, movable project path
    families: list[list[str]] = field(default_factory=list)


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _body(rng: random.Random, title: str, heading: bool) -> str:
    lines = [f"# {title}", ""] if heading else []
    for s in range(rng.randint(1, 3)):
        lines += [f"## {_words(rng, 2).title()} {s}", ""]
        lines += [f"- {_words(rng, rng.randint(3, 8))}." for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.2:
            lines.append(f"- [DIRECTIVE {date(2025, 1, 1).isoformat()}] {_words(rng, 4)}.")
        lines.append("")
    return "\n".join(lines)


def _file(rng: random.Random, title: str, stamp: str, *, split_from: str = "", pinned: bool = False,
          recall: bool = False, read_with: str = "") -> bytes:
    fm = ["---", "domain: project", f"scope: {title} {_words(rng, 3)}", f"last_updated: {stamp}"]
    if split_from:
        fm.append(f"split_from: {split_from}")
    if pinned:
        fm.append("lifecycle: pinned")
    if recall:
        fm.append(f"recall_count: {rng.randint(1, 9)}")
    if read_with:
        fm.append(f"read_with: [{read_with}]")
    text = "\n".join(fm) + "\n---\n\n" + _body(rng, title, not split_from)
    data = text.encode()
    return data.replace(b"\n", b"\r\n") if rng.random() < 0.15 else data


def build_store(root: Path, rng: random.Random) -> Generated:
    b = healthy_store(root)
    today = datetime.now(timezone.utc).date()
    recent = (today - timedelta(days=rng.randint(0, 30))).isoformat()
    kestrel = b.read("projects/kestrel.md").replace(b"last_updated: 2026-11-02", f"last_updated: {recent}".encode())
    b.write("projects/kestrel.md", kestrel)
    gen = Generated()
    entries: list[str] = []
    n_stale, n_recent, n_pinned = rng.randint(1, 5), rng.randint(0, 3), rng.randint(0, 2)
    blockers: list[str] = []
    for i in range(n_stale + n_recent + n_pinned):
        kind = "stale" if i < n_stale else "recent" if i < n_stale + n_recent else "pinned"
        name = f"projects/p{i}.md"
        title = f"P{i}"
        if kind == "recent":
            stamp = (today - timedelta(days=rng.randint(0, 60))).isoformat()
        else:
            stamp = (today - timedelta(days=rng.randint(120, 900))).isoformat()
        size = rng.choice((1, 1, 1, 2, 3))
        members = [name] + [f"projects/p{i}-{k}.md" for k in range(2, size + 1)]
        for k, member in enumerate(members):
            parent = "" if k == 0 else (members[k - 1] if rng.random() < 0.5 else members[0])
            b.write(member, _file(rng, title if k == 0 else f"{title}, part {k + 1}", stamp, split_from=parent,
                                  pinned=kind == "pinned" and k == 0, recall=kind == "stale" and rng.random() < 0.3))
        if rng.random() < 0.25:
            b.write(f"evidence/{name}", f"---\nevidence_for: {name}\n---\n## Evidence log\n\n"
                                        f"- {stamp} observe: {_words(rng, 4)}\n")
        hook = _words(rng, rng.randint(3, 8)) + (" | " + _words(rng, 2) if rng.random() < 0.3 else "")
        if len(members) > 1 and rng.random() < 0.2:  # each member on its own line
            for k, member in enumerate(members):
                entries.append(f"- [{title} {k + 1}]({member}) {EM} {hook}. Read for {title}.")
        else:
            pointers = " + ".join(f"[{title}{'' if k == 0 else f', part {k + 1}'}]({m})" for k, m in enumerate(members))
            entries.append(f"- {pointers} {EM} {hook}. Read for {title}.")
        if kind == "stale":
            if i > 0 and rng.random() < 0.15:
                blockers.append(name)  # another active file read_with's it: blocked, never moved
            else:
                gen.stale += members
                if len(members) > 1:
                    gen.families.append(members)
    for j, blocked in enumerate(blockers):
        b.write(f"projects/reader{j}.md", _file(rng, f"Reader {j}", today.isoformat(), read_with=blocked))
        entries.append(f"- [Reader {j}](projects/reader{j}.md) {EM} reads {blocked}. Read with it.")
    spine = b.read("SPINE.md").decode()
    b.write("SPINE.md", spine.replace(KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + "".join(e + "\n" for e in entries)))
    b.rebuild_catalog(datetime.now(timezone.utc))
    return gen


# -- one run --------------------------------------------------------------------------------------

BOUNDARY_MODULES = (engine_gc, engine_restore)


def count_boundaries(root: Path, args: list[str], scratch: Path) -> tuple[Counter[str], int]:
    """Run ARGS in-process on a copy of ROOT and count each boundary it reaches."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(root, scratch)
    (scratch / ".lock").unlink(missing_ok=True)
    reached: Counter[str] = Counter()
    saved = [m.crashpoint for m in BOUNDARY_MODULES]
    for module in BOUNDARY_MODULES:
        module.crashpoint = lambda boundary: reached.update([boundary])  # type: ignore[attr-defined]
    try:
        code, _, _ = run_cli([str(scratch) if a == str(root) else a for a in args])
    finally:
        for module, original in zip(BOUNDARY_MODULES, saved):
            module.crashpoint = original  # type: ignore[attr-defined]
    shutil.rmtree(scratch, ignore_errors=True)
    return reached, code


def pick(rng: random.Random, reached: Counter[str]) -> tuple[str, int]:
    boundary = rng.choice(sorted(reached))
    return boundary, rng.randint(1, reached[boundary])


class Failure(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def run_again(args: list[str], operation: str) -> None:
    """ARGS in-process (no crash); exit 0, or the refusal that follows a finished recovery."""
    code, out, err = run_cli(args)
    if code == 2 and operation == "restore":
        ok = "no such archived file" in err or "already exists" in err
    else:
        ok = recovery_exit_ok(operation, code, err)
    check(ok, f"{' '.join(args[:2])}: exit {code}\n{out}{err}")


@dataclass
class Trace:
    """What a run did so far, printed with its result (or its failure)."""

    text: str = "?"

    def add(self, more: str) -> None:
        self.text += more


def one_run(seed: int, work: Path, cross: float, trace: Trace) -> None:
    """Raises Failure (or anything) when the store is not whole; ``trace`` says what was done."""
    rng = random.Random(seed)
    root, before, scratch = work / "store", work / "before", work / "scratch"
    gen = build_store(root, rng)
    operation = rng.choice(("apply", "revert", "restore"))
    restamped: frozenset[str] = frozenset()
    apply_args = ["gc", str(root), "--apply"]
    trace.text = operation

    if operation == "apply":
        args = apply_args
    else:
        run_again(apply_args, "apply")
        archived = [p for p in take_snapshot(root).archive_paths if not is_legacy(p)]
        if rng.random() < 0.2:  # a 1.1 client bumped recall_count in an archived file: drift
            victim = root / rng.choice(archived)
            raw = victim.read_bytes()
            if b"recall_count: " in raw:
                head, _, tail = raw.partition(b"recall_count: ")
                victim.write_bytes(head + b"recall_count: 99" + tail[1:])
                trace.add("+drift")
        if operation == "revert":
            args = ["gc", str(root), "--revert"]
        else:
            target = strip_archive(rng.choice(archived))
            if rng.random() < 0.5:
                target = ARCHIVE_PREFIX + target
            policy = load_policy()
            members = plan_restore(take_snapshot(root), target, policy.limits)
            restamped = frozenset(m.path for m in members)
            args = ["restore", target, str(root)]
            trace.add(f"({target}, {len(members)} member{'s' if len(members) > 1 else ''})")
    shutil.copytree(root, before)

    reached, code = count_boundaries(root, args, scratch)
    check(code == 0, f"uninterrupted {operation} on a copy exited {code}")
    if not reached:
        trace.add(": nothing to crash (no write)")
        return
    boundary, n = pick(rng, reached)
    trace.add(f" crash={boundary}:{n}/{reached[boundary]}")
    child = run_child(args, (boundary, n))
    check(child.returncode == -signal.SIGKILL, f"expected SIGKILL, got {child.returncode}\n{child.stderr}")
    age_dead_owners_lock(root, child.pid)

    if operation == "apply" and rng.random() < 0.25:
        again, code = count_boundaries(root, args, scratch)
        check(code == 0, f"recovery on a copy exited {code}")
        if again:
            boundary2, n2 = pick(rng, again)
            trace.add(f" then recovery crash={boundary2}:{n2}/{again[boundary2]}")
            child = run_child(args, (boundary2, n2))
            check(child.returncode == -signal.SIGKILL, f"expected SIGKILL, got {child.returncode}")
            age_dead_owners_lock(root, child.pid)

    if rng.random() < cross:
        cross_recovery(rng, root, before, operation, trace)
        return
    run_again(args, operation)
    verify(root, before, operation, restamped, gen)
    first = tree_hashes(root)
    run_again(args, operation)
    second = tree_hashes(root)
    check(second == first, "a second recovery run changed the store: "
          + ", ".join(sorted(k for k in set(first) | set(second) if first.get(k) != second.get(k))))


def cross_recovery(rng: random.Random, root: Path, before: Path, operation: str, trace: Trace) -> None:
    """Recover with a *different* write command (each recovers unfinished work first), then
    check the store is whole and that the next gc --apply is not wedged."""
    apply_args = ["gc", str(root), "--apply"]
    other = rng.choice([c for c in ("apply", "revert", "restore") if c != operation])
    archived = [p for p in take_snapshot(root).archive_paths if not is_legacy(p)]
    if other == "revert":
        command = ["gc", str(root), "--revert"]
    elif other == "restore" and archived:
        command = ["restore", rng.choice(archived), str(root)]
    else:
        command = apply_args
    shown = " ".join(command[:3:2] if command[0] == "gc" else command[:2])
    trace.add(f" then `{shown}`")
    code, out, err = run_cli(command)
    trace.add(f" (exit {code}) + gc --apply")
    check(code in (0, 2), f"{shown}: exit {code}\n{out}{err}")
    # Any project file may have been restored (last_updated re-stamped) along the way.
    snap = take_snapshot(before)
    anything = frozenset(strip_archive(p) for p in snap.tier_paths + snap.archive_paths)
    problems = whole_problems(root, before, anything, c4=False)
    check(not problems, f"after `{shown}` (exit {code}: {err.strip()[:200]}):\n" + "\n".join(problems))
    code, out, err = run_cli(apply_args)
    check(code == 0, f"the store is wedged: the next gc --apply exits {code}: {err.strip()}")
    problems = whole_problems(root, before, anything, c4=False)
    check(not problems, "after the next gc --apply:\n" + "\n".join(problems))
    first = tree_hashes(root)
    run_cli(apply_args)
    check(tree_hashes(root) == first, "a second gc --apply changed the store")


def whole_problems(root: Path, before: Path, restamped: frozenset[str], c4: bool) -> list[str]:
    after = take_snapshot(root)
    problems = failing(check_store(after, LIMITS))
    if c4:
        problems += failing(check_c4(take_snapshot(before), after))
    else:
        problems += lost_lines(before, root, restamped)
    problems += ledger_tree_disagreements(root)
    problems += [f"stub: {x} and archive/{x}" for x in stubs(root)]
    problems += [f"temp file left: {t}" for t in leftovers(root)]
    if (root / ".lock").exists():
        problems.append(".lock left behind")
    if not (root / LEDGER).read_bytes().startswith((before / LEDGER).read_bytes()):
        problems.append("the ledger was rewritten, not appended to")
    for twin in take_snapshot(before).evidence_paths:
        if not (root / twin).is_file() or (root / twin).read_bytes() != (before / twin).read_bytes():
            problems.append(f"evidence twin changed: {twin}")
    return problems


def verify(root: Path, before: Path, operation: str, restamped: frozenset[str], gen: Generated) -> None:
    problems = whole_problems(root, before, restamped, c4=operation == "apply")
    after = take_snapshot(root)
    # The pass did what was asked.
    if operation == "apply":
        problems += [f"not archived: {x}" for x in gen.stale if not after.exists(ARCHIVE_PREFIX + x)]
        problems += [f"unfinished manifest {m.name}" for m in all_manifests(root) if m.unfinished]
    elif operation == "revert":
        problems += [f"not reverted: {x}" for x in gen.stale if not after.exists(x)]
    else:
        problems += [f"not restored: {x}" for x in restamped if not after.exists(x)]
    if problems:
        raise Failure("\n".join(problems))


# -- driver --------------------------------------------------------------------------------------

def took(clock: Stopwatch) -> str:
    spent = clock.sample()
    return f"{spent.wall:5.2f}s wall {spent.cpu:5.2f}s CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, help="base seed (run i uses seed + i); random if omitted")
    parser.add_argument("--only", type=int, help="run just this one seed")
    parser.add_argument("--cross", type=float, default=0.25,
                        help="share of runs recovered by a different command first (default 0.25)")
    parser.add_argument("--keep", type=Path, help="copy the stores of failed runs here")
    parser.add_argument("--dir", type=Path, help="parent directory for the temporary stores")
    options = parser.parse_args()

    base = options.seed if options.seed is not None else random.SystemRandom().randrange(1_000_000)
    seeds = [options.only] if options.only is not None else [base + i for i in range(options.runs)]
    if options.only is None:
        print(f"base seed {base} ({len(seeds)} runs)", flush=True)
    print(load_average(), flush=True)
    failures: list[tuple[int, str, str]] = []
    kinds: Counter[str] = Counter()
    whole = Stopwatch()
    for index, seed in enumerate(seeds):
        work = Path(tempfile.mkdtemp(prefix=f"crash-{seed}-", dir=options.dir))
        os.environ["DISTILLD_STATE_DIR"] = str(work / "state")  # no log lines in the user's own
        clock = Stopwatch()
        trace = Trace()
        try:
            one_run(seed, work, options.cross, trace)
            desc = trace.text
            kinds[desc.split("(")[0].split("+")[0].split(" ")[0]] += 1
            print(f"[{index + 1:4}] seed {seed:8}  ok    {took(clock)}  {desc}", flush=True)
        except Exception as error:
            detail = str(error) if isinstance(error, Failure) else traceback.format_exc()
            desc = trace.text
            failures.append((seed, desc, detail))
            print(f"[{index + 1:4}] seed {seed:8}  FAIL  {took(clock)}  {desc}\n"
                  + "".join(f"        {line}\n" for line in detail.splitlines()), flush=True)
            if options.keep:
                options.keep.mkdir(parents=True, exist_ok=True)
                shutil.copytree(work, options.keep / f"seed-{seed}", dirs_exist_ok=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    spent = whole.sample()
    print(f"\n{len(seeds)} runs in {spent.wall:.1f}s wall, {spent.cpu:.1f}s CPU "
          f"({spent.wall / max(1, len(seeds)):.2f}s wall each; {load_average()}); "
          f"passed by operation: {dict(sorted(kinds.items()))}; failures: {len(failures)}")
    for seed, desc, detail in failures:
        first = detail.splitlines()[0] if detail else ""
        print(f"  FAIL seed {seed}: {desc}: {first}\n    replay: python {Path(__file__).name} --only {seed}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
