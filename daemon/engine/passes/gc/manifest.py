"""gc manifests: the journal written before the first move, with a done flag per move.

The manifest is gc's adapter of the one journal interface (engine/journal.py): each move is a
step of the one executor (the ledger line, the byte-exact move, the SPINE pointer removed), and
its done flag is the step's. Its format is the one the format fixes, so that the distiller can
finish or revert a pass that distilld started, and the other way round:

``data/gc-manifests/<UTC-compact>.json`` (STORE-FORMAT.md 1.11):
``{"ts": …, "moves": [{"from", "to", "sha256", "sha256_norm", "spine_entry", "done"}]}``.
distilld adds ``finished`` (the catalog was rebuilt after the last move), and per move
``abandoned`` (recovery found the move never completed) and ``reverted``; readers that do not
know these keys still see a valid manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ....crashpoints import crashpoint
from ....errors import DistilldError
from ....store import fs
from ....store.local import GC_MANIFESTS_DIR
from ...executor import Step
from .model import archive_step
from ...journal import journal_order, unique_journal_path

# The reason of a move whose manifest line names none (a manifest of an older client).
STALE_REASON = "no activity past the staleness threshold"


class ManifestError(DistilldError):
    """A manifest cannot be read or does not describe moves; gc stops until it is resolved."""


@dataclass
class ManifestMove:
    source: str
    target: str
    sha256: str
    sha256_norm: str
    spine_entry: str
    reason: str
    done: bool = False
    abandoned: bool = False
    reverted: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "from": self.source,
            "to": self.target,
            "sha256": self.sha256,
            "sha256_norm": self.sha256_norm,
            "spine_entry": self.spine_entry,
            "reason": self.reason,
            "done": self.done,
        }
        if self.abandoned:
            data["abandoned"] = True
        if self.reverted:
            data["reverted"] = True
        return data

    def step(self) -> Step:
        """Archiving this file, as operations of the one executor."""
        return archive_step(self.source, self.target, self.sha256, self.sha256_norm, self.reason, self.spine_entry,
                            self.done or self.abandoned)


@dataclass
class Manifest:
    path: Path
    ts: str
    moves: list[ManifestMove]
    finished: bool = False
    reverting: bool = False  # a revert started; recovery finishes it before anything else
    reverted: bool = False

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def unfinished(self) -> bool:
        if self.reverting:
            return not self.reverted
        return not self.finished or any(not (m.done or m.abandoned) for m in self.moves)

    @property
    def steps(self) -> list[Step]:
        return [move.step() for move in self.moves]

    def mark(self, index: int) -> None:
        self.moves[index].done = True
        self.save()
        crashpoint("manifest-marked")

    def save(self) -> None:
        payload: dict[str, Any] = {"ts": self.ts, "moves": [m.to_json() for m in self.moves]}
        payload["finished"] = self.finished
        if self.reverting:
            payload["reverting"] = True
        if self.reverted:
            payload["reverted"] = True
        # ASCII JSON: a stray non-UTF-8 byte in a SPINE entry is escaped and reads back exactly.
        fs.atomic_write(self.path, (json.dumps(payload, indent=2) + "\n").encode())


def new_manifest(root: Path, ts: str, moment: datetime, moves: list[ManifestMove]) -> Manifest:
    return Manifest(unique_journal_path(root / GC_MANIFESTS_DIR, moment, ".json"), ts, moves)


def load_manifest(path: Path) -> Manifest:
    try:
        data = json.loads(path.read_text("utf-8"))
        moves = [
            ManifestMove(
                source=str(m["from"]),
                target=str(m["to"]),
                sha256=str(m["sha256"]),
                sha256_norm=str(m.get("sha256_norm") or ""),
                spine_entry=str(m.get("spine_entry") or ""),
                reason=str(m.get("reason") or STALE_REASON),
                done=bool(m.get("done", False)),
                abandoned=bool(m.get("abandoned", False)),
                reverted=bool(m.get("reverted", False)),
            )
            for m in data["moves"]
        ]
        # A manifest written by a client that knows no "finished" key is finished when every move is done.
        finished = bool(data.get("finished", all(m.done for m in moves)))
        return Manifest(path, str(data.get("ts", "")), moves, finished,
                        bool(data.get("reverting", False)), bool(data.get("reverted", False)))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ManifestError(
            f"{path}: not a readable gc manifest ({error}); move it out of data/gc-manifests/ "
            "after checking the ledger, then run gc again"
        ) from None


def all_manifests(root: Path) -> list[Manifest]:
    directory = root / GC_MANIFESTS_DIR
    if not directory.is_dir():
        return []
    return [load_manifest(p) for p in sorted(directory.glob("*.json"), key=journal_order)]


def unfinished_manifests(root: Path) -> list[Manifest]:
    return [m for m in all_manifests(root) if m.unfinished]

