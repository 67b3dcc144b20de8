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
    from ..runtime.service_paths import default_manager

    if use_systemd is None:
        return default_manager()
    return "systemd" if use_systemd else "launchd"


def _checked_store(ctx: click.Context) -> Path | None:
    """The store given, refused as every command refuses it when it is a file or unreadable (a
    missing one is fine: the service waits for it)."""
    from ..store.root_access import check_store_shape

    store = given_store(ctx)
    if store is not None:
        check_store_shape(store.expanduser())
    return store


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
    """Write the service for one store (systemd: the distilld@.service template and the store's
    instance; launchd: the store's own agent) for this Python, verify it and reload the
    manager. Each store gets its own service; installing one leaves the others as they are."""
    from ..runtime.service import install

    report = install(_manager(use_systemd), _checked_store(ctx), config_path, start)
    emit("\n".join(report.lines) + "\n")
    if not report.ok:
        raise click.exceptions.Exit(1)


@service.command("uninstall")
@manager_option
@store_input
@click.pass_context
def service_uninstall(ctx: click.Context, use_systemd: bool | None) -> None:
    """Stop and disable one store's service if it runs, and remove its files."""
    from ..runtime.service import uninstall

    report = uninstall(_manager(use_systemd), given_store(ctx))
    emit("\n".join(report.lines) + "\n")


@service.command("status")
@manager_option
@click.pass_context
def service_status(ctx: click.Context, use_systemd: bool | None) -> None:
    """List every store's service: installed, current, enabled, running. Exit 3 if none is."""
    from ..runtime.service import installed_stores, render_state, service_state

    manager = _manager(use_systemd)
    stores = installed_stores(manager)
    states = [service_state(manager, store) for store in stores] or [service_state(manager)]
    emit("".join(render_state(state) + "\n" for state in states))
    if not any(state.installed for state in states):
        raise click.exceptions.Exit(3)


@service.command("print")
@manager_option
@store_input
@config_option
@click.pass_context
def service_print(ctx: click.Context, use_systemd: bool | None, config_path: Path | None) -> None:
    """Print what `service install` would write for the store (for packagers; writes nothing)."""
    from ..runtime.service_render import render

    emit(render(_manager(use_systemd), _checked_store(ctx), config_path))


COMMANDS = (service,)
