"""The lifecycle: gc and restore, and `lifecycle enable|disable|status` for the scheduled pass."""

from __future__ import annotations

import click

from ._common import (
    chosen_mode,
    committed,
    emit,
    emit_report,
    finished_later_on_ctrl_c,
    json_option,
    mode_flag,
    now,
    policy,
    policy_option,
    store_command,
    store_input,
    store_path,
)

wait_option = click.option("--wait", type=click.FloatRange(min=0), default=0, show_default=True,
                           help="Seconds to wait for a distiller's lock before giving up.")


@store_command()
@mode_flag("preview", "Show what would be archived and why (default). Changes nothing.")
@mode_flag("apply", "Archive the planned files (recovering an interrupted pass first).")
@mode_flag("revert", "Undo a pass: the newest, or --manifest.")
@click.option("--manifest", help="With --revert: the manifest to undo (a name in data/gc-manifests/ or a path).")
@wait_option
@json_option("the report")
@click.pass_context
def gc(ctx: click.Context, manifest: str | None, wait: float, as_json: bool) -> None:
    """Lifecycle: move stale project files to the archive, ledger line first.

    Only files directly under projects/ whose newest activity stamp is past their
    staleness_threshold move; pinned and [NON-NEGOTIABLE] files never do. An explicit
    --apply is consent for this run, whatever .lifecycle says. Exit 1 if the self-check fails.
    """
    from ..actions import gc as gc_action

    mode = chosen_mode(ctx, "preview")
    if manifest is not None and mode != "revert":
        raise click.UsageError("--manifest names the pass to undo: it goes with --revert "
                               "(`distilld gc --revert --manifest NAME`)")
    the_policy = policy(ctx)
    store = store_path(ctx)
    if mode == "apply":
        with finished_later_on_ctrl_c(store, "lifecycle pass", "gc --apply"), \
                committed(store, "lifecycle", the_policy, wait) as record:
            report = gc_action.run_gc_apply(store, the_policy, now, wait)
            record.subject, record.body = report.commit_message()
    elif mode == "revert":
        with committed(store, "revert", the_policy, wait) as record:
            report = gc_action.run_gc_revert(store, the_policy, now, manifest, wait)
            back = report.outcome.reverted if report.outcome else []
            record.subject = f"distilld: reverted a lifecycle pass ({len(back)} file{'s' if len(back) != 1 else ''})"
            record.body = [f"restored {path}" for path in back]
    else:
        report = gc_action.preview_gc(store, the_policy, now())
    emit_report("gc", report, as_json, gc_action.render_text, gc_action.render_json)
    ctx.exit(0 if report.ok else 1)


@click.command()
@click.argument("path")
@store_input
@policy_option
@wait_option
@json_option("the report")
@click.pass_context
def restore(ctx: click.Context, path: str, wait: float, as_json: bool) -> None:
    """Bring PATH (projects/x.md or archive/projects/x.md) back from the archive.

    Its split family comes back with it; its SPINE entry is re-added within the budgets and its
    last_updated set to today. A legacy archive is restored as a copy. Exit 1 if the self-check fails.
    """
    from ..actions import restore as restore_action

    store = store_path(ctx)
    the_policy = policy(ctx)
    with finished_later_on_ctrl_c(store, "restore", f"restore {path}"), \
            committed(store, "restore", the_policy, wait) as record:
        outcome = restore_action.run_restore(store, path, the_policy, now, wait)
        record.subject = f"distilld: restored {', '.join(outcome.restored) or path}"
    emit_report("restore", outcome, as_json, restore_action.render_text, restore_action.render_json)
    ctx.exit(0 if outcome.ok else 1)


@click.group()
def lifecycle() -> None:
    """Allow, stop or show scheduled archiving on this machine (the store's local .lifecycle)."""


@store_command("enable")
@click.pass_context
def lifecycle_enable(ctx: click.Context) -> None:
    """Let the daemon's scheduled pass move stale project files to the archive."""
    from ..actions import lifecycle_switch as switch_action

    emit(switch_action.render_text(switch_action.set_switch(store_path(ctx), True)))


@store_command("disable")
@click.pass_context
def lifecycle_disable(ctx: click.Context) -> None:
    """Stop scheduled archiving on this machine (`distilld gc --apply` still works when asked)."""
    from ..actions import lifecycle_switch as switch_action

    emit(switch_action.render_text(switch_action.set_switch(store_path(ctx), False)))


@store_command("status")
@json_option("the state")
@click.pass_context
def lifecycle_status(ctx: click.Context, as_json: bool) -> None:
    """Say whether scheduled archiving is enabled for the store on this machine."""
    from ..actions import lifecycle_switch as switch_action

    state = switch_action.switch_state(store_path(ctx))
    emit_report("lifecycle", state, as_json, switch_action.render_text, switch_action.render_json)


for _command in (lifecycle_enable, lifecycle_disable, lifecycle_status):
    lifecycle.add_command(_command)

COMMANDS = (gc, restore, lifecycle)
