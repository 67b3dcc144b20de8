"""The jobs as the worker runs them: waiting for a distiller and saying so, taking over a stale
lock as the protocol allows (and logging it), the lifecycle only while `.lifecycle` says so,
budget breaches reported at once, and a failing pass reported without stopping the next."""

from __future__ import annotations

import dataclasses
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, healthy_store
from distilld.engine.lock import AcquireResult, StoreLock, default_owner
from distilld.log import ActivityLog, StatusFile
from distilld.policy import LockTimings, load_policy, parse_policy
from distilld.runtime import job_runner, jobs
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv, Stopping
from distilld.runtime.store_git import StoreGit
from distilld.settings import load_settings

LATER = datetime(2028, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def env(tmp_path: Path) -> JobEnv:
    store = healthy_store(tmp_path / "store").root
    settings = load_settings(overrides={"store": str(store)})
    policy = load_policy()
    return JobEnv(settings=settings, policy=policy, store=store, owner=default_owner(),
                  status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(store, settings, policy, lambda: LATER),
                  clock=lambda: LATER)


def activity(env: JobEnv) -> str:
    return env.activity.path.read_text() if env.activity.path.exists() else ""


def test_follow_waits_while_a_distiller_holds_the_lock(env: JobEnv) -> None:
    distiller = StoreLock(env.store, "alpha")
    distiller.acquire()
    result = run_job(env, "follow", "watch")
    assert result.ok and result.summary.startswith("waiting: lock held by alpha")
    assert env.status.get("waiting")["owner"] == "alpha"
    assert env.status.get("state") == "waiting"
    assert env.wants_release
    run_job(env, "follow", "watch")
    assert activity(env).count("waiting: lock held by alpha") == 1  # said once, not per look
    distiller.release()
    result = run_job(env, "follow", "lock released")
    assert not result.summary.startswith("waiting")
    assert env.status.get("waiting") is None and env.status.get("state") == "idle"


def test_a_blocking_wait_ends_on_stop(env: JobEnv) -> None:
    distiller = StoreLock(env.store, "alpha")
    distiller.acquire()
    threading.Timer(0.3, env.stop.set).start()
    started = time.monotonic()
    with pytest.raises(Stopping):
        env.take_lock("compaction")
    assert time.monotonic() - started < 15
    assert "waiting: lock held by alpha" in activity(env)
    distiller.release()


def test_a_waiting_job_looks_again_as_often_as_the_policy_says(env: JobEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    # The watcher stays silent here, so only the policy's waiting_recheck_seconds brings the next
    # look (5 polls would be 5 minutes): five looks come within seconds, not 40 s.
    env.policy = dataclasses.replace(env.policy, lock=LockTimings(poll_seconds=60, waiting_recheck_seconds=0.05))
    distiller = StoreLock(env.store, "alpha")
    distiller.acquire()
    looks: list[float] = []
    real_acquire = StoreLock.acquire

    def look(self: StoreLock, wait: float = 0) -> AcquireResult:
        looks.append(time.monotonic())
        if len(looks) == 5:
            env.stop.set()
        return real_acquire(self, wait)

    monkeypatch.setattr(StoreLock, "acquire", look)
    give_up = threading.Timer(25, env.stop.set)  # a generous bound, and the test still ends
    give_up.start()
    try:
        with pytest.raises(Stopping):
            env.take_lock("compaction")
    finally:
        give_up.cancel()
    monkeypatch.undo()
    assert len(looks) >= 5
    distiller.release()


def test_a_stale_lock_is_taken_over_and_the_takeover_logged(env: JobEnv) -> None:
    (env.store / ".lock").write_text("ghost 1000 1970-01-01T00:16:40Z\n")
    held = env.take_lock("lifecycle")
    assert "took over a stale lock from ghost" in activity(env)
    assert (env.store / ".lock").read_text().startswith(default_owner() + " ")
    held.release()


def test_lifecycle_moves_nothing_unless_enabled(env: JobEnv) -> None:
    result = run_job(env, "lifecycle", "schedule")
    assert result.ok and "disabled" in result.summary
    assert (env.store / "projects" / "kestrel.md").exists()


def test_lifecycle_archives_stale_projects_and_says_so(env: JobEnv) -> None:
    (env.store / ".lifecycle").write_text("enabled\n")
    result = run_job(env, "lifecycle", "schedule")
    assert result.ok, result.summary
    assert result.summary == "archived 1 file"
    assert (env.store / "archive" / "projects" / "kestrel.md").exists()
    assert "archived projects/kestrel.md (past 90 days" in activity(env)
    assert (env.store / "projects" / "osprey.md").exists()  # pinned


def test_budget_breaches_are_reported_at_once_and_once(env: JobEnv) -> None:
    spine = env.store / "SPINE.md"
    spine.write_text(spine.read_text() + "".join(f"- filler line {i} {EM} nothing\n" for i in range(70)))
    run_job(env, "follow", "watch")
    text = activity(env)
    assert "over budget: SPINE.md has" in text and "(cap 80)" in text
    budgets = env.status.get("budgets")
    assert budgets["spine_lines"]["margin"] < 0
    run_job(env, "follow", "watch")
    assert activity(env).count("over budget") == 1


def test_a_failing_pass_is_reported_and_the_next_runs(env: JobEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(env: JobEnv, trigger: str) -> jobs.PassResult:
        raise RuntimeError("boom")

    real = job_runner.job_function
    monkeypatch.setattr(job_runner, "job_function", lambda job: boom if job == "compaction" else real(job))
    failed = run_job(env, "compaction", "schedule")
    assert not failed.ok
    assert "compaction failed: RuntimeError: boom" in activity(env)
    assert env.status.get("last_error")["job"] == "compaction"
    assert env.status.get("passes")["compaction"]["ok"] is False
    assert run_job(env, "follow", "watch").ok
    assert env.status.get("state") == "idle"


def test_a_missing_store_is_waited_for(env: JobEnv, tmp_path: Path) -> None:
    env.store = tmp_path / "nowhere"
    result = run_job(env, "follow", "start")
    assert result.summary.startswith("waiting: no store")
    assert env.status.get("waiting")["for"] == "store"


@pytest.mark.parametrize("job", ["sync", "compaction", "lifecycle", "reconcile"])
def test_every_job_waits_for_a_store_that_does_not_exist_yet(env: JobEnv, tmp_path: Path, job: str) -> None:
    env.store = tmp_path / "not-yet"  # a fresh install: `distilld run` before the first distillation
    result = run_job(env, job, "schedule")
    assert result.ok, result.summary
    assert "waiting: no store" in result.summary or "disabled" in result.summary
    assert not env.store.exists()  # nothing was created on the way


def test_without_a_repository_commits_say_why(env: JobEnv) -> None:
    result = run_job(env, "follow", "watch")
    assert result.ok
    assert "distilld init" in env.status.get("passes")["commit"]["summary"]
