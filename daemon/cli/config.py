"""The machine-local settings: config show, check, path."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import emit, json_option, schema_name
from .daemon import config_option


@click.group()
def config() -> None:
    """Show, check or locate the machine-local settings (never kept in the store)."""


@config.command("show")
@config_option
@json_option("the settings")
def config_show(config_path: Path | None, as_json: bool) -> None:
    """Print the effective settings: defaults, the config file, DISTILLD_* variables, combined."""
    import json

    from ..settings import config_file, load_settings, render_toml

    settings = load_settings(config_path)
    if as_json:
        payload = {"schema": schema_name("config"), **settings.model_dump(mode="json")}
        emit(json.dumps(payload, indent=2) + "\n", True)
    else:
        emit(f"# effective settings (config file: {config_file(config_path)})\n" + render_toml(settings))


@config.command("check")
@config_option
def config_check(config_path: Path | None) -> None:
    """Validate the settings; a problem is one line naming the key, and exit 78."""
    from ..settings import config_file, load_settings

    settings = load_settings(config_path)
    path = config_file(config_path)
    source = str(path) if path.exists() else f"{path} (absent: defaults and environment only)"
    emit(f"settings OK: {source}; store {settings.store}\n")


@config.command("path")
@config_option
def config_path_command(config_path: Path | None) -> None:
    """Print where the config file is (it need not exist)."""
    from ..locations import config_file

    emit(f"{config_file(config_path)}\n")


COMMANDS = (config,)
