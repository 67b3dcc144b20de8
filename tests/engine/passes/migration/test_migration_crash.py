"""Interrupting a migration or a compaction anywhere loses nothing (real SIGKILLed processes).

A child ``python -m distilld migrate STORE --apply`` kills itself (``DISTILLD_CRASH_AT``) at a
write boundary: after the plan, after PENDING, after a file, after every checklist item, after
DONE. Its `.lock` is then aged past staleness, as time would, and from that very state:

* ``migrate --finish`` must leave the same store as an uninterrupted run (byte for byte; the
  catalog and ledger compared with their time stamps masked), which the reference checker
  accepts with C4 against the backup;
* ``migrate --revert`` (on a copy of the crashed store) must give back the store as it was,
  byte for byte, apart from ledger lines appended.

The fixture store has the lifecycle enabled, so ledger lines and archive moves are crashed too.
Compaction is crashed the same way and recovered by the next ``compact --apply``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from boundaries import boundaries_in, count_reached, executor_boundaries, sampled
import pytest
from distilld.cli import main as cli_main
from distilld.crashpoints import CRASH_ENV
from distilld.engine.passes.migration.checklist import migration_dirs
from maintenance_fixtures import (
    age_lock,
    have_bash,
    migrated_store_over_targets,
    oracle_passes,
    unmigrated_store,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")]
KNOWLEDGE = ("SPINE.md", "CATALOG.md", "craft/", "ops/", "profile/", "projects/", "feedback/", "evidence/", "archive/")
STAMP_RE = re.compile(rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")

# How often an uninterrupted run reaches each boundary (kept honest by the last two tests).
MIGRATE_OCCURRENCES = {"plan-written": 1, "pending-written": 1, "file-written": 13, "ledger-appended": 2,
                       "file-moved": 4, "catalog-written": 1, "item-marked": 14, "done-written": 1}
COMPACT_OCCURRENCES = {"journal-written": 1, "file-written": 52, "step-marked": 48, "catalog-written": 1}
COMPACT_SAMPLE = {"journal-written": [1], "file-written": [1, 2, 3, 26, 51, 52],
                  "step-marked": [1, 2, 24, 47, 48], "catalog-written": [1]}


# -- stores and processes ----------------------------------------------------------------------------

def kill_store(root: Path) -> None:
    """unmigrated_store, lifecycle enabled, project dates relative to today (the CLI's clock):
    Saffron and Tundra are stale, Vireo is recent, Quill is pinned."""
    unmigrated_store(root)
    today = datetime.now(UTC).date()
    for name, days in (("saffron", 130), ("tundra", 300), ("vireo", 5)):
        path = root / "projects" / f"{name}.md"
        text = re.sub(r"last_updated: [0-9-]+", f"last_updated: {today - timedelta(days=days)}", path.read_text())
        path.write_text(text)
    (root / ".lifecycle").write_text("enabled\n")


def run_child(args: list[str], crash: str) -> int:
    env = {**{k: v for k, v in os.environ.items() if k != CRASH_ENV}, CRASH_ENV: crash}
    proc = subprocess.run([sys.executable, "-m", "distilld", *args], env=env, capture_output=True, timeout=120,
                          check=False)
    assert proc.returncode == -signal.SIGKILL, (crash, proc.returncode, proc.stdout, proc.stderr)
    return proc.returncode


def cli(args: list[str]) -> tuple[int, str]:
    assert CRASH_ENV not in os.environ
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(args)
    return code, out.getvalue() + err.getvalue()


def knowledge(root: Path) -> dict[str, bytes]:
    """Every knowledge file, time stamps masked (a catalog's `rebuilt:`, a ledger line's stamp)."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and rel.startswith(KNOWLEDGE):
            raw = path.read_bytes()
            found[rel] = STAMP_RE.sub(b"<stamp>", raw) if rel in ("CATALOG.md", "archive/LEDGER.md") else raw
    return found


def leftovers(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if ".distilld-tmp" in p.name or p.name.startswith(".lock.")
            and p.name != ".lock.takeover"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    """An uninterrupted migration and compaction, for comparison."""
    base = tmp_path_factory.mktemp("reference")
    migrated, original = base / "migrated", base / "original"
    kill_store(migrated)
    shutil.copytree(migrated, original)
    assert cli(["migrate", str(migrated), "--apply"])[0] == 0
    compacted = base / "compacted"
    migrated_store_over_targets(compacted)
    assert cli(["compact", str(compacted), "--apply"])[0] == 0
    return {"migrated": knowledge(migrated), "original": knowledge(original), "compacted": knowledge(compacted)}


def cases(table: dict[str, int], sample: dict[str, list[int]] | None = None) -> list[pytest.param]:
    """Every occurrence of every boundary, one of each boundary in the seeded sample (the others
    exhaustive); with ``sample``, only the occurrences it names (a hand-picked sample: compaction
    reaches 104 occurrences, too many processes even for the full run)."""
    if sample:
        return [pytest.param(b, n, id=f"{b}-{n}") for b in table for n in sample[b]]
    return sampled([pytest.param(b, n, id=f"{b}-{n}") for b, count in table.items() for n in range(1, count + 1)],
                   group=lambda case: case.values[0])


# -- migration ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("boundary", "n"), cases(MIGRATE_OCCURRENCES))
def test_a_killed_migration_finishes_to_the_same_store_or_reverts_to_the_backup(
        tmp_path: Path, reference: dict[str, dict[str, bytes]], boundary: str, n: int) -> None:
    root = tmp_path / "store"
    kill_store(root)
    run_child(["migrate", str(root), "--apply"], f"{boundary}:{n}")
    age_lock(root)
    twin = tmp_path / "to-revert"
    shutil.copytree(root, twin)
    pending = [d for d in migration_dirs(root) if d.pending.exists()]

    # finish from the crashed state
    if pending:
        code, out = cli(["migrate", str(root), "--finish"])
        assert code == 0, out
    else:  # killed before PENDING: nothing was touched, and a new apply does it all
        assert knowledge(root) == reference["original"]
        done = [d for d in migration_dirs(root) if d.done.exists()]
        if not done:
            code, out = cli(["migrate", str(root), "--apply"])
            assert code == 0, out
    assert knowledge(root) == reference["migrated"]
    finished = [d for d in migration_dirs(root) if d.done.exists()]
    assert len(finished) == 1 and not finished[0].pending.exists()
    assert all(finished[0].marks().values())
    oracle_passes(root, finished[0].backup)
    assert leftovers(root) == [] and not (root / ".lock").exists()

    # revert from the same crashed state
    code, out = cli(["migrate", str(twin), "--revert"])
    if not pending and not [d for d in migration_dirs(twin) if d.done.exists()]:
        assert code == 6 and "no migration to revert" in out  # refused (the exit-code table)
    else:
        assert code == 0, out
    after = knowledge(twin)
    ledger = after.pop("archive/LEDGER.md", b"")
    assert after == {k: v for k, v in reference["original"].items() if k != "archive/LEDGER.md"}
    events = [line.split(b" | ")[0] for line in ledger.split(b"\n") if line.startswith(b"- ")]
    assert Counter(e.rsplit(b" ", 1)[-1] for e in events)[b"archive"] == Counter(
        e.rsplit(b" ", 1)[-1] for e in events)[b"restore"]  # every archive line has its restore line
    assert leftovers(twin) == [] and not (twin / ".lock").exists()


# -- compaction ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("boundary", "n"), cases(COMPACT_OCCURRENCES, COMPACT_SAMPLE))
def test_a_killed_compaction_is_finished_by_the_next_one(
        tmp_path: Path, reference: dict[str, dict[str, bytes]], boundary: str, n: int) -> None:
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    before = tmp_path / "before"
    shutil.copytree(root, before)
    run_child(["compact", str(root), "--apply"], f"{boundary}:{n}")
    age_lock(root)

    code, out = cli(["compact", str(root), "--apply"])

    assert code == 0, out
    assert knowledge(root) == reference["compacted"]
    oracle_passes(root, before)
    assert leftovers(root) == [] and not (root / ".lock").exists()
    assert cli(["compact", str(root), "--apply"])[0] == 0
    assert knowledge(root) == reference["compacted"]  # and a further run changes nothing


# -- the tables -----------------------------------------------------------------------------------------

def test_boundaries_are_the_ones_the_engine_has() -> None:
    migration = boundaries_in("passes/migration/apply.py", "passes/migration/revert.py", "passes/migration/checklist.py",
                              "finish.py")
    assert migration | executor_boundaries() >= set(MIGRATE_OCCURRENCES)
    assert migration - set(MIGRATE_OCCURRENCES) == {"reverted-written"}  # revert is re-runnable
    # The rollback's own boundaries are killed in test_compaction_foreign_edit.py (ROLLBACK_OCCURRENCES).
    compaction = boundaries_in("passes/compaction/apply.py", "driver.py", "apply.py", "journal.py", "finish.py") | {"file-written"}
    assert compaction == set(COMPACT_OCCURRENCES) | {"rollback-started", "file-restored"}


def test_occurrence_tables_match_an_uninterrupted_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reached = count_reached(monkeypatch)
    kill_store(tmp_path / "m")
    assert cli(["migrate", str(tmp_path / "m"), "--apply"])[0] == 0
    assert dict(reached) == MIGRATE_OCCURRENCES
    reached.clear()
    migrated_store_over_targets(tmp_path / "c")
    assert cli(["compact", str(tmp_path / "c"), "--apply"])[0] == 0
    assert dict(reached) == COMPACT_OCCURRENCES  # kill_store's dates are relative: any day gives these


@pytest.mark.parametrize("then", ["gc", "restore"])
def test_a_killed_compaction_is_finished_by_gc_or_restore_before_they_plan(
        tmp_path: Path, reference: dict[str, dict[str, bytes]], then: str) -> None:
    """Every write command finishes interrupted work first: gc and restore finish a compaction."""
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    before = tmp_path / "before"
    shutil.copytree(root, before)
    run_child(["compact", str(root), "--apply"], "file-written:30")
    age_lock(root)

    if then == "gc":
        code, out = cli(["gc", str(root), "--apply"])
        assert code == 0 and "note: finished an interrupted compaction: " in out, out
        oracle_passes(root, before)  # and gc then archived what was stale, ledger first
    else:  # the restore itself is refused (nothing archived there), after the compaction is finished
        code, out = cli(["restore", "projects/none.md", str(root)])
        assert code == 2 and "archive/projects/none.md: no such archived file" in out, out
        assert knowledge(root) == reference["compacted"]
    journal = next((root / "data/compact-journals").glob("*.jsonl")).read_text()
    assert journal.endswith('{"finished": true}\n')
