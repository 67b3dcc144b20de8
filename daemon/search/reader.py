"""read_knowledge: the store's knowledge files, and nothing else.

A path is served only when every check passes before anything is opened: it is text (UTF-8,
no NUL), contained by D10 (no absolute path, no ``..``, ``.`` or empty segment, no ``\\`` or
``:``), a knowledge file (SPINE.md, CATALOG.md, or Markdown under a tier folder, archive/,
evidence/ or local/; never data/, .git/, bin/, a dotfile or distilld's state), and no part of
it is a symbolic link. The file is then opened without following a link and must be the very
file that was checked, and its bytes must be UTF-8 text.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from ..store.paths import CATALOG, SPINE, contained
from .fingerprint import is_knowledge_path
from .query import QueryError

MAX_PATHS = 50


class Refused(Exception):
    """This one path is not served; the message says why (the batch goes on)."""


def _check(path: object) -> str:
    if not isinstance(path, str):
        raise Refused("not a path: give a store-relative path as text, such as craft/testing.md")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused("not a UTF-8 path") from None
    if "\x00" in path or any(ord(ch) < 0x20 for ch in path):
        raise Refused("control characters in the path")
    if not (path in (SPINE, CATALOG) or contained(path, "store") or contained(path, "local")):
        raise Refused("outside the store's knowledge (absolute, '..', '.', '~', '\\' or ':' paths are never read)")
    if not is_knowledge_path(path):
        raise Refused("not a knowledge file (only SPINE.md, CATALOG.md and .md files under the tier folders, "
                      "archive/, evidence/ and local/ are served)")
    return path


def _lstat_chain(root: Path, path: str) -> os.stat_result:
    """lstat of every component: a link anywhere in the path refuses it (nothing is opened)."""
    current = str(root)
    info = None
    for part in path.split("/"):
        current = os.path.join(current, part)
        try:
            info = os.lstat(current)
        except OSError:
            raise Refused("no such knowledge file") from None
        if stat.S_ISLNK(info.st_mode):
            raise Refused("a symbolic link (links are never followed)")
    assert info is not None
    if not stat.S_ISREG(info.st_mode):
        raise Refused("not a regular file")
    return info


def read_knowledge_bytes(root: Path, path: object) -> tuple[str, bytes]:
    """The checked path and its bytes; ``Refused`` with the reason otherwise."""
    checked = _check(path)
    before = _lstat_chain(root, checked)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        handle = os.open(os.path.join(root, checked), flags)
    except OSError:
        raise Refused("could not be opened (removed or replaced meanwhile)") from None
    try:
        info = os.fstat(handle)
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino) or not stat.S_ISREG(info.st_mode):
            raise Refused("replaced while being read")
        chunks = []
        while chunk := os.read(handle, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(handle)
    return checked, b"".join(chunks)


def read_text(root: Path, path: object) -> tuple[str, str, str]:
    """(path, text, sha256) of a knowledge file served as text."""
    checked, raw = read_knowledge_bytes(root, path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Refused(f"not UTF-8 text (byte {error.start}); open the file itself to see it") from None
    return checked, text, hashlib.sha256(raw).hexdigest()


def check_batch(paths: object) -> list[object]:
    if isinstance(paths, str):
        return [paths]
    if not isinstance(paths, list) or not paths:
        raise QueryError("give a list of store-relative paths, such as [\"SPINE.md\", \"craft/testing.md\"]")
    if len(paths) > MAX_PATHS:
        raise QueryError(f"{len(paths)} paths asked for; at most {MAX_PATHS} per call")
    return list(paths)
