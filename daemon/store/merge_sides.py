"""What a sync merge takes and gives (store/merge.py): the three sides as sets of files read on
demand, ours with the merge's changes on top as it is built, and the result, with each decision
said and each failure the merge would introduce or inherits."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .findings import Finding


class FileSet(Protocol):
    """One side of a merge: store-relative paths and their bytes, read on demand."""

    def paths(self) -> Iterable[str]: ...

    def get(self, path: str) -> bytes | None: ...

    def ident(self, path: str) -> Hashable | None:
        """Equal idents mean equal bytes (a blob id, or the bytes themselves); None: absent."""
        ...


class BytesFiles:
    """A FileSet over a dict, for tests and small stores."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self.files = dict(files)

    def paths(self) -> Iterable[str]:
        return self.files.keys()

    def get(self, path: str) -> bytes | None:
        return self.files.get(path)

    def ident(self, path: str) -> Hashable | None:
        return self.files.get(path)


class Overlay:
    """Ours with the merge's changes on top: the merged store as it is being built."""

    def __init__(self, ours: FileSet, changes: dict[str, bytes | None]) -> None:
        self.ours = ours
        self.changes = changes

    def get(self, path: str) -> bytes | None:
        if path in self.changes:
            return self.changes[path]
        return self.ours.get(path)

    def paths(self) -> set[str]:
        present = set(self.ours.paths())
        for path, raw in self.changes.items():
            if raw is None:
                present.discard(path)
            else:
                present.add(path)
        return present

    def materialise(self) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for path in self.paths():
            raw = self.get(path)
            if raw is not None:
                out[path] = raw
        return out


@dataclass(frozen=True)
class Sides:
    """How the inbox items name where a kept version came from."""

    local: str = "local"
    remote: str = "remote"


@dataclass
class StoreMerge:
    changes: dict[str, bytes | None] = field(default_factory=dict)  # on top of ours; None deletes
    inbox: list[str] = field(default_factory=list)  # sync-conflict items created
    resolutions: list[str] = field(default_factory=list)  # one line per decision, for the log
    blocked_by: list[Finding] = field(default_factory=list)  # failures the merge would introduce
    inherited: list[Finding] = field(default_factory=list)  # failures one side already had
    over_caps: list[Finding] = field(default_factory=list)  # caps both sides' growth passed together

    @property
    def ok(self) -> bool:
        return not self.blocked_by


# The size caps two sides can pass only together; compaction brings a store back within them.
GROWTH_CAPS = frozenset({"spine-lines", "spine-bytes", "entry-bytes", "file-lines", "file-bytes"})
