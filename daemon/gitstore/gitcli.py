"""The one place distilld runs the git command line. Every use is optional: packing and
refreshing the index (which libgit2 cannot do), and a joining machine's fetch and first
checkout (which git does faster); each caller has a pygit2 path for when git is missing or fails.

git runs with a clean environment: nothing that points it at another repository, index or
object store (a distilld started from a git hook inherits GIT_DIR and GIT_INDEX_FILE), no
configuration injected through the environment, and never a prompt.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
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


# A join gives git distilld's credentials through GIT_CONFIG_COUNT (git 2.31): an older git
# ignores it, and would run the user's own credential helpers.
JOIN_MIN_VERSION = (2, 31)
PROBE_TIMEOUT_SECONDS = 10.0  # `git --version`: a git that cannot answer this hangs on the rest too
VERSION_RE = re.compile(rb"git version ((\d+)\.(\d+)\S*)")
_probed: dict[tuple[str, int, int], str | None] = {}


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
    done = _run([git, "-C", str(root), *args], timeout, clean_env(env), background)
    if done.returncode not in accept:
        stderr = (done.stderr or b"").decode("utf-8", "replace").strip()
        raise GitCliFailed(f"git {_command(args)} failed ({done.returncode}): {stderr[:300]}")
    return done


def _run(argv: list[str], timeout: float, env: dict[str, str], background: bool) -> subprocess.CompletedProcess[bytes]:
    """Run git in a session of its own: when it does not finish in time (or we are interrupted),
    the whole group goes, ssh and helpers included, not git alone."""
    output = subprocess.DEVNULL if background else subprocess.PIPE
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=env,
                                   start_new_session=True)
    except OSError as error:
        raise GitCliFailed(f"git {_command(argv[3:])} did not start ({error})") from None
    with process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise GitCliFailed(f"git {_command(argv[3:])} did not finish in {timeout:g} s") from None
        except BaseException:
            _kill_group(process)
            raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def join_git_problem() -> str | None:
    """Why the git command line cannot do a join's work (missing, not answering, too old), or
    None when it can. Asked once per git binary (its path, size and time)."""
    git = git_executable()
    if git is None:
        return "git is not installed"
    try:
        info = os.stat(git)
    except OSError as error:
        return f"git cannot be read ({error})"
    key = (git, info.st_mtime_ns, info.st_size)
    if key not in _probed:
        _probed[key] = _probe(git)
    return _probed[key]


def _probe(git: str) -> str | None:
    try:
        done = _run([git, "--version"], PROBE_TIMEOUT_SECONDS, clean_env(), False)
    except GitCliFailed:
        return f"{git} --version did not answer in {PROBE_TIMEOUT_SECONDS:g} s"
    found = VERSION_RE.search(done.stdout or b"")
    if done.returncode != 0 or found is None:
        return f"{git} --version did not say which git it is"
    if (int(found.group(2)), int(found.group(3))) < JOIN_MIN_VERSION:
        wanted = ".".join(map(str, JOIN_MIN_VERSION))
        return f"git {found.group(1).decode()} is older than {wanted}, which a join needs"
    return None
