"""When jobs run, and the one thread they run on.

APScheduler keeps the clock: interval triggers with jitter, ``misfire_grace_time=None`` and
``coalesce=True``, so a run missed while the laptop slept happens once on waking instead of
being dropped. Its job only *requests* a run; the requests are kept, merged and carried out by
one worker thread, so two jobs never run at once, a request made while its job is running is
not lost (it runs again afterwards), and a burst of requests is one run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor  # type: ignore[import-untyped]
from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]
from apscheduler.triggers.date import DateTrigger  # type: ignore[import-untyped]
from apscheduler.triggers.interval import IntervalTrigger  # type: ignore[import-untyped]

from ..log import get_logger
from ..registry import JobEntry, job_names, scheduled_jobs
from ..settings import ScheduleSettings

log = get_logger("distilld.scheduler")


def minutes_for(settings: ScheduleSettings, job: JobEntry) -> int:
    """The interval the settings give a scheduled job (the setting its table entry names)."""
    assert job.schedule is not None
    return int(getattr(settings, job.schedule))


class Worker:
    """One thread; pending requests per job, merged; paused means nothing new starts."""

    def __init__(self, run: Callable[[str, str], object], after: Callable[[], None] | None = None) -> None:
        self._run = run
        self._after = after  # told once a job is over and the worker is free again
        self._cond = threading.Condition()
        self._pending: dict[str, str] = {}
        self._running: tuple[str, str, float] | None = None
        self._paused = False
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="distilld-worker", daemon=True)
        self.completed = 0

    def start(self) -> None:
        self._thread.start()

    def request(self, job: str, trigger: str) -> None:
        if job not in job_names():
            raise ValueError(f"unknown job {job!r} (jobs: {', '.join(job_names())})")
        with self._cond:
            if job in self._pending and trigger not in self._pending[job].split("+"):
                self._pending[job] += f"+{trigger}"
            else:
                self._pending.setdefault(job, trigger)
            self._cond.notify_all()

    def pause(self) -> None:
        with self._cond:
            self._paused = True

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    @property
    def paused(self) -> bool:
        return self._paused

    def state(self) -> dict[str, Any]:
        with self._cond:
            running = None
            if self._running:
                job, trigger, since = self._running
                running = {"job": job, "trigger": trigger, "for_seconds": round(time.monotonic() - since, 1)}
            return {"running": running, "pending": dict(self._pending), "paused": self._paused}

    def idle(self) -> bool:
        with self._cond:
            return self._running is None and (not self._pending or self._paused)

    def wait_idle(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.idle():
                return True
            time.sleep(0.05)
        return self.idle()

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop after the running job (which watches the daemon's stop event between steps)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and (self._paused or not self._pending):
                    self._cond.wait()
                if self._stopping:
                    return
                job = next(j for j in job_names() if j in self._pending)
                trigger = self._pending.pop(job)
                self._running = (job, trigger, time.monotonic())
            try:
                self._run(job, trigger)
            except BaseException:  # a failed pass is reported by _run; never lose the thread
                log.exception("worker.job_crashed", job=job)
            finally:
                with self._cond:
                    self._running = None
                    self.completed += 1
                    self._cond.notify_all()
            if self._after is not None:
                try:
                    self._after()
                except Exception:
                    log.exception("worker.after_failed")


class Schedule:
    """The clock: APScheduler jobs whose only work is a request to the worker."""

    def __init__(self, worker: Worker, settings: ScheduleSettings) -> None:
        self._worker = worker
        self._settings = settings
        self._scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=1)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone=UTC,
        )

    def start(self, last_runs: dict[str, datetime] | None = None) -> None:
        self._scheduler.start()
        self.apply(self._settings, last_runs or {})

    def apply(self, settings: ScheduleSettings, last_runs: dict[str, datetime] | None = None) -> None:
        """(Re)create the interval jobs; a job whose interval passed since its last run runs now."""
        self._settings = settings
        now = datetime.now(UTC)
        for entry in scheduled_jobs():
            job, minutes = entry.name, minutes_for(settings, entry)
            existing = self._scheduler.get_job(job)
            if minutes == 0:
                if existing:
                    existing.remove()
                continue
            interval = timedelta(minutes=minutes)
            trigger = IntervalTrigger(minutes=minutes, jitter=settings.jitter_seconds or None,
                                      timezone=UTC)
            last = (last_runs or {}).get(job)
            if existing is not None and last is None:
                first = existing.next_run_time or now
                first = min(first, now + interval)
            elif last is not None:
                first = max(now, last + interval)
            elif entry.first_run == "interval":
                first = now + interval
            elif isinstance(entry.first_run, timedelta):
                first = now + min(interval, entry.first_run)
            else:
                first = now  # never ran on this machine: run once at start
            self._scheduler.add_job(self._worker.request, trigger, args=[job, "schedule"], id=job,
                                    name=job, replace_existing=True, next_run_time=first)

    def once(self, job: str, delay: float, trigger: str) -> None:
        """A single request ``delay`` seconds from now (replacing an earlier one for the job)."""
        when = datetime.now(UTC) + timedelta(seconds=delay)
        self._scheduler.add_job(self._worker.request, DateTrigger(when, timezone=UTC),
                                args=[job, trigger], id=f"{job}-retry", replace_existing=True)

    def next_runs(self) -> dict[str, str | None]:
        runs: dict[str, str | None] = {}
        for job in self._scheduler.get_jobs():
            if job.id not in {entry.name for entry in scheduled_jobs()}:
                continue
            when = job.next_run_time
            runs[job.id] = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None
        return runs

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
