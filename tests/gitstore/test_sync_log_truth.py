"""What the sync job records and logs is true (issue 23, item 11), with real repositories: a
skipped sync is not ok and does not say "sync works again" while the remote still refuses; a
stale `.git/index.lock` is listed under `stuck:`; a remote rewound by a force-push is logged."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pygit2
import pytest
from gitmachines import Machine, Origin, lifecycle_store

from distilld.actions.status import build_view
from distilld.engine.lock import default_owner
from distilld.log import ActivityLog, StatusFile
from distilld.runtime.follow_job import ASKED_BY_A_PERSON
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.store_git import StoreGit
from distilld.settings import load_settings


PERSON = next(iter(ASKED_BY_A_PERSON))


def job_env(tmp_path: Path, machine: Machine) -> JobEnv:
    settings = load_settings(overrides={"store": str(machine.root)})
    return JobEnv(settings=settings, policy=machine.policy, store=machine.root, owner=default_owner(),
                  status=StatusFile(tmp_path / f"status-{machine.name}.json", {}),
                  activity=ActivityLog(tmp_path / f"activity-{machine.name}.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(machine.root, settings, machine.policy, machine.clock), clock=machine.clock)


def activity(env: JobEnv) -> str:
    return env.activity.path.read_text() if env.activity.path.exists() else ""


@pytest.fixture
def a(tmp_path: Path, origin: Origin) -> Machine:
    machine = Machine("a", tmp_path / "a", origin)
    lifecycle_store(machine.root)
    machine.init()
    assert machine.sync().pushed
    return machine


def test_a_skipped_sync_is_not_ok_and_never_says_sync_works_again(tmp_path: Path, a: Machine,
                                                                 origin: Origin) -> None:
    env = job_env(tmp_path, a)
    gone = origin.path.with_name("moved-away.git")
    shutil.move(origin.path, gone)  # the remote cannot be reached
    a.append("projects/old-a.md", "- a line to push\n")
    run_job(env, "sync", "schedule")
    assert "sync blocked:" in activity(env)
    blocked = env.status.get("git")["blocked"]
    assert blocked

    lock = Path(a.root / ".git/index.lock")
    lock.write_bytes(b"")  # git is busy: the next sync is skipped
    result = run_job(env, "sync", "schedule")

    assert not result.ok
    assert env.status.get("passes")["sync"]["ok"] is False
    assert env.status.get("git")["blocked"] == blocked  # still blocked: nothing proved otherwise
    assert "sync works again" not in activity(env)

    old = time.time() - 120
    os.utime(lock, (old, old))
    view = build_view(a.root, env.status.data(), 123, None, {})
    stale = [line for line in view.stuck if ".git/index.lock is 1" in line]
    assert stale and "no commit can be made" in stale[0], view.stuck
    assert view.to_dict()["ok"] is False

    lock.unlink()
    shutil.move(gone, origin.path)
    run_job(env, "sync", PERSON)  # past the backoff
    assert "sync works again" in activity(env)


def test_a_remote_rewound_by_a_force_push_is_logged(tmp_path: Path, a: Machine, origin: Origin) -> None:
    env = job_env(tmp_path, a)
    first = origin.head()
    a.append("projects/old-a.md", "- pushed, then rewound away\n")
    run_job(env, "sync", "schedule")
    assert origin.head() != first
    bare = pygit2.Repository(str(origin.path))
    bare.references["refs/heads/main"].set_target(first)  # someone force-pushed main back

    run_job(env, "sync", "schedule")

    log = activity(env)
    assert "was rewound (force-pushed)" in log and first[:7] in log, log
    assert origin.head() == a.head()  # and the next push put the lost commit back
