"""`distilld init` and `distilld sync` on the command line: output, JSON, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import distilld.cli as cli_module
import pytest
from builders import FIXED_NOW, healthy_store
from distilld.cli import main
from gitmachines import Origin


@pytest.fixture(autouse=True)
def _fixed_clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cli_module, "_now", lambda: FIXED_NOW)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out, out.err


def test_init_and_sync_from_the_command_line(tmp_path: Path, origin: Origin,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    healthy_store(a)
    code, out, _ = run(capsys, "init", str(a), "--remote", origin.url, "--author-name", "A")
    assert code == 0 and "created a repository on branch main" in out and "wrote .gitignore" in out
    code, out, _ = run(capsys, "sync", str(a))
    assert code == 0 and "synced" in out and "pushed" in out
    code, out, _ = run(capsys, "init", str(b), "--remote", origin.url, "--json")
    payload = json.loads(out)
    assert code == 0 and payload["checked_out"] == origin.head() and payload["mismatches"] == []
    code, out, _ = run(capsys, "sync", str(b), "--json")
    report = json.loads(out)
    assert code == 0 and report["state"] == "up-to-date" and report["ok"] is True


def test_sync_exit_codes(tmp_path: Path, origin: Origin, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    healthy_store(store)
    code, _, err = run(capsys, "sync", str(store))
    assert code == 2 and "not a git repository" in err and "distilld init" in err
    run(capsys, "init", str(store), "--remote", origin.url)
    (store / ".git" / "index.lock").write_bytes(b"")
    code, out, _ = run(capsys, "sync", str(store))
    assert code == 7 and "SKIPPED" in out and "index.lock" in out
    (store / ".git" / "index.lock").unlink()
    code, _, err = run(capsys, "sync", str(store), "--remote", "nowhere")
    assert code == 2 and "no remote named 'nowhere'" in err
    origin.path.rename(tmp_path / "away.git")
    code, out, _ = run(capsys, "sync", str(store))
    assert code == 8 and "OFFLINE" in out and "next automatic try after" in out


def test_a_sync_skipped_while_git_is_busy_claims_nothing(tmp_path: Path, origin: Origin,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Skipped before it fetched: nothing pushed, and no ahead/behind figure it did not measure."""
    store = tmp_path / "store"
    healthy_store(store)
    run(capsys, "init", str(store), "--remote", origin.url)
    (store / ".git" / "index.lock").write_bytes(b"")
    code, out, _ = run(capsys, "sync", str(store))
    assert code == 7 and "SKIPPED" in out and "pushed" not in out and "behind" not in out, out
    code, out, _ = run(capsys, "sync", str(store), "--json")
    report = json.loads(out)
    assert code == 7 and report["state"] == "skipped" and report["ok"] is False
    assert report["pushed"] is False and report["ahead"] == 0 and report["behind"] == 0
    assert report["commits"] == [] and report["integration"] is None and report["retry_at"] is None


def test_maintenance_commands_commit_exactly_what_they_changed(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess

    store = tmp_path / "store"
    b = healthy_store(store)
    b.tier("projects/heron.md", "# Heron\n\n- old queue notes\n", scope="Heron", last_updated="2025-01-01")
    b.write("SPINE.md", b.read("SPINE.md") + "- [Heron](projects/heron.md) \u2014 old queue. Read when asked.\n".encode())
    b.rebuild_catalog()
    run(capsys, "init", str(store))

    def log() -> list[str]:
        done = subprocess.run(["git", "-C", str(store), "log", "--format=%s"], capture_output=True, text=True)
        return done.stdout.splitlines()

    def files_of(rev: str) -> list[str]:
        done = subprocess.run(["git", "-C", str(store), "show", "--no-renames", "--name-only", "--format=", rev],
                              capture_output=True, text=True)
        return sorted(done.stdout.split())

    code, _, err = run(capsys, "gc", str(store), "--apply")
    assert code == 0 and "committed the lifecycle" in err
    assert log()[0] == "distilld: lifecycle archived 1 file"  # as the daemon's lifecycle job says it
    assert files_of("HEAD") == ["CATALOG.md", "SPINE.md", "archive/LEDGER.md", "archive/projects/heron.md",
                                "projects/heron.md"]
    code, _, err = run(capsys, "restore", "projects/heron.md", str(store))
    assert code == 0 and "committed the restore" in err
    assert log()[0] == "distilld: restored projects/heron.md"
    status = subprocess.run(["git", "-C", str(store), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""  # nothing the operations wrote is left uncommitted (data/ is ignored)


def test_a_compaction_is_committed_with_the_same_message_from_the_command_line_and_the_daemon(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import threading

    from distilld.engine.lock import default_owner
    from distilld.log import ActivityLog, StatusFile
    from distilld.policy import load_policy
    from distilld.runtime.job_runner import run_job
    from distilld.runtime.jobs import JobEnv
    from distilld.runtime.store_git import StoreGit
    from distilld.settings import load_settings

    long_entry = ("- [Kestrel](projects/kestrel.md) \u2014 " + "the kestrel release train and its many checks, " * 12
                  + "Read when releasing.\n")
    stores = []
    for name in ("by-hand", "by-daemon"):
        b = healthy_store(tmp_path / name)
        b.write("SPINE.md", b.read("SPINE.md") + long_entry.encode())  # one entry over the 400-byte cap
        b.rebuild_catalog()
        run(capsys, "init", str(b.root))
        stores.append(b.root)

    code, _, err = run(capsys, "compact", "--apply", str(stores[0]))
    assert code == 0 and "committed the compaction" in err, err

    store = stores[1]
    settings = load_settings(overrides={"store": str(store)})
    policy = load_policy()
    env = JobEnv(settings=settings, policy=policy, store=store, owner=default_owner(),
                 status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                 stop=threading.Event(), lock_changed=threading.Event(),
                 git=StoreGit(store, settings, policy, lambda: FIXED_NOW), clock=lambda: FIXED_NOW)
    assert run_job(env, "compaction", "schedule").ok

    def last_message(root: Path) -> str:
        # the subject and the body; the trailers name the pass's own id
        return subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%B"], capture_output=True,
                              text=True, check=True).stdout.split("\nDistilld-", 1)[0]

    by_hand, by_daemon = last_message(stores[0]), last_message(stores[1])
    assert by_hand.startswith("distilld: compaction (SPINE.md ") and "compacted SPINE.md" in by_hand, by_hand
    assert by_hand == by_daemon
