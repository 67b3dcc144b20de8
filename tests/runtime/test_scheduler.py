"""The worker and the schedule: one thread, never two jobs at once, requests merged and never
lost, pause and resume, missed runs caught up rather than dropped."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from distilld.registry import job_names
from distilld.runtime.scheduler import Schedule, Worker
from distilld.settings import ScheduleSettings
from waiting import wait_for


class Tracker:
    def __init__(self, duration: float = 0.0) -> None:
        self.duration = duration
        self.runs: list[tuple[str, str]] = []
        self.active = 0
        self.max_active = 0
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, job: str, trigger: str) -> None:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.threads.add(threading.current_thread().name)
        time.sleep(self.duration)  # the job's own work: how long it runs is what is simulated
        with self._lock:
            self.runs.append((job, trigger))
            self.active -= 1


def test_requests_made_while_running_are_merged_into_one_more_run() -> None:
    tracker = Tracker(duration=0.3)
    worker = Worker(tracker)
    worker.start()
    try:
        worker.request("follow", "watch")
        wait_for(lambda: tracker.active == 1, 5, "the first run to be running")
        for _ in range(50):
            worker.request("follow", "watch")
        assert worker.wait_idle(5)
    finally:
        worker.shutdown(5)
    assert tracker.runs == [("follow", "watch"), ("follow", "watch")]


def test_one_thread_never_two_jobs_at_once() -> None:
    tracker = Tracker(duration=0.05)
    worker = Worker(tracker)
    worker.start()
    try:
        for job in job_names():
            worker.request(job, "test")
        assert worker.wait_idle(5)
    finally:
        worker.shutdown(5)
    assert tracker.max_active == 1
    assert tracker.threads == {"distilld-worker"}
    assert [job for job, _ in tracker.runs] == list(job_names())  # the agents' changes first


def test_triggers_are_merged() -> None:
    tracker = Tracker()
    worker = Worker(tracker)
    worker.pause()
    worker.start()
    try:
        worker.request("sync", "schedule")
        worker.request("sync", "commit")
        worker.request("sync", "commit")
        worker.resume()
        assert worker.wait_idle(5)
    finally:
        worker.shutdown(5)
    assert tracker.runs == [("sync", "schedule+commit")]


def test_pause_holds_requests_until_resume() -> None:
    tracker = Tracker()
    worker = Worker(tracker)
    worker.start()
    try:
        worker.pause()
        worker.request("compaction", "run-now")
        # An absence over time, deliberately: an unpaused worker starts a request within
        # milliseconds (every other test here), so 0.2 s without a run is the pause holding it.
        time.sleep(0.2)
        assert tracker.runs == []
        assert worker.state()["pending"] == {"compaction": "run-now"}
        worker.resume()
        assert worker.wait_idle(5)
    finally:
        worker.shutdown(5)
    assert tracker.runs == [("compaction", "run-now")]


def test_a_crashing_job_does_not_stop_the_worker() -> None:
    runs: list[str] = []

    def run(job: str, trigger: str) -> None:
        runs.append(job)
        if job == "follow":
            raise RuntimeError("boom")

    worker = Worker(run)
    worker.start()
    try:
        worker.request("follow", "x")
        worker.request("sync", "x")
        assert worker.wait_idle(5)
    finally:
        worker.shutdown(5)
    assert runs == ["follow", "sync"]


def test_unknown_job_is_refused() -> None:
    with pytest.raises(ValueError):
        Worker(Tracker()).request("dance", "x")


def test_schedule_uses_the_catch_up_settings() -> None:
    worker = Worker(Tracker())
    schedule = Schedule(worker, ScheduleSettings())
    defaults = schedule._scheduler._job_defaults
    assert defaults["misfire_grace_time"] is None  # a run missed during sleep still happens
    assert defaults["coalesce"] is True and defaults["max_instances"] == 1


def test_missed_runs_are_caught_up_once_at_start() -> None:
    tracker = Tracker()
    worker = Worker(tracker)
    worker.start()
    schedule = Schedule(worker, ScheduleSettings(compaction_minutes=60, lifecycle_minutes=0, sync_minutes=15,
                                                 reconcile_minutes=30, jitter_seconds=0))
    long_ago = datetime.now(UTC) - timedelta(days=3)
    recent = datetime.now(UTC) - timedelta(minutes=1)
    try:
        schedule.start({"compaction": long_ago, "sync": recent, "reconcile": recent})
        assert worker.wait_idle(5)
        # An absence over time, deliberately: a second catch-up would be queued at once, so
        # 0.5 s more without one is the scheduler catching up only once.
        time.sleep(0.5)
        assert worker.wait_idle(5)
        runs = schedule.next_runs()
    finally:
        schedule.shutdown()
        worker.shutdown(5)
    assert tracker.runs == [("compaction", "schedule")]  # overdue: once, not 72 times
    assert "lifecycle" not in runs  # 0 turns a job off
    sync_next = datetime.fromisoformat(str(runs["sync"]).replace("Z", "+00:00"))
    assert timedelta(minutes=13) < sync_next - datetime.now(UTC) <= timedelta(minutes=14, seconds=1)


def test_a_late_timer_still_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run due while the machine slept fires when it wakes (grace None), instead of MISSED."""
    tracker = Tracker()
    worker = Worker(tracker)
    worker.start()
    schedule = Schedule(worker, ScheduleSettings(compaction_minutes=0, lifecycle_minutes=0, sync_minutes=1,
                                                 reconcile_minutes=0, jitter_seconds=0))
    try:
        schedule.start({"sync": datetime.now(UTC)})
        job = schedule._scheduler.get_job("sync")
        job.modify(next_run_time=datetime.now(UTC) - timedelta(minutes=10))  # "slept" past it
        schedule._scheduler.wakeup()
        wait_for(lambda: tracker.runs, 5, "the late run")
    finally:
        schedule.shutdown()
        worker.shutdown(5)
    assert tracker.runs == [("sync", "schedule")]
