"""Findability of the SPINE before and after distilld shortens it, measured fairly (issue 24).

Not a speed benchmark: it measures retrieval quality, and prints the migration's CPU time only
to watch the < 3 s goal. Not a pytest test: run it by hand (bm25s comes with the `bench` extra).

    python tests/benchmarks/bench_retrieval.py                    # 5 storegen + 5 blind stores, and growth
    python tests/benchmarks/bench_retrieval.py --stores 10 --oracle-checker

Stores: Store-B-shaped stores of tests/benchmarks/storegen.py, and of blind_storegen.py, a
second generator written from the issue alone by someone who had not read the planner. Each
is migrated; then ("grown") the migrated store is grown the way agents grow one
(blind_storegen.grow_store: long sections, new files with long entries) and compacted.

Queries come from the files' content before the pass (retrieval_measure.py), never from a
SPINE. Four SPINEs are compared: before; after (what distilld wrote); naive (every original
entry line kept, the split children's pointers added to it, every hook cut to a prefix so the
SPINE's bytes equal after's); oracle (naive's shape, each hook opening with the queries' own
words: a ceiling no planner can know). R@1 and R@3, per kind, per store, with each SPINE's
bytes and lines. The goals: R@3 after >= 0.95 x before and >= naive on every store, and no
kind more than 0.02 below naive. It also checks C1-C4, the markers of every entry, and that
`compact --preview` right after the migration plans nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import blind_storegen  # noqa: E402
from retrieval_measure import (  # noqa: E402
    KINDS,
    Recall,
    build_queries,
    family_heads,
    naive_spine,
    oracle_spine,
    recall,
    spine_entries,
    tier_files,
)
from storegen import generate_store  # noqa: E402

from distilld.actions.compaction import run_compaction  # noqa: E402
from distilld.actions.migrate import run_migrate  # noqa: E402
from distilld.engine.passes.migration.checklist import migration_dirs  # noqa: E402
from distilld.errors import DistilldError  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.invariants import check_store  # noqa: E402
from distilld.store.lossless import check_c4  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402
from distilld.store.spine import POINTER_RE, Spine  # noqa: E402

NOW = datetime(2026, 10, 1, 12, 0, 0, tzinfo=UTC)
ORACLE_CHECKER = HERE.parent / "oracle" / "distill-check-store.sh"
MARKER_RE = re.compile(r"\[(?:NON-NEGOTIABLE|DIRECTIVE|UPDATED|DEPRECATED|CORRECTED|IMPORTANT|CONTEXT|PROVISIONAL)[^\]]*\]")


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def lost_markers(before_raw: bytes, after_raw: bytes) -> list[str]:
    """Markers of an entry's hook before that the SPINE line of its file lacks after."""
    line_of: dict[str, str] = {}
    for entry in Spine(after_raw).entries:
        for path in POINTER_RE.findall(entry.joined):
            line_of.setdefault(path, entry.joined)
    lost = []
    for entry in Spine(before_raw).entries:
        for path in POINTER_RE.findall(entry.joined)[:1]:
            for marker in MARKER_RE.findall(entry.joined):
                if marker not in line_of.get(path, ""):
                    lost.append(f"{path}: {marker}")
    return lost


def measure(label: str, before_root: Path, after_root: Path) -> dict[str, object]:
    before_files, after_files = tier_files(before_root), tier_files(after_root)
    queries = build_queries(before_files)
    before_heads, after_heads = family_heads(before_files), family_heads(after_files)
    before_raw, after_raw = (before_root / "SPINE.md").read_bytes(), (after_root / "SPINE.md").read_bytes()
    naive_raw, _ = naive_spine(before_raw, after_files, after_raw)
    oracle_raw, _ = oracle_spine(before_raw, after_files, after_raw, queries)
    row: dict[str, object] = {"label": label, "queries": len(queries)}
    for name, raw, heads in (("before", before_raw, before_heads), ("after", after_raw, after_heads),
                             ("naive", naive_raw, after_heads), ("oracle", oracle_raw, after_heads)):
        entries = spine_entries(raw)
        row[name] = recall(entries, queries, heads, {q.path: heads.get(q.path, q.path) for q in queries})
        row[f"{name}_size"] = (entries.lines, entries.size)
    row["lost_markers"] = lost_markers(before_raw, after_raw)
    return row


def verdict(row: dict[str, object]) -> list[str]:
    before, after, naive = (row[k] for k in ("before", "after", "naive"))
    assert isinstance(before, Recall) and isinstance(after, Recall) and isinstance(naive, Recall)
    missed = []
    if after.r3 < 0.95 * before.r3:
        missed.append(f"R@3 {after.r3:.3f} < 0.95 x before {before.r3:.3f}")
    if after.r3 < naive.r3:
        missed.append(f"R@3 {after.r3:.3f} < naive {naive.r3:.3f}")
    for kind, (_, r3, _) in after.by_kind.items():
        if r3 < naive.by_kind[kind][1] - 0.02:
            missed.append(f"{kind} R@3 {r3:.3f} < naive {naive.by_kind[kind][1]:.3f} - 0.02")
    return missed


def show(row: dict[str, object]) -> None:
    print(f"\n{row['label']}  ({row['queries']} queries)", flush=True)
    print(f"  {'SPINE':7} {'lines':>5} {'bytes':>6} {'R@1':>6} {'R@3':>6} " + " ".join(f"{k + ' R@3':>13}" for k in KINDS))
    for name in ("before", "after", "naive", "oracle"):
        found = row[name]
        assert isinstance(found, Recall)
        lines, size = row[f"{name}_size"]  # type: ignore[misc]
        kinds = " ".join(f"{found.by_kind[k][1]:13.3f}" if k in found.by_kind else f"{'-':>13}" for k in KINDS)
        print(f"  {name:7} {lines:5} {size:6} {found.r1:6.3f} {found.r3:6.3f} {kinds}")
    for key in ("cpu", "checks", "preview", "lost_markers"):
        if row.get(key) not in (None, []):
            print(f"  {key}: {row[key]}")
    print(f"  goals: {'met' if not verdict(row) else '; '.join(verdict(row))}")


def checks(root: Path, oracle_checker: bool) -> str:
    policy = load_policy(None)
    backup = migration_dirs(root)[-1].backup
    failing = [f for f in check_store(take_snapshot(root), policy.limits) + check_c4(take_snapshot(backup),
               take_snapshot(root)) if f.severity == "fail"]
    said = "C1-C4 pass" if not failing else f"{len(failing)} failing: {failing[0].message}"
    if oracle_checker:
        done = subprocess.run(["bash", str(ORACLE_CHECKER), str(root), "--before", str(backup)], capture_output=True,
                              text=True, errors="replace", check=False)
        said += "; bash checker " + ("PASS" if done.returncode == 0 else done.stdout.strip().splitlines()[-1])
    return said


def run_case(label: str, root: Path, base: Path, oracle_checker: bool, grow: bool) -> list[dict[str, object]]:
    policy = load_policy(None)
    before = base / f"{root.name}-before"
    shutil.copytree(root, before, symlinks=True)
    spent = cpu()
    outcome = run_migrate(root, policy, lambda: NOW, "apply")
    spent = cpu() - spent
    row = measure(f"{label} (migrate)", before, root)
    row["cpu"] = f"{spent:.2f} s migration CPU" + ("" if outcome.finished else " (NOT finished)")
    row["checks"] = checks(root, oracle_checker)
    preview = run_compaction(root, policy, lambda: NOW, apply=False).plan
    row["preview"] = "plans nothing" if preview is None or not preview.steps else \
        f"plans {len(preview.steps)} steps: {preview.steps[0].title}"
    rows = [row]
    if grow:
        blind_storegen.grow_store(root, seed=len(label))
        grown = base / f"{root.name}-grown"
        shutil.copytree(root, grown, symlinks=True)
        try:
            run_compaction(root, policy, lambda: NOW, apply=True)
        except DistilldError as refused:  # a refusal is a finding of this run, not its end
            print(f"    {label} grown: compaction refused: {refused}")
            return rows
        rows.append(measure(f"{label} grown (compact)", grown, root))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=int, default=5, help="stores of each generator (seeds 1..N)")
    parser.add_argument("--oracle-checker", action="store_true", help="also run the bash checker")
    parser.add_argument("--no-grow", action="store_true", help="skip the grown-then-compacted stores")
    parser.add_argument("--only", choices=("storegen", "blind"), help="one generator only")
    args = parser.parse_args(argv)
    makers: list[tuple[str, Callable[[Path, int], object]]] = []
    if args.only != "blind":
        makers.append(("storegen", lambda root, seed: generate_store(root, 1, "unmigrated", seed)))
    if args.only != "storegen":
        makers.append(("blind", lambda root, seed: blind_storegen.make_store(root, seed)))
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        os.environ["DISTILLD_STATE_DIR"] = str(base / "state")
        for name, make in makers:
            for seed in range(1, args.stores + 1):
                root = base / f"{name}-{seed}"
                make(root, seed)
                for row in run_case(f"{name} seed {seed}", root, base, args.oracle_checker, not args.no_grow):
                    show(row)
                    rows.append(row)
    summary(rows)
    return 0


def summary(rows: list[dict[str, object]]) -> None:
    print("\nmeans by generator and pass (R@1 / R@3; R@3 by kind):")
    groups: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        label = str(row["label"])
        groups.setdefault(label.split(" ")[0] + (" grown" if "grown" in label else ""), []).append(row)
    for group, members in groups.items():
        print(f"  {group} ({len(members)} stores)")
        for name in ("before", "after", "naive", "oracle"):
            found = [r[name] for r in members]
            r1 = sum(f.r1 for f in found) / len(found)  # type: ignore[attr-defined]
            r3 = sum(f.r3 for f in found) / len(found)  # type: ignore[attr-defined]
            kinds = []
            for k in KINDS:
                values = [f.by_kind[k][1] for f in found if k in f.by_kind]  # type: ignore[attr-defined]
                kinds.append(f"{k} {sum(values) / len(values):.3f}" if values else f"{k} -")
            print(f"    {name:7} {r1:.3f} / {r3:.3f}   " + ", ".join(kinds))
        print(f"    goals missed on {sum(bool(verdict(r)) for r in members)} of {len(members)} stores")


if __name__ == "__main__":
    sys.exit(main())
