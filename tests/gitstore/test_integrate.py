"""Taking in the fetched branch (gitstore/integrate.py), with real repositories in tmp_path and
a bare remote: what it refuses, word for word, and that the branch only ever moves from the
commit it started from, so a commit made meanwhile is never lost."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pygit2
import pytest
from distilld.actions.sync import render_sync_text
from distilld.gitstore import gitcli
from distilld.gitstore.errors import GitBusy, GitStoreError
from builders import EM, KESTREL_ENTRY
from gitmachines import (
    GitCli,
    Machine,
    Origin,
    assert_converged,
    lifecycle_store,
    pushed_machine,
)
from pygit2.references import References


def test_a_remote_holding_another_store_is_never_merged(tmp_path: Path, origin: Origin,
                                                         pair: tuple[Machine, Machine], git: GitCli) -> None:
    a, _ = pair
    other = Machine("c", tmp_path / "c", Origin.create(tmp_path / "elsewhere.git"))
    lifecycle_store(other.root)
    other.init()
    git(other.root, "remote", "set-url", "origin", origin.url)
    before = other.head()
    report = other.sync()
    assert report.state == "blocked" and report.integration == "blocked" and not report.pushed, report
    assert report.reason == ("origin/main shares no history with main: it holds another store. distilld will "
                             "not merge two stores; clone the remote into an empty folder instead")
    assert other.head() == before and origin.head() == a.head()


def test_incoming_changes_never_overwrite_a_staged_edit(pair: tuple[Machine, Machine], origin: Origin,
                                                        git: GitCli) -> None:
    """The user's staged edit is not committed by distilld; a fast-forward that would overwrite
    it is refused, and both the edit and the branch stay as they were."""
    a, b = pair
    a.append("craft/testing.md", "- The user's own edit, staged.\n")
    git(a.root, "add", "craft/testing.md")
    mine = a.read("craft/testing.md")
    b.append("craft/testing.md", "- B's agent edits the same file.\n")
    assert b.sync().pushed
    before = a.head()
    report = a.sync()
    assert report.state == "blocked" and report.integration == "blocked", report
    assert report.reason == ("incoming changes would overwrite uncommitted edits (craft/testing.md); commit or "
                             "move those edits, and the next sync takes the changes in")
    assert a.head() == before and a.read("craft/testing.md") == mine
    assert git(a.root, "diff", "--cached", "--name-only").stdout == "craft/testing.md\n"
    git(a.root, "commit", "-q", "-m", "the user's commit")  # committed: the next sync merges it
    for machine in (a, b, a, b):
        assert machine.sync().ok
    files = assert_converged(origin, a, b)
    kept = [p for p in files if "sync-conflict-craft-testing" in p]
    assert len(kept) == 1 and files[kept[0]].endswith(mine)


def test_every_staged_file_an_incoming_change_would_overwrite_is_named(pair: tuple[Machine, Machine],
                                                                      git: GitCli) -> None:
    a, b = pair
    for path in ("ops/deploy.md", "craft/testing.md"):
        a.append(path, "- The user's own edit, staged.\n")
        git(a.root, "add", path)
        b.append(path, "- B's agent edits the same file.\n")
    assert b.sync().pushed
    report = a.sync()
    assert report.state == "blocked", report
    assert report.reason == ("incoming changes would overwrite uncommitted edits (craft/testing.md, ops/deploy.md); "
                             "commit or move those edits, and the next sync takes the changes in")


def test_a_commit_made_while_the_sync_checks_out_is_kept(pair: tuple[Machine, Machine], origin: Origin,
                                                         git: GitCli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user commits between the checkout and the branch update: the branch is not moved
    over their commit, and the sync says it will retry."""
    a, b = pair
    b.append("ops/deploy.md", "- From B.\n")
    assert b.sync().pushed
    real_checkout = pygit2.Repository.checkout_tree

    def checkout_then_user_commits(self: pygit2.Repository, *args: Any, **kwargs: Any) -> None:
        real_checkout(self, *args, **kwargs)
        git(a.root, "commit", "-q", "--allow-empty", "-m", "the user's commit, meanwhile")

    monkeypatch.setattr(pygit2.Repository, "checkout_tree", checkout_then_user_commits)
    report = a.sync()
    monkeypatch.undo()
    users = a.repo()[a.head()].peel(pygit2.Commit)
    assert users.message == "the user's commit, meanwhile\n"
    assert report.state == "skipped" and not report.pushed, report
    assert report.reason == (f"{a.root}: main moved while syncing; the work tree holds the synced files, "
                             "retrying later")
    assert origin.head() == b.head()
    again = a.sync()  # the next sync takes B's commit in on top of the user's
    assert again.ok and again.pushed, again
    assert a.repo().descendant_of(a.repo().head.target, users.id) and origin.head() == a.head()
    assert b"- From B.\n" in a.read("ops/deploy.md")


def branch_log(machine: Machine) -> list[str]:
    """The branch's reflog messages, oldest first."""
    return [entry.message for entry in machine.repo().references["refs/heads/main"].log()][::-1]


def test_the_branch_moves_say_what_they_took_in(pair: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = pair
    assert branch_log(b)[0] == "distilld: first checkout of origin/main"
    a.append("ops/deploy.md", "- From A.\n")
    assert a.sync().pushed
    assert b.sync().integration == "fast-forward"
    assert branch_log(b)[-1] == "distilld: fast-forward to origin/main"
    a.append("ops/deploy.md", "- From A again.\n")
    assert a.sync().pushed
    b.append("craft/testing.md", "- From B.\n")
    assert b.sync().integration == "merged"
    assert branch_log(b)[-1] == "distilld: merge origin/main"


def test_a_file_changed_on_both_machines_is_kept_with_where_each_side_came_from(
        pair: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = pair
    a.append("craft/testing.md", "- From A: contract tests run first.\n")
    assert a.sync().pushed
    theirs = a.head()
    b.append("craft/testing.md", "- From B: property tests for parsers.\n")
    ours_before = b.read("craft/testing.md")
    report = b.sync()
    assert report.integration == "merged" and report.state == "synced", report
    [item] = report.inbox
    agents = report.commits[0]  # B's edit, committed before the merge: the local side
    assert f"craft/testing.md: local main {agents[:12]} version kept whole as {item}" in report.resolutions
    kept = b.read(item)
    assert f"kept_from: local main {agents[:12]}\n".encode() in kept
    assert (f"note: changed on both machines; the origin/main {theirs[:12]} version stays at "
            "craft/testing.md\n").encode() in kept
    assert kept.endswith(ours_before) and b.read("craft/testing.md") == a.read("craft/testing.md")


def test_a_merge_that_would_break_the_store_names_each_failure(pair: tuple[Machine, Machine], origin: Origin) -> None:
    """A drops the kestrel topic (file and entry); B adds two more entries for it. Each side passes
    its checks; together both entries would point at a file that is gone."""
    a, b = pair
    (a.root / "projects/kestrel.md").unlink()
    a.write("SPINE.md", a.read("SPINE.md").replace(KESTREL_ENTRY.encode() + b"\n", b""))
    b.append("SPINE.md", f"- [Kestrel replays](projects/kestrel.md) {EM} replays run from the snapshot.\n"
                         f"- [Kestrel schema](projects/kestrel.md#schema) {EM} the registry's rules.\n")
    assert a.sync().pushed
    report = b.sync()
    assert report.state == "blocked" and report.integration == "blocked", report
    reason = report.reason or ""
    assert reason.startswith("the merge would break the store, so nothing was committed: [C2] "), reason
    assert reason.count("projects/kestrel.md") >= 1, reason
    assert len(b.repo()[b.head()].parents) == 1 and origin.head() == a.head()


def test_a_sync_that_commits_nothing_and_has_nothing_to_take_in_is_up_to_date(pair: tuple[Machine, Machine],
                                                                             origin: Origin) -> None:
    _, b = pair
    b.append("ops/deploy.md", "- Written a moment ago.\n")
    report = b.sync(quiet_seconds=3600)  # an edit waiting for quiet: the lock is taken, nothing comes in
    assert report.integration == "up-to-date" and report.state == "up-to-date" and not report.pushed, report


# -- a machine joining with a copy of the store ---------------------------------------------------

NOTES = [f"craft/note-{n:02d}.md" for n in range(11)]


@pytest.fixture
def remote_with_notes(tmp_path: Path, origin: Origin) -> Machine:
    a = pushed_machine(tmp_path, origin)
    for path in NOTES:
        a.write(path, f"# {path}\n")
    assert a.sync().pushed
    return a


def join(tmp_path: Path, origin: Origin, prepare: Any) -> tuple[Machine, str]:
    """A copy of the remote's files in a new folder, changed by ``prepare``, then `init` there:
    the message of its refusal."""
    b = Machine("b", tmp_path / "b", origin)
    shutil.copytree(tmp_path / "a", b.root, ignore=shutil.ignore_patterns(".git"))
    prepare(b)
    with pytest.raises(GitStoreError) as refused:
        b.init()
    return b, str(refused.value)


@pytest.mark.parametrize("count", [10, 11])
def test_joining_names_the_first_ten_differing_files_and_counts_the_rest(
        tmp_path: Path, origin: Origin, remote_with_notes: Machine, count: int) -> None:
    def edit(b: Machine) -> None:
        for path in NOTES[:count]:
            b.append(path, "- an edit made by hand\n")

    b, message = join(tmp_path, origin, edit)
    shown = ", ".join(NOTES[:10]) + (" and 1 more" if count == 11 else "")
    assert message == (f"{b.root}: cannot check out origin/main: the store already holds files that differ from "
                       f"the remote's ({shown}); move them aside (or keep what matters as inbox items), then try "
                       "again")
    assert b.repo().head_is_unborn and b.read(NOTES[0]).endswith(b"- an edit made by hand\n")


@pytest.mark.parametrize("count", [10, 11])
def test_joining_names_the_first_ten_staged_files_and_counts_the_rest(
        tmp_path: Path, origin: Origin, remote_with_notes: Machine, git: GitCli, count: int) -> None:
    def stage(b: Machine) -> None:
        git(b.root, "init", "-q", "-b", "main")
        git(b.root, "add", *NOTES[:count])

    b, message = join(tmp_path, origin, stage)
    shown = ", ".join(NOTES[:10]) + (" and 1 more" if count == 11 else "")
    assert message == (f"{b.root}: cannot check out origin/main: files are staged in this repository before its "
                       f"first commit ({shown}); commit or unstage them (`git reset`), then try again")
    assert sorted(entry.path for entry in b.repo().index) == NOTES[:count]


def test_joining_refuses_a_symlink_even_to_the_same_bytes(tmp_path: Path, origin: Origin,
                                                          remote_with_notes: Machine) -> None:
    def link(b: Machine) -> None:
        (b.root / NOTES[0]).rename(b.root / "kept.md")
        (b.root / NOTES[0]).symlink_to(b.root / "kept.md")

    b, message = join(tmp_path, origin, link)
    assert f"the store already holds files that differ from the remote's ({NOTES[0]}); " in message
    assert (b.root / NOTES[0]).is_symlink() and b.repo().head_is_unborn


def test_joining_with_identical_copies_checks_out_over_them(tmp_path: Path, origin: Origin,
                                                            remote_with_notes: Machine) -> None:
    b = Machine("b", tmp_path / "b", origin)
    shutil.copytree(tmp_path / "a", b.root, ignore=shutil.ignore_patterns(".git"))
    joined = b.init()
    assert joined.checked_out == remote_with_notes.head() and not joined.mismatches


def test_a_branch_created_while_a_machine_joins_is_not_overwritten(tmp_path: Path, origin: Origin,
                                                                    remote_with_notes: Machine, git: GitCli,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    b = Machine("b", tmp_path / "b", origin)
    b.root.mkdir()
    real_checkout = pygit2.Repository.checkout_tree

    def checkout_then_user_commits(self: pygit2.Repository, *args: Any, **kwargs: Any) -> None:
        real_checkout(self, *args, **kwargs)
        git(b.root, "commit", "-q", "--allow-empty", "-m", "the user's first commit, meanwhile")

    monkeypatch.setattr(pygit2.Repository, "checkout_tree", checkout_then_user_commits)
    # libgit2's first checkout (git's own, used when it is on PATH, is test_git_join_cli.py's).
    monkeypatch.setattr(gitcli, "git_executable", lambda: None)
    with pytest.raises(GitBusy, match=f"^{re.escape(str(b.root))}: main appeared while syncing; retrying later$"):
        b.init()
    monkeypatch.undo()
    assert b.repo().head.peel(pygit2.Commit).message == "the user's first commit, meanwhile\n"


def test_a_branch_created_between_the_check_and_the_create_is_kept(tmp_path: Path, origin: Origin,
                                                                  remote_with_notes: Machine, git: GitCli,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The narrowest race: the branch is still absent when distilld looks, and the user's commit
    # lands before distilld creates it. The create is not forced, so the user's branch stays.
    b = Machine("b", tmp_path / "b", origin)
    b.root.mkdir()
    real_checkout, real_get = pygit2.Repository.checkout_tree, References.get
    checked_out: list[bool] = []

    def checkout(self: pygit2.Repository, *args: Any, **kwargs: Any) -> None:
        real_checkout(self, *args, **kwargs)
        checked_out.append(True)

    def get_then_user_commits(self: References, key: str) -> Any:
        found = real_get(self, key)
        if checked_out and key == "refs/heads/main" and found is None:
            git(b.root, "commit", "-q", "--allow-empty", "-m", "the user's first commit, just after the check")
        return found

    monkeypatch.setattr(pygit2.Repository, "checkout_tree", checkout)
    monkeypatch.setattr(References, "get", get_then_user_commits)
    monkeypatch.setattr(gitcli, "git_executable", lambda: None)
    with pytest.raises(GitBusy, match=f"^{re.escape(str(b.root))}: main appeared while syncing; retrying later$"):
        b.init()
    monkeypatch.undo()
    assert b.repo().head.peel(pygit2.Commit).message == "the user's first commit, just after the check\n"


def test_the_first_push_of_an_agents_edit_has_nothing_to_take_in(tmp_path: Path, origin: Origin) -> None:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()  # committed, never pushed: the remote has no branch yet
    a.append("ops/deploy.md", "- From A.\n")
    report = a.sync()
    assert report.integration == "ahead" and report.state == "synced" and report.pushed, report
    assert "remote changes:" not in render_sync_text(report)


LOCAL_PATHS = ("bin/a.sh", "bin/b.sh")
LOCAL_REFUSAL = "; ".join(f"{p}: the remote tracks a machine-local path; distilld never takes one in" for p in LOCAL_PATHS)


def push_local_paths_by_hand(machine: Machine, git: GitCli) -> None:
    for path in LOCAL_PATHS:
        machine.write(path, "echo from another machine\n")
    git(machine.root, "add", "-f", *LOCAL_PATHS)
    git(machine.root, "commit", "-q", "-m", "ship two scripts")
    git(machine.root, "push", "-q", "origin", "main")


def test_a_fast_forward_bringing_machine_local_paths_names_each(pair: tuple[Machine, Machine], origin: Origin,
                                                                git: GitCli) -> None:
    a, b = pair
    push_local_paths_by_hand(b, git)
    before = a.head()
    report = a.sync()
    assert report.state == "blocked" and report.integration == "blocked", report
    assert report.reason == LOCAL_REFUSAL
    assert a.head() == before and not (a.root / "bin").exists()


def test_a_first_checkout_bringing_machine_local_paths_names_each(tmp_path: Path, origin: Origin,
                                                                  pair: tuple[Machine, Machine], git: GitCli) -> None:
    _, b = pair
    push_local_paths_by_hand(b, git)
    joining = Machine("c", tmp_path / "c", origin)
    joining.root.mkdir()
    with pytest.raises(GitStoreError) as refused:
        joining.init()
    assert str(refused.value) == f"{joining.root}: cannot check out origin/main: {LOCAL_REFUSAL}"
    assert joining.repo().head_is_unborn and not (joining.root / "bin").exists()
