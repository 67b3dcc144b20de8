"""git: init (adopt or create the store's repository) and sync. pygit2 loads only when they run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ._common import emit_report, json_option, now, policy, store_command, store_path

F = TypeVar("F", bound=Callable[..., Any])


def _git_identity(name: str, email: str) -> Any:
    from ..gitstore.commit import Identity

    return Identity(name, email)


def _git_credentials(ssh_key: Path | None) -> Any:
    from ..gitstore.auth import Credentials

    return Credentials(ssh_key=ssh_key)


def _extra_folders() -> tuple[str, ...]:
    """git.extra_folders from the settings, all of which are checked (a bad config is refused):
    the folders synced as they are. pydantic loads only for settings it alone can judge."""
    from ..plain_settings import checked_extra_folders
    from ..store.paths import set_extra_synced_folders

    extra = checked_extra_folders()
    set_extra_synced_folders(extra)
    return extra


def git_options(command: F) -> F:
    """Author and credential options shared by `init` and `sync` (machine-local, never stored)."""
    command = click.option("--ssh-key", type=click.Path(path_type=Path, dir_okay=False), envvar="DISTILLD_SSH_KEY",
                           help="Private key for an ssh remote (its .pub beside it); else the ssh agent.")(command)
    command = click.option("--author-email", default="distilld@localhost", show_default=True,
                           envvar="DISTILLD_GIT_EMAIL", help="Email on distilld's commits.")(command)
    command = click.option("--author-name", default="distilld", show_default=True,
                           envvar="DISTILLD_GIT_NAME", help="Name on distilld's commits.")(command)
    return command


@store_command()
@click.option("--remote", "remote_url", metavar="URL",
              help="Remote to sync with; kept in the repository's own .git/config, never in the store.")
@click.option("--branch", metavar="NAME",
              help="Branch of a new repository (default main). An existing repository keeps its branch.")
@git_options
@json_option("the outcome")
@click.pass_context
def init(ctx: click.Context, remote_url: str | None, branch: str | None, author_name: str,
         author_email: str, ssh_key: Path | None, as_json: bool) -> None:
    """Make the store a git repository, or adopt the one it already is.

    An existing repository is used as it is: never re-initialised, never switched to another
    branch. distilld writes .gitattributes (no line-ending or content conversion), an allow-list
    .gitignore (only SPINE.md, CATALOG.md, the tier folders, evidence/, archive/ and inbox/ are
    tracked; data/, local/, bin/ and dotfiles never are), sets core.autocrlf=false for this
    repository, and commits what is shared. With --remote and no commit yet, the remote's branch
    is checked out first: that is how a second machine joins. Exit 1 on a byte mismatch.
    To create a new, empty store, use `distilld new`.
    """
    from ..actions import sync as sync_action
    from ..store.unmanaged import unmanaged_folders

    extra = _extra_folders()
    outcome = sync_action.run_init(store_path(ctx), policy(ctx), now, remote_url, branch,
                                   _git_identity(author_name, author_email), _git_credentials(ssh_key))
    outcome.report.notes += [f.describe() for f in unmanaged_folders(outcome.report.root, extra)]
    emit_report("init", outcome, as_json, sync_action.render_init_text, sync_action.render_init_json)
    ctx.exit(1 if outcome.mismatches else 0)


@store_command()
@click.option("--remote", "remote_name", metavar="NAME",
              help="Remote to sync with (default: the one `distilld init` set up, origin).")
@git_options
@json_option("the report")
@click.pass_context
def sync(ctx: click.Context, remote_name: str | None, author_name: str, author_email: str,
         ssh_key: Path | None, as_json: bool) -> None:
    """Commit what agents wrote, fetch, take in the remote's changes, verify the bytes, push.

    Behind: a fast-forward that never overwrites uncommitted edits. Diverged: a merge by the
    store's rules (ledger lines united in stamp order, the catalog rebuilt, a file changed on both
    machines kept whole in inbox/), committed only if the store still passes C1-C3. Pushes
    whenever ahead; never force-pushes. A sync asked for by hand always runs at once, whatever
    the backoff of failed scheduled ones. Exit 0 in sync; 7 skipped (git busy, a distillation
    holds the lock) or blocked; 8 offline, push failed, or a byte mismatch; 2 on errors.
    """
    from ..actions import sync as sync_action

    _extra_folders()
    report = sync_action.run_sync(store_path(ctx), policy(ctx), now, _git_identity(author_name, author_email),
                                  _git_credentials(ssh_key), remote=remote_name)
    emit_report("sync", report, as_json, sync_action.render_sync_text, sync_action.render_sync_json)
    ctx.exit(sync_action.sync_exit_code(report))


COMMANDS = (init, sync)
