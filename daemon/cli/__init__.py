"""The `distilld` command line: parse, call one action, print, map errors to exit codes.

One module per group of commands, each a thin click layer over one action that it imports
only when it runs. A new command goes in a module with a ``COMMANDS`` tuple, and a line in
``COMMAND_TABLE`` below; a pass's commands are listed with the pass, in the one table of passes
(daemon/registry.py). Exit codes: see ../exits.py (and `distilld --help`).
"""

from __future__ import annotations

import importlib
import sys
from datetime import datetime, timezone

import click

from .. import __version__
from ..errors import DistilldError
from ._common import escape_controls, policy_flag, root_obj, schema_name
from ..exits import BAD_SETTINGS, INTERRUPTED, LOCK_HELD, LOCK_LOST, exit_table_text

# Where commands register: a command's name, its module (imported only when the command is
# asked for, so `distilld --help` and each command load no other command's module), and the
# first paragraph of its help, which `distilld --help` shows without importing the module (a
# test keeps it equal to the command's own).
COMMAND_TABLE: dict[str, tuple[str, str]] = {
    "budget": ("store_cmds", ("Show the SPINE and tier files against their caps, token estimates and the debt. "
                              "Writes nothing.")),
    "catalog": ("store_cmds", "Rebuild CATALOG.md from the tree and the ledger: print it, or write it."),
    "check": ("store_cmds", "Check the store invariants C1-C3 (and C4 with --before). Writes nothing."),
    "new": ("store_cmds", "Create a new, empty 1.2 store that passes `distilld check`."),
    "init": ("git", "Make the store a git repository, or adopt the one it already is."),
    "sync": ("git", "Commit what agents wrote, fetch, take in the remote's changes, verify the bytes, push."),
    "run": ("daemon", "Follow the store in the foreground (what the service runs)."),
    "status": ("daemon", ("Show what the daemon is doing and waiting for, the last result of each pass, budgets "
                          "and their margins, the lock, git, the service, and what is stuck. Exit 0 if it runs, "
                          "3 if not.")),
    "log": ("daemon", "Show the activity log: one plain line per thing the daemon did or waited for."),
    "run-now": ("daemon", ("Ask the running daemon to run JOB now, or the jobs `run --once` runs. A sync asked "
                           "for this way runs at once, whatever the backoff.")),
    "pause": ("daemon", "Pause the running daemon: no pass starts (changes are still followed) until `resume`."),
    "resume": ("daemon", "Resume a paused daemon; it catches up on what changed meanwhile."),
    "config": ("config", "Show, check or locate the machine-local settings (never kept in the store)."),
    "service": ("service", "Install, remove, inspect or print the user service that runs `distilld run`."),
    "find": ("find_cmds", "Find the knowledge files about QUERY, beyond what the SPINE names. Writes nothing in the store."),
    "bundle": ("find_cmds", ("Gather the knowledge TASK needs within a token budget, deterministically. Writes "
                             "nothing in the store.")),
    "serve": ("find_cmds", ("Serve the store read-only to agents over MCP on stdio (tools: spine, "
                            "search_knowledge, read_knowledge, bundle).")),
    "report": ("report", ("Measure the store's health: index cost, growth from the git history, tier files, "
                          "lifecycle, links, archive and ledger, and what distilld did. Writes nothing in the "
                          "store.")),
}


def command_table() -> dict[str, tuple[str, str]]:
    """Every command: the table above, and each registered pass's commands."""
    from ..registry import pass_commands

    passes = {name: (entry.module, entry.summary) for name, entry in pass_commands().items()}
    return dict(sorted({**COMMAND_TABLE, **passes}.items()))


def module_commands(module_name: str) -> list[click.Command]:
    """The commands a module of this package defines: its ``COMMANDS``, or for the module that
    builds the command of a registered pass without one of its own, those it builds."""
    module = importlib.import_module(f".{module_name}", __name__)
    found = getattr(module, "COMMANDS", None)
    return list(found) if found is not None else module.registered_commands()


class _LazyGroup(click.Group):
    """A group whose commands are imported from their modules when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(command_table())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        table = command_table()
        if cmd_name not in self.commands and cmd_name in table:
            for command in module_commands(table[cmd_name][0]):
                self.add_command(command)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as error:
            # click's "Did you mean" picks from the commands loaded so far, here none: offer it the
            # table (click 8.1 names no command in its error, and suggests nothing anyway)
            name = getattr(error, "command_name", None)
            if name is None:
                raise
            raise click.exceptions.NoSuchCommand(name, possibilities=command_table(), ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own layout, from the table: stand-ins carry each command's first paragraph
        stand_ins = [click.Command(name, help=summary) for name, (_, summary) in command_table().items()]
        limit = formatter.width - 6 - max(len(command.name or "") for command in stand_ins)
        with formatter.section("Commands"):
            formatter.write_dl([(command.name or "", command.get_short_help_str(limit)) for command in stand_ins])


def _now() -> datetime:
    return datetime.now(timezone.utc)


def default_store() -> str:
    """$DISTILLD_STORE, else the config file's store, else ~/.aura-distill."""
    from ..locations import default_store as locations_default_store

    return str(locations_default_store())


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=exit_table_text())
@click.version_option(__version__, "-V", "--version", prog_name="distilld")
@policy_flag(envvar="DISTILLD_POLICY")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Keep an Aura Distill knowledge store healthy.

    Every command takes the store as STORE or --store DIR; it defaults to $DISTILLD_STORE, else
    the config file's store, else ~/.aura-distill. --policy works before or after the command.
    Shell completion: eval "$(_DISTILLD_COMPLETE=bash_source distilld)" (zsh_source, fish_source).
    """
    root_obj(ctx)


# -- errors: one line (or one JSON document), and the code from the table ----------------------

def exit_code_for(error: DistilldError) -> int:
    """The code from the table (exits.py). The lock's exceptions carry the lock script's own codes
    (STORE-FORMAT.md 2.2); the command line says "held" and "lost" with its own."""
    from ..errors import LockHeld, LockLost

    if isinstance(error, LockHeld):
        return LOCK_HELD
    if isinstance(error, LockLost):
        return LOCK_LOST
    return error.exit_code


def _wants_json(argv: list[str] | None) -> bool:
    args = sys.argv[1:] if argv is None else argv
    return "--json" in args[: args.index("--")] if "--" in args else "--json" in args


def _report_error(message: str, code: int, file: str | None, as_json: bool) -> int:
    if code == BAD_SETTINGS:
        _leave_bad_settings_file(message)
    if as_json:
        import json  # only an error with --json pays for it

        payload = {"schema": schema_name("error"), "error": message, "file": file, "exit": code}
        sys.stdout.write(json.dumps(payload, ensure_ascii=True) + "\n")
        sys.stdout.flush()
    else:
        click.echo(f"distilld: {escape_controls(message)}", err=True)
    return code


def _leave_bad_settings_file(message: str) -> None:
    """Under launchd, which cannot be told "not on 78", the agent's KeepAlive waits while this
    file exists (launchd/distilld.plist.in): bad settings are not restarted every 30 s."""
    import os

    target = os.environ.get("DISTILLD_BAD_SETTINGS_FILE")
    if not target:
        return
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as out:
            out.write(f"{message}\nFix it, then delete this file: launchd starts distilld again.\n")
    except OSError:
        pass  # the message is on stderr (the agent's log) all the same


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the CLI and turn known errors into one-line messages."""
    as_json = _wants_json(argv)
    try:
        # Without standalone mode, click returns ctx.exit()'s code instead of raising it.
        returned = cli.main(args=argv, prog_name="distilld", standalone_mode=False)
        return returned if isinstance(returned, int) else 0
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.ClickException as error:
        if as_json:
            return _report_error(error.format_message(), error.exit_code, None, True)
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        return _report_error("interrupted", INTERRUPTED, None, as_json)
    except DistilldError as error:
        message = str(error).encode("utf-8", "backslashreplace").decode("utf-8")
        file = getattr(error, "file", None)
        return _report_error(message, exit_code_for(error), str(file) if file else None, as_json)
    except BrokenPipeError:
        return 1
    except OSError as error:  # a file vanished or is unreadable mid-command: say which, no traceback
        where = error.filename or "the store"
        return _report_error(f"{where}: {error.strerror or error}; nothing more was changed", 2,
                             str(error.filename) if error.filename else None, as_json)
    except Exception as error:  # noqa: BLE001 - a bug: one line and a crash report, never a traceback
        from .crash_report import crash_line

        return _report_error(crash_line(error, argv), 2, None, as_json)


__all__ = ["cli", "default_store", "main"]

if __name__ == "__main__":
    sys.exit(main())
