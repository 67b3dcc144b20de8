"""Migration's place in the pass table: a PENDING migration is an unfinished pass that only a
person finishes (`distilld migrate --finish` or `--revert`), so it has nothing to recover by itself."""

from __future__ import annotations

from ....store.local import pending_migrations
from .. import Pass

PASS = Pass("migration", lambda root: [marker.parent for marker in pending_migrations(root)], None)
