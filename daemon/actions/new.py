"""`distilld new`: create an empty 1.2 store, exactly the format's installer-shaped store (with a
fresh catalog stamp) and the five tier folders, so that it passes `distilld check` as it is."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..store import fs
from ..store.catalog import render_catalog
from ..store.paths import CATALOG, SPINE, TIERS
from ..store.snapshot import take_snapshot

# STORE-FORMAT.md 1.1, "empty installer-shaped store": these bytes exactly.
INSTALLER_SPINE = ("# Distill Knowledge Index\n\n<!-- managed -->\n\n"
                   "- [Catalog](CATALOG.md) \u2014 complete inventory; not loaded at start.\n")


@dataclass
class NewStore:
    root: Path
    created: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "created": self.created}


def create_store(root: Path, now: datetime) -> NewStore:
    """Create the store at ``root``, which must not exist or be an empty folder (an existing
    store, or any other folder with files in it, is refused: nothing is overwritten)."""
    root = root.expanduser().absolute()
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise StoreError(f"{root} exists and is not a folder; choose another path for the new store")
    if root.is_dir() and any(root.iterdir()):
        what = "a store" if (root / SPINE).exists() else "a folder that is not empty"
        raise StoreError(f"{root} is already {what}; `distilld new` only creates a store in a new or empty "
                         "folder (`distilld init` keeps an existing store in git, `distilld migrate` "
                         "updates an old one)")
    outcome = NewStore(root)
    root.mkdir(parents=True, exist_ok=True)
    for tier in TIERS:
        (root / tier).mkdir(exist_ok=True)
        outcome.created.append(f"{tier}/")
    fs.atomic_write(root / SPINE, INSTALLER_SPINE.encode("utf-8"))
    outcome.created.append(SPINE)
    catalog = render_catalog(take_snapshot(root), now)
    fs.atomic_write(root / CATALOG, catalog.encode("utf-8"))  # last: a catalog marks a 1.2 store
    outcome.created.append(CATALOG)
    return outcome


def render_text(outcome: NewStore) -> str:
    return (f"{outcome.root}: created an empty 1.2 store ({', '.join(outcome.created)})\n"
            f"next: `distilld check {outcome.root}`; `distilld init {outcome.root} --remote URL` to sync it; "
            f"`distilld run --store {outcome.root}` to follow it\n")


def render_json(outcome: NewStore) -> str:
    return json.dumps(outcome.to_dict(), indent=2, ensure_ascii=False) + "\n"
