"""Exceptions that carry a message a person can act on.

The CLI maps each class to an exit code; nothing else in the package returns error values.
"""

from __future__ import annotations

from .exits import ALREADY_RUNNING, BAD_SETTINGS, NOT_RUNNING, STORE_UNSAFE, USAGE


class DistilldError(Exception):
    """Base class: the message names the file and says what to do. Exit codes: exits.py, the one table."""

    exit_code = USAGE
    file: str | None = None  # the file the message is about, when there is one (JSON errors say it)

    def __init__(self, *args: object, file: object = None) -> None:
        super().__init__(*args)
        if file is not None:
            self.file = str(file)


class StoreRefused(DistilldError):
    """The store cannot be changed safely as it is (an unreadable SPINE or ledger, a pending
    migration, a crash the recovery cannot explain): nothing was written."""

    exit_code = STORE_UNSAFE


class StoreError(DistilldError):
    """The store cannot be read as a store (missing root, unreadable directory)."""


class PolicyError(DistilldError):
    """A policy file is missing, unreadable or invalid: bad settings, 78, as for config.toml, so
    the service manager does not restart a daemon that cannot start with it."""

    exit_code = BAD_SETTINGS


class LockError(DistilldError):
    """Base class for the store lock (.lock, STORE-FORMAT.md section 2.2). Its exceptions carry
    the lock script's own exit codes (the protocol fixes them); the command line maps them to
    the table's (exits.py: LOCK_HELD, LOCK_LOST)."""


class LockUsageError(LockError, ValueError):
    """A bad argument to the lock, such as an owner name outside [A-Za-z0-9._:-]+."""

    exit_code = 2


class LockHeld(LockError):
    """Another owner holds a fresh lock (or the lock stayed contended) until the wait ran out."""

    exit_code = 1

    def __init__(self, message: str, owner: str | None, age: int | None) -> None:
        super().__init__(message)
        # None for both when the lock was contended rather than held by one known owner.
        self.owner = owner
        self.age = age


class LockLost(LockError):
    """The caller does not own the lock (stolen as stale, released, never held): stop writing."""

    exit_code = 3


class LockIOError(LockError):
    """The lock files could not be read or written; treat the lock as lost."""

    exit_code = 4


class ConfigError(DistilldError):
    """The machine-local settings are invalid. 78 is EX_CONFIG: the service manager does not
    restart a daemon that exits with it (RestartPreventExitStatus=78)."""

    exit_code = BAD_SETTINGS


class AlreadyRunning(DistilldError):
    """Another distilld process already follows this store (its instance lock is held)."""

    exit_code = ALREADY_RUNNING


class NotRunning(DistilldError):
    """No distilld process follows this store; 3 is the LSB code for "not running"."""

    exit_code = NOT_RUNNING


class UnsafeStore(StoreError):
    """The store holds something a write pass must not write through or record (a symbolic link
    where a managed folder should be, a name the ledger cannot hold, a ledger that shrank)."""
