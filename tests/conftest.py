"""Every test keeps away from the real machine: distilld's config, state and runtime folders
point into temporary directories, so no test reads a real config file or touches a real
daemon's status, lock or socket."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import oracle_cache
import pytest


def pytest_configure(config: pytest.Config) -> None:
    # The reference checker's answers, kept across runs by input hash (tests/oracle_cache.py).
    if os.environ.get("DISTILLD_TEST_ORACLE_CACHE", "1") != "0" and config.cache is not None:
        oracle_cache.cache_dir = config.cache.mkdir("oracle-verdicts")


def _isolate(isolation: pytest.MonkeyPatch, config: Path, state: Path) -> Path:
    """Point distilld's folders at ``config`` and ``state`` and a new runtime folder (returned),
    and drop every other DISTILLD_ setting and the service manager's variables."""
    # The runtime folder holds a Unix socket, whose path must stay short: not under tmp_path.
    runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))
    isolation.setenv("DISTILLD_CONFIG_DIR", str(config))
    isolation.setenv("DISTILLD_STATE_DIR", str(state))
    isolation.setenv("DISTILLD_RUNTIME_DIR", str(runtime))
    for name in [n for n in os.environ if n.startswith("DISTILLD_") and n.removeprefix("DISTILLD_")
                 not in ("CONFIG_DIR", "STATE_DIR", "RUNTIME_DIR")]:
        isolation.delenv(name)
    for name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
        isolation.delenv(name, raising=False)
    return runtime


@pytest.fixture(scope="session", autouse=True)
def distilld_dirs_for_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module- and session-scoped fixtures are set up before any test's own folders exist: they
    get folders of the session's, never the real ones."""
    base = tmp_path_factory.mktemp("distilld-session")
    with pytest.MonkeyPatch.context() as isolation:
        runtime = _isolate(isolation, base / "config", base / "state")
        yield
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(autouse=True)
def distilld_dirs(tmp_path: Path) -> Iterator[dict[str, Path]]:
    # Its own MonkeyPatch, not the test's: a test that calls ``monkeypatch.undo()`` to end its
    # own patches must not send distilld back to the real folders for the rest of the test.
    with pytest.MonkeyPatch.context() as isolation:
        dirs = {"config": tmp_path / "distilld-config", "state": tmp_path / "distilld-state"}
        dirs["runtime"] = _isolate(isolation, dirs["config"], dirs["state"])
        yield dirs
    shutil.rmtree(dirs["runtime"], ignore_errors=True)
