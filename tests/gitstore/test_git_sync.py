"""Two machines, one bare remote: every scenario ends with identical bytes on both, a store that
passes C1-C3, no conflict markers and nothing lost."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

import distilld.gitstore.sync as sync_module
import pytest
from distilld.gitstore.repo import open_store
from distilld.gitstore.sync_state import load_state
from distilld.store.ledger import Ledger
from distilld.store.stamps import stamp_later
from builders import EM, KESTREL_ENTRY
from gitmachines import (
    GitCli,
    Machine,
    Origin,
    assert_converged,
    ledger_events,
    lifecycle_store,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def machines(tmp_path: Path, origin: Origin) -> tuple[Machine, Machine]:
    """Machine A holds a store with two stale project files and pushes it; B joins from the remote."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    joined = b.init()
    assert joined.checked_out == a.head() and not joined.mismatches
    assert_converged(origin, a, b)
    return a, b


def sync_all(*machines: Machine) -> None:
    """Sync each machine in turn, twice round, so everyone ends at the remote's commit."""
    for _ in range(2):
        for machine in machines:
            report = machine.sync()
            assert report.ok, (machine.name, report)


def test_a_second_machine_joins_with_identical_bytes(machines: tuple[Machine, Machine], origin: Origin) -> None:
    _, b = machines
    report = b.sync()
    assert report.state == "up-to-date" and not report.commits and not report.pushed


def test_agent_writes_on_one_machine_reach_the_other(machines: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = machines
    a.append("craft/testing.md", "- [PRINCIPLE] Snapshots are reviewed like code.\n")
    a.write("inbox/20261130T120000Z-ab12-snapshots.md", "---\norigin: user-explicit\n---\nReview snapshots.\n")
    report = a.sync()
    assert report.state == "synced" and len(report.commits) == 1 and report.pushed
    message = a.repo()[a.repo().head.target].message
    assert "1 added, 1 changed, 0 removed" in message
    assert "Distilld-Operation: agent-changes" in message
    pulled = b.sync()
    assert pulled.integration == "fast-forward" and not pulled.mismatches
    assert_converged(origin, a, b)


def test_concurrent_lifecycle_passes_on_both_machines(machines: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = machines
    a.later(60)
    b.later(120)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [pool.submit(machine.gc) for machine in (a, b)]
        results = [run.result() for run in runs]
    for report, record in results:
        assert report.ok and report.outcome is not None
        assert sorted(report.outcome.moved) == ["projects/old-a.md", "projects/old-b.md"]
        assert record.result is not None and record.result.commit is not None
    sync_all(a, b)
    files = assert_converged(origin, a, b)
    events = ledger_events(files["archive/LEDGER.md"])
    # Both machines' archive lines are kept, in stamp order; the last per path decides.
    assert len(events) == 5
    ledger = Ledger(files["archive/LEDGER.md"])
    assert ledger.last_event_by_path["projects/old-a.md"].is_archive


@pytest.mark.parametrize("first", ["archiver", "restorer"])
def test_an_archive_on_one_machine_and_a_restore_on_the_other(machines: tuple[Machine, Machine], origin: Origin,
                                                                first: str) -> None:
    a, b = machines
    a.later(120)  # the archive is stamped after the restore, whichever machine syncs first
    b.later(60)
    report, record = a.gc()
    assert report.ok and record.result and record.result.commit
    outcome, record = b.restore("projects/marlin.md")
    assert outcome.ok and outcome.restored == ["projects/marlin.md"]
    assert record.result and record.result.commit
    order = (a, b) if first == "archiver" else (b, a)
    sync_all(*order)
    files = assert_converged(origin, a, b)
    ledger = Ledger(files["archive/LEDGER.md"])
    state = ledger.last_event_by_path
    assert state["projects/old-a.md"].is_archive and state["projects/old-b.md"].is_archive
    assert state["projects/marlin.md"].is_restore
    assert "projects/marlin.md" in files and "archive/projects/marlin.md" not in files
    assert "archive/projects/old-a.md" in files and "projects/old-a.md" not in files
    stamps = [line.stamp or "" for line in ledger.events]
    assert all(not stamp_later(prev, cur) for prev, cur in pairwise(stamps)), stamps
    spine = files["SPINE.md"].decode()
    assert "(projects/marlin.md)" in spine and "(projects/old-a.md)" not in spine


def test_both_machines_edit_the_same_tier_file(machines: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = machines
    a.append("craft/testing.md", "- From A: contract tests run first.\n")
    b.append("craft/testing.md", "- From B: property tests for parsers.\n")
    local_version = b.read("craft/testing.md")
    assert a.sync().pushed
    merged = b.sync()
    assert merged.state == "synced" and merged.integration == "merged", merged
    assert len(merged.inbox) == 1
    item = merged.inbox[0]
    assert item.startswith("inbox/") and "-sync-conflict-craft-testing.md" in item
    sync_all(a, b)
    files = assert_converged(origin, a, b)
    assert files["craft/testing.md"] == a.read("craft/testing.md")
    assert b"From A: contract tests" in files["craft/testing.md"]
    kept = files[item]
    assert kept.endswith(local_version)  # the local version, whole
    assert b"origin: sync-conflict\n" in kept and b"conflict_path: craft/testing.md\n" in kept


@pytest.mark.parametrize("first", ["a", "b"])
def test_both_machines_append_to_the_ledger(machines: tuple[Machine, Machine], origin: Origin, first: str) -> None:
    """B's restore is stamped before A's archive: the merged ledger interleaves by stamp
    whichever side merges."""
    a, b = machines
    a.later(180)
    b.later(30)
    assert a.gc()[0].ok
    assert b.restore("projects/marlin.md")[0].ok
    sync_all(*((a, b) if first == "a" else (b, a)))
    files = assert_converged(origin, a, b)
    events = ledger_events(files["archive/LEDGER.md"])
    assert [e.split(" ")[2] for e in events] == ["archive", "restore", "archive", "archive"]
    assert "2026-11-30T12:30:00Z restore" in events[1]
    assert all("2026-11-30T15:00:00Z archive" in e for e in events[2:])


def test_offline_remote_queues_then_pushes(machines: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = machines
    offline = origin.path.with_name("origin-away.git")
    origin.path.rename(offline)
    a.append("ops/deploy.md", "- Roll back within five minutes.\n")
    report = a.sync()
    assert report.state == "offline" and report.ahead == 1 and len(report.commits) == 1
    assert report.retry_at is not None
    state = load_state(open_store(a.root))
    assert state.failures == 1 and state.retry_at > 0
    offline.rename(origin.path)
    waiting = a.sync(scheduled=True)
    assert waiting.state == "skipped" and "backing off" in (waiting.reason or "")
    manual = a.sync()
    assert manual.pushed and manual.state == "synced" and manual.commits == []  # pushed though nothing new
    assert load_state(open_store(a.root)).failures == 0
    sync_all(a, b)
    assert_converged(origin, a, b)


def test_a_rejected_push_fetches_merges_and_pushes_again(machines: tuple[Machine, Machine], origin: Origin,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = machines
    b.append("profile/rowan.md", "- Prefers tables for comparisons.\n")
    assert b.sync().pushed
    a.append("ops/deploy.md", "- Announce deploys in the channel.\n")
    real_fetch = sync_module.fetch
    calls = {"n": 0}

    def late_fetch(store: object, credentials: object = None) -> None:
        calls["n"] += 1
        if calls["n"] > 1:  # the first fetch "misses" B's push, as if it landed just after
            real_fetch(store, credentials)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "fetch", late_fetch)
    report = a.sync()
    assert report.ok and report.pushed and report.integration == "merged", report
    assert any("rejected" in note for note in report.notes)
    monkeypatch.undo()
    sync_all(a, b)
    assert_converged(origin, a, b)


def test_a_remote_that_refuses_the_push_backs_off(machines: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = machines
    lock = origin.path / "refs" / "heads" / "main.lock"
    lock.write_text("held by the server\n")
    a.append("ops/deploy.md", "- Freeze deploys on Fridays.\n")
    report = a.sync()
    assert report.state == "push-failed" and report.ahead == 1 and not report.pushed
    assert a.sync(scheduled=True).state == "skipped"
    lock.unlink()
    assert a.sync().pushed
    sync_all(a, b)
    assert_converged(origin, a, b)


def test_held_index_lock_skips_and_retries(machines: tuple[Machine, Machine], origin: Origin) -> None:
    a, b = machines
    index_lock = a.root / ".git" / "index.lock"
    index_lock.write_bytes(b"")
    a.append("ops/deploy.md", "- Canary for an hour on Mondays.\n")
    report = a.sync()
    assert report.state == "skipped" and "index.lock" in (report.reason or "")
    assert index_lock.exists()  # never removed by distilld
    index_lock.unlink()
    assert a.sync().pushed
    sync_all(a, b)
    assert_converged(origin, a, b)


def test_the_user_mid_rebase_is_left_alone(machines: tuple[Machine, Machine], origin: Origin, git: GitCli) -> None:
    a, b = machines
    a.append("ops/deploy.md", "- One more rule.\n")
    assert a.sync().pushed
    stop = {"GIT_SEQUENCE_EDITOR": "sed -i '1s/^/break\\n/'"}
    git(a.root, "rebase", "-i", "HEAD~1", extra_env=stop)
    head_before = (a.root / ".git" / "HEAD").read_bytes()
    b.append("craft/testing.md", "- B wrote this meanwhile.\n")
    assert b.sync().pushed
    report = a.sync()
    assert report.state == "skipped" and "rebase" in (report.reason or ""), report
    assert (a.root / ".git" / "HEAD").read_bytes() == head_before
    git(a.root, "rebase", "--continue")
    sync_all(a, b)
    assert_converged(origin, a, b)


@pytest.mark.parametrize("where", ["detached", "other-branch"])
def test_detached_head_or_another_branch_is_skipped(machines: tuple[Machine, Machine], origin: Origin,
                                                    git: GitCli, where: str) -> None:
    a, b = machines
    if where == "detached":
        git(a.root, "checkout", "--detach")
    else:
        git(a.root, "switch", "-c", "experiment")
    a.append("ops/deploy.md", "- Written while the user looks elsewhere.\n")
    report = a.sync()
    assert report.state == "skipped"
    assert ("detached" if where == "detached" else "experiment") in (report.reason or "")
    git(a.root, "switch", "main")
    sync_all(a, b)
    assert_converged(origin, a, b)


def test_the_users_staged_change_is_left_exactly_as_it_was(machines: tuple[Machine, Machine], origin: Origin,
                                                           git: GitCli) -> None:
    a, b = machines
    a.append("feedback/preferences.md", "- Staged by the user, for their own commit.\n")
    git(a.root, "add", "feedback/preferences.md")
    staged = git(a.root, "diff", "--cached").stdout
    staged_entry = git(a.root, "ls-files", "-s", "feedback/preferences.md").stdout
    a.append("ops/deploy.md", "- An agent's change on A.\n")
    b.append("craft/testing.md", "- An agent's change on B.\n")
    assert b.sync().pushed
    report = a.sync()
    assert report.ok and report.integration == "merged", report
    assert any("feedback/preferences.md: staged by you" in note for note in report.notes)
    assert git(a.root, "diff", "--cached").stdout == staged
    assert git(a.root, "ls-files", "-s", "feedback/preferences.md").stdout == staged_entry
    for commit in a.repo().walk(a.repo().head.target):
        assert b"Staged by the user" not in (commit.tree / "feedback/preferences.md").data
    git(a.root, "commit", "-m", "my own note")
    sync_all(a, b)
    assert_converged(origin, a, b)


def test_a_merge_that_breaks_the_store_is_blocked(machines: tuple[Machine, Machine], origin: Origin) -> None:
    """A drops the kestrel topic (its file and its entry); B adds a second entry for it. Each side
    passes its checks; together the SPINE would point at a file that is gone."""
    a, b = machines
    (a.root / "projects/kestrel.md").unlink()
    a.write("SPINE.md", a.read("SPINE.md").replace(KESTREL_ENTRY.encode() + b"\n", b""))
    b.append("SPINE.md", f"- [Kestrel replays](projects/kestrel.md) {EM} replays run from the snapshot.\n")
    assert a.sync().pushed
    report = b.sync()
    assert report.state == "blocked" and "SPINE pointer to missing file: projects/kestrel.md" in (report.reason or ""), \
        report
    # B's own change is committed locally; no merge was made, nothing was pushed.
    assert report.commits == [b.head()] and not report.pushed
    assert len(b.repo()[b.head()].parents) == 1 and origin.head() == a.head()
    assert b.sync().state == "blocked"  # and it stays blocked, reported, until someone acts


def test_a_remote_tracking_a_machine_local_path_is_blocked(machines: tuple[Machine, Machine], origin: Origin,
                                                           git: GitCli) -> None:
    a, b = machines
    b.write("bin/distill-update.sh", "#!/bin/sh\necho from another machine\n")
    git(b.root, "add", "-f", "bin/distill-update.sh")
    git(b.root, "commit", "-m", "ship a script")
    git(b.root, "push", "origin", "main")
    before = a.head()
    report = a.sync()
    assert report.state == "blocked" and "bin/distill-update.sh" in (report.reason or "")
    assert a.head() == before and not (a.root / "bin").exists()


def test_a_remote_that_drops_the_byte_exact_attributes_is_blocked(machines: tuple[Machine, Machine],
                                                                  origin: Origin, git: GitCli) -> None:
    a, b = machines
    b.write(".gitattributes", "* text=auto\n")
    git(b.root, "commit", "-q", "-am", "normalise line endings")
    git(b.root, "push", "-q", "origin", "main")
    before = a.head()
    report = a.sync()
    assert report.state == "blocked" and ".gitattributes" in (report.reason or "")
    assert a.head() == before and b"-text" in a.read(".gitattributes")
