"""What every command shares: the store given as [STORE] or --store, --policy and --json after
the subcommand, one mode flag at a time, output as bytes, and one commit per operation.

Only click is imported here; each command imports its action (and pydantic, pygit2, ...) when
it runs, so `distilld --help` and `distilld check` stay light.
"""

from __future__ import annotations

import importlib
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

JSON_SCHEMA_VERSION = 1


def now() -> datetime:
    """The CLI's clock, looked up on the package at call time (tests replace distilld.cli._now)."""
    package = importlib.import_module(__package__ or "distilld.cli")
    clock: Callable[[], datetime] = package._now
    return clock()


def root_obj(ctx: click.Context) -> dict[str, Any]:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = {}
    obj: dict[str, Any] = root.obj
    return obj


# -- the store: [STORE] or --store DIR ---------------------------------------------------------

def _remember_store(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    if value is not None:
        given = ctx.meta.setdefault("distilld.store", {})
        given[param.name or "store"] = value
    return value


def store_input(command: F) -> F:
    """The store as a positional [STORE] and as --store DIR (both forms, every command)."""
    command = click.option(
        "--store", "store_option", type=click.Path(path_type=Path, readable=False), callback=_remember_store,
        expose_value=False,
        help="The store's folder (the same as STORE). Default: $DISTILLD_STORE, the config file's "
             "store, else ~/.aura-distill.")(command)
    # readable=False: a store this user may not read is said by check_store_shape, as every
    # command says it, not as click's usage error
    command = click.argument("store", required=False, type=click.Path(path_type=Path, readable=False),
                             metavar="[STORE]",
                             callback=_remember_store, expose_value=False)(command)
    return command


def given_store(ctx: click.Context) -> Path | None:
    """The store named on the command line, if any; naming two different ones is a usage error."""
    given: dict[str, Path] = ctx.meta.get("distilld.store", {})
    values = {str(path) for path in given.values()}
    if len(values) > 1:
        raise click.UsageError(f"two different stores given: {' and '.join(sorted(values))}; give one")
    return next(iter(given.values()), None)


def store_path(ctx: click.Context) -> Path:
    """The store: the command line's, else the default (without loading the settings machinery
    unless a config file has to be read). A file or a folder this user may not read is refused
    here, in the one phrasing every command uses."""
    from ..store.root_access import check_store_shape

    store = given_store(ctx)
    if store is not None:
        store = store.expanduser()
    else:
        from ..locations import default_store

        store = default_store()
    check_store_shape(store)
    return store


# -- options that also work after the subcommand ----------------------------------------------

def _set_policy(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        root_obj(ctx)["policy_path"] = value


def policy_flag(envvar: str | None = None) -> Callable[[F], F]:
    return click.option(
        "--policy", "policy_path", type=click.Path(path_type=Path, dir_okay=False), callback=_set_policy,
        expose_value=False, envvar=envvar,
        help="Policy file (TOML); the shipped default.toml if omitted. Also $DISTILLD_POLICY.")


policy_option = policy_flag()  # after a subcommand; the group's own reads $DISTILLD_POLICY


def _set_json(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        root_obj(ctx)["json"] = True
    return value


def json_option(what: str) -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, callback=_set_json, is_eager=True,
                        help=f"Print {what} as JSON (errors too).")


def policy(ctx: click.Context) -> Any:
    from ..policy import load_policy

    return load_policy(root_obj(ctx).get("policy_path"))


# -- one mode at a time -----------------------------------------------------------------------

def _record_mode(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta.setdefault("distilld.modes", []).append(param.name)


def mode_flag(name: str, help_text: str) -> Callable[[F], F]:
    return click.option(f"--{name}", name, is_flag=True, callback=_record_mode, expose_value=False,
                        help=help_text)


def chosen_mode(ctx: click.Context, default: str) -> str:
    """The one mode flag given (or the default); two of them is a usage error, not a guess."""
    modes: list[str] = list(dict.fromkeys(ctx.meta.get("distilld.modes", [])))
    if len(modes) > 1:
        raise click.UsageError(" and ".join(f"--{m}" for m in modes) + " cannot be combined; choose one")
    return modes[0] if modes else default


# -- output -----------------------------------------------------------------------------------

# Control characters (but tab and newline) a terminal would act on, written as escapes instead:
# a file's junk must not move the cursor, clear the screen or retitle the window.
_ESCAPED_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F) if code not in (0x09, 0x0A)}
_ESCAPED_CONTROLS.update({code: f"\\u{code:04x}" for code in range(0x80, 0xA0)})


# The same characters as a class: output rarely holds one, and looking for one is some 25 times
# cheaper than translating every character (1.5 MB of findings at x100: 100 ms).
_CONTROLS_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    if _CONTROLS_RE.search(text) is None:
        return text
    return text.translate(_ESCAPED_CONTROLS)


def emit(text: str, as_json: bool = False, raw: bool = False) -> None:
    """Write to stdout as bytes: file text reaches the terminal as the bytes it was (invalid
    UTF-8 included), control characters escaped (``raw``: a file's own text, such as the
    catalog, exactly); in JSON a stray byte becomes a ``\\udcXX`` escape, which stays valid JSON."""
    if not as_json and not raw:
        text = escape_controls(text)
    data = text.encode("utf-8", "backslashreplace" if as_json else "surrogateescape")
    sys.stdout.flush()
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:  # a text-only stdout (some embedders): the closest text it can take
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    stream.write(data)
    stream.flush()


def schema_name(kind: str) -> str:
    return f"distilld.{kind}/{JSON_SCHEMA_VERSION}"


def with_schema(kind: str, rendered: str) -> str:
    """Every --json document says what it is and which version: ``"schema": "distilld.KIND/1"``."""
    import json  # only a --json run pays for it

    data = json.loads(rendered)
    if isinstance(data, dict):
        data = {"schema": schema_name(kind), **data}
    else:
        data = {"schema": schema_name(kind), "items": data}
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def emit_report(kind: str, report: Any, as_json: bool, render_text: Callable[[Any], str],
                render_json: Callable[[Any], str]) -> None:
    if as_json:
        emit(with_schema(kind, render_json(report)), True)
    else:
        emit(render_text(report))


# -- progress on a terminal ------------------------------------------------------------------

class TerminalProgress:
    """Draws click's progress bar on stderr, one bar per phase of a long pass (only on a
    terminal: a pipe, a log or --json gets nothing)."""

    def __init__(self) -> None:
        self._bar: Any = None
        self._phase: str | None = None
        self._done = 0
        self._total = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if phase != self._phase:
            self._finish()  # a phase that gave way to the next is done (it stayed at 0%: issue 27)
            self.close()
            self._total = max(total, 1)
            self._phase, self._done = phase, 0
            self._bar = click.progressbar(length=max(total, 1), label=phase, file=sys.stderr)
            self._bar.__enter__()
        if done > self._done:
            self._bar.update(done - self._done)
            self._done = done

    def _finish(self) -> None:
        if self._bar is not None and self._done < self._total:
            self._bar.update(self._total - self._done)
            self._done = self._total

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@contextmanager
def progress_on_terminal(as_json: bool) -> Iterator[None]:
    from ..engine.progress import reporting

    if as_json or not sys.stderr.isatty():
        yield
        return
    bar = TerminalProgress()
    try:
        with reporting(bar):
            yield
    finally:
        bar.close()


# -- one commit per operation -----------------------------------------------------------------

def log_takeover(root: Path, owner: str, words: str) -> None:
    """A lock taken over from the command line (stale, or its owner no longer runs): said on
    stderr and in the store's activity log (the one the daemon keeps), naming the old holder."""
    line = f"{words}, for {owner} (command line)"
    click.echo(f"distilld: {line}", err=True)
    try:
        from ..log import ActivityLog
        from ..settings import InstancePaths

        ActivityLog(InstancePaths.for_store(root).activity_log, echo=False).write(line)
    except Exception as error:  # the pass goes on; the line was said on stderr
        click.echo(f"distilld: note: the activity log could not be written: {error}", err=True)


def say_waiting(root: Path, holder: str | None, age: int | None, wait: float) -> None:
    """A command told to --wait says whom it waits for, so that it does not look hung."""
    from ..engine.lock import LockLine, owner_liveness

    if holder:
        alive = owner_liveness(LockLine(holder, int(time.time()) - (age or 0))).words
        who = f"held by {holder} for {age} s; {alive}"
    else:
        who = "contended"
    click.echo(f"distilld: waiting up to {wait:g} s for {root}/.lock ({who}: a distillation is running)",
               err=True)


@contextmanager
def committed(store: Path, operation: str, policy_value: Any, wait: float = 0) -> Iterator[Any]:
    """A maintenance operation run from the command line is one git commit of exactly what it
    changed (when the store is a distilld repository), made while the lock is still held; what
    happened is said on stderr, so a --json report on stdout stays clean."""
    from ..actions import sync as sync_action  # pygit2 loads only for commands that write
    from ..engine import lock

    lock.takeover_hook = log_takeover
    lock.waiting_hook = say_waiting
    with sync_action.operation_under_lock(store, operation, policy_value, now, wait) as record:
        yield record  # the caller may give it a subject that says what happened
    if record.result is not None and record.result.commit:
        click.echo(f"distilld: committed the {operation} as {record.result.commit[:7]} "
                   f"({len(record.result.paths)} paths)", err=True)
    for note in record.notes:
        click.echo(f"distilld: note: {note}", err=True)


def interrupted_pass(store: Path, operation: str, command: str) -> Exception:
    """Ctrl-C during a journalled write pass (compact, gc, restore, a driven pass): the error that
    says what it left and how it is finished (``command``: what runs it again), instead of a bare
    "interrupted"."""
    from ..engine.recovery import interrupted_passes

    root = store.expanduser().resolve()
    left = interrupted_passes(root) if root.is_dir() else []
    if not left:
        return _interrupted(f"interrupted: the {operation} left nothing unfinished (nothing of it is committed)")
    return _interrupted(f"interrupted: the {operation} stopped part way; {left[0]} is unfinished and nothing of "
                        f"it is committed. The next `distilld {command}` (or any write pass, or the "
                        "daemon's next one) finishes it first")


def _interrupted(message: str) -> Exception:
    from ..errors import DistilldError
    from ..exits import INTERRUPTED

    class PassInterrupted(DistilldError):
        exit_code = INTERRUPTED

    return PassInterrupted(message)


@contextmanager
def finished_later_on_ctrl_c(store: Path, operation: str, command: str) -> Iterator[None]:
    """A write pass that only rolls forward (gc, restore), run from the command line: a Ctrl-C
    leaves its journal, and the error says which one and that ``command`` (or any write pass)
    finishes it."""
    try:
        yield
    except KeyboardInterrupt:
        raise interrupted_pass(store, operation, command) from None


@contextmanager
def stopped_by_ctrl_c(store: Path, operation: str, command: str) -> Iterator[None]:
    """A write pass that rolls back, run from the command line: the first Ctrl-C asks it to stop
    at its next boundary, as the daemon's SIGTERM does, and what it wrote is undone (the store as
    it was, exit 130). A second Ctrl-C stops it at once; its journal then says what is left, and
    the next write pass finishes it."""
    import signal
    import threading

    from ..engine.cancel import PassStopped, stoppable

    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield  # signal handlers belong to the main thread; a background job ignores Ctrl-C
        return
    asked = threading.Event()

    def on_ctrl_c(signum: int, frame: object) -> None:
        if asked.is_set():
            raise KeyboardInterrupt
        asked.set()
        click.echo(f"distilld: stopping the {operation} at its next step and undoing what it wrote "
                   "(Ctrl-C again to stop at once)", err=True)

    previous = signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        with stoppable(asked.is_set):
            yield
        if asked.is_set():  # it had finished (and been committed) before it reached a step to stop at
            click.echo(f"distilld: the {operation} had finished before it could stop: what it wrote is kept",
                       err=True)
    except PassStopped as stopped:
        raise _interrupted(f"interrupted: {stopped}") from None
    except KeyboardInterrupt:
        raise interrupted_pass(store, operation, f"{command} --apply") from None
    finally:
        signal.signal(signal.SIGINT, previous)


def store_command(name: str | None = None) -> Callable[[F], click.Command]:
    """A command that takes the store both ways ([STORE] last among its arguments, or --store)
    and --policy after its name."""

    def decorate(function: F) -> click.Command:
        command: click.Command = click.command(name)(policy_option(store_input(function)))
        return command

    return decorate
