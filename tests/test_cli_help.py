"""Every command and subcommand has help text (a cheap guard, after sqlite-utils)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from distilld.cli import cli


def walk(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = []
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):  # the top group imports a command when asked
        command = group.get_command(ctx, name)
        assert command is not None, name
        found.append(((*prefix, name), command))
        if isinstance(command, click.Group):
            found += walk(command, (*prefix, name))
    return found


COMMANDS = walk(cli)


def test_the_daemon_commands_exist() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    for expected in ("run", "status", "log", "config show", "config check", "config path", "lifecycle enable",
                     "lifecycle disable", "lifecycle status", "service install", "service uninstall",
                     "service status", "service print", "run-now", "pause", "resume"):
        assert expected in names


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_help(path: tuple[str, ...], command: click.Command) -> None:
    assert (command.help or "").strip(), f"{' '.join(path)} has no help text"
    for param in command.params:
        if isinstance(param, click.Option):
            assert (param.help or "").strip(), f"{' '.join(path)} {param.opts[0]} has no help text"
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output
