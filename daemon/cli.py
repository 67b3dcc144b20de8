"""The `distilld` command line: parse, call one action, print, map errors to exit codes.

Exit codes: 0 success; 1 the store fails a check; 2 usage or input error (a message names
the file and what to do).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from . import __version__
from .actions import budget as budget_action
from .actions import catalog as catalog_action
from .actions import check as check_action
from .actions import compact as compact_action
from .actions import gc as gc_action
from .actions import migrate as migrate_action
from .actions import restore as restore_action
from .cli_report import report_command
from .errors import DistilldError
from .policy import Policy, load_policy
from .settings import DEFAULT_STORE  # noqa: F401  (the settings own the default store)


def default_store() -> str:
    """The settings decide: $DISTILLD_STORE, else the config file's store, else ~/.aura-distill."""
    from .settings import default_store as settings_default_store

    return str(settings_default_store())


def _now() -> datetime:
    return datetime.now(timezone.utc)


store_argument = click.argument(
    "store", required=False, type=click.Path(path_type=Path), metavar="[STORE]"
)


def _emit(text: str, as_json: bool = False) -> None:
    """Write to stdout as bytes: file text reaches the terminal as the bytes it was (invalid
    UTF-8 included); in JSON a stray byte becomes a ``\\udcXX`` escape, which stays valid JSON."""
    data = text.encode("utf-8", "backslashreplace" if as_json else "surrogateescape")
    sys.stdout.flush()
    stream = getattr(sys.stdout, "buffer", None)
    if stream is None:  # a text-only stdout (some embedders): the closest text it can take
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    stream.write(data)
    stream.flush()


@contextmanager
def _committed(store: Path, operation: str, policy: Policy) -> Iterator[Any]:
    """A maintenance operation run from the command line is one git commit of exactly what it
    changed (when the store is a distilld repository); what happened is said on stderr, so a
    --json report on stdout stays clean."""
    from .actions import sync as sync_action  # pygit2 loads only for commands that write

    with sync_action.committed_operation(store, operation, policy, _now) as record:
        yield record  # the caller may give it a subject that says what happened
    if record.result is not None and record.result.commit:
        click.echo(f"distilld: committed the {operation} as {record.result.commit[:7]} "
                   f"({len(record.result.paths)} paths)", err=True)
    for note in record.notes:
        click.echo(f"distilld: note: {note}", err=True)


def _store(store: Path | None) -> Path:
    return (store or Path(default_store())).expanduser()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="distilld")
@click.option("--policy", "policy_path", type=click.Path(path_type=Path, dir_okay=False),
              envvar="DISTILLD_POLICY", help="Policy file (TOML); the shipped default.toml if omitted.")
@click.pass_context
def cli(ctx: click.Context, policy_path: Path | None) -> None:
    """Keep an Aura Distill knowledge store healthy.

    STORE defaults to $DISTILLD_STORE, else ~/.aura-distill.
    """
    ctx.obj = {"policy_path": policy_path}


def _policy(ctx: click.Context) -> Policy:
    obj: dict[str, Any] = ctx.obj or {}
    return load_policy(obj.get("policy_path"))


@cli.command()
@store_argument
@click.option("--before", type=click.Path(path_type=Path, file_okay=False),
              help="A copy of the store as it was (e.g. a migration backup): also run C4, the lossless check.")
@click.option("--json", "as_json", is_flag=True, help="Print findings as JSON.")
@click.pass_context
def check(ctx: click.Context, store: Path | None, before: Path | None, as_json: bool) -> None:
    """Check the store invariants C1-C3 (and C4 with --before). Writes nothing.

    Exit 0 when every group passes, 1 when any fails.
    """
    result = check_action.run_check(_store(store), before, _policy(ctx).caps)
    render = check_action.render_json if as_json else check_action.render_text
    _emit(render(result), as_json)
    ctx.exit(0 if result.ok else 1)


@cli.command()
@store_argument
@click.option("--print", "mode", flag_value="print", default=True, help="Print the canonical catalog (default).")
@click.option("--write", "mode", flag_value="write", help="Write CATALOG.md atomically if it changed.")
def catalog(store: Path | None, mode: str) -> None:
    """Rebuild CATALOG.md from the tree and the ledger: print it, or write it."""
    if mode == "write":
        outcome = catalog_action.run_catalog_write(_store(store), _policy(click.get_current_context()), _now)
        _emit(f"{outcome.path}: {outcome.reason}\n")
    else:
        _emit(catalog_action.print_catalog(_store(store), _now()))


@cli.command()
@store_argument
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.pass_context
def budget(ctx: click.Context, store: Path | None, as_json: bool) -> None:
    """Show the SPINE and tier files against their caps, token estimates and the debt. Writes nothing."""
    report = budget_action.run_budget(_store(store), _policy(ctx), _now().date())
    render = budget_action.render_json if as_json else budget_action.render_text
    _emit(render(report), as_json)


@cli.command()
@store_argument
@click.option("--preview", "mode", flag_value="preview", default=True,
              help="Show what would be archived and why (default). Changes nothing.")
@click.option("--apply", "mode", flag_value="apply",
              help="Archive the planned files (recovering an interrupted pass first).")
@click.option("--revert", "mode", flag_value="revert", help="Undo a pass: the newest, or --manifest.")
@click.option("--manifest", help="With --revert: the manifest to undo (a name in data/gc-manifests/ or a path).")
@click.option("--wait", type=click.FloatRange(min=0), default=0, show_default=True,
              help="Seconds to wait for a distiller's lock before giving up.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def gc(ctx: click.Context, store: Path | None, mode: str, manifest: str | None, wait: float,
       as_json: bool) -> None:
    """Lifecycle: move stale project files to the archive, ledger line first.

    Only files directly under projects/ whose newest activity stamp is past their
    staleness_threshold move; pinned and [NON-NEGOTIABLE] files never do. An explicit
    --apply is consent for this run, whatever .lifecycle says. Exit 1 if the self-check fails.
    """
    policy = _policy(ctx)
    if mode == "apply":
        with _committed(_store(store), "lifecycle", policy) as record:
            report = gc_action.run_gc_apply(_store(store), policy, _now, wait)
            moved = report.outcome.moved if report.outcome else []
            record.subject = f"distilld: archived {len(moved)} file{'s' if len(moved) != 1 else ''}"
            record.body = [f"archived {path}" for path in moved]
    elif mode == "revert":
        with _committed(_store(store), "revert", policy) as record:
            report = gc_action.run_gc_revert(_store(store), policy, _now, manifest, wait)
            back = report.outcome.reverted if report.outcome else []
            record.subject = f"distilld: reverted a lifecycle pass ({len(back)} file{'s' if len(back) != 1 else ''})"
            record.body = [f"restored {path}" for path in back]
    else:
        report = gc_action.preview_gc(_store(store), policy, _now())
    _emit((gc_action.render_json if as_json else gc_action.render_text)(report), as_json)
    ctx.exit(0 if report.ok else 1)


@cli.command()
@click.argument("path")
@store_argument
@click.option("--wait", type=click.FloatRange(min=0), default=0, show_default=True,
              help="Seconds to wait for a distiller's lock before giving up.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def restore(ctx: click.Context, path: str, store: Path | None, wait: float, as_json: bool) -> None:
    """Bring PATH (projects/x.md or archive/projects/x.md) back from the archive.

    Its split family comes back with it; its SPINE entry is re-added within the budgets and its
    last_updated set to today. A legacy archive is restored as a copy. Exit 1 if the self-check fails.
    """
    with _committed(_store(store), "restore", _policy(ctx)) as record:
        outcome = restore_action.run_restore(_store(store), path, _policy(ctx), _now, wait)
        record.subject = f"distilld: restored {', '.join(outcome.restored) or path}"
    _emit((restore_action.render_json if as_json else restore_action.render_text)(outcome), as_json)
    ctx.exit(0 if outcome.ok else 1)


@cli.command()
@store_argument
@click.option("--preview", "mode", flag_value="preview", default=True,
              help="Show what compaction would shorten, merge and split (default). Changes nothing.")
@click.option("--apply", "mode", flag_value="apply",
              help="Compact (finishing an interrupted compaction first), then rebuild the catalog.")
@click.option("--wait", type=click.FloatRange(min=0), default=0, show_default=True,
              help="Seconds to wait for a distiller's lock before giving up.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def compact(ctx: click.Context, store: Path | None, mode: str, wait: float, as_json: bool) -> None:
    """Bring the SPINE and the tier files back within their budgets, losing no word.

    Entries over the entry cap are cut, then the longest are shortened toward the entry target
    while the SPINE is over its compaction point; split children join their parent's line,
    blank lines go, and entries of one tier and section merge. Every cut or merged entry's
    whole hook is first appended to its file under "## Index detail". Over-cap tier files are
    split at "## " sections. Nothing is archived. Refuses a pre-1.2 store (use migrate) and a
    PENDING migration. Exit 1 if the self-check fails.
    """
    if mode == "apply":
        with _committed(_store(store), "compaction", _policy(ctx)):
            report = compact_action.run_compact(_store(store), _policy(ctx), _now, wait, apply=True)
    else:
        report = compact_action.run_compact(_store(store), _policy(ctx), _now, wait, apply=False)
    _emit((compact_action.render_json if as_json else compact_action.render_text)(report), as_json)
    ctx.exit(0 if report.ok else 1)


@cli.command()
@store_argument
@click.option("--preview", "mode", flag_value="preview", default=True,
              help="Write data/migration/<UTC>/PLAN.md and change nothing else (default).")
@click.option("--apply", "mode", flag_value="apply",
              help="Back the store up, then migrate it item by item; DONE once the self-check passes.")
@click.option("--finish", "mode", flag_value="finish", help="Resume a PENDING migration at its first unticked item.")
@click.option("--revert", "mode", flag_value="revert",
              help="Put the backup back (files changed since go to kept-after-backup/); the ledger is kept.")
@click.option("--wait", type=click.FloatRange(min=0), default=0, show_default=True,
              help="Seconds to wait for a distiller's lock before giving up.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def migrate(ctx: click.Context, store: Path | None, mode: str, wait: float, as_json: bool) -> None:
    """Move a pre-1.2 store to the 1.2 layout, losslessly (checked by C4 against a backup).

    Adopts legacy archives into archive/legacy/, moves dated observation lines to evidence
    twins, splits over-cap files, compacts the SPINE (catalog line near the top), runs the
    lifecycle only if .lifecycle is enabled, and rebuilds the catalog. A store that cannot be
    brought within the hard caps is refused, with the reason and what could be done by hand.
    Migrating a migrated store is a no-op. Exit 1 if the self-check fails (PENDING stays).
    """
    if mode == "preview":
        outcome = migrate_action.run_migrate(_store(store), _policy(ctx), _now, mode, wait)
    else:
        with _committed(_store(store), "migration", _policy(ctx)):
            outcome = migrate_action.run_migrate(_store(store), _policy(ctx), _now, mode, wait)
    _emit((migrate_action.render_json if as_json else migrate_action.render_text)(outcome), as_json)
    ctx.exit(0 if outcome.ok else 1)


# -- git: init and sync (the actions import pygit2 lazily, so other commands stay light) ------

def _git_identity(name: str, email: str) -> Any:
    from .gitstore.commit import Identity

    return Identity(name, email)


def _git_credentials(ssh_key: Path | None) -> Any:
    from .gitstore.auth import Credentials

    return Credentials(ssh_key=ssh_key)


def git_options(command: Any) -> Any:
    """Author and credential options shared by `init` and `sync` (machine-local, never stored)."""
    command = click.option("--ssh-key", type=click.Path(path_type=Path, dir_okay=False), envvar="DISTILLD_SSH_KEY",
                           help="Private key for an ssh remote (its .pub beside it); else the ssh agent.")(command)
    command = click.option("--author-email", default="distilld@localhost", show_default=True,
                           envvar="DISTILLD_GIT_EMAIL", help="Email on distilld's commits.")(command)
    command = click.option("--author-name", default="distilld", show_default=True,
                           envvar="DISTILLD_GIT_NAME", help="Name on distilld's commits.")(command)
    return command


@cli.command()
@store_argument
@click.option("--remote", "remote_url", metavar="URL",
              help="Remote to sync with; kept in the repository's own .git/config, never in the store.")
@click.option("--branch", metavar="NAME",
              help="Branch of a new repository (default main). An existing repository keeps its branch.")
@git_options
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@click.pass_context
def init(ctx: click.Context, store: Path | None, remote_url: str | None, branch: str | None, author_name: str,
         author_email: str, ssh_key: Path | None, as_json: bool) -> None:
    """Make the store a git repository, or adopt the one it already is.

    An existing repository is used as it is: never re-initialised, never switched to another
    branch. distilld writes .gitattributes (no line-ending or content conversion), an allow-list
    .gitignore (only SPINE.md, CATALOG.md, the tier folders, evidence/, archive/ and inbox/ are
    tracked; data/, local/, bin/ and dotfiles never are), sets core.autocrlf=false for this
    repository, and commits what is shared. With --remote and no commit yet, the remote's branch
    is checked out first: that is how a second machine joins. Exit 1 on a byte mismatch.
    """
    from .actions import sync as sync_action

    outcome = sync_action.run_init(_store(store), _policy(ctx), _now, remote_url, branch,
                                   _git_identity(author_name, author_email), _git_credentials(ssh_key))
    _emit((sync_action.render_init_json if as_json else sync_action.render_init_text)(outcome), as_json)
    ctx.exit(1 if outcome.mismatches else 0)


@cli.command()
@store_argument
@click.option("--remote", "remote_name", metavar="NAME",
              help="Remote to sync with (default: the one `distilld init` set up, origin).")
@git_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def sync(ctx: click.Context, store: Path | None, remote_name: str | None, author_name: str, author_email: str,
         ssh_key: Path | None, as_json: bool) -> None:
    """Commit what agents wrote, fetch, take in the remote's changes, verify the bytes, push.

    Behind: a fast-forward that never overwrites uncommitted edits. Diverged: a merge by the
    store's rules (ledger lines united in stamp order, the catalog rebuilt, a file changed on both
    machines kept whole in inbox/), committed only if the store still passes C1-C3. Pushes
    whenever ahead; never force-pushes. A manual sync ignores the backoff of failed scheduled
    ones. Exit 0 in sync; 1 skipped (git busy, a distillation running), blocked, offline, push
    failed, or a byte mismatch; 2 on errors.
    """
    from .actions import sync as sync_action

    report = sync_action.run_sync(_store(store), _policy(ctx), _now, _git_identity(author_name, author_email),
                                  _git_credentials(ssh_key), remote=remote_name)
    _emit((sync_action.render_sync_json if as_json else sync_action.render_sync_text)(report), as_json)
    ctx.exit(0 if report.ok else 1)


# -- the daemon: run, status, log, config, lifecycle, service, and its control socket ----------
# Imports stay inside the commands: `distilld check` should not pay for watchdog or apscheduler.

config_option = click.option(
    "--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
    help="Settings file (TOML). Default: $DISTILLD_CONFIG, else config.toml in your config folder "
         "(`distilld config path`).")
store_option = click.option(
    "--store", type=click.Path(path_type=Path, file_okay=False),
    help="The store's folder. Default: the settings' store ($DISTILLD_STORE, the config file), "
         "else ~/.aura-distill.")


def _daemon_settings(ctx: click.Context, store: Path | None, config_path: Path | None) -> tuple[Any, dict[str, Any]]:
    """Settings with the command line on top: --store here, --policy on the group."""
    from .settings import load_settings

    overrides: dict[str, Any] = {}
    if store is not None:
        overrides["store"] = str(store.expanduser().absolute())
    policy_path = (ctx.obj or {}).get("policy_path")
    if policy_path is not None:
        overrides["policy"] = str(Path(policy_path).expanduser().absolute())
    return load_settings(config_path, overrides), overrides


def _instance(settings: Any) -> Any:
    from .settings import InstancePaths

    return InstancePaths.for_store(settings.store)


@cli.command()
@store_option
@click.option("--once", is_flag=True,
              help="Run one full cycle (catalog, checks, commit, sync, compaction, lifecycle) and exit: "
                   "for tests, and for running from cron. Exit 1 if a pass failed.")
@config_option
@click.pass_context
def run(ctx: click.Context, store: Path | None, once: bool, config_path: Path | None) -> None:
    """Follow the store in the foreground (what the service runs).

    Once the store is quiet and no distiller holds its lock, the catalog is rebuilt if stale,
    the invariants checked and the agents' changes committed (and pushed when a remote is
    set); compaction, lifecycle, sync and a full rescan run on their schedules. One daemon
    per store. SIGTERM finishes the current step and exits 0; SIGHUP reloads the settings.
    Invalid settings exit 78.
    """
    from .runtime.daemon import run_daemon

    settings, overrides = _daemon_settings(ctx, store, config_path)
    ctx.exit(run_daemon(settings, config=config_path, overrides=overrides, once=once))


@cli.command()
@store_option
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print everything as JSON.")
@click.pass_context
def status(ctx: click.Context, store: Path | None, config_path: Path | None, as_json: bool) -> None:
    """Show what the daemon is doing and waiting for, the last result of each pass, budgets and
    their margins, the lock, git, the service, and what is stuck. Exit 0 if it runs, 3 if not."""
    from .actions import status as status_action
    from .log import read_json
    from .runtime.instance import running_pid
    from .runtime.service import render_state, service_state

    settings, _ = _daemon_settings(ctx, store, config_path)
    paths = _instance(settings)
    service = service_state()
    service_info = {**service.to_dict(), "line": render_state(service)}
    view = status_action.build_view(
        settings.store, read_json(paths.status_file), running_pid(paths.instance_lock), service_info,
        {"status_file": str(paths.status_file), "activity_log": str(paths.activity_log),
         "json_log": str(paths.json_log)})
    _emit((status_action.render_json if as_json else status_action.render_text)(view), as_json)
    ctx.exit(0 if view.running else 3)


@cli.command(name="log")
@store_option
@config_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines as they come (Ctrl-C stops).")
@click.option("-n", "--lines", "count", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many of the last lines to show first.")
@click.pass_context
def log_command(ctx: click.Context, store: Path | None, config_path: Path | None, follow: bool,
                count: int) -> None:
    """Show the activity log: one plain line per thing the daemon did or waited for."""
    from .log import follow_lines, tail_lines

    settings, _ = _daemon_settings(ctx, store, config_path)
    path = _instance(settings).activity_log
    lines = tail_lines(path, count)
    if not lines and not follow and not path.exists():
        click.echo(f"no activity yet ({path} does not exist; `distilld run` starts the daemon)", err=True)
    for line in lines:
        _emit(line + "\n")
    if follow:
        try:
            for line in follow_lines(path):
                _emit(line + "\n")
        except KeyboardInterrupt:
            pass


@cli.group()
def config() -> None:
    """Show, check or locate the machine-local settings (never kept in the store)."""


@config.command("show")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the settings as JSON.")
def config_show(config_path: Path | None, as_json: bool) -> None:
    """Print the effective settings: defaults, the config file, DISTILLD_* variables, combined."""
    import json as json_module

    from .settings import config_file, load_settings, render_toml

    settings = load_settings(config_path)
    if as_json:
        _emit(json_module.dumps(settings.model_dump(mode="json"), indent=2) + "\n", True)
    else:
        _emit(f"# effective settings (config file: {config_file(config_path)})\n" + render_toml(settings))


@config.command("check")
@config_option
def config_check(config_path: Path | None) -> None:
    """Validate the settings; a problem is one line naming the key, and exit 78."""
    from .settings import config_file, load_settings

    settings = load_settings(config_path)
    path = config_file(config_path)
    source = str(path) if path.exists() else f"{path} (absent: defaults and environment only)"
    _emit(f"settings OK: {source}; store {settings.store}\n")


@config.command("path")
@config_option
def config_path_command(config_path: Path | None) -> None:
    """Print where the config file is (it need not exist)."""
    from .settings import config_file

    _emit(f"{config_file(config_path)}\n")


@cli.group()
def lifecycle() -> None:
    """Allow, stop or show scheduled archiving on this machine (the store's local .lifecycle)."""


def _lifecycle_store(ctx: click.Context, store: Path | None) -> Path:
    return store.expanduser() if store is not None else Path(default_store())


@lifecycle.command("enable")
@store_option
@click.pass_context
def lifecycle_enable(ctx: click.Context, store: Path | None) -> None:
    """Let the daemon's scheduled pass move stale project files to the archive."""
    from .actions import lifecycle as lifecycle_action

    _emit(lifecycle_action.render_text(lifecycle_action.set_lifecycle(_lifecycle_store(ctx, store), True)))


@lifecycle.command("disable")
@store_option
@click.pass_context
def lifecycle_disable(ctx: click.Context, store: Path | None) -> None:
    """Stop scheduled archiving on this machine (`distilld gc --apply` still works when asked)."""
    from .actions import lifecycle as lifecycle_action

    _emit(lifecycle_action.render_text(lifecycle_action.set_lifecycle(_lifecycle_store(ctx, store), False)))


@lifecycle.command("status")
@store_option
@click.pass_context
def lifecycle_status_command(ctx: click.Context, store: Path | None) -> None:
    """Say whether scheduled archiving is enabled for the store on this machine."""
    from .actions import lifecycle as lifecycle_action

    _emit(lifecycle_action.render_text(lifecycle_action.lifecycle_status(_lifecycle_store(ctx, store))))


manager_option = click.option(
    "--systemd/--launchd", "use_systemd", default=None,
    help="Which service manager (default: launchd on macOS, systemd elsewhere).")


def _manager(use_systemd: bool | None) -> Any:
    from .runtime.service import default_manager

    if use_systemd is None:
        return default_manager()
    return "systemd" if use_systemd else "launchd"


@cli.group()
def service() -> None:
    """Install, remove, inspect or print the user service that runs `distilld run`."""


@service.command("install")
@manager_option
@store_option
@config_option
@click.option("--start", is_flag=True, help="Also enable and start it now (otherwise nothing is started).")
def service_install(use_systemd: bool | None, store: Path | None, config_path: Path | None, start: bool) -> None:
    """Write the unit (systemd) or agent (launchd) for this Python, verify it and reload the
    manager. --store and --config are written into the command it runs."""
    from .runtime.service import install, run_arguments

    report = install(_manager(use_systemd), run_arguments(store, config_path), start)
    _emit("\n".join(report.lines) + "\n")
    if not report.ok:
        raise click.exceptions.Exit(1)


@service.command("uninstall")
@manager_option
def service_uninstall(use_systemd: bool | None) -> None:
    """Stop and disable the service if it runs, and remove its file."""
    from .runtime.service import uninstall

    report = uninstall(_manager(use_systemd))
    _emit("\n".join(report.lines) + "\n")


@service.command("status")
@manager_option
def service_status(use_systemd: bool | None) -> None:
    """Say whether the service is installed, current, enabled and running. Exit 3 if not installed."""
    from .runtime.service import render_state, service_state

    state = service_state(_manager(use_systemd))
    _emit(render_state(state) + "\n")
    if not state.installed:
        raise click.exceptions.Exit(3)


@service.command("print")
@manager_option
@store_option
@config_option
def service_print(use_systemd: bool | None, store: Path | None, config_path: Path | None) -> None:
    """Print the unit or plist that `service install` would write (for packagers; writes nothing)."""
    from .runtime.service import render, run_arguments

    _emit(render(_manager(use_systemd), run_arguments(store, config_path)))


def _control(ctx: click.Context, store: Path | None, config_path: Path | None, request: dict[str, Any]) -> dict[str, Any]:
    from .runtime.control import send

    settings, _ = _daemon_settings(ctx, store, config_path)
    reply = send(_instance(settings).control_socket, request)
    if not reply.get("ok"):
        raise click.ClickException(str(reply.get("error") or "the daemon refused the request"))
    return reply


@cli.command("run-now")
@click.argument("job", required=False,
                type=click.Choice(["follow", "sync", "compaction", "lifecycle", "reconcile"]))
@store_option
@config_option
@click.pass_context
def run_now(ctx: click.Context, job: str | None, store: Path | None, config_path: Path | None) -> None:
    """Ask the running daemon to run JOB now (default: follow, sync, compaction and lifecycle)."""
    reply = _control(ctx, store, config_path, {"cmd": "run-now", "job": job})
    note = " (the daemon is paused: they run after `distilld resume`)" if reply.get("paused") else ""
    _emit(f"requested: {', '.join(reply.get('requested', []))}{note}\n")


@cli.command()
@store_option
@config_option
@click.pass_context
def pause(ctx: click.Context, store: Path | None, config_path: Path | None) -> None:
    """Pause the running daemon: no pass starts (changes are still followed) until `resume`."""
    _control(ctx, store, config_path, {"cmd": "pause"})
    _emit("paused\n")


@cli.command()
@store_option
@config_option
@click.pass_context
def resume(ctx: click.Context, store: Path | None, config_path: Path | None) -> None:
    """Resume a paused daemon; it catches up on what changed meanwhile."""
    _control(ctx, store, config_path, {"cmd": "resume"})
    _emit("resumed\n")


cli.add_command(report_command)  # `distilld report` lives in cli_report.py


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the CLI and turn known errors into one-line messages."""
    try:
        # Without standalone mode, click returns ctx.exit()'s code instead of raising it.
        returned = cli.main(args=argv, prog_name="distilld", standalone_mode=False)
        return returned if isinstance(returned, int) else 0
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except DistilldError as error:
        message = str(error).encode("utf-8", "backslashreplace").decode("utf-8")
        click.echo(f"distilld: {message}", err=True)
        return error.exit_code
    except BrokenPipeError:
        return 1
    except OSError as error:  # a file vanished or is unreadable mid-command: say which, no traceback
        where = error.filename or "the store"
        click.echo(f"distilld: {where}: {error.strerror or error}; nothing more was changed", err=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
