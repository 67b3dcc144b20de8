"""The store lock (engine/lock/) against STORE-FORMAT.md 2.2, on real files and processes."""

from __future__ import annotations

import errno
import fcntl
import multiprocessing
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distilld.engine.lock import (
    AcquireKind,
    LockLine,
    LockState,
    LockStateKind,
    StoreLock,
    check_owner,
    default_owner,
    format_iso,
    lock_status,
    read_lock,
)
from distilld.errors import DistilldError, LockHeld, LockIOError, LockLost, LockUsageError
from distilld.policy import LockTimings

T0 = 1_795_991_190  # 2026-11-29T22:26:30Z, the example line of STORE-FORMAT.md 2.2
ISO0 = "2026-11-29T22:26:30Z"
TEMP_NAME = re.compile(r"^\.(lock\.new|lock\.swap|status\.tmp)\.")
ISO_RE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


class FakeClock:
    def __init__(self, now: float = T0) -> None:
        self.now = float(now)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def temp_files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if TEMP_NAME.match(p.name))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "store"
    root.mkdir()
    yield root
    # Every test, including the error paths, must leave no temp file behind.
    assert temp_files(root) == []


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(root: Path, owner: str, clock: FakeClock | None = None, **kwargs: Any) -> StoreLock:
    kwargs.setdefault("poll_seconds", 0.05)
    kwargs.setdefault("takeover_wait_seconds", 2)
    if clock is not None:
        kwargs["clock"] = clock
    return StoreLock(root, owner, **kwargs)


def lock_text(root: Path) -> str:
    return (root / ".lock").read_text("ascii")


def status_text(root: Path) -> str:
    return (root / ".status").read_text("ascii")


# -- acquire ---------------------------------------------------------------------------------


def test_acquire_free_writes_complete_line_and_running_status(
    store: Path, clock: FakeClock
) -> None:
    result = make(store, "alpha", clock).acquire()

    assert result.kind is AcquireKind.ACQUIRED
    assert str(result) == "acquired"
    assert result.epoch == T0
    assert lock_text(store) == f"alpha {T0} {ISO0}\n"
    assert status_text(store) == f"running {ISO0}\n"


def test_acquire_by_same_owner_is_a_heartbeat(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    clock.advance(60)

    result = alpha.acquire()

    assert result.kind is AcquireKind.ALREADY_HELD
    assert str(result) == "acquired (already held)"
    assert read_lock(store) == LockLine("alpha", T0 + 60)
    assert alpha.epoch == T0 + 60
    assert status_text(store) == f"running {ISO0}\n"  # a plain heartbeat leaves .status alone


def test_acquire_held_by_another_owner_raises_lockheld(store: Path, clock: FakeClock) -> None:
    make(store, "alpha", clock).acquire()
    before = lock_text(store)
    clock.advance(120)

    with pytest.raises(LockHeld) as caught:
        make(store, "beta", clock).acquire()

    assert caught.value.owner == "alpha"
    assert caught.value.age == 120
    assert caught.value.exit_code == 1
    assert "alpha" in str(caught.value) and "120s" in str(caught.value)
    assert lock_text(store) == before


def test_a_wait_for_a_holder_is_told_once_and_an_acquire_without_wait_tells_nothing(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distilld.engine import lock as lock_package

    told: list[tuple[Path, str | None, int | None, float]] = []
    monkeypatch.setattr(lock_package, "waiting_hook", lambda *args: told.append(args))
    make(store, "alpha", clock).acquire()
    clock.advance(7)

    with pytest.raises(LockHeld):
        make(store, "beta", clock).acquire()
    assert told == []  # no wait asked: nothing to say
    with pytest.raises(LockHeld):
        make(store, "beta", clock).acquire(wait=0.1)  # polls about twice
    assert told == [(store, "alpha", 7, 0.1)]
    make(store, "alpha", clock).release()
    make(store, "beta", clock).acquire(wait=5)  # free at once: no wait, nothing said
    assert len(told) == 1


@pytest.mark.parametrize("wait", [-1, float("nan")])
def test_a_wait_that_is_not_a_length_of_time_is_a_usage_error(store: Path, wait: float) -> None:
    with pytest.raises(LockUsageError) as caught:
        make(store, "alpha").acquire(wait=wait)
    assert str(caught.value) == f"wait must be >= 0 seconds (got {wait!r})"
    assert not (store / ".lock").exists()


def test_a_lock_handle_shows_its_store_owner_and_epoch(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    assert repr(alpha) == f"StoreLock({str(store)!r}, 'alpha', epoch=None)"
    alpha.acquire()
    assert repr(alpha) == f"StoreLock({str(store)!r}, 'alpha', epoch={T0})"


def test_acquire_wait_polls_until_the_deadline(store: Path, clock: FakeClock) -> None:
    make(store, "alpha", clock).acquire()
    started = time.monotonic()

    with pytest.raises(LockHeld):
        make(store, "beta", clock, poll_seconds=0.02).acquire(wait=0.1)

    # The deadline runs on the monotonic clock, so the frozen fake clock cannot stretch it.
    assert 0.1 <= time.monotonic() - started < 2


def test_acquire_wait_gets_the_lock_once_released(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distilld.engine import lock as lock_package

    alpha = make(store, "alpha", clock)
    alpha.acquire()
    # Released once beta has found it held and starts waiting: the next poll must take it.
    monkeypatch.setattr(lock_package, "waiting_hook", lambda *args: alpha.release())

    result = make(store, "beta", clock, poll_seconds=0.05).acquire(wait=5)

    assert result.kind is AcquireKind.ACQUIRED
    assert read_lock(store) == LockLine("beta", T0)
    assert status_text(store) == f"running {ISO0}\n"


def test_stale_lock_is_taken_over_and_reports_the_old_owner(store: Path, clock: FakeClock) -> None:
    make(store, "alpha", clock).acquire()
    clock.advance(299)
    with pytest.raises(LockHeld):  # one second short of stale still blocks
        make(store, "beta", clock).acquire()
    clock.advance(1)

    result = make(store, "beta", clock).acquire()

    assert result.kind is AcquireKind.TOOK_OVER
    assert (result.previous_owner, result.previous_age) == ("alpha", 300)
    assert str(result) == "acquired (took over stale lock from alpha)"
    assert read_lock(store) == LockLine("beta", T0 + 300)
    assert status_text(store) == f"running {format_iso(T0 + 300)}\n"


def test_stale_lock_with_an_old_epoch_is_taken_over_on_the_real_clock(store: Path) -> None:
    (store / ".lock").write_text("ghost 1000 1970-01-01T00:16:40Z\n")

    result = StoreLock(store, "beta").acquire()

    assert result.kind is AcquireKind.TOOK_OVER
    assert result.previous_owner == "ghost"
    assert read_lock(store) == LockLine("beta", result.epoch)
    assert abs(result.epoch - time.time()) < 5


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n",
        b"lonely\n",
        b"alpha not-a-number 2026\n",
        b"alpha 12a\n",
        b"alpha \xd9\xa3\xd9\xa4\n",  # Arabic-Indic digits are not [0-9]
        b"\xff\xfe\x00junk",
        b"\nalpha 1795991190 second-line-does-not-count\n",
    ],
)
def test_malformed_lock_ages_by_mtime(store: Path, clock: FakeClock, content: bytes) -> None:
    path = store / ".lock"
    path.write_bytes(content)
    os.utime(path, (T0 - 100, T0 - 100))

    assert read_lock(store) == LockLine("?", T0 - 100)
    assert lock_status(store, 300, clock) == LockState(LockStateKind.HELD, "?", 100)
    with pytest.raises(LockHeld) as caught:
        make(store, "beta", clock).acquire()
    assert (caught.value.owner, caught.value.age) == ("?", 100)
    assert path.read_bytes() == content

    os.utime(path, (T0 - 300, T0 - 300))
    result = make(store, "beta", clock).acquire()
    assert result.kind is AcquireKind.TOOK_OVER
    assert (result.previous_owner, result.previous_age) == ("?", 300)
    assert lock_text(store) == f"beta {T0} {ISO0}\n"


@pytest.mark.parametrize("content", [b"alpha 1795991190", b"alpha 1795991190\n", b" alpha\t1795991190 \r\n"])
def test_a_lock_line_without_its_iso_stamp_still_names_its_owner_and_epoch(
    store: Path, clock: FakeClock, content: bytes
) -> None:
    # The script's read_lock takes the first two words; the stamp is for people.
    (store / ".lock").write_bytes(content)

    assert read_lock(store) == LockLine("alpha", T0)
    assert str(lock_status(store, 300, clock)) == "held alpha 0s"


def test_a_lock_that_cannot_even_be_looked_at_is_an_io_error(store: Path) -> None:
    (store / ".lock").symlink_to(".lock")  # a link to itself: open and stat both fail

    with pytest.raises(LockIOError) as caught:
        lock_status(store)

    assert str(caught.value) == (
        f"{store / '.lock'}: cannot read the lock (Too many levels of symbolic links); "
        "check the store's permissions"
    )
    assert caught.value.exit_code == 4


def test_a_lock_with_an_epoch_of_ten_thousand_digits_is_read_without_failing(
    store: Path, clock: FakeClock
) -> None:
    # More digits than int() converts by default (4300): only the head of the line is read.
    (store / ".lock").write_bytes(b"alpha " + b"9" * 10_000 + b" 2026-11-29T22:26:30Z\n")

    line = read_lock(store)

    assert line is not None and line.owner == "alpha" and line.epoch > 10**4000
    with pytest.raises(LockHeld):  # a line from the far future is fresh: it blocks, it does not crash
        make(store, "beta", clock).acquire()


def test_unreadable_lock_counts_as_malformed(store: Path, clock: FakeClock) -> None:
    (store / ".lock").mkdir()  # reading a directory fails even as root
    os.utime(store / ".lock", (T0 - 10, T0 - 10))

    assert read_lock(store) == LockLine("?", T0 - 10)
    assert str(lock_status(store, 300, clock)) == "held ? 10s"


# -- heartbeat -------------------------------------------------------------------------------


def test_heartbeat_refreshes_epoch_and_writes_the_checkpoint(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    clock.advance(42)

    alpha.heartbeat(step=3, signals=7)

    stamp = format_iso(T0 + 42)
    assert lock_text(store) == f"alpha {T0 + 42} {stamp}\n"
    assert status_text(store) == f"running step:3 signals:7 {stamp}\n"

    clock.advance(5)
    alpha.heartbeat()  # without a checkpoint .status keeps the last one
    assert read_lock(store) == LockLine("alpha", T0 + 47)
    assert status_text(store) == f"running step:3 signals:7 {stamp}\n"


def test_heartbeat_after_takeover_is_lost_and_writes_no_checkpoint(
    store: Path, clock: FakeClock
) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    clock.advance(300)
    make(store, "beta", clock).acquire()
    beta_lock, beta_status = lock_text(store), status_text(store)
    clock.advance(1)

    with pytest.raises(LockLost) as caught:
        alpha.heartbeat(step=2, signals=5)

    assert caught.value.exit_code == 3
    assert str(caught.value) == f"{store / '.lock'}: held by beta; stop writing and acquire again"
    assert lock_text(store) == beta_lock
    assert status_text(store) == beta_status
    assert alpha.epoch is None


def test_heartbeat_rechecks_the_epoch_not_only_the_owner(store: Path, clock: FakeClock) -> None:
    # Another client using the same owner name rewrote the line: it is no longer the line we wrote.
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    status_before = status_text(store)
    (store / ".lock").write_text(f"alpha {T0 + 5} {format_iso(T0 + 5)}\n")

    with pytest.raises(LockLost) as caught:
        alpha.heartbeat(step=1, signals=1)

    assert str(caught.value) == (f"{store / '.lock'}: lock lost: taken over or changed since our last "
                                 "heartbeat; stop writing and acquire again")
    assert read_lock(store) == LockLine("alpha", T0 + 5)
    assert status_text(store) == status_before


def test_heartbeat_without_a_lock_is_lost(store: Path, clock: FakeClock) -> None:
    with pytest.raises(LockLost) as caught:
        make(store, "alpha", clock).heartbeat()
    assert str(caught.value) == f"{store / '.lock'}: lock not held; stop writing and acquire again"
    assert not (store / ".lock").exists()
    assert not (store / ".status").exists()


@pytest.mark.parametrize(
    ("step", "signals", "message"),
    [
        (1, None, "a checkpoint needs both step and signals (or neither)"),
        (None, 1, "a checkpoint needs both step and signals (or neither)"),
        (-1, 0, "step must be a non-negative integer (got -1)"),
        (0, -2, "signals must be a non-negative integer (got -2)"),
        (True, 1, "step must be a non-negative integer (got True)"),
        (1.5, 1, "step must be a non-negative integer (got 1.5)"),
    ],
)
def test_heartbeat_checkpoint_arguments_are_checked(
    store: Path, clock: FakeClock, step: Any, signals: Any, message: str
) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    with pytest.raises(LockUsageError) as caught:
        alpha.heartbeat(step=step, signals=signals)
    assert str(caught.value) == message
    assert caught.value.exit_code == 2
    assert isinstance(caught.value, ValueError)


def test_the_first_checkpoint_may_be_step_zero_with_no_signals(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()

    alpha.heartbeat(step=0, signals=0)

    assert status_text(store) == f"running step:0 signals:0 {ISO0}\n"


# -- release ---------------------------------------------------------------------------------


def test_release_removes_the_lock_and_writes_idle(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    clock.advance(30)

    alpha.release()

    assert not (store / ".lock").exists()
    assert status_text(store) == f"idle {format_iso(T0 + 30)}\n"
    assert alpha.epoch is None
    assert lock_status(store, 300, clock) == LockState(LockStateKind.FREE)
    with pytest.raises(LockLost, match="not held"):
        alpha.release()


def test_release_by_a_non_owner_raises_and_changes_nothing(store: Path, clock: FakeClock) -> None:
    make(store, "alpha", clock).acquire()
    before = (lock_text(store), status_text(store))

    with pytest.raises(LockLost, match="not owner: held by alpha") as caught:
        make(store, "beta", clock).release()

    assert caught.value.exit_code == 3
    assert (lock_text(store), status_text(store)) == before


def test_release_without_a_lock_is_lost(store: Path, clock: FakeClock) -> None:
    with pytest.raises(LockLost) as caught:
        make(store, "alpha", clock).release()
    assert str(caught.value) == f"{store / '.lock'}: not held; stop writing and acquire again"
    assert not any(store.iterdir())


def test_release_rechecks_the_epoch_not_only_the_owner(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    (store / ".lock").write_text(f"alpha {T0 + 5} {format_iso(T0 + 5)}\n")  # another client, same name
    before = (lock_text(store), status_text(store))

    with pytest.raises(LockLost) as caught:
        alpha.release()

    assert str(caught.value) == f"{store / '.lock'}: not owner: lock changed during release; nothing was released"
    assert (lock_text(store), status_text(store)) == before


def test_a_release_whose_idle_cannot_be_written_still_frees_the_lock_and_says_so(
    store: Path, clock: FakeClock
) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    (store / ".status").unlink()
    (store / ".status").mkdir()  # os.replace onto a directory fails

    with pytest.raises(LockIOError) as caught:
        alpha.release()

    assert str(caught.value).startswith(f"{store / '.status'}: cannot write idle (the lock was released) (")
    assert not (store / ".lock").exists()


def test_release_after_takeover_keeps_the_new_owners_lock(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    clock.advance(400)
    beta = make(store, "beta", clock)
    beta.acquire()
    before = (lock_text(store), status_text(store))

    with pytest.raises(LockLost) as caught:
        alpha.release()

    assert str(caught.value) == f"{store / '.lock'}: not owner: held by beta; stop writing and acquire again"
    assert (lock_text(store), status_text(store)) == before
    beta.release()
    assert status_text(store).startswith("idle ")


# -- the mutex -------------------------------------------------------------------------------


def test_takeover_mutex_persists_and_junk_in_it_is_harmless(store: Path, clock: FakeClock) -> None:
    junk = b"12345 left by an old ln-based client\n\x00\xff"
    (store / ".lock.takeover").write_bytes(junk)

    alpha = make(store, "alpha", clock)
    alpha.acquire()
    alpha.heartbeat(step=1, signals=1)
    clock.advance(300)
    beta = make(store, "beta", clock)
    assert beta.acquire().kind is AcquireKind.TOOK_OVER
    beta.heartbeat()
    beta.release()

    assert (store / ".lock.takeover").read_bytes() == junk
    assert status_text(store).startswith("idle ")


def test_takeover_mutex_is_created_and_never_deleted(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    alpha.heartbeat()
    alpha.release()
    assert (store / ".lock.takeover").is_file()
    assert sorted(p.name for p in store.iterdir()) == [".lock.takeover", ".status"]


def test_a_busy_mutex_means_lost_or_contended(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock, takeover_wait_seconds=0.05)
    alpha.acquire()
    before = lock_text(store)
    holder = os.open(store / ".lock.takeover", os.O_RDONLY | os.O_CREAT)
    try:
        # Another open file description: flock excludes it just as it would another process.
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(LockLost) as lost:
            alpha.heartbeat(step=1, signals=1)
        assert str(lost.value) == (f"{store / '.lock.takeover'}: lock contended (mutex busy for 0.05s); "
                                   "treat the lock as lost")
        with pytest.raises(LockLost) as lost:
            alpha.release()
        assert str(lost.value) == (f"{store / '.lock.takeover'}: not owner: lock contended during release "
                                   "(mutex busy for 0.05s); nothing was released")
        clock.advance(300)
        with pytest.raises(LockHeld, match="contended") as caught:
            make(store, "beta", clock, takeover_wait_seconds=0.05).acquire()
        assert caught.value.owner is None
        assert lock_text(store) == before
    finally:
        os.close(holder)
    # Contention did not make alpha forget the lock is still its own.
    alpha.release()
    assert not (store / ".lock").exists()


class StoppedTime:
    """Stands in for the ``time`` of a lock module (the mutex's wait, acquire's): the monotonic
    clock moves only when that module sleeps, and a sleep may let the mutex ``holder`` go."""

    def __init__(self, holder: int | None = None, lets_go_after: int | None = None) -> None:
        self.now = 1000.0
        self.holder = holder
        self.lets_go_after = lets_go_after
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if len(self.sleeps) > 100:  # the clock stands still unless we sleep: a wait past its end
            raise AssertionError(f"still polling after {self.sleeps[:6]}...")
        self.sleeps.append(seconds)
        self.now += seconds
        if self.holder is not None and len(self.sleeps) == self.lets_go_after:
            fcntl.flock(self.holder, fcntl.LOCK_UN)


@pytest.mark.parametrize("lets_go_after", [1, 3, None])
def test_a_takeover_polls_the_mutex_until_its_wait_runs_out(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, lets_go_after: int | None
) -> None:
    from distilld.engine.lock import mutex as mutex_module

    (store / ".lock").write_text("ghost 1000 1970-01-01T00:16:40Z\n")
    holder = os.open(store / ".lock.takeover", os.O_RDONLY | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    stopped = StoppedTime(holder, lets_go_after)
    monkeypatch.setattr(mutex_module, "time", stopped)
    # Sums of eighths are exact: the fourth poll ends the half-second wait to the bit.
    beta = StoreLock(store, "beta", takeover_wait_seconds=0.5, clock=clock,
                     timings=LockTimings(mutex_poll_seconds=0.125))
    try:
        if lets_go_after is None:
            with pytest.raises(LockHeld, match="contended"):
                beta.acquire()
        else:
            result = beta.acquire()
    finally:
        os.close(holder)

    if lets_go_after is None:  # tried at the start and after each poll, and not past the deadline
        assert stopped.sleeps == [0.125] * 4
        assert lock_text(store).startswith("ghost ")
    else:
        assert stopped.sleeps == [0.125] * lets_go_after
        assert (result.kind, result.previous_owner) == (AcquireKind.TOOK_OVER, "ghost")
        assert lock_text(store) == f"beta {T0} {ISO0}\n"


@pytest.mark.parametrize(("wait", "polls"), [(0, []), (0.5, [0.125] * 4)])
def test_an_acquire_polls_a_held_lock_until_its_wait_runs_out_and_not_past_it(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, wait: float, polls: list[float]
) -> None:
    from distilld.engine import lock as lock_package
    from distilld.engine.lock import store_lock as store_lock_module

    make(store, "alpha", clock).acquire()
    stopped = StoppedTime()
    monkeypatch.setattr(store_lock_module, "time", stopped)
    told: list[object] = []
    monkeypatch.setattr(lock_package, "waiting_hook", lambda *args: told.append(args))

    with pytest.raises(LockHeld, match="held by alpha"):
        make(store, "beta", clock, poll_seconds=0.125).acquire(wait=wait)

    assert stopped.sleeps == polls  # no wait: one try, and nothing said about waiting
    assert told == ([(store, "alpha", 0, wait)] if polls else [])  # written this second: 0 s old


def test_a_mutex_that_cannot_be_locked_is_an_io_error(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    monkeypatch.setattr(fcntl, "flock", _failing(errno.ENOLCK))  # a network file system without locks

    with pytest.raises(LockIOError) as caught:
        alpha.heartbeat()

    monkeypatch.undo()
    assert str(caught.value).startswith(
        f"{store / '.lock.takeover'}: cannot lock the takeover mutex (No locks available); treat the lock as lost"
    )
    alpha.release()


def test_a_link_at_the_mutex_name_is_refused_and_never_followed(store: Path, clock: FakeClock) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    outside = store.parent / "elsewhere"
    (store / ".lock.takeover").symlink_to(outside)

    with pytest.raises(LockIOError) as caught:
        alpha.heartbeat()

    assert str(caught.value).startswith(f"{store / '.lock.takeover'}: cannot open the takeover mutex (")
    assert not outside.exists()
    (store / ".lock.takeover").unlink()
    alpha.release()  # the refusal changed nothing: the lock is still alpha's


# -- status, owners, formats -----------------------------------------------------------------


@pytest.mark.parametrize("hard_links", [True, False])
def test_the_lock_files_are_plain_files_anyone_may_read(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, hard_links: bool
) -> None:
    # rw-r--r-- under the usual umask, as the script's shell redirections make them: no
    # execute bit, and readable by whoever checks the lock.
    if not hard_links:
        monkeypatch.setattr(os, "link", _failing(errno.EPERM))
    def modes() -> dict[str, str]:
        return {p.name: oct(stat.S_IMODE(p.lstat().st_mode)) for p in store.iterdir()}

    old_umask = os.umask(0o022)
    try:
        make(store, "alpha", clock).acquire()
        created = modes()
        clock.advance(300)
        make(store, "beta", clock).acquire()  # a takeover: the mutex and a swapped-in line
        taken_over = modes()
    finally:
        os.umask(old_umask)

    assert created == {".lock": "0o644", ".status": "0o644"}
    assert taken_over == {".lock": "0o644", ".status": "0o644", ".lock.takeover": "0o644"}


def test_lock_status_forms(store: Path, clock: FakeClock) -> None:
    free = lock_status(store, 300, clock)
    assert str(free) == "free"
    # What `distilld status --json` shows of a free lock: no owner and no age, not empty ones.
    assert (free.kind.value, free.owner, free.age) == ("free", None, None)
    make(store, "alpha", clock).acquire()
    clock.advance(12)
    assert str(lock_status(store, 300, clock)) == "held alpha 12s"
    clock.advance(288)
    assert lock_status(store, 300, clock) == LockState(LockStateKind.STALE, "alpha", 300)
    assert str(lock_status(store, 300, clock)) == "stale alpha 300s"


@pytest.mark.parametrize(
    "owner", ["", "two words", "semi;colon", "slash/x", "ünï", "tab\t", "new\nline"]
)
def test_bad_owner_names_are_usage_errors(store: Path, owner: str) -> None:
    with pytest.raises(LockUsageError) as caught:
        StoreLock(store, owner)
    assert str(caught.value) == (
        f"lock owner {owner!r}: use only letters, digits and . _ : - (at least one character)"
    )
    assert caught.value.exit_code == 2
    assert isinstance(caught.value, ValueError)
    assert not any(store.iterdir())


def test_good_owner_names(store: Path) -> None:
    for owner in ["alpha", "A.b_c:d-9", "distilld.host.123"]:
        assert check_owner(owner) == owner


def test_default_owner_is_sanitised(monkeypatch: pytest.MonkeyPatch) -> None:
    owner = default_owner()
    assert re.fullmatch(rf"distilld\.[A-Za-z0-9._:-]+\.{os.getpid()}", owner)
    monkeypatch.setattr(socket, "gethostname", lambda: "my laptop/é (work)")
    owner = default_owner()
    assert check_owner(owner) == owner
    assert owner == f"distilld.my-laptop-work-.{os.getpid()}"
    monkeypatch.setattr(socket, "gethostname", lambda: "")
    assert default_owner() == f"distilld.localhost.{os.getpid()}"


def test_iso_format_is_utc_seconds() -> None:
    assert format_iso(T0) == ISO0
    assert format_iso(0) == "1970-01-01T00:00:00Z"


def test_from_policy_uses_the_policy_numbers(store: Path) -> None:
    lock = StoreLock.from_policy(store, "alpha", LockTimings(stale_seconds=60, poll_seconds=0.5))
    assert (lock.stale_seconds, lock.poll_seconds, lock.takeover_wait_seconds) == (60, 0.5, 10)


def test_lock_errors_carry_their_exit_codes() -> None:
    classes = (LockHeld, LockUsageError, LockLost, LockIOError)
    assert [cls.exit_code for cls in classes] == [1, 2, 3, 4]
    assert all(issubclass(cls, DistilldError) for cls in classes)


owners = st.from_regex(r"[A-Za-z0-9._:-]{1,40}", fullmatch=True)


@pytest.mark.slow  # many examples: in the full run, not the default one
@settings(max_examples=60, deadline=None)
@given(owner=owners, epoch=st.integers(min_value=0, max_value=4_102_444_800))
def test_written_lines_read_back(
    tmp_path_factory: pytest.TempPathFactory, owner: str, epoch: int
) -> None:
    root = tmp_path_factory.mktemp("rt")
    lock = StoreLock(root, owner, clock=lambda: epoch + 0.75)
    assert lock.acquire().epoch == epoch
    assert read_lock(root) == LockLine(owner, epoch)
    assert lock_text(root) == f"{owner} {epoch} {format_iso(epoch)}\n"


@settings(max_examples=80, deadline=None)
@given(content=st.binary(max_size=200))
def test_read_lock_never_fails_on_junk(
    tmp_path_factory: pytest.TempPathFactory, content: bytes
) -> None:
    root = tmp_path_factory.mktemp("junk")
    (root / ".lock").write_bytes(content)
    line = read_lock(root)
    assert line is not None
    fields = content.split(b"\n", 1)[0].split()
    if len(fields) >= 2 and re.fullmatch(rb"[0-9]+", fields[1]):
        assert line == LockLine(fields[0].decode("utf-8", "replace"), int(fields[1]))
    else:
        assert line == LockLine("?", int(os.stat(root / ".lock").st_mtime))


# -- I/O errors ------------------------------------------------------------------------------


def test_status_write_failure_drops_the_fresh_lock(store: Path, clock: FakeClock) -> None:
    (store / ".status").mkdir()  # os.replace onto a directory fails

    with pytest.raises(LockIOError) as caught:
        make(store, "alpha", clock).acquire()

    assert caught.value.exit_code == 4
    assert "dropped" in str(caught.value)
    assert not (store / ".lock").exists()


def test_status_write_failure_after_takeover_drops_the_lock(store: Path, clock: FakeClock) -> None:
    (store / ".lock").write_text("ghost 1000 1970-01-01T00:16:40Z\n")
    (store / ".status").mkdir()

    with pytest.raises(LockIOError, match="dropped"):
        make(store, "beta", clock).acquire()

    assert not (store / ".lock").exists()


def test_a_fresh_lock_that_cannot_be_dropped_after_a_failed_status_is_said_to_go_stale(
    store: Path, clock: FakeClock
) -> None:
    (store / ".status").mkdir()
    holder = os.open(store / ".lock.takeover", os.O_RDONLY | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another client holds the mutex the drop needs
        with pytest.raises(LockIOError) as caught:
            make(store, "alpha", clock, takeover_wait_seconds=0.05).acquire()
    finally:
        os.close(holder)

    assert "(the lock could not be dropped and goes stale)" in str(caught.value)
    assert lock_text(store) == f"alpha {T0} {ISO0}\n"  # left behind: it ages out like any other


def test_a_lock_taken_from_us_while_our_status_write_fails_is_left_to_its_new_owner(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    replace = os.replace

    def gamma_takes_it_as_our_status_fails(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if Path(target).name != ".status":
            return replace(source, target, *args, **kwargs)
        (store / ".lock").write_text(f"gamma {T0} {ISO0}\n")
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "replace", gamma_takes_it_as_our_status_fails)
    with pytest.raises(LockIOError) as caught:
        make(store, "alpha", clock).acquire()
    monkeypatch.undo()

    assert "(the lock could not be dropped and goes stale)" in str(caught.value)
    assert lock_text(store) == f"gamma {T0} {ISO0}\n"  # not ours to drop


def test_a_taken_over_lock_that_cannot_be_removed_after_a_failed_status_is_said_to_go_stale(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    (store / ".lock").write_text("ghost 1000 1970-01-01T00:16:40Z\n")
    (store / ".status").mkdir()
    monkeypatch.setattr(os, "unlink", _unlink_all_but_the_lock(os.unlink))
    with pytest.raises(LockIOError) as caught:
        make(store, "beta", clock).acquire()
    monkeypatch.undo()

    assert "(the lock could not be dropped and goes stale)" in str(caught.value)
    assert lock_text(store) == f"beta {T0} {ISO0}\n"


def test_a_link_planted_at_the_status_temp_name_is_never_written_through(
    store: Path, clock: FakeClock
) -> None:
    victim = store.parent / "victim.md"
    victim.write_bytes(b"knowledge\n")
    (store / f".status.tmp.{os.getpid()}").symlink_to(victim)  # the temp name is predictable

    with pytest.raises(LockIOError, match="dropped"):
        make(store, "alpha", clock).acquire()

    assert victim.read_bytes() == b"knowledge\n"
    assert not (store / ".status").exists() and not (store / ".lock").exists()


def test_a_status_temp_left_by_a_killed_process_with_our_pid_does_not_block_the_lock(
    store: Path, clock: FakeClock
) -> None:
    # Pids are reused: a writer killed between its temp file and its rename left this behind.
    (store / f".status.tmp.{os.getpid()}").write_bytes(b"running 2026-01-01T00:00:00Z\n")

    make(store, "alpha", clock).acquire()

    assert status_text(store) == f"running {ISO0}\n"
    assert temp_files(store) == []


def _unlink_all_but_the_lock(unlink: Any) -> Any:
    """os.unlink, except that removing `.lock` is refused (EACCES)."""

    def unlink_others(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path).name == ".lock":
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
        unlink(path, *args, **kwargs)

    return unlink_others


def _failing(errnum: int) -> Any:
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(errnum, os.strerror(errnum))

    return fail


@pytest.mark.parametrize(
    ("operation", "call", "failure", "message"),
    [
        ("heartbeat", "replace", _failing(errno.EIO), "cannot replace the lock (Input/output error)"),
        ("release", "unlink", _unlink_all_but_the_lock(os.unlink), "cannot remove the lock (Permission denied)"),
    ],
)
def test_a_failed_heartbeat_or_release_keeps_the_old_line_and_the_lock_ours(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, operation: str, call: str,
    failure: Any, message: str,
) -> None:
    alpha = make(store, "alpha", clock)
    alpha.acquire()
    before = lock_text(store)
    clock.advance(10)
    monkeypatch.setattr(os, call, failure)

    with pytest.raises(LockIOError) as caught:
        getattr(alpha, operation)()

    monkeypatch.undo()
    assert str(caught.value).startswith(f"{store / '.lock'}: {message}; ")
    assert lock_text(store) == before
    getattr(alpha, operation)()  # still ours: the failed attempt changed nothing
    assert lock_text(store) != before if operation == "heartbeat" else not (store / ".lock").exists()


@pytest.mark.parametrize(
    ("target", "failed"),
    [("link", ".lock: cannot create the lock"), ("fsync", "cannot create a temp file for the lock"),
     ("write", "cannot create a temp file for the lock")],
)
def test_failed_create_leaves_no_lock_and_no_temp(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, target: str, failed: str
) -> None:
    monkeypatch.setattr(os, target, _failing(errno.EIO))

    with pytest.raises(LockIOError) as caught:
        make(store, "alpha", clock).acquire()

    monkeypatch.undo()
    assert f"{failed} (Input/output error); treat the lock as lost" in str(caught.value)
    assert not (store / ".lock").exists()


@pytest.mark.parametrize(
    ("failing", "message"),
    [("open", "cannot create the lock (Read-only file system)"),
     ("fsync", "cannot write the lock (Input/output error)")],
)
def test_without_hard_links_a_lock_that_cannot_be_made_is_removed_and_said_so(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, failing: str, message: str
) -> None:
    real_open, real_fsync = os.open, os.fsync
    synced: list[int] = []

    def open_all_but_the_lock(path: Any, *args: Any, **kwargs: Any) -> int:
        if Path(path).name == ".lock":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, *args, **kwargs)

    def the_second_fsync_fails(fd: int) -> None:  # the temp file's passes; the lock's own fails
        synced.append(fd)
        if len(synced) == 2:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(os, "link", _failing(errno.EPERM))
    if failing == "open":
        monkeypatch.setattr(os, "open", open_all_but_the_lock)
    else:
        monkeypatch.setattr(os, "fsync", the_second_fsync_fails)
    with pytest.raises(LockIOError) as caught:
        make(store, "alpha", clock).acquire()
    monkeypatch.undo()

    assert str(caught.value).startswith(f"{store / '.lock'}: {message}; ")
    assert not (store / ".lock").exists()


@pytest.mark.parametrize("hard_links", [True, False])
def test_a_racer_that_creates_the_lock_just_before_us_wins(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, hard_links: bool
) -> None:
    # We saw no lock; the racer's line lands between that look and our test-and-set.
    link = os.link

    def racer_first(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        Path(target).write_bytes(LockLine("racer", T0).encode())
        if not hard_links:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        link(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "link", racer_first)
    with pytest.raises(LockHeld) as caught:
        make(store, "alpha", clock).acquire()
    monkeypatch.undo()

    assert (caught.value.owner, caught.value.age) == ("racer", 0)
    assert lock_text(store) == f"racer {T0} {ISO0}\n"
    assert not (store / ".status").exists()  # the loser writes nothing


@pytest.mark.parametrize("kind", ["new", "swap"])
def test_a_file_at_the_lock_temp_name_is_never_overwritten(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    import secrets

    alpha = make(store, "alpha", clock)
    if kind == "swap":
        alpha.acquire()
        clock.advance(10)
    before = (store / ".lock").read_bytes() if kind == "swap" else None
    monkeypatch.setattr(secrets, "token_hex", lambda nbytes: "0" * 2 * nbytes)
    planted = store / f".lock.{kind}.{os.getpid()}.00000000"
    planted.write_bytes(b"someone else's\n")

    with pytest.raises(LockIOError, match="cannot create a temp file for the lock \\(File exists\\)"):
        alpha.heartbeat() if kind == "swap" else alpha.acquire()

    assert planted.read_bytes() == b"someone else's\n"
    planted.unlink()
    # A heartbeat leaves the old line; an acquire leaves no lock.
    assert ((store / ".lock").read_bytes() if (store / ".lock").exists() else None) == before


def test_without_hard_links_acquire_falls_back_to_exclusive_create(
    store: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "link", _failing(errno.EPERM))

    assert make(store, "alpha", clock).acquire().kind is AcquireKind.ACQUIRED
    assert lock_text(store) == f"alpha {T0} {ISO0}\n"
    with pytest.raises(LockHeld):
        make(store, "beta", clock).acquire()


def test_missing_store_root_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(LockIOError) as caught:
        StoreLock(tmp_path / "nowhere", "alpha").acquire()

    # The file, what failed and why in the system's words, and what to do about it.
    assert re.fullmatch(
        rf"{re.escape(str(tmp_path / 'nowhere'))}/\.lock\.new\.{os.getpid()}\.[0-9a-f]{{8}}: cannot create a "
        r"temp file for the lock \(No such file or directory\); treat the lock as lost, and check the "
        r"store directory's permissions and free space",
        str(caught.value),
    )


# -- real processes --------------------------------------------------------------------------

# fork is cheap and needs no re-import; other platforms re-import this module in each child.
_CTX: Any = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
RACERS = 12
ROUNDS = 20  # each round is a free race followed by a stale race


def _racer(root: str, index: int, barrier: Any, results: Any) -> None:
    lock = StoreLock(root, f"racer-{index}", poll_seconds=0.05, takeover_wait_seconds=10)
    for race in range(2 * ROUNDS):
        barrier.wait()  # the parent has laid out this race
        try:
            result = lock.acquire()
            results.put((race, index, result.kind.value, result.previous_owner))
        except LockHeld as error:
            results.put((race, index, "held", error.owner))
        except Exception as error:  # noqa: BLE001 - reported, so the parent's assertion shows it
            results.put((race, index, "error", repr(error)))
        barrier.wait()  # the parent checks before the next race


@pytest.mark.slow
def test_racers_exactly_one_winner_for_free_and_stale_locks(store: Path) -> None:
    barrier = _CTX.Barrier(RACERS + 1, timeout=60)
    results = _CTX.Queue()
    workers = [
        _CTX.Process(target=_racer, args=(str(store), i, barrier, results)) for i in range(RACERS)
    ]
    for worker in workers:
        worker.start()
    finished = False
    try:
        for race in range(2 * ROUNDS):
            stale = race % 2 == 1
            (store / ".lock").unlink(missing_ok=True)
            if stale:
                (store / ".lock").write_text(f"ghost-{race} 1000 1970-01-01T00:16:40Z\n")
            barrier.wait()
            barrier.wait()
            outcomes = [results.get(timeout=30) for _ in range(RACERS)]
            assert {o[0] for o in outcomes} == {race}
            winners = [o for o in outcomes if o[2] != "held"]
            assert len(winners) == 1, outcomes
            _, index, kind, previous = winners[0]
            winner = f"racer-{index}"
            if stale:
                assert (kind, previous) == ("took over", f"ghost-{race}")
            else:
                assert kind == "acquired"
            assert all(o[3] == winner for o in outcomes if o[2] == "held"), outcomes
            assert lock_text(store).startswith(f"{winner} ")
            assert status_text(store).startswith("running ")
        finished = True
    finally:
        if not finished:
            barrier.abort()  # a failed round must not leave the racers waiting out the timeout
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
    assert all(worker.exitcode == 0 for worker in workers)


def _cycler(root: str, index: int, cycles: int, log: str, results: Any) -> None:
    owner = f"cycler-{index}"
    lock = StoreLock(root, owner, poll_seconds=0.005, takeover_wait_seconds=10)
    problems: list[str] = []

    def check(when: str) -> None:
        line = read_lock(Path(root))
        if line != LockLine(owner, lock.epoch or -1):
            problems.append(f"{when}: .lock is {line} while {owner} holds it")

    try:
        for cycle in range(cycles):
            lock.acquire(wait=60)
            with open(log, "a") as handle:  # O_APPEND: whole small lines, in order
                handle.write(f"enter {owner}\n")
            check("after acquire")
            if not (Path(root) / ".status").read_text().startswith("running "):
                problems.append("after acquire: .status is not running")
            for step in range(3):
                time.sleep(0.002)  # deliberate: the holder's work, so the others contend while it holds
                check(f"before heartbeat {step}")
                lock.heartbeat(step=step, signals=cycle)
                check(f"after heartbeat {step}")
                status = (Path(root) / ".status").read_text()
                if not re.fullmatch(rf"running step:{step} signals:{cycle} {ISO_RE}\n", status):
                    problems.append(f"after heartbeat {step}: .status is {status!r}")
            with open(log, "a") as handle:
                handle.write(f"exit {owner}\n")
            lock.release()
    except Exception as error:  # noqa: BLE001 - reported back to the parent as a problem
        problems.append(repr(error))
    results.put((index, problems))


@pytest.mark.slow
def test_one_holder_at_a_time_while_processes_cycle(store: Path) -> None:
    count, cycles = 6, 10
    log = store.parent / "holders.log"
    results = _CTX.Queue()
    workers = [
        _CTX.Process(target=_cycler, args=(str(store), i, cycles, str(log), results))
        for i in range(count)
    ]
    for worker in workers:
        worker.start()
    try:
        reports = [results.get(timeout=60) for _ in range(count)]
    finally:
        for worker in workers:
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()

    assert [problems for _, problems in sorted(reports)] == [[]] * count
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * count * cycles
    for enter, leave in zip(lines[::2], lines[1::2]):
        assert enter.startswith("enter ") and leave == "exit " + enter.removeprefix("enter ")
    assert not (store / ".lock").exists()
    assert status_text(store).startswith("idle ")


_HOLD_MUTEX = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_a_killed_mutex_holder_does_not_block_the_next_caller(store: Path) -> None:
    alpha = StoreLock(store, "alpha", takeover_wait_seconds=0.2)
    alpha.acquire()
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_MUTEX, str(store / ".lock.takeover")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "locked\n"
        with pytest.raises(LockLost, match="contended"):
            alpha.heartbeat()

        (store / ".lock").write_text("alpha 1000 1970-01-01T00:16:40Z\n")  # now stale
        killer = threading.Timer(0.5, os.kill, (child.pid, signal.SIGKILL))
        killer.start()
        started = time.monotonic()
        result = StoreLock(store, "beta", takeover_wait_seconds=10).acquire()
        elapsed = time.monotonic() - started
        killer.join()
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()

    assert child.returncode == -signal.SIGKILL
    assert result.kind is AcquireKind.TOOK_OVER and result.previous_owner == "alpha"
    assert 0.4 <= elapsed < 3  # it waited for the holder, and no longer than the kill took
    assert (store / ".lock.takeover").exists()


def test_a_nested_holder_of_the_same_owner_leaves_the_lock_to_the_outer_one(tmp_path: Path) -> None:
    """The daemon holds the lock around an action that takes it again under the same owner: the
    action must neither free the lock early nor leave the outer holder unable to release it."""
    from datetime import datetime, timezone

    from distilld.actions.passes import locked_pass
    from distilld.policy import load_policy

    ticks = iter(range(1_800_000_000, 1_800_000_100, 7))
    outer = StoreLock(tmp_path, "distilld.host.1", clock=lambda: float(next(ticks)))
    outer.acquire()
    with locked_pass(tmp_path, load_policy(), lambda: datetime.now(timezone.utc), owner="distilld.host.1") as ctx:
        ctx.heartbeat()
    assert lock_status(tmp_path).kind is LockStateKind.HELD  # still held: the outer pass owns it
    outer.heartbeat()
    outer.release()
    assert lock_status(tmp_path).kind is LockStateKind.FREE
