"""The store lock's timings come from the policy's [lock] table (policy.LockTimings), and only
from there: a StoreLock without timings has the shipped policy's, given seconds replace them, and
the mutex is tried as often as the policy says. On real files in tmp_path."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest
from distilld.engine.lock import LockStateKind, StoreLock, lock_status
from distilld.errors import LockLost, LockUsageError, PolicyError
from distilld.policy import LockTimings, load_policy

T0 = 1_795_991_190


class FakeClock:
    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now


def test_the_shipped_policy_has_the_protocol_numbers() -> None:
    # STORE-FORMAT.md 2.2: stale after 5 minutes; the mutex waited for at most 10 s, every 50 ms.
    timings = load_policy().lock
    assert (timings.stale_seconds, timings.takeover_wait_seconds, timings.mutex_poll_seconds) == (300, 10, 0.05)
    assert (timings.poll_seconds, timings.waiting_recheck_seconds) == (2, 10)


def test_a_lock_without_timings_has_the_policy_defaults(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path, "alpha")
    assert lock.timings == load_policy().lock
    assert (lock.stale_seconds, lock.poll_seconds, lock.takeover_wait_seconds) == (300, 2, 10)


def test_given_seconds_replace_those_of_the_timings(tmp_path: Path) -> None:
    base = LockTimings(poll_seconds=0.5, takeover_wait_seconds=3, mutex_poll_seconds=0.01)
    lock = StoreLock(tmp_path, "alpha", stale_seconds=60, timings=base)
    assert lock.timings == LockTimings(stale_seconds=60, poll_seconds=0.5, takeover_wait_seconds=3,
                                       mutex_poll_seconds=0.01)
    assert StoreLock.from_policy(tmp_path, "alpha", base).timings == base


def test_lock_status_judges_staleness_by_the_policy_by_default(tmp_path: Path) -> None:
    clock = FakeClock()
    StoreLock(tmp_path, "alpha", clock=clock).acquire()
    clock.now += load_policy().lock.stale_seconds - 1
    assert lock_status(tmp_path, clock=clock).kind is LockStateKind.HELD
    clock.now += 1
    assert lock_status(tmp_path, clock=clock).kind is LockStateKind.STALE


@pytest.mark.parametrize("name", ["stale_seconds", "poll_seconds", "mutex_poll_seconds",
                                  "waiting_recheck_seconds", "takeover_wait_seconds"])
def test_a_bad_timing_is_a_usage_error_naming_it(tmp_path: Path, name: str) -> None:
    with pytest.raises(LockUsageError, match=name) as caught:
        LockTimings(**{name: -1})
    assert caught.value.exit_code == 2
    if name != "takeover_wait_seconds":  # 0 s there means: try the mutex once
        with pytest.raises(LockUsageError, match=name):
            LockTimings(**{name: 0})
    if name in ("stale_seconds", "poll_seconds", "takeover_wait_seconds"):
        with pytest.raises(LockUsageError, match=name):
            StoreLock(tmp_path, "alpha", **{name: -1})


def test_a_timing_in_the_policy_file_is_checked_and_used(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("[lock]\nmutex_poll_seconds = 0.2\nwaiting_recheck_seconds = 3\n", "utf-8")
    assert load_policy(path).lock == LockTimings(mutex_poll_seconds=0.2, waiting_recheck_seconds=3)
    path.write_text("[lock]\nmutex_poll_seconds = 0\n", "utf-8")
    with pytest.raises(PolicyError, match="lock.mutex_poll_seconds"):
        load_policy(path)


def test_the_mutex_is_tried_as_often_as_the_timings_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    timings = LockTimings(takeover_wait_seconds=0.3, mutex_poll_seconds=0.07)
    lock = StoreLock(tmp_path, "alpha", timings=timings)
    lock.acquire()
    naps: list[float] = []
    real_sleep = time.sleep

    def nap(seconds: float) -> None:
        naps.append(seconds)
        real_sleep(seconds)

    holder = os.open(tmp_path / ".lock.takeover", os.O_RDONLY | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another open file description: excluded like a process
        monkeypatch.setattr(time, "sleep", nap)
        with pytest.raises(LockLost, match="contended"):
            lock.heartbeat()
        monkeypatch.undo()
    finally:
        os.close(holder)
    assert naps and naps[0] == 0.07 and max(naps) <= 0.07
    lock.release()
