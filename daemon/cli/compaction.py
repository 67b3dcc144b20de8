"""Budgets and old stores: compact and migrate."""

from __future__ import annotations

import click

from ._common import (
    chosen_mode,
    committed,
    emit_report,
    json_option,
    mode_flag,
    now,
    policy,
    progress_on_terminal,
    stopped_by_ctrl_c,
    store_command,
    store_path,
)
from .lifecycle_cmds import wait_option


@store_command()
@mode_flag("preview", "Show what compaction would shorten, merge and split (default). Changes nothing.")
@mode_flag("apply", "Compact (finishing an interrupted compaction first), then rebuild the catalog.")
@wait_option
@json_option("the report")
@click.pass_context
def compact(ctx: click.Context, wait: float, as_json: bool) -> None:
    """Bring the SPINE and the tier files back within their budgets, losing no word.

    Entries over the entry cap are cut, then the longest are shortened toward the entry target
    while the SPINE is over its compaction point; split children join their parent's line,
    blank lines go, and entries of one tier and section merge. Every cut or merged entry's
    whole hook is first appended to its file under "## Index detail". Over-cap tier files are
    split between sections or blocks. Nothing is archived. Refuses a pre-1.2 store (use migrate)
    and a PENDING migration. Exit 1 if the self-check fails, or if the store stays over a cap (a
    unit that cannot be cut: each such file is named with why, and what you can do).
    """
    from ..actions import compaction as compaction_action

    store, the_policy = store_path(ctx), policy(ctx)
    if chosen_mode(ctx, "preview") == "apply":
        from ..runtime.compaction_report import describe_compaction

        with stopped_by_ctrl_c(store, "compaction", "compact"), committed(store, "compaction", the_policy, wait) as record:
            report = compaction_action.run_compaction(store, the_policy, now, wait, apply=True)
            record.subject, record.body = describe_compaction(report).commit_message()
    else:
        report = compaction_action.run_compaction(store, the_policy, now, wait, apply=False)
    emit_report("compact", report, as_json, compaction_action.render_text, compaction_action.render_json)
    ctx.exit(0 if report.ok else 1)


@store_command()
@mode_flag("preview", "Write data/migration/<UTC>/PLAN.md and change nothing else (default).")
@mode_flag("apply", "Back the store up, then migrate it item by item; DONE once the self-check passes.")
@mode_flag("finish", "Resume a PENDING migration at its first unticked item.")
@mode_flag("revert", "Put the backup back (files changed since go to kept-after-backup/); the ledger is kept.")
@wait_option
@json_option("the report")
@click.pass_context
def migrate(ctx: click.Context, wait: float, as_json: bool) -> None:
    """Move a pre-1.2 store to the 1.2 layout, losslessly (checked by C4 against a backup).

    Adopts legacy archives into archive/legacy/, moves dated observation lines to evidence
    twins, splits over-cap files, compacts the SPINE (catalog line near the top), runs the
    lifecycle only if .lifecycle is enabled, and rebuilds the catalog. A store that cannot be
    brought within the hard caps is refused (exit 6), with the reason and what could be done by
    hand. Migrating a migrated store is a no-op. Exit 1 if the self-check fails (PENDING stays).
    """
    from ..actions import migrate as migrate_action

    mode = chosen_mode(ctx, "preview")
    store, the_policy = store_path(ctx), policy(ctx)
    with progress_on_terminal(as_json):
        if mode == "preview":
            outcome = migrate_action.run_migrate(store, the_policy, now, mode, wait)
        else:
            try:
                with committed(store, "migration", the_policy, wait):
                    outcome = migrate_action.run_migrate(store, the_policy, now, mode, wait)
            except KeyboardInterrupt:
                raise migrate_action.interrupted(store, mode) from None
    emit_report("migrate", outcome, as_json, migrate_action.render_text, migrate_action.render_json)
    ctx.exit(migrate_action.exit_code(outcome))


COMMANDS = (compact, migrate)
