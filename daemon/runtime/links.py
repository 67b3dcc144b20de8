"""The daemon's small interface to the passes other parts of distilld provide: committing and
syncing with git, and compaction. Each is looked up when first used; when a part is missing
from this build the job reports that plainly instead of failing, and everything else runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..policy import Policy
from ..settings import Settings


@dataclass
class CommitResult:
    committed: bool
    sha: str | None = None
    paths: list[str] = field(default_factory=list)
    note: str | None = None  # why nothing was committed, when that is worth saying


@dataclass
class SyncResult:
    ok: bool
    summary: str
    pulled: int = 0
    pushed: int = 0
    blocked: str | None = None
    ahead: int | None = None
    behind: int | None = None
    backoff_until: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class CompactResult:
    ok: bool
    summary: str
    lines: list[str] = field(default_factory=list)  # one activity line per thing done
    changed: list[str] = field(default_factory=list)


def _optional(module: str) -> Any | None:
    try:
        return importlib.import_module(module, __package__)
    except ImportError:
        return None


class GitLink:
    """Commits and sync through distilld's git layer (actions/sync.py), when this build has it."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        self.settings = settings
        self._module = _optional("..actions.sync")

    @property
    def available(self) -> bool:
        return self._module is not None

    @property
    def missing(self) -> str:
        return "git support is not part of this build (distilld.actions.sync is missing)"

    def commit_changes(self, message: str) -> CommitResult:
        return CommitResult(False, note=self.missing)

    def commit_operation(self, paths: list[str], message: str) -> CommitResult:
        return CommitResult(False, note=self.missing)

    def sync(self) -> SyncResult:
        return SyncResult(True, self.missing)

    def state(self) -> dict[str, Any]:
        return {"available": self.available, "note": None if self.available else self.missing}


class CompactLink:
    """Compaction (actions/compact.py: run_compact), when this build has it."""

    def __init__(self) -> None:
        self._module = _optional("..actions.compact")

    @property
    def available(self) -> bool:
        return self._module is not None and hasattr(self._module, "run_compact")

    def run(self, root: Path, policy: Policy, clock: Callable[[], datetime]) -> CompactResult:
        if not self.available:
            return CompactResult(True, "compaction is not part of this build (distilld.actions.compact is missing)")
        report = self._module.run_compact(root, policy, clock, wait=0, apply=True)
        ok = bool(getattr(report, "ok", True))
        return CompactResult(ok, str(report))
