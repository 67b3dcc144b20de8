"""A joining machine's git work through the git command line, which is several times faster than
libgit2 at it: the fetch of the whole history (git's pack transfer and multi-threaded indexing),
the search of every incoming file for conflict markers, and
the files of the first checkout.

Each function says when it could not do its part (git missing, credentials git cannot be given,
git failed) and the caller then does it with pygit2; what happens to the store is the same. The
credentials are those given to distilld and nothing else: no ssh config, no credential helper,
no prompt; ssh host keys must be known, as with libgit2 (auth.py).
"""

from __future__ import annotations

import re
import shlex

import pygit2

from .auth import CONNECT_TIMEOUT_MS, IO_TIMEOUT_MS, Credentials
from .gitcli import GitCliFailed, join_git_problem, run_git
from .repo import StoreRepo

FETCH_TIMEOUT_SECONDS = 3600.0  # the whole transfer; a stalled one stops after the I/O timeout
LOCAL_TIMEOUT_SECONDS = 600.0
TOKEN_VARIABLE = "DISTILLD_GIT_TOKEN"
USER_VARIABLE = "DISTILLD_GIT_USER"
# Answers git's credential requests with the token, read from the environment (never the argv).
TOKEN_HELPER = (f'!f() {{ test "$1" = get || exit 0; echo "username=${USER_VARIABLE}"; '
                f'echo "password=${TOKEN_VARIABLE}"; }}; f')
SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/:]+)@)?(?P<host>[^/:]+):")
URL_USER = re.compile(r"^[a-z+]+://(?:(?P<user>[^@/]+)@)?")


def transport(url: str) -> str:
    """"local", "ssh", "http" or "other", the way git reads a remote's URL."""
    lowered = url.lower()
    if lowered.startswith(("ssh://", "git+ssh://", "ssh+git://")):
        return "ssh"
    if lowered.startswith(("http://", "https://")):
        return "http"
    if lowered.startswith("file://") or "://" not in url and not SCP_LIKE.match(url):
        return "local"
    if "://" not in url:
        return "ssh"  # host:path, user@host:path
    return "other"


def url_user(url: str) -> str | None:
    found = SCP_LIKE.match(url) if "://" not in url else URL_USER.match(url)
    return found.group("user") if found and found.group("user") else None


def _config_env(pairs: list[tuple[str, str]]) -> dict[str, str]:
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for n, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return env


def fetch_env(url: str, credentials: Credentials) -> dict[str, str] | None:
    """The environment that gives git exactly distilld's credentials and timeouts for ``url``;
    None when git cannot be given them (a key file with a passphrase: ssh would ask for it)."""
    kind = transport(url)
    user = url_user(url) or credentials.ssh_user
    # No credential helper of the user's (libgit2 uses none), never interactive.
    pairs = [("credential.helper", ""), ("credential.interactive", "never")]
    env: dict[str, str] = {}
    if kind == "ssh":
        if credentials.ssh_key is not None and credentials.passphrase:
            return None
        ssh = ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
               "-o", f"ConnectTimeout={CONNECT_TIMEOUT_MS // 1000}", "-o", "ServerAliveInterval=15",
               "-o", f"ServerAliveCountMax={max(1, IO_TIMEOUT_MS // 15_000)}"]
        if url_user(url) is None:
            ssh += ["-l", user]
        if credentials.ssh_key is not None:
            ssh += ["-o", "IdentitiesOnly=yes", "-i", str(credentials.ssh_key)]
        else:
            ssh += ["-o", "IdentityFile=none"]  # the agent's keys only, as libgit2
        if not credentials.use_agent:
            ssh += ["-o", "IdentityAgent=none"]
        env["GIT_SSH_COMMAND"] = shlex.join(ssh)
        env["GIT_SSH_VARIANT"] = "ssh"
    elif kind == "http":
        pairs += [("http.lowSpeedLimit", "1"), ("http.lowSpeedTime", str(IO_TIMEOUT_MS // 1000))]
        if credentials.token:
            pairs.append(("credential.helper", TOKEN_HELPER))
            env.update({TOKEN_VARIABLE: credentials.token, USER_VARIABLE: user})
    return {**env, **_config_env(pairs)}


def fetch_with_cli(store: StoreRepo, credentials: Credentials | None) -> str | None:
    """Fetch the branch into its tracking ref with git; None when done, else why not."""
    problem = join_git_problem()
    if problem is not None:
        return problem
    try:
        url = store.repo.remotes[store.remote].url
    except KeyError:
        return f"no remote {store.remote!r}"
    env = fetch_env(url or "", credentials or Credentials())
    if env is None:
        return "the ssh key has a passphrase, which only libgit2 can be given"
    refspec = f"+{store.branch_ref}:{store.tracking_ref}"
    try:
        run_git(store.root, ["fetch", "--quiet", "--no-auto-gc", "--no-recurse-submodules", store.remote, refspec],
                FETCH_TIMEOUT_SECONDS, env)
    except GitCliFailed as error:
        if "couldn't find remote ref" in str(error):
            return None  # the remote has no such branch yet: nothing to fetch, as with libgit2
        return str(error)
    return None


def marker_candidates(store: StoreRepo, commit: pygit2.Oid) -> set[str] | None:
    """The paths of ``commit`` with a line starting ``<<<<<<<``: every file that can hold a
    conflict (and more), found by git grep over the commit's blobs. None when git could not."""
    if join_git_problem() is not None:
        return None
    try:
        done = run_git(store.root, ["grep", "--no-color", "-l", "-z", "-G", "--no-textconv", "-e", "^<<<<<<<",
                                    str(commit), "--"], LOCAL_TIMEOUT_SECONDS, accept=(0, 1))
    except GitCliFailed:
        return None
    prefix = f"{commit}:"
    names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return {name.removeprefix(prefix) for name in names if name}


def read_tree_with_cli(store: StoreRepo, commit: pygit2.Oid) -> str | None:
    """The files and the index of a first checkout of ``commit`` onto an unborn branch, written
    by git (``read-tree -m -u`` refuses to overwrite any file it does not track); the caller
    checks what was written and then creates the branch. None when done, else why git could
    not; the caller then checks out with libgit2, which also says which files are in the way."""
    problem = join_git_problem()
    if problem is not None:
        return problem
    try:
        # No sparse checkout from the user's configuration: libgit2 writes every file, and so must git.
        run_git(store.root, ["-c", "core.sparseCheckout=false", "read-tree", "-m", "-u", str(commit)],
                LOCAL_TIMEOUT_SECONDS)
    except GitCliFailed as error:
        return str(error)
    return None
