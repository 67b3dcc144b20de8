"""The user service: install, uninstall, status, print."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._common import emit, given_store, store_input
from .daemon import config_option

manager_option = click.option(
    "--systemd/--launchd", "use_systemd", default=None,
    help="Which service manager (default: launchd on macOS, systemd elsewhere).")


def _manager(use_systemd: bool | None) -> Any:
    from ..runtime.service import default_manager

    if use_systemd is None:
        return default_manager()
    return "systemd" if use_systemd else "launchd"


@click.group()
def service() -> None:
    """Install, remove, inspect or print the user service that runs `distilld run`."""


@service.command("install")
@manager_option
@store_input
@config_option
@click.option("--start", is_flag=True, help="Also enable and start it now (otherwise nothing is started).")
@click.pass_context
def service_install(ctx: click.Context, use_systemd: bool | None, config_path: Path | None, start: bool) -> None:
    """Write the unit (systemd) or agent (launchd) for this Python, verify it and reload the
    manager. The store and --config are written into the command it runs."""
    from ..runtime.service import install, run_arguments

    report = install(_manager(use_systemd), run_arguments(given_store(ctx), config_path), start)
    emit("\n".join(report.lines) + "\n")
    if not report.ok:
        raise click.exceptions.Exit(1)


@service.command("uninstall")
@manager_option
def service_uninstall(use_systemd: bool | None) -> None:
    """Stop and disable the service if it runs, and remove its file."""
    from ..runtime.service import uninstall

    report = uninstall(_manager(use_systemd))
    emit("\n".join(report.lines) + "\n")


@service.command("status")
@manager_option
def service_status(use_systemd: bool | None) -> None:
    """Say whether the service is installed, current, enabled and running. Exit 3 if not installed."""
    from ..runtime.service import render_state, service_state

    state = service_state(_manager(use_systemd))
    emit(render_state(state) + "\n")
    if not state.installed:
        raise click.exceptions.Exit(3)


@service.command("print")
@manager_option
@store_input
@config_option
@click.pass_context
def service_print(ctx: click.Context, use_systemd: bool | None, config_path: Path | None) -> None:
    """Print the unit or plist that `service install` would write (for packagers; writes nothing)."""
    from ..runtime.service import render, run_arguments

    emit(render(_manager(use_systemd), run_arguments(given_store(ctx), config_path)))


COMMANDS = (service,)
