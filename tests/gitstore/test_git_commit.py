"""Commits: one per operation, exactly its paths, machine-readable trailers; a private index,
a compare-and-swap on the branch, the user's index left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import distilld.gitstore.commit as commit_module
import pygit2
import pytest
from builders import FIXED_NOW
from distilld.gitstore.agent_changes import commit_agent_changes
from distilld.gitstore.commit import Identity, commit_operation, commit_paths, repair_pending_index
from distilld.gitstore.errors import CommitRefused, GitBusy
from distilld.gitstore.repo import open_store
from gitmachines import GitCli, Machine

SIG = Identity("Test", "t@localhost").signature(FIXED_NOW)


def changed_in(repo: pygit2.Repository, commit: str) -> set[str]:
    c = repo[commit].peel(pygit2.Commit)
    paths: set[str] = set()
    for delta in c.parents[0].tree.diff_to_tree(c.tree).deltas:
        paths |= {delta.old_file.path, delta.new_file.path}
    return paths


def trailer_values(message: str, key: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in message.splitlines() if line.startswith(key + ": ")]


def test_a_commit_holds_exactly_its_paths_and_leaves_the_users_index(machine: Machine, git: GitCli) -> None:
    machine.append("ops/deploy.md", "- staged by the user\n")
    git(machine.root, "add", "ops/deploy.md")
    machine.append("feedback/preferences.md", "- an unstaged edit\n")
    machine.write("craft/draft.md", "untracked\n")
    machine.append("craft/testing.md", "- the operation's change\n")
    before = git(machine.root, "status", "--porcelain").stdout
    store = open_store(machine.root)
    result = commit_operation(store, "compaction", ["craft/testing.md"], "distilld: compact craft/testing.md",
                              SIG, "pass-1", ["moved one hook to the file"])
    assert result.commit is not None
    repo = machine.repo()
    assert changed_in(repo, result.commit) == {"craft/testing.md"}
    message = repo[result.commit].message
    assert trailer_values(message, "Distilld-Operation") == ["compaction"]
    assert trailer_values(message, "Distilld-Pass") == ["pass-1"]
    assert trailer_values(message, "Distilld-Path") == ["craft/testing.md"]
    after = git(machine.root, "status", "--porcelain").stdout
    assert after == "".join(x + "\n" for x in before.splitlines() if "craft/testing.md" not in x)
    assert "M  ops/deploy.md" in after


@pytest.mark.parametrize("path, why", [
    ("data/gc-log.jsonl", "machine-local"),
    ("local/SPINE.md", "machine-local"),
    (".lifecycle", "machine-local"),
    ("bin/distill-lock.sh", "machine-local"),
    ("craft/link.md", "symlink"),
    ("craft/conflicted.md", "conflict markers"),
])
def test_refused_paths(machine: Machine, path: str, why: str) -> None:
    if path == "craft/link.md":
        os.symlink("testing.md", machine.root / path)
    elif path == "craft/conflicted.md":
        machine.write(path, "# X\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> other\n")
    else:
        machine.write(path, "x\n")
    head = machine.head()
    with pytest.raises(CommitRefused, match=why):
        commit_paths(open_store(machine.root), [path], "x", SIG)
    assert machine.head() == head


def test_agent_commits_leave_out_what_they_must_not_commit(machine: Machine) -> None:
    machine.write("craft/conflicted.md", "<<<<<<< a\nx\n=======\ny\n>>>>>>> b\n")
    machine.append("craft/testing.md", "- fine\n")
    result = commit_agent_changes(open_store(machine.root), SIG, "p", 0)
    assert result.paths == ["craft/testing.md"]
    assert [p for p, _ in result.skipped] == ["craft/conflicted.md"]


def test_agent_changes_wait_for_quiet(machine: Machine) -> None:
    machine.append("craft/testing.md", "- just written\n")
    store = open_store(machine.root)
    import time

    waiting = commit_agent_changes(store, SIG, "p", time.time(), quiet_seconds=60)
    assert waiting.commit is None and waiting.waiting and "quiet" in waiting.waiting
    done = commit_agent_changes(store, SIG, "p", time.time() + 120, quiet_seconds=60)
    assert done.commit is not None
    message = machine.repo()[done.commit].message
    assert message.startswith("distilld: agent changes (0 added, 1 changed, 0 removed)")


def test_spine_bytes_before_and_after_are_in_the_message(machine: Machine) -> None:
    before = len(machine.read("SPINE.md"))
    machine.append("SPINE.md", "<!-- a note -->\n")
    machine.write("inbox/20261130T120000Z-ab12-x.md", "---\norigin: user-explicit\n---\nx\n")
    os.unlink(machine.root / "evidence/projects/marlin.md")
    result = commit_agent_changes(open_store(machine.root), SIG, "p", 0)
    message = machine.repo()[result.commit].message
    assert "(1 added, 1 changed, 1 removed)" in message
    assert f"SPINE.md bytes: {before} -> {before + 16}" in message


def test_the_branch_moves_only_by_compare_and_swap(machine: Machine, git: GitCli,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(machine.root)
    stale = commit_module.head_commit(store.repo)
    machine.append("profile/rowan.md", "- the user's commit\n")
    git(machine.root, "commit", "-q", "-am", "the user commits meanwhile")
    users = machine.head()
    monkeypatch.setattr(commit_module, "head_commit", lambda repo: stale)  # distilld read HEAD before that
    machine.append("craft/testing.md", "- distilld's change\n")
    with pytest.raises(GitBusy, match="moved"):
        commit_paths(store, ["craft/testing.md"], "x", SIG)
    assert machine.head() == users


def test_a_held_index_lock_skips_the_commit(machine: Machine) -> None:
    (machine.root / ".git/index.lock").write_bytes(b"")
    machine.append("craft/testing.md", "- x\n")
    head = machine.head()
    with pytest.raises(GitBusy, match="index.lock"):
        commit_paths(open_store(machine.root), ["craft/testing.md"], "x", SIG)
    assert machine.head() == head and (machine.root / ".git/index.lock").exists()


def test_an_index_update_cut_short_is_finished_next_time(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    real = commit_module._apply_to_index

    def cut_short(*args: object) -> None:
        raise pygit2.GitError("the index is locked; this might be due to a concurrent or crashed process")

    monkeypatch.setattr(commit_module, "_apply_to_index", cut_short)
    machine.append("craft/testing.md", "- committed, index not yet updated\n")
    store = open_store(machine.root)
    assert commit_paths(store, ["craft/testing.md"], "x", SIG) is not None
    assert machine.repo().status() != {}  # the index still holds the old blob
    monkeypatch.setattr(commit_module, "_apply_to_index", real)
    repair_pending_index(store)
    assert machine.repo().status() == {}
    assert not (store.state_dir / "pending-index.json").exists()


def test_a_gc_pass_is_one_commit_of_exactly_the_paths_it_touched(machine: Machine) -> None:
    machine.append("craft/testing.md", "- an agent wrote this before the pass\n")
    report, record = machine.gc()
    assert report.outcome is not None and sorted(report.outcome.moved) == ["projects/old-a.md", "projects/old-b.md"]
    assert record.result is not None and record.result.commit is not None
    repo = machine.repo()
    op = repo[record.result.commit].peel(pygit2.Commit)
    assert changed_in(repo, str(op.id)) == {
        "projects/old-a.md", "projects/old-b.md", "archive/projects/old-a.md", "archive/projects/old-b.md",
        "archive/LEDGER.md", "SPINE.md", "CATALOG.md",
    }
    assert trailer_values(op.message, "Distilld-Operation") == ["archive"]
    assert trailer_values(op.message, "Distilld-Pass") == [report.outcome.manifest.stem]  # type: ignore[union-attr]
    agent = op.parents[0]
    assert changed_in(repo, str(agent.id)) == {"craft/testing.md"}
    assert "agent-changes" in agent.message
    assert machine.repo().status() == {}
