"""The ledger only grows, held against the last commit (gitstore/repo.py ``committed_file``,
engine/guard.py): a store that is a git repository, with no copy of the ledger in the state
folder (a fresh clone, or a lost state folder), still refuses every write pass once a line
the last commit holds is gone. Real repositories made with the user's git in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import FIXED_NOW
from distilld.actions.check import run_check
from distilld.actions.gc import run_gc_apply
from distilld.cli import main as cli_main
from distilld.engine.guard import lost_ledger_lines, seen_ledger_path
from distilld.errors import UnsafeStore
from distilld.gitstore.repo import committed_file
from distilld.policy import load_policy
from gitmachines import GitCli
from hostile import busy_store

POLICY = load_policy()
LEDGER = "archive/LEDGER.md"


def committed_store(tmp_path: Path, git: GitCli) -> Path:
    """busy_store with heron archived (two ledger lines), committed by the user's git; the state
    folder's copy of the ledger removed, so only the commit remembers it."""
    store = tmp_path / "store"
    busy_store(store)
    run_gc_apply(store, POLICY, lambda: FIXED_NOW)
    git(store, "init", "-q", "-b", "main")
    git(store, "add", "-A")
    git(store, "commit", "-q", "-m", "the store")
    seen_ledger_path(store.resolve()).unlink()
    return store


def event_lines(store: Path) -> list[bytes]:
    return [line for line in (store / LEDGER).read_bytes().split(b"\n") if line.startswith(b"- ")]


def drop_line(store: Path, line: bytes) -> bytes:
    ledger = store / LEDGER
    whole = ledger.read_bytes()
    ledger.write_bytes(whole.replace(line + b"\n", b"", 1))
    return whole


def store_files(store: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and ".git" not in p.parts and not p.name.startswith((".lock", ".status"))}


# -- reading the last commit -----------------------------------------------------------------

def test_committed_file_reads_heads_blob_and_nothing_else(tmp_path: Path, git: GitCli) -> None:
    store = committed_store(tmp_path, git)
    committed = committed_file(store, LEDGER)
    head = git(store, "rev-parse", "HEAD").stdout.strip()
    assert committed is not None and committed.data == (store / LEDGER).read_bytes()
    assert head.startswith(committed.commit) and len(committed.commit) == 12
    (store / LEDGER).write_bytes(b"# Archive ledger\n")  # the work tree is not read
    assert committed_file(store, LEDGER) == committed
    assert committed_file(store, "archive/NO-SUCH.md") is None
    assert committed_file(store, "archive") is None  # a folder is not a file


def test_committed_file_is_none_without_a_commit_or_repository_of_the_stores_own(
        tmp_path: Path, git: GitCli) -> None:
    store = tmp_path / "store"
    busy_store(store)
    assert committed_file(store, LEDGER) is None  # no repository
    git(store, "init", "-q", "-b", "main")
    assert committed_file(store, LEDGER) is None  # unborn HEAD
    outer = tmp_path / "outer"
    inner = outer / "notes" / "store"
    busy_store(inner)
    git(outer, "init", "-q", "-b", "main")
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "a bigger repository")
    assert committed_file(inner, LEDGER) is None  # HEAD's archive/LEDGER.md would be another path
    assert lost_ledger_lines(inner.resolve()) is None


# -- the refusal -------------------------------------------------------------------------------

WRITE_COMMANDS = [
    ["gc", "--apply"], ["gc", "--revert"], ["restore", "archive/projects/heron.md"], ["compact", "--apply"],
    ["migrate", "--apply"], ["catalog", "--write"],
]


@pytest.mark.parametrize("command", WRITE_COMMANDS, ids=lambda c: " ".join(c))
def test_a_line_lost_since_the_last_commit_makes_every_write_pass_refuse(
        tmp_path: Path, git: GitCli, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    store = committed_store(tmp_path, git)
    whole = drop_line(store, event_lines(store)[0])
    (store / "CATALOG.md").write_bytes((store / "CATALOG.md").read_bytes() + b"\n")  # catalog --write has work
    before = store_files(store)
    args = command[:1] + ([command[1], str(store)] if command[0] == "restore" else [*command[1:], str(store)])
    code = cli_main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "archive/LEDGER.md lost 1 line(s) since the last commit" in err and "marlin.md" in err
    assert f"show {committed_file(store, LEDGER).commit}:archive/LEDGER.md" in err  # type: ignore[union-attr]
    assert store_files(store) == before
    (store / LEDGER).write_bytes(whole)  # put back: nothing stands in the way any more
    assert lost_ledger_lines(store.resolve()) is None


def test_check_and_status_name_the_lost_line_and_the_pass_runs_once_it_is_back(
        tmp_path: Path, git: GitCli, capsys: pytest.CaptureFixture[str]) -> None:
    store = committed_store(tmp_path, git)
    ledger = store / LEDGER
    whole = ledger.read_bytes()
    ledger.write_bytes(whole.replace(b"reason: past threshold", b"reason: edited"))  # a changed line is lost
    lost = lost_ledger_lines(store.resolve())
    assert lost is not None and len(lost.lines) == 1 and "past threshold" in lost.lines[0]
    notes = [f for f in run_check(store, POLICY.limits).findings if f.code == "ledger-lost-lines"]
    assert len(notes) == 1 and notes[0].severity == "note" and "marlin.md" in notes[0].message
    assert cli_main(["status", "--store", str(store)]) in (0, 3)
    out = capsys.readouterr().out
    assert "since the last commit" in out and "nothing is archived, restored or migrated" in out
    with pytest.raises(UnsafeStore, match="since the last commit"):
        run_gc_apply(store, POLICY, lambda: FIXED_NOW)
    ledger.write_bytes(whole)
    assert not [f for f in run_check(store, POLICY.limits).findings if f.code == "ledger-lost-lines"]
    run_gc_apply(store, POLICY, lambda: FIXED_NOW)  # runs again


def test_a_line_present_twice_at_the_last_commit_is_lost_when_one_copy_goes(
        tmp_path: Path, git: GitCli) -> None:
    store = committed_store(tmp_path, git)
    first = event_lines(store)[0]
    ledger = store / LEDGER
    ledger.write_bytes(ledger.read_bytes() + first + b"\n")
    git(store, "commit", "-q", "-am", "a line from two machines, kept twice")
    drop_line(store, first)
    lost = lost_ledger_lines(store.resolve())
    assert lost is not None and lost.lines == [first.decode()]
    commit = git(store, "rev-parse", "HEAD").stdout.strip()[:12]  # shown short
    assert (lost.since, lost.kept_in) == (f"the last commit ({commit})",
                                          f"git: `git -C {store.resolve()} show {commit}:archive/LEDGER.md`")


def test_growth_since_the_last_commit_is_accepted_wherever_it_is_sorted_in(tmp_path: Path, git: GitCli) -> None:
    store = committed_store(tmp_path, git)
    ledger = store / LEDGER
    lines = ledger.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"- "))
    lines.insert(at, b"- 2026-01-02 restore | from: archive/projects/old.md | to: projects/old.md | reason: other machine")
    ledger.write_bytes(b"\r\n".join(lines))  # a merge sorted a line in before ours; CRLF endings now
    assert lost_ledger_lines(store.resolve()) is None


def test_a_committed_deletion_is_still_caught_by_the_state_folders_copy(tmp_path: Path, git: GitCli) -> None:
    store = committed_store(tmp_path, git)
    run_check(store, POLICY.limits)  # read-only: it keeps no copy
    assert not seen_ledger_path(store.resolve()).exists()
    (store / "CATALOG.md").write_bytes((store / "CATALOG.md").read_bytes() + b"\n")
    assert cli_main(["catalog", "--write", str(store)]) == 0  # a pass: the copy is kept again
    assert seen_ledger_path(store.resolve()).exists()
    drop_line(store, event_lines(store)[0])
    git(store, "commit", "-q", "-am", "the user deletes a ledger line and commits it")
    lost = lost_ledger_lines(store.resolve())
    assert lost is not None and lost.since == "the last pass"
