"""One daemon SIGKILL trial, shared by tests/runtime/test_daemon_kill_trial.py (a few trials) and
tests/benchmarks/bench_daemon_kill_trial.py (forty and more).

The real `distilld run` process follows a store that is a git repository (no remote) while a
writer that never takes the lock, as an agent may, adds project files with their SPINE entries,
appends lines, and edits and lengthens SPINE entries. The daemon is SIGKILLed 1-3 times at
random moments and started again each time. Once the writer has stopped and the daemon has
settled, the trial checks: C1-C3 (`distilld check`), every line the writer wrote in the tree
and in HEAD, `git status` clean, no `.lock`, git lock or temp file left, and `distilld status`
running with nothing stuck. It measures how long the daemon took to settle after its last start.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2
from builders import EM, healthy_store
from distilld.policy import load_policy
from distilld.settings import instance_key

SETTLE_LIMIT_SECONDS = 150.0  # far below the lock's 300 s stale period a dead lock would cost
ENTRY_BYTES_LIMIT = 390  # the writer keeps its SPINE entries under the 400-byte cap
FILE_LINES_LIMIT = 40  # and its files under the 60-line cap


@dataclass
class TrialResult:
    seed: int
    ok: bool
    kills: int
    settle_seconds: float | None  # from the writer's last write (or the last start, if later)
    problems: list[str] = field(default_factory=list)
    after_start_seconds: float | None = None  # from the last start of the daemon
    writes: int = 0
    tokens: int = 0


class Writer:
    """An agent that writes without the lock: every word it adds carries a token, to be found
    again in the tree and in HEAD."""

    def __init__(self, store: Path, rng: random.Random, entry_limit: int = ENTRY_BYTES_LIMIT) -> None:
        self.store = store
        self.rng = rng
        self.entry_limit = entry_limit  # above 400, entries breach the cap and the daemon compacts them
        self.tokens: list[str] = []
        self.files: list[str] = []
        self.writes = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def token(self) -> str:
        value = f"wtok{len(self.tokens):04d}x{self.rng.randrange(16**6):06x}"
        self.tokens.append(value)
        return value

    def run(self, seconds: float) -> None:
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not self.stop.is_set():
                self.step()
                self.writes += 1
                time.sleep(self.rng.uniform(0.01, 0.12))
        except BaseException as error:  # noqa: BLE001  reported by the trial, not lost in a thread
            self.error = error

    def step(self) -> None:
        choice = self.rng.random()
        if not self.files or (choice < 0.2 and len(self.files) < 8):
            self.add_file()
        elif choice < 0.6:
            self.append_line()
        elif choice < 0.8:
            self.lengthen_entry()
        else:
            self.edit_entry()

    def _replace(self, relative: str, text: str) -> None:
        """An editor's save: a temp file beside it, renamed over it."""
        target = self.store / relative
        temp = target.with_name(target.name + ".tmp")
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, target)

    def add_file(self) -> None:
        name = f"projects/w{len(self.files):02d}-{self.rng.randrange(16**4):04x}.md"
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        title = f"W{len(self.files)}"
        (self.store / name).write_text(
            f"---\ndomain: project\nscope: {title} writer project {self.token()}\nlast_updated: {today}\n---\n\n"
            f"# {title}\n\n- first line {self.token()}\n", encoding="utf-8")
        spine = (self.store / "SPINE.md").read_text(encoding="utf-8")
        entry = f"- [{title}]({name}) {EM} {title} notes {self.token()}. Read when working on {title}."
        self._replace("SPINE.md", spine.replace("\n## Feedback\n", f"\n{entry}\n\n## Feedback\n", 1))
        self.files.append(name)

    def append_line(self) -> None:
        name = self.rng.choice(self.files)
        path = self.store / name
        try:
            lines = path.read_text(encoding="utf-8").count("\n")
        except FileNotFoundError:
            return
        if lines >= FILE_LINES_LIMIT:
            return
        with open(path, "a", encoding="utf-8") as handle:  # a plain append, as `>>` does
            handle.write(f"- note {self.token()}\n")

    def _entry_line(self, spine: list[str]) -> int | None:
        name = self.rng.choice(self.files)
        for index, line in enumerate(spine):
            if line.startswith("- [") and f"]({name})" in line:
                return index
        return None

    def lengthen_entry(self) -> None:
        spine = (self.store / "SPINE.md").read_text(encoding="utf-8").split("\n")
        index = self._entry_line(spine)
        if index is None or len(spine[index].encode()) > self.entry_limit - 40:
            return
        words = 1 if self.entry_limit <= 400 else 5  # past the cap, grow fast enough to breach it
        spine[index] = spine[index] + " Also " + ", ".join(self.token() for _ in range(words)) + "."
        self._replace("SPINE.md", "\n".join(spine))

    def edit_entry(self) -> None:
        spine = (self.store / "SPINE.md").read_text(encoding="utf-8").split("\n")
        index = self._entry_line(spine)
        if index is None or len(spine[index].encode()) > self.entry_limit - 40 or f" {EM} " not in spine[index]:
            return
        head, _, rest = spine[index].partition(f" {EM} ")
        spine[index] = f"{head} {EM} edited {self.token()}; {rest}"
        self._replace("SPINE.md", "\n".join(spine))


class Daemon:
    def __init__(self, store: Path, env: dict[str, str], state: Path) -> None:
        self.store = store
        self.env = env
        self.state = state
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "distilld", "run", "--store", str(self.store)],
                                        env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)

    def status(self) -> dict[str, Any]:
        try:
            return json.loads((self.state / instance_key(self.store) / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def idle(self) -> bool:
        status = self.status()
        worker = status.get("worker") or {}
        return (self.process is not None and self.process.poll() is None and status.get("pid") == self.process.pid
                and status.get("state") == "idle" and not worker.get("running") and not worker.get("pending"))


def _run(args: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=180)


def git_clean(store: Path) -> bool:
    repo = pygit2.Repository(str(store))
    return not {p: f for p, f in repo.status(untracked_files="all").items() if f != pygit2.enums.FileStatus.IGNORED}


def leftovers(store: Path, state: Path) -> list[str]:
    """Lock and temp files nobody is working on any more."""
    found = [str(p.relative_to(store)) for p in store.rglob("*") if ".git" not in p.relative_to(store).parts
             and (p.name == ".lock" or "tmp" in p.name)]
    gitdir = store / ".git"
    found += [f".git/{p.relative_to(gitdir)}" for p in gitdir.rglob("*.lock")]
    found += [f"state/{p.name}" for p in state.rglob("*") if "tmp" in p.name]
    return sorted(found)


def head_text(store: Path) -> str:
    repo = pygit2.Repository(str(store))
    tree = repo.head.peel(pygit2.Commit).tree
    parts: list[str] = []

    def walk(node: pygit2.Tree) -> None:
        for item in node:
            if isinstance(item, pygit2.Tree):
                walk(item)
            elif isinstance(item, pygit2.Blob):
                parts.append(item.data.decode("utf-8", "replace"))
    walk(tree)
    return "\n".join(parts)


def tree_text(store: Path) -> str:
    return "\n".join(p.read_text("utf-8", "replace") for p in sorted(store.rglob("*.md"))
                     if p.is_file() and ".git" not in p.relative_to(store).parts)


def settled(daemon: Daemon, store: Path) -> bool:
    return daemon.idle() and not (store / ".lock").exists() and git_clean(store) and daemon.idle()


def wait_settled(daemon: Daemon, store: Path, limit: float) -> float | None:
    started = time.monotonic()
    quiet_since: float | None = None
    while time.monotonic() - started < limit:
        if settled(daemon, store):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= 1.0:  # settled and staying so
                return quiet_since - started
        else:
            quiet_since = None
        time.sleep(0.1)
    return None


def make_env(base: Path, runtime: Path) -> dict[str, str]:
    config = base / "config"
    config.mkdir()
    (config / "config.toml").write_text("[watch]\nquiet_seconds = 0.3\nmax_wait_seconds = 3\n"
                                        "[schedule]\njitter_seconds = 0\nreconcile_minutes = 0\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILLD_", "JOURNAL_STREAM", "INVOCATION_ID"))}
    env.update(DISTILLD_CONFIG_DIR=str(config), DISTILLD_STATE_DIR=str(base / "state"),
               DISTILLD_RUNTIME_DIR=str(runtime), HOME=str(base / "home"), PYTHONUNBUFFERED="1",
               GIT_CONFIG_NOSYSTEM="1")
    (base / "home").mkdir()
    return env


def run_trial(seed: int, base: Path, writer_seconds: float = 8.0,
              say: Callable[[str], None] = lambda line: None, entry_limit: int = ENTRY_BYTES_LIMIT) -> TrialResult:
    """One trial in ``base`` (an empty folder); its result, with every problem found."""
    from distilld.actions.sync import run_init

    rng = random.Random(seed)
    runtime = Path(tempfile.mkdtemp(prefix="dk-", dir="/tmp"))  # short: the control socket lives there
    try:
        env = make_env(base, runtime)
        store = healthy_store(base / "store").root
        run_init(store, load_policy(), lambda: datetime.now(UTC))
        daemon = Daemon(store, env, base / "state")
        daemon.start()
        problems: list[str] = []
        if wait_settled(daemon, store, SETTLE_LIMIT_SECONDS) is None:
            problems.append("the first start never settled")
        writer = Writer(store, rng, entry_limit)
        thread = threading.Thread(target=writer.run, args=(writer_seconds,))
        kills = rng.randint(1, 3)
        moments = sorted(rng.uniform(0.2, writer_seconds) for _ in range(kills))
        began = time.monotonic()
        thread.start()
        last_start = began
        for moment in moments:
            time.sleep(max(0.0, began + moment - time.monotonic()))
            daemon.kill()
            time.sleep(rng.uniform(0.0, 0.8))
            daemon.start()
            last_start = time.monotonic()
        thread.join()
        if writer.error is not None:
            problems.append(f"the writer failed: {writer.error!r}")
        # Settling is timed from the later of the last start and the writer's last write.
        waiting_from = time.monotonic()
        waited = wait_settled(daemon, store, SETTLE_LIMIT_SECONDS)
        after_start = None if waited is None else waiting_from + waited - last_start
        if waited is None:
            problems.append(f"not settled {SETTLE_LIMIT_SECONDS:g} s after the last start; status: "
                            f"{json.dumps(daemon.status().get('waiting'))}, lock: "
                            f"{(store / '.lock').read_text() if (store / '.lock').exists() else 'none'}, "
                            f"git clean: {git_clean(store)}")
        problems += final_checks(store, env, base / "state", writer.tokens)
        daemon.stop()
        if problems:
            say(f"    activity log tail: {tail(base / 'state' / instance_key(store) / 'activity.log')}")
        return TrialResult(seed, not problems, kills, waited, problems, after_start, writer.writes, len(writer.tokens))
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def final_checks(store: Path, env: dict[str, str], state: Path, tokens: list[str]) -> list[str]:
    problems: list[str] = []
    check = _run([sys.executable, "-m", "distilld", "check", str(store)], env)
    if check.returncode != 0:
        problems.append(f"`distilld check` exit {check.returncode}: {' / '.join(check.stdout.splitlines()[:6])}")
    text, head = tree_text(store), head_text(store)
    missing_tree = [t for t in tokens if t not in text]
    missing_head = [t for t in tokens if t not in head]
    if missing_tree:
        problems.append(f"{len(missing_tree)} writer tokens missing from the tree: {missing_tree[:5]}")
    if missing_head:
        problems.append(f"{len(missing_head)} writer tokens missing from HEAD: {missing_head[:5]}")
    if not git_clean(store):
        problems.append("git status not clean: " + _run(["git", "status", "--porcelain"], env, store).stdout.strip())
    left = leftovers(store, state)
    if left:
        problems.append(f"left behind: {left[:8]}")
    status = _run([sys.executable, "-m", "distilld", "status", "--json", str(store)], env)
    try:
        view = json.loads(status.stdout)
    except ValueError:
        view = {}
    if status.returncode != 0 or not view.get("running") or view.get("stuck"):
        problems.append(f"`distilld status` exit {status.returncode}, stuck: {view.get('stuck')}")
    return problems


def tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text().splitlines()[-lines:])
    except OSError:
        return "(none)"
