"""Run one of the daemon's jobs and report it: its result lands in status.json, a failure in the
activity log, and a failing job never stops the next one."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..engine.cancel import PassStopped, stoppable
from ..engine.recovery import interrupted_passes
from ..errors import DistilldError, LockHeld
from ..log import get_logger, utc_stamp
from ..registry import job_entry
from .jobs import JobEnv, PassResult, Stopping

log = get_logger("distilld.jobs")


def job_function(job: str) -> Callable[[JobEnv, str], PassResult]:
    """What runs ``job``, from the one table (daemon/registry.py): its own function, or for a
    registered pass without one, the pass driven as every journalled pass is."""
    entry = job_entry(job)
    if entry.runs is not None:
        function: Callable[[JobEnv, str], PassResult] = entry.function()
        return function
    from .pass_job import run_registered_pass
    return lambda env, trigger: run_registered_pass(env, job, trigger)


def run_job(env: JobEnv, job: str, trigger: str) -> PassResult:
    """Run one job and report it; never raises (except on the way out of a shutdown)."""
    started = time.monotonic()
    env.status.update(state="running", current={"job": job, "trigger": trigger, "since": utc_stamp()})
    try:
        with stoppable(env.stop.is_set):  # a pass ends at its next boundary once a stop is asked for
            result = job_function(job)(env, trigger)
    except Stopping:
        result = PassResult(True, "interrupted by shutdown; the next start picks it up")
    except PassStopped as stopped:
        result = PassResult(True, f"interrupted by shutdown: {stopped}", {"outcome": "interrupted"})
    except LockHeld as held:  # a distiller started between our look and our lock: later
        result = PassResult(True, f"waiting: {held}")
        if env.schedule is not None:
            env.schedule.once(job, env.policy.lock.waiting_recheck_seconds, "lock-recheck")
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
