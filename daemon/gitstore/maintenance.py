"""Housekeeping libgit2 cannot do (LIBRARY-NOTES 1.9): packing loose objects, and refreshing the
index's file stat data without writing every object again.

libgit2 has no gc; every commit leaves loose objects, and thousands of them make each commit
slower (libgit2 checks that every object a tree names exists). The git command line packs them
when it is installed; without it the store still works, only slower.
"""

from __future__ import annotations

from pathlib import Path

from .gitcli import GitCliFailed, git_executable, run_git

GC_TIMEOUT_SECONDS = 600


def pack_objects(root: Path, timeout: float = GC_TIMEOUT_SECONDS, background: bool = False) -> str | None:
    """Run ``git gc --auto`` (it does nothing below git's thresholds): in the foreground, or with
    ``background`` detached the way git itself runs it after a commit, so that a first commit of a
    big store returns without waiting for the packing. None when it ran (or started); otherwise a
    sentence saying why not. Never raises."""
    if git_executable() is None:
        return "git is not installed: loose objects are not packed (commits get slower as they pile up)"
    detach = "true" if background else "false"
    try:
        run_git(root, ["-c", f"gc.autoDetach={detach}", "gc", "--auto", "--quiet"], timeout, background=background)
    except GitCliFailed as error:
        return f"{error}; loose objects stay as they are"
    return None


def refresh_index(root: Path, timeout: float = GC_TIMEOUT_SECONDS) -> bool:
    """``git update-index --refresh``: record the stat data of index entries whose files match
    them, hashing the files but writing no object. False when git is missing or failed (the
    index stays correct, only slower to compare)."""
    try:
        run_git(root, ["update-index", "-q", "--refresh"], timeout)
    except GitCliFailed:
        return False
    return True
