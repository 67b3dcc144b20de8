"""A ledger whose last line was torn (a full disk, a power cut), a full disk during the ledger
append, a hard-linked ledger and a name that is not UTF-8 (issue 23, items 0, 5 and 6), through
the passes themselves on real stores in tmp_path."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, KESTREL_ENTRY, healthy_store
from distilld.actions.gc import run_gc_apply
from distilld.actions.passes import refuse_unreadable_text
from distilld.actions.restore import run_restore
from distilld.cli import main as cli_main
from distilld.engine.lock import StoreLock
from distilld.errors import LockIOError, StoreRefused, UnsafeStore
from distilld.policy import load_policy
from distilld.settings import InstancePaths
from distilld.store.paths import LEDGER
from full_disk import full_disk_at, record_writes, tree, whole_store_problems

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


def stale_store(root: Path, name: str = "projects/c.md") -> None:
    b = healthy_store(root)
    b.tier(name, "# C\n\n- C was a one-off migration.\n- Rollback script in ops.\n",
           domain="project", scope="C migration", last_updated="2025-02-01")
    entry = f"- [C]({name}) {EM} C one-off migration of the billing tables. Read for C.\n"
    b.write("SPINE.md", b.read("SPINE.md").replace((KESTREL_ENTRY + "\n").encode(),
                                                   (KESTREL_ENTRY + "\n" + entry).encode("utf-8", "surrogateescape")))
    b.rebuild_catalog(NOW)


@pytest.fixture
def archived(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    stale_store(root)
    assert run_gc_apply(root, POLICY, clock).outcome.moved  # type: ignore[union-attr]
    return root


def test_a_torn_last_ledger_line_is_taken_back_with_a_note_and_never_built_on(archived: Path, tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    shutil.copytree(archived, reference)
    run_restore(reference, "archive/projects/c.md", POLICY, clock)
    whole = (archived / LEDGER).read_bytes()
    torn = b"- 2026-11-30T11:00:00Z restore | from: archive/projects/c.md | to: projects/c.md | sha256"
    (archived / LEDGER).write_bytes(whole + torn)  # what the old append left on a full disk

    outcome = run_restore(archived, "archive/projects/c.md", POLICY, clock)

    assert outcome.restored == ["projects/c.md"]
    assert any("torn line" in note and "sha256" in note for note in outcome.notes), outcome.notes
    assert whole_store_problems(archived) == []
    assert tree(archived) == tree(reference)  # as if the torn line had never been there
    log = InstancePaths.for_store(archived.resolve()).activity_log.read_text()
    assert "archive/LEDGER.md ended in a torn line" in log and "to: projects/c.md | sha256" in log


def test_a_full_disk_in_the_ledger_append_names_the_ledger_and_takes_the_append_back(archived: Path) -> None:
    before = (archived / LEDGER).read_bytes()
    probe = archived.parent / "probe"
    shutil.copytree(archived, probe)
    with record_writes(probe) as writes:
        run_restore(probe, "archive/projects/c.md", POLICY, clock)
    call = next(i for i, w in enumerate(writes) if w.path == LEDGER)

    with full_disk_at(call, 40), pytest.raises(OSError) as failed:
        run_restore(archived, "archive/projects/c.md", POLICY, clock)

    assert failed.value.filename == str(archived.resolve() / LEDGER)
    assert "No space left on device" in str(failed.value) and "taken back" in str(failed.value)
    assert (archived / LEDGER).read_bytes() == before  # all or nothing
    outcome = run_restore(archived, "archive/projects/c.md", POLICY, clock)  # space freed: it finishes
    assert outcome.restored == ["projects/c.md"] and whole_store_problems(archived) == []


def test_a_hard_linked_ledger_is_refused_before_any_write_naming_both_names(archived: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    os.link(archived / LEDGER, outside)
    before = outside.read_bytes()
    snapshot = tree(archived)

    with pytest.raises(UnsafeStore) as refused:
        run_restore(archived, "archive/projects/c.md", POLICY, clock)

    message = str(refused.value)
    assert str(archived.resolve() / LEDGER) in message and "has 2 hard links" in message
    assert f"find / -xdev -samefile {archived.resolve() / LEDGER}" in message  # outside the store: how to find it
    assert outside.read_bytes() == before and tree(archived) == snapshot
    inside = archived / "ledger-copy.md"
    os.link(archived / LEDGER, inside)
    with pytest.raises(UnsafeStore, match="has 3 hard links"):
        run_restore(archived, "archive/projects/c.md", POLICY, clock)


def test_a_name_that_is_not_utf8_is_never_archived_and_the_ledger_stays_utf8(tmp_path: Path) -> None:
    root = tmp_path / "store"
    stale_store(root, name="projects/caf\udce9.md")

    report = run_gc_apply(root, POLICY, clock)

    assert (root / os.fsdecode(b"projects/caf\xe9.md")).exists()
    assert report.outcome is None or not report.outcome.moved
    ledger = root / LEDGER
    if ledger.exists():
        ledger.read_bytes().decode("utf-8")  # no byte of the name in it
    assert report.plan is not None
    blocked = [s for s in report.plan.by_status("blocked") if "caf" in s.path]
    assert blocked and "not valid UTF-8 (the byte \\xe9)" in blocked[0].reason, report.plan.skipped


def test_the_advice_for_an_unreadable_spine_names_git_only_in_a_git_repository(tmp_path: Path) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    (root / "SPINE.md").write_bytes(b"\x00\x01 not text \xff\xfe")
    with pytest.raises(StoreRefused) as plain:
        refuse_unreadable_text(root)
    assert "checkout" not in str(plain.value) and "not a git repository" in str(plain.value)
    (root / ".git").mkdir()
    with pytest.raises(StoreRefused, match="checkout -- SPINE.md"):
        refuse_unreadable_text(root)


@pytest.mark.parametrize("command", [["gc", "--apply"], ["compact", "--apply"], ["restore", "archive/projects/c.md"]])
def test_a_linked_takeover_mutex_is_refused_before_the_lock_is_taken_and_nothing_is_left(
        archived: Path, tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (archived / ".lock.takeover").unlink(missing_ok=True)  # the plain file the gc before made
    (archived / ".lock.takeover").symlink_to(tmp_path / "missing" / "mutex")
    snapshot = tree(archived)

    code = cli_main([*command, str(archived)])

    err = capsys.readouterr().err
    assert code not in (0, 4), err
    assert ".lock.takeover is a symbolic link" in err and "no lock was taken" in err
    assert not (archived / ".lock").exists() and tree(archived) == snapshot
    assert not (tmp_path / "missing").exists()


def test_a_release_that_fails_on_the_same_full_disk_does_not_hide_which_write_failed(
        archived: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = archived.parent / "probe"
    shutil.copytree(archived, probe)
    with record_writes(probe) as writes:
        run_restore(probe, "archive/projects/c.md", POLICY, clock)
    call = next(i for i, w in enumerate(writes) if w.path == LEDGER)
    real_release = StoreLock.release

    def full_disk_release(lock: StoreLock) -> None:
        real_release(lock)
        raise LockIOError(f"{archived}/.status: cannot write idle (the lock was released) (No space left on device)")

    monkeypatch.setattr(StoreLock, "release", full_disk_release)
    with full_disk_at(call, 10), pytest.raises(OSError) as failed:
        run_restore(archived, "archive/projects/c.md", POLICY, clock)
    assert failed.value.filename == str(archived.resolve() / LEDGER)
    assert not (archived / ".lock").exists()
