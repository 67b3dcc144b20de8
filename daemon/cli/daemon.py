"""The daemon: run, status, log, and run-now / pause / resume over its control socket.

Imports stay inside the commands: `distilld check` should not pay for watchdog or apscheduler.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ._common import emit, emit_report, given_store, json_option, root_obj, store_command

F = TypeVar("F", bound=Callable[..., Any])

config_option = click.option(
    "--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
    help="Settings file (TOML). Default: $DISTILLD_CONFIG, else config.toml in your config folder "
         "(`distilld config path`).")


def daemon_settings(ctx: click.Context, config_path: Path | None) -> tuple[Any, dict[str, Any]]:
    """Settings with the command line on top: the store given here, --policy anywhere."""
    from ..settings import load_settings
    from ..store.root_access import check_store_shape

    overrides: dict[str, Any] = {}
    store = given_store(ctx)
    if store is not None:
        check_store_shape(store.expanduser())
        overrides["store"] = str(store.expanduser().absolute())
    policy_path = root_obj(ctx).get("policy_path")
    if policy_path is not None:
        overrides["policy"] = str(Path(policy_path).expanduser().absolute())
    return load_settings(config_path, overrides), overrides


def instance(settings: Any) -> Any:
    from ..settings import InstancePaths

    return InstancePaths.for_store(settings.store)


@store_command()
@click.option("--once", is_flag=True,
              help="Run one full cycle (catalog, checks, commit, sync, compaction, lifecycle) and exit: "
                   "for tests, and for running from cron. Exit 1 if a pass failed; each problem is "
                   "one line on stderr.")
@click.option("--wait", "wait", type=click.FloatRange(min=0), default=None,
              help="With --once: how many seconds to wait for a distiller's lock before giving up (exit 1). "
                   "Default: until it is released or goes stale.")
@config_option
@click.pass_context
def run(ctx: click.Context, once: bool, wait: float | None, config_path: Path | None) -> None:
    """Follow the store in the foreground (what the service runs).

    Once the store is quiet and no distiller holds its lock, the catalog is rebuilt if stale,
    the invariants checked and the agents' changes committed (and pushed when a remote is
    set); compaction, lifecycle, sync and a full rescan run on their schedules. One daemon
    per store. A store that does not exist yet is waited for (one line says so, and how to
    create it); with --once it exits 2 instead. SIGTERM stops a pass at its next boundary (one
    that had begun writing is rolled back) and exits 0, or 130 with --once when it cut the cycle
    short; SIGHUP reloads the settings. Invalid settings exit 78.
    """
    from ..runtime.daemon import run_daemon
    from ..store.root_access import require_writable

    if wait is not None and not once:
        raise click.UsageError("--wait goes with --once (the daemon itself waits for a lock as long as it is held)")
    settings, overrides = daemon_settings(ctx, config_path)
    if settings.store.exists():  # a missing store is waited for; one it may not write is refused
        require_writable(settings.store)
    ctx.exit(run_daemon(settings, config=config_path, overrides=overrides, once=once, lock_wait_seconds=wait))


@store_command()
@config_option
@json_option("everything")
@click.pass_context
def status(ctx: click.Context, config_path: Path | None, as_json: bool) -> None:
    """Show what the daemon is doing and waiting for, the last result of each pass, budgets and
    their margins, the lock, git, the service, and what is stuck. Exit 0 if it runs, 3 if not."""
    from ..actions import status as status_action
    from ..log import read_json
    from ..runtime.instance import running_pid
    from ..runtime.service import render_state, service_state
    from ..store.unmanaged import unmanaged_folders

    settings, _ = daemon_settings(ctx, config_path)
    paths = instance(settings)
    service = service_state(store=settings.store)
    service_info = {**service.to_dict(), "line": render_state(service)}
    view = status_action.build_view(
        settings.store, read_json(paths.status_file), running_pid(paths.instance_lock), service_info,
        {"status_file": str(paths.status_file), "activity_log": str(paths.activity_log),
         "json_log": str(paths.json_log)})
    view.unmanaged = [f.describe() for f in unmanaged_folders(settings.store, settings.git.extra_folders)]
    emit_report("status", view, as_json, status_action.render_text, status_action.render_json)
    ctx.exit(0 if view.running else 3)


@store_command("log")
@config_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines as they come (Ctrl-C stops).")
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many of the last lines to show first.")
@click.pass_context
def log_command(ctx: click.Context, config_path: Path | None, follow: bool, count: int) -> None:
    """Show the activity log: one plain line per thing the daemon did or waited for."""
    from ..log import follow_lines, tail_lines

    settings, _ = daemon_settings(ctx, config_path)
    path = instance(settings).activity_log
    lines = tail_lines(path, count)
    if not lines and not follow and not path.exists():
        click.echo(f"no activity yet ({path} does not exist; `distilld run` starts the daemon)", err=True)
    for line in lines:
        emit(line + "\n")
    if follow:
        try:
            for line in follow_lines(path):
                emit(line + "\n")
        except KeyboardInterrupt:
            pass


def _control(ctx: click.Context, config_path: Path | None, request: dict[str, Any]) -> dict[str, Any]:
    from ..runtime.control import send

    settings, _ = daemon_settings(ctx, config_path)
    reply = send(instance(settings).control_socket, request)
    if not reply.get("ok"):
        raise click.ClickException(str(reply.get("error") or "the daemon refused the request"))
    return reply


def _looks_like_a_store(word: str) -> bool:
    """A lone word that is no job is a store only if it is written as a path or exists: a
    mistyped job name is a usage error, not a store where no daemon runs."""
    return "/" in word or word.startswith(("~", ".")) or Path(word).exists()


def _run_now_help() -> str:
    """run-now's help, its jobs named from the one table of jobs (importing it loads nothing)."""
    from ..registry import default_jobs, job_names

    return ("Ask the running daemon to run JOB now, or the jobs `run --once` runs. A sync asked for this "
            f"way runs at once, whatever the backoff.\n\nJOB is one of {', '.join(job_names())}. "
            f"Without a JOB: {', '.join(default_jobs())}, in that order.")


@click.command("run-now", help=_run_now_help())
@click.argument("words", nargs=-1, metavar="[JOB] [STORE]")  # as typed: ./x and x differ here
@click.option("--store", "store_option", type=click.Path(path_type=Path, readable=False),
              help="The store's folder (the same as STORE). Default: $DISTILLD_STORE, the config file's "
                   "store, else ~/.aura-distill.")
@config_option
@click.pass_context
def run_now(ctx: click.Context, words: tuple[str, ...], store_option: Path | None,
            config_path: Path | None) -> None:
    from ..registry import job_names

    jobs = job_names()
    rest = list(words)
    job = rest.pop(0) if rest and rest[0] in jobs else None
    if len(rest) > 1 or (rest and job is None and len(words) > 1):
        raise click.UsageError(f"expected [JOB] [STORE], got {' '.join(words)}; JOB is one of "
                               + ", ".join(jobs))
    if rest and job is None and not _looks_like_a_store(rest[0]):
        raise click.UsageError(f"no job called {str(rest[0])!r}; JOB is one of {', '.join(jobs)} "
                               f"(a store is given as a path, such as ./{rest[0]}, or with --store)")
    given = ctx.meta.setdefault("distilld.store", {})
    if rest:
        given["store"] = Path(rest[0])
    if store_option is not None:
        given["store_option"] = store_option
    reply = _control(ctx, config_path, {"cmd": "run-now", "job": job})
    note = " (the daemon is paused: they run after `distilld resume`)" if reply.get("paused") else ""
    emit(f"requested: {', '.join(reply.get('requested', []))}{note}\n")


@store_command()
@config_option
@click.pass_context
def pause(ctx: click.Context, config_path: Path | None) -> None:
    """Pause the running daemon: no pass starts (changes are still followed) until `resume`."""
    _control(ctx, config_path, {"cmd": "pause"})
    emit("paused\n")


@store_command()
@config_option
@click.pass_context
def resume(ctx: click.Context, config_path: Path | None) -> None:
    """Resume a paused daemon; it catches up on what changed meanwhile."""
    _control(ctx, config_path, {"cmd": "resume"})
    emit("resumed\n")


COMMANDS = (run, status, log_command, run_now, pause, resume)
