"""Taking in the fetched branch (gitstore/integrate.py), with real repositories in tmp_path and
a bare remote: what it refuses, word for word, and that the branch only ever moves from the
commit it started from, so a commit made meanwhile is never lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2
import pytest
from gitmachines import GitCli, Machine, Origin, lifecycle_store


@pytest.fixture
def pair(tmp_path: Path, origin: Origin) -> tuple[Machine, Machine]:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    return a, b


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
