"""The follow and reconcile jobs, and the commit of what agents wrote.

* follow: once the store is quiet and no distiller holds the lock, the catalog rebuilt if
  stale, the invariants checked, budgets measured, the agents' changes committed.
* reconcile: the same pass on the schedule, whatever the watcher saw; it reads the store by
  content, so a missed event cannot leave a change unchecked or uncommitted.

Every job's result lands in status.json; things done or waited for get one line in the
activity log.
"""

from __future__ import annotations

from typing import Any

from ..actions.follow import FollowReport, run_follow
from ..engine.lock import LockState, LockStateKind, StoreLock, takeover_words
from ..engine.recovery import interrupted_passes
from ..errors import LockHeld
from ..log import get_logger, utc_stamp
from ..store.budget import BudgetReport
from ..store.paths import CATALOG
from .jobs import JobEnv, PassResult, listing, plural, release_lock
from .store_git import CommitOutcome

log = get_logger("distilld.jobs")


def _budget_status(report: BudgetReport) -> tuple[dict[str, Any], dict[str, str]]:
    limits = report.limits
    status = {
        "spine_lines": {"value": report.spine_lines, "cap": limits.spine.max_lines,
                        "margin": limits.spine.max_lines - report.spine_lines},
        "spine_bytes": {"value": report.spine_bytes, "cap": limits.spine.max_bytes,
                        "margin": limits.spine.max_bytes - report.spine_bytes},
        "entries_over": len(report.entries_over),
        "files_over": len(report.files_over),
        "stale_projects": len(report.stale_projects),
        "tokens_estimate": report.tokens_estimate,
        "debt": report.debt,
    }
    breaches: dict[str, str] = {}
    if report.spine_lines > limits.spine.max_lines:
        breaches["spine-lines"] = f"SPINE.md has {report.spine_lines} lines (cap {limits.spine.max_lines})"
    if report.spine_bytes > limits.spine.max_bytes:
        breaches["spine-bytes"] = f"SPINE.md is {report.spine_bytes} bytes (cap {limits.spine.max_bytes})"
    for entry in report.entries_over:
        breaches[f"entry:{entry.start}"] = (f"SPINE entry at line {entry.line} is {entry.bytes} bytes "
                                           f"(cap {limits.spine.entry_max_bytes})")
    for over in report.files_over:
        breaches[f"file:{over.path}"] = (f"{over.path} is {over.lines} lines, {over.bytes} bytes "
                                         f"(caps {limits.tier_file.max_lines} lines, {limits.tier_file.max_bytes} bytes)")
    status["breaches"] = len(breaches)
    return status, breaches


def refresh_search_index(env: JobEnv) -> None:
    """Keep `find`'s index (search/, in the state folder) current from the watcher's changes,
    in increments: only the files whose stamp moved are read. Only where an index exists (a
    store nobody searches gets none); commands and `serve` update it themselves anyway, so a
    failure here is logged and changes nothing else."""
    from ..search.session import SearchIndex, index_path

    try:
        if index_path(env.store.resolve()).is_file():
            index = SearchIndex(env.store)
            try:
                index.current()
            finally:
                index.close()
    except Exception:
        log.exception("search_index.update_failed")


def _report_checks(env: JobEnv, report: FollowReport) -> None:
    failing = {f.message for f in report.failures}
    new = sorted(failing - env._failures)
    if new:
        env.activity.write(f"check: the store fails {plural(len(failing), 'invariant check')}: {listing(new)}"
                           " (`distilld check` lists them)")
    elif env._failures and not failing:
        env.activity.write("check: the store passes C1-C3 again")
    env._failures = failing
    env.status.merge("passes", "check", {
        "at": utc_stamp(), "ok": report.ok, "failures": len(report.failures),
        "summary": "C1-C3 pass" if report.ok else listing([f.message for f in report.failures])})


def _report_budgets(env: JobEnv, report: BudgetReport | None) -> None:
    if report is None:
        return
    budgets, breaches = _budget_status(report)
    env.status.update(budgets=budgets, flush=False)
    new_keys = sorted(set(breaches) - env._breaches)
    if new_keys:
        env.activity.write(f"over budget: {listing([breaches[k] for k in new_keys])}")
        if env.settings.schedule.compact_on_breach and env.worker is not None:
            env.worker.request("compaction", "breach")
    elif env._breaches and not breaches:
        env.activity.write("budgets: the store is back within every cap")
    env._breaches = set(breaches)


def _wait_later(env: JobEnv, state: LockState) -> PassResult:
    env.note_waiting(state, "follow")
    env.wants_release = True
    if env.schedule is not None:
        env.schedule.once("follow", env.policy.lock.waiting_recheck_seconds, "lock-recheck")
    return PassResult(True, f"waiting: lock held by {state.owner} for {state.age} s")


def follow(env: JobEnv, trigger: str) -> PassResult:
    if not env.store.is_dir():
        env.status.update(state="waiting", waiting={"for": "store", "path": str(env.store), "since": utc_stamp()})
        return PassResult(True, f"waiting: no store at {env.store} (`distilld new` creates one)")
    # Reading and committing need no lock, but a distiller holding a fresh one is mid-run: its
    # changes are not finished. A stale lock does not block (run_follow takes it over only if
    # it has to write the catalog); a lock whose owner no longer runs (a killed daemon's) is
    # taken over at once and given back, so it neither blocks nor lingers.
    held: StoreLock | None = None
    state = env.lock_state()
    if state.blocks and state.owner != env.owner:
        if not env.block_on_lock:
            return _wait_later(env, state)
        held = env.take_lock("follow")
    elif state.kind is LockStateKind.ABANDONED:
        held = env.take_lock("follow") if env.block_on_lock else env.try_lock("follow")
        if held is None:  # a distiller took it first: wait for it as for any holder
            return _wait_later(env, env.lock_state())
    env.wants_release = False
    env.clear_waiting()
    try:
        report = run_follow(env.store, env.policy, env.clock, owner=env.owner, incremental=env.incremental)
    except LockHeld:
        return _wait_later(env, env.lock_state())  # a distiller started between our look and our lock
    finally:
        release_lock(held)
    if report.ledger_lost is not None:
        # Nothing is written or committed while lines are missing: a commit would spread the loss.
        env.activity.write(f"stuck: {report.ledger_lost}")
        return PassResult(False, str(report.ledger_lost))
    if report.catalog_written:
        if env.watcher is not None:
            env.watcher.mark_own([CATALOG])
        env.activity.write(f"rebuilt CATALOG.md ({listing(report.catalog_reasons, 2)})")
    if report.takeover is not None:
        env.activity.write(f"{takeover_words(report.takeover, env.policy.lock.stale_seconds)}, to rebuild the catalog")
    _report_checks(env, report)
    _report_budgets(env, report.budget)
    refresh_search_index(env)
    env.check_stop()
    _report_outside_edits(env)
    commit = commit_changes(env, trigger)
    parts = ["catalog rebuilt" if report.catalog_written else "catalog current",
             "C1-C3 pass" if report.ok else f"{plural(len(report.failures), 'check')} failing"]
    if commit is not None:
        parts.append(f"committed {plural(len(commit.paths), 'change')}" if commit.committed
                     else commit.note or "nothing to commit")
    return PassResult(True, "; ".join(parts), {"catalog_written": report.catalog_written})


# Triggers that mean a person asked: such a sync runs at once, whatever the backoff.
ASKED_BY_A_PERSON = ("run-now", "SIGUSR1")


def _report_outside_edits(env: JobEnv) -> None:
    """Files changed while no distiller held the lock and no distillation was running (another
    program, an editor): said once in the activity log and kept in status.json. They are
    committed as they are; nothing in them is changed or "fixed"."""
    edits = sorted(env.outside_edits)
    env.outside_edits = set()
    if not edits:
        return
    # said as what happens to them: not "committed" in a store distilld does not commit (issue 27)
    committing = env.settings.git.commit and not (env.status.get("git") or {}).get("note")
    then = "committed as they are" if committing else "kept as they are"
    env.activity.write(f"edited outside a distillation (no lock held, no distillation running): "
                       f"{listing(edits, 5)}; {then}, nothing in them changed")
    seen = {item.get("path"): item for item in env.status.get("outside_edits") or [] if isinstance(item, dict)}
    for path in edits:
        seen[path] = {"path": path, "at": utc_stamp()}
    env.status.update(outside_edits=sorted(seen.values(), key=lambda item: str(item["at"]))[-20:], flush=False)


def refresh_ahead_behind(env: JobEnv) -> None:
    """Ahead/behind as the repository is now (after a commit or a sync), never a figure left
    over from the last sync."""
    try:
        state = env.git.state()
    except Exception:  # an odd repository: keep the last figures rather than fail the pass
        log.exception("git.state_failed")
        return
    git = dict(env.status.get("git") or {})
    git.update({key: state[key] for key in ("ahead", "behind", "remote", "branch", "push") if key in state})
    env.status.update(git=git, flush=False)


def after_commit(env: JobEnv) -> None:
    env.unpushed = True
    refresh_ahead_behind(env)
    if env.worker is not None and env.settings.git.push and env.git.has_remote():
        env.worker.request("sync", "commit")  # push while ahead


def commit_changes(env: JobEnv, trigger: str) -> CommitOutcome | None:
    if not env.settings.git.commit:
        return None
    interrupted = interrupted_passes(env.store)
    if interrupted:  # a half-done pass (a split child without its pointer, say) is never committed
        env.status.merge("passes", "commit", {"at": utc_stamp(), "ok": True,
                                              "summary": f"waiting: an interrupted pass ({interrupted[0]})"})
        if env.worker is not None:
            env.worker.request("compaction", "interrupted")  # it finishes or rolls it back first
        return CommitOutcome(False, note=f"not committed while a pass is unfinished: {interrupted[0]}")
    result = env.git.commit_changes("distilld: agent changes")
    if result.committed:
        agent = [p for p in result.paths if p != CATALOG]
        what = plural(len(agent), "agent change") if agent else "the rebuilt catalog"
        missed = " the watcher had missed" if trigger.startswith("reconcile") and agent else ""
        short = (result.sha or "")[:7]
        # the JSON log's record carries the commit and every path as fields, not only in its text
        env.activity.write(f"committed {what}{missed} ({short}): {listing(agent or [CATALOG], 5)}",
                           commit=result.sha, paths=list(result.paths))
        after_commit(env)
    elif result.busy and env.schedule is not None:
        env.schedule.once("follow", env.policy.lock.waiting_recheck_seconds, "git-busy")
    for note in result.skipped:
        if note not in env._commit_notes:
            env.activity.write(f"commit: {note}")
    env._commit_notes = set(result.skipped)
    env.status.merge("passes", "commit", {
        "at": utc_stamp(), "ok": not result.skipped, "sha": result.sha, "paths": len(result.paths),
        "summary": (f"committed {plural(len(result.paths), 'path')}" if result.committed
                    else result.note or "nothing to commit")})
    return result


def reconcile(env: JobEnv, trigger: str) -> PassResult:
    env.incremental.reset()  # by content: every file read again, every finding computed again
    result = follow(env, f"reconcile:{trigger}")
    mismatches = env.git.verify() if env.store.is_dir() else []
    if mismatches:
        env.activity.write(f"BYTE MISMATCH: {plural(len(mismatches), 'file')} differ from the last commit or "
                           f"the ledger: {listing(mismatches, 3)}")
        return PassResult(False, f"full rescan: {result.summary}; {plural(len(mismatches), 'byte mismatch')}",
                          {**result.details, "mismatches": mismatches[:20]})
    return PassResult(result.ok, f"full rescan: {result.summary}", result.details)
