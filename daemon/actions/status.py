"""`distilld status`: what the daemon is doing, what it last did, and what is stuck.

It reads status.json (written by the daemon, readable while it is down), and is told whether the
daemon is running (its instance lock is held) and what the service manager says. Nothing here
asks the daemon anything or writes anything.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine.guard import lost_ledger_lines
from ..engine.lock import LockState, LockStateKind, lock_status
from ..errors import LockIOError
from ..registry import status_order
from ..store.safety import store_links, store_unsafe_names

STALE_STATUS_SECONDS = 180  # the daemon rewrites status.json at least every minute
LONG_WAIT_SECONDS = 900
UNPUSHED_SECONDS = 3600
MISSED_RUN_SECONDS = 600
STALE_GIT_LOCK_SECONDS = 60  # a git holds its index.lock for moments; a minute means it is left or hung


@dataclass
class StatusView:
    store: Path
    running: bool
    pid: int | None
    data: dict[str, Any] | None
    service: dict[str, Any] | None
    files: dict[str, str]
    stuck: list[str] = field(default_factory=list)
    unmanaged: list[str] = field(default_factory=list)  # folders distilld does not manage
    lock: LockState | None = None  # the store's .lock as it is now (None: no store to read)

    def to_dict(self) -> dict[str, Any]:
        lock = None if self.lock is None else {
            "state": self.lock.kind.value, "owner": self.lock.owner, "age_seconds": self.lock.age,
            "alive": self.lock.alive, "liveness": self.lock.liveness}
        return {"store": str(self.store), "running": self.running, "pid": self.pid, "service": self.service,
                "ok": self.running and not self.stuck, "stuck": self.stuck, "files": self.files, "unmanaged": self.unmanaged, "lock": lock,
                "status": self.data}


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


def find_stuck(data: dict[str, Any] | None, running: bool, service: dict[str, Any] | None,
               now: float) -> list[str]:
    """Plain sentences for everything that is not moving as it should."""
    stuck: list[str] = []
    if service and service.get("installed") and service.get("enabled") == "enabled" and not running:
        stuck.append("the service is enabled but distilld is not running "
                     "(`journalctl --user -u distilld` says why)")
    if service and service.get("installed") and service.get("current") is False:
        stuck.append("the installed service runs another Python than this one; reinstall it with "
                     "`distilld service install`")
    if not data:
        return stuck
    updated = _epoch(data.get("updated_at"))
    if running and updated is not None and now - updated > STALE_STATUS_SECONDS:
        stuck.append(f"the daemon has not updated its status for {_duration(now - updated)}: it may be hung")
    waiting = data.get("waiting") or {}
    since = _epoch(waiting.get("since"))
    if running and waiting.get("for") == "lock" and since is not None:
        waited = now - since + float(waiting.get("age_seconds") or 0)
        if waited > LONG_WAIT_SECONDS:
            stuck.append(f"waiting for the store lock held by {waiting.get('owner')} for {_duration(waited)}")
    if running and waiting.get("for") == "store":
        stuck.append(f"the store {waiting.get('path')} does not exist")
    git = data.get("git") or {}
    if git.get("blocked"):
        stuck.append(f"sync blocked: {git['blocked']}")
    last_sync = _epoch((git.get("last_sync") or {}).get("at"))
    # Commits wait for a push only where one is meant to happen: a remote, and push not turned off.
    pushes = bool(git.get("remote")) and git.get("push") is not False
    if pushes and git.get("ahead") and (last_sync is None or now - last_sync > UNPUSHED_SECONDS):
        stuck.append(f"{git['ahead']} commit(s) not pushed yet")
    if git.get("behind"):
        stuck.append(f"{git['behind']} commit(s) on the remote not pulled yet")
    if backing_off(git, now):
        stuck.append(f"sync backing off until {git['backoff_until']}")
    watcher = data.get("watcher") or {}
    if running and watcher and not watcher.get("alive") and waiting.get("for") != "store":
        stuck.append("the file watcher is not running (the daemon restarts it; the periodic rescan covers the gap)")
    pending_for = watcher.get("pending_for_seconds")
    max_wait = watcher.get("max_wait_seconds") or 30
    if running and isinstance(pending_for, (int, float)) and pending_for > 2 * max_wait + 10:
        stuck.append(f"changes have been waiting {_duration(pending_for)} for a pass")
    for journal in data.get("interrupted") or []:
        how = ("`distilld migrate --finish` or `--revert` ends it" if str(journal).startswith("data/migration/")
               else "the next compaction or lifecycle pass finishes it or rolls it back")
        stuck.append(f"an interrupted pass is not finished: {journal} ({how}; nothing is committed until then)")
    for job, record in (data.get("passes") or {}).items():
        if isinstance(record, dict) and record.get("ok") is False:
            how = "was skipped" if record.get("outcome") == "skipped" else "failed"
            stuck.append(f"the last {job} pass {how}: {record.get('summary')}")
    if running and not data.get("paused"):
        for job, when in (data.get("next_runs") or {}).items():
            due = _epoch(when)
            if due is not None and now - due > MISSED_RUN_SECONDS:
                stuck.append(f"{job} was due at {when} and has not run")
    return stuck


def backing_off(git: dict[str, Any], now: float) -> bool:
    """A backoff counts only until it ends: an expired one is no longer a reason to wait."""
    until = _epoch(git.get("backoff_until"))
    return until is not None and until > now


def build_view(store: Path, data: dict[str, Any] | None, pid: int | None, service: dict[str, Any] | None,
               files: dict[str, str], now: float | None = None) -> StatusView:
    running = pid is not None
    view = StatusView(store, running, pid if pid and pid > 0 else None, data, service, files)
    view.lock = current_lock(store)
    problems = store_problems(store)
    pending = [p for p in problems if p.startswith("a migration is PENDING")]
    others = [p for p in problems if p not in pending]
    view.stuck = (pending + find_stuck(data, running, service, time.time() if now is None else now)
                  + lock_problems(view.lock) + others)
    return view


def current_lock(store: Path) -> LockState | None:
    """The store's .lock read now, with whether its owner runs (status.json may be minutes old)."""
    root = store.expanduser()
    if not root.is_dir():
        return None
    try:
        return lock_status(root)
    except LockIOError:
        return None


def lock_problems(lock: LockState | None) -> list[str]:
    """A lock nobody will release: its owner no longer runs, or it went without a heartbeat."""
    if lock is None or lock.kind is LockStateKind.FREE or lock.kind is LockStateKind.HELD:
        return []
    if lock.kind is LockStateKind.ABANDONED:
        return [f"the store's lock is held by {lock.owner} for {lock.age} s, but {lock.liveness}: the daemon's "
                "next pass takes it over (`distilld run --once` does it now)"]
    return [f"the store's lock of {lock.owner} has had no heartbeat for {lock.age} s (stale): the next pass "
            "takes it over"]


def _git_dir(root: Path) -> Path | None:
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    try:  # a worktree or a separated git folder: ".git" is a file naming it
        first = dot_git.read_text("utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return None
    if not first.startswith("gitdir: "):
        return None
    named = Path(first[len("gitdir: "):].strip())
    return named if named.is_absolute() else root / named


def stale_git_locks(root: Path, now: float) -> list[tuple[Path, int]]:
    """git lock files (index.lock, HEAD.lock, a branch's or a remote-tracking ref's, which a
    fetch killed half-way leaves) older than STALE_GIT_LOCK_SECONDS: a git that crashed, or one
    that hangs; every commit (or sync) waits while they stand."""
    gitdir = _git_dir(root)
    if gitdir is None:
        return []
    found: list[tuple[Path, int]] = []
    candidates = [gitdir / "index.lock", gitdir / "HEAD.lock", *sorted(gitdir.glob("refs/heads/*.lock")),
                  *sorted(gitdir.glob("refs/remotes/*/*.lock"))]
    for path in candidates:
        try:
            age = int(now - path.stat().st_mtime)
        except OSError:
            continue
        if age >= STALE_GIT_LOCK_SECONDS:
            found.append((path, age))
    return found


def store_problems(store: Path) -> list[str]:
    """What keeps every write pass from running, read from the store itself (so it shows while
    the daemon is down too): a shrunken ledger, a linked folder, names no pass will record."""
    root = store.expanduser()
    if not root.is_dir():
        return []
    root = root.resolve()
    from ..store.local import pending_migrations

    # first: a migration Ctrl-C left PENDING stops every pass but migrate (issue 27: "stuck: nothing")
    problems: list[str] = [f"a migration is PENDING ({marker}): no pass runs until `distilld migrate --finish` "
                           "or `distilld migrate --revert`" for marker in pending_migrations(root)]
    lost = lost_ledger_lines(root)
    if lost is not None:
        problems.append(str(lost))
    problems += [f"{link}: a symbolic link in the store; every write pass refuses until it is a real folder"
                 for link in store_links(root)[:5]]
    stale = stale_git_locks(root, time.time())
    problems += [f"{path} is {age} s old: no commit can be made while it is there; if no git runs, a "
                 f"crashed one left it: remove it (`rm {path}`)" for path, age in stale]
    unsafe = store_unsafe_names(root)
    if unsafe:
        problems.append(f"{len(unsafe)} file name(s) no pass will archive, restore or catalog: "
                        + "; ".join(str(u) for u in unsafe[:3]))
    return problems


def _now_line(data: dict[str, Any]) -> str:
    if data.get("paused"):
        return "paused (`distilld resume` continues)"
    current = data.get("current") or {}
    waiting = data.get("waiting") or {}
    if waiting.get("for") == "lock":
        return (f"waiting: lock held by {waiting.get('owner')} for {waiting.get('age_seconds')} s "
                f"(since {waiting.get('since')}); {waiting.get('job')} runs once it is released")
    if waiting.get("for") == "store":
        return f"waiting: no store at {waiting.get('path')} (`distilld new` creates one)"
    if current:
        return f"running {current.get('job')} ({current.get('trigger')}) since {current.get('since')}"
    return str(data.get("state") or "unknown")


def _budget_line(budgets: dict[str, Any]) -> str:
    def cap(name: str, unit: str) -> str:
        item = budgets.get(name) or {}
        margin = item.get("margin", 0)
        left = f"{margin} left" if margin >= 0 else f"{-margin} OVER"
        return f"{item.get('value')}/{item.get('cap')} {unit} ({left})"
    return (f"SPINE {cap('spine_lines', 'lines')}, {cap('spine_bytes', 'bytes')}; "
            f"{budgets.get('entries_over', 0)} entries and {budgets.get('files_over', 0)} files over their caps; "
            f"{budgets.get('stale_projects', 0)} stale projects; debt {budgets.get('debt', 0)}")


def _git_line(git: dict[str, Any]) -> str:
    if git.get("available") is False:
        return str(git.get("note") or "git support missing")
    parts = []
    if git.get("remote"):
        parts.append(f"remote {git['remote']}")
    if git.get("ahead") is not None or git.get("behind") is not None:
        parts.append(f"{git.get('ahead') or 0} ahead, {git.get('behind') or 0} behind")
    last = git.get("last_sync") or {}
    if last:
        parts.append(f"last sync {last.get('at')}: {last.get('summary')}")
    if backing_off(git, time.time()):
        parts.append(f"backing off until {git['backoff_until']}")
    return "; ".join(parts) or "no sync yet"


def _report_line(report: Any) -> str:
    if not isinstance(report, dict) or not report.get("at"):
        return "health report: none yet (the daemon writes one a day; `distilld report` measures now)"
    where = report.get("html") or report.get("text")
    note = f"; {report['note']}" if report.get("note") else ""
    return f"health report: {where} (written {report['at']}{note})"


def _verdict(record: dict[str, Any]) -> str:
    outcome = record.get("outcome")
    if outcome == "skipped":
        return "SKIPPED"
    if str(record.get("summary") or "").startswith("waiting:"):
        return "WAITED"  # it ran nothing: not "ok" (issue 27), whatever came since
    return "ok    " if record.get("ok") else "FAILED"


def _summary(record: dict[str, Any], store: Path) -> str:
    """The record's summary, and a word when what it waited for is there now."""
    summary = str(record.get("summary"))
    if summary.startswith("waiting: no store") and store.expanduser().is_dir():
        summary += " (the store is there now: the next pass runs on it)"
    return summary


def render_text(view: StatusView) -> str:
    data = view.data or {}
    out: list[str] = []
    if view.running:
        pid = f" (pid {view.pid})" if view.pid else ""
        out.append(f"distilld: running{pid}, following {view.store} since {data.get('started_at', '?')}")
        out.append(f"now: {_now_line(data)}")
    else:
        out.append(f"distilld: not running for {view.store}")
        if data:
            out.append(f"last seen: {data.get('updated_at')} ({data.get('state')})")
    if view.service is not None:
        out.append(str(view.service.get("line")))
    if view.lock is not None:
        ours = view.running and view.lock.owner is not None and view.lock.owner.endswith(f".{view.pid}")
        out.append(f"lock: {view.lock.describe()}" + (" (the daemon itself)" if ours else ""))
    watcher = data.get("watcher") or {}
    if watcher and view.running:
        pending = watcher.get("pending_paths") or 0
        note = f"; {watcher['note']}" if watcher.get("note") else ""
        out.append(f"watcher: {watcher.get('mode')}, {'alive' if watcher.get('alive') else 'down'}, "
                   f"{watcher.get('events', 0)} changes seen, last {watcher.get('last_event_at') or 'none yet'}; "
                   f"{pending} waiting for quiet; {watcher.get('restarts', 0)} restarts{note}")
    if data.get("budgets"):
        out.append(f"budgets: {_budget_line(data['budgets'])}")
    if data.get("git"):
        out.append(f"git: {_git_line(data['git'])}")
    if data.get("lifecycle"):
        out.append(f"lifecycle: {data['lifecycle']} for this store")
    passes = data.get("passes") or {}
    if passes:
        out.append("last passes:")
        order = status_order()  # the one table's order (daemon/registry.py), then any older record
        for job in [*order, *sorted(set(passes) - set(order))]:
            record = passes.get(job)
            if isinstance(record, dict):
                out.append(f"    {job:<11} {record.get('at')}  {_verdict(record)} {_summary(record, view.store)}")
    runs = {k: v for k, v in (data.get("next_runs") or {}).items() if v}
    if runs and view.running:
        out.append("next runs: " + ", ".join(f"{job} {when}" for job, when in sorted(runs.items(), key=lambda i: i[1])))
    outside = [item for item in data.get("outside_edits") or [] if isinstance(item, dict)]
    if outside:
        out.append("edited outside a distillation (no lock held, none running; taken as they were):")
        out += [f"    - {item.get('path')} at {item.get('at')}" for item in outside[-10:]]
    out += [f"folders: {line}" for line in view.unmanaged]
    error = data.get("last_error")
    if error:
        out.append(f"last error: {error.get('at')} {error.get('job')}: {error.get('message')}")
    if view.stuck:
        out.append("stuck:")
        out += [f"    - {line}" for line in view.stuck]
    else:
        out.append("stuck: nothing")
    out.append(f"activity log: {view.files.get('activity_log')} (`distilld log -f` follows it)")
    out.append(_report_line(data.get("report")))
    return "\n".join(out) + "\n"


def render_json(view: StatusView) -> str:
    return json.dumps(view.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
