"""The `distilld` command line: parse, call one action, print, map errors to exit codes.

Exit codes: 0 success; 1 the store fails a check; 2 usage or input error (a message names
the file and what to do).
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from . import __version__
from .actions import budget as budget_action
from .actions import catalog as catalog_action
from .actions import check as check_action
from .actions import gc as gc_action
from .actions import restore as restore_action
from .errors import DistilldError
from .policy import Policy, load_policy

DEFAULT_STORE = "~/.aura-distill"


def default_store() -> str:
    return os.environ.get("DISTILLD_STORE") or DEFAULT_STORE


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
        outcome = catalog_action.write_catalog(_store(store), _now())
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
        report = gc_action.run_gc_apply(_store(store), policy, _now, wait)
    elif mode == "revert":
        report = gc_action.run_gc_revert(_store(store), policy, _now, manifest, wait)
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
    outcome = restore_action.run_restore(_store(store), path, _policy(ctx), _now, wait)
    _emit((restore_action.render_json if as_json else restore_action.render_text)(outcome), as_json)
    ctx.exit(0 if outcome.ok else 1)


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


if __name__ == "__main__":
    sys.exit(main())
