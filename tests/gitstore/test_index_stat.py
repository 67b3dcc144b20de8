"""After a commit the real index carries each committed file's stat data, so git (and the next
status scan) can tell the file is unchanged without hashing it again; a file that no longer
holds the committed bytes is recorded without stat data, so its newer bytes show as unstaged."""

from __future__ import annotations

import os
from pathlib import Path

from builders import FIXED_NOW
from distilld.gitstore.commit import Committable, Identity, commit_operation, commit_paths, read_committable
from distilld.gitstore.index_entry import committed_entry
from distilld.gitstore.repo import open_store
from gitmachines import GitCli, Machine

SIG = Identity("Test", "t@localhost").signature(FIXED_NOW)
BIG = 300 * 1024  # above the size that used to be committed without stat data


def stat_dirty(git: GitCli, root: Path) -> list[str]:
    """`git diff-files` compares stat data only (no refresh, no hashing): the paths it lists are
    those whose index entry does not describe the file on disk."""
    return git(root, "diff-files", "--name-only").stdout.split()


def indexed_size(git: GitCli, root: Path, path: str) -> int:
    debug = git(root, "ls-files", "--debug", "--", path).stdout
    return int(debug.split("size: ")[1].split()[0])


def test_committed_files_large_and_small_carry_their_stat_data(machine: Machine, git: GitCli) -> None:
    machine.append("archive/LEDGER.md", "<!-- " + "x" * BIG + " -->\n")
    machine.append("craft/testing.md", "- a small change\n")
    result = commit_operation(open_store(machine.root), "compaction", ["archive/LEDGER.md", "craft/testing.md"],
                              "distilld: test", SIG, "p-1")
    assert result.commit is not None
    assert stat_dirty(git, machine.root) == []
    for path in ("archive/LEDGER.md", "craft/testing.md"):
        assert indexed_size(git, machine.root, path) == (machine.root / path).stat().st_size
    assert git(machine.root, "status", "--porcelain").stdout == ""


def test_an_agent_commit_records_the_stat_the_bytes_were_read_under(machine: Machine, git: GitCli) -> None:
    from distilld.gitstore.agent_changes import commit_agent_changes

    machine.append("SPINE.md", "<!-- " + "y" * BIG + " -->\n")
    result = commit_agent_changes(open_store(machine.root), SIG, "p", 0)
    assert result.paths == ["SPINE.md"] and result.commit is not None
    assert stat_dirty(git, machine.root) == []


def test_a_file_changed_after_it_was_read_is_recorded_without_stat_data(machine: Machine, git: GitCli) -> None:
    machine.append("craft/testing.md", "- read and committed\n")
    read = read_committable(machine.root, "craft/testing.md")
    assert read is not None and read.info is not None
    machine.append("craft/testing.md", "- written after the read\n")  # not in the commit
    commit_paths(open_store(machine.root), ["craft/testing.md"], "x", SIG, {"craft/testing.md": read})
    assert indexed_size(git, machine.root, "craft/testing.md") == 0
    assert git(machine.root, "status", "--porcelain").stdout == " M craft/testing.md\n"
    assert git(machine.root, "diff", "--cached", "--name-only").stdout == ""


def test_without_the_read_stat_the_file_is_hashed_and_then_recorded(machine: Machine, git: GitCli) -> None:
    machine.append("craft/testing.md", "- read without its stat\n")
    read = read_committable(machine.root, "craft/testing.md")
    assert read is not None
    commit_paths(open_store(machine.root), ["craft/testing.md"], "x", SIG,
                 {"craft/testing.md": Committable(read.data, None)})
    assert stat_dirty(git, machine.root) == []


def test_a_hashed_file_that_holds_other_bytes_gets_no_stat_data(machine: Machine) -> None:
    store = open_store(machine.root)
    committed = store.repo.create_blob(b"the committed bytes\n")
    machine.write("craft/testing.md", "other bytes\n")
    entry = committed_entry(str(machine.root), "craft/testing.md", committed, 0o100644)
    assert type(entry).__name__ == "IndexEntry"
    machine.write("craft/testing.md", "the committed bytes\n")
    entry = committed_entry(str(machine.root), "craft/testing.md", committed, 0o100644)
    assert type(entry).__name__ == "_StatEntry"


def test_a_time_past_the_index_32_bit_seconds_is_left_to_a_content_compare(machine: Machine, git: GitCli) -> None:
    machine.append("craft/testing.md", "- from the far future\n")
    far = 2**31 + 100
    os.utime(machine.root / "craft/testing.md", (far, far))
    commit_operation(open_store(machine.root), "compaction", ["craft/testing.md"], "x", SIG, "p")
    assert indexed_size(git, machine.root, "craft/testing.md") == 0
    assert git(machine.root, "status", "--porcelain").stdout == ""  # still clean, by content
