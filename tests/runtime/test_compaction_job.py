"""The daemon's scheduled compaction never commits a failing store, and a store left mid-pass is
shown as stuck until a pass has finished or rolled it back (issue 9, items 8 and 9).

The jobs run in-process on a store in tmp_path that is its own git repository (``distilld init``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
from distilld.actions.status import find_stuck
from distilld.actions.sync import run_init
from distilld.engine.context import PassContext
from distilld.crashpoints import CRASH_ENV
from distilld.engine.lock import default_owner
from distilld.log import ActivityLog, StatusFile
from distilld.policy import load_policy
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.store_git import StoreGit
from distilld.settings import load_settings
from distilld.store.findings import Finding, fail
from maintenance_fixtures import add_uncuttable_file, age_lock, have_bash, migrated_store_over_targets, oracle_passes

POLICY = load_policy()
pytestmark = pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")


def clock() -> datetime:
    return datetime.now(UTC)


def job_env(root: Path, tmp_path: Path) -> JobEnv:
    settings = load_settings(overrides={"store": str(root)})
    return JobEnv(settings=settings, policy=POLICY, store=root, owner=default_owner(),
                  status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(root, settings, POLICY, clock), clock=clock)


def repository_store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    run_init(root, POLICY, clock)
    return root


def head(root: Path) -> str:
    return str(pygit2.Repository(str(root)).head.target)


def shared_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and not p.relative_to(root).as_posix().startswith((".git/", "data/", ".lock", ".status"))}


def test_a_scheduled_compaction_whose_self_check_fails_is_rolled_back_and_not_committed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = repository_store(tmp_path)
    committed, tree = head(root), shared_tree(root)
    real = PassContext.self_check

    def failing(self: PassContext, before: object = None) -> list[Finding]:
        return [*real(self, before), fail("C1", "made-up", "SPINE.md", "a failure only this test makes")]  # type: ignore[arg-type]

    monkeypatch.setattr(PassContext, "self_check", failing)
    env = job_env(root, tmp_path)

    result = run_job(env, "compaction", "schedule")

    assert not result.ok and "self-check failed" in result.summary, result.summary
    assert head(root) == committed  # nothing committed
    assert shared_tree(root) == tree  # and the store is as it was, byte for byte
    record = env.status.get("passes")["compaction"]
    assert record["ok"] is False
    stuck = find_stuck(env.status.data(), True, None, time.time())
    assert any(line.startswith("the last compaction pass failed: self-check failed") for line in stuck), stuck
    assert "compaction failed: self-check failed" in env.activity.path.read_text()


def test_a_scheduled_compaction_that_leaves_a_cap_failing_names_the_unit_in_status_and_the_activity_log(
        tmp_path: Path) -> None:
    root = tmp_path / "store"
    add_uncuttable_file(migrated_store_over_targets(root))
    run_init(root, POLICY, clock)
    env = job_env(root, tmp_path)

    result = run_job(env, "compaction", "schedule")

    assert result.ok, result.summary  # the pass did what it could; the store's own state is check's to report
    assert result.summary.endswith("; still over a cap: ops/fridays.md"), result.summary
    assert env.status.get("passes")["compaction"]["summary"] == result.summary
    logged = [line for line in env.activity.path.read_text().splitlines() if "could not fix" in line]
    assert len(logged) == 1, logged
    assert ("compaction could not fix: ops/fridays.md has 84 lines (max 60): ops/fridays.md: the marked section "
            "'## [NON-NEGOTIABLE] Never deploy on Fridays' at lines 13-84 is 72 lines") in logged[0]
    assert "more than a split piece can hold (about 52 lines" in logged[0]
    assert logged[0].endswith("Shorten it or move part of it to another file by hand")


@pytest.mark.slow
def test_a_store_left_mid_pass_is_stuck_and_not_committed_until_the_compaction_recovers_it(tmp_path: Path) -> None:
    root = repository_store(tmp_path)
    shutil.copytree(root, tmp_path / "before", ignore=shutil.ignore_patterns(".git"))
    committed = head(root)
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    proc = subprocess.run([sys.executable, "-m", "distilld", "compact", str(root), "--apply"],
                          env={**env, CRASH_ENV: "file-written:1"}, capture_output=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL, proc
    age_lock(root)
    job = job_env(root, tmp_path)

    follow = run_job(job, "follow", "test")  # the orphan split child is not committed as an agent change

    assert head(root) == committed, follow.summary
    interrupted = job.status.get("interrupted")
    assert interrupted and interrupted[0].startswith("data/compact-journals/"), interrupted
    stuck = find_stuck(job.status.data(), True, None, time.time())
    assert any(s.startswith("an interrupted pass is not finished: data/compact-journals/") for s in stuck), stuck

    result = run_job(job, "compaction", "schedule")

    assert result.ok, result.summary
    assert job.status.get("interrupted") == []
    assert not any(s.startswith("an interrupted pass") for s in find_stuck(job.status.data(), True, None, time.time()))
    oracle_passes(root, tmp_path / "before")
    repo = pygit2.Repository(str(root))
    assert head(root) != committed and not repo.status()  # the finished compaction is one commit, all of it
    last = repo[repo.head.target].peel(pygit2.Commit)
    assert "compaction" in last.message
