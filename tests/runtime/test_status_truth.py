"""`distilld status` says what is true: a skipped sync is SKIPPED (not ok), a backoff that has
ended is not listed as stuck, and files edited outside a distillation are named. Through the
real command line, reading a status.json the way the daemon leaves it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import healthy_store

from distilld.cli import main
from distilld.settings import instance_key


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, where in {"HOME": "home", "DISTILLD_STATE_DIR": "state", "DISTILLD_RUNTIME_DIR": "rt",
                        "DISTILLD_CONFIG_DIR": "config"}.items():
        monkeypatch.setenv(name, str(tmp_path / where))
    monkeypatch.delenv("DISTILLD_STORE", raising=False)
    return healthy_store(tmp_path / "store").root


def write_status(store: Path, tmp_path: Path, **data: object) -> None:
    folder = tmp_path / "state" / instance_key(store.resolve())
    folder.mkdir(parents=True, exist_ok=True)
    base = {"schema": 1, "store": str(store), "state": "idle", "updated_at": "2026-11-30T12:00:00+00:00"}
    (folder / "status.json").write_text(json.dumps({**base, **data}))


def status_text(capsys: pytest.CaptureFixture[str], store: Path) -> str:
    main(["status", str(store)])
    return capsys.readouterr().out


def test_a_skipped_sync_is_shown_as_skipped(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_status(store, tmp_path, passes={"sync": {
        "at": "2026-11-30T12:00:00Z", "ok": True, "outcome": "skipped",
        "summary": "skipped: .lock is held (by alpha for 12 s)"}})
    line = next(line for line in status_text(capsys, store).splitlines() if line.strip().startswith("sync "))
    assert "SKIPPED" in line and " ok " not in line


def test_an_expired_backoff_is_not_stuck(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_status(store, tmp_path, git={"ahead": 0, "behind": 0, "backoff_until": "2020-01-01T00:00:00Z"})
    text = status_text(capsys, store)
    assert "backing off" not in text and "stuck: nothing" in text
    write_status(store, tmp_path, git={"ahead": 0, "behind": 0, "backoff_until": "2999-01-01T00:00:00Z"})
    assert "sync backing off until 2999-01-01T00:00:00Z" in status_text(capsys, store)


def test_outside_edits_are_named(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_status(store, tmp_path, outside_edits=[{"path": "projects/kestrel.md", "at": "2026-11-30T12:00:00Z"}])
    text = status_text(capsys, store)
    assert "edited outside a distillation" in text and "projects/kestrel.md" in text
