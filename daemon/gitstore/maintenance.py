"""Housekeeping libgit2 cannot do (LIBRARY-NOTES 1.9): packing loose objects, and refreshing the
index's file stat data without writing every object again.

libgit2 has no gc; every commit leaves loose objects, and thousands of them make each commit
slower (libgit2 checks that every object a tree names exists). The git command line packs them
when it is installed; without it the store still works, only slower.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

GC_TIMEOUT_SECONDS = 600


def pack_objects(root: Path, timeout: float = GC_TIMEOUT_SECONDS, background: bool = False) -> str | None:
    """Run ``git gc --auto`` (it does nothing below git's thresholds): in the foreground, or with
    ``background`` detached the way git itself runs it after a commit, so that a first commit of a
    big store returns without waiting for the packing. None when it ran (or started); otherwise a
    sentence saying why not. Never raises."""
    git = shutil.which("git")
    if git is None:
        return "git is not installed: loose objects are not packed (commits get slower as they pile up)"
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    detach = "true" if background else "false"
    # A detached gc outlives the call: it gets no pipe to hold open.
    output = subprocess.DEVNULL if background else subprocess.PIPE
    try:
        done = subprocess.run([git, "-C", str(root), "-c", f"gc.autoDetach={detach}", "gc", "--auto", "--quiet"],
                              stdin=subprocess.DEVNULL, stdout=output, stderr=output, text=True, timeout=timeout,
                              env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"git gc did not finish ({error}); loose objects stay as they are"
    if done.returncode != 0:
        return f"git gc failed ({done.returncode}): {(done.stderr or '').strip()[:200]}"
    return None


def refresh_index(root: Path, timeout: float = GC_TIMEOUT_SECONDS) -> bool:
    """``git update-index --refresh``: record the stat data of index entries whose files match
    them, hashing the files but writing no object. False when git is missing or failed (the
    index stays correct, only slower to compare)."""
    git = shutil.which("git")
    if git is None:
        return False
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run([git, "-C", str(root), "update-index", "-q", "--refresh"], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
