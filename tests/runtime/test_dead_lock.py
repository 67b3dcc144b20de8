"""A lock whose owner no longer runs (a killed daemon's, a killed pass's) is judged once, the same
way by every path: the follow job and the jobs take it over at once instead of waiting out the
stale period, and `status` says who holds the lock, whether they run, and lists a dead holder
under `stuck:`."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import healthy_store
from distilld.actions.status import build_view, find_stuck, render_text
from distilld.engine.lock import LockStateKind, StoreLock, default_owner, lock_status
from distilld.log import ActivityLog, StatusFile
from distilld.policy import load_policy
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.store_git import StoreGit
from distilld.settings import load_settings
from hostile import dead_pid
from waiting import wait_for

LATER = datetime(2028, 1, 1, 12, 0, 0, tzinfo=UTC)


def host_owner(pid: int) -> str:
    return default_owner().rsplit(".", 1)[0] + f".{pid}"


def write_lock(root: Path, owner: str, epoch: int) -> None:
    (root / ".lock").write_text(f"{owner} {epoch} 2026-11-30T12:00:00Z\n")


@pytest.fixture
def env(tmp_path: Path) -> JobEnv:
    store = healthy_store(tmp_path / "store").root
    settings = load_settings(overrides={"store": str(store)})
    policy = load_policy()
    return JobEnv(settings=settings, policy=policy, store=store, owner=default_owner(),
                  status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(store, settings, policy, lambda: LATER), clock=lambda: LATER)


def test_a_fresh_lock_of_a_dead_owner_is_abandoned_and_one_of_a_live_owner_held(tmp_path: Path) -> None:
    dead = host_owner(dead_pid())
    write_lock(tmp_path, dead, int(time.time()))
    state = lock_status(tmp_path)
    assert (state.kind, state.alive, state.owner) == (LockStateKind.ABANDONED, False, dead)
    assert not state.blocks
    assert "no longer runs" in (state.liveness or "")

    StoreLock(tmp_path, "distilld.test.1").acquire(0)  # taken over at once: the same decision
    live = host_owner(1)  # pid 1 always runs, and started long before this lock
    write_lock(tmp_path, live, int(time.time()))
    state = lock_status(tmp_path)
    assert (state.kind, state.alive) == (LockStateKind.HELD, True) and state.blocks

    elsewhere = "distilld.some-other-machine.4242"
    write_lock(tmp_path, elsewhere, int(time.time()))
    state = lock_status(tmp_path)
    assert (state.kind, state.alive) == (LockStateKind.HELD, None)  # cannot tell: the stale period rules
    assert "another machine" in (state.liveness or "")


def test_a_lock_whose_owner_is_an_unreaped_zombie_is_abandoned(tmp_path: Path) -> None:
    # A killed daemon its supervisor has not reaped yet keeps its pid: it runs no more all the same.
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        wait_for(lambda: Path(f"/proc/{child.pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()[0] == b"Z",
                 timeout=30, what="the child to exit unreaped")
        write_lock(tmp_path, host_owner(child.pid), int(time.time()))
        state = lock_status(tmp_path)
        assert (state.kind, state.alive) == (LockStateKind.ABANDONED, False), state
        assert not state.blocks
    finally:
        child.wait()


def test_follow_takes_a_dead_daemons_lock_over_at_once_and_says_its_owner_no_longer_runs(env: JobEnv) -> None:
    dead = host_owner(dead_pid())
    write_lock(env.store, dead, int(time.time()))
    started = time.monotonic()
    result = run_job(env, "follow", "start")
    assert result.ok and not result.summary.startswith("waiting"), result.summary
    assert time.monotonic() - started < load_policy().lock.stale_seconds
    assert not (env.store / ".lock").exists()  # taken over and given back: it lingers no more
    assert env.status.get("waiting") is None
    log = env.activity.path.read_text()
    assert f"took over the lock of {dead}: its owner, process {dead.rsplit('.', 1)[1]} of this machine, " \
           "no longer runs" in log
    assert "without a heartbeat" not in log and "waiting: lock held" not in log


def test_a_live_distillers_lock_still_makes_follow_wait(env: JobEnv) -> None:
    write_lock(env.store, host_owner(1), int(time.time()))
    result = run_job(env, "follow", "watch")
    assert result.summary.startswith(f"waiting: lock held by {host_owner(1)}")
    assert (env.store / ".lock").exists()


def test_status_names_the_holder_says_whether_it_runs_and_lists_a_dead_one_as_stuck(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    dead = host_owner(dead_pid())
    write_lock(store, dead, int(time.time()))
    view = build_view(store, {"state": "idle"}, None, None, {})
    text = render_text(view)
    assert f"lock: abandoned, by {dead} for" in text and "no longer runs" in text
    stuck = text.split("stuck:")[1]
    assert dead in stuck and "no longer runs" in stuck
    assert view.to_dict()["lock"]["alive"] is False

    write_lock(store, host_owner(1), int(time.time()))
    view = build_view(store, {"state": "idle"}, None, None, {})
    assert f"lock: held, by {host_owner(1)} for" in render_text(view)
    assert "runs)" in render_text(view)
    assert not any(host_owner(1) in line for line in view.stuck)


def test_status_lists_no_unpushed_commits_without_a_remote_or_with_push_off() -> None:
    now = time.time()
    no_remote = {"git": {"ahead": 5, "remote": None, "push": False}}
    assert not any("not pushed" in line for line in find_stuck(no_remote, True, None, now))
    push_off = {"git": {"ahead": 5, "remote": "origin", "push": False}}
    assert not any("not pushed" in line for line in find_stuck(push_off, True, None, now))
    pushing = {"git": {"ahead": 5, "remote": "origin", "push": True}}
    assert "5 commit(s) not pushed yet" in find_stuck(pushing, True, None, now)
