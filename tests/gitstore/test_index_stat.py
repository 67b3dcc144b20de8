"""After a commit the real index carries each committed file's stat data, so git (and the next
status scan) can tell the file is unchanged without hashing it again; whenever the stat data
would not prove the file holds the committed bytes, the entry goes in without it, so newer
bytes show as an unstaged change, never as a clean file or a staged one."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import distilld.gitstore.index_entry as index_entry
import pygit2
import pytest
from builders import FIXED_NOW
from distilld.gitstore.agent_changes import commit_agent_changes
from distilld.gitstore.commit import (
    Committable,
    Identity,
    commit_operation,
    commit_paths,
    read_committable,
    repair_pending_index,
)
from distilld.gitstore.index_entry import FRESH_INDEX, add_committed, same_file, settle_fresh_entries
from distilld.gitstore.repo import open_store
from gitmachines import GitCli, Machine

SIG = Identity("Test", "t@localhost").signature(FIXED_NOW)
BIG = 300 * 1024  # above the size that used to be committed without stat data
AN_HOUR_AGO = time.time() - 3600


def written_earlier(machine: Machine, path: str, data: str) -> None:
    """Append, then date the write an hour back: a file whose last write is in a second long over."""
    machine.append(path, data)
    os.utime(machine.root / path, (AN_HOUR_AGO, AN_HOUR_AGO))


def indexed_stat(git: GitCli, root: Path, path: str) -> tuple[int, int, int]:
    """(mtime seconds, mtime nanoseconds, size) as the index holds them."""
    debug = git(root, "ls-files", "--debug", "--", path).stdout
    seconds, nanos = debug.split("mtime: ")[1].split()[0].split(":")
    return int(seconds), int(nanos), int(debug.split("size: ")[1].split()[0])


def on_disk(root: Path, path: str) -> tuple[int, int, int]:
    info = os.lstat(root / path)
    return info.st_mtime_ns // 1_000_000_000, info.st_mtime_ns % 1_000_000_000, info.st_size


def stat_dirty(git: GitCli, root: Path) -> list[str]:
    """`git diff-files` compares stat data only (no refresh, no hashing): the paths it lists are
    those whose index entry does not describe the file on disk."""
    return git(root, "diff-files", "--name-only").stdout.split()


def no_hashing(machine: Machine, monkeypatch: pytest.MonkeyPatch, *paths: str) -> None:
    """From here on ``paths`` must not be hashed again; what the set-up's commits left fresh
    is settled first (that hashes them, rightly)."""
    with monkeypatch.context() as later:
        later.setattr(index_entry, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + 2_000_000_000))
        settle_fresh_entries(open_store(machine.root))
    real = pygit2.hashfile

    def refuse(path: str) -> pygit2.Oid:
        if path.endswith(paths):
            raise AssertionError(f"{path} was hashed again")
        return real(path)

    monkeypatch.setattr(index_entry.pygit2, "hashfile", refuse)


def test_committed_files_large_and_small_carry_their_stat_data_to_the_nanosecond(
        machine: Machine, git: GitCli, monkeypatch: pytest.MonkeyPatch) -> None:
    written_earlier(machine, "archive/LEDGER.md", "<!-- " + "x" * BIG + " -->\n")
    written_earlier(machine, "craft/testing.md", "- a small change\n")
    no_hashing(machine, monkeypatch, "LEDGER.md", "testing.md")  # the stat the bytes were read under is proof enough
    result = commit_operation(open_store(machine.root), "compaction", ["archive/LEDGER.md", "craft/testing.md"],
                              "distilld: test", SIG, "p-1")
    assert result.commit is not None
    for path in ("archive/LEDGER.md", "craft/testing.md"):
        assert indexed_stat(git, machine.root, path) == on_disk(machine.root, path)
    assert stat_dirty(git, machine.root) == [] and git(machine.root, "status", "--porcelain").stdout == ""


def test_an_agent_commit_records_the_stat_the_bytes_were_read_under(machine: Machine, git: GitCli,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    written_earlier(machine, "SPINE.md", "<!-- " + "y" * BIG + " -->\n")
    no_hashing(machine, monkeypatch, "SPINE.md")
    result = commit_agent_changes(open_store(machine.root), SIG, "p", 0)
    assert result.paths == ["SPINE.md"] and result.commit is not None
    assert indexed_stat(git, machine.root, "SPINE.md") == on_disk(machine.root, "SPINE.md")


def test_a_file_changed_after_it_was_read_is_recorded_without_stat_data(machine: Machine, git: GitCli) -> None:
    written_earlier(machine, "craft/testing.md", "- read and committed\n")
    read = read_committable(machine.root, "craft/testing.md")
    assert read is not None and read.info is not None
    written_earlier(machine, "craft/testing.md", "- written after the read\n")  # not in the commit
    commit_paths(open_store(machine.root), ["craft/testing.md"], "x", SIG, {"craft/testing.md": read})
    assert indexed_stat(git, machine.root, "craft/testing.md")[2] == 0
    assert git(machine.root, "status", "--porcelain").stdout == " M craft/testing.md\n"
    assert git(machine.root, "diff", "--cached", "--name-only").stdout == ""


def test_without_the_read_stat_the_file_is_hashed_and_then_recorded(machine: Machine, git: GitCli) -> None:
    written_earlier(machine, "craft/testing.md", "- read without its stat\n")
    read = read_committable(machine.root, "craft/testing.md")
    assert read is not None
    commit_paths(open_store(machine.root), ["craft/testing.md"], "x", SIG,
                 {"craft/testing.md": Committable(read.data, None)})
    assert indexed_stat(git, machine.root, "craft/testing.md") == on_disk(machine.root, "craft/testing.md")


def add_and_read_back(machine: Machine, git: GitCli, data: bytes, committed: bytes) -> int:
    """Add craft/testing.md (holding ``data``, written an hour ago) as the blob of ``committed``;
    the size it is then indexed with (0: no stat data)."""
    store = open_store(machine.root)
    (machine.root / "craft/testing.md").write_bytes(data)
    os.utime(machine.root / "craft/testing.md", (AN_HOUR_AGO, AN_HOUR_AGO))
    index = store.repo.index
    add_committed(index, store.repo, str(machine.root), "craft/testing.md", store.repo.create_blob(committed),
                  0o100644)
    index.write()
    return indexed_stat(git, machine.root, "craft/testing.md")[2]


def test_a_hashed_file_that_holds_other_bytes_gets_no_stat_data(machine: Machine, git: GitCli) -> None:
    assert add_and_read_back(machine, git, b"other bytes\n", b"the committed bytes\n") == 0
    assert add_and_read_back(machine, git, b"the committed bytes\n", b"the committed bytes\n") == 20


def test_a_file_rewritten_while_it_is_hashed_gets_no_stat_data(machine: Machine, git: GitCli,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    real = pygit2.hashfile

    def rewrite_meanwhile(path: str) -> pygit2.Oid:
        found = real(path)
        with open(path, "r+b") as handle:  # the same bytes again: only the file's stat changes
            handle.write(handle.read())
        return found

    monkeypatch.setattr(index_entry.pygit2, "hashfile", rewrite_meanwhile)
    assert add_and_read_back(machine, git, b"the committed bytes\n", b"the committed bytes\n") == 0


FIELDS = ("st_mtime_ns", "st_ctime_ns", "st_size", "st_ino", "st_dev", "st_mode")


@pytest.mark.parametrize("field", FIELDS)
def test_same_file_tells_each_stat_field_apart(field: str) -> None:
    info = SimpleNamespace(**dict.fromkeys(FIELDS, 7))
    other = SimpleNamespace(**{**vars(info), field: 8})
    assert same_file(info, SimpleNamespace(**vars(info)))  # type: ignore[arg-type]
    assert not same_file(info, other)  # type: ignore[arg-type]


def test_a_file_written_in_the_second_of_its_commit_gets_its_stat_data_once_that_second_is_over(
        machine: Machine, git: GitCli, monkeypatch: pytest.MonkeyPatch) -> None:
    """git compares whole seconds: a same-size rewrite later in that second would look clean
    to it, so the stat data waits for the second to end, and a later pass records it."""
    machine.append("craft/testing.md", "- written and committed at once\n")
    store = open_store(machine.root)
    commit_operation(store, "compaction", ["craft/testing.md"], "x", SIG, "p")
    assert indexed_stat(git, machine.root, "craft/testing.md")[2] == 0
    assert (store.state_dir / FRESH_INDEX).exists()
    later = time.time_ns() + 2_000_000_000
    monkeypatch.setattr(index_entry, "time", SimpleNamespace(time_ns=lambda: later))
    commit_agent_changes(open_store(machine.root), SIG, "p2", 0)  # its scan for changes settles it first
    assert indexed_stat(git, machine.root, "craft/testing.md") == on_disk(machine.root, "craft/testing.md")
    assert not (store.state_dir / FRESH_INDEX).exists()


def test_a_fresh_entry_changed_before_it_settles_keeps_no_stat_data(machine: Machine, git: GitCli,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    machine.append("craft/testing.md", "- committed\n")
    commit_operation(open_store(machine.root), "compaction", ["craft/testing.md"], "x", SIG, "p")
    machine.append("craft/testing.md", "- then changed, not yet committed\n")
    later = time.time_ns() + 2_000_000_000
    monkeypatch.setattr(index_entry, "time", SimpleNamespace(time_ns=lambda: later))
    settle_fresh_entries(open_store(machine.root))
    assert indexed_stat(git, machine.root, "craft/testing.md")[2] == 0
    assert git(machine.root, "status", "--porcelain").stdout == " M craft/testing.md\n"


@pytest.mark.parametrize("when", [2**31 + 100, -(2**31) - 100])
def test_a_time_outside_the_index_32_bit_seconds_is_left_to_a_content_compare(machine: Machine, git: GitCli,
                                                                             when: int) -> None:
    machine.append("craft/testing.md", "- from far away in time\n")
    try:
        os.utime(machine.root / "craft/testing.md", (when, when))
    except OSError:
        pytest.skip("this file system cannot hold that time")
    commit_operation(open_store(machine.root), "compaction", ["craft/testing.md"], "x", SIG, "p")
    assert indexed_stat(git, machine.root, "craft/testing.md")[2] == 0
    assert git(machine.root, "status", "--porcelain").stdout == ""  # still clean, by content


def test_a_failure_of_pygit2s_private_entry_interface_still_updates_the_index(
        machine: Machine, git: GitCli, monkeypatch: pytest.MonkeyPatch) -> None:
    def changed_shape(self: object) -> object:
        raise TypeError("cannot unpack non-iterable object")

    monkeypatch.setattr(index_entry._StatEntry, "_to_c", changed_shape)
    written_earlier(machine, "craft/testing.md", "- committed all the same\n")
    commit_operation(open_store(machine.root), "compaction", ["craft/testing.md"], "x", SIG, "p")
    assert indexed_stat(git, machine.root, "craft/testing.md")[2] == 0
    assert git(machine.root, "status", "--porcelain").stdout == ""


def test_a_path_with_a_filter_attribute_gets_no_stat_data(machine: Machine, git: GitCli) -> None:
    """git's blob for such a path is the filtered bytes, not the raw bytes' hash."""
    attributes = machine.root / ".git/info/attributes"
    attributes.write_text(attributes.read_text() + "craft/testing.md text eol=lf\n")
    written_earlier(machine, "craft/testing.md", "- filtered by git\n")
    commit_operation(open_store(machine.root), "compaction", ["craft/testing.md"], "x", SIG, "p")
    assert indexed_stat(git, machine.root, "craft/testing.md")[2] == 0


def test_a_file_that_changes_during_its_read_has_no_read_stat(machine: Machine,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import distilld.gitstore.commit as commit_module

    real = os.fstat
    monkeypatch.setattr(commit_module.os, "fstat", lambda fd: os.stat_result(
        (*tuple(real(fd))[:8], real(fd).st_mtime + 1, real(fd).st_ctime)))  # written to meanwhile
    read = read_committable(machine.root, "craft/testing.md")
    assert read is not None and read.info is None
    monkeypatch.undo()
    read = read_committable(machine.root, "craft/testing.md")
    assert read is not None and read.info is not None and same_file(read.info, os.lstat(machine.root /
                                                                                        "craft/testing.md"))


def test_an_index_update_finished_later_records_the_stat_data_of_unchanged_files(
        machine: Machine, git: GitCli, monkeypatch: pytest.MonkeyPatch) -> None:
    import distilld.gitstore.commit as commit_module

    written_earlier(machine, "craft/testing.md", "- committed, index updated later\n")
    written_earlier(machine, "ops/deploy.md", "- committed, then changed before the repair\n")
    with monkeypatch.context() as cut:
        cut.setattr(commit_module, "_apply_to_index", lambda *args: (_ for _ in ()).throw(pygit2.GitError("locked")))
        commit_operation(open_store(machine.root), "gc", ["craft/testing.md", "ops/deploy.md"], "x", SIG, "p")
    written_earlier(machine, "ops/deploy.md", "- changed\n")
    repair_pending_index(open_store(machine.root))
    assert indexed_stat(git, machine.root, "craft/testing.md") == on_disk(machine.root, "craft/testing.md")
    assert indexed_stat(git, machine.root, "ops/deploy.md")[2] == 0
    assert git(machine.root, "status", "--porcelain").stdout == " M ops/deploy.md\n"
