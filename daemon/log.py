"""What the daemon tells people and machines.

Three outputs, each for its own reader:

* a JSON-lines log (structlog over stdlib logging, size-rotated) for machines and debugging;
* the activity log: one plain line per thing done or waited for, for people (`distilld log`);
* status.json: the daemon's whole state, replaced atomically, for `distilld status` and for
  any other tool (a prompt, a bar) that wants to read it.

One daemon per store holds the single-instance lock, so each file has exactly one writer.
"""

from __future__ import annotations

import errno
import json
import logging
import logging.handlers
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .store.fs import atomic_write

# structlog is imported where it is used: most one-shot commands never log, and it costs ~50 ms to load.

# stdlib level -> sd-daemon priority prefix, so `journalctl -p warning` works under systemd.
_JOURNAL_PRIORITY = {"critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}


def utc_stamp(moment: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if moment is None else moment, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _journal_prefix(_: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    event["_prefix"] = f"<{_JOURNAL_PRIORITY.get(method, 6)}>"
    return event


def _render_journal(_: Any, __: str, event: dict[str, Any]) -> str:
    prefix = event.pop("_prefix", "<6>")
    event.pop("timestamp", None)  # journald stamps every line itself
    event.pop("level", None)
    message = str(event.pop("event", ""))
    rest = " ".join(f"{key}={value!r}" for key, value in event.items())
    return f"{prefix}{message} {rest}".rstrip()


def _dict_tracebacks() -> Any:
    """Tracebacks as data without frame locals: a local may hold a token or a key path from the
    settings, and the JSON log is kept for days (dict_tracebacks keeps every local by default).
    Built on demand: structlog.tracebacks pulls in rich-traceback machinery a command never uses."""
    import structlog
    import structlog.tracebacks

    return structlog.processors.ExceptionRenderer(structlog.tracebacks.ExceptionDictTransformer(show_locals=False))


def configure_logging(json_path: Path | None, level: str = "info", console: str = "auto",
                      max_bytes: int = 1_000_000, backups: int = 5) -> None:
    """Route structlog and stdlib records (apscheduler, watchdog) through one processor chain."""
    import structlog

    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[structlog.stdlib.filter_by_level, *shared,
                    structlog.processors.StackInfoRenderer(),
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level.upper())
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.handlers.RotatingFileHandler(
            json_path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", delay=True)
        file_handler.setFormatter(structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                        _dict_tracebacks(),
                        structlog.processors.JSONRenderer()]))
        root.addHandler(file_handler)
    mode = console_mode(console)
    if mode != "off":
        renderers: dict[str, list[Any]] = {
            "journal": [_journal_prefix, structlog.processors.format_exc_info, _render_journal],
            "json": [_dict_tracebacks(), structlog.processors.JSONRenderer()],
            # Plain tracebacks: never print local variables, which may hold credentials.
            "plain": [_PlainRenderer()],
        }
        stream = logging.StreamHandler(sys.stderr)
        if mode == "plain":  # a person at a terminal: what it does, and what went wrong
            stream.addFilter(_for_a_person)
        stream.setFormatter(structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderers[mode]]))
        root.addHandler(stream)
    # Libraries speak only when something is wrong; their routine chatter is noise here.
    for noisy in ("apscheduler", "watchdog"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


class _PlainRenderer:
    """A terminal gets the activity log's own plain lines; other records (warnings and errors
    only) as the console renderer shows them, with plain tracebacks that never print local
    variables, which may hold credentials."""

    def __init__(self) -> None:
        import structlog

        self._console = structlog.dev.ConsoleRenderer(colors=False,
                                                      exception_formatter=structlog.dev.plain_traceback)

    def __call__(self, logger: Any, method: str, event: dict[str, Any]) -> str:
        if event.get("logger") == "distilld.activity":
            return f"distilld: {event.get('message', '')}"
        rendered: str = self._console(logger, method, event)
        return rendered


def _for_a_person(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or record.name == "distilld.activity"


def console_mode(console: str) -> str:
    """What goes to stderr: the setting, or for "auto" the journal, a terminal, or nothing."""
    if console != "auto":
        return console
    if os.environ.get("JOURNAL_STREAM") or os.environ.get("INVOCATION_ID"):
        return "journal"
    return "plain" if sys.stderr.isatty() else "off"


class _LazyLogger:
    """A named logger that imports and binds structlog at its first record, not at the import of
    the module holding it: most one-shot commands never log, and structlog costs ~50 ms to load."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:
        if self._logger is None:
            import structlog

            if not structlog.is_configured():
                _configure_for_a_command()
            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, attribute)


def get_logger(name: str = "distilld") -> Any:
    return _LazyLogger(name)


def _configure_for_a_command() -> None:
    """Until the daemon sets up its logs (configure_logging), records go to stderr, warnings and
    worse only: structlog's own default prints every record on stdout, which would corrupt a
    command's output (its --json document). A command says what it did on stderr itself."""
    import structlog

    structlog.configure(
        processors=[structlog.processors.add_log_level,
                    structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        # The stream is looked up at each record, so a test runner's captured stderr gets it too.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )


def _append_whole(fd: int, data: bytes) -> None:
    """One whole line or none: a short write (a full disk) is cut back, so the next line never
    joins a torn one."""
    size = os.fstat(fd).st_size
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(errno.ENOSPC, "short write")
    except OSError:
        os.ftruncate(fd, size)
        raise


class ActivityLog:
    """The human log: ``<UTC stamp>  <what happened>``, one whole line per append, size-rotated."""

    def __init__(self, path: Path, max_bytes: int = 1_000_000, backups: int = 5, echo: bool = True) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.echo = echo  # also a structlog record (the daemon); a command's stdout stays its own
        self._lock = threading.Lock()
        self._logger = get_logger("distilld.activity")

    def write(self, message: str, **fields: Any) -> str:
        line = f"{utc_stamp()}  {' '.join(message.split())}"  # one line, whatever it was given
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._rotate_if_full()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                _append_whole(fd, (line + "\n").encode("utf-8", "backslashreplace"))
            finally:
                os.close(fd)
        if self.echo:
            self._logger.info("activity", message=message, **fields)
        return line

    def _rotate_if_full(self) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size < self.max_bytes:
            return
        if self.backups == 0:
            self.path.unlink()
            return
        for index in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{index + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))


def tail_lines(path: Path, count: int) -> list[str]:
    """The last ``count`` lines of the activity log (and its newest backup when it was just rotated)."""
    lines: deque[str] = deque(maxlen=max(count, 0))
    for candidate in (path.with_name(path.name + ".1"), path):
        try:
            with open(candidate, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    lines.append(line.rstrip("\n"))
        except FileNotFoundError:
            continue
    return list(lines)


def follow_lines(path: Path, poll: float = 0.5, stop: threading.Event | None = None) -> Iterator[str]:
    """Lines appended from now on; follows a rotation (a new inode) and waits for a missing file."""
    handle = None
    inode: int | None = None
    pending = b""
    first_look = True
    while stop is None or not stop.is_set():
        try:
            info: os.stat_result | None = path.stat()
        except FileNotFoundError:
            info = None
        if info is not None and (handle is None or info.st_ino != inode):
            if handle is not None:
                pending += handle.read()  # the rest of the rotated file comes first
                handle.close()
            handle = open(path, "rb")
            if first_look:
                handle.seek(0, os.SEEK_END)  # what was there already is tail_lines' job
            inode = info.st_ino
        elif handle is not None and info is not None and info.st_size < handle.tell():
            handle.seek(0)  # truncated in place
        if handle is not None:
            pending += handle.read()
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode("utf-8", "replace")
        first_look = False
        time.sleep(poll)
    if handle is not None:
        handle.close()


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Replace ``path`` with ``payload`` so readers see the old file or the new one, never a torn one."""
    data = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    try:
        raw = data.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8 in a message: JSON escapes keep it readable
        raw = (json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=True, default=str) + "\n").encode("ascii")
    atomic_write(path, raw, mode=0o600)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class StatusFile:
    """The daemon's state as one JSON object, replaced atomically whenever a part of it changes."""

    def __init__(self, path: Path, initial: dict[str, Any]) -> None:
        self.path = path
        self._data: dict[str, Any] = dict(initial)
        self._lock = threading.Lock()
        self._written: str | None = None
        self._written_at = 0.0
        self.write_error: str | None = None  # why the last write failed, while it keeps failing

    def update(self, flush: bool = True, **parts: Any) -> None:
        with self._lock:
            self._data.update(parts)
        if flush:
            self.flush()

    def merge(self, key: str, name: str, value: Any, flush: bool = True) -> None:
        """Set ``data[key][name]`` (e.g. the last result of one kind of pass)."""
        with self._lock:
            section = dict(self._data.get(key) or {})
            section[name] = value
            self._data[key] = section
        if flush:
            self.flush()

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._data.get(key, default)

    def data(self) -> dict[str, Any]:
        with self._lock:
            copied: dict[str, Any] = json.loads(json.dumps(self._data, default=str))
        return copied

    def flush(self, force: bool = False, heartbeat: float = 60.0) -> None:
        """Write when something changed (or every ``heartbeat`` s, so readers see it is current)."""
        with self._lock:
            body = json.dumps(self._data, sort_keys=True, default=str)
            now = time.monotonic()
            if not force and body == self._written and now - self._written_at < heartbeat:
                return
            payload = dict(self._data)
            payload["updated_at"] = utc_stamp()
            try:
                write_json_atomic(self.path, payload)
            except OSError as error:
                # A full disk must not stop the daemon (and restart-loop it under systemd): the
                # state stays in memory and the next flush tries again.
                self.write_error = f"{self.path}: {error.strerror or error}"
                return
            self.write_error = None
            self._written, self._written_at = body, now
