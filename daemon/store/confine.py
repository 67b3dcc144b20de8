"""How store/fs.py reaches a file without following a link: the confinement of a pass to its
store root, and the directory and file openings it makes (``O_NOFOLLOW``, ``dir_fd`` forms).
Nothing here writes; fs.py is the one writer."""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import UnsafeStore

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# The store roots of the passes running on this thread (a daemon's other threads, writing its
# status file, are not confined to the store).
_CONFINED = threading.local()


def _roots() -> list[str]:
    roots: list[str] | None = getattr(_CONFINED, "roots", None)
    if roots is None:
        roots = _CONFINED.roots = []
    return roots


@contextmanager
def confined_to(root: Path) -> Iterator[None]:
    """While the block runs, every write this thread makes must land under ``root`` and is
    checked component by component; a path outside it (a crafted journal's ``../x``, an
    absolute path) is refused."""
    roots = _roots()
    roots.append(os.path.abspath(root))
    try:
        yield
    finally:
        roots.pop()


def _confining_root(path: str) -> str | None:
    """The confining root ``path`` lies under; None when this thread is not confined. Raises
    UnsafeStore for a path outside every root of a confined thread."""
    roots = _roots()
    if not roots:
        return None
    found = [r for r in roots if path == r or path.startswith(r.rstrip(os.sep) + os.sep)]
    if not found:
        raise UnsafeStore(f"{path}: outside the store {roots[-1]}; a pass writes only inside its store "
                          "(a journal or manifest naming this path was crafted or damaged), so nothing "
                          "was written")
    return max(found, key=len)


def link_refusal(link: str, target: str) -> UnsafeStore:
    return UnsafeStore(f"{link} is a symbolic link (to {target}): distilld never writes through a link, "
                       "so nothing was written. Replace the link with a real folder (move the files "
                       "back into the store), then run the pass again.")


def _refuse_link(shown: str, name: str, dir_fd: int) -> None:
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return
    raise link_refusal(shown, target)


def _open_directory(directory: str, create: bool) -> int:
    """A descriptor on ``directory``; under a confined root, reached without following links."""
    root = _confining_root(directory)
    if root is None:
        if create:
            os.makedirs(directory, exist_ok=True)
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    # `directory` is absolute and normalised, and under `root`: no part of it is "..".
    relative = os.path.relpath(directory, root)
    parts = [] if relative == "." else relative.split(os.sep)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = root
    try:
        for part in parts:
            shown = os.path.join(shown, part)
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass  # made meanwhile: opened (and checked) below
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    _refuse_link(shown, part, fd)
                raise
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def _parent(path: Path, create: bool = False) -> Iterator[tuple[int, str]]:
    """The parent directory's descriptor and the file's name in it."""
    full = os.path.abspath(path)
    fd = _open_directory(os.path.dirname(full), create)
    try:
        yield fd, os.path.basename(full)
    finally:
        os.close(fd)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _refuse_link_in_place(path: Path, name: str, dir_fd: int) -> None:
    if _is_link(name, dir_fd):
        _refuse_link(str(path), name, dir_fd)


def _open_file(name: str, dir_fd: int, flags: int, mode: int = 0o666) -> int:
    return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
