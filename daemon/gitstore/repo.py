"""The store's repository: adopt an existing one as it is, or create one; keep its
attributes, its allow-list ignore file and its repository-local config; say when git is busy.

distilld's machine-local choices (which branch and which remote it syncs) live in the
repository's own ``.git/config`` under ``distilld.*``: never in a tracked file.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from pygit2.enums import ObjectType, RepositoryState

from ..store import fs
from ..store.paths import SHARED_DIRS, extra_synced_folders
from ..store.root_access import is_a_file_line, require_writable
from .errors import GitBusy, GitStoreError, NotAStoreRepo

ATTRIBUTES = ".gitattributes"
IGNORE = ".gitignore"
MANAGED_FILES: tuple[str, ...] = (ATTRIBUTES, IGNORE)
BLOCK_START = "# >>> distilld (managed block: `distilld init` rewrites it) >>>"
BLOCK_END = "# <<< distilld <<<"

# The ledger's checksums are over raw bytes: no line-ending, encoding or filter conversion,
# whatever a machine's own git configuration says.
ATTRIBUTE_LINES: tuple[str, ...] = ("* -text -eol -crlf -ident -filter -working-tree-encoding",)

# An allow-list: everything is ignored, then the shared set is let back in. Machine-local
# files (data/, local/, bin/, dotfiles such as .lock and .lifecycle, the updater's instruction
# files) are never named, so they stay ignored wherever they appear.
IGNORE_LINES: tuple[str, ...] = (
    "*",
    "!*/",
    "!*.md",
    "/*/",
    *(f"!/{name}/" for name in SHARED_DIRS),
    "/*.md",
    "!/SPINE.md",
    "!/CATALOG.md",
    ".*",
    "!/.gitignore",
    "!/.gitattributes",
)

# A folder of a large store is one tree of thousands of entries (170 KB at x100), far over
# libgit2's default 4 KiB limit for caching trees: without a higher one, every path looked up
# in a commit or a merge reads and inflates its folder's tree again (16 ms of a 22 ms commit of
# three files at x100). Process-wide. The cache's total is bounded below libgit2's 256 MiB,
# because a walk of the whole history (the report) would otherwise keep every version of every
# large tree it passes, which it never reads twice.
TREE_CACHE_LIMIT = 8 << 20
OBJECT_CACHE_TOTAL = 48 << 20
pygit2.settings.cache_object_limit(ObjectType.TREE, TREE_CACHE_LIMIT)
pygit2.settings.cache_max_size(OBJECT_CACHE_TOTAL)


def ignore_lines() -> tuple[str, ...]:
    """The allow-list, with the folders the user chose to sync (git.extra_folders) let in too."""
    extra = tuple(f"!/{name}/" for name in extra_synced_folders())
    at = IGNORE_LINES.index("/*.md")
    return (*IGNORE_LINES[:at], *extra, *IGNORE_LINES[at:])


BRANCH_KEY = "distilld.branch"
REMOTE_KEY = "distilld.remote"
DEFAULT_BRANCH = "main"
DEFAULT_REMOTE = "origin"
STATE_DIR = "distilld"  # inside .git: machine-local state (backoff, pending index repair)


@dataclass
class StoreRepo:
    """An adopted store repository and the branch and remote distilld works with."""

    repo: pygit2.Repository
    root: Path
    branch: str
    remote: str

    @property
    def branch_ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def tracking_ref(self) -> str:
        return f"refs/remotes/{self.remote}/{self.branch}"

    @property
    def state_dir(self) -> Path:
        return Path(self.repo.path) / STATE_DIR

    def has_remote(self) -> bool:
        return self.remote in self.repo.remotes.names()


@dataclass
class InitReport:
    root: Path
    created: bool
    branch: str
    remote_url: str | None
    wrote: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def write_state_file(path: Path, data: bytes) -> None:
    """Replace a file of distilld's machine-local state inside .git atomically. No fsync: it only
    has to survive a crash of distilld, not of the machine (losing it loses a backoff or a
    pending index repair, never store data)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(fs.temp_name(path.name))  # the one temp pattern, swept once we are gone
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _workdir(repo: pygit2.Repository) -> Path | None:
    return Path(repo.workdir).resolve() if repo.workdir else None


def discover(store: Path) -> pygit2.Repository | None:
    """The repository whose work tree is exactly the store; None when there is none.

    A store inside a bigger repository is refused rather than adopted: syncing would commit
    or pull that repository's other files.
    """
    root = store.expanduser().resolve()
    if not root.is_dir():
        raise GitStoreError(f"{root}: no such store directory (create it, or pass the store's path)")
    gitdir = pygit2.discover_repository(str(root))
    if gitdir is None:
        return None
    repo = pygit2.Repository(gitdir)
    workdir = _workdir(repo)
    if workdir is None:
        raise GitStoreError(f"{root}: {gitdir} is a bare repository; a store needs a work tree")
    if workdir != root:
        raise GitStoreError(
            f"{root} lies inside the git repository at {workdir}; distilld keeps a store in a repository "
            "of its own. Move the store out of that repository (or make it its own repository with "
            "`git init` in the store), then run `distilld init` again."
        )
    return repo


def open_store(store: Path) -> StoreRepo:
    """The adopted repository of ``store``; NotAStoreRepo until `distilld init` has run."""
    root = store.expanduser().resolve()
    repo = discover(root)
    if repo is None:
        raise NotAStoreRepo(f"{root}: not a git repository; run `distilld init {store}` first")
    config = repo.config
    if BRANCH_KEY not in config:
        raise NotAStoreRepo(f"{root}: this repository was not set up by distilld; run `distilld init {store}`")
    remote = str(config[REMOTE_KEY]) if REMOTE_KEY in config else DEFAULT_REMOTE
    return StoreRepo(repo, root, str(config[BRANCH_KEY]), remote)


@dataclass(frozen=True)
class CommittedFile:
    commit: str  # the commit's id, abbreviated
    data: bytes


def committed_file(root: Path, path: str) -> CommittedFile | None:
    """The bytes ``path`` has in the last commit (HEAD) of the store's own repository: one blob
    read, no history walked. None when the store is not a repository of its own (a store inside
    a bigger one included), HEAD is unborn, or that commit holds no such file. Read-only."""
    if not os.path.lexists(root / ".git"):
        return None
    try:
        repo = pygit2.Repository(str(root))
        if _workdir(repo) != root.resolve() or repo.head_is_unborn:
            return None
        commit = repo.head.peel(pygit2.Commit)
        entry = commit.tree[path]
    except (pygit2.GitError, KeyError):
        return None
    if not isinstance(entry, pygit2.Blob):
        return None
    return CommittedFile(str(commit.id)[:12], entry.data)


def current_branch(repo: pygit2.Repository) -> str | None:
    """The branch HEAD names (born or not); None when HEAD is detached."""
    if repo.head_is_detached:
        return None
    target = repo.references["HEAD"].target
    name = target if isinstance(target, str) else ""
    return name.removeprefix("refs/heads/") if name.startswith("refs/heads/") else None


def _has_no_branch(repo: pygit2.Repository) -> bool:
    """Is HEAD unborn with no branch at all (a fresh `git init`, or a join that never got its
    first commit)? Then naming another branch switches nothing."""
    return repo.head_is_unborn and not any(name.startswith("refs/heads/") for name in repo.references)


def init_store(store: Path, branch: str | None = None, remote_url: str | None = None,
               remote: str = DEFAULT_REMOTE) -> tuple[StoreRepo, InitReport]:
    """Adopt the store's repository as it is, or create one on ``branch`` (default main).

    Never re-initialises and never switches the branch: an existing repository must already be
    on the branch asked for. Sets the repository's own config and the remote; the attribute and
    ignore files are ``write_managed_files``' job (after a first checkout, which they would block).
    """
    root = store.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise GitStoreError(is_a_file_line(root))
    require_writable(root)  # before git makes .git/: a refusal, not libgit2's traceback
    root.mkdir(parents=True, exist_ok=True)
    repo = discover(root)
    created = repo is None
    if repo is None:
        repo = pygit2.init_repository(str(root), initial_head=branch or DEFAULT_BRANCH)
    on = current_branch(repo)
    if on is None:
        raise GitBusy(f"{root}: HEAD is detached; check out the branch distilld should keep the store on, "
                      "then run `distilld init` again")
    if branch is not None and on != branch and _has_no_branch(repo):
        repo.set_head(f"refs/heads/{branch}")  # no commit anywhere yet: nothing on disk changes
        on = branch
    if branch is not None and on != branch:
        raise GitStoreError(f"{root}: the repository is on branch {on!r}, not {branch!r}; distilld never "
                            f"switches branches. Switch it yourself, or pass --branch {on}")
    config = repo.config
    config["core.autocrlf"] = False  # overrides a global autocrlf=true for this repository
    config["core.safecrlf"] = False
    config[BRANCH_KEY] = on
    config[REMOTE_KEY] = remote
    write_info_attributes(repo)
    report = InitReport(root, created, on, remote_url)
    if remote_url is not None:
        set_remote(repo, remote, remote_url)
    elif remote in repo.remotes.names():
        report.remote_url = repo.remotes[remote].url
    return StoreRepo(repo, root, on, remote), report


def set_remote(repo: pygit2.Repository, name: str, url: str) -> None:
    if name in repo.remotes.names():
        existing = repo.remotes[name].url
        if existing != url:
            raise GitStoreError(
                f"{repo.workdir}: remote {name!r} already points at {existing}; distilld will not change it. "
                f"Run `git remote set-url {name} {url}` yourself if that is what you want."
            )
        return
    repo.remotes.create(name, url)


def _with_block(existing: str, lines: tuple[str, ...]) -> str:
    """``existing`` with distilld's block replaced, or appended last (so that it wins: in both
    files the last matching line decides). The user's own lines are kept."""
    ending = "\r\n" if "\r\n" in existing else "\n"
    block = ending.join((BLOCK_START, *lines, BLOCK_END)) + ending
    start, end = existing.find(BLOCK_START), existing.find(BLOCK_END)
    if start != -1 and end > start:
        after = existing[end + len(BLOCK_END):]
        after = after[len(ending):] if after.startswith(ending) else after.lstrip("\r\n")
        return existing[:start] + block + after
    if existing and not existing.endswith("\n"):
        existing += ending
    return existing + block


def _with_block_of(path: Path, lines: tuple[str, ...]) -> tuple[str, str]:
    """(the file's text, the text with distilld's block of ``lines``); a missing file is empty."""
    try:
        existing = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        existing = ""
    except (OSError, UnicodeDecodeError) as error:
        raise GitStoreError(f"{path}: cannot read it ({error}); fix or remove it, then run init again") from None
    return existing, _with_block(existing, lines)


def write_info_attributes(repo: pygit2.Repository) -> None:
    """distilld's attribute block in ``.git/info/attributes`` too: that file outranks every
    ``.gitattributes`` of the tree, so a line someone adds after the block (``*.md text
    eol=crlf``) cannot make a checkout, git's or libgit2's, convert a byte."""
    path = Path(repo.path) / "info" / "attributes"
    existing, wanted = _with_block_of(path, ATTRIBUTE_LINES)
    if wanted != existing:
        write_state_file(path, wanted.encode("utf-8"))


def write_managed_files(root: Path) -> list[str]:
    """Write distilld's block of .gitattributes and .gitignore; the names of files changed."""
    wrote: list[str] = []
    for name, lines in ((ATTRIBUTES, ATTRIBUTE_LINES), (IGNORE, ignore_lines())):
        path = root / name
        existing, wanted = _with_block_of(path, lines)
        if wanted != existing:
            fs.atomic_write(path, wanted.encode("utf-8"))
            wrote.append(name)
    return wrote


# -- is git quiet enough to act? -------------------------------------------------------------

STALE_GIT_LOCK_SECONDS = 600


def _lock_note(path: Path, what: str) -> str:
    try:
        age = int(time.time() - path.stat().st_mtime)
    except OSError:
        age = 0
    stale = (f"; it is {age} s old: if no git is running, a crashed one left it, and you may remove it"
             if age >= STALE_GIT_LOCK_SECONDS else "")
    return f"{path} is held ({what}){stale}"


def busy_reason(store: StoreRepo) -> str | None:
    """A reason to leave the repository alone for now, or None when distilld may act."""
    repo = store.repo
    gitdir = Path(repo.path)
    if (gitdir / "index.lock").exists():
        return _lock_note(gitdir / "index.lock", "another git process is using the index")
    for name in ("HEAD.lock", f"refs/heads/{store.branch}.lock"):
        if (gitdir / name).exists():
            return _lock_note(gitdir / name, "another git process is moving a branch")
    # A fetch killed half-way leaves this one: every later fetch fails on it, which is no
    # reason to call the remote offline and back off.
    if (gitdir / f"{store.tracking_ref}.lock").exists():
        return _lock_note(gitdir / f"{store.tracking_ref}.lock", "another git process is fetching")
    state = repo.state()
    if state != RepositoryState.NONE:
        return f"a git {state.name.lower().replace('_', ' ')} is in progress in {store.root}; finish or abort it"
    if repo.head_is_detached:
        return f"HEAD is detached in {store.root}; check out {store.branch} again"
    on = current_branch(repo)
    if on != store.branch:
        return f"{store.root} is on branch {on}, and distilld keeps {store.branch}; switch back to {store.branch}"
    index = repo.index
    index.read(False)
    if index.conflicts is not None:
        return f"the index of {store.root} holds unresolved conflicts; resolve them"
    return None


def require_quiet(store: StoreRepo) -> None:
    reason = busy_reason(store)
    if reason is not None:
        raise GitBusy(reason)
