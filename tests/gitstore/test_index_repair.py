"""A distilld killed while committing never leaves the real index naming what a path held before
its commit (a plain `git commit` by the user would then take the agents' lines back out of
HEAD): the record of the index update is written before the branch moves, and what the index
still holds of an older distilld state is set back to HEAD on the next start or commit, while
whatever the user staged stays theirs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2
from builders import FIXED_NOW
from distilld.gitstore.agent_changes import commit_agent_changes
from distilld.gitstore.commit import Identity
from distilld.gitstore.index_repair import repair_stale_entries
from distilld.gitstore.repo import open_store
from gitmachines import GitCli, Machine
from pygit2.enums import FileStatus

SIG = Identity().signature(FIXED_NOW)
LINE = "- an agent's line that must stay in HEAD\n"
PATH = "craft/testing.md"

COMMIT_IN_A_CHILD = """
import sys
from datetime import UTC, datetime
from distilld.gitstore.agent_changes import commit_agent_changes
from distilld.gitstore.commit import Identity
from distilld.gitstore.repo import open_store
from pathlib import Path
commit_agent_changes(open_store(Path(sys.argv[1])), Identity().signature(datetime.now(UTC)), "p", 0)
"""


def commit_killed_at(root: Path, boundary: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DISTILLD_CRASH_AT": boundary}
    return subprocess.run([sys.executable, "-c", COMMIT_IN_A_CHILD, str(root)], env=env, capture_output=True,
                          text=True, timeout=120)


def index_blob(repo: pygit2.Repository, path: str) -> pygit2.Oid:
    repo.index.read(True)
    return repo.index[path].id


def head_blob(repo: pygit2.Repository, path: str) -> pygit2.Oid:
    return repo.head.peel(pygit2.Commit).tree[path].id


def staged(repo: pygit2.Repository) -> dict[str, int]:
    return {p: f for p, f in repo.status().items() if f & (FileStatus.INDEX_MODIFIED | FileStatus.INDEX_NEW
                                                             | FileStatus.INDEX_DELETED)}


def test_a_kill_after_the_branch_moved_is_repaired_and_the_users_commit_keeps_the_line(
        machine: Machine, git: GitCli) -> None:
    machine.append(PATH, LINE)
    before = machine.head()
    killed = commit_killed_at(machine.root, "branch-moved")
    assert killed.returncode == -9, killed.stderr
    repo = machine.repo()
    assert machine.head() != before and LINE.encode() in repo[head_blob(repo, PATH)].data
    assert index_blob(repo, PATH) != head_blob(repo, PATH)  # the index still names the old bytes

    done = commit_agent_changes(open_store(machine.root), SIG, "p2", 0)  # the next pass repairs it first
    assert done.commit is None and PATH not in {p for p, _ in done.skipped}
    repo = machine.repo()
    assert index_blob(repo, PATH) == head_blob(repo, PATH)
    assert git(machine.root, "status", "--porcelain").stdout == ""
    assert not (open_store(machine.root).state_dir / "pending-index.json").exists()
    # The user's plain commit has nothing of distilld's to take back.
    assert git(machine.root, "commit", "-q", "-m", "the user's commit", check=False).returncode != 0
    assert LINE in git(machine.root, "show", f"HEAD:{PATH}").stdout


def test_a_kill_before_the_branch_moved_leaves_nothing_to_repair(machine: Machine, git: GitCli) -> None:
    machine.append(PATH, LINE)
    before = machine.head()
    killed = commit_killed_at(machine.root, "commit-recorded")
    assert killed.returncode == -9, killed.stderr
    assert machine.head() == before
    done = commit_agent_changes(open_store(machine.root), SIG, "p2", 0)
    assert done.commit is not None and done.paths == [PATH]
    assert git(machine.root, "status", "--porcelain").stdout == ""
    assert not (open_store(machine.root).state_dir / "pending-index.json").exists()


def _index_back_to_the_parent(machine: Machine) -> pygit2.Oid:
    """What an older distilld left: HEAD is its commit, the index still names the parent's blob."""
    repo = machine.repo()
    parent = repo.head.peel(pygit2.Commit).parents[0]
    old = parent.tree[PATH]
    repo.index.read(True)
    repo.index.add(pygit2.IndexEntry(PATH, old.id, old.filemode))
    repo.index.write()
    return old.id


def test_an_index_left_at_an_older_distilld_state_is_set_back_to_head(machine: Machine, git: GitCli) -> None:
    machine.append(PATH, LINE)
    assert commit_agent_changes(open_store(machine.root), SIG, "p1", 0).commit is not None
    _index_back_to_the_parent(machine)
    assert PATH in staged(machine.repo())  # git would show distilld's change reverted, staged
    assert repair_stale_entries(open_store(machine.root)) == [PATH]
    repo = machine.repo()
    assert index_blob(repo, PATH) == head_blob(repo, PATH)
    assert git(machine.root, "status", "--porcelain").stdout == ""


def test_what_the_user_staged_is_left_as_it_is(machine: Machine, git: GitCli) -> None:
    machine.append(PATH, LINE)
    assert commit_agent_changes(open_store(machine.root), SIG, "p1", 0).commit is not None
    machine.append(PATH, "- the user's own staged line\n")
    git(machine.root, "add", PATH)
    users = index_blob(machine.repo(), PATH)
    assert repair_stale_entries(open_store(machine.root)) == []
    assert index_blob(machine.repo(), PATH) == users

    # An old version checked out on purpose is in the work tree too: the user's, kept.
    git(machine.root, "reset", "-q", PATH)
    git(machine.root, "checkout", "HEAD~1", "--", PATH)
    old = index_blob(machine.repo(), PATH)
    assert repair_stale_entries(open_store(machine.root)) == []
    assert index_blob(machine.repo(), PATH) == old


def test_a_change_the_user_committed_last_is_never_judged_distillds(machine: Machine, git: GitCli) -> None:
    machine.append(PATH, LINE)
    assert commit_agent_changes(open_store(machine.root), SIG, "p1", 0).commit is not None
    machine.append(PATH, "- the user's committed line\n")
    git(machine.root, "commit", "-q", "-am", "the user's commit")
    _index_back_to_the_parent(machine)  # the parent is distilld's state, but the user changed it last
    machine.write(PATH, "- something else on disk\n")
    assert repair_stale_entries(open_store(machine.root)) == []


def test_files_distilld_added_or_removed_are_set_back_too_and_a_new_file_the_user_added_is_kept(
        machine: Machine, git: GitCli) -> None:
    added, removed = "projects/heron.md", "projects/kestrel.md"
    machine.write(added, "---\nscope: Heron\n---\n\n- " + LINE)
    os.unlink(machine.root / removed)
    assert commit_agent_changes(open_store(machine.root), SIG, "p1", 0).commit is not None
    repo = machine.repo()
    parent = repo.head.peel(pygit2.Commit).parents[0].tree
    repo.index.read(True)
    repo.index.remove(added)  # what the index held before distilld's commit: no such file
    repo.index.add(pygit2.IndexEntry(removed, parent[removed].id, parent[removed].filemode))
    repo.index.write()
    machine.write("projects/users-own.md", "- the user's new file\n")
    git(machine.root, "add", "projects/users-own.md")
    assert repair_stale_entries(open_store(machine.root)) == [added, removed]
    assert set(staged(machine.repo())) == {"projects/users-own.md"}
