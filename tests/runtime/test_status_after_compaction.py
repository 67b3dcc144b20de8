"""A pass that changed the store has it checked and measured again: status.json never keeps
saying the store fails a check that compaction has just mended (a kill trial found `status`
listing "the last check pass failed: entry over 400 bytes" over a store that passed C1-C3)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from builders import EM, healthy_store
from distilld.engine.lock import default_owner
from distilld.log import ActivityLog, StatusFile
from distilld.policy import load_policy
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.once import run_cycle
from distilld.runtime.store_git import StoreGit
from distilld.settings import load_settings

POLICY = load_policy()


def clock() -> datetime:
    return datetime.now(UTC)


def breaching_store(tmp_path: Path) -> Path:
    root = healthy_store(tmp_path / "store").root
    spine = root / "SPINE.md"
    long_hook = " ".join(f"detail{n} about deploys" for n in range(25))
    spine.write_text(spine.read_text().replace(
        f"- [Deploy](ops/deploy.md) {EM} canary then soak.", f"- [Deploy](ops/deploy.md) {EM} canary then soak; {long_hook}."))
    return root


def job_env(root: Path, tmp_path: Path) -> JobEnv:
    settings = load_settings(overrides={"store": str(root)})
    return JobEnv(settings=settings, policy=POLICY, store=root, owner=default_owner(),
                  status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(root, settings, POLICY, clock), clock=clock)


class Requests:
    """The worker's queue as the jobs see it: what they asked to run next."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def request(self, job: str, trigger: str) -> None:
        self.asked.append((job, trigger))


def test_once_checks_again_after_the_compaction_mended_a_breach(tmp_path: Path) -> None:
    env = job_env(breaching_store(tmp_path), tmp_path)
    assert run_cycle(env, threading.Event(), None) == 0
    passes = env.status.get("passes")
    assert passes["compaction"]["ok"] is True
    assert passes["check"]["ok"] is True, passes["check"]  # measured after the compaction, not before
    assert env.status.get("budgets")["entries_over"] == 0


def test_the_daemon_asks_for_a_follow_after_a_compaction_that_changed_the_store(tmp_path: Path) -> None:
    env = job_env(breaching_store(tmp_path), tmp_path)
    requests = Requests()
    env.worker = requests  # type: ignore[assignment]
    assert run_job(env, "follow", "watch").ok
    assert env.status.get("passes")["check"]["ok"] is False
    requests.asked.clear()
    assert run_job(env, "compaction", "breach").ok
    assert ("follow", "after-compaction") in requests.asked
    assert run_job(env, "follow", "after-compaction").ok
    assert env.status.get("passes")["check"]["ok"] is True
    requests.asked.clear()
    assert run_job(env, "compaction", "schedule").ok  # nothing left to change: nothing asked
    assert ("follow", "after-compaction") not in requests.asked
