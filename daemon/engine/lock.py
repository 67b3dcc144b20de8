"""The store lock: the distiller's owner-checked `.lock` protocol and its `.status` line.

distilld and the distiller's own bin/distill-lock.sh / .ps1 take turns on one store, so this module
follows that script step by step (STORE-FORMAT.md 2.2): the same file names, the same `.lock` line,
the same persistent flock mutex `.lock.takeover`, the same staleness rule and the same three
`.status` forms (STORE-FORMAT.md 1.11, 2.1).

* `.lock` is created with link(2) from a complete temp file, so it is never seen half written;
  an existing `.lock` is only ever changed under the `.lock.takeover` mutex, and replaced by
  rename, so it never goes missing while someone holds it.
* Heartbeat and release re-check under the mutex that the line is still exactly the one this
  object wrote (owner and epoch): a stale holder that was taken over learns it (LockLost) and
  writes nothing, not even its checkpoint.

One addition to the script's rules: a lock that is provably abandoned (its owner names a
distilld process of this machine that no longer runs, or whose pid now belongs to a process
started after the lock was written) is taken over at once, under the mutex exactly as a stale
one, and logged; any other owner's lock keeps the stale period.

Wall-clock time (the `.lock` epoch, the ISO stamps, staleness) comes from the injected ``clock``;
waits and polls use the monotonic clock, so a frozen test clock cannot make a wait endless.
A StoreLock is not thread-safe: use one per thread of control.

These are the lock protocol's own files; nothing here writes store knowledge.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LockHeld, LockIOError, LockLost, LockUsageError
from ..log import get_logger

if TYPE_CHECKING:
    from ..policy import LockPolicy

__all__ = [
    "LOCK_FILE",
    "MUTEX_FILE",
    "STATUS_FILE",
    "AcquireKind",
    "AcquireResult",
    "Clock",
    "LockLine",
    "LockState",
    "LockStateKind",
    "StoreLock",
    "check_owner",
    "default_owner",
    "format_iso",
    "lock_status",
    "pid_alive",
    "read_lock",
]

LOCK_FILE = ".lock"
MUTEX_FILE = ".lock.takeover"
STATUS_FILE = ".status"

Clock = Callable[[], float]

# The distiller's script refuses any other owner name (exit 2); its lines must stay parseable.
_OWNER_RE = re.compile(r"[A-Za-z0-9._:-]+")
_NOT_OWNER_CHARS = re.compile(r"[^A-Za-z0-9._:-]+")
# ASCII digits only: str.isdigit() would also accept other scripts' digits, which `[0-9]` does not.
_DIGITS = re.compile(rb"[0-9]+")

MUTEX_POLL_SECONDS = 0.05  # the script's poll interval for the mutex
# A sane .lock line is ~60 bytes; never slurp a junk file whole. Staying under 4300 bytes also
# keeps any digit run within int()'s default digit limit.
_FIRST_LINE_MAX = 4096
# link(2) errors meaning "this file system has no hard links": fall back to O_EXCL, like the .ps1.
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})
# `.status.tmp.<pid>` is per process only, so threads of one process must not write it at once.
_STATUS_WRITE = threading.Lock()
_log = get_logger("distilld.lock")


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
        if len(fields) >= 2 and _DIGITS.fullmatch(fields[1]) is not None:
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


class LockStateKind(enum.Enum):
    FREE = "free"
    HELD = "held"
    STALE = "stale"


@dataclass(frozen=True)
class LockState:
    """The script's `status` answer: free, or held/stale with the owner and the age in seconds."""

    kind: LockStateKind
    owner: str | None = None
    age: int | None = None

    def __str__(self) -> str:
        if self.kind is LockStateKind.FREE:
            return "free"
        return f"{self.kind.value} {self.owner} {self.age}s"


def lock_status(root: Path, stale_seconds: float = 300, clock: Clock = time.time) -> LockState:
    """Say who holds the store's lock and whether it may be taken over; changes nothing."""
    line = read_lock(Path(root))
    if line is None:
        return LockState(LockStateKind.FREE)
    age = int(clock()) - line.epoch
    kind = LockStateKind.STALE if age >= stale_seconds else LockStateKind.HELD
    return LockState(kind, line.owner, age)


# Told of every stale-lock takeover (the store, the new owner, the old owner, its age in s), so
# the command line can put it in the activity log; the daemon logs its own takeovers itself.
TakeoverHook = Callable[[Path, str, "str | None", "int | None"], None]
takeover_hook: TakeoverHook | None = None


class AcquireKind(enum.Enum):
    ACQUIRED = "acquired"
    ALREADY_HELD = "already held"
    TOOK_OVER = "took over"


@dataclass(frozen=True)
class AcquireResult:
    """How the lock was obtained; ``previous_*`` describe a stale lock that was taken over."""

    kind: AcquireKind
    epoch: int
    previous_owner: str | None = None
    previous_age: int | None = None
    abandoned: str | None = None  # why a fresh lock was taken over: its owner is provably gone

    def __str__(self) -> str:
        # The script's words, so logs read the same whichever client took the lock.
        if self.kind is AcquireKind.ALREADY_HELD:
            return "acquired (already held)"
        if self.kind is AcquireKind.TOOK_OVER and self.abandoned:
            return f"acquired (took over abandoned lock from {self.previous_owner}: {self.abandoned})"
        if self.kind is AcquireKind.TOOK_OVER:
            return f"acquired (took over stale lock from {self.previous_owner})"
        return "acquired"


def _process_start_epoch(pid: int) -> float | None:
    """When process ``pid`` started (wall clock), from /proc; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith(b"btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, StopIteration):
        return None


def pid_alive(pid: int) -> bool:
    """Does process ``pid`` of this machine run (someone else's counts)? A pid below 1 is never
    judged dead."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abandoned_owner(line: LockLine) -> str | None:
    """Why a lock is provably abandoned, or None: its owner names a distilld process of this
    machine (``distilld.<host>.<pid>``) and that process is gone, or the pid now belongs to a
    process started after the lock was last written (a reused pid cannot have written it)."""
    prefix = default_owner().rsplit(".", 1)[0] + "."
    if not line.owner.startswith(prefix):
        return None
    pid_text = line.owner[len(prefix):]
    if _DIGITS.fullmatch(pid_text.encode()) is None:
        return None
    pid = int(pid_text)
    if pid == os.getpid() or pid <= 0:
        return None
    if not pid_alive(pid):
        return f"its owner, process {pid} of this machine, no longer runs"
    started = _process_start_epoch(pid)
    if started is not None and started > line.epoch + 2:  # 2 s: clock-tick rounding of the start time
        return f"process {pid} of this machine started after the lock was written (a reused pid)"
    return None


class _MutexBusy(Exception):
    """The `.lock.takeover` mutex stayed held for the whole takeover wait."""


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):  # cleanup must not hide the error that got us here
        os.unlink(path)


def _write_new_file(path: Path, data: bytes, *, exclusive: bool) -> None:
    """Create ``path`` holding ``data``, synced; removed again if writing fails."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= os.O_EXCL if exclusive else os.O_TRUNC
    fd = os.open(path, flags, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)  # complete on disk before it gets its public name
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(path)  # we created it, so a failed write leaves nothing behind
        raise


def _io_error(path: Path, doing: str, error: OSError) -> LockIOError:
    return LockIOError(
        f"{path}: cannot {doing} ({error.strerror or error}); treat the lock as lost, "
        "and check the store directory's permissions and free space"
    )


_EPOCHS: dict[tuple[str, str], int | None] = {}


class StoreLock:
    """One owner's handle on a store's `.lock`.

    ``acquire`` takes the lock (or refreshes it when this owner already holds it, or takes over a
    stale one), ``heartbeat`` refreshes it after every file written, ``release`` gives it back.
    ``epoch`` is the epoch this object last wrote into `.lock` (None once it knows it does not
    hold the lock).
    """

    def __init__(
        self,
        root: Path | str,
        owner: str,
        stale_seconds: float = 300,
        poll_seconds: float = 2,
        takeover_wait_seconds: float = 10,
        clock: Clock = time.time,
    ) -> None:
        self.root = Path(root)
        self.owner = check_owner(owner)
        if not stale_seconds > 0:
            raise LockUsageError(f"stale_seconds must be positive (got {stale_seconds!r})")
        if not poll_seconds > 0:
            raise LockUsageError(f"poll_seconds must be positive (got {poll_seconds!r})")
        if not takeover_wait_seconds >= 0:
            raise LockUsageError(
                f"takeover_wait_seconds must be >= 0 (got {takeover_wait_seconds!r})"
            )
        self.stale_seconds = stale_seconds
        self.poll_seconds = poll_seconds
        self.takeover_wait_seconds = takeover_wait_seconds
        self._clock = clock
        self._key = (os.path.realpath(self.root), self.owner)

    # One owner, one lock: the epoch this process last wrote is shared by every StoreLock of the
    # same store and owner, so a pass nested in another (the daemon's job around an action) and
    # the outer holder agree on it, and the outer one can still heartbeat and release.
    @property
    def _epoch(self) -> int | None:
        return _EPOCHS.get(self._key)

    @_epoch.setter
    def _epoch(self, value: int | None) -> None:
        _EPOCHS[self._key] = value

    @classmethod
    def from_policy(
        cls, root: Path | str, owner: str, policy: LockPolicy, clock: Clock = time.time
    ) -> StoreLock:
        return cls(
            root,
            owner,
            stale_seconds=policy.stale_seconds,
            poll_seconds=policy.poll_seconds,
            takeover_wait_seconds=policy.takeover_wait_seconds,
            clock=clock,
        )

    @property
    def epoch(self) -> int | None:
        return self._epoch

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_FILE

    def __repr__(self) -> str:
        return f"StoreLock({str(self.root)!r}, {self.owner!r}, epoch={self._epoch})"

    # -- public operations ------------------------------------------------------------------

    def acquire(self, wait: float = 0) -> AcquireResult:
        """Take the lock, polling every ``poll_seconds`` for up to ``wait`` seconds.

        Raises LockHeld when another owner still holds a fresh lock (or the lock stayed
        contended) at the deadline, LockIOError when the lock files cannot be written.
        """
        if not wait >= 0:
            raise LockUsageError(f"wait must be >= 0 seconds (got {wait!r})")
        deadline = time.monotonic() + wait
        while True:
            outcome = self._try_acquire()
            if isinstance(outcome, AcquireResult):
                if outcome.kind is AcquireKind.TOOK_OVER and takeover_hook is not None:
                    takeover_hook(self.root, self.owner, outcome.previous_owner, outcome.previous_age)
                return outcome
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._held_error(outcome)
            time.sleep(min(self.poll_seconds, remaining))

    def heartbeat(self, step: int | None = None, signals: int | None = None) -> None:
        """Refresh the lock's epoch; with ``step`` and ``signals`` also record a checkpoint.

        Raises LockLost when the lock is not (or no longer) exactly ours; in that case neither
        `.lock` nor `.status` is touched.
        """
        checkpoint = _checkpoint(step, signals)
        self._check_named_owner(missing="lock not held", other="held by")
        try:
            with self._mutex():
                if not self._still_mine():
                    self._epoch = None
                    raise LockLost(
                        f"{self.lock_path}: lock lost: taken over or changed since our last "
                        "heartbeat; stop writing and acquire again"
                    )
                now = self._now()
                self._replace_lock(now)
                self._epoch = now
                if checkpoint is not None:
                    # Inside the mutex after the re-check: a lost owner never writes its checkpoint.
                    self._write_status(f"running {checkpoint} {format_iso(now)}")
        except _MutexBusy:
            raise LockLost(
                f"{self.root / MUTEX_FILE}: lock contended (mutex busy for "
                f"{self.takeover_wait_seconds}s); treat the lock as lost"
            ) from None

    def release(self) -> None:
        """Give the lock back and set `.status` to `idle`.

        Raises LockLost when the lock is not exactly ours (then nothing is changed), LockIOError
        when `.lock` or `.status` cannot be written.
        """
        self._check_named_owner(missing="not held", other="not owner: held by")
        status_error: OSError | None = None
        try:
            with self._mutex():
                if not self._still_mine():
                    self._epoch = None
                    raise LockLost(
                        f"{self.lock_path}: not owner: lock changed during release; "
                        "nothing was released"
                    )
                # `idle` goes first, while `.lock` is still ours: written after the unlink, it
                # could overwrite the `running` of whoever takes the free lock next.
                try:
                    self._write_status(f"idle {format_iso(self._now())}")
                except OSError as error:
                    status_error = error
                try:
                    os.unlink(self.lock_path)
                except OSError as error:
                    raise _io_error(self.lock_path, "remove the lock", error) from None
                self._epoch = None
        except _MutexBusy:
            raise LockLost(
                f"{self.root / MUTEX_FILE}: not owner: lock contended during release "
                f"(mutex busy for {self.takeover_wait_seconds}s); nothing was released"
            ) from None
        if status_error is not None:
            raise _io_error(
                self.root / STATUS_FILE, "write idle (the lock was released)", status_error
            )

    # -- acquire, one attempt ----------------------------------------------------------------

    def _try_acquire(self) -> AcquireResult | LockLine | None:
        """One turn of the acquire loop: the result, or what blocks us (None: contended)."""
        line = read_lock(self.root)
        now = self._now()
        if line is None:
            if not self._create_lock(now):
                return read_lock(self.root)  # lost the race: report the winner
            self._epoch = now
            self._status_after_taking(now, mutex_held=False)
            return AcquireResult(AcquireKind.ACQUIRED, now)
        if line.owner == self.owner:
            return self._refresh_own(line)
        age = now - line.epoch
        abandoned = abandoned_owner(line) if age < self.stale_seconds else None
        if age < self.stale_seconds and abandoned is None:
            return line
        try:
            with self._mutex():
                current = read_lock(self.root)
                if current != line:
                    return current  # someone else changed it first (took over, released)
                now = self._now()  # the mutex wait may have taken a while
                self._replace_lock(now)
                self._epoch = now
                self._status_after_taking(now, mutex_held=True)
                if abandoned is not None:
                    _log.info("lock.abandoned_taken_over", lock=str(self.lock_path), previous_owner=line.owner,
                              age_seconds=age, why=abandoned)
                return AcquireResult(AcquireKind.TOOK_OVER, now, line.owner, age, abandoned)
        except _MutexBusy:
            return None

    def _refresh_own(self, line: LockLine) -> AcquireResult | LockLine | None:
        """Our owner name already holds it: heartbeat, as the script does (names are identities)."""
        try:
            with self._mutex():
                current = read_lock(self.root)
                if current != line:
                    return current
                now = self._now()
                self._replace_lock(now)
                self._epoch = now
                return AcquireResult(AcquireKind.ALREADY_HELD, now)
        except _MutexBusy:
            return None

    def _held_error(self, seen: LockLine | None) -> LockHeld:
        if seen is not None:
            age = self._now() - seen.epoch
            if age < self.stale_seconds and seen.owner != self.owner:
                return LockHeld(
                    f"{self.lock_path}: held by {seen.owner} for {age}s (stale after "
                    f"{self.stale_seconds:g}s); another distillation is running, retry later",
                    seen.owner,
                    age,
                )
        return LockHeld(
            f"{self.lock_path}: held (contended): other clients kept changing the lock; "
            "retry later",
            None,
            None,
        )

    def _status_after_taking(self, now: int, *, mutex_held: bool) -> None:
        """Write `running <iso>`; if that fails, give the lock back (if still ours) and raise."""
        try:
            self._write_status(f"running {format_iso(now)}")
        except OSError as error:
            dropped = self._drop_if_mine(mutex_held=mutex_held)
            self._epoch = None
            after = (
                "the lock was dropped"
                if dropped
                else "the lock could not be dropped and goes stale"
            )
            raise _io_error(self.root / STATUS_FILE, f"write the status ({after})", error) from None

    def _drop_if_mine(self, *, mutex_held: bool) -> bool:
        if not mutex_held:
            try:
                with self._mutex():
                    return self._drop_if_mine(mutex_held=True)
            except (_MutexBusy, LockIOError):
                return False
        if not self._still_mine():
            return False
        try:
            os.unlink(self.lock_path)
        except OSError:
            return False
        return True

    # -- file primitives ---------------------------------------------------------------------

    def _now(self) -> int:
        return int(self._clock())

    def _line(self, epoch: int) -> bytes:
        return f"{self.owner} {epoch} {format_iso(epoch)}\n".encode("ascii")

    def _temp_name(self, kind: str) -> Path:
        return self.root / f".lock.{kind}.{os.getpid()}.{secrets.token_hex(4)}"

    def _still_mine(self) -> bool:
        """Under the mutex: is `.lock` still exactly the line we last wrote?"""
        return self._epoch is not None and read_lock(self.root) == LockLine(self.owner, self._epoch)

    def _check_named_owner(self, *, missing: str, other: str) -> None:
        # The cheap check outside the mutex, for the script's messages; the exact one is inside.
        line = read_lock(self.root)
        if line is None:
            self._epoch = None
            raise LockLost(f"{self.lock_path}: {missing}; stop writing and acquire again")
        if line.owner != self.owner:
            self._epoch = None
            raise LockLost(
                f"{self.lock_path}: {other} {line.owner}; stop writing and acquire again"
            )

    def _create_lock(self, epoch: int) -> bool:
        """Create `.lock` only if it does not exist, complete when visible; False if it existed."""
        data = self._line(epoch)
        temp = self._temp_name("new")
        try:
            _write_new_file(temp, data, exclusive=True)
        except OSError as error:
            raise _io_error(temp, "create a temp file for the lock", error) from None
        try:
            os.link(temp, self.lock_path)  # fails if the name exists: the atomic test-and-set
        except FileExistsError:
            return False
        except OSError as error:
            if error.errno not in _NO_HARD_LINKS:
                raise _io_error(self.lock_path, "create the lock", error) from None
            return self._create_lock_exclusive(data)
        finally:
            _unlink_quietly(temp)
        return True

    def _create_lock_exclusive(self, data: bytes) -> bool:
        """O_EXCL create for file systems without hard links (the .ps1's CreateNew)."""
        try:
            fd = os.open(
                self.lock_path,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
            )
        except FileExistsError:
            return False
        except OSError as error:
            raise _io_error(self.lock_path, "create the lock", error) from None
        try:
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            _unlink_quietly(self.lock_path)  # ours and incomplete; readers saw it as held by "?"
            raise _io_error(self.lock_path, "write the lock", error) from None
        return True

    def _replace_lock(self, epoch: int) -> None:
        """Under the mutex: swap in our line by rename, so `.lock` never goes missing."""
        temp = self._temp_name("swap")
        try:
            _write_new_file(temp, self._line(epoch), exclusive=True)
        except OSError as error:
            raise _io_error(temp, "create a temp file for the lock", error) from None
        try:
            os.replace(temp, self.lock_path)
        except OSError as error:
            raise _io_error(self.lock_path, "replace the lock", error) from None
        finally:
            _unlink_quietly(temp)

    def _write_status(self, text: str) -> None:
        """Replace `.status` by tmp + rename; OSError propagates so callers decide what it means."""
        temp = self.root / f"{STATUS_FILE}.tmp.{os.getpid()}"
        with _STATUS_WRITE:
            try:
                _write_new_file(temp, f"{text}\n".encode("ascii"), exclusive=False)
                os.replace(temp, self.root / STATUS_FILE)
            finally:
                _unlink_quietly(temp)

    @contextlib.contextmanager
    def _mutex(self) -> Iterator[None]:
        """Hold `.lock.takeover` with flock(LOCK_EX), polling every 50 ms up to the takeover wait.

        The file is never deleted, truncated or written: the OS lock is the whole mutex, and the
        kernel drops it when a holder dies, so a killed holder cannot block anyone.
        """
        path = self.root / MUTEX_FILE
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise _io_error(path, "open the takeover mutex", error) from None
        try:
            deadline = time.monotonic() + self.takeover_wait_seconds
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise _MutexBusy() from None
                    time.sleep(min(MUTEX_POLL_SECONDS, remaining))
                except OSError as error:
                    raise _io_error(path, "lock the takeover mutex", error) from None
            try:
                yield
            finally:
                with contextlib.suppress(OSError):  # closing the fd below unlocks anyway
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _checkpoint(step: int | None, signals: int | None) -> str | None:
    """`step:N signals:M`, or None for a plain heartbeat; both or neither must be given."""
    if step is None and signals is None:
        return None
    if step is None or signals is None:
        raise LockUsageError("a checkpoint needs both step and signals (or neither)")
    for name, value in (("step", step), ("signals", signals)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LockUsageError(f"{name} must be a non-negative integer (got {value!r})")
    return f"step:{step} signals:{signals}"
