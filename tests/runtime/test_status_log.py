"""log.py: the activity log's lines, rotation, tail and follow; status.json replaced atomically;
the JSON-lines log; and the `distilld status` view's verdicts on what is stuck."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import structlog
from distilld.actions.status import build_view, find_stuck, render_text
from distilld.log import (
    ActivityLog,
    StatusFile,
    configure_logging,
    follow_lines,
    read_json,
    tail_lines,
)
from waiting import wait_for

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  \S.*$")


def test_activity_lines_are_one_line_each(tmp_path: Path) -> None:
    log = ActivityLog(tmp_path / "activity.log")
    log.write("committed 3 agent changes (abc1234): projects/x.md")
    log.write("a message\nwith a break")
    lines = (tmp_path / "activity.log").read_text().splitlines()
    assert len(lines) == 2
    assert all(LINE.match(line) for line in lines)
    assert lines[1].endswith("a message with a break")


def test_activity_log_rotates_and_tail_spans_the_rotation(tmp_path: Path) -> None:
    path = tmp_path / "activity.log"
    log = ActivityLog(path, max_bytes=10_000, backups=2)
    for index in range(600):
        log.write(f"line {index:04d} " + "x" * 40)
    assert path.with_name("activity.log.1").exists()
    assert not path.with_name("activity.log.3").exists()
    last = tail_lines(path, 5)
    assert [line[-45:-41] for line in last] == ["0595", "0596", "0597", "0598", "0599"]


def test_follow_sees_new_lines_and_rotation(tmp_path: Path) -> None:
    path = tmp_path / "activity.log"
    log = ActivityLog(path, max_bytes=300, backups=1)
    log.write("before follow")
    stop = threading.Event()
    seen: list[str] = []

    def reader() -> None:
        for line in follow_lines(path, poll=0.02, stop=stop):
            seen.append(line)

    thread = threading.Thread(target=reader)
    thread.start()

    def ready_seen() -> bool:  # it follows from the end once it first looks: is that look done?
        log.write("ready")
        return bool(seen)

    def seen_line(text: str) -> bool:
        return any(line.endswith(f"  {text}") for line in seen)

    try:
        wait_for(ready_seen, 5, "the follower to start", interval=0.1)
        # Two lines at a time, each pair waited for: a rotation can fall between the two (the rest
        # of the rotated file must come first), never two in one look (backups=1 keeps one file).
        for index in range(0, 12, 2):
            log.write(f"after {index}")
            log.write(f"after {index + 1}")
            last = f"after {index + 1}"
            wait_for(lambda: seen_line(last), 5, f"line {last!r}")  # noqa: B023 (waited for here)
    finally:
        stop.set()
        thread.join()
    said = [line.split("  ", 1)[1] for line in seen]
    assert said == ["ready"] * said.count("ready") + [f"after {i}" for i in range(12)]


def test_status_file_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    status = StatusFile(path, {"state": "starting"})
    status.update(state="idle")
    status.merge("passes", "follow", {"ok": True})
    data = read_json(path)
    assert data is not None and data["state"] == "idle" and data["passes"]["follow"]["ok"] is True
    assert "updated_at" in data
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]  # no temp file left behind


def test_json_lines_log(tmp_path: Path) -> None:
    path = tmp_path / "distilld.jsonl"
    configure_logging(path, "info", console="off")
    try:
        structlog.get_logger("distilld.test").info("pass.done", job="follow", ok=True)
        import logging

        logging.getLogger("apscheduler.test").warning("foreign record")
        for handler in logging.getLogger().handlers:
            handler.flush()
        records = [json.loads(line) for line in path.read_text().splitlines()]
    finally:
        configure_logging(None, "warning", console="off")
    assert records[0]["event"] == "pass.done" and records[0]["job"] == "follow" and "timestamp" in records[0]
    assert records[1]["event"] == "foreign record" and records[1]["level"] == "warning"


NOW = 1_800_000_000.0


def stamp(offset: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW + offset))


def test_nothing_stuck_when_all_is_well() -> None:
    data = {"updated_at": stamp(-5), "passes": {"follow": {"ok": True}}, "watcher": {"alive": True},
            "git": {"ahead": 0, "behind": 0}, "next_runs": {"sync": stamp(60)}}
    assert find_stuck(data, True, None, NOW) == []


def test_stuck_states_are_named() -> None:
    data = {
        "updated_at": stamp(-600),
        "waiting": {"for": "lock", "owner": "alpha", "age_seconds": 100, "since": stamp(-1000)},
        "git": {"ahead": 2, "behind": 1, "remote": "origin", "blocked": "merge conflict in projects/x.md",
                "last_sync": {"at": stamp(-7200)}},
        "watcher": {"alive": False, "pending_for_seconds": 400, "max_wait_seconds": 30},
        "passes": {"compaction": {"ok": False, "summary": "self-check failed"}},
        "next_runs": {"sync": stamp(-3600)},
    }
    stuck = " | ".join(find_stuck(data, True, {"installed": True, "enabled": "enabled", "current": True}, NOW))
    for words in ("not updated its status", "lock held by alpha", "sync blocked: merge conflict",
                  "2 commit(s) not pushed", "1 commit(s) on the remote", "file watcher is not running",
                  "waiting 6 min", "last compaction pass failed", "sync was due"):
        assert words in stuck


def test_enabled_service_that_does_not_run_is_stuck() -> None:
    stuck = find_stuck(None, False, {"installed": True, "enabled": "enabled", "current": True}, NOW)
    assert stuck and "not running" in stuck[0]


def test_status_text_says_waiting_for_whom() -> None:
    data = {"started_at": stamp(-100), "updated_at": stamp(-1), "state": "waiting",
            "waiting": {"for": "lock", "owner": "alpha", "age_seconds": 40, "since": stamp(-2), "job": "follow"},
            "lock": {"state": "held", "owner": "alpha", "age_seconds": 40},
            "budgets": {"spine_lines": {"value": 84, "cap": 80, "margin": -4},
                        "spine_bytes": {"value": 100, "cap": 16000, "margin": 15900}}}
    view = build_view(Path("/s"), data, 123, None, {"activity_log": "/a"}, now=NOW)
    text = render_text(view)
    assert "waiting: lock held by alpha for 40 s" in text
    assert "84/80 lines (4 OVER)" in text
    assert "running (pid 123)" in text


def test_a_status_file_that_cannot_be_written_does_not_stop_the_daemon(tmp_path: Path) -> None:
    from distilld.log import StatusFile

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the status folder should be\n")
    status = StatusFile(blocker / "status.json", {"state": "starting"})
    status.update(state="running")  # must not raise: a full or broken disk is reported, not fatal
    assert status.write_error is not None and "not-a-dir" in status.write_error
    blocker.unlink()
    blocker.mkdir()
    status.update(state="idle")
    assert status.write_error is None and (blocker / "status.json").exists()


def test_a_pass_that_waited_for_the_store_is_not_shown_as_ok_once_the_store_is_there(tmp_path: Path) -> None:
    # issue 27: "waiting: no store" results stayed "ok" after the store appeared
    store = tmp_path / "store"
    store.mkdir()
    data = {"state": "idle", "updated_at": "2026-11-30T12:00:00Z",
            "passes": {"follow": {"at": "2026-11-30T11:59:00Z", "ok": True,
                                  "summary": f"waiting: no store at {store} (`distilld new` creates one)"}}}
    text = render_text(build_view(store, data, 123, None, {"activity_log": "/a"}, now=NOW))
    line = next(line for line in text.splitlines() if line.strip().startswith("follow"))
    assert "WAITED" in line and "ok " not in line
    assert "the store is there now" in line


def test_an_activity_line_cut_short_by_a_full_disk_is_taken_back(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    import distilld.log as log_module
    import pytest

    log = ActivityLog(tmp_path / "activity.log", echo=False)
    log.write("first line")
    before = (tmp_path / "activity.log").read_bytes()
    real_write = os.write
    monkeypatch.setattr(log_module.os, "write", lambda fd, data: real_write(fd, data[:7]))  # a full disk
    with pytest.raises(OSError):
        log.write("second line, cut after seven bytes")
    monkeypatch.undo()
    assert (tmp_path / "activity.log").read_bytes() == before
    log.write("third line")
    assert [line.split("  ", 1)[1] for line in (tmp_path / "activity.log").read_text().splitlines()] == [
        "first line", "third line"]
