"""Every test keeps away from the real machine: distilld's config, state and runtime folders
point into temporary directories, so no test reads a real config file or touches a real
daemon's status, lock or socket."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def distilld_dirs(tmp_path: Path) -> Iterator[dict[str, Path]]:
    # Its own MonkeyPatch, not the test's: a test that calls ``monkeypatch.undo()`` to end its
    # own patches must not send distilld back to the real folders for the rest of the test.
    with pytest.MonkeyPatch.context() as isolation:
        # The runtime folder holds a Unix socket, whose path must stay short: not under tmp_path.
        runtime = Path(tempfile.mkdtemp(prefix="dd-", dir="/tmp"))
        dirs = {"config": tmp_path / "distilld-config", "state": tmp_path / "distilld-state", "runtime": runtime}
        isolation.setenv("DISTILLD_CONFIG_DIR", str(dirs["config"]))
        isolation.setenv("DISTILLD_STATE_DIR", str(dirs["state"]))
        isolation.setenv("DISTILLD_RUNTIME_DIR", str(runtime))
        for name in [n for n in os.environ if n.startswith("DISTILLD_") and n.removeprefix("DISTILLD_")
                     not in ("CONFIG_DIR", "STATE_DIR", "RUNTIME_DIR")]:
            isolation.delenv(name)
        for name in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"):
            isolation.delenv(name, raising=False)
        yield dirs
    shutil.rmtree(runtime, ignore_errors=True)
