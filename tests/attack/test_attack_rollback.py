"""Attacks on the rollback through the executor (engine/apply.py `roll_back`, `_Undo`, UNDO_ATTEMPTS):
a lockless writer changes a file while the undo runs, right between the undo's read of it and its
write. Nothing the writer wrote may be lost, and no line the pass had moved may be lost either.

Run in-process: the pass is a real compaction of a real store in tmp_path; the writer's edits are
made at the pass's own write boundaries (its crashpoints) and right before the undo writes a file.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import tier_lines
from maintenance_fixtures import migrated_store_over_targets

from distilld.actions.compaction import run_compaction
from distilld.engine import apply as engine_apply
from distilld.engine import journal as engine_journal
from distilld.engine.executor import Executor, FileRemove, FileWrite
from distilld.engine.recovery import interrupted_passes
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
AGENT_LINE = "- An agent learned meanwhile: the blue-green switch needs the health probe first."
UNDO_LINE = "- Another agent wrote this while the rollback ran: canaries take ten minutes."


def append(path: Path, line: str) -> None:
    path.write_bytes(path.read_bytes() + line.encode() + b"\n")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return migrated_store_over_targets(tmp_path / "store").root


@pytest.fixture(params=["ops/deploy.md", "ops/deploy-2.md"], ids=["parent-restored", "child-removed"])
def raced(request: pytest.FixtureRequest) -> str:
    """The file the writer changes right before the undo touches it: the split parent the undo
    gives its bytes back, or the split child (holding the parent's moved lines) it removes."""
    return str(request.param)


@pytest.fixture
def writer(monkeypatch: pytest.MonkeyPatch, store: Path, raced: str) -> Iterator[dict[str, int]]:
    """A lockless writer: at the pass's second step mark it appends to a file the plan writes later
    (so the pass stops and rolls back), and right before the undo writes or removes ``raced``
    (ops/deploy.md was split, its moved lines are in ops/deploy-2.md) it appends to that file."""
    made = {"undo-edits": 0}
    marks = {"n": 0}

    def crashpoint(boundary: str) -> None:
        if boundary == "step-marked":
            marks["n"] += 1
            if marks["n"] == 2:
                append(store / "projects/olive.md", AGENT_LINE)

    monkeypatch.setattr(engine_journal, "crashpoint", crashpoint)
    carry_out = Executor.carry_out

    def racing_carry_out(self: Executor, op: object) -> list[tuple[str, str]]:
        if (isinstance(op, (FileWrite, FileRemove)) and op.path == raced and not made["undo-edits"]
                and any(j.rolling_back for j in _open_journals(store))):
            made["undo-edits"] += 1
            append(store / op.path, UNDO_LINE)
        return carry_out(self, op)  # type: ignore[arg-type]

    monkeypatch.setattr(Executor, "carry_out", racing_carry_out)
    yield made


def _open_journals(root: Path) -> list[engine_journal.PassJournal]:
    return engine_journal.unfinished_journals(root / "data/compact-journals", "compaction")


def test_a_file_changed_while_the_undo_runs_loses_no_moved_line(store: Path, writer: dict[str, int], raced: str,
                                                               tmp_path: Path) -> None:
    before = tmp_path / "before"
    shutil.copytree(store, before)
    lines_before = tier_lines(store)
    preview = run_compaction(store, POLICY, lambda: NOW, apply=False).plan
    assert preview is not None and "split ops/deploy.md" in " ".join(s.title for s in preview.steps[:2])

    report = run_compaction(store, POLICY, lambda: NOW, apply=True)

    assert writer["undo-edits"] == 1, f"the undo never came to {raced}"
    assert report.outcome is not None
    lost = (lines_before + Counter([AGENT_LINE, UNDO_LINE])) - tier_lines(store)
    assert not lost, f"lines lost: {sorted(lost)[:5]}"
    assert (store / "projects/olive.md").read_text().count(AGENT_LINE) == 1
    assert (store / raced).read_text().count(UNDO_LINE) == 1
    append(before / "projects/olive.md", AGENT_LINE)
    if (before / raced).exists():
        append(before / raced, UNDO_LINE)
    c4 = [f.message for f in check_c4(take_snapshot(before), take_snapshot(store)) if f.severity == "fail"]
    assert c4 == []
    assert [f.message for f in check_store(take_snapshot(store), POLICY.limits) if f.severity == "fail"] == []
    assert interrupted_passes(store) == []
    assert not (store / ".lock").exists()


# -- a file the pass writes three times (a chained compaction's SPINE) --------------------------

def test_a_file_written_three_times_is_undone_when_the_pass_stops_after_its_first_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chained compaction writes SPINE.md once per plan (three times). Stopped after the first of
    them, the undo found the SPINE holding neither what its last write expects nor what it leaves,
    took the pass's own first write for a foreign change and kept it: with the SPINE kept, the
    check that undoing loses no line refused the whole rollback ("not undone")."""
    from builders import healthy_store
    from distilld.actions.passes import locked_pass
    from distilld.engine.driver import drive
    from distilld.store.text import sha256_hex

    store = healthy_store(tmp_path / "store").root
    kestrel, deploy = store / "projects/kestrel.md", store / "ops/deploy.md"
    original, deploy_original = kestrel.read_bytes(), deploy.read_bytes()
    states = [original + b"".join(f"- note {n}\n".encode() for n in range(k)) for k in range(4)]

    class Plan:
        def __init__(self, steps: list[engine_apply.Step]) -> None:
            self.steps = steps

    planned = {"n": 0}

    def plan(snapshot: object, ctx: object) -> Plan:
        planned["n"] += 1
        if planned["n"] > 1:
            return Plan([])  # planned again after the rollback: nothing more to do
        write = lambda k: FileWrite("projects/kestrel.md", sha256_hex(states[k]), states[k + 1])  # noqa: E731
        other = FileWrite("ops/deploy.md", sha256_hex(deploy_original), deploy_original + b"- deploy note\n")
        return Plan([engine_apply.Step("one", [write(0)]), engine_apply.Step("other", [other]),
                     engine_apply.Step("two", [write(1)]), engine_apply.Step("three", [write(2)])])

    marks = {"n": 0}

    def crashpoint(boundary: str) -> None:
        if boundary == "step-marked":
            marks["n"] += 1
            if marks["n"] == 1:
                append(deploy, AGENT_LINE)  # a writer edits the file of the next step

    monkeypatch.setattr(engine_journal, "crashpoint", crashpoint)
    with locked_pass(store, POLICY, lambda: NOW) as ctx:
        driven = drive(ctx, "attack", "data/attack-journals", plan)

    assert driven.rolled_back
    assert "not undone" not in (driven.notes[0] if driven.notes else ""), driven.notes
    assert kestrel.read_bytes() == original, "the pass's own first write was kept"
    assert deploy.read_bytes() == deploy_original + AGENT_LINE.encode() + b"\n"


# -- a pass that plans a removal -------------------------------------------------------------------

def _removal(store: Path, path: str) -> object:
    from distilld.engine.executor import FileRemove
    from distilld.store.text import sha256_hex

    steps = [engine_apply.Step("remove", [FileRemove(path, sha256_hex((store / path).read_bytes()))])]

    class Plan:
        def __init__(self) -> None:
            self.steps = steps
    return Plan()


def _store_files(store: Path) -> dict[str, bytes]:
    lock_files = (".status", ".lock.takeover")
    return {p.relative_to(store).as_posix(): p.read_bytes() for p in store.rglob("*")
            if p.is_file() and p.name not in lock_files}


@pytest.mark.parametrize(("path", "refusal"), [("projects/kestrel.md", "would fail its self-check"),
                                               ("projects/blank.md", "removes this file")],
                         ids=["a-tier-file", "a-blank-file"])
def test_a_pass_that_plans_a_removal_is_refused_before_writing(tmp_path: Path, path: str, refusal: str) -> None:
    """The gate laid only writes, moves and edits over the store and passed a FileRemove as if the
    file stayed: the file went, the self-check failed (C4), and the rollback, which undoes the
    journal's FileWrites only, never gave it back (the pass then planned again, found nothing to
    do and said ok). Now the gate sees the removal; and since the journal keeps no bytes of a
    removed file, a removal that passes the gate (a blank file) is refused before the journal."""
    from builders import healthy_store
    from distilld.actions.passes import locked_pass
    from distilld.engine.driver import drive
    from distilld.errors import DistilldError

    store = healthy_store(tmp_path / "store").root
    (store / "projects/blank.md").write_bytes(b"\n")
    before = _store_files(store)
    with pytest.raises(DistilldError, match=refusal), locked_pass(store, POLICY, lambda: NOW) as ctx:
        drive(ctx, "attack", "data/attack-journals", lambda snapshot, ctx: _removal(store, path))
    assert _store_files(store) == before


# -- a rollback stopped midway, on a store with many splits --------------------------------------

RACE_LINE = "- A writer's line, added to a split parent while the undo ran."


@pytest.mark.parametrize("touched", [1, 2, 3, 5, 8, 13])
def test_an_undo_stopped_by_a_changed_parent_loses_no_line_of_any_split(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, touched: int) -> None:
    """Ctrl-C at step 40 of a compaction that splits many files, then a writer edits the split
    parent the undo comes to as its ``touched``-th tier file. The undo stops there and keeps that
    parent; it used to have removed other parents' split children already, whose lines were then
    nowhere (the undo's check for lost lines looks ahead, not back), and the message still said
    "the store is as it was"."""
    import sys

    from distilld.engine.cancel import PassStopped, stoppable

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from storegen import generate_store

    store = tmp_path / "store"
    generate_store(store, 1, "migrated", seed=1)
    lines_before = tier_lines(store)
    marks = {"n": 0}

    def crashpoint(boundary: str) -> None:
        if boundary == "step-marked":
            marks["n"] += 1

    monkeypatch.setattr(engine_journal, "crashpoint", crashpoint)
    carry_out = Executor.carry_out
    undo = {"tier files": 0, "raced": ""}

    def racing_carry_out(self: Executor, op: object) -> list[tuple[str, str]]:
        rolling = any(j.rolling_back for j in _open_journals(store))
        if rolling and isinstance(op, FileWrite) and op.path.split("/")[0] in ("craft", "ops", "profile",
                                                                                 "projects", "feedback"):
            undo["tier files"] += 1
            if undo["tier files"] == touched and b"Continued in" in (store / op.path).read_bytes():
                undo["raced"] = op.path
                append(store / op.path, RACE_LINE)
        return carry_out(self, op)  # type: ignore[arg-type]

    monkeypatch.setattr(Executor, "carry_out", racing_carry_out)
    with stoppable(lambda: marks["n"] >= 40), pytest.raises(PassStopped) as stopped:
        run_compaction(store, POLICY, lambda: NOW, apply=True)

    lost = (lines_before + Counter([RACE_LINE] if undo["raced"] else [])) - tier_lines(store)
    assert not lost, f"lines lost ({undo['raced'] or 'no file raced'}): {sorted(lost)[:3]}"
    if undo["raced"]:
        assert "the store is as it was" not in str(stopped.value)
        assert undo["raced"] in str(stopped.value)
    else:
        assert "the store is as it was" in str(stopped.value)
    assert interrupted_passes(store) == []
