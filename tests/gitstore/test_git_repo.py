"""`distilld init`: adopt a repository as it is or create one; attributes, the allow-list
ignore file, the repository's own config; nothing machine-local ever tracked."""

from __future__ import annotations

import gc
from pathlib import Path

import pygit2
import pytest
from builders import FIXED_NOW, healthy_store
from distilld.actions.sync import run_init, run_sync
from distilld.gitstore.errors import GitBusy, GitStoreError
from distilld.gitstore.merge import flatten
from distilld.gitstore.repo import BLOCK_END, BLOCK_START, open_store
from distilld.policy import load_policy
from gitmachines import GitCli, Machine, Origin, lifecycle_store

LOCAL_FILES = ("data/gc-log.jsonl", "data/gc-manifests/20261130T120000Z.json", "local/SPINE.md",
               "local/notes/x.md", "bin/distill-check-store.sh", ".lifecycle", ".status", ".token-saver",
               "distill-process.md", "distill-monitor.md", "craft/.testing.md.swp", "inbox/.draft.md",
               "craft/diagram.png", "notes.txt")


def init(root: Path, **kwargs: object) -> object:
    return run_init(root, load_policy(), lambda: FIXED_NOW, **kwargs)  # type: ignore[arg-type]


def with_local_files(root: Path) -> None:
    for path in LOCAL_FILES:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(b"machine-local\n")


def test_init_creates_a_repository_that_tracks_only_the_shared_set(tmp_path: Path, git: GitCli) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    with_local_files(root)
    outcome = init(root)
    repo = pygit2.Repository(str(root))
    assert outcome.report.created and outcome.report.branch == "main"  # type: ignore[attr-defined]
    assert repo.head.shorthand == "main" and repo.config.get_bool("core.autocrlf") is False
    tracked = set(flatten(repo.head.peel(pygit2.Commit).tree))
    assert ".gitattributes" in tracked and ".gitignore" in tracked
    assert {"SPINE.md", "CATALOG.md", "archive/LEDGER.md", "craft/testing.md", "evidence/craft/testing.md",
            "archive/old-notes.md"} <= tracked
    assert not tracked & set(LOCAL_FILES)
    for path in LOCAL_FILES:
        assert git(root, "check-ignore", "-q", path, check=False).returncode == 0, path
    for path in ("SPINE.md", "craft/new.md", "inbox/20261130T120000Z-ab12-x.md", "archive/LEDGER.md"):
        assert git(root, "check-ignore", "-q", path, check=False).returncode == 1, path
    attributes = (root / ".gitattributes").read_text()
    assert "* -text" in attributes and "-filter" in attributes and "-working-tree-encoding" in attributes
    message = repo.head.peel(pygit2.Commit).message
    assert message.startswith("distilld: adopt the store") and "Distilld-Operation: adopt" in message


def test_init_again_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    init(root)
    head = str(pygit2.Repository(str(root)).head.target)
    again = init(root)
    assert again.report.wrote == [] and again.commit.commit is None  # type: ignore[attr-defined]
    assert str(pygit2.Repository(str(root)).head.target) == head


def test_an_existing_repository_is_adopted_as_it_is(tmp_path: Path, git: GitCli) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    git(root, "init", "-q", "-b", "trunk")
    (root / ".gitignore").write_text("# the user's own line\n*.tmp\n")
    git(root, "add", "SPINE.md", ".gitignore")
    git(root, "commit", "-q", "-m", "the user's first commit")
    first = git(root, "rev-parse", "HEAD").stdout.strip()
    outcome = init(root)
    assert not outcome.report.created and outcome.report.branch == "trunk"  # type: ignore[attr-defined]
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "trunk"
    assert git(root, "rev-parse", "HEAD~1").stdout.strip() == first
    ignore = (root / ".gitignore").read_text()
    assert ignore.startswith("# the user's own line\n*.tmp\n" + BLOCK_START)
    assert ignore.rstrip().endswith(BLOCK_END)
    assert open_store(root).branch == "trunk"
    with pytest.raises(GitStoreError, match="never switches branches"):
        init(root, branch="main")


def test_a_store_inside_another_repository_is_refused(tmp_path: Path, git: GitCli) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    root = tmp_path / "store"
    healthy_store(root)
    with pytest.raises(GitStoreError, match="lies inside the git repository"):
        init(root)


def test_a_detached_head_is_not_adopted(tmp_path: Path, git: GitCli) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    init(root)
    git(root, "checkout", "-q", "--detach")
    with pytest.raises(GitBusy, match="detached"):
        init(root)


def test_the_remote_lives_in_the_repository_config_only(tmp_path: Path) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    init(root, remote_url=str(tmp_path / "nowhere.git"))
    repo = pygit2.Repository(str(root))
    assert repo.remotes["origin"].url == str(tmp_path / "nowhere.git")
    tracked = flatten(repo.head.peel(pygit2.Commit).tree)
    assert not any(b"nowhere.git" in repo[oid].data for oid, _ in tracked.values())
    with pytest.raises(GitStoreError, match="already points at"):
        init(root, remote_url=str(tmp_path / "elsewhere.git"))


def test_a_machine_holding_a_copy_of_the_store_joins(tmp_path: Path) -> None:
    """Files identical to the remote's are no obstacle; a differing one is named, and nothing moves."""
    origin = tmp_path / "origin.git"
    pygit2.init_repository(str(origin), bare=True, initial_head="main")
    first = tmp_path / "first"
    healthy_store(first)
    init(first, remote_url=str(origin))
    assert run_sync(first, load_policy(), lambda: FIXED_NOW).pushed
    copy = tmp_path / "copy"
    healthy_store(copy)
    joined = init(copy, remote_url=str(origin))
    assert joined.checked_out == str(pygit2.Repository(str(origin)).head.target)  # type: ignore[attr-defined]
    edited = tmp_path / "edited"
    healthy_store(edited).write("craft/testing.md", "an edit made by hand\n")
    with pytest.raises(GitStoreError, match=r"differ from the remote's \(craft/testing.md\)"):
        init(edited, remote_url=str(origin))
    assert (edited / "craft/testing.md").read_bytes() == b"an edit made by hand\n"
    assert pygit2.Repository(str(edited)).head_is_unborn


def test_joining_never_drops_what_the_user_staged_before_a_first_commit(tmp_path: Path, git: GitCli) -> None:
    origin = tmp_path / "origin.git"
    pygit2.init_repository(str(origin), bare=True, initial_head="main")
    first = tmp_path / "first"
    healthy_store(first)
    init(first, remote_url=str(origin))
    assert run_sync(first, load_policy(), lambda: FIXED_NOW).pushed
    copy = tmp_path / "copy"
    healthy_store(copy).write("craft/mine.md", "# Mine\n\n- a note of my own, staged but not committed\n")
    git(copy, "init", "-q", "-b", "main")
    git(copy, "add", "-A")
    with pytest.raises(GitStoreError, match=r"staged in this repository before its first commit"):
        init(copy, remote_url=str(origin))
    assert (copy / "craft/mine.md").read_bytes() == b"# Mine\n\n- a note of my own, staged but not committed\n"
    assert "craft/mine.md" in [entry.path for entry in pygit2.Repository(str(copy)).index]


def test_an_operation_on_a_store_without_git_still_runs(tmp_path: Path) -> None:
    machine = Machine("plain", tmp_path / "plain", Origin(tmp_path / "none.git"))
    lifecycle_store(machine.root)
    report, record = machine.gc()
    assert report.ok and report.outcome and report.outcome.moved and record.result is None


def test_a_sync_with_commits_turned_off_leaves_the_agents_edits_uncommitted(tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    pygit2.init_repository(str(origin), bare=True, initial_head="main")
    store = tmp_path / "store"
    healthy_store(store)
    init(store, remote_url=str(origin))
    head_before = str(pygit2.Repository(str(store)).head.target)
    (store / "craft/testing.md").write_bytes((store / "craft/testing.md").read_bytes() + b"- an agent's new line\n")
    report = run_sync(store, load_policy(), lambda: FIXED_NOW, commit_agents=False)
    assert report.pushed and not report.commits  # what was committed went out; the edit did not
    repo = pygit2.Repository(str(store))
    assert str(repo.head.target) == head_before
    assert "craft/testing.md" in repo.status()
    assert str(pygit2.Repository(str(origin)).head.target) == head_before


def test_a_large_folders_tree_is_read_once_and_then_kept_in_libgit2s_cache(tmp_path: Path) -> None:
    """A commit looks up several paths of a folder's tree; a tree over libgit2's default 4 KiB
    limit would be read and inflated again for each lookup."""
    import distilld.gitstore.repo  # noqa: F401  (what sets the limit, on import)

    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    blob = repo.create_blob(b"x\n")
    builder = repo.TreeBuilder()
    for n in range(4000):  # about 170 KB of tree, as a folder of the x100 benchmark store
        builder.insert(f"file-{n:04}.md", blob, pygit2.enums.FileMode.BLOB)
    tree_id = builder.write()
    reopened = pygit2.Repository(repo.path)  # a fresh handle: nothing of the tree cached yet
    gc.collect()  # no other repository's cache freed between the two readings
    before = pygit2.settings.cached_memory[0]
    tree = reopened[tree_id].peel(pygit2.Tree)
    assert tree["file-3999.md"].id == blob
    assert pygit2.settings.cached_memory[0] - before >= 4000 * len("file-0000.md")


def test_a_tests_own_undo_keeps_git_away_from_the_real_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setenv("HOME", "/")
    monkeypatch.undo()
    assert os.environ["HOME"] == str(tmp_path / "distilld-home") and os.environ["GIT_CONFIG_NOSYSTEM"] == "1"
