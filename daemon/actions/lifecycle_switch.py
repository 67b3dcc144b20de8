"""`distilld lifecycle enable|disable|status`: the `.lifecycle` switch, this machine's consent to the
lifecycle pass (gc on its schedule).

The consent is the store's local `.lifecycle` file (STORE-FORMAT.md 1.11): the text `enabled`
or `disabled`, never synced, so each machine decides for itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError
from ..store import fs
from ..store.local import LIFECYCLE_FILE, lifecycle_enabled
from ..store.root_access import check_store_shape, require_writable


@dataclass(frozen=True)
class LifecycleSwitch:
    store: Path
    enabled: bool
    file_text: str | None  # what .lifecycle holds (stripped), None when there is no file
    changed: bool = False


def _root(store: Path) -> Path:
    root = store.expanduser()
    check_store_shape(root)
    if not root.is_dir():
        raise StoreError(f"{root}: no such store directory (create it, or pass the store's path)")
    return root


def _read(root: Path) -> str | None:
    try:
        raw = (root / LIFECYCLE_FILE).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StoreError(f"{root / LIFECYCLE_FILE}: cannot read it ({error.strerror or error})") from None
    return raw.removeprefix(b"\xef\xbb\xbf").strip().decode("utf-8", "replace")


def switch_state(store: Path) -> LifecycleSwitch:
    root = _root(store)
    return LifecycleSwitch(root, lifecycle_enabled(root), _read(root))


def set_switch(store: Path, enabled: bool) -> LifecycleSwitch:
    """Write `enabled` or `disabled` (no BOM, one line); leave a file that already says it alone."""
    root = _root(store)
    word = "enabled" if enabled else "disabled"
    require_writable(root)
    before = _read(root)
    if before == word:
        return LifecycleSwitch(root, enabled, before, changed=False)
    fs.atomic_write(root / LIFECYCLE_FILE, f"{word}\n".encode("ascii"))
    return LifecycleSwitch(root, enabled, word, changed=True)


def render_text(state: LifecycleSwitch) -> str:
    path = state.store / LIFECYCLE_FILE
    if state.file_text is None:
        source = f"no {path} file"
    else:
        source = f"{path} says {state.file_text!r}"
    verb = "is now" if state.changed else "is"
    if state.enabled:
        meaning = ("the daemon's scheduled lifecycle pass moves stale project files to the archive "
                   "(ledger first; `distilld restore` brings one back)")
    else:
        meaning = ("scheduled passes move nothing; `distilld gc` previews what would move, "
                   "`distilld lifecycle enable` allows it on this machine")
    return f"lifecycle {verb} {'enabled' if state.enabled else 'disabled'} ({source}): {meaning}\n"


def render_json(state: LifecycleSwitch) -> str:
    import json

    return json.dumps({"store": str(state.store), "enabled": state.enabled, "file": str(state.store / LIFECYCLE_FILE),
                       "file_text": state.file_text}, indent=2, ensure_ascii=False) + "\n"
