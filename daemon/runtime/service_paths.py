"""Where a store's user service lives and what it is called: the systemd template unit and the
store's instance (its drop-in), or the store's launchd agent."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

Manager = Literal["systemd", "launchd"]
UNIT_TEMPLATE = "distilld@.service"  # one instance per store: distilld@<escaped store path>.service
LEGACY_UNIT = "distilld.service"     # what older versions installed (one store only)
LAUNCHD_LABEL = "io.distilld.daemon"  # + "." + the store's instance key: one agent per store
DROPIN_NAME = "distilld.conf"


def default_manager() -> Manager:
    return "launchd" if sys.platform == "darwin" else "systemd"


def user_home() -> Path:
    return Path(os.path.expanduser("~")).absolute()


def units_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    config = Path(base) if base and os.path.isabs(base) else user_home() / ".config"
    return config / "systemd" / "user"


def unit_path() -> Path:
    """The template unit, shared by every store's instance."""
    return units_dir() / UNIT_TEMPLATE


def escape_path(path: Path) -> str:
    """`systemd-escape --path`: the store's absolute path as an instance name (%f gives it back)."""
    text = str(path).strip("/")
    if not text:
        return "-"
    out = []
    for index, byte in enumerate(os.fsencode(text)):
        char = chr(byte)
        if char == "/":
            out.append("-")
        elif (char.isascii() and (char.isalnum() or char in ":_")) or (char == "." and index > 0):
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out)


def unescape_path(name: str) -> str:
    raw = bytearray()
    index = 0
    while index < len(name):
        if name.startswith("\\x", index):
            raw.append(int(name[index + 2:index + 4], 16))
            index += 4
            continue
        raw += b"/" if name[index] == "-" else name[index].encode()
        index += 1
    return "/" + raw.decode("utf-8", "surrogateescape")


def instance_unit(store: Path) -> str:
    return f"distilld@{escape_path(store)}.service"


def dropin_path(store: Path) -> Path:
    return units_dir() / f"{instance_unit(store)}.d" / DROPIN_NAME


def launchd_label(store: Path) -> str:
    from ..settings import instance_key

    return f"{LAUNCHD_LABEL}.{instance_key(store)}"


def plist_path(store: Path) -> Path:
    return user_home() / "Library" / "LaunchAgents" / f"{launchd_label(store)}.plist"


def service_path(manager: Manager, store: Path) -> Path:
    """The file that says this store has a service: its drop-in (systemd) or its plist (launchd)."""
    return dropin_path(store) if manager == "systemd" else plist_path(store)


def resolve_store(store: Path | None) -> Path:
    """The store a service is for: the one given, else the default (the settings')."""
    if store is None:
        from ..locations import default_store

        store = default_store()
    return Path(os.path.abspath(os.path.expanduser(store)))
