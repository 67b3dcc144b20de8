"""The daemon's jobs, as they run on the worker thread: what each does, waits for and reports.

* follow: once the store is quiet and no distiller holds the lock, the catalog rebuilt if
  stale, the invariants checked, budgets measured, the agents' changes committed.
* reconcile: the same pass on the schedule, whatever the watcher saw; it reads the store by
  content, so a missed event cannot leave a change unchecked or uncommitted.
* sync, compaction, lifecycle: the scheduled passes.

Every job's result lands in status.json; things done or waited for get one line in the
activity log. A failing job is reported and the next one runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..actions.follow import FollowReport, run_follow
from ..actions.gc import GcReport, run_gc_apply
from ..actions.health import write_daily_report
from ..engine.lock import AcquireKind, LockState, LockStateKind, StoreLock, lock_status
from ..engine.recovery import interrupted_passes
from ..errors import DistilldError, LockHeld, LockLost
from ..log import ActivityLog, StatusFile, get_logger, utc_stamp
from ..policy import Policy
from ..settings import Settings
from ..store.budget import BudgetReport
from ..store.incremental import IncrementalStore
from ..store.local import lifecycle_enabled
from ..store.paths import CATALOG
from .links import CommitResult, CompactLink, GitLink, OperationLink
from .scheduler import Schedule, Worker
from .watcher import StoreWatcher, scan_shared

log = get_logger("distilld.jobs")

# How long a follow that found the lock held waits before looking again, in case the release
# event is missed (the watcher normally reports the release at once).
LOCK_RECHECK_SECONDS = 30.0


class Stopping(Exception):
    """The daemon is shutting down: the job ends after the step it was in."""


@dataclass
class PassResult:
    ok: bool
    summary: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobEnv:
    """What the jobs share. Only the worker thread runs jobs, so most of it needs no locking."""

    settings: Settings
    policy: Policy
    store: Path
    owner: str
    status: StatusFile
    activity: ActivityLog
    stop: threading.Event
    lock_changed: threading.Event
    git: GitLink
    compactor: CompactLink
    watcher: StoreWatcher | None = None
    worker: Worker | None = None
    schedule: Schedule | None = None
    block_on_lock: bool = False  # --once: a follow waits for the lock instead of coming back later
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    incremental: IncrementalStore = field(default_factory=IncrementalStore)  # the last pass's snapshot
    wants_release: bool = False  # a follow is waiting for a distiller to release the lock
    _waiting_for: str | None = None
    _failures: set[str] = field(default_factory=set)
    _breaches: set[str] = field(default_factory=set)
    _lifecycle_state: bool | None = None
    _commit_notes: set[str] = field(default_factory=set)
    _sync_blocked: str | None = None
    unpushed: bool = False  # a commit was made since the last sync: the cycle must push it
    outside_edits: set[str] = field(default_factory=set)  # changed with no lock and no distillation

    def check_stop(self) -> None:
        if self.stop.is_set():
            raise Stopping()

    # -- waiting for a distiller ----------------------------------------------------------

    def note_waiting(self, state: LockState, job: str) -> None:
        owner = state.owner or "?"
        if self._waiting_for != owner:  # one line per wait, not one per poll
            self._waiting_for = owner
            age = f" for {state.age} s" if state.age is not None else ""
            self.activity.write(f"waiting: lock held by {owner}{age} ({job} runs once it is released)")
        self.status.update(state="waiting", waiting={
            "for": "lock", "owner": owner, "age_seconds": state.age, "job": job, "since": utc_stamp()})

    def clear_waiting(self) -> None:
        if self.status.get("waiting") is not None:
            self.status.update(waiting=None)
        self._waiting_for = None

    def lock_state(self) -> LockState:
        return lock_status(self.store, self.policy.lock.stale_seconds)

    def take_lock(self, job: str) -> StoreLock:
        """Take the store's lock for a pass, waiting (and saying for whom) while a distiller holds
        a fresh one. A stale lock is taken over as the protocol allows, and the takeover logged."""
        while True:
            self.check_stop()
            lock = StoreLock.from_policy(self.store, self.owner, self.policy.lock)
            try:
                result = lock.acquire(0)
            except LockHeld as held:
                self.note_waiting(LockState(LockStateKind.HELD, held.owner or "(contended)", held.age), job)
                # Woken by the watcher when .lock changes; the timeout is the fallback look.
                deadline = time.monotonic() + min(self.policy.lock.poll_seconds * 5, self.policy.lock.wait_recheck_seconds)
                while time.monotonic() < deadline and not self.stop.is_set():
                    if self.lock_changed.wait(0.5):
                        break
                self.lock_changed.clear()
                continue
            self.clear_waiting()
            if result.kind is AcquireKind.TOOK_OVER and result.abandoned:
                self.activity.write(f"took over the lock of {result.previous_owner} for {job}: {result.abandoned}")
            elif result.kind is AcquireKind.TOOK_OVER:
                self.activity.write(
                    f"took over a stale lock from {result.previous_owner} ({result.previous_age} s "
                    f"without a heartbeat; stale after {self.policy.lock.stale_seconds} s) for {job}")
            return lock

    @contextmanager
    def exclusive(self, job: str) -> Iterator[None]:
        """Hold the store's lock around a pass that writes; what changed while it was held is
        distilld's own doing, and the watcher is told so (it must not start a pass again)."""
        lock = self.take_lock(job)
        try:
            before = scan_shared(self.store) if self.watcher is not None else {}
            started = time.time()
            foreign = False
            try:
                yield
            except LockHeld:
                foreign = True
                raise
            finally:
                ended = time.time()
                # The pass hands the lock back itself at its end (same owner); if a distiller got
                # it during the pass, what changed may be theirs: then claim nothing.
                state = self.lock_state()
                foreign = foreign or (state.kind is LockStateKind.HELD and state.owner != self.owner)
                if self.watcher is not None and not foreign:
                    self.watcher.record_own(before, scan_shared(self.store), started, ended)
        finally:
            _release(lock)


def _release(lock: StoreLock | None) -> None:
    if lock is None:
        return
    try:
        lock.release()
    except LockLost:
        pass  # the pass released it already (it took the lock as its own, same owner)


# -- follow / reconcile ------------------------------------------------------------------------


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


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


def _listing(items: list[str], limit: int = 3) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def _report_checks(env: JobEnv, report: FollowReport) -> None:
    failing = {f.message for f in report.failures}
    new = sorted(failing - env._failures)
    if new:
        env.activity.write(f"check: the store fails {_plural(len(failing), 'invariant check')}: {_listing(new)}"
                           " (`distilld check` lists them)")
    elif env._failures and not failing:
        env.activity.write("check: the store passes C1-C3 again")
    env._failures = failing
    env.status.merge("passes", "check", {
        "at": utc_stamp(), "ok": report.ok, "failures": len(report.failures),
        "summary": "C1-C3 pass" if report.ok else _listing([f.message for f in report.failures])})


def _report_budgets(env: JobEnv, report: BudgetReport | None) -> None:
    if report is None:
        return
    budgets, breaches = _budget_status(report)
    env.status.update(budgets=budgets, flush=False)
    new_keys = sorted(set(breaches) - env._breaches)
    if new_keys:
        env.activity.write(f"over budget: {_listing([breaches[k] for k in new_keys])}")
        if (env.settings.schedule.compact_on_breach and env.worker is not None
                and env.compactor.available):
            env.worker.request("compaction", "breach")
    elif env._breaches and not breaches:
        env.activity.write("budgets: the store is back within every cap")
    env._breaches = set(breaches)


def _wait_later(env: JobEnv, state: LockState) -> PassResult:
    env.note_waiting(state, "follow")
    env.wants_release = True
    if env.schedule is not None:
        env.schedule.once("follow", LOCK_RECHECK_SECONDS, "lock-recheck")
    return PassResult(True, f"waiting: lock held by {state.owner} for {state.age} s")


def follow(env: JobEnv, trigger: str) -> PassResult:
    if not env.store.is_dir():
        env.status.update(state="waiting", waiting={"for": "store", "path": str(env.store), "since": utc_stamp()})
        return PassResult(True, f"waiting: no store at {env.store} (`distilld new` creates one)")
    # Reading and committing need no lock, but a distiller holding a fresh one is mid-run: its
    # changes are not finished. A stale lock does not block (run_follow takes it over only if
    # it has to write the catalog).
    held: StoreLock | None = None
    state = env.lock_state()
    if state.kind is LockStateKind.HELD and state.owner != env.owner:
        if not env.block_on_lock:
            return _wait_later(env, state)
        held = env.take_lock("follow")
    env.wants_release = False
    env.clear_waiting()
    try:
        report = run_follow(env.store, env.policy, env.clock, owner=env.owner, incremental=env.incremental)
    except LockHeld:
        return _wait_later(env, env.lock_state())  # a distiller started between our look and our lock
    finally:
        _release(held)
    if report.ledger_lost is not None:
        # Nothing is written or committed while lines are missing: a commit would spread the loss.
        env.activity.write(f"stuck: {report.ledger_lost}")
        return PassResult(False, str(report.ledger_lost))
    if report.catalog_written:
        if env.watcher is not None:
            env.watcher.mark_own([CATALOG])
        env.activity.write(f"rebuilt CATALOG.md ({_listing(report.catalog_reasons, 2)})")
    if report.takeover is not None:
        env.activity.write(f"took over a stale lock from {report.takeover.previous_owner} "
                           f"({report.takeover.previous_age} s without a heartbeat) to rebuild the catalog")
    _report_checks(env, report)
    _report_budgets(env, report.budget)
    env.check_stop()
    _report_outside_edits(env)
    commit = commit_changes(env, trigger)
    parts = ["catalog rebuilt" if report.catalog_written else "catalog current",
             "C1-C3 pass" if report.ok else f"{_plural(len(report.failures), 'check')} failing"]
    if commit is not None:
        parts.append(f"committed {_plural(len(commit.paths), 'change')}" if commit.committed
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
    env.activity.write(f"edited outside a distillation (no lock held, no distillation running): "
                       f"{_listing(edits, 5)}; committed as they are, nothing in them changed")
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
    git.update({key: state[key] for key in ("ahead", "behind", "remote", "branch") if key in state})
    env.status.update(git=git, flush=False)


def _after_commit(env: JobEnv) -> None:
    env.unpushed = True
    refresh_ahead_behind(env)
    if env.worker is not None and env.settings.git.push and env.git.has_remote():
        env.worker.request("sync", "commit")  # push while ahead


def commit_changes(env: JobEnv, trigger: str) -> CommitResult | None:
    if not env.settings.git.commit:
        return None
    if not env.git.available:
        env.status.merge("passes", "commit", {"at": utc_stamp(), "ok": True, "summary": env.git.missing})
        return CommitResult(False, note="git support missing")
    interrupted = interrupted_passes(env.store)
    if interrupted:  # a half-done pass (a split child without its pointer, say) is never committed
        env.status.merge("passes", "commit", {"at": utc_stamp(), "ok": True,
                                              "summary": f"waiting: an interrupted pass ({interrupted[0]})"})
        if env.worker is not None and env.compactor.available:
            env.worker.request("compaction", "interrupted")  # it finishes or rolls it back first
        return CommitResult(False, note=f"not committed while a pass is unfinished: {interrupted[0]}")
    result = env.git.commit_changes("distilld: agent changes")
    if result.committed:
        agent = [p for p in result.paths if p != CATALOG]
        what = _plural(len(agent), "agent change") if agent else "the rebuilt catalog"
        missed = " the watcher had missed" if trigger.startswith("reconcile") and agent else ""
        short = (result.sha or "")[:7]
        env.activity.write(f"committed {what}{missed} ({short}): {_listing(agent or [CATALOG], 5)}")
        _after_commit(env)
    elif result.busy and env.schedule is not None:
        env.schedule.once("follow", LOCK_RECHECK_SECONDS, "git-busy")
    for note in result.skipped:
        if note not in env._commit_notes:
            env.activity.write(f"commit: {note}")
    env._commit_notes = set(result.skipped)
    env.status.merge("passes", "commit", {
        "at": utc_stamp(), "ok": not result.skipped, "sha": result.sha, "paths": len(result.paths),
        "summary": (f"committed {_plural(len(result.paths), 'path')}" if result.committed
                    else result.note or "nothing to commit")})
    return result


def reconcile(env: JobEnv, trigger: str) -> PassResult:
    env.incremental.reset()  # by content: every file read again, every finding computed again
    result = follow(env, f"reconcile:{trigger}")
    mismatches = env.git.verify() if env.store.is_dir() else []
    if mismatches:
        env.activity.write(f"BYTE MISMATCH: {_plural(len(mismatches), 'file')} differ from the last commit or "
                           f"the ledger: {_listing(mismatches, 3)}")
        return PassResult(False, f"full rescan: {result.summary}; {_plural(len(mismatches), 'byte mismatch')}",
                          {**result.details, "mismatches": mismatches[:20]})
    return PassResult(result.ok, f"full rescan: {result.summary}", result.details)


# -- scheduled passes --------------------------------------------------------------------------


def lifecycle(env: JobEnv, trigger: str) -> PassResult:
    enabled = env.store.is_dir() and lifecycle_enabled(env.store)
    env.status.update(lifecycle="enabled" if enabled else "disabled", flush=False)
    if env._lifecycle_state is not None and enabled != env._lifecycle_state:
        env.activity.write(f"lifecycle {'enabled' if enabled else 'disabled'} for this store (.lifecycle)")
    env._lifecycle_state = enabled
    if not enabled:
        return PassResult(True, "disabled for this store (.lifecycle); moved nothing")
    with env.exclusive("lifecycle"), env.git.operation("lifecycle") as operation:
        report = run_gc_apply(env.store, env.policy, env.clock, wait=0, scheduled=True)
        moved = _report_gc(env, report)
        operation.describe(f"distilld: lifecycle archived {_plural(len(moved), 'file')}", moved)
    _report_operation(env, "the lifecycle pass", operation)
    if not report.ok:
        return PassResult(False, "self-check failed after the lifecycle pass (see `distilld gc`)")
    return PassResult(True, f"archived {_plural(len(moved), 'file')}" if moved else "nothing stale to archive")


def _report_operation(env: JobEnv, what: str, operation: OperationLink) -> None:
    for note in operation.notes:
        env.activity.write(f"commit of {what}: {note}")
    if operation.commit is not None and operation.commit.committed:
        env.activity.write(f"committed {what} ({(operation.commit.sha or '')[:7]}): "
                           f"{_listing(operation.commit.paths, 5)}")
        _after_commit(env)


def _report_gc(env: JobEnv, report: GcReport) -> list[str]:
    """One activity line per file archived; returns the archived paths."""
    moved: list[str] = []
    moves = {m.source: m for m in (report.plan.moves if report.plan else [])}
    for outcome in (report.recovery, report.outcome):
        if outcome is None:
            continue
        for path in outcome.recovered:
            env.activity.write(f"finished an interrupted archive move of {path}")
        for path in outcome.moved:
            move = moves.get(path)
            if move is not None:
                referrers = f", {_plural(len(move.referrers), 'referrer')} listed" if move.referrers else ""
                env.activity.write(f"archived {path} (past {move.threshold_days} days{referrers})")
            else:
                env.activity.write(f"archived {path}")
            moved.append(path)
        if outcome.self_check:
            env.activity.write(f"lifecycle self-check failed: {_listing([f.message for f in outcome.self_check])}")
    return moved


def _no_store(env: JobEnv) -> PassResult | None:
    """A store that does not exist yet is waited for, not failed on (a fresh install runs first)."""
    if env.store.is_dir():
        return None
    return PassResult(True, f"waiting: no store at {env.store} (`distilld new` creates one)")


def compaction(env: JobEnv, trigger: str) -> PassResult:
    waiting = _no_store(env)
    if waiting is not None:
        return waiting
    if not env.compactor.available:
        return PassResult(True, "compaction is not part of this build")
    with env.exclusive("compaction"), env.git.operation("compaction") as operation:
        result = env.compactor.run(env.store, env.policy, env.clock)
        operation.describe(f"distilld: compaction ({result.summary})", result.lines)
    for line in result.lines:
        env.activity.write(line)
    _report_operation(env, "the compaction", operation)
    return PassResult(result.ok, result.summary)


def sync(env: JobEnv, trigger: str) -> PassResult:
    waiting = _no_store(env)
    if waiting is not None:
        return waiting
    if not env.git.available:
        return PassResult(True, env.git.missing)
    with env.exclusive("sync"):  # never pull into a store a distiller is writing
        result = env.git.sync(asked_by_a_person=trigger in ASKED_BY_A_PERSON)
    if result.details.get("state") not in (None, "skipped", "offline", "push-failed", "blocked", "mismatch"):
        env.unpushed = False
    git = dict(env.status.get("git") or {})
    git.update(env.git.state())
    git.update(ahead=result.ahead, behind=result.behind, backoff_until=result.backoff_until,
               blocked=result.blocked, last_sync={"at": utc_stamp(), "ok": result.ok, "summary": result.summary})
    env.status.update(git=git, flush=False)
    remote = result.details.get("remote") or "the remote"
    if result.blocked:
        if result.blocked != env._sync_blocked:  # once per reason, not once per retry
            retry = f"; retrying after {result.backoff_until}" if result.backoff_until else ""
            env.activity.write(f"sync blocked: {result.blocked}{retry}")
        env._sync_blocked = result.blocked
    else:
        if env._sync_blocked:
            env.activity.write(f"sync works again with {remote}")
        env._sync_blocked = None
        if result.pulled:
            env.activity.write(f"pulled changes from {remote} ({result.details.get('integration')})")
        if result.pushed:
            env.activity.write(f"pushed to {remote}")
    refresh_ahead_behind(env)
    return PassResult(result.ok, result.summary, {"outcome": result.details.get("outcome")})


def report(env: JobEnv, trigger: str) -> PassResult:
    """The daily health report, written into the state folder (beside status.json)."""
    waiting = _no_store(env)
    if waiting is not None:
        return waiting
    written = write_daily_report(env.store, env.policy, env.clock(), env.status.path.parent, env.activity.path)
    shown = written.html or written.text
    env.status.update(report={"at": utc_stamp(), "html": str(written.html) if written.html else None,
                              "json": str(written.json), "text": str(written.text), "note": written.note},
                      flush=False)
    env.activity.write(f"wrote the health report: {shown}")
    return PassResult(True, f"wrote {shown}" + (f" ({written.note})" if written.note else ""))


JOB_FUNCTIONS: dict[str, Callable[[JobEnv, str], PassResult]] = {
    "follow": follow,
    "reconcile": reconcile,
    "sync": sync,
    "compaction": compaction,
    "lifecycle": lifecycle,
    "report": report,
}


def run_job(env: JobEnv, job: str, trigger: str) -> PassResult:
    """Run one job and report it; never raises (except on the way out of a shutdown)."""
    started = time.monotonic()
    env.status.update(state="running", current={"job": job, "trigger": trigger, "since": utc_stamp()})
    try:
        result = JOB_FUNCTIONS[job](env, trigger)
    except Stopping:
        result = PassResult(True, "interrupted by shutdown; the next start picks it up")
    except LockHeld as held:  # a distiller started between our look and our lock: later
        result = PassResult(True, f"waiting: {held}")
        if env.schedule is not None:
            env.schedule.once(job, LOCK_RECHECK_SECONDS, "lock-recheck")
    except DistilldError as error:
        result = PassResult(False, str(error))
    except Exception as error:  # a bug in one pass must not stop the daemon
        log.exception("job.crashed", job=job)
        result = PassResult(False, f"{type(error).__name__}: {error}")
    duration = round(time.monotonic() - started, 3)
    outcome = result.details.get("outcome") or ("ok" if result.ok else "failed")
    record = {"at": utc_stamp(), "ok": result.ok, "outcome": outcome, "summary": result.summary,
              "trigger": trigger, "duration_seconds": duration}
    env.status.merge("passes", job, record, flush=False)
    if env.store.is_dir():
        env.status.update(interrupted=interrupted_passes(env.store), flush=False)
    if not result.ok:
        env.activity.write(f"{job} failed: {result.summary}")
        env.status.update(last_error={"at": utc_stamp(), "job": job, "message": result.summary}, flush=False)
    waiting = env.status.get("waiting")
    env.status.update(state="waiting" if waiting else "idle", current=None)
    log.info("job.done", job=job, trigger=trigger, ok=result.ok, summary=result.summary, seconds=duration)
    return result
