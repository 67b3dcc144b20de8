"""The daemon's follow pass keeps `find`'s index current from the watcher's changes, where an
index exists, and never makes one for a store nobody searches."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

from builders import healthy_store
from distilld.engine.lock import default_owner
from distilld.log import ActivityLog, StatusFile
from distilld.policy import load_policy
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.store_git import StoreGit
from distilld.search.answers import find_answer
from distilld.search.session import SearchIndex, index_path
from distilld.settings import load_settings

LATER = datetime(2028, 1, 1, 12, 0, 0, tzinfo=UTC)


def make_env(tmp_path: Path) -> JobEnv:
    store = healthy_store(tmp_path / "store").root
    settings = load_settings(overrides={"store": str(store), "git": {"commit": False}})
    policy = load_policy()
    return JobEnv(settings=settings, policy=policy, store=store, owner=default_owner(),
                  status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(store, settings, policy, lambda: LATER), clock=lambda: LATER)


def indexed_stamp(store: Path) -> str:
    with sqlite3.connect(index_path(store.resolve())) as conn:
        return str(conn.execute("SELECT value FROM meta WHERE key = 'stamps_key'").fetchone()[0])


def test_follow_updates_an_existing_index(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    find_answer(SearchIndex(env.store), "canary")  # someone searched: the index exists
    before = indexed_stamp(env.store)
    (env.store / "ops/deploy.md").write_text("# Deploy\n\n- The heron gate before the canary.\n")
    assert run_job(env, "follow", "watch").ok
    assert indexed_stamp(env.store) != before
    with sqlite3.connect(index_path(env.store.resolve())) as conn:
        assert conn.execute("SELECT count(*) FROM body_fts WHERE body_fts MATCH 'heron'").fetchone()[0] == 1


def test_follow_makes_no_index_for_a_store_nobody_searches(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    assert run_job(env, "follow", "watch").ok
    assert not index_path(env.store.resolve()).exists()
