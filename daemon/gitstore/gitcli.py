"""The one place distilld runs the git command line. Every use is optional: packing and
refreshing the index (which libgit2 cannot do), and a joining machine's fetch and first
checkout (which git does faster); each caller has a pygit2 path for when git is missing or fails.

git runs with a clean environment: nothing that points it at another repository, index or
object store (a distilld started from a git hook inherits GIT_DIR and GIT_INDEX_FILE), no
configuration injected through the environment, and never a prompt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

# Variables git may read that say nothing about which repository it works on: where its own
# configuration lives, the ssh agent, proxies, the temporary folder.
KEPT_VARIABLES: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "SYSTEMROOT", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "SSH_AUTH_SOCK", "http_proxy", "https_proxy", "no_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "all_proxy",
)


class GitCliFailed(Exception):
    """git is not installed, did not finish, or failed; the message says which."""


def git_executable() -> str | None:
    return shutil.which("git")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "", "LC_ALL": "C"})
    env.update(extra or {})
    return env


def _command(args: Sequence[str]) -> str:
    """The git command ``args`` run (``gc`` of ``-c gc.auto=0 gc``), for messages."""
    words = list(args)
    while len(words) > 1 and words[0] == "-c":
        words = words[2:]
    return words[0] if words else "git"


def run_git(root: Path, args: Sequence[str], timeout: float, env: Mapping[str, str] | None = None,
            background: bool = False, accept: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[bytes]:
    """``git -C root ARGS``; its output, or GitCliFailed when git is missing, did not finish in
    ``timeout`` seconds, or exited with a code not in ``accept``. ``background``: no pipes, so
    that a child git detaches from (and may outlive) the call."""
    git = git_executable()
    if git is None:
        raise GitCliFailed("git is not installed")
    output = subprocess.DEVNULL if background else subprocess.PIPE
    try:
        done = subprocess.run([git, "-C", str(root), *args], stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                              timeout=timeout, env=clean_env(env), check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitCliFailed(f"git {_command(args)} did not finish ({error})") from None
    if done.returncode not in accept:
        stderr = (done.stderr or b"").decode("utf-8", "replace").strip()
        raise GitCliFailed(f"git {_command(args)} failed ({done.returncode}): {stderr[:300]}")
    return done
