"""The watcher: what counts as a change, the quiet period and maximum wait, distilld's own
writes, and recovery when the watch is in doubt (overflow, a dead observer, a replaced root,
the watch limit). Real file events on a real folder in tmp_path."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from distilld.runtime import watcher as watcher_module
from distilld.runtime.debounce import Debouncer
from distilld.runtime.watch_paths import classify, scan_shared
from distilld.runtime.watcher import OWN_WRITE_MARGIN, StoreWatcher
from waiting import wait_for

QUIET = 0.3


@pytest.mark.parametrize("rel, is_dir, kind", [
    ("SPINE.md", False, "content"),
    ("CATALOG.md", False, "content"),
    (".lock", False, "lock"),
    (".status", False, None),
    (".lifecycle", False, None),
    ("projects/x.md", False, "content"),
    ("projects/sub/y.md", False, "content"),
    ("archive/projects/x.md", False, "content"),
    ("inbox/20261130T120000Z-ab12-note.md", False, "content"),
    ("evidence/craft/t.md", False, "content"),
    ("projects", True, "content"),
    ("projects/sub", True, "content"),
    ("projects/x.md.swp", False, None),
    ("projects/.x.md.swp", False, None),
    ("projects/x.md~", False, None),
    ("projects/4913", False, None),
    ("projects/.#x.md", False, None),
    ("projects/x.md.tmp", False, None),
    ("projects/notes.txt", False, None),
    (".git/index", False, None),
    (".git/objects/ab", True, None),
    ("data/gc-log.jsonl", False, None),
    ("local/SPINE.md", False, None),
    ("bin/distill-lock.sh", False, None),
    ("distill-process.md", False, None),
    ("README.md", False, None),
])
def test_classify(rel: str, is_dir: bool, kind: str | None) -> None:
    assert classify(rel.replace("/", os.sep), is_dir) == kind


class ManualClock:
    """The debouncer's clock, moved by the test: nothing is due until the test says time passed,
    so how fast the machine writes the burst cannot split it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def advance(debouncer: Debouncer, clock: ManualClock, seconds: float) -> None:
    """Move the debouncer's clock on, and wake it to look at it."""
    clock.now += seconds
    debouncer.configure(debouncer.quiet, debouncer.max_wait)


class Recorder:
    def __init__(self) -> None:
        self.batches: list[tuple[set[str], bool]] = []
        self.lock_events = 0
        self.rescans: list[str] = []

    def flush(self, paths: set[str], poked: bool) -> None:
        self.batches.append((paths, poked))

    def on_lock(self) -> None:
        self.lock_events += 1

    def on_rescan(self, reason: str) -> None:
        self.rescans.append(reason)


def test_debouncer_waits_for_quiet() -> None:
    recorder, clock = Recorder(), ManualClock()
    debouncer = Debouncer(QUIET, 10, recorder.flush, clock=clock)
    debouncer.start()
    try:
        for index in range(20):
            debouncer.add([f"projects/{index}.md"])
            advance(debouncer, clock, QUIET / 10)  # never quiet for QUIET
        assert recorder.batches == [] and debouncer.pending[0] == 20
        advance(debouncer, clock, QUIET)
        wait_for(lambda: len(recorder.batches) == 1, 10, "the batch once quiet")
        assert len(recorder.batches[0][0]) == 20
        assert debouncer.pending == (0, None)  # nothing left that a second batch could hand over
    finally:
        debouncer.stop()


def test_debouncer_flushes_at_max_wait_while_events_keep_coming() -> None:
    recorder, clock = Recorder(), ManualClock()
    debouncer = Debouncer(0.5, 1.0, recorder.flush, clock=clock)
    debouncer.start()
    try:
        for _ in range(32):  # 1.6 s of the debouncer's time, an event every 0.05 s: never quiet
            debouncer.add(["projects/busy.md"])
            advance(debouncer, clock, 0.05)
        # The clock stands still from here, so quiet is never reached: only max wait can flush.
        wait_for(lambda: recorder.batches, 10, "a batch at the maximum wait")
        assert recorder.batches[0][0] == {"projects/busy.md"}
    finally:
        debouncer.stop()


def test_poke_counts_as_activity() -> None:
    recorder = Recorder()
    debouncer = Debouncer(QUIET, 5, recorder.flush)
    debouncer.start()
    try:
        debouncer.poke()
        wait_for(lambda: recorder.batches == [(set(), True)], 5, "the poke's empty batch")
    finally:
        debouncer.stop()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    for name in ("projects", "craft", "archive", ".git", "data"):
        (root / name).mkdir(parents=True)
    (root / "SPINE.md").write_text("# index\n")
    return root


@pytest.fixture
def watched(store: Path) -> Iterator[tuple[StoreWatcher, Recorder]]:
    recorder = Recorder()
    debouncer = Debouncer(QUIET, 5, recorder.flush)
    watcher = StoreWatcher(store, debouncer, recorder.on_lock, recorder.on_rescan)
    debouncer.start()
    assert watcher.start()
    try:
        yield watcher, recorder
    finally:
        watcher.stop()
        debouncer.stop()


def test_a_burst_of_a_thousand_events_is_one_batch(store: Path) -> None:
    recorder, clock = Recorder(), ManualClock()
    debouncer = Debouncer(QUIET, 5, recorder.flush, clock=clock)
    watcher = StoreWatcher(store, debouncer, recorder.on_lock, recorder.on_rescan)
    debouncer.start()
    assert watcher.start()
    try:
        for index in range(1000):
            (store / "projects" / f"f{index % 50}.md").write_text(f"version {index}\n")
            clock.now += 0.001  # the burst takes 1 s of the debouncer's time: never quiet for QUIET
        # A last file after the burst: events arrive in order, so once it is pending, every event
        # of the burst has reached the debouncer, however slowly a loaded machine delivered them.
        sentinel = "projects/zz-last.md"
        (store / sentinel).write_text("last\n")
        wait_for(lambda: debouncer.pending[0] == 51, 60, "every event of the burst and the last file")
        assert recorder.batches == []

        def quiet_passed() -> bool:
            clock.now += QUIET
            debouncer.configure(QUIET, 5)  # wakes it to look at the clock again
            return len(recorder.batches) >= 1

        wait_for(quiet_passed, 60, "the burst's one batch")
        assert recorder.batches[0][0] == {f"projects/f{i}.md" for i in range(50)} | {sentinel}
        # The last file's own trailing events, if any, are handed over too; no more can come.
        wait_for(lambda: debouncer.pending[0] == 0, 10, "nothing pending")
        assert all(batch <= {sentinel} for batch, _ in recorder.batches[1:])
    finally:
        watcher.stop()
        debouncer.stop()


def test_ignored_paths_never_trigger(watched: tuple[StoreWatcher, Recorder], store: Path) -> None:
    _, recorder = watched
    (store / ".git" / "index").write_text("x")
    (store / "data" / "gc-log.jsonl").write_text("{}\n")
    (store / "projects" / ".x.md.swp").write_text("swap")
    (store / "projects" / "x.md~").write_text("backup")
    (store / "local").mkdir()
    (store / "local" / "SPINE.md").write_text("local\n")
    (store / ".status").write_text("idle\n")
    # Events arrive in order: once a content file written last is handed over, every event of the
    # ignored writes has been seen; none of them may be in that batch or an earlier one.
    (store / "projects" / "sentinel.md").write_text("last\n")
    wait_for(lambda: recorder.batches, 10, "the sentinel's batch")
    assert recorder.batches == [({"projects/sentinel.md"}, False)]


def test_reading_the_store_sends_no_event_to_the_handler(watched: tuple[StoreWatcher, Recorder], store: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads and folder listings (the daemon's own scans do both, of every folder) are not asked
    of the kernel at all: only the write below reaches the handler."""
    watcher, recorder = watched
    seen: list[tuple[str, bool]] = []
    original = watcher._on_event

    def recording(event: object) -> None:
        seen.append((event.event_type, event.is_directory))  # type: ignore[attr-defined]
        original(event)  # type: ignore[arg-type]

    monkeypatch.setattr(watcher, "_on_event", recording)
    (store / "projects" / "read-me.md").write_text("some knowledge\n")
    wait_for(lambda: recorder.batches, 10, "the first write's batch")
    seen.clear()
    for _ in range(20):
        for path in sorted(store.rglob("*")):  # lists every folder
            if path.is_file():
                path.read_bytes()
    (store / "projects" / "sentinel.md").write_text("last\n")  # events arrive in order
    wait_for(lambda: any("projects/sentinel.md" in batch for batch, _ in recorder.batches), 10,
             "the sentinel's batch")
    assert {kind for kind, _ in seen} <= {"created", "modified", "closed"}, seen
    assert not any(is_directory for _, is_directory in seen), seen


def test_atomic_save_counts_by_its_target(watched: tuple[StoreWatcher, Recorder], store: Path) -> None:
    _, recorder = watched
    temp = store / "projects" / "x.md.tmp"
    temp.write_text("new\n")
    os.replace(temp, store / "projects" / "x.md")
    wait_for(lambda: len(recorder.batches) == 1, 5, "the atomic save's batch")
    assert "projects/x.md" in recorder.batches[0][0]


def test_lock_events_are_reported_separately(watched: tuple[StoreWatcher, Recorder], store: Path) -> None:
    _, recorder = watched
    (store / ".lock").write_text("alpha 1 2026-01-01T00:00:00Z\n")
    (store / ".lock").unlink()
    wait_for(lambda: recorder.lock_events >= 2, 5, "both lock events")
    (store / "projects" / "sentinel.md").write_text("last\n")  # in order after the lock's events
    wait_for(lambda: recorder.batches, 10, "the sentinel's batch")
    assert recorder.batches == [({"projects/sentinel.md"}, False)]  # .lock itself is no content


def test_own_writes_are_dropped_but_later_changes_are_not(watched: tuple[StoreWatcher, Recorder],
                                                          store: Path) -> None:
    watcher, _ = watched
    before, started = scan_shared(store), time.time()
    (store / "CATALOG.md").write_text("# Knowledge catalog\n")
    (store / "archive" / "projects").mkdir()
    (store / "archive" / "projects" / "old.md").write_text("old\n")
    # The pass ends once the clock is past its last write's mtime by the margin for a coarse clock.
    newest = max((store / rel).stat().st_mtime for rel in ("CATALOG.md", "archive/projects/old.md"))
    ended = wait_for(lambda: (now := time.time()) > newest + OWN_WRITE_MARGIN and now, 5,
                     "the clock to pass the writes")
    watcher.record_own(before, scan_shared(store), started, ended)
    assert watcher.drop_own({"CATALOG.md", "archive/projects", "archive/projects/old.md"}) == set()
    (store / "CATALOG.md").write_text("# Knowledge catalog\n\nedited by someone else\n")
    assert watcher.drop_own({"CATALOG.md"}) == {"CATALOG.md"}
    watcher.mark_own(["SPINE.md"])
    assert watcher.drop_own({"SPINE.md", "projects/a.md"}) == {"projects/a.md"}


def test_a_write_after_the_pass_is_not_taken_for_ours(watched: tuple[StoreWatcher, Recorder], store: Path) -> None:
    watcher, _ = watched
    before, started = scan_shared(store), time.time()
    ended = time.time()
    late = store / "projects" / "late.md"

    def written_after_the_pass() -> bool:  # its mtime past the pass's end, as the watcher reads it
        late.write_text("a distiller, right after our release\n")
        return late.stat().st_mtime > ended

    wait_for(written_after_the_pass, 5, "a write with an mtime after the pass")
    watcher.record_own(before, scan_shared(store), started, ended)
    assert watcher.drop_own({"projects/late.md"}) == {"projects/late.md"}


def test_overflow_restarts_the_observer_and_rescans(watched: tuple[StoreWatcher, Recorder], store: Path) -> None:
    watcher, recorder = watched
    logging.getLogger("watchdog.observers.inotify_c").warning("Inotify queue overflowed; filesystem events were lost")
    watcher.check()
    assert watcher.health.overflows == 1 and watcher.health.restarts == 1
    assert recorder.rescans and "overflow" in recorder.rescans[0]
    (store / "projects" / "after.md").write_text("x\n")  # the new observer works
    wait_for(lambda: any("projects/after.md" in b for b, _ in recorder.batches), 5,
             "projects/after.md's batch")


def test_a_dead_observer_is_restarted(watched: tuple[StoreWatcher, Recorder], store: Path) -> None:
    watcher, recorder = watched
    assert watcher._observer is not None
    watcher._observer.stop()
    watcher._observer.join(5)
    watcher.check()
    assert recorder.rescans == ["the observer thread died"]
    (store / "projects" / "after.md").write_text("x\n")
    wait_for(lambda: any("projects/after.md" in b for b, _ in recorder.batches), 5,
             "projects/after.md's batch")


def test_a_replaced_root_is_watched_again(watched: tuple[StoreWatcher, Recorder], store: Path) -> None:
    watcher, recorder = watched
    shutil.rmtree(store)
    store.mkdir()  # may even get the old inode number back: the deletion event says it all
    (store / "projects").mkdir()

    def restarted() -> bool:
        watcher.check()
        return bool(recorder.rescans)

    wait_for(restarted, 5, "the watcher to notice the replaced root")
    (store / "projects" / "again.md").write_text("x\n")
    wait_for(lambda: any("projects/again.md" in b for b, _ in recorder.batches), 5,
             "projects/again.md's batch")


def test_watch_limit_falls_back_to_polling(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Exhausted:
        def __init__(self, **_: object) -> None:
            pass

        def schedule(self, *args: object, **kwargs: object) -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

        def stop(self) -> None:
            pass

        def is_alive(self) -> bool:
            return False

    monkeypatch.setattr(watcher_module, "Observer", Exhausted)
    recorder = Recorder()
    debouncer = Debouncer(QUIET, 5, recorder.flush)
    watcher = StoreWatcher(store, debouncer, recorder.on_lock, recorder.on_rescan, polling_interval=0.2)
    debouncer.start()
    try:
        assert watcher.start()
        assert watcher.health.mode == "polling"
        assert "max_user_watches" in (watcher.health.note or "")
        (store / "projects" / "polled.md").write_text("x\n")
        wait_for(lambda: any("projects/polled.md" in b for b, _ in recorder.batches), 5,
                 "projects/polled.md's batch")
    finally:
        watcher.stop()
        debouncer.stop()


def test_a_missing_store_is_waited_for(tmp_path: Path) -> None:
    recorder = Recorder()
    debouncer = Debouncer(QUIET, 5, recorder.flush)
    root = tmp_path / "later"
    watcher = StoreWatcher(root, debouncer, recorder.on_lock, recorder.on_rescan)
    assert not watcher.start()
    root.mkdir()
    watcher.check()
    try:
        assert watcher.health.alive and recorder.rescans == ["the store folder appeared"]
    finally:
        watcher.stop()


def test_handler_errors_do_not_kill_the_observer(watched: tuple[StoreWatcher, Recorder], store: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    watcher, recorder = watched
    calls = threading.Event()
    original = watcher._on_event

    def flaky(event: object) -> None:
        if not calls.is_set():
            calls.set()
            raise RuntimeError("boom")
        original(event)  # type: ignore[arg-type]

    monkeypatch.setattr(watcher, "_on_event", flaky)
    (store / "projects" / "one.md").write_text("1\n")
    wait_for(calls.is_set, 5, "the failing handler call")
    (store / "projects" / "two.md").write_text("2\n")
    wait_for(lambda: any("projects/two.md" in b for b, _ in recorder.batches), 5,
             "projects/two.md's batch")
    assert watcher._observer is not None and watcher._observer.is_alive()
