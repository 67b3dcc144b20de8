"""Errors of the git-backed store. Exit codes follow the CLI: 7 skipped or blocked, 8 the remote
failed, 2 error."""

from __future__ import annotations

from ..errors import DistilldError
from ..exits import SYNC_FAILED, SYNC_SKIPPED, USAGE


class GitStoreError(DistilldError):
    """The repository cannot be used as it is; the message names it and what to do."""

    exit_code = USAGE


class NotAStoreRepo(GitStoreError):
    """The store is not a git repository distilld has adopted (run `distilld init`)."""


class GitBusy(DistilldError):
    """git is busy or the repository is somewhere distilld must not act (index.lock, a merge or
    rebase in progress, a detached HEAD, another branch): skipped, to retry later."""

    exit_code = SYNC_SKIPPED


class CommitRefused(DistilldError):
    """A path may not be committed (local, a symlink, conflict markers, staged by the user)."""

    exit_code = SYNC_SKIPPED


class RemoteError(DistilldError):
    """The remote could not be reached or refused us; the commits wait locally."""

    exit_code = SYNC_FAILED
