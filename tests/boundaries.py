"""The engine's write boundaries (crashpoints.py), for the kill tests' tables.

Every operation of the one executor is followed by its boundary, and so are the journal marks,
the finish step and the rollback, wherever a pass reaches them: a table of a kill test lists
the boundaries one pass reaches and how often, and ``count_reached`` counts them in a real run.

A kill test crashes a child process at each (boundary, occurrence) of its table, which costs a
process start or two per case. ``sampled`` keeps every case but marks all except a seeded
sample ``exhaustive``: the default tiers kill at the sample, the full run (CI) at every one.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import random
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path

import pytest
from _pytest.mark.structures import ParameterSet

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
        if hasattr(module, "crashpoint"):
            monkeypatch.setattr(module, "crashpoint", lambda boundary: reached.update([boundary]))
    return reached


# The sample is the same on every machine and run; set DISTILLD_TEST_BOUNDARY_SEED to draw another.
SAMPLE_SEED = os.environ.get("DISTILLD_TEST_BOUNDARY_SEED", "distilld-boundaries-1")


def sampled(cases: Iterable[ParameterSet], group: Callable[[ParameterSet], Hashable], keep: int = 1,
            always: Callable[[ParameterSet], bool] = lambda case: False) -> list[ParameterSet]:
    """``cases`` in order, each case outside the sample marked ``exhaustive``. The sample is
    ``keep`` cases of every group (drawn with SAMPLE_SEED and the group's key, so adding a group
    does not redraw the others), plus every case ``always`` keeps."""
    cases = list(cases)
    groups: dict[Hashable, list[int]] = {}
    for index, case in enumerate(cases):
        groups.setdefault(group(case), []).append(index)
    chosen = {index for index, case in enumerate(cases) if always(case)}
    for key, members in groups.items():
        chosen.update(random.Random(f"{SAMPLE_SEED}:{key!r}").sample(members, min(keep, len(members))))
    return [case if index in chosen else
            pytest.param(*case.values, marks=[*case.marks, pytest.mark.exhaustive], id=case.id)
            for index, case in enumerate(cases)]
