"""The `distilld` command line: parse, call one action, print, map errors to exit codes.

One module per group of commands, each a thin click layer over one action that it imports
only when it runs. A new command goes in its own module with a ``COMMANDS`` tuple, and its
module name in ``COMMAND_MODULES`` below. Exit codes: see exits.py (and `distilld --help`).
"""

from __future__ import annotations

import importlib
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from .. import __version__
from ..errors import DistilldError
from ._common import escape_controls, policy_flag, root_obj, schema_name
from .exits import INTERRUPTED, LOCK_HELD, LOCK_LOST, STORE_UNSAFE, exit_table_text

# Where commands register: each module lists its commands in COMMANDS.
COMMAND_MODULES = (
    "store_cmds",      # check, catalog, budget, new
    "lifecycle_cmds",  # gc, restore, lifecycle
    "compaction",      # compact, migrate
    "git",             # init, sync
    "daemon",          # run, status, log, run-now, pause, resume
    "config",          # config show|check|path
    "service",         # service install|uninstall|status|print
    "report",          # report
)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def default_store() -> str:
    """$DISTILLD_STORE, else the config file's store, else ~/.aura-distill."""
    from ..locations import default_store as locations_default_store

    return str(locations_default_store())


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=exit_table_text())
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


for _name in COMMAND_MODULES:
    for _command in importlib.import_module(f".{_name}", __name__).COMMANDS:
        cli.add_command(_command)


# -- errors: one line (or one JSON document), and the code from the table ----------------------

def exit_code_for(error: DistilldError) -> int:
    """The code from the table (exits.py). The lock's exceptions carry the lock script's own codes
    (STORE-FORMAT.md 2.2); the command line says "held" and "lost" with its own."""
    from ..errors import LockHeld, LockLost

    if isinstance(error, LockHeld):
        return LOCK_HELD
    if isinstance(error, LockLost):
        return LOCK_LOST
    if "CompactionRefused" in {cls.__name__ for cls in type(error).__mro__}:  # raised where it cannot say so
        return STORE_UNSAFE
    return error.exit_code


def _wants_json(argv: list[str] | None) -> bool:
    args = sys.argv[1:] if argv is None else argv
    return "--json" in args[: args.index("--")] if "--" in args else "--json" in args


def _report_error(message: str, code: int, file: str | None, as_json: bool) -> int:
    if as_json:
        payload = {"schema": schema_name("error"), "error": message, "file": file, "exit": code}
        sys.stdout.write(json.dumps(payload, ensure_ascii=True) + "\n")
        sys.stdout.flush()
    else:
        click.echo(f"distilld: {escape_controls(message)}", err=True)
    return code


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


__all__ = ["cli", "default_store", "main"]

if __name__ == "__main__":
    sys.exit(main())
