"""store/paths.sync_class is cached (asked of every path of every tree a merge reads): a change
of the extra synced folders (a reloaded setting) must change the answer for a path asked before."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from distilld.store.paths import set_extra_synced_folders, sync_class


@pytest.fixture(autouse=True)
def _restore_setting() -> Iterator[None]:
    yield
    set_extra_synced_folders(())


def test_the_sync_class_follows_a_change_of_the_extra_synced_folders() -> None:
    assert sync_class("notes/today.md") == "other"
    set_extra_synced_folders(("notes",))
    assert sync_class("notes/today.md") == "shared"
    assert sync_class("notes/.today.md.swp") == "local"  # a dotfile stays local whatever the setting
    set_extra_synced_folders(())
    assert sync_class("notes/today.md") == "other"
    set_extra_synced_folders(["notes"])  # type: ignore[arg-type]  # a list from a settings file is made a tuple
    assert sync_class("notes/today.md") == "shared"
