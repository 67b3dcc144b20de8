"""Helpers for the hostile-store tests: a store with work for every pass, a canary folder beside
it, sha256 listings, an audit hook that sees every write this process makes, and the real CLI
in a child process."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from builders import EM, KESTREL_ENTRY, StoreBuilder, healthy_store

HERON_RAW = (b"---\ndomain: project\nscope: Heron clickstream\nlast_updated: 2026-05-01\n---\n\n"
             b"# Heron\n\n- Heron streams clickstream events into the lake.\n")
HERON_ENTRY = f"- [Heron](projects/heron.md) {EM} Heron clickstream. Read when working on heron."
REPO = Path(__file__).resolve().parents[1]


def busy_store(root: Path) -> StoreBuilder:
    """The healthy store plus a stale project file (gc has a move to make) and an archived one
    (restore and revert have work)."""
    b = healthy_store(root)
    b.write("projects/heron.md", HERON_RAW)
    spine = b.read("SPINE.md").decode()
    b.write("SPINE.md", spine.replace(KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + HERON_ENTRY + "\n"))
    return b.rebuild_catalog()


def sha_listing(folder: Path, skip: Path | None = None) -> dict[str, str]:
    """Every entry under ``folder`` (never following links) with its sha256, or its link target."""
    out: dict[str, str] = {}
    if not folder.exists():
        return out
    for directory, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(directory)
        if skip is not None and (here == skip or skip in here.parents):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = here / name
            if skip is not None and path == skip:
                continue
            key = str(path.relative_to(folder))
            if path.is_symlink():
                out[key] = "link -> " + os.readlink(path)
            elif path.is_dir():
                out[key] = "dir"
            else:
                out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def bytes_differing(before: dict[str, str], after: dict[str, str], folder: Path) -> int:
    """Bytes written or removed outside the store: the size of every entry that changed."""
    total = 0
    for key in set(before) | set(after):
        if before.get(key) != after.get(key):
            path = folder / key
            total += path.stat().st_size if path.is_file() and not path.is_symlink() else 1
    return total


# -- an audit hook: every write this process makes, resolved to an absolute path --------------

_WRITE_EVENTS = {"open", "os.rename", "os.link", "os.remove", "os.mkdir", "os.rmdir", "os.symlink",
                 "os.truncate", "os.chmod"}
_recording: list[list[str]] = []
_inside = threading.local()
_installed = False


def _fd_path(fd: object) -> str | None:
    if not isinstance(fd, int) or fd < 0:
        return None
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _absolute(path: object, dir_fd: object = None) -> str | None:
    if isinstance(path, int) or path is None:
        return None
    text = os.fsdecode(path) if isinstance(path, (bytes, str, os.PathLike)) else None
    if text is None:
        return None
    if os.path.isabs(text):
        return os.path.normpath(text)
    base = _fd_path(dir_fd)
    if base is None:
        return None  # a name relative to a descriptor the event does not carry
    return os.path.normpath(os.path.join(base, text))


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not _recording or event not in _WRITE_EVENTS or getattr(_inside, "busy", False):
        return
    _inside.busy = True
    try:
        paths: list[str | None] = []
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND))
            if writing:
                paths.append(_absolute(path))
        elif event in ("os.rename", "os.link"):
            src, dst, src_fd, dst_fd = (list(args) + [None] * 4)[:4]
            paths += [_absolute(src, src_fd), _absolute(dst, dst_fd)]
        else:
            path = args[0] if args else None
            dir_fd = args[-1] if len(args) > 1 else None
            paths.append(_absolute(path, dir_fd))
        for path in paths:
            if path is not None:
                _recording[-1].append(path)
    finally:
        _inside.busy = False


@contextmanager
def audited_writes() -> Iterator[list[str]]:
    """Every path this process writes, renames, links, removes or creates while the block runs."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    seen: list[str] = []
    _recording.append(seen)
    try:
        yield seen
    finally:
        _recording.pop()


def outside(paths: list[str], region: Path, allowed: list[Path]) -> list[str]:
    """The written paths inside ``region`` but under none of ``allowed``."""
    def under(path: str, folder: Path) -> bool:
        return path == str(folder) or path.startswith(str(folder) + os.sep)
    return sorted({p for p in paths if under(p, region) and not any(under(p, a) for a in allowed)})


# -- the real CLI, in a child process ----------------------------------------------------------

def run_distilld(args: list[str], env: dict[str, str] | None = None,
                 timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "distilld", *args], capture_output=True, text=True,
                          errors="surrogateescape", env=full_env, timeout=timeout, cwd=REPO)


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid
