"""The one executor (engine/executor.py): each operation idempotent, a resumed step going on
after its last done write or move, and no ledger line for a move that cannot be made."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from distilld.engine.executor import Executor, FileMove, FileWrite, LedgerAppend, Pacer, PlanStopped, SpineEdit, Step

ARCHIVED = b"---\nscope: Y\n---\n\n# Y\n\n- a line\n"
STAMPED = b"---\nscope: Y\nlast_updated: 2026-11-30\n---\n\n# Y\n\n- a line\n"
SPINE = "# Index\n\n## Projects\n\n- [Y](projects/y.md) \u2014 y things. Read for y.\n"


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def executor(root: Path) -> Executor:
    return Executor(root, Pacer(lambda: None, interval=0), lambda: "2026-11-30T12:00:00Z", durable=True)


def restore_step() -> Step:
    return Step("restore projects/y.md", [
        LedgerAppend("projects/y.md", "restore", sha(ARCHIVED), "user request"),
        FileMove("archive/projects/y.md", "projects/y.md", sha(ARCHIVED)),
        FileWrite("projects/y.md", sha(ARCHIVED), STAMPED)])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    (tmp_path / "archive/projects").mkdir(parents=True)
    (tmp_path / "projects").mkdir()
    (tmp_path / "archive/projects/y.md").write_bytes(ARCHIVED)
    (tmp_path / "SPINE.md").write_text(SPINE)
    return tmp_path


def ledger_lines(root: Path) -> list[str]:
    return [line for line in (root / "archive/LEDGER.md").read_text().splitlines() if line.startswith("- ")]


def test_a_step_cut_after_its_last_write_is_done_when_run_again(store: Path) -> None:
    written = executor(store).run(restore_step())
    assert [path for path, _ in written] == ["archive/LEDGER.md", "projects/y.md", "projects/y.md"]
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    # The move's own check would now fail (projects/y.md holds the stamped bytes): the step goes
    # on after the stamp, so nothing is done twice and nothing stops.
    assert executor(store).run(restore_step()) == []
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    assert len(ledger_lines(store)) == 1


def test_a_step_cut_after_its_move_goes_on_with_the_stamp(store: Path) -> None:
    step = restore_step()
    executor(store).run(Step("first two", step.ops[:2]))
    executor(store).run(step)
    assert (store / "projects/y.md").read_bytes() == STAMPED
    assert len(ledger_lines(store)) == 1


def test_a_derived_operation_already_true_does_not_skip_the_writes_before_it(store: Path) -> None:
    # projects/z.md never had a SPINE pointer: the SPINE edit is "done" before the step starts,
    # and the move before it must still be made.
    (store / "projects/z.md").write_bytes(ARCHIVED)
    step = Step("archive projects/z.md", [
        LedgerAppend("projects/z.md", "archive", sha(ARCHIVED), "stale", sha(ARCHIVED), ""),
        FileMove("projects/z.md", "archive/projects/z.md", sha(ARCHIVED)), SpineEdit("projects/z.md")])
    executor(store).run(step)
    assert not (store / "projects/z.md").exists()
    assert (store / "archive/projects/z.md").read_bytes() == ARCHIVED
    assert (store / "SPINE.md").read_text() == SPINE


def test_no_ledger_line_is_written_for_a_move_that_cannot_be_made(store: Path) -> None:
    (store / "projects/y.md").write_bytes(b"an older client re-created a stub here\n")
    with pytest.raises(PlanStopped, match="cannot move it to projects/y.md as planned"):
        executor(store).run(restore_step())
    assert not (store / "archive/LEDGER.md").exists()
    assert (store / "archive/projects/y.md").read_bytes() == ARCHIVED


def test_a_write_over_a_change_it_did_not_make_stops_and_names_the_file(store: Path) -> None:
    (store / "projects/x.md").write_bytes(b"changed by someone else\n")
    with pytest.raises(PlanStopped, match=r"projects/x.md: changed since the plan was made"):
        executor(store).run(Step("t", [FileWrite("projects/x.md", sha(b"planned from\n"), b"new\n")]))
    assert (store / "projects/x.md").read_bytes() == b"changed by someone else\n"


def test_a_spine_edit_removes_a_pointer_once(store: Path) -> None:
    step = Step("t", [SpineEdit("projects/y.md")])
    assert [path for path, _ in executor(store).run(step)] == ["SPINE.md"]
    assert "projects/y.md" not in (store / "SPINE.md").read_text()
    assert executor(store).run(step) == []


def test_a_move_killed_between_its_link_and_its_unlink_is_finished(store: Path) -> None:
    # one file under both names: the old name goes, and the step goes on
    (store / "projects/y.md").hardlink_to(store / "archive/projects/y.md")
    executor(store).run(restore_step())
    assert not (store / "archive/projects/y.md").exists()
    assert (store / "projects/y.md").read_bytes() == STAMPED


def test_a_removal_is_done_once_and_never_over_a_change(tmp_path: Path) -> None:
    from distilld.engine.executor import FileRemove

    (tmp_path / "projects").mkdir()
    made = tmp_path / "projects" / "made.md"
    made.write_bytes(b"# Made by the pass\n")
    executor = Executor(tmp_path, Pacer(lambda: None), lambda: "2026-12-04T00:00:00Z")
    changed = FileRemove("projects/made.md", "0" * 64)
    with pytest.raises(PlanStopped, match="changed since it was planned to be removed"):
        executor.carry_out(changed)
    assert made.exists()  # someone else's bytes: kept
    planned = FileRemove("projects/made.md", hashlib.sha256(made.read_bytes()).hexdigest())
    assert executor.carry_out(planned) == [("projects/made.md", "")]
    assert not made.exists()
    assert executor.carry_out(planned) == []  # done already


def test_a_file_changed_while_a_rollback_runs_is_kept_not_written_over(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The undo is checked against the file as its plan read it: an agent's line appended in
    between (while the undo's line check reads the whole store) stays, and the file is kept."""
    from datetime import UTC, datetime

    from builders import healthy_store
    from distilld.engine import apply as apply_module
    from distilld.engine.apply import JournalRun, keep_previous_bytes, roll_back
    from distilld.engine.context import PassContext
    from distilld.engine.journal import new_journal
    from distilld.engine.lock import StoreLock
    from distilld.policy import load_policy

    root = healthy_store(tmp_path / "store").root
    ours, theirs = root / "projects/kestrel.md", root / "projects/osprey.md"
    steps = [Step("write two files", [FileWrite("projects/kestrel.md", hashlib.sha256(ours.read_bytes()).hexdigest(),
                                                ours.read_bytes() + b"- the pass's line\n"),
                                      FileWrite("projects/osprey.md", hashlib.sha256(theirs.read_bytes()).hexdigest(),
                                                theirs.read_bytes() + b"- the pass's line\n")])]
    originals = ours.read_bytes(), theirs.read_bytes()
    keep_previous_bytes(root, steps)
    now = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    journal = new_journal(root / "data/compact-journals", "compaction", now, "2026-12-04T12:00:00Z", steps)
    journal.create()
    lock = StoreLock(root, "distilld.test")
    lock.acquire()
    ctx = PassContext(root, lock, lambda: now, load_policy().limits)
    executor = Executor(root, Pacer(lambda: None), ctx.now_stamp)
    executor.run(steps[0])
    journal.mark(0)

    real_check = apply_module._undo_loses_lines

    def an_agent_writes_meanwhile(*args: object) -> list[object]:
        if b"agent" not in theirs.read_bytes():
            theirs.write_bytes(theirs.read_bytes() + b"- the agent's line\n")
        return real_check(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(apply_module, "_undo_loses_lines", an_agent_writes_meanwhile)
    run = JournalRun(journal.path)
    roll_back(ctx, journal, run, "a test")
    assert ours.read_bytes() == originals[0]  # the pass's own write, undone
    assert theirs.read_bytes() == originals[1] + b"- the pass's line\n- the agent's line\n"  # kept whole
    assert "projects/osprey.md" in run.kept and "projects/kestrel.md" in run.restored


# -- a lockless writer while the new bytes are flushed --------------------------------------------

def appending_while_flushed(monkeypatch: pytest.MonkeyPatch, target: Path, line: bytes, times: int = 1) -> list[int]:
    """A writer that appends ``line`` to ``target`` right after the executor's new bytes reach
    their temp file, before the rename (the flush takes tens of milliseconds on a busy disk)."""
    from distilld.store import fs

    real = fs._write_file
    made = [0]

    def write_then_append(name: str, *args: object, **kwargs: object) -> None:
        real(name, *args, **kwargs)  # type: ignore[arg-type]
        if made[0] < times:
            made[0] += 1
            with open(target, "ab") as handle:
                handle.write(line)

    monkeypatch.setattr(fs, "_write_file", write_then_append)
    return made


def test_a_line_appended_while_a_planned_write_is_flushed_is_kept(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "projects/x.md"
    path.parent.mkdir()
    path.write_bytes(b"# X\n\n- one\n")
    made = appending_while_flushed(monkeypatch, path, b"- an agent's line\n")

    with pytest.raises(PlanStopped, match="changed since the plan was made"):
        executor(tmp_path).carry_out(FileWrite("projects/x.md", sha(b"# X\n\n- one\n"), b"# X\n\n- two\n"))

    assert made == [1]
    assert path.read_bytes() == b"# X\n\n- one\n- an agent's line\n"  # the rename used to drop it
    assert [p.name for p in path.parent.iterdir()] == ["x.md"]  # no temp file left


def test_a_spine_edit_is_made_again_from_a_spine_changed_while_it_was_flushed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spine = tmp_path / "SPINE.md"
    spine.write_bytes(b"# Index\n\n## Projects\n- [X](projects/x.md) \xe2\x80\x94 x. Read for x.\n")
    (tmp_path / "projects").mkdir()
    (tmp_path / "projects/x.md").write_bytes(b"# X\n")
    agent = b"- [Agent](projects/agent.md) \xe2\x80\x94 agent. Read for the agent.\n"
    appending_while_flushed(monkeypatch, spine, agent)

    executor(tmp_path).carry_out(SpineEdit("projects/x.md", ""))  # remove the pointer to projects/x.md

    after = spine.read_bytes()
    assert b"projects/x.md" not in after and agent in after


def test_a_move_whose_source_was_edited_after_the_plan_says_how_to_finish(store: Path) -> None:
    """The journal of a restore (or gc) whose file an agent edited after the plan can never go on
    by itself: every later write pass stopped on it with a line that did not say what to do."""
    (store / "archive/projects/y.md").write_bytes(ARCHIVED + b"- an agent's edit in the archive\n")
    with pytest.raises(PlanStopped) as stopped:
        executor(store).run(restore_step())
    said = str(stopped.value)
    assert "changed after the pass planned the move" in said
    assert "`git checkout -- archive/projects/y.md`" in said and "carry your change over to projects/y.md" in said
    assert (store / "archive/projects/y.md").read_bytes().endswith(b"- an agent's edit in the archive\n")
