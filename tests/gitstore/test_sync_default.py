"""Sync in the default (not slow) run, with real repositories in tmp_path and one bare remote:
two clones that diverge, taken in by an in-memory merge that is committed, pushed and ends with
the same bytes on both machines; and the check of what is about to be pushed, whoever committed
it. The slow scenarios are in test_git_sync.py."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import distilld.gitstore.sync as sync_module
import pytest
from distilld.actions.sync import lock_holder
from distilld.engine.lock import StoreLock
from distilld.gitstore.errors import GitBusy
from distilld.gitstore.remote import PushRejected
from distilld.gitstore.repo import StoreRepo, open_store
from distilld.gitstore.sync import SyncReport, sync_store
from distilld.gitstore.sync_state import SyncState, load_state, save_state
from distilld.store.ledger import Ledger
from gitmachines import (
    GitCli,
    Machine,
    Origin,
    assert_converged,
    joined_machine,
    ledger_events,
    lifecycle_store,
    pushed_machine,
)


@pytest.fixture
def diverged(tmp_path: Path, origin: Origin) -> tuple[Machine, Machine, str]:
    """A archives its two stale project files and pushes; B, which joined before, restores a
    file and its agent edits a tier file, all committed locally: B is one ahead, one behind.
    Returns the machines and the commit A pushed."""
    a = pushed_machine(tmp_path, origin)
    b = joined_machine(tmp_path, origin)
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
    assert pulled.commits == [] and not pulled.pushed  # a fast-forward makes no commit here
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


# -- what is about to be pushed, whoever committed it -----------------------------------------

MARKED = b"# Testing\n\n<<<<<<< ours\n- one rule\n=======\n- another rule\n>>>>>>> theirs\n"


@pytest.fixture
def pushed(tmp_path: Path, origin: Origin) -> Machine:
    """A store pushed to the remote; the tests commit on top of it with the user's own git."""
    return pushed_machine(tmp_path, origin)


def user_commit(machine: Machine, git: GitCli, subject: str, *paths: str) -> str:
    git(machine.root, "add", "-f", *paths)
    git(machine.root, "commit", "-q", "-m", subject)
    return machine.head()


def fix_hint(machine: Machine) -> str:
    return (f"fix it in {machine.root}, commit the fix (`git -C {machine.root} commit`), then sync again; "
            "distilld never rewrites your commits")


def test_a_users_commit_leaving_conflict_markers_is_not_pushed(pushed: Machine, origin: Origin,
                                                                git: GitCli) -> None:
    a = pushed
    before = origin.head()
    a.write("craft/testing.md", MARKED)
    commit = user_commit(a, git, "resolve the testing notes by hand", "craft/testing.md")
    report = a.sync()
    assert report.state == "blocked" and not report.pushed and report.ahead == 1, report
    assert report.reason == (f"not pushed: commit {commit[:7]} (resolve the testing notes by hand) leaves "
                             f"conflict markers in craft/testing.md; {fix_hint(a)}")
    assert origin.head() == before and a.head() == commit  # nothing rewritten, nothing sent
    a.write("craft/testing.md", b"# Testing\n\n- one rule\n- another rule\n")
    fixed = user_commit(a, git, "keep both rules", "craft/testing.md")
    assert a.sync().pushed and origin.head() == fixed
    assert [str(p.id) for p in a.repo()[fixed].parents] == [commit]  # the user's commits as they were


def test_the_newest_commit_of_a_path_is_the_one_named(pushed: Machine, origin: Origin, git: GitCli) -> None:
    a = pushed
    a.append("craft/testing.md", "- a clean line first\n")
    user_commit(a, git, "a clean edit", "craft/testing.md")
    a.write("craft/testing.md", MARKED)
    marked = user_commit(a, git, "then the markers", "craft/testing.md")
    reason = a.sync().reason or ""
    assert reason.startswith(f"not pushed: commit {marked[:7]} (then the markers) leaves conflict markers"), reason


def test_markers_committed_then_resolved_are_pushed(pushed: Machine, origin: Origin, git: GitCli) -> None:
    a = pushed
    a.write("craft/testing.md", MARKED)
    user_commit(a, git, "half a merge", "craft/testing.md")
    a.write("craft/testing.md", b"# Testing\n\n- one rule\n")
    resolved = user_commit(a, git, "resolved", "craft/testing.md")
    report = a.sync()
    assert report.pushed and report.state == "synced" and origin.head() == resolved, report


@pytest.mark.parametrize(("path", "why"), [
    ("bin/distill-update.sh", "a machine-local path (dotfiles, data/, local/, bin/ never leave this machine)"),
    ("craft/a\\b.md", "a path that is not contained in the store (D10)"),
    ("craft/a:b.md", "a path that is not contained in the store (D10)"),
    ("~notes.md", "a path that is not contained in the store (D10)"),
])
def test_a_path_other_machines_cannot_take_is_not_pushed(pushed: Machine, origin: Origin, git: GitCli,
                                                         path: str, why: str) -> None:
    a = pushed
    before = origin.head()
    a.write(path, "#!/bin/sh\necho hello\n")
    commit = user_commit(a, git, "add a file", path)
    report = a.sync()
    assert report.state == "blocked" and not report.pushed, report
    assert report.reason == f"not pushed: commit {commit[:7]} (add a file) adds {path}, {why}; {fix_hint(a)}"
    assert origin.head() == before


def test_a_symlink_is_not_pushed(pushed: Machine, origin: Origin, git: GitCli) -> None:
    a = pushed
    before = origin.head()
    (a.root / "craft/link.md").symlink_to("testing.md")
    commit = user_commit(a, git, "link a note", "craft/link.md")
    report = a.sync()
    assert report.reason == (f"not pushed: commit {commit[:7]} (link a note) adds craft/link.md, a symlink; "
                             f"{fix_hint(a)}")
    assert report.state == "blocked" and origin.head() == before


def test_a_path_added_then_removed_is_not_held_against_the_next(pushed: Machine, origin: Origin,
                                                                git: GitCli) -> None:
    """bin/ is refused on its own; removed again before the push it is no reason, and the
    marked file after it in path order is still found."""
    a = pushed
    a.write("bin/a.sh", "echo a\n")
    user_commit(a, git, "a script", "bin/a.sh")
    git(a.root, "rm", "-q", "--cached", "bin/a.sh")
    git(a.root, "commit", "-q", "-m", "untrack the script")
    a.write("craft/testing.md", MARKED)
    marked = user_commit(a, git, "markers", "craft/testing.md")
    reason = a.sync().reason or ""
    assert reason.startswith(f"not pushed: commit {marked[:7]} (markers) leaves conflict markers in "
                             "craft/testing.md"), reason
    a.write("craft/testing.md", b"# Testing\n\n- one rule\n")
    resolved = user_commit(a, git, "resolved", "craft/testing.md")
    assert a.sync().pushed and origin.head() == resolved


def test_the_managed_dotfiles_and_what_the_remote_holds_already_are_pushed(pushed: Machine, origin: Origin,
                                                                           git: GitCli) -> None:
    """.gitignore is a dotfile distilld itself keeps in git; and a local path the user already
    pushed by hand is the remote's history, not this push's."""
    a = pushed
    a.write("bin/by-hand.sh", "echo pushed by the user\n")
    user_commit(a, git, "a script, pushed by hand", "bin/by-hand.sh")
    git(a.root, "push", "-q", "origin", "main")
    a.append(".gitignore", "*.swp\n")
    commit = user_commit(a, git, "ignore swap files", ".gitignore")
    report = a.sync()
    assert report.pushed and report.state == "synced" and origin.head() == commit, report


def test_a_push_rejected_three_times_in_a_row_gives_up_and_backs_off(pushed: Machine, origin: Origin,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rejection is followed by a fetch and a new try, three rounds at most; then the sync
    fails with the commit kept locally, and the next scheduled run waits."""
    a = pushed
    before = origin.head()
    a.append("ops/deploy.md", "- Deploys wait for a green canary.\n")
    rounds = {"fetch": 0, "push": 0}
    real_fetch = sync_module.fetch

    def counted_fetch(store: StoreRepo, credentials: object = None) -> None:
        rounds["fetch"] += 1
        real_fetch(store)

    def rejected_push(store: StoreRepo, credentials: object = None) -> None:
        rounds["push"] += 1
        raise PushRejected(f"push to {origin.url} rejected: the remote moved on")

    monkeypatch.setattr(sync_module, "fetch", counted_fetch)
    monkeypatch.setattr(sync_module, "push", rejected_push)
    started = time.time()
    report = a.sync()
    assert rounds == {"fetch": 3, "push": 3}
    assert report.state == "push-failed" and not report.pushed and report.ahead == 1, report
    assert report.reason == "the push was rejected 3 times in a row"
    assert report.notes.count(f"push to {origin.url} rejected: the remote moved on; fetching and trying again") == 3
    assert "1 commit(s) wait locally and go with the next push" in report.notes
    state = load_state(open_store(a.root))
    assert state.failures == 1 and state.retry_at > started and state.last_error == report.reason
    until = datetime.fromtimestamp(state.retry_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert report.retry_at == until
    waiting = a.sync(scheduled=True)
    assert waiting.state == "skipped" and rounds["push"] == 3 and waiting.retry_at == until
    assert waiting.reason == (f"backing off after 1 failure(s) until {until} (last: the push was rejected 3 "
                              "times in a row); `distilld sync` retries now")
    again = a.sync()  # by hand, whatever the backoff: rejected three times more, a second failure
    assert again.state == "push-failed" and rounds["push"] == 6
    assert load_state(open_store(a.root)).failures == 2
    assert (a.sync(scheduled=True).reason or "").startswith("backing off after 2 failure(s) until ")
    assert origin.head() == before
    monkeypatch.undo()
    assert a.sync().pushed and origin.head() == a.head()
    assert load_state(open_store(a.root)).failures == 0


def test_an_agents_file_left_with_conflict_markers_is_said_and_not_committed(pushed: Machine,
                                                                             origin: Origin) -> None:
    a = pushed
    a.write("craft/testing.md", MARKED)
    a.append("ops/deploy.md", "- Deploys stop at 17:00.\n")
    report = a.sync()
    assert report.state == "synced" and report.pushed and len(report.commits) == 1, report
    assert report.integration == "ahead"  # the remote had nothing new: our commit is ahead of it
    refused = ("craft/testing.md: not committed: craft/testing.md holds git conflict markers; resolve them by "
               "hand, then distilld commits it")
    assert report.notes == [refused]
    committed = a.repo()[origin.head()].tree
    assert b"Deploys stop at 17:00" in (committed / "ops/deploy.md").data
    assert b"<<<<<<<" not in (committed / "craft/testing.md").data
    assert a.read("craft/testing.md") == MARKED  # left as it is, for a person to resolve


def test_a_store_still_being_written_waits_for_quiet_and_says_so(pushed: Machine, origin: Origin) -> None:
    a = pushed
    before = origin.head()
    a.append("ops/deploy.md", "- Written a moment ago.\n")
    report = a.sync(quiet_seconds=3600)
    assert report.commits == [] and not report.pushed and origin.head() == before, report
    assert report.state == "up-to-date" and report.integration == "up-to-date", report  # nothing done yet
    assert len(report.notes) == 1 and report.notes[0].endswith("s ago; waiting for 3600 s of quiet"), report.notes
    assert report.notes[0].startswith("the store changed ")
    assert a.sync().pushed  # quiet not asked for: committed and pushed


def sync_while_a_distillation_runs(machine: Machine) -> SyncReport:
    """A sync while a distiller holds the store's .lock."""
    distiller = StoreLock(machine.root, "alpha")
    distiller.acquire()
    try:
        return machine.sync()
    finally:
        distiller.release()


@pytest.mark.parametrize("remote", ["no branch yet", "behind us", "at our commit"])
def test_a_sync_with_nothing_to_take_in_needs_no_lock(tmp_path: Path, origin: Origin, git: GitCli,
                                                      remote: str) -> None:
    """Nothing to commit and nothing to take in: the sync takes no .lock, so a distillation
    under way does not hold back what is already committed."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    if remote != "no branch yet":
        assert a.sync().pushed
    if remote == "behind us":
        a.append("ops/deploy.md", "- Committed by the user.\n")
        user_commit(a, git, "a rule", "ops/deploy.md")
    report = sync_while_a_distillation_runs(a)
    assert report.reason is None and (report.ahead, report.behind) == (0, 0), report
    assert origin.head() == a.head()
    if remote == "at our commit":
        assert report.state == "up-to-date" and not report.pushed, report
    else:
        assert report.state == "synced" and report.pushed, report


def test_the_first_push_checks_the_users_own_first_commit(tmp_path: Path, origin: Origin, git: GitCli) -> None:
    """An adopted repository whose root commit (made by the user, before distilld) left
    conflict markers: nothing has been pushed yet, and that commit is checked too."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    git(a.root, "init", "-q", "-b", "main")
    a.write("craft/testing.md", MARKED)
    root_commit = user_commit(a, git, "my first commit", ".")
    a.init()
    report = a.sync()
    assert report.state == "blocked" and not report.pushed and origin.head() is None, report
    assert (report.reason or "").startswith(f"not pushed: commit {root_commit[:7]} (my first commit) leaves "
                                            "conflict markers in craft/testing.md"), report.reason


def sync_while_the_other_pushes_first(b: Machine, a: Machine,
                                      monkeypatch: pytest.MonkeyPatch) -> tuple[SyncReport, int]:
    """B syncs; just before B's first push, A pushes a new commit, so that push is rejected and
    B fetches and merges again. B's report, and how many pushes B tried."""
    real_push = sync_module.push
    pushes = {"n": 0}

    def a_pushes_first(store: StoreRepo, credentials: object = None) -> None:
        if store.root == b.root.resolve():
            pushes["n"] += 1
            if pushes["n"] == 1:
                a.append("ops/deploy.md", "- From A, while B was pushing.\n")
                assert a.sync().pushed
        real_push(store, credentials)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "push", a_pushes_first)
    report = b.sync()
    monkeypatch.undo()
    return report, pushes["n"]


def test_what_a_merge_kept_is_reported_after_a_push_rejected_and_a_second_merge(
        diverged: tuple[Machine, Machine, str], origin: Origin, monkeypatch: pytest.MonkeyPatch) -> None:
    """B merges A's commit, keeping its own version of a file both edited in the inbox; A pushes
    again before B's push lands, so B fetches and merges a second time. The report still
    names the first merge's inbox item and decisions."""
    a, b, _ = diverged
    a.append("craft/testing.md", "- From A: contract tests run first.\n")
    assert a.sync().pushed
    report, pushes = sync_while_the_other_pushes_first(b, a, monkeypatch)
    assert report.ok and report.pushed and pushes == 2, report
    assert any("rejected" in note and "fetching and trying again" in note for note in report.notes), report.notes
    [item] = report.inbox
    assert "-sync-conflict-craft-testing.md" in item and (b.root / item).exists()
    assert any(r.startswith("craft/testing.md: local main ") and r.endswith(f" version kept whole as {item}")
               for r in report.resolutions), report.resolutions
    assert len(report.commits) == 3  # B's agent edit, then one merge per round
    assert b"From A, while B was pushing" in b.read("ops/deploy.md") and origin.head() == b.head()


def test_a_push_that_fails_for_another_reason_backs_off(pushed: Machine, origin: Origin,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The remote answers the fetch, then is gone by the push: a failure, not a rejection to retry."""
    a = pushed
    away = origin.path.with_name("origin-away.git")
    real_fetch = sync_module.fetch

    def fetch_then_the_remote_goes(store: StoreRepo, credentials: object = None) -> None:
        real_fetch(store)
        origin.path.rename(away)

    a.append("ops/deploy.md", "- Deploys wait for a green canary.\n")
    monkeypatch.setattr(sync_module, "fetch", fetch_then_the_remote_goes)
    report = a.sync()
    monkeypatch.undo()
    assert report.state == "push-failed" and not report.pushed and report.ahead == 1, report
    assert (report.reason or "").startswith(f"push to {origin.url} failed: "), report.reason
    assert not any("trying again" in note for note in report.notes)
    assert load_state(open_store(a.root)).failures == 1
    away.rename(origin.path)
    assert a.sync().pushed and origin.head() == a.head()


def test_a_commit_without_a_message_is_named_by_its_id(pushed: Machine, origin: Origin, git: GitCli) -> None:
    a = pushed
    (a.root / "craft/link.md").symlink_to("testing.md")
    git(a.root, "add", "craft/link.md")
    git(a.root, "commit", "-q", "--allow-empty-message", "-m", "")
    report = a.sync()
    assert report.reason == (f"not pushed: commit {a.head()[:7]} () adds craft/link.md, a symlink; "
                             f"{fix_hint(a)}"), report.reason


def test_sync_store_called_with_its_defaults_is_a_manual_sync_that_commits_at_once(pushed: Machine,
                                                                                  origin: Origin) -> None:
    """The defaults (as the benchmarks call it): no backoff honoured, no quiet period awaited,
    agents' changes committed."""
    a = pushed
    store = open_store(a.root)
    save_state(store, SyncState(failures=3, retry_at=time.time() + 3600, last_error="offline"))
    a.append("ops/deploy.md", "- Written just now.\n")
    report = sync_store(store, a.clock, a.identity, lock_holder(a.root, a.policy), a.policy.limits)
    assert report.state == "synced" and report.pushed and len(report.commits) == 1, report
    assert origin.head() == a.head() and load_state(open_store(a.root)).failures == 0


# -- what the mutation run of gitstore/sync.py asked for ----------------------------------------

def test_a_held_lock_still_pushes_what_is_already_committed(pushed: Machine, origin: Origin, git: GitCli) -> None:
    """A distillation holds the .lock: the agent's new edit waits for it, but the user's own
    commit is pushed now, and the status says the sync was skipped, not that all was done."""
    a = pushed
    a.append("ops/deploy.md", "- Committed by the user.\n")
    users = user_commit(a, git, "a deploy rule", "ops/deploy.md")
    a.append("craft/testing.md", "- Written by an agent during the distillation.\n")
    report = sync_while_a_distillation_runs(a)
    assert report.state == "skipped" and not report.ok and ".lock is held" in (report.reason or ""), report
    assert report.pushed and origin.head() == users == a.head() and report.commits == [], report
    assert (report.ahead, report.behind) == (0, 0) and report.notes == [], report
    assert b"Written by an agent" not in (a.repo()[users].tree / "craft/testing.md").data
    later = a.sync()  # the lock released: the agent's edit is committed and pushed
    assert later.state == "synced" and later.pushed and len(later.commits) == 1, later
    assert origin.head() == later.commits[0] == a.head()


def test_a_push_accepted_on_the_last_round_is_a_sync(pushed: Machine, origin: Origin,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Rejected twice, accepted the third time: synced, with both rejections said, and no
    failure counted towards the backoff."""
    a = pushed
    a.append("ops/deploy.md", "- Deploys wait for a green canary.\n")
    real_push = sync_module.push
    pushes = {"n": 0}

    def rejected_twice(store: StoreRepo, credentials: object = None) -> None:
        pushes["n"] += 1
        if pushes["n"] <= 2:
            raise PushRejected(f"push to {origin.url} rejected: the remote moved on")
        real_push(store, credentials)  # type: ignore[arg-type]

    monkeypatch.setattr(sync_module, "push", rejected_twice)
    report = a.sync()
    monkeypatch.undo()
    assert pushes["n"] == 3 and report.state == "synced" and report.pushed and report.ok, report
    assert report.notes == [f"push to {origin.url} rejected: the remote moved on; fetching and trying again"] * 2
    assert origin.head() == a.head() == report.commits[0] and (report.ahead, report.behind) == (0, 0)
    state = load_state(open_store(a.root))
    assert state.failures == 0 and state.retry_at == 0 and state.last_success is not None


def test_a_scheduled_sync_runs_once_its_backoff_time_has_come(pushed: Machine, origin: Origin) -> None:
    """The backoff holds a scheduled sync until retry_at, and not a moment longer."""
    a = pushed
    store = open_store(a.root)
    retry_at = time.time() + 3600
    save_state(store, SyncState(failures=2, retry_at=retry_at, last_error="offline"))
    a.append("ops/deploy.md", "- Written while the remote was away.\n")

    def scheduled_at(wall: float) -> SyncReport:
        return sync_store(open_store(a.root), a.clock, a.identity, lock_holder(a.root, a.policy), a.policy.limits,
                          scheduled=True, wall=lambda: wall)

    early = scheduled_at(retry_at - 1)
    assert early.state == "skipped" and not early.pushed and early.commits == [], early
    due = scheduled_at(retry_at)
    assert due.state == "synced" and due.pushed and origin.head() == a.head(), due
    assert load_state(open_store(a.root)) == SyncState(last_success=retry_at)



def test_every_round_s_byte_mismatches_are_reported(diverged: tuple[Machine, Machine, str], origin: Origin,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """B's own git converts line endings (a line of its .git/info/attributes), so each file a
    pull writes differs from its commit. A's second push lands while B pushes: B merges twice,
    and the status names the files of both merges, and counts them all (it said 1, the last
    merge's, before)."""
    a, b, _ = diverged
    info = b.root / ".git" / "info" / "attributes"
    info.write_text(info.read_text() + "* text eol=crlf\n")
    report, pushes = sync_while_the_other_pushes_first(b, a, monkeypatch)
    assert report.state == "mismatch" and not report.ok and pushes == 2, report
    assert report.pushed and origin.head() == b.head()  # the commits are right; B's work tree is not
    first_merge = ["CATALOG.md", "SPINE.md", "archive/LEDGER.md", "archive/projects/old-a.md",
                   "archive/projects/old-b.md"]
    assert {m.split(":")[0] for m in report.mismatches} == {*first_merge, "ops/deploy.md"}, report.mismatches
    # Each archived file differs twice (from its blob, from its ledger checksum): six files.
    assert report.reason == "6 file(s) differ from what was pulled: BYTE-EXACTNESS FAILED"


def test_a_store_with_nothing_committed_yet_waiting_for_quiet_is_up_to_date(tmp_path: Path, origin: Origin) -> None:
    """`distilld init` stopped by a distillation before the first commit, and an empty remote:
    the next sync, still waiting for quiet, has done nothing and says so; once the store is
    quiet, everything is committed and pushed."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    distiller = StoreLock(a.root, "alpha")
    distiller.acquire()
    try:
        with pytest.raises(GitBusy):
            a.init()
    finally:
        distiller.release()
    assert a.repo().head_is_unborn
    waiting = a.sync(quiet_seconds=3600)
    assert waiting.state == "up-to-date" and waiting.integration == "no-remote-branch", waiting
    assert waiting.commits == [] and not waiting.pushed and origin.head() is None, waiting
    assert len(waiting.notes) == 1 and waiting.notes[0].endswith("waiting for 3600 s of quiet"), waiting.notes
    done = a.sync()
    assert done.state == "synced" and done.pushed and origin.head() == a.head() == done.commits[0], done


def test_an_offline_sync_only_commits_what_agents_wrote(tmp_path: Path, origin: Origin) -> None:
    """B fetched A's commit while a distillation held the .lock, so it was not taken in. With
    the remote gone, B's sync commits its agent's edit and takes in nothing from that old
    fetch: the work tree changes only when a sync reaches the remote."""
    a = pushed_machine(tmp_path, origin)
    b = joined_machine(tmp_path, origin)
    a.append("ops/deploy.md", "- From A: deploys wait for a green canary.\n")
    assert a.sync().pushed
    assert sync_while_a_distillation_runs(b).state == "skipped"
    away = origin.path.with_name("origin-away.git")
    origin.path.rename(away)
    b.append("craft/testing.md", "- From B: property tests for parsers.\n")
    report = b.sync()
    assert report.state == "offline" and report.integration is None and not report.pushed, report
    assert len(report.commits) == 1 and (report.ahead, report.behind) == (1, 1), report
    assert b"From A" not in b.read("ops/deploy.md")
    away.rename(origin.path)
    back = b.sync()
    assert back.integration == "merged" and back.pushed and back.state == "synced", back
    assert a.sync().integration == "fast-forward"
    assert_converged(origin, a, b)
