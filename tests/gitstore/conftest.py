"""Real repositories in tmp_path, and no git configuration from this machine.

libgit2 reads the global, XDG and system config from paths it resolves once; they point at an
empty folder for the whole session. The git CLI (playing "the user") runs with its own HOME
and GIT_CONFIG_NOSYSTEM=1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from gitmachines import GitCli, Machine, Origin, joined_machine, lifecycle_store, pushed_machine
from pygit2.enums import ConfigLevel

LEVELS = (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM)


@pytest.fixture(scope="session", autouse=True)
def isolated_git_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    empty = tmp_path_factory.mktemp("empty-git-home")
    saved = {level: pygit2.settings.search_path[level] for level in LEVELS}
    for level in LEVELS:
        pygit2.settings.search_path[level] = str(empty)
    yield empty
    for level, value in saved.items():
        pygit2.settings.search_path[level] = value


@pytest.fixture(autouse=True)
def isolated_git_cli(tmp_path: Path) -> Iterator[None]:
    """distilld itself runs `git gc --auto`: it too reads no configuration from this machine.
    Its own MonkeyPatch, so that a test's ``monkeypatch.undo()`` leaves this in place."""
    home = tmp_path / "distilld-home"
    home.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as isolation:
        isolation.setenv("HOME", str(home))
        isolation.setenv("GIT_CONFIG_NOSYSTEM", "1")
        isolation.delenv("XDG_CONFIG_HOME", raising=False)
        yield


@pytest.fixture
def git(tmp_path: Path) -> GitCli:
    home = tmp_path / "user-home"
    home.mkdir()
    return GitCli(home)


@pytest.fixture
def origin(tmp_path: Path) -> Origin:
    return Origin.create(tmp_path / "origin.git")


@pytest.fixture
def machine(tmp_path: Path, origin: Origin) -> Machine:
    """One machine's store, with git set up (no remote branch yet)."""
    m = Machine("a", tmp_path / "a", origin)
    lifecycle_store(m.root)
    m.init()
    return m


@pytest.fixture
def pair(tmp_path: Path, origin: Origin) -> tuple[Machine, Machine]:
    """Two clones of one store: ``a`` made it and pushed, ``b`` joined."""
    a = pushed_machine(tmp_path, origin)
    return a, joined_machine(tmp_path, origin)
