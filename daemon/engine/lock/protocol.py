"""The `.lock` line of the distiller's lock protocol (STORE-FORMAT.md 2.2): its file names, the
owner names it allows, the line `<owner> <epoch> <iso>` and how a reader makes sense of any file.

distilld and the distiller's own bin/distill-lock.sh / .ps1 take turns on one store, so this
follows that script step by step: the same names, the same line, the same reading of a junk file.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...errors import LockIOError, LockUsageError

LOCK_FILE = ".lock"
MUTEX_FILE = ".lock.takeover"

Clock = Callable[[], float]

# The distiller's script refuses any other owner name (exit 2); its lines must stay parseable.
_OWNER_RE = re.compile(r"[A-Za-z0-9._:-]+")
_NOT_OWNER_CHARS = re.compile(r"[^A-Za-z0-9._:-]+")
# ASCII digits only: str.isdigit() would also accept other scripts' digits, which `[0-9]` does not.
DIGITS = re.compile(rb"[0-9]+")
# A sane .lock line is ~60 bytes; never slurp a junk file whole. Staying under 4300 bytes also
# keeps any digit run within int()'s default digit limit.
_FIRST_LINE_MAX = 4096


def format_iso(epoch: int) -> str:
    """UTC `YYYY-MM-DDTHH:MM:SSZ`, the stamp format of `.lock` and `.status`."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def check_owner(owner: str) -> str:
    """Return ``owner`` if the distiller's script would accept it, else raise LockUsageError."""
    if not isinstance(owner, str) or _OWNER_RE.fullmatch(owner) is None:
        raise LockUsageError(
            f"lock owner {owner!r}: use only letters, digits and . _ : - (at least one character)"
        )
    return owner


def default_owner() -> str:
    """`distilld.<hostname>.<pid>`, with characters outside the owner charset replaced by `-`."""
    host = _NOT_OWNER_CHARS.sub("-", socket.gethostname()) or "localhost"
    return f"distilld.{host}.{os.getpid()}"


@dataclass(frozen=True)
class LockLine:
    """What `.lock` says: its owner and epoch, or ("?", mtime) when the line is malformed."""

    owner: str
    epoch: int

    def encode(self) -> bytes:
        """The line as the script writes it: owner, epoch and the epoch's ISO stamp."""
        return f"{self.owner} {self.epoch} {format_iso(self.epoch)}\n".encode("ascii")


def read_lock(root: Path) -> LockLine | None:
    """Read `.lock` the way the script's read_lock does; None means the lock is free."""
    path = Path(root) / LOCK_FILE
    head: bytes | None
    try:
        with open(path, "rb") as handle:
            head = handle.read(_FIRST_LINE_MAX)
    except FileNotFoundError:
        return None
    except OSError:
        head = None  # unreadable counts as malformed: it ages by its mtime
    if head is not None:
        fields = head.split(b"\n", 1)[0].split()
        if len(fields) >= 2 and DIGITS.fullmatch(fields[1]) is not None:
            return LockLine(fields[0].decode("utf-8", "replace"), int(fields[1]))
    try:
        mtime = os.stat(path).st_mtime
    except FileNotFoundError:
        return None  # released between the read and the stat
    except OSError as error:
        raise LockIOError(
            f"{path}: cannot read the lock ({error.strerror or error}); "
            "check the store's permissions"
        ) from None
    return LockLine("?", int(mtime))
