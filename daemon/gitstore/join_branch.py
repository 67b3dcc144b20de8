"""Which branch a joining machine keeps the store on. `git clone` follows the remote's default
branch; a join that fetched ``main`` from a remote keeping the store on ``trunk`` would find
nothing, make a store-less first commit, and push it as a second, unrelated branch."""

from __future__ import annotations

import pygit2

from ..store.paths import SPINE
from .auth import Credentials, StoreCallbacks
from .errors import GitStoreError
from .repo import BRANCH_KEY, InitReport, StoreRepo

HEADS = "refs/heads/"


def remote_branches(store: StoreRepo, credentials: Credentials | None) -> tuple[list[str], str | None] | None:
    """The remote's branches and the one its HEAD names (None when it names none it has), or
    None when the remote cannot be asked (the fetch then says why)."""
    try:
        heads = store.repo.remotes[store.remote].list_heads(callbacks=StoreCallbacks(credentials))
    except (KeyError, pygit2.GitError, OSError):
        return None
    names = sorted(h.name.removeprefix(HEADS) for h in heads if h.name and h.name.startswith(HEADS))
    default = next((h.symref_target for h in heads if h.name == "HEAD" and h.symref_target), None)
    default_name = default.removeprefix(HEADS) if default else None
    return names, default_name if default_name in names else None


def choose_join_branch(store: StoreRepo, report: InitReport, credentials: Credentials | None,
                       explicit: bool) -> bool:
    """After a joining machine's first fetch (no commit yet) found no branch of ours: when the
    remote has other branches, follow its default (or only) one if this run created the
    repository for an empty folder (True: fetch again), else stop and say which branches it has.
    ``explicit``: --branch was given, and is kept."""
    found = None if explicit else remote_branches(store, credentials)
    if found is None:
        return False
    names, default = found
    if not names or store.branch in names:
        return False
    pick = default or (names[0] if len(names) == 1 else None)
    if pick is not None and report.created and not (store.root / SPINE).exists():
        wanted = store.branch
        store.repo.set_head(HEADS + pick)
        store.repo.config[BRANCH_KEY] = pick
        store.branch = report.branch = pick
        report.notes.append(f"the remote keeps the store on branch {pick!r} and has no {wanted!r}: "
                            f"this machine follows {pick!r}")
        return True
    suggestion = pick or names[0]
    raise GitStoreError(f"{store.root}: the remote has no branch {store.branch!r} (its branches: {', '.join(names)}); "
                        f"pass --branch {suggestion} to join the store kept there, or --branch {store.branch} to "
                        f"start {store.branch!r} on the remote beside it")
