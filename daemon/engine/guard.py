"""The checks every write pass makes under the lock before it writes anything, in one place.

* No symbolic link where the store keeps its folders (store/safety.py); while the pass runs,
  every write under the root is made without following links (store/fs.py ``confined_to``).
* Temp files of dead distilld processes (and of the lock protocol) are swept, and logged.
* The ledger only grows: it is compared with the last version a pass saw, kept in the state
  folder, and with the last commit's when the store is a git repository; a line that
  disappeared or changed stops the pass until the ledger is put back.

``guarded_pass`` is entered by every shared pass entry point (actions/passes.py ``locked_pass``,
the follow pass's catalog write, the sync's lock holder, the daemon's exclusive jobs).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from ..errors import DistilldError, UnsafeStore
from ..locations import instance_key, state_dir  # not ..settings: check stays light
from ..store import fs
from ..store.ledger import lost_lines
from ..store.local import pending_migrations
from ..store.paths import LEDGER, Layout
from ..store.safety import store_links
from ..store.snapshot import Snapshot
from .store_identity import identity_path, identity_text, is_another_store

# The lock protocol's own temp names (STORE-FORMAT.md 2.2), beside distilld's fs.TEMP_RE.
PROTOCOL_TEMP_RE = re.compile(r"^\.(?:lock\.(?:new|swap|mx)\.([0-9]+)\.[0-9A-Za-z]+|status\.tmp\.([0-9]+))$")
SEEN_LEDGER = "LEDGER.seen.md"


# -- links ------------------------------------------------------------------------------------

def refuse_links(root: Path) -> None:
    links = store_links(root)
    if links:
        first = links[0]
        more = f" (and {len(links) - 1} more: {', '.join(str(x) for x in links[1:4])})" if len(links) > 1 else ""
        raise UnsafeStore(f"{root / first.path} is a symbolic link (to {first.target}){more}: distilld never "
                          "writes through a link, so this pass wrote nothing. Replace the link with a real "
                          "folder holding the files, then run it again.")


def other_names(path: Path, root: Path) -> list[Path]:
    """The store's other names for ``path``'s file (hard links), found by a walk of the store."""
    try:
        mine = os.lstat(path)
    except FileNotFoundError:
        return []
    found: list[Path] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            candidate = Path(directory, name)
            try:
                info = os.lstat(candidate)
            except OSError:
                continue
            if (info.st_ino, info.st_dev) == (mine.st_ino, mine.st_dev) and candidate != path:
                found.append(candidate)
    return found


def refuse_hard_linked_ledger(root: Path) -> None:
    """The ledger is appended in place: with another name, the bytes under that name would grow
    too, outside the store's own files. Refused before the first write."""
    path = root / LEDGER
    try:
        links = os.lstat(path).st_nlink
    except FileNotFoundError:
        return
    if links < 2:
        return
    others = other_names(path, root)
    where = (f"its other name in the store is {', '.join(str(p) for p in others)}" if len(others) == links - 1
             else f"find its other name{'s' if links > 2 else ''} with `find / -xdev -samefile {path}`")
    raise UnsafeStore(f"{path} has {links} hard links ({where}): the ledger is appended in place, so "
                      "every other name would change too; this pass wrote nothing. Make the ledger a file "
                      f"of its own (`cp -p {path} {path}.own && mv {path}.own {path}`), then run it again.")


# -- temp files -------------------------------------------------------------------------------

def temp_owner_pid(name: str) -> int | None:
    """The pid in a distilld or lock-protocol temp file name, or None for any other name."""
    match = fs.TEMP_RE.match(name)
    if match:
        return int(match.group(1))
    match = PROTOCOL_TEMP_RE.match(name)
    if match:
        return int(match.group(1) or match.group(2))
    return None


def sweep_temp_files(*folders: Path) -> list[Path]:
    """Remove the temp files of dead processes under ``folders`` (never into .git or through a
    link); returns what was removed."""
    # Imported here, not above: `check` reads this module's ledger checks without loading logging.
    from ..log import get_logger
    from .lock import pid_alive

    removed: list[Path] = []
    for folder in folders:  # os.walk of a missing folder yields nothing
        for directory, dirnames, filenames in os.walk(folder, followlinks=False):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            # Every temp name is hidden: most files end here. Sorted, so a sweep is the same each time.
            for name in sorted(n for n in filenames if n.startswith(".")):
                pid = temp_owner_pid(name)
                if pid is None or pid == os.getpid() or pid_alive(pid):
                    continue
                path = Path(directory, name)
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                removed.append(path)
    log = get_logger("distilld.guard")
    for path in removed:
        log.info("temp.removed", path=str(path), why="left by a process that no longer runs")
    return removed


# -- the ledger only grows --------------------------------------------------------------------

def seen_ledger_path(root: Path) -> Path:
    return state_dir() / instance_key(root) / SEEN_LEDGER


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


class LostLines(NamedTuple):
    lines: list[str]
    since: str  # "the last pass" or "the last commit (<id>)"
    kept_in: str  # where the lost lines can be read back from

    def __str__(self) -> str:
        shown = "; ".join(line[:100] for line in self.lines[:3])
        more = f" and {len(self.lines) - 3} more" if len(self.lines) > 3 else ""
        return (f"archive/LEDGER.md lost {len(self.lines)} line(s) since {self.since}: {shown}{more}. "
                f"The ledger only grows: put the lines back (they are in {self.kept_in}); "
                "nothing is archived, restored or migrated until then")


def _lost_since_seen(root: Path, current: bytes) -> LostLines | None:
    copy = seen_ledger_path(root)
    seen = _read(copy)
    lines = lost_lines(seen, current) if seen is not None else []
    if lines and seen is not None and is_another_store(root, copy, seen, current):
        return None  # a new store where an earlier one stood: its copy is set aside, not held against it
    return LostLines(lines, "the last pass", f"{copy} and in git") if lines else None


def _lost_since_commit(root: Path, current: bytes) -> LostLines | None:
    """Against HEAD's ledger, when the store is a git repository: this also holds on a machine
    whose state folder is new (a fresh clone), and when the state folder itself was lost."""
    if not os.path.lexists(root / ".git"):
        return None  # no repository: pygit2 is not even imported
    from ..gitstore.repo import committed_file  # the only pygit2 user; lazily, for start-up

    committed = committed_file(root, LEDGER)
    if committed is None:
        return None
    lines = lost_lines(committed.data, current)
    if not lines:
        return None
    return LostLines(lines, f"the last commit ({committed.commit})",
                     f"git: `git -C {root} show {committed.commit}:{LEDGER}`")


def lost_ledger_lines(root: Path, current: bytes | None = None) -> LostLines | None:
    """The ledger lines the last pass saw, or the last commit holds, that are no longer there
    (a changed line counts as lost), or None. Read-only. ``current``: the ledger's bytes as the
    caller already read them (check's snapshot, which never reads through a link)."""
    if current is None:
        current = _read(root / LEDGER) or b""
    return _lost_since_seen(root, current) or _lost_since_commit(root, current)


def refuse_shrunken_ledger(root: Path) -> None:
    lost = lost_ledger_lines(root)
    if lost is not None:
        raise UnsafeStore(f"{root / LEDGER}: {lost}")


def remember_ledger(root: Path) -> None:
    """Keep the ledger as this pass leaves it (only ever a superset of what was kept)."""
    current = _read(root / LEDGER)
    if current is None or _lost_since_seen(root, current) is not None:
        return
    copy = seen_ledger_path(root)
    seen = _read(copy)
    identity = identity_text(root)
    if seen == current and _read(identity_path(copy)) == identity:
        return
    copy.parent.mkdir(parents=True, exist_ok=True)
    if seen is not None and lost_lines(seen, current):  # another store's copy: kept aside, never removed
        os.replace(copy, copy.with_name(f"LEDGER.seen.another-store-{os.getpid()}-{int(time.time())}.md"))
    fs.atomic_write(copy, current, mode=0o600)
    fs.atomic_write(identity_path(copy), identity, mode=0o600)


def set_aside_seen_ledger(root: Path, stamp: str) -> Path | None:
    """Before a joining machine's first checkout (the repository holds no commit yet): the copy
    the state folder keeps belongs to whatever stood at this path before (a store deleted to
    join again, another store). Renamed aside, never removed, so that it cannot stop the join."""
    copy = seen_ledger_path(root)
    if not copy.exists():
        return None
    aside = copy.with_name(f"LEDGER.seen.before-join-{stamp}.md")
    fs.move_exact(copy, aside)
    return aside


def settle_set_aside_ledger(root: Path, aside: Path) -> str | None:
    """After the join: the set-aside copy goes when the store's ledger holds every line of it;
    otherwise it stays, and the note returned says how many lines and where they are."""
    lines = lost_lines(_read(aside) or b"", _read(root / LEDGER) or b"")
    if not lines:
        fs.remove(aside)
        return None
    return (f"{len(lines)} ledger line(s) an earlier store at this path had are not in the joined store's "
            f"ledger: kept in {aside}; add them back by hand if they belong to this store")


# -- the pass -------------------------------------------------------------------------------

def check_before_writing(root: Path) -> None:
    """Every refusal, before the pass writes its first byte; and the sweep."""
    refuse_links(root)
    refuse_hard_linked_ledger(root)
    refuse_shrunken_ledger(root)
    sweep_temp_files(root, state_dir() / instance_key(root), root / ".git" / "distilld")


@contextmanager
def guarded_pass(root: Path) -> Iterator[None]:
    """Run a write pass on ``root`` (resolved, lock held): checked first, confined throughout,
    and its ledger remembered at the end."""
    check_before_writing(root)
    try:
        with fs.confined_to(root):
            yield
    finally:
        remember_ledger(root)  # into the state folder, outside the confinement


def refuse_unless_settled(snapshot: Snapshot, refused: type[DistilldError], before: str, unmigrated: str,
                          commands: str = "distilld migrate --finish / --revert") -> None:
    """A pass runs on a readable store in the 1.2 layout with no migration PENDING; otherwise
    ``refused`` says what to do first (``before``: "before compacting"; ``unmigrated``: the advice
    for a pre-1.2 store)."""
    snapshot.require_readable()
    pending = pending_migrations(snapshot.root)
    if pending:
        raise refused(f"{pending[0]}: a store migration is PENDING; finish or revert it "
                      f"({commands}) {before}")
    if snapshot.layout is Layout.UNMIGRATED:
        raise refused(f"{snapshot.root}: pre-1.2 store (no CATALOG.md); {unmigrated}")
