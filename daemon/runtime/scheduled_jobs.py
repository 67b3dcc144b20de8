"""The scheduled jobs: the lifecycle pass, compaction, sync and the daily report. Each pass that
writes holds the store's lock and becomes one commit of exactly what it changed."""

from __future__ import annotations

from ..actions.compaction import run_compaction
from ..actions.gc import GcReport, run_gc_apply
from ..actions.health import write_daily_report
from ..log import utc_stamp
from ..store.local import lifecycle_enabled
from .compaction_report import describe_compaction
from .follow_job import ASKED_BY_A_PERSON, after_commit, refresh_ahead_behind
from .jobs import JobEnv, PassResult, listing, no_store, plural
from .store_git import OperationCommit


def lifecycle_pass(env: JobEnv, trigger: str) -> PassResult:
    """The lifecycle pass (gc) on its schedule; the `.lifecycle` switch says whether it may archive."""
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
        operation.describe(*report.commit_message())
    report_operation(env, "the lifecycle pass", operation)
    if moved:
        _measure_again(env, "lifecycle")
    if not report.ok:
        return PassResult(False, "self-check failed after the lifecycle pass (see `distilld gc`)")
    return PassResult(True, f"archived {plural(len(moved), 'file')}" if moved else "nothing stale to archive",
                      {"changed": bool(moved)})


def _measure_again(env: JobEnv, job: str) -> None:
    """A pass that changed the store has the follow pass check and measure it again, so that
    status.json does not keep saying what the store was before (a breach the pass mended, say).
    Its own writes are told to the watcher, which therefore starts nothing for them."""
    if env.worker is not None:
        env.worker.request("follow", f"after-{job}")


def report_operation(env: JobEnv, what: str, operation: OperationCommit) -> None:
    for note in operation.notes:
        env.activity.write(f"commit of {what}: {note}")
    if operation.commit is not None and operation.commit.committed:
        env.activity.write(f"committed {what} ({(operation.commit.sha or '')[:7]}): "
                           f"{listing(operation.commit.paths, 5)}", commit=operation.commit.sha,
                           paths=list(operation.commit.paths))
        after_commit(env)


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
                referrers = f", {plural(len(move.referrers), 'referrer')} listed" if move.referrers else ""
                env.activity.write(f"archived {path} (past {move.threshold_days} days{referrers})", paths=[path])
            else:
                env.activity.write(f"archived {path}", paths=[path])
            moved.append(path)
        if outcome.self_check:
            env.activity.write(f"lifecycle self-check failed: {listing([f.message for f in outcome.self_check])}")
    return moved


def compaction(env: JobEnv, trigger: str) -> PassResult:
    waiting = no_store(env)
    if waiting is not None:
        return waiting
    with env.exclusive("compaction"), env.git.operation("compaction") as operation:
        result = describe_compaction(run_compaction(env.store, env.policy, env.clock, wait=0, apply=True))
        operation.describe(*result.commit_message())
    for line in result.lines:
        env.activity.write(line)
    report_operation(env, "the compaction", operation)
    if result.changed:
        _measure_again(env, "compaction")
    return PassResult(result.ok, result.summary, {"changed": bool(result.changed)})


def sync(env: JobEnv, trigger: str) -> PassResult:
    waiting = no_store(env)
    if waiting is not None:
        return waiting
    with env.exclusive("sync"):  # never pull into a store a distiller is writing
        result = env.git.sync(asked_by_a_person=trigger in ASKED_BY_A_PERSON)
    if result.details.get("state") not in (None, "skipped", "offline", "push-failed", "blocked", "mismatch"):
        env.unpushed = False
    git = dict(env.status.get("git") or {})
    git.update(env.git.state())
    skipped = not result.ok and not result.blocked  # a block stays until a sync gets through
    git.update(ahead=result.ahead, behind=result.behind, backoff_until=result.backoff_until,
               blocked=git.get("blocked") if skipped else result.blocked, last_sync={"at": utc_stamp(), "ok": result.ok, "summary": result.summary})
    env.status.update(git=git, flush=False)
    remote = result.details.get("remote") or "the remote"
    if result.details.get("rewound"):
        env.activity.write(f"sync: {result.details['rewound']}")
    if result.blocked:
        if result.blocked != env._sync_blocked:  # once per reason, not once per retry
            retry = f"; retrying after {result.backoff_until}" if result.backoff_until else ""
            env.activity.write(f"sync blocked: {result.blocked}{retry}")
        env._sync_blocked = result.blocked
    elif result.ok:  # a skipped sync proves nothing: the block it followed may still be there
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
    waiting = no_store(env)
    if waiting is not None:
        return waiting
    written = write_daily_report(env.store, env.policy, env.clock(), env.status.path.parent, env.activity.path)
    shown = written.html or written.text
    env.status.update(report={"at": utc_stamp(), "html": str(written.html) if written.html else None,
                              "json": str(written.json), "text": str(written.text), "note": written.note},
                      flush=False)
    env.activity.write(f"wrote the health report: {shown}")
    return PassResult(True, f"wrote {shown}" + (f" ({written.note})" if written.note else ""))
