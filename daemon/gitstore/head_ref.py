"""The store repository's HEAD commit, read from git's own files without loading pygit2.

`find`, `bundle` and `serve` stamp every answer with HEAD (search/fingerprint.py) and must stay
light: pygit2's import alone costs more than a warm query. Only the plain layouts are read (a
``.git`` folder, or a ``.git`` file naming the folder, as a worktree has): a loose ref, then
packed-refs. Anything else (no repository, an unborn branch, a ref git keeps elsewhere) is
"no HEAD", which is still a stable part of a fingerprint.
"""

from __future__ import annotations

from pathlib import Path

NO_HEAD = "none"
_HEX = set("0123456789abcdef")


def _git_dir(store: Path) -> Path | None:
    dot_git = store / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        try:
            line = dot_git.read_text("utf-8", "replace").strip()
        except OSError:
            return None
        if line.startswith("gitdir:"):
            target = Path(line[len("gitdir:"):].strip())
            return target if target.is_absolute() else (store / target)
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


def _common_dir(git_dir: Path) -> Path:
    try:
        common = (git_dir / "commondir").read_text("utf-8").strip()
    except OSError:
        return git_dir
    return git_dir / common if not Path(common).is_absolute() else Path(common)


def _resolve(git_dir: Path, ref: str) -> str | None:
    for folder in dict.fromkeys((git_dir, _common_dir(git_dir))):
        try:
            value = (folder / ref).read_text("utf-8").strip()
        except OSError:
            value = ""
        if _is_sha(value):
            return value
        try:
            packed = (folder / "packed-refs").read_text("utf-8", "replace")
        except OSError:
            continue
        for line in packed.splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _is_sha(sha):
                return sha
    return None


def head_commit_id(store: Path) -> str:
    """HEAD's commit id (hex), or ``none`` when there is no readable one."""
    git_dir = _git_dir(store)
    if git_dir is None:
        return NO_HEAD
    try:
        head = (git_dir / "HEAD").read_text("utf-8").strip()
    except OSError:
        return NO_HEAD
    if _is_sha(head):
        return head  # detached
    if head.startswith("ref: "):
        return _resolve(git_dir, head[5:].strip()) or NO_HEAD
    return NO_HEAD
