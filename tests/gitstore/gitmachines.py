"""Machines, a bare remote and the user's git CLI, for the git-backed store tests.

A Machine is a store folder with its own clock and commit identity, driven through distilld's
real actions (init, sync, gc, restore); "agents" write files directly, the way a distiller does.
"""

from __future__ import annotations

import http.server
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pygit2
from builders import EM, FIXED_NOW, StoreBuilder, healthy_store
from distilld.actions.gc import GcReport, run_gc_apply
from distilld.actions.restore import run_restore
from distilld.actions.sync import (
    InitOutcome,
    OperationRecord,
    committed_operation,
    run_init,
    run_sync,
)
from distilld.engine.passes.restore.apply import RestoreOutcome
from distilld.gitstore.commit import Identity
from distilld.gitstore.sync import SyncReport
from distilld.policy import Policy, load_policy
from distilld.store.invariants import check_store
from distilld.store.merge import has_conflict_markers
from distilld.store.paths import sync_class
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits

OLD_A_ENTRY = f"- [Old A](projects/old-a.md) {EM} the old A ingest job, retired. Read when asked about A."
OLD_B_ENTRY = f"- [Old B](projects/old-b.md) {EM} the old B dashboards, retired. Read when asked about B."


def lifecycle_store(root: Path) -> StoreBuilder:
    """healthy_store plus two project files past the staleness threshold at FIXED_NOW."""
    b = healthy_store(root)
    b.tier("projects/old-a.md", "# Old A\n\n- The A ingest ran nightly.\n- Retired in spring 2025.\n",
           domain="project", scope="Old A ingest job", last_updated="2025-01-10")
    b.tier("projects/old-b.md", "# Old B\n\n- B dashboards moved to the BI tool.\n",
           domain="project", scope="Old B dashboards", last_updated="2025-02-10")
    spine = b.read("SPINE.md").decode()
    anchor = "pinned. Read before deleting any export.\n"
    b.write("SPINE.md", spine.replace(anchor, anchor + OLD_A_ENTRY + "\n" + OLD_B_ENTRY + "\n"))
    b.rebuild_catalog()
    return b


class GitCli:
    """The user's own git, with a HOME of its own and no system config."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "The User",
            "GIT_AUTHOR_EMAIL": "user@example.invalid",
            "GIT_COMMITTER_NAME": "The User",
            "GIT_COMMITTER_EMAIL": "user@example.invalid",
            "GIT_AUTHOR_DATE": "2026-11-30T12:00:00Z",
            "GIT_COMMITTER_DATE": "2026-11-30T12:00:00Z",
            "LC_ALL": "C",
        }

    def __call__(self, cwd: Path, *args: str, check: bool = True, extra_env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
        env = {**self.env(), **(extra_env or {})}
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done


@dataclass
class Origin:
    path: Path

    @classmethod
    def create(cls, path: Path) -> Origin:
        pygit2.init_repository(str(path), bare=True, initial_head="main")
        return cls(path)

    @property
    def url(self) -> str:
        return str(self.path)

    def head(self, branch: str = "main") -> str | None:
        repo = pygit2.Repository(str(self.path))
        ref = repo.references.get(f"refs/heads/{branch}")
        return str(ref.target) if ref is not None else None


@dataclass
class Machine:
    name: str
    root: Path
    origin: Origin
    now: datetime = FIXED_NOW
    policy: Policy = field(default_factory=load_policy)

    @property
    def identity(self) -> Identity:
        return Identity(f"distilld on {self.name}", f"distilld@{self.name}.invalid")

    def clock(self) -> datetime:
        return self.now

    def later(self, minutes: int) -> Machine:
        self.now = self.now + timedelta(minutes=minutes)
        return self

    def init(self, **kwargs: Any) -> InitOutcome:
        return run_init(self.root, self.policy, self.clock, remote_url=self.origin.url, identity=self.identity,
                        **kwargs)

    def sync(self, **kwargs: Any) -> SyncReport:
        return run_sync(self.root, self.policy, self.clock, identity=self.identity, **kwargs)

    def operation(self, name: str, run: Callable[[OperationRecord], Any]) -> tuple[Any, OperationRecord]:
        with committed_operation(self.root, name, self.policy, self.clock, self.identity) as record:
            result = run(record)
        return result, record

    def gc(self) -> tuple[GcReport, OperationRecord]:
        def run(record: OperationRecord) -> GcReport:
            report = run_gc_apply(self.root, self.policy, self.clock)
            moved = report.outcome.moved if report.outcome else []
            record.subject = f"distilld: archive {len(moved)} file(s)"
            record.body = [f"archived {p}" for p in moved]
            if report.outcome and report.outcome.manifest:
                record.pass_id = report.outcome.manifest.stem
            return report

        return self.operation("archive", run)

    def restore(self, path: str) -> tuple[RestoreOutcome, OperationRecord]:
        def run(record: OperationRecord) -> RestoreOutcome:
            outcome = run_restore(self.root, path, self.policy, self.clock)
            record.subject = f"distilld: restore {path}"
            return outcome

        return self.operation("restore", run)

    # -- what agents and the user do ------------------------------------------------------
    def write(self, relative: str, data: bytes | str) -> None:
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def append(self, relative: str, data: str) -> None:
        self.write(relative, self.read(relative) + data.encode())

    def read(self, relative: str) -> bytes:
        return (self.root / relative).read_bytes()

    def repo(self) -> pygit2.Repository:
        return pygit2.Repository(str(self.root))

    def head(self) -> str:
        return str(self.repo().head.target)


def pushed_machine(tmp_path: Path, origin: Origin, name: str = "a") -> Machine:
    """A machine holding lifecycle_store, set up with `init` and pushed to ``origin``."""
    machine = Machine(name, tmp_path / name, origin)
    lifecycle_store(machine.root)
    machine.init()
    assert machine.sync().pushed
    return machine


def joined_machine(tmp_path: Path, origin: Origin, name: str = "b") -> Machine:
    """A second machine, joined from what ``origin`` holds."""
    machine = Machine(name, tmp_path / name, origin)
    machine.init()
    return machine


def shared_files(root: Path) -> dict[str, bytes]:
    """Every file of the store that is not machine-local (nor inside .git), with its bytes."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = Path(dirpath) / name
            relative = full.relative_to(root).as_posix()
            if sync_class(relative) != "local" or relative in (".gitignore", ".gitattributes"):
                out[relative] = full.read_bytes()
    return out


def failures(root: Path) -> list[str]:
    return [f"[{f.group}] {f.message}" for f in check_store(take_snapshot(root), LIMITS) if f.severity == "fail"]


def assert_converged(origin: Origin, *machines: Machine) -> dict[str, bytes]:
    """Every machine at the remote's commit, with identical bytes, a store passing C1-C3, no
    conflict markers, and nothing left uncommitted."""
    heads = {m.name: m.head() for m in machines}
    assert set(heads.values()) == {origin.head()}, heads
    first = shared_files(machines[0].root)
    for machine in machines[1:]:
        other = shared_files(machine.root)
        assert sorted(other) == sorted(first), (machine.name, set(other) ^ set(first))
        different = [p for p in first if first[p] != other[p]]
        assert not different, (machine.name, different)
    for machine in machines:
        assert failures(machine.root) == [], (machine.name, failures(machine.root))
        marked = [p for p, raw in shared_files(machine.root).items() if has_conflict_markers(raw)]
        assert not marked, (machine.name, marked)
        status = {p: s for p, s in machine.repo().status().items()}
        assert status == {}, (machine.name, status)
    return first


def ledger_events(raw: bytes) -> list[str]:
    return [line for line in raw.decode().splitlines() if line.startswith("- ")]


class RefusingHttp(http.server.BaseHTTPRequestHandler):
    """An https remote that refuses every request; ``seen`` holds each request's Authorization."""

    seen: list[str] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization") or "")
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="x"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass
