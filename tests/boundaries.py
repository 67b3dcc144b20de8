"""The engine's write boundaries (engine/crash.py), for the kill tests' tables.

Every operation of the one executor is followed by its boundary, and so are the journal marks,
the finish step and the rollback, wherever a pass reaches them: a table of a kill test lists
the boundaries one pass reaches and how often, and ``count_reached`` counts them in a real run.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections import Counter
from pathlib import Path

import pytest

import distilld.engine
from distilld.engine.executor import BOUNDARY

ENGINE = Path(distilld.engine.__file__).parent
CRASHPOINT_RE = re.compile(r'crashpoint\("([a-z-]+)"\)')


def boundaries_in(*relative: str) -> set[str]:
    """The boundary names written out in these engine modules (paths relative to engine/)."""
    return {name for path in relative for name in CRASHPOINT_RE.findall((ENGINE / path).read_text())}


def executor_boundaries() -> set[str]:
    return set(BOUNDARY.values())


def every_boundary() -> set[str]:
    """Every boundary the engine has: those written out anywhere, and the executor's."""
    found = {name for path in ENGINE.rglob("*.py") for name in CRASHPOINT_RE.findall(path.read_text())}
    return found | executor_boundaries()


def count_reached(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """A counter every engine module's crashpoint adds to, for the rest of the test (in-process)."""
    reached: Counter[str] = Counter()
    for info in pkgutil.walk_packages(distilld.engine.__path__, "distilld.engine."):
        module = importlib.import_module(info.name)
        if hasattr(module, "crashpoint") and info.name != "distilld.engine.crash":
            monkeypatch.setattr(module, "crashpoint", lambda boundary: reached.update([boundary]))
    return reached
