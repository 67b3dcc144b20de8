"""The daemon's daily health report: written into the state folder, and `status` says where."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from builders import healthy_store
from distilld.actions import status as status_action
from distilld.engine.lock import default_owner
from distilld.log import ActivityLog, StatusFile
from distilld.policy import load_policy
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.store_git import StoreGit
from distilld.registry import job_entry
from distilld.runtime.scheduler import Schedule, Worker
from distilld.settings import ScheduleSettings, load_settings

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def make_env(tmp_path: Path) -> JobEnv:
    store = healthy_store(tmp_path / "store").root
    settings = load_settings(overrides={"store": str(store)})
    policy = load_policy()
    state = tmp_path / "state"
    return JobEnv(settings=settings, policy=policy, store=store, owner=default_owner(),
                  status=StatusFile(state / "status.json", {}), activity=ActivityLog(state / "activity.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(store, settings, policy, lambda: NOW), clock=lambda: NOW)


def test_the_report_job_writes_the_report_into_the_state_folder(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    env.activity.write("started: following the store")
    before = {p.relative_to(env.store) for p in env.store.rglob("*")}
    result = run_job(env, "report", "schedule")
    assert result.ok, result.summary
    state = tmp_path / "state"
    record = env.status.get("report")
    assert record["html"] == str(state / "report.html") and record["json"] == str(state / "report.json")
    data = json.loads((state / "report.json").read_text())
    assert data["schema"] == "distilld.report/1" and data["today"] == "2026-11-30"
    distilld = next(s for s in data["sections"] if s["key"] == "distilld")
    lines = next(f for f in distilld["figures"] if f["key"] == "activity_lines")
    assert lines["value"] == 1  # the daemon's own activity log was read
    assert "<svg" in (state / "report.html").read_text()
    assert {p.relative_to(env.store) for p in env.store.rglob("*")} == before  # nothing written in the store
    assert f"wrote the health report: {state / 'report.html'}" in env.activity.path.read_text()
    env.status.flush(force=True)
    view = status_action.build_view(env.store, json.loads(env.status.path.read_text()), 123, None, {})
    assert f"health report: {state / 'report.html'} (written " in status_action.render_text(view)


def test_status_says_when_there_is_no_report_yet(tmp_path: Path) -> None:
    view = status_action.build_view(tmp_path, {"state": "idle"}, None, None, {})
    assert "health report: none yet" in status_action.render_text(view)


def test_the_report_is_scheduled_daily_and_first_a_while_after_start() -> None:
    worker = Worker(lambda job, trigger: None)
    schedule = Schedule(worker, ScheduleSettings(compaction_minutes=0, lifecycle_minutes=0, sync_minutes=0,
                                                 reconcile_minutes=0, jitter_seconds=0))
    try:
        schedule.start({})
        first = datetime.fromisoformat(str(schedule.next_runs()["report"]).replace("Z", "+00:00"))
        assert timedelta(0) < first - datetime.now(UTC) <= job_entry("report").first_run
        yesterday = datetime.now(UTC) - timedelta(hours=20)
        schedule.apply(ScheduleSettings(compaction_minutes=0, lifecycle_minutes=0, sync_minutes=0,
                                        reconcile_minutes=0, jitter_seconds=0), {"report": yesterday})
        again = datetime.fromisoformat(str(schedule.next_runs()["report"]).replace("Z", "+00:00"))
        assert timedelta(hours=3, minutes=59) < again - datetime.now(UTC) <= timedelta(hours=4, seconds=1)
    finally:
        schedule.shutdown()
