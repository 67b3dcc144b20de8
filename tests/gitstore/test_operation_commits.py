"""What an operation commits, with real repositories and the real command line: `gc --apply
--wait` and `restore` take their "before" after the wait and commit while the lock is still
held (an agent's edit made during the wait is its own commit, never part of the operation's);
a stale lock taken over is said in the activity log with the old holder and its age."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from gitmachines import Machine, Origin, lifecycle_store
from waiting import wait_for

from distilld.engine.lock import StoreLock
from distilld.settings import instance_key

pytestmark = pytest.mark.slow


def commits(root: Path) -> list[pygit2.Commit]:
    repo = pygit2.Repository(str(root))
    return list(repo.walk(repo.head.target))


def paths_of(commit: pygit2.Commit) -> set[str]:
    parent = commit.parents[0].tree if commit.parents else None
    diff = commit.tree.diff_to_tree(parent, swap=True) if parent is not None else commit.tree.diff_to_tree(swap=True)
    return {patch.delta.new_file.path for patch in diff}


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILLD_")}
    env.update(HOME=str(tmp_path / "home"), DISTILLD_STATE_DIR=str(tmp_path / "state"),
               DISTILLD_CONFIG_DIR=str(tmp_path / "config"))
    return env


def run_while_the_distiller_writes(args: list[str], env: dict[str, str], distiller: StoreLock, root: Path,
                                   names: tuple[str, ...]) -> tuple[int, str]:
    """Run a distilld command that waits for the distiller's held lock; the distiller writes
    ``names`` during the wait and then releases. The command's exit code and output."""
    proc = subprocess.Popen([sys.executable, "-m", "distilld", *args], env={**env, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        # The command says when it starts waiting for the held lock: the distiller writes after that.
        said = proc.stderr.readline()
        assert said.startswith("distilld: waiting up to 60 s for ") and "held by alpha" in said, \
            said + proc.communicate()[1]
        for name in names:
            path = root / name
            path.write_bytes(path.read_bytes() + b"- written by alpha during the wait\n")
        distiller.release()
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out + said + err


def test_gc_apply_wait_commits_only_what_it_wrote_while_holding_the_lock(tmp_path: Path, origin: Origin) -> None:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    distiller = StoreLock(a.root, "alpha")
    distiller.acquire()
    code, output = run_while_the_distiller_writes(["gc", "--apply", "--wait", "60", str(a.root)], cli_env(tmp_path),
                                                  distiller, a.root, ("craft/testing.md", "ops/deploy.md"))
    assert code == 0, output
    history = commits(a.root)
    lifecycle = next(c for c in history if "Distilld-Operation: lifecycle" in c.message)
    assert not paths_of(lifecycle) & {"craft/testing.md", "ops/deploy.md"}
    assert "archive/projects/old-a.md" in paths_of(lifecycle)
    agents = [c for c in history if {"craft/testing.md", "ops/deploy.md"} <= paths_of(c)]
    assert agents and agents[0].commit_time <= lifecycle.commit_time
    assert history.index(agents[0]) > history.index(lifecycle)  # the agents' commit came first


def test_a_stale_lock_taken_over_is_in_the_activity_log(tmp_path: Path, origin: Origin) -> None:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    StoreLock(a.root, "ghost", clock=lambda: time.time() - 1000).acquire()  # a dead distiller's lock
    done = subprocess.run([sys.executable, "-m", "distilld", "gc", "--apply", str(a.root)], env=cli_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "took over a stale lock from ghost" in done.stderr
    log = (tmp_path / "state" / instance_key(a.root.resolve()) / "activity.log").read_text()
    line = next(x for x in log.splitlines() if "took over a stale lock" in x)
    assert "from ghost" in line and " s without a heartbeat" in line
    age = int(line.split("(")[1].split(" s")[0])
    assert 990 <= age <= 1200


def test_restore_wait_commits_only_what_it_wrote_while_holding_the_lock(tmp_path: Path, origin: Origin) -> None:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    archived = subprocess.run([sys.executable, "-m", "distilld", "gc", "--apply", str(a.root)],
                              env=cli_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert archived.returncode == 0, archived.stdout + archived.stderr
    assert (a.root / "archive/projects/old-a.md").exists()
    distiller = StoreLock(a.root, "alpha")
    distiller.acquire()
    code, output = run_while_the_distiller_writes(["restore", "projects/old-a.md", str(a.root), "--wait", "60"],
                                                  cli_env(tmp_path), distiller, a.root, ("craft/testing.md",))
    assert code == 0, output
    history = commits(a.root)
    restored = next(c for c in history if "projects/old-a.md" in paths_of(c) and "archive/LEDGER.md" in paths_of(c)
                    and c is not history[-1] and "restore" in c.message.lower())
    assert "craft/testing.md" not in paths_of(restored)
    agents = [c for c in history if "craft/testing.md" in paths_of(c)]
    assert agents and history.index(agents[0]) > history.index(restored)  # the agent's edit: its own, earlier commit
