"""The sync's merge path in the default (not slow) run: real repositories in tmp_path, one bare
remote and two clones that diverge, taken in by an in-memory merge that is committed, pushed
and ends with the same bytes on both machines. The slow scenarios are in test_git_sync.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitmachines import Machine, Origin, assert_converged, ledger_events, lifecycle_store

from distilld.store.ledger import Ledger


@pytest.fixture
def diverged(tmp_path: Path, origin: Origin) -> tuple[Machine, Machine, str]:
    """A archives its two stale project files and pushes; B, which joined before, restores a
    file and its agent edits a tier file, all committed locally: B is one ahead, one behind.
    Returns the machines and the commit A pushed."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    a.later(180)
    b.later(30)
    assert a.gc()[0].ok
    assert a.sync().pushed
    assert b.restore("projects/marlin.md")[0].ok
    b.append("craft/testing.md", "- From B: property tests for parsers.\n")
    return a, b, a.head()


def test_diverged_clones_are_merged_pushed_and_end_identical(diverged: tuple[Machine, Machine, str],
                                                             origin: Origin) -> None:
    a, b, pushed_by_a = diverged
    local_before = b.head()
    report = b.sync()
    assert report.integration == "merged", report
    assert report.state == "synced" and report.ok and report.pushed, report
    assert (report.ahead, report.behind) == (0, 0) and not report.mismatches
    # The agent's edit is committed first, then the merge of that with A's commit, pushed.
    agent_commit, merge_commit = report.commits
    assert merge_commit == b.head() == origin.head()
    parents = [str(p.id) for p in b.repo()[merge_commit].parents]
    assert parents == [agent_commit, pushed_by_a]
    assert [str(p.id) for p in b.repo()[agent_commit].parents] == [local_before]
    assert b"From B: property tests" in b.read("craft/testing.md")
    assert not (b.root / "projects/old-a.md").exists() and (b.root / "archive/projects/old-a.md").exists()

    pulled = a.sync()
    assert pulled.integration == "fast-forward" and pulled.state == "synced" and not pulled.mismatches
    files = assert_converged(origin, a, b)
    # Every ledger line of both machines, interleaved by stamp: B's restore (12:30) comes
    # before A's two archive lines (15:00).
    events = ledger_events(files["archive/LEDGER.md"])
    assert [e.split(" ")[2] for e in events] == ["archive", "restore", "archive", "archive"], events
    state = Ledger(files["archive/LEDGER.md"]).last_event_by_path
    assert state["projects/marlin.md"].is_restore and state["projects/old-a.md"].is_archive
    assert "projects/marlin.md" in files and "archive/projects/old-b.md" in files


def test_a_second_sync_after_the_merge_has_nothing_to_do(diverged: tuple[Machine, Machine, str]) -> None:
    _, b, _ = diverged
    assert b.sync().integration == "merged"
    again = b.sync()
    assert again.state == "up-to-date" and again.integration is None, again  # nothing to take in
    assert not again.commits and not again.pushed and (again.ahead, again.behind) == (0, 0)
