"""The tests' own isolation: whatever a test does with its monkeypatch, distilld's folders stay
in temporary directories (a test's ``monkeypatch.undo()`` once sent the kept ledger of three gc
tests into the real state folder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from distilld.locations import config_dir, runtime_dir, state_dir


def test_a_tests_own_undo_leaves_distilld_in_the_temporary_folders(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTILLD_STATE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.undo()
    assert state_dir() == tmp_path / "distilld-state"
    assert config_dir() == tmp_path / "distilld-config"
    assert str(runtime_dir()).startswith("/tmp/dd-")


@pytest.fixture(scope="module")
def state_dir_seen_by_a_module_fixture() -> Path:
    return state_dir()  # set up before any test's own folders exist


def test_a_module_fixture_gets_the_sessions_folders_not_the_real_ones(state_dir_seen_by_a_module_fixture: Path,
                                                                       tmp_path: Path) -> None:
    seen = state_dir_seen_by_a_module_fixture
    assert seen.name == "state" and seen.parent.name.startswith("distilld-session")
    assert seen.parent.parent == tmp_path.parent  # the session's own temporary base
