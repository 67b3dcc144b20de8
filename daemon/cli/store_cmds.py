"""Reading the store: check, catalog, budget; and `new`, which creates an empty one."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import (
    chosen_mode,
    emit,
    emit_report,
    json_option,
    mode_flag,
    now,
    policy,
    store_command,
    store_path,
    with_schema,
)


@store_command()
@click.option("--before", type=click.Path(path_type=Path, file_okay=False),
              help="A copy of the store as it was (e.g. a migration backup): also run C4, the lossless check.")
@json_option("the findings")
@click.pass_context
def check(ctx: click.Context, before: Path | None, as_json: bool) -> None:
    """Check the store invariants C1-C3 (and C4 with --before). Writes nothing.

    Exit 0 when every group passes, 1 when any fails.
    """
    from ..actions import check as check_action
    from ..config_file import extra_folders_setting
    from ..store.paths import set_extra_synced_folders

    # the one setting check reads: a typo elsewhere in config.toml is the daemon's to refuse
    set_extra_synced_folders(extra_folders_setting())
    result = check_action.run_check(store_path(ctx), policy(ctx).limits, before)
    emit_report("check", result, as_json, check_action.render_text, check_action.render_json)
    ctx.exit(0 if result.ok else 1)


@store_command()
@mode_flag("print", "Print the canonical catalog (default).")
@mode_flag("write", "Write CATALOG.md atomically if it changed.")
@json_option("the catalog's text, or what --write did")
@click.pass_context
def catalog(ctx: click.Context, as_json: bool) -> None:
    """Rebuild CATALOG.md from the tree and the ledger: print it, or write it."""
    from ..actions import catalog as catalog_action

    def as_document(data: dict[str, object]) -> None:
        import json  # only --json pays for it

        emit(with_schema("catalog", json.dumps(data)), True)

    if chosen_mode(ctx, "print") == "write":
        outcome = catalog_action.run_catalog_write(store_path(ctx), policy(ctx), now)
        if as_json:
            as_document({"path": str(outcome.path), "written": outcome.written, "reason": outcome.reason})
        else:
            emit(f"{outcome.path}: {outcome.reason}\n")
    else:
        text = catalog_action.print_catalog(store_path(ctx), now())
        if as_json:
            as_document({"catalog": text})
        else:
            emit(text, raw=True)


@store_command()
@json_option("the figures")
@click.pass_context
def budget(ctx: click.Context, as_json: bool) -> None:
    """Show the SPINE and tier files against their caps, token estimates and the debt. Writes nothing."""
    from ..actions import budget as budget_action

    report = budget_action.run_budget(store_path(ctx), policy(ctx), now().date())
    emit_report("budget", report, as_json, budget_action.render_text, budget_action.render_json)


@store_command()
@json_option("what was created")
@click.pass_context
def new(ctx: click.Context, as_json: bool) -> None:
    """Create a new, empty 1.2 store that passes `distilld check`.

    STORE must not exist or be an empty folder. It gets the format's installer-shaped SPINE.md
    (the header and the catalog line), CATALOG.md with a fresh rebuilt stamp, and the five tier
    folders. To keep an existing store in git, use `distilld init` instead.
    """
    from ..actions import new as new_action

    outcome = new_action.create_store(store_path(ctx), now())
    emit_report("new", outcome, as_json, new_action.render_text, new_action.render_json)


COMMANDS = (check, catalog, budget, new)
