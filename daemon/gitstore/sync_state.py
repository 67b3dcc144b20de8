"""Machine-local sync state (data/git/sync.json beside the store's other state): how many syncs
failed in a row, and when the next automatic try may run (exponential backoff with jitter)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass

from .repo import StoreRepo, write_state_file

STATE_FILE = "sync.json"
BACKOFF_BASE_SECONDS = 30.0
BACKOFF_CAP_SECONDS = 3600.0


@dataclass
class SyncState:
    failures: int = 0
    retry_at: float = 0.0
    last_error: str | None = None
    last_success: float | None = None


def load_state(store: StoreRepo) -> SyncState:
    try:
        data = json.loads((store.state_dir / STATE_FILE).read_bytes())
        return SyncState(**{k: data[k] for k in asdict(SyncState()) if k in data})
    except (OSError, ValueError, TypeError):
        return SyncState()


def save_state(store: StoreRepo, state: SyncState) -> None:
    write_state_file(store.state_dir / STATE_FILE, json.dumps(asdict(state), indent=1).encode())


def backoff_seconds(failures: int, rng: Callable[[], float] = random.random,
                    base: float = BACKOFF_BASE_SECONDS, cap: float = BACKOFF_CAP_SECONDS) -> float:
    """Exponential in the number of failures, capped, with "equal jitter": half fixed, half random."""
    delay = min(cap, base * float(2 ** max(0, failures - 1)))
    return delay / 2 + rng() * delay / 2
