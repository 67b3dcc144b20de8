"""A second machine joining as a hostile (or unlucky) user would: remotes of odd shapes, a git
that misbehaves, a join killed half-way and run again, a tree whose attributes ask for line-ending
conversion. Real repositories and real git throughout."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from distilld.actions.sync import run_init
from distilld.gitstore import cli_join, gitcli
from distilld.gitstore.errors import GitBusy, GitStoreError
from gitmachines import GitCli, Machine, Origin, lifecycle_store, pushed_machine, shared_files
from waiting import wait_for


def path_without_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "no-git-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))


def fake_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, script: str, name: str = "fake-git-bin") -> Path:
    """A `git` first on PATH running ``script`` (sh); ``$REAL_GIT`` is the real one."""
    bin_dir = tmp_path / name
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "git"
    real = next(Path(d, "git") for d in os.environ["PATH"].split(os.pathsep) if Path(d, "git").is_file())
    fake.write_text(f"#!/bin/sh\nREAL_GIT={real}\n{script}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def blobs_equal_files(machine: Machine) -> list[str]:
    """The tracked files whose bytes differ from HEAD's blob."""
    repo = machine.repo()
    tree = repo.head.peel(pygit2.Commit).tree
    differ = []
    for path, data in shared_files(machine.root).items():
        try:
            blob = tree[path]
        except KeyError:
            continue
        if blob.data != data:
            differ.append(path)
    return differ


# -- the tree's attributes never convert a byte ---------------------------------------------

@pytest.mark.parametrize("with_git", [True, False], ids=["git", "libgit2"])
def test_an_attribute_line_after_distillds_block_converts_nothing_on_join(
        tmp_path: Path, origin: Origin, git: GitCli, monkeypatch: pytest.MonkeyPatch, with_git: bool) -> None:
    a = pushed_machine(tmp_path, origin)
    a.write("craft/windows.md", b"# Windows\r\n\r\n- CRLF on purpose.\r\n")
    assert a.sync().pushed
    clone = tmp_path / "user-clone"
    git(tmp_path, "clone", "-q", origin.url, str(clone))
    attributes = (clone / ".gitattributes").read_bytes()
    (clone / ".gitattributes").write_bytes(attributes + b"* text=auto\n*.md text eol=crlf\n")
    git(clone, "commit", "-qm", "the user's own attributes, after distilld's block", ".gitattributes")
    git(clone, "push", "-q", "origin", "main")
    if not with_git:
        path_without_git(monkeypatch, tmp_path)
    b = Machine("b", tmp_path / "b", origin)
    outcome = b.init()
    assert outcome.mismatches == []
    assert blobs_equal_files(b) == []
    assert b.read("craft/windows.md") == b"# Windows\r\n\r\n- CRLF on purpose.\r\n"
    assert b.read("SPINE.md") == a.read("SPINE.md")
    assert b.repo().status() == {}


def test_a_machine_set_up_before_the_info_attributes_is_protected_by_its_next_sync(
        tmp_path: Path, origin: Origin, git: GitCli) -> None:
    a = pushed_machine(tmp_path, origin)
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    (b.root / ".git" / "info" / "attributes").unlink()  # as an older distilld left it
    clone = tmp_path / "user-clone"
    git(tmp_path, "clone", "-q", origin.url, str(clone))
    (clone / ".gitattributes").write_bytes((clone / ".gitattributes").read_bytes() + b"*.md text eol=crlf\n")
    git(clone, "commit", "-qm", "attributes after the block", ".gitattributes")
    git(clone, "push", "-q", "origin", "main")
    a.sync()
    a.append("ops/deploy.md", "- One more step.\n")
    assert a.later(5).sync().pushed
    report = b.later(10).sync()
    assert report.mismatches == []
    assert blobs_equal_files(b) == []
    assert b.read("ops/deploy.md") == a.read("ops/deploy.md")


# -- a remote whose default branch is not main ----------------------------------------------

def trunk_origin(tmp_path: Path, head: str = "trunk") -> tuple[Origin, Machine]:
    """A bare remote whose store lives on branch trunk (HEAD names ``head``), pushed by machine a."""
    origin = Origin(tmp_path / "trunk.git")
    repo = pygit2.init_repository(str(origin.path), bare=True, initial_head=head)
    assert repo.is_bare
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init(branch="trunk")
    assert a.sync().pushed
    return origin, a


@pytest.mark.parametrize("head", ["trunk", "gone"], ids=["head-is-trunk", "head-names-a-missing-branch"])
def test_a_join_follows_the_remotes_only_or_default_branch(tmp_path: Path, head: str) -> None:
    origin, a = trunk_origin(tmp_path, head)
    b = Machine("b", tmp_path / "b", origin)
    outcome = b.init()
    assert outcome.report.branch == "trunk"
    assert outcome.checked_out == origin.head("trunk")
    assert b.repo().head.shorthand == "trunk"
    assert b.read("SPINE.md") == a.read("SPINE.md")
    assert any("trunk" in note for note in outcome.report.notes)
    b.append("craft/testing.md", "- From b.\n")
    assert b.later(5).sync().pushed
    assert origin.head("main") is None  # no second, unrelated branch on the remote
    assert a.later(10).sync().mismatches == []
    assert a.read("craft/testing.md") == b.read("craft/testing.md")


def test_a_join_into_an_unborn_repository_on_another_branch_is_refused_naming_the_remotes(
        tmp_path: Path, git: GitCli) -> None:
    origin, _ = trunk_origin(tmp_path)
    b = Machine("b", tmp_path / "b", origin)
    b.root.mkdir()
    git(b.root, "init", "-q", "-b", "main")
    with pytest.raises(GitStoreError, match=r"no branch 'main'.*trunk.*--branch trunk"):
        b.init()
    assert origin.head("main") is None
    assert not (b.root / "SPINE.md").exists()
    outcome = b.init(branch="trunk")  # the advice works: an unborn HEAD is pointed at trunk
    assert outcome.checked_out == origin.head("trunk")
    assert b.repo().head.shorthand == "trunk"


# -- a join run again where a store stood before ---------------------------------------------

def test_a_join_runs_again_after_the_joined_store_was_deleted(tmp_path: Path, origin: Origin) -> None:
    a = pushed_machine(tmp_path, origin)
    a.later(60)
    report, _ = a.gc()  # the ledger gets lines, so the state folder keeps a copy of it
    assert report.outcome is not None and report.outcome.moved
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    shutil.rmtree(b.root)  # the user starts over
    outcome = b.init()
    assert outcome.checked_out == origin.head()
    assert outcome.mismatches == []
    assert b.read("archive/LEDGER.md") == a.read("archive/LEDGER.md")
    assert not [n for n in outcome.report.notes if "ledger" in n]  # nothing of the old copy was missing


def test_a_join_where_another_store_stood_keeps_its_ledger_lines_aside_and_says_where(
        tmp_path: Path, origin: Origin) -> None:
    pushed_machine(tmp_path, origin)
    other = Machine("b", tmp_path / "b", Origin.create(tmp_path / "other.git"))
    pushed_machine(tmp_path, other.origin, name="b")  # another store at b's path, with its own ledger
    other.later(60)
    report, _ = other.gc()
    assert report.outcome is not None and report.outcome.moved
    old_ledger = other.read("archive/LEDGER.md")
    shutil.rmtree(other.root)
    b = Machine("b", tmp_path / "b", origin)
    outcome = b.init()
    assert outcome.checked_out == origin.head()
    notes = [n for n in outcome.report.notes if "ledger" in n]
    assert len(notes) == 1, outcome.report.notes
    kept = Path(notes[0].split("kept in ")[1].split(";")[0].rstrip("."))
    assert kept.read_bytes() == old_ledger
    b.later(120)
    report, _ = b.gc()  # not wedged by the other store's ledger
    assert report.outcome is not None and report.outcome.moved


# -- a join killed half-way, then run again -------------------------------------------------

def killed_join(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, origin: Origin, target: Path, step: str) -> int:
    """`distilld init --remote` in its own process, SIGKILLed by the fake git the moment it is
    asked for ``step`` (the step itself then runs on, orphaned, as a real git would)."""
    finished = tmp_path / f"{step}-finished"
    fake_git(monkeypatch, tmp_path, f'for a in "$@"; do [ "$a" = {step} ] && {{ kill -9 $PPID; "$REAL_GIT" "$@"; '
                                    f'touch "{finished}"; exit; }}; done\nexec "$REAL_GIT" "$@"', name=f"kill-at-{step}")
    done = subprocess.run([sys.executable, "-m", "distilld", "init", str(target), "--remote", origin.url],
                          env=dict(os.environ), capture_output=True, timeout=120, check=False)
    return done.returncode


# read-tree is the last git step: the branch is libgit2's, made once the files are read back.
@pytest.mark.parametrize("step", ["fetch", "read-tree"])
def test_a_join_killed_at_any_git_step_runs_again_to_the_same_store(
        tmp_path: Path, origin: Origin, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    a = pushed_machine(tmp_path, origin)
    b = Machine("b", tmp_path / "b", origin)
    assert killed_join(tmp_path, monkeypatch, origin, b.root, step) == -9
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])  # the real git again
    # The orphaned git step finishes on its own.
    wait_for(lambda: (tmp_path / f"{step}-finished").exists(), 60, f"the orphaned git {step} to finish")
    outcome = b.init()
    assert outcome.mismatches == []
    assert b.head() == origin.head()
    assert {p: d for p, d in shared_files(b.root).items()} == shared_files(a.root)
    assert b.repo().status() == {}


# -- a remote given as a relative path ------------------------------------------------------

def test_a_relative_remote_path_is_kept_absolute_so_the_daemon_syncs_from_anywhere(
        tmp_path: Path, origin: Origin, monkeypatch: pytest.MonkeyPatch) -> None:
    a = pushed_machine(tmp_path, origin)
    b = Machine("b", tmp_path / "b", origin)
    monkeypatch.chdir(tmp_path)
    outcome = run_init(Path("b"), b.policy, b.clock, remote_url="origin.git", identity=b.identity)
    assert outcome.checked_out == origin.head()
    assert b.repo().remotes["origin"].url == str(origin.path)
    assert outcome.report.remote_url == str(origin.path)
    monkeypatch.chdir(tmp_path / "a")  # the daemon runs from elsewhere
    a.append("ops/deploy.md", "- A later step.\n")
    assert a.later(5).sync().pushed
    report = b.later(10).sync()
    assert report.state == "synced" and report.mismatches == [], report
    assert b.read("ops/deploy.md") == a.read("ops/deploy.md")


# -- a git that is missing, broken, too old or hangs: libgit2 joins, and the join says so ----

def joined_notes(tmp_path: Path, origin: Origin) -> tuple[Machine, list[str]]:
    b = Machine("b", tmp_path / "b", origin)
    outcome = b.init()
    assert outcome.checked_out == origin.head() and outcome.mismatches == []
    assert b.repo().status() == {}
    return b, outcome.report.notes


def test_a_join_without_git_says_libgit2_did_the_work(tmp_path: Path, origin: Origin,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pushed_machine(tmp_path, origin)
    path_without_git(monkeypatch, tmp_path)
    _, notes = joined_notes(tmp_path, origin)
    said = " ".join(notes)
    assert "git is not installed" in said and "libgit2 fetched" in said and "libgit2 checked out" in said


def test_a_git_that_exits_1_is_named_and_libgit2_joins(tmp_path: Path, origin: Origin,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pushed_machine(tmp_path, origin)
    fake_git(monkeypatch, tmp_path, 'case "$1" in --version) exec "$REAL_GIT" --version;; esac\n'
                                    "echo 'fatal: broken' >&2; exit 1")
    _, notes = joined_notes(tmp_path, origin)
    said = " ".join(notes)
    assert "failed (1): fatal: broken" in said and "libgit2 fetched" in said


def test_a_git_too_old_for_the_joins_environment_is_not_asked_to_fetch(tmp_path: Path, origin: Origin,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pushed_machine(tmp_path, origin)
    calls = tmp_path / "old-git-calls"
    # git before 2.31 ignores GIT_CONFIG_COUNT: the user's credential helpers would run.
    fake_git(monkeypatch, tmp_path, f'echo "$*" >> "{calls}"\n'
                                    'case "$*" in --version) echo "git version 2.20.1"; exit 0;; esac\n'
                                    'exec "$REAL_GIT" "$@"')
    _, notes = joined_notes(tmp_path, origin)
    asked = [line for line in calls.read_text().splitlines() if line != "--version"]
    assert not [line for line in asked if " fetch " in f" {line} " or "read-tree" in line], asked
    assert any("2.20.1" in n and "2.31" in n for n in notes), notes


def test_a_git_that_hangs_is_given_up_on_and_leaves_no_process_behind(tmp_path: Path, origin: Origin,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pushed_machine(tmp_path, origin)
    pids = tmp_path / "hung-pids"
    fake_git(monkeypatch, tmp_path, f'sleep 3600 & echo $! >> "{pids}"; wait')
    monkeypatch.setattr(gitcli, "PROBE_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr(cli_join, "FETCH_TIMEOUT_SECONDS", 3.0)
    monkeypatch.setattr(cli_join, "LOCAL_TIMEOUT_SECONDS", 3.0)
    started = time.monotonic()
    _, notes = joined_notes(tmp_path, origin)
    assert time.monotonic() - started < 6, "a git that does not answer is given up on at its first question"
    assert any("did not answer" in n and "libgit2" in n for n in notes), notes
    for pid in map(int, pids.read_text().split()):
        wait_for(lambda: not Path(f"/proc/{pid}").exists() or "Z" in _state(pid), 30,  # noqa: B023
                 f"git's child {pid} to end")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def test_a_join_over_a_left_index_lock_names_the_lock_not_uncommitted_edits(
        tmp_path: Path, origin: Origin, git: GitCli) -> None:
    pushed_machine(tmp_path, origin)
    b = Machine("b", tmp_path / "b", origin)
    b.root.mkdir()
    git(b.root, "init", "-q", "-b", "main")
    lock = b.root / ".git" / "index.lock"
    lock.write_bytes(b"")  # a git killed while it wrote the index
    with pytest.raises(GitBusy, match=r"index\.lock is held") as refused:
        b.init()
    assert "uncommitted edits" not in str(refused.value)
    assert not (b.root / "SPINE.md").exists()
    lock.unlink()
    assert b.init().checked_out == origin.head()


# -- the target folder ------------------------------------------------------------------------

def test_a_join_into_a_path_that_is_a_file_says_so(tmp_path: Path, origin: Origin) -> None:
    pushed_machine(tmp_path, origin)
    target = tmp_path / "b"
    target.write_bytes(b"not a folder\n")
    with pytest.raises(GitStoreError, match="is a file, not a folder"):
        Machine("b", target, origin).init()
    assert target.read_bytes() == b"not a folder\n"


def test_a_join_into_a_symlinked_folder_with_spaces_and_non_ascii_joins_the_real_folder(
        tmp_path: Path, origin: Origin) -> None:
    a = pushed_machine(tmp_path, origin)
    real = tmp_path / "my stores" / "é ñ 日本"
    real.mkdir(parents=True)
    link = tmp_path / "store link"
    link.symlink_to(real, target_is_directory=True)
    outcome = Machine("b", link, origin).init()
    assert outcome.checked_out == origin.head() and outcome.mismatches == []
    assert shared_files(real) == shared_files(a.root)
    assert link.is_symlink()
