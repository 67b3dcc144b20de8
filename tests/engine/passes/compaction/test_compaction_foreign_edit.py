"""An edit under a running compaction (issue 9, item 9) and a self-check that fails after writing
(item 8), with real processes.

A child ``python -m distilld compact STORE --apply`` pauses at a write boundary
(``DISTILLD_PAUSE_AT``, crashpoints.py) after its first two steps. The test then edits the store
as another program would: a new SPINE entry with its file, a line added to a tier file the plan
has still to write, or to one it already wrote. Then it lets the child go on, or kills it and
runs the compaction again. Either way the compaction must keep the foreign edit, lose no line
(C4 against the store before plus that same edit, by the reference checker), pass C1-C3, and
leave no journal unfinished: this pass's own writes are undone where a file changed under it,
and it plans again. The rollback itself is killed at each of its write boundaries and finished
by the next run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from boundaries import boundaries_in, count_reached
from builders import EM
from distilld.cli import main as cli_main
from distilld.engine.context import PassContext
from distilld.crashpoints import CRASH_ENV, PAUSE_ENV, PAUSE_FILE_ENV
from distilld.engine.journal import journal_order
from distilld.store.findings import Finding, fail
from maintenance_fixtures import age_lock, have_bash, migrated_store_over_targets, oracle_passes
from waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")]
PAUSE_AT = "step-marked:2"  # steps 0 and 1 (the splits of craft/testing.md and ops/deploy.md) are done
AGENT_NOTE = "---\ndomain: craft\nscope: An agent's note on flags\nlast_updated: 2026-11-30\n---\n\n# Flags\n\n- Flags default off.\n"
AGENT_ENTRY = f"- [Flags](craft/agent-flags.md) {EM} feature flags default off. Read before adding a flag."
AGENT_LINE = "- An agent learned meanwhile: the blue-green switch needs the health probe first."
DEADLINE = 120.0
# How often a rollback reaches each of its boundaries, for the store crashed at ROLLBACK_SETUP
# with a SPINE edit (kept honest by test_the_rollback_boundary_table_matches_a_run).
ROLLBACK_SETUP = "step-marked:2"
ROLLBACK_OCCURRENCES = {"rollback-started": 1, "file-restored": 49}  # 49 files: some were written twice
ROLLBACK_SAMPLE = {"rollback-started": [1], "file-restored": [1, 2, 3, 25, 48, 49]}


# -- the foreign edits -------------------------------------------------------------------------------

def append_line(path: Path, line: str) -> None:
    raw = path.read_bytes()
    ending = b"\r\n" if b"\r\n" in raw else b"\n"
    path.write_bytes(raw + line.encode() + ending)


def edit_spine(root: Path) -> None:
    """A new topic file and its SPINE entry, as an agent writes them."""
    (root / "craft/agent-flags.md").write_text(AGENT_NOTE)
    spine = (root / "SPINE.md").read_text()
    (root / "SPINE.md").write_text(spine.replace("## Craft\n", f"## Craft\n{AGENT_ENTRY}\n", 1))


def edit_tier_later(root: Path) -> None:
    append_line(root / "projects/olive.md", AGENT_LINE)  # written by step 46, after the pause


def edit_tier_done(root: Path, before: bool) -> None:
    append_line(root / "ops/deploy.md", AGENT_LINE)  # written by step 1 only, before the pause


EDITS: dict[str, Callable[[Path, bool], None]] = {
    "spine": lambda root, before: edit_spine(root),
    "tier-later": lambda root, before: edit_tier_later(root),
    "tier-done": edit_tier_done,
}


def edit_kept(root: Path, edit: str) -> None:
    if edit == "spine":
        # kept whole; the run after may shorten its new entry, whose whole hook then follows as Index detail
        kept = (root / "craft/agent-flags.md").read_text()
        assert kept == AGENT_NOTE or kept.startswith(AGENT_NOTE + "\n## Index detail (moved from SPINE "), kept
        assert "(craft/agent-flags.md)" in (root / "SPINE.md").read_text()
    else:
        found = [p for p in root.rglob("*.md") if AGENT_LINE in p.read_text("utf-8", "replace")
                 and not p.relative_to(root).as_posix().startswith("data/")]
        assert len(found) == 1, found


# -- processes and checks ----------------------------------------------------------------------------

def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (CRASH_ENV, PAUSE_ENV, PAUSE_FILE_ENV)}
    return {**env, **extra}


def start_paused(root: Path, flag: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "distilld", "compact", str(root), "--apply"],
                            env=child_env(**{PAUSE_ENV: PAUSE_AT, PAUSE_FILE_ENV: str(flag)}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def paused() -> bool:
        assert proc.poll() is None, proc.communicate()
        return flag.exists()

    wait_for(paused, DEADLINE, "the compaction to reach its pause", interval=0.02)
    return proc


def run_killed(args: list[str], crash: str) -> None:
    proc = subprocess.run(args, env=child_env(**{CRASH_ENV: crash}), capture_output=True, timeout=DEADLINE,
                          check=False)
    assert proc.returncode == -signal.SIGKILL, (crash, proc.returncode, proc.stdout, proc.stderr)


def cli(args: list[str]) -> tuple[int, str]:
    assert CRASH_ENV not in os.environ and PAUSE_ENV not in os.environ
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(args)
    return code, out.getvalue() + err.getvalue()


def journals(root: Path) -> list[list[dict[str, object]]]:
    # In time order: two passes in the same second are "<stamp>.jsonl" and "<stamp>-2.jsonl",
    # which plain sorting turns round ("-" sorts before ".").
    return [[json.loads(line) for line in p.read_text().splitlines()[1:]]
            for p in sorted((root / "data/compact-journals").glob("*.jsonl"), key=journal_order)]


def no_journal_unfinished(root: Path) -> None:
    found = journals(root)
    assert found and all(events and events[-1].get("finished") is True for events in found), found


def healthy_and_whole(root: Path, before: Path) -> None:
    oracle_passes(root, before)  # C1-C3, and C4: no line of the store before (plus the edit) lost
    no_journal_unfinished(root)
    assert not (root / ".lock").exists()
    assert [p.name for p in root.rglob("*") if ".distilld-tmp" in p.name] == []
    code, out = cli(["compact", str(root), "--apply"])  # and the store is healthy for the next pass
    assert code == 0, out


def prepared(tmp_path: Path) -> tuple[Path, Path]:
    root, before = tmp_path / "store", tmp_path / "before"
    migrated_store_over_targets(root)
    shutil.copytree(root, before)
    return root, before


# -- an edit under a running compaction ---------------------------------------------------------------

@pytest.mark.parametrize("edit", sorted(EDITS))
@pytest.mark.parametrize("then", ["continue", "kill"])
def test_an_edit_under_a_running_compaction_is_kept_and_nothing_is_lost(tmp_path: Path, edit: str, then: str) -> None:
    root, before = prepared(tmp_path)
    EDITS[edit](before, True)  # what C4 compares with: the store before, plus the foreign edit
    flag = tmp_path / "paused"
    proc = start_paused(root, flag)

    EDITS[edit](root, False)
    if then == "continue":
        flag.unlink()
        out, err = proc.communicate(timeout=DEADLINE)
        assert proc.returncode == 0, (out.decode(), err.decode())
        if edit != "tier-done":  # a file it still had to write changed: undone, kept, planned again
            assert b"the compaction was rolled back (a file changed under the compaction" in out, out.decode()
    else:
        proc.kill()
        proc.communicate(timeout=DEADLINE)
        age_lock(root)
        code, out_text = cli(["compact", str(root), "--apply"])
        assert code == 0, out_text
        if edit != "tier-done":
            assert "an interrupted compaction was rolled back" in out_text, out_text
        else:
            assert "recovered an interrupted compaction" in out_text, out_text

    edit_kept(root, edit)
    healthy_and_whole(root, before)


def test_a_journal_stopped_by_a_later_edit_recovers_without_moving_it_aside(tmp_path: Path) -> None:
    """The case users met: a compaction killed mid-way, then the SPINE edited before the next run.
    The next run undoes the killed pass's own writes, keeps the edit and compacts afresh."""
    root, before = prepared(tmp_path)
    edit_spine(before)
    run_killed([sys.executable, "-m", "distilld", "compact", str(root), "--apply"], "file-written:1")  # the first write: SPINE.md is always written last
    age_lock(root)
    edit_spine(root)

    # The next run as a user starts it: a fresh process.
    done = subprocess.run([sys.executable, "-m", "distilld", "compact", str(root), "--apply"], env=child_env(),
                          capture_output=True, text=True, timeout=DEADLINE, check=False)
    code, out = done.returncode, done.stdout + done.stderr

    assert code == 0, out
    assert "move its journal" not in out
    events = journals(root)
    assert events[0][-1] == {"finished": True, "rolled_back": True}
    assert any("rolling_back" in e for e in events[0])
    edit_kept(root, "spine")
    healthy_and_whole(root, before)


def test_a_journal_of_the_previous_version_stopped_by_an_edit_is_recovered_too(tmp_path: Path) -> None:
    """A journal written before journals kept the replaced bytes cannot undo a rewritten file, so
    the killed pass's writes stay as they are (no line is in flight: a split writes its children
    first) and the next plan gives the split children it left their SPINE pointers."""
    root, before = prepared(tmp_path)
    edit_spine(before)
    run_killed([sys.executable, "-m", "distilld", "compact", str(root), "--apply"], ROLLBACK_SETUP)
    age_lock(root)
    journal = next((root / "data/compact-journals").glob("*.jsonl"))
    head, *rest = journal.read_text().splitlines()
    steps = json.loads(head)
    for step in steps["steps"]:
        for op in step["ops"]:
            op.pop("previous", None)
    journal.write_text("\n".join([json.dumps(steps), *rest]) + "\n")
    edit_spine(root)

    code, out = cli(["compact", str(root), "--apply"])

    assert code == 0, out
    assert "not undone, because undoing would lose lines" in out, out
    spine = (root / "SPINE.md").read_text()
    assert "(craft/testing-2.md)" in spine and "(ops/deploy-2.md)" in spine
    edit_kept(root, "spine")
    healthy_and_whole(root, before)


# -- the rollback, killed at each of its boundaries --------------------------------------------------

def rollback_cases() -> list[pytest.param]:
    return [pytest.param(b, n, id=f"{b}-{n}") for b, ns in ROLLBACK_SAMPLE.items() for n in ns]


@pytest.mark.parametrize(("boundary", "n"), rollback_cases())
def test_a_killed_rollback_is_finished_by_the_next_run(tmp_path: Path, boundary: str, n: int) -> None:
    root, before = prepared(tmp_path)
    edit_spine(before)
    command = [sys.executable, "-m", "distilld", "compact", str(root), "--apply"]
    run_killed(command, ROLLBACK_SETUP)
    age_lock(root)
    edit_spine(root)
    run_killed(command, f"{boundary}:{n}")  # the recovery meets the edit and rolls back: killed there
    age_lock(root)

    code, out = cli(["compact", str(root), "--apply"])

    assert code == 0, out
    assert "an interrupted compaction was rolled back" in out, out
    edit_kept(root, "spine")
    healthy_and_whole(root, before)


def test_the_rollback_boundaries_are_the_ones_the_engine_has() -> None:
    assert set(ROLLBACK_OCCURRENCES) <= boundaries_in("apply.py")  # the one rollback, every pass's


def test_the_rollback_boundary_table_matches_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = prepared(tmp_path)
    run_killed([sys.executable, "-m", "distilld", "compact", str(root), "--apply"], ROLLBACK_SETUP)
    age_lock(root)
    edit_spine(root)
    reached = count_reached(monkeypatch)
    assert cli(["compact", str(root), "--apply"])[0] == 0
    assert {b: reached[b] for b in ROLLBACK_OCCURRENCES} == ROLLBACK_OCCURRENCES


# -- a self-check that fails after writing -------------------------------------------------------------

FAILING_ONCE = textwrap.dedent("""
    import sys
    import distilld.engine.context as context
    from distilld.store.findings import fail
    original = context.PassContext.self_check
    def failing_once(self, before=None):
        found = original(self, before)
        context.PassContext.self_check = original
        return found + [fail("C3", "made-up", "craft/testing.md", "a failure only this test makes")]
    context.PassContext.self_check = failing_once
    from distilld.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith(("data/", ".lock", ".status"))}


def test_a_self_check_failing_after_the_writes_rolls_the_pass_back_and_exits_non_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = prepared(tmp_path)
    original = tree(root)
    real = PassContext.self_check

    def failing(self: PassContext, before: object = None) -> list[Finding]:
        return [*real(self, before), fail("C3", "made-up", "craft/testing.md", "a failure only this test makes")]  # type: ignore[arg-type]

    monkeypatch.setattr(PassContext, "self_check", failing)
    code, out = cli(["compact", str(root), "--apply"])

    assert code == 1, out
    assert "self-check FAILED: the pass was rolled back, the store is as it was" in out, out
    assert tree(root) == original  # byte for byte, the catalog included
    no_journal_unfinished(root)


@pytest.mark.parametrize(("boundary", "n"), [("rollback-started", 1), ("file-restored", 1), ("file-restored", 25),
                                             ("file-restored", 49), ("file-restored", 50)])
def test_a_rollback_after_a_failed_self_check_killed_midway_is_finished(tmp_path: Path, boundary: str, n: int) -> None:
    """The rollback of a pass whose self-check failed, killed as it starts or after n files given
    back (the 50th is the catalog); the next run finishes the rollback first, then compacts afresh."""
    root, before = prepared(tmp_path)
    original = tree(root)
    run_killed([sys.executable, "-c", FAILING_ONCE, "compact", str(root), "--apply"], f"{boundary}:{n}")
    age_lock(root)
    assert tree(root) != original

    code, out = cli(["compact", str(root), "--apply"])

    assert code == 0, out
    assert "an interrupted compaction was rolled back (self-check failed after writing" in out, out
    healthy_and_whole(root, before)
