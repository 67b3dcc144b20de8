"""A second machine joins through the git command line when git is there (faster), and through
libgit2 when it is not or fails: the same store either way, the same byte verification, the same
refusals, and only the credentials distilld was given."""

from __future__ import annotations

import base64
import http.server
import os
import shlex
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import distilld.gitstore.cli_join as cli_join
import distilld.gitstore.integrate as integrate_module
import pygit2
import pytest
from builders import FIXED_NOW
from distilld.actions.sync import run_init
from distilld.gitstore.auth import Credentials
from distilld.gitstore.cli_join import fetch_env, transport, url_user
from distilld.gitstore.errors import GitStoreError
from distilld.gitstore.repo import init_store, open_store
from distilld.gitstore.verify import verify_work_tree
from distilld.policy import load_policy
from gitmachines import GitCli, Machine, Origin, RefusingHttp, assert_converged, lifecycle_store, shared_files

CONFLICTED = b"# Clash\n\n<<<<<<< HEAD\n- ours\n=======\n- theirs\n>>>>>>> other\n"


@pytest.fixture
def first(tmp_path: Path, origin: Origin) -> Machine:
    """A machine that archived two files (so the ledger's checksums are verified too) and pushed."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    a.later(60)
    report, _ = a.gc()
    assert report.outcome is not None and report.outcome.moved
    assert a.sync().pushed
    return a


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git commands of the join that git ran to the end."""
    calls: list[str] = []
    real = cli_join.run_git

    def spy(root: Path, args: list[str], *rest: object, **kwargs: object) -> object:
        done = real(root, args, *rest, **kwargs)  # type: ignore[arg-type]
        calls.append(next(word for word in args if not word.startswith("-") and "=" not in word))
        return done

    monkeypatch.setattr(cli_join, "run_git", spy)
    return calls


def no_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "no-git-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))


def failing_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A `git` on PATH that fails every command, as a broken installation would."""
    bin_dir = tmp_path / "broken-git-bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\necho 'fatal: this git is broken' >&2\nexit 128\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def state_of(machine: Machine) -> dict[str, object]:
    """Everything a join leaves that matters: the files, the branch, the index, the config."""
    repo = machine.repo()
    config = {key: str(repo.config[key]) for key in ("distilld.branch", "distilld.remote", "core.autocrlf")}
    return {
        "files": shared_files(machine.root),
        "head": str(repo.head.target),
        "branch": repo.head.name,
        "branch log": [entry.message for entry in repo.references[repo.head.name].log()],  # says how it moved
        "tracking": str(repo.references["refs/remotes/origin/main"].target),
        "index": sorted((e.path, str(e.id), e.mode) for e in repo.index),
        "status": dict(repo.status()),
        "config": config,
        "remote": repo.remotes["origin"].url,
    }


def test_the_cli_join_and_the_libgit2_join_leave_the_same_store(tmp_path: Path, origin: Origin, first: Machine,
                                                                git_calls: list[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with_cli = Machine("b", tmp_path / "b", origin)
    joined = with_cli.init()
    assert git_calls == ["fetch", "grep", "read-tree"]  # all of the join's git work: the branch is libgit2's
    assert joined.checked_out == first.head() and joined.mismatches == []
    git_calls.clear()
    no_git(monkeypatch, tmp_path)
    without = Machine("c", tmp_path / "c", origin)
    joined_without = without.init()
    assert git_calls == [] and joined_without.checked_out == first.head() and joined_without.mismatches == []
    assert state_of(with_cli) == state_of(without)
    assert verify_work_tree(open_store(with_cli.root)) == [] == verify_work_tree(open_store(without.root))
    assert_converged(origin, first, with_cli, without)


def test_a_git_that_fails_falls_back_to_libgit2(tmp_path: Path, origin: Origin, first: Machine,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    reference = Machine("b", tmp_path / "b", origin)
    reference.init()
    failing_git(monkeypatch, tmp_path)
    broken = Machine("c", tmp_path / "c", origin)
    joined = broken.init()
    assert joined.checked_out == first.head() and joined.mismatches == []
    assert state_of(broken) == state_of(reference)


@pytest.mark.parametrize("git_on_path", [True, False])
def test_bytes_changed_under_the_checkout_are_reported_either_way(tmp_path: Path, origin: Origin, first: Machine,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  git_on_path: bool) -> None:
    """The verification reads what is on disk after the checkout, whichever tool wrote it."""
    tamper_after_checkout(monkeypatch, tmp_path / "b" / VICTIM)
    if not git_on_path:
        no_git(monkeypatch, tmp_path)
    joined = Machine("b", tmp_path / "b", origin).init()
    assert [m.split(":")[0] for m in joined.mismatches] == [VICTIM]


@pytest.mark.parametrize("git_on_path", [True, False])
def test_a_sync_that_makes_the_first_checkout_reports_what_it_read_back(tmp_path: Path, origin: Origin,
                                                                        first: Machine,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        git_on_path: bool) -> None:
    """A repository set up with no commit yet (`distilld init` offline, say): the sync checks out."""
    joining = tmp_path / "b"
    joining.mkdir()
    init_store(joining, None, origin.url)
    tamper_after_checkout(monkeypatch, joining / VICTIM)
    if not git_on_path:
        no_git(monkeypatch, tmp_path)
    report = Machine("b", joining, origin).sync()
    assert report.integration == "first-checkout" and report.state == "mismatch"
    assert [m.split(":")[0] for m in report.mismatches] == [VICTIM]
    assert shared_files(joining) == {**shared_files(first.root), VICTIM: TAMPERED}


VICTIM, TAMPERED = "craft/testing.md", b"changed behind the checkout's back\n"


def tamper_after_checkout(monkeypatch: pytest.MonkeyPatch, victim: Path) -> None:
    """Whichever tool checks out, ``victim`` is changed the moment it has written it."""
    real_cli, real_libgit2 = integrate_module.read_tree_with_cli, integrate_module._checkout

    def cli_then_tamper(store: object, *args: object) -> str | None:
        why_not = real_cli(store, *args)  # type: ignore[arg-type]
        if why_not is None:  # git checked out
            victim.write_bytes(TAMPERED)
        return why_not

    def libgit2_then_tamper(store: object, *args: object, **kwargs: object) -> None:
        real_libgit2(store, *args, **kwargs)  # type: ignore[arg-type]
        victim.write_bytes(TAMPERED)

    monkeypatch.setattr(integrate_module, "read_tree_with_cli", cli_then_tamper)
    monkeypatch.setattr(integrate_module, "_checkout", libgit2_then_tamper)


def push_conflicted(tmp_path: Path, git: GitCli, origin: Origin) -> str:
    """The user commits a file holding conflict markers with their own git, and pushes it."""
    clone = tmp_path / "user-clone"
    git(tmp_path, "clone", "-q", origin.url, str(clone))
    (clone / "craft" / "clash.md").write_bytes(CONFLICTED)
    git(clone, "add", "craft/clash.md")
    git(clone, "commit", "-q", "-m", "an unresolved merge")
    git(clone, "push", "-q", "origin", "HEAD:main")
    return git(clone, "rev-parse", "HEAD").stdout.strip()


@pytest.mark.parametrize("git_on_path", [True, False])
def test_a_remote_holding_conflict_markers_is_refused_either_way(tmp_path: Path, origin: Origin, first: Machine,
                                                                 git: GitCli, monkeypatch: pytest.MonkeyPatch,
                                                                 git_on_path: bool) -> None:
    push_conflicted(tmp_path, git, origin)
    if not git_on_path:
        no_git(monkeypatch, tmp_path)
    joining = tmp_path / "b"
    with pytest.raises(GitStoreError, match=r"craft/clash.md: the remote's version holds git conflict markers"):
        Machine("b", joining, origin).init()
    assert pygit2.Repository(str(joining)).head_is_unborn
    assert not (joining / "craft").exists() and not (joining / "SPINE.md").exists()  # nothing checked out


def work_tree(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and folder (None) outside .git, but the lock protocol's."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        here = Path(dirpath)
        out.update({(here / d).relative_to(root).as_posix() + "/": None for d in dirnames})
        out.update({(here / f).relative_to(root).as_posix(): (here / f).read_bytes()
                    for f in filenames if not f.startswith((".lock", ".status"))})
    return out


@pytest.mark.parametrize("git_on_path", [True, False])
def test_a_refused_join_leaves_the_folder_as_it_was_either_way(tmp_path: Path, origin: Origin, first: Machine,
                                                               git: GitCli, git_calls: list[str],
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               git_on_path: bool) -> None:
    """The commit's files are searched for markers before git writes any of them: a kill at
    any point leaves no marked file, and what was there before (a folder the commit also has, a
    machine-local file) stays."""
    push_conflicted(tmp_path, git, origin)
    joining = tmp_path / "b"
    (joining / "craft").mkdir(parents=True)
    (joining / "data").mkdir()
    (joining / "data" / "scratch.txt").write_bytes(b"machine-local\n")
    before = work_tree(joining)
    if not git_on_path:
        no_git(monkeypatch, tmp_path)
    with pytest.raises(GitStoreError) as refused:
        Machine("b", joining, origin).init()
    assert str(refused.value).endswith("craft/clash.md: the remote's version holds git conflict markers")
    assert "read-tree" not in git_calls  # nothing was written
    assert work_tree(joining) == before
    assert not (joining / ".git" / "index").exists()
    assert pygit2.Repository(str(joining)).head_is_unborn


@pytest.mark.parametrize("git_on_path", [True, False])
def test_markers_are_named_before_a_differing_file_in_the_way_either_way(tmp_path: Path, origin: Origin,
                                                                         first: Machine, git: GitCli,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         git_on_path: bool) -> None:
    push_conflicted(tmp_path, git, origin)
    joining = tmp_path / "b"
    joining.mkdir()
    (joining / "SPINE.md").write_bytes(b"# another SPINE\n")
    if not git_on_path:
        no_git(monkeypatch, tmp_path)
    with pytest.raises(GitStoreError, match=r"craft/clash.md: the remote's version holds git conflict markers$"):
        Machine("b", joining, origin).init()
    assert work_tree(joining) == {"SPINE.md": b"# another SPINE\n"}


@pytest.mark.parametrize("git_on_path", [True, False])
def test_a_refusal_for_a_symlink_names_the_markers_too_either_way(tmp_path: Path, origin: Origin, first: Machine,
                                                                  git: GitCli, monkeypatch: pytest.MonkeyPatch,
                                                                  git_on_path: bool) -> None:
    clone = tmp_path / "user-clone"
    git(tmp_path, "clone", "-q", origin.url, str(clone))
    (clone / "craft" / "clash.md").write_bytes(CONFLICTED)
    (clone / "craft" / "link.md").symlink_to("clash.md")
    git(clone, "add", "craft")
    git(clone, "commit", "-q", "-m", "a link and an unresolved merge")
    git(clone, "push", "-q", "origin", "HEAD:main")
    if not git_on_path:
        no_git(monkeypatch, tmp_path)
    joining = tmp_path / "b"
    with pytest.raises(GitStoreError, match=r"craft/clash.md: the remote's version holds git conflict markers; "
                                            r"craft/link.md: the remote holds a symlink"):
        Machine("b", joining, origin).init()
    assert work_tree(joining) == {}


def test_the_cli_checkout_never_overwrites_a_file_that_appears_under_it(tmp_path: Path, origin: Origin,
                                                                       first: Machine,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A file written after the check that found none in the way: git refuses, libgit2 then names it."""
    joining = tmp_path / "b"
    real = integrate_module.read_tree_with_cli

    def agent_writes_first(store: object, *args: object) -> bool:
        (joining / "craft").mkdir(exist_ok=True)
        (joining / "craft" / "testing.md").write_bytes(b"an agent's note, written just now\n")
        return real(store, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(integrate_module, "read_tree_with_cli", agent_writes_first)
    with pytest.raises(GitStoreError, match=r"would overwrite uncommitted edits \(craft/testing.md\)"):
        Machine("b", joining, origin).init()
    assert (joining / "craft" / "testing.md").read_bytes() == b"an agent's note, written just now\n"
    assert pygit2.Repository(str(joining)).head_is_unborn


def test_git_runs_on_the_store_whatever_git_variables_distilld_inherited(tmp_path: Path, origin: Origin,
                                                                        first: Machine, git: GitCli,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Started from a git hook, distilld inherits GIT_DIR and GIT_INDEX_FILE: its git ignores them."""
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", "-b", "main", str(elsewhere))
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(elsewhere / ".git" / "index"))
    monkeypatch.setenv("GIT_WORK_TREE", str(elsewhere))
    joined = Machine("b", tmp_path / "b", origin).init()
    assert joined.checked_out == first.head() and joined.mismatches == []
    assert not (elsewhere / ".git" / "index").exists() and list(elsewhere.iterdir()) == [elsewhere / ".git"]


# -- the credentials git is given ---------------------------------------------------------------

@pytest.mark.parametrize(("url", "kind", "user"), [
    ("/srv/store.git", "local", None), ("file:///srv/store.git", "local", None), ("../store.git", "local", None),
    ("git@example.com:me/store.git", "ssh", "git"), ("example.com:store.git", "ssh", None),
    ("ssh://deploy@example.com:2222/store.git", "ssh", "deploy"), ("ssh://example.com/store.git", "ssh", None),
    ("https://example.com/me/store.git", "http", None), ("https://me@example.com/store.git", "http", "me"),
    ("git://example.com/store.git", "other", None),
])
def test_urls_are_read_as_git_reads_them(url: str, kind: str, user: str | None) -> None:
    assert transport(url) == kind and url_user(url) == user


def ssh_words(env: dict[str, str]) -> list[str]:
    return shlex.split(env["GIT_SSH_COMMAND"])


def test_ssh_gets_the_key_file_and_nothing_of_the_users_ssh_config(tmp_path: Path) -> None:
    key = tmp_path / "id_ed25519"
    env = fetch_env("ssh://example.com/store.git", Credentials(ssh_user="git", ssh_key=key, use_agent=False))
    assert env is not None
    words = ssh_words(env)
    assert words[:3] == ["ssh", "-F", "/dev/null"]  # no ~/.ssh/config, as libgit2
    for option in ("BatchMode=yes", "StrictHostKeyChecking=yes", "IdentitiesOnly=yes", "IdentityAgent=none"):
        assert option in words
    assert words[words.index("-i") + 1] == str(key) and words[words.index("-l") + 1] == "git"
    agent_only = ssh_words(fetch_env("me@example.com:store.git", Credentials()) or {})
    assert "IdentityFile=none" in agent_only and "IdentityAgent=none" not in agent_only
    assert "-l" not in agent_only  # the URL's user is the one used
    assert fetch_env("ssh://example.com/x.git", Credentials(ssh_key=key, passphrase="secret")) is None


def config_pairs(env: dict[str, str]) -> list[tuple[str, str]]:
    return [(env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"]) for n in range(int(env["GIT_CONFIG_COUNT"]))]


def test_https_gets_the_token_through_the_environment_only() -> None:
    env = fetch_env("https://example.com/store.git", Credentials(ssh_user="me", token="s3cret"))
    assert env is not None
    pairs = config_pairs(env)
    assert pairs[0] == ("credential.helper", "")  # the user's own helpers are dropped
    assert ("credential.interactive", "never") in pairs
    assert all("s3cret" not in value for _, value in pairs)
    assert env[cli_join.TOKEN_VARIABLE] == "s3cret" and env[cli_join.USER_VARIABLE] == "me"
    without = fetch_env("https://example.com/store.git", Credentials()) or {}
    assert cli_join.TOKEN_VARIABLE not in without and config_pairs(without)[0] == ("credential.helper", "")


@pytest.fixture
def refusing_server() -> Iterator[str]:
    RefusingHttp.seen = []
    server = http.server.HTTPServer(("127.0.0.1", 0), RefusingHttp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/store.git"
    server.shutdown()


def test_a_refusing_https_remote_is_given_the_token_once_and_never_hangs(tmp_path: Path,
                                                                         refusing_server: str) -> None:
    joining = tmp_path / "b"
    lifecycle_store(joining)
    started = time.monotonic()
    outcome = run_init(joining, load_policy(), lambda: FIXED_NOW, remote_url=refusing_server,
                       credentials=Credentials(ssh_user="me", token="s3cret"))
    assert time.monotonic() - started < 60
    assert any("fetch from" in note and "failed" in note for note in outcome.report.notes)
    sent = [header for header in RefusingHttp.seen if header]
    expected = "Basic " + base64.b64encode(b"me:s3cret").decode()
    assert sent and set(sent) == {expected}  # git and then libgit2: each offers the token once
    assert len(RefusingHttp.seen) <= 6


def test_a_failed_git_checkout_is_said_and_libgit2_checks_out_instead(tmp_path: Path, origin: Origin, first: Machine,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(integrate_module, "read_tree_with_cli", lambda *args: "git read-tree was killed")
    joined = Machine("b", tmp_path / "b", origin).init()
    assert ("the first checkout: git read-tree was killed; libgit2 checked out the store instead"
            in joined.report.notes)
    assert joined.checked_out == first.head() and not joined.mismatches
