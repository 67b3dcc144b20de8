"""The command of a registered pass that has a planner and no command module of its own: the
one table (daemon/registry.py) names it with the module "pass_cmd", and it is built here, with
the preview/apply modes, --wait and --json every pass command has."""

from __future__ import annotations

import click

from ._common import (chosen_mode, committed, emit_report, json_option, mode_flag, now, policy,
                      stopped_by_ctrl_c, store_command, store_path)
from .lifecycle_cmds import wait_option

MODULE = "pass_cmd"


def driven_command(name: str, summary: str) -> click.Command:
    """`distilld NAME [--preview | --apply] [--wait S] [--json] [STORE]` for the pass of command NAME."""

    @click.pass_context
    def run(ctx: click.Context, wait: float, as_json: bool) -> None:
        from ..actions import driven_pass
        from ..registry import pass_of_command

        entry = pass_of_command(name)
        store, the_policy = store_path(ctx), policy(ctx)
        if chosen_mode(ctx, "preview") == "apply":
            with stopped_by_ctrl_c(store, entry.name, name), committed(store, entry.name, the_policy, wait) as record:
                report = driven_pass.run_driven_pass(store, entry, the_policy, now, wait, apply=True)
                record.subject, record.body = report.commit_message()
        else:
            report = driven_pass.run_driven_pass(store, entry, the_policy, now, wait, apply=False)
        emit_report(entry.name, report, as_json, driven_pass.render_text, driven_pass.render_json)
        ctx.exit(0 if report.ok else 1)

    run.__doc__ = (f"{summary}\n\nThe pass is planned and carried out by the one pass driver: journalled before "
                   "its first write, checked (C1-C4) before and after, rolled back if a file changes under it. "
                   "Exit 1 if its self-check fails.")
    decorated = json_option("the report")(wait_option(mode_flag("apply", f"Run the {name} pass (finishing an "
                                                                "interrupted one first).")(run)))
    decorated = mode_flag("preview", "Show the steps it would take (default). Changes nothing.")(decorated)
    return store_command(name)(decorated)


def registered_commands() -> list[click.Command]:
    """The commands the table gives this module."""
    from ..registry import pass_commands

    return [driven_command(command.name, command.summary)
            for command in pass_commands().values() if command.module == MODULE]
