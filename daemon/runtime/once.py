"""`distilld run --once`: one full cycle of the jobs, then exit, with one line on stderr for each
problem (the activity log has them too, but a cron job or a person at a terminal reads stderr).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from ..log import utc_stamp
from ..registry import default_jobs
from ..store.local import lifecycle_enabled
from .job_runner import run_job
from .jobs import JobEnv, PassResult


def say_on_stderr(line: str) -> None:
    print(f"distilld: {line}", file=sys.stderr, flush=True)


def run_cycle(env: JobEnv, stop: threading.Event, lock_wait_seconds: float | None) -> int:
    """Run each job once; 1 when a pass failed or a wait for the lock was given up (--wait)."""
    started = utc_stamp()
    env.status.update(state="running")
    env.status.update(lifecycle="enabled" if lifecycle_enabled(env.store) else "disabled", flush=False)
    results: list[tuple[str, PassResult]] = []
    for job in default_jobs():
        if stop.is_set():
            break
        results.append((job, run_job(env, job, "once")))
    if any(result.details.get("changed") for _, result in results) and not stop.is_set():
        # compaction or the lifecycle changed the store: check and measure it as it is now
        results.append(("follow", run_job(env, "follow", "once:after-changes")))
    if env.unpushed and not stop.is_set() and env.settings.git.push and env.git.has_remote():
        # compaction or the lifecycle committed after the cycle's sync: push that too
        results.append(("sync", run_job(env, "sync", "once:after-commit")))
    env.status.update(state="stopped", current=None, pid=None)
    passes = {job: record for job, record in (env.status.get("passes") or {}).items()
              if isinstance(record, dict) and str(record.get("at") or "") >= started}  # this cycle's only
    failed, problems = once_problems(results, passes, gave_up=lock_wait_seconds is not None)
    for line in problems:
        say_on_stderr(line)
    return 1 if failed else 0


def once_problems(results: list[tuple[str, PassResult]], passes: dict[str, Any], *,
                  gave_up: bool) -> tuple[bool, list[str]]:
    """Whether the cycle failed, and one line per problem: each pass that failed, each wait
    given up (--wait), and the checks and commits that did not go through (those alone do not
    fail the cycle: the store is followed as it is)."""
    lines: list[str] = []
    failed = False
    for job, result in results:
        if result.details.get("outcome") == "interrupted" or result.summary.startswith("interrupted"):
            lines.append(f"{job}: {result.summary}")  # a stop asked for: how the pass was left
        elif not result.ok:
            failed = True
            lines.append(f"{job} failed: {result.summary}")
        elif gave_up and result.summary.startswith("waiting:"):
            failed = True
            lines.append(f"gave up waiting: {job} did not run ({result.summary.removeprefix('waiting: ')})")
    for job in ("check", "commit"):
        record = passes.get(job)
        if isinstance(record, dict) and record.get("ok") is False:
            lines.append(f"{job}: {record.get('summary')}")
    return failed, lines
