"""Talking to the remote: fetch into the tracking ref, push without ever forcing, and how far
the branch is ahead of and behind what was fetched."""

from __future__ import annotations

import pygit2

from .auth import Credentials, StoreCallbacks
from .cli_join import fetch_with_cli
from .errors import GitStoreError, RemoteError
from .repo import StoreRepo
from .trees import head_commit


class PushRejected(RemoteError):
    """The remote refused the push (it moved on meanwhile); fetch, integrate, and retry."""


def fetch(store: StoreRepo, credentials: Credentials | None = None, with_cli: bool = False) -> str | None:
    """Fetch the branch into its tracking ref. ``with_cli`` (a joining machine's fetch of the whole
    history): by the git command line when it can, else, or when it fails, by libgit2; then the
    reason git's command line did not do it is returned, for the join to say."""
    why_not = fetch_with_cli(store, credentials) if with_cli else None
    if with_cli and why_not is None:
        return None
    try:
        remote = store.repo.remotes[store.remote]
    except KeyError:
        raise GitStoreError(f"{store.root}: no remote {store.remote!r}; run `distilld init --remote URL`") from None
    refspec = f"+refs/heads/{store.branch}:{store.tracking_ref}"
    try:
        remote.fetch([refspec], callbacks=StoreCallbacks(credentials))
    except (pygit2.GitError, OSError) as error:
        raise RemoteError(f"fetch from {remote.url} failed: {error}") from None
    return why_not


def push(store: StoreRepo, credentials: Credentials | None = None) -> None:
    remote = store.repo.remotes[store.remote]
    callbacks = StoreCallbacks(credentials)
    spec = f"{store.branch_ref}:{store.branch_ref}"  # no leading '+': never a force-push
    try:
        remote.push([spec], callbacks=callbacks)
    except (pygit2.GitError, OSError) as error:
        text = str(error)
        rejected = ("not present locally", "fast-forward", "fastforward", "fetch first")
        if any(words in text for words in rejected):
            raise PushRejected(f"push to {remote.url} rejected: {text}") from None
        raise RemoteError(f"push to {remote.url} failed: {text}") from None
    if callbacks.rejected:
        raise PushRejected(f"push to {remote.url} rejected: {'; '.join(callbacks.rejected)}")


def tracking_head(store: StoreRepo) -> pygit2.Oid | None:
    ref = store.repo.references.get(store.tracking_ref)
    target = ref.resolve().target if ref is not None else None
    return target if isinstance(target, pygit2.Oid) else None


def rewound_since(store: StoreRepo, before: pygit2.Oid | None) -> str | None:
    """What to log when the remote's branch, fetched again, no longer holds the commit it held
    before (someone force-pushed it back); None when it only moved on, or did not move."""
    after = tracking_head(store)
    if before is None or after is None or before == after or store.repo.descendant_of(after, before):
        return None
    return (f"the remote {store.remote}/{store.branch} was rewound (force-pushed): it moved from "
            f"{str(before)[:7]} to {str(after)[:7]}, which does not hold {str(before)[:7]}; what this machine "
            "has that the remote lost goes back with the next push")


def ahead_behind(store: StoreRepo) -> tuple[int, int]:
    head = head_commit(store.repo)
    theirs = tracking_head(store)
    if head is None:
        return (0, 1 if theirs else 0)
    if theirs is None:
        return (sum(1 for _ in store.repo.walk(head.id)), 0)
    ahead, behind = store.repo.ahead_behind(head.id, theirs)
    return int(ahead), int(behind)
