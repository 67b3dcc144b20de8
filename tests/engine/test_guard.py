"""The checks before every write pass (engine/guard.py) and the lock of a dead distilld
(engine/lock/liveness.py): stores in tmp_path, the real CLI in child processes where a kill is involved."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from boundaries import sampled
from builders import FIXED_NOW
from distilld.actions.gc import run_gc_apply
from distilld.cli import main as cli_main
from distilld.engine.guard import (
    LostLines,
    check_before_writing,
    lost_ledger_lines,
    refuse_shrunken_ledger,
    refuse_unless_settled,
    remember_ledger,
    seen_ledger_path,
    set_aside_seen_ledger,
    settle_set_aside_ledger,
    sweep_temp_files,
    temp_owner_pid,
)
from distilld.engine.lock import AcquireKind, LockLine, StoreLock, abandoned_owner, default_owner
from distilld.engine.passes.gc.apply import GcRefused
from distilld.errors import LockHeld, UnsafeStore
from distilld.locations import instance_key, state_dir
from distilld.policy import load_policy
from distilld.store.snapshot import take_snapshot
from hostile import busy_store, dead_pid, run_distilld
from waiting import wait_for

POLICY = load_policy()


def host_owner(pid: int) -> str:
    return default_owner().rsplit(".", 1)[0] + f".{pid}"


def write_lock(root: Path, owner: str, epoch: int) -> None:
    (root / ".lock").write_text(f"{owner} {epoch} 2026-11-30T12:00:00Z\n")


# -- own dead locks ---------------------------------------------------------------------------

def test_a_dead_distilld_of_this_host_is_taken_over_at_once(tmp_path: Path) -> None:
    owner = host_owner(dead_pid())
    write_lock(tmp_path, owner, int(time.time()))  # fresh: 300 s would be left to wait
    result = StoreLock(tmp_path, "distilld.test.1").acquire(0)
    assert result.kind is AcquireKind.TOOK_OVER and result.previous_owner == owner
    assert result.abandoned == f"its owner, process {owner.rsplit('.', 1)[1]} of this machine, no longer runs"
    assert "took over abandoned lock" in str(result)
    assert (tmp_path / ".lock").read_text().startswith("distilld.test.1 ")
    assert (tmp_path / ".status").read_text().startswith("running ")


def test_a_lock_taken_fresh_or_abandoned_says_exactly_how(tmp_path: Path) -> None:
    import logging

    import structlog
    from structlog.testing import capture_logs

    free = StoreLock(tmp_path, "distilld.test.1").acquire(0)
    assert (free.previous_owner, free.previous_age, free.abandoned, str(free)) == (None, None, None, "acquired")
    StoreLock(tmp_path, "distilld.test.1").release()
    owner = host_owner(dead_pid())
    now = int(time.time())
    write_lock(tmp_path, owner, now - 5)
    before = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))  # a command drops info
    try:
        with capture_logs() as logged:
            taken = StoreLock(tmp_path, "distilld.test.2", clock=lambda: now).acquire(0)
    finally:
        structlog.configure(**before)
    assert str(taken) == f"acquired (took over abandoned lock from {owner}: {taken.abandoned})"
    assert [(e["event"], e["previous_owner"], e["age_seconds"]) for e in logged] == \
        [("lock.abandoned_taken_over", owner, 5)]


def test_a_dead_owners_lock_at_exactly_the_stale_age_is_taken_over_as_stale(tmp_path: Path) -> None:
    owner = host_owner(dead_pid())
    now = int(time.time())
    write_lock(tmp_path, owner, now - int(POLICY.lock.stale_seconds))
    taken = StoreLock(tmp_path, "distilld.test.1", clock=lambda: now,
                      stale_seconds=POLICY.lock.stale_seconds).acquire(0)
    assert taken.kind is AcquireKind.TOOK_OVER and taken.abandoned is None
    assert str(taken) == f"acquired (took over stale lock from {owner})"


def test_a_status_that_cannot_be_written_gives_the_new_lock_back_and_says_so(tmp_path: Path) -> None:
    from distilld.errors import LockIOError

    (tmp_path / ".status").mkdir()  # a folder where the status line goes: it cannot be replaced
    (tmp_path / ".status" / "x").write_text("x")
    with pytest.raises(LockIOError) as caught:
        StoreLock(tmp_path, "distilld.test.1").acquire(0)
    assert str(caught.value).startswith(f"{tmp_path / '.status'}: cannot write the status (the lock was dropped)")
    assert not (tmp_path / ".lock").exists()


def test_why_a_wait_ran_out_names_a_fresh_holder_else_says_contended(tmp_path: Path) -> None:
    now = int(time.time())
    lock = StoreLock(tmp_path, "distilld.test.1", clock=lambda: now, stale_seconds=300)
    fresh = lock._acquirer.held_error(LockLine("alpha", now - 10))
    assert str(fresh) == (f"{tmp_path / '.lock'}: held by alpha for 10s (stale after 300s); another "
                          "distillation is running, retry later")
    assert (fresh.owner, fresh.age) == ("alpha", 10)
    for seen in (LockLine("alpha", now - 400), LockLine("distilld.test.1", now - 10), None):
        contended = lock._acquirer.held_error(seen)
        assert str(contended) == (f"{tmp_path / '.lock'}: held (contended): other clients kept changing "
                                  "the lock; retry later")
        assert (contended.owner, contended.age) == (None, None)


def test_our_own_pid_and_pids_below_one_are_never_judged_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    from distilld.engine.lock import pid_alive

    # Our own pid, even in a lock older than this process: this process is no one's leftover.
    assert abandoned_owner(LockLine(host_owner(os.getpid()), 1)) is None
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signalled.append((pid, sig)))
    assert pid_alive(0) and pid_alive(-1)  # a process group, or every process: never signalled
    assert signalled == []
    assert pid_alive(4242) and signalled == [(4242, 0)]  # asking is signal 0, which only checks

    def refused(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "kill", refused)
    assert pid_alive(4242)  # another user's process runs; we may not signal it
    assert abandoned_owner(LockLine(host_owner(4242), int(time.time()) + 5)) is None


@pytest.mark.parametrize("owner", ["distill-session-7", "distilld.some-other-host.{pid}", "distilld.{host}.x1"])
def test_foreign_locks_keep_the_stale_period(tmp_path: Path, owner: str) -> None:
    host = default_owner().split(".")[1]
    write_lock(tmp_path, owner.format(pid=dead_pid(), host=host), int(time.time()))
    with pytest.raises(LockHeld):
        StoreLock(tmp_path, "distilld.test.1").acquire(0)


@contextlib.contextmanager
def sleeping_child(name: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A process that sleeps until killed, once /proc shows it (under ``name``, when given)."""
    rename = f"open('/proc/self/comm', 'w').write({name!r}); " if name is not None else ""
    child = subprocess.Popen([sys.executable, "-c", f"{rename}import time; time.sleep(60)"])

    def shown() -> bool:
        with contextlib.suppress(OSError):
            return name is None or f"({name})".encode() in Path(f"/proc/{child.pid}/stat").read_bytes()
        return False

    try:
        wait_for(shown, 30, f"/proc to show the sleeping child{'' if name is None else ' as ' + name}")
        yield child
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process start times come from /proc")
def test_a_reused_pid_is_found_whatever_its_process_is_called(tmp_path: Path) -> None:
    # A name may hold ")" (systemd's "(sd-pam)" does): the fields start after the last one.
    with sleeping_child("x) y") as child:
        reason = abandoned_owner(LockLine(host_owner(child.pid), int(time.time()) - 120))
    assert reason == f"process {child.pid} of this machine started after the lock was written (a reused pid)"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process start times come from /proc")
def test_a_lock_written_just_after_its_process_started_is_not_judged_a_reused_pid(tmp_path: Path) -> None:
    from distilld.engine.lock.liveness import _process_start_epoch

    with sleeping_child() as child:
        started = _process_start_epoch(child.pid)
        assert started is not None
        # /proc gives the start in clock ticks since boot, read up to a second late: a line
        # stamped a second before the start as read may still be this process's own.
        assert abandoned_owner(LockLine(host_owner(child.pid), int(started) - 1)) is None
        write_lock(tmp_path, host_owner(child.pid), int(started) - 1)
        with pytest.raises(LockHeld):
            StoreLock(tmp_path, "distilld.test.1").acquire(0)


def test_a_live_owner_keeps_its_lock_and_a_reused_pid_does_not(tmp_path: Path) -> None:
    with sleeping_child() as child:
        now = int(time.time())
        # Written after the child started: the child may be its writer, so the lock stands.
        assert abandoned_owner(LockLine(host_owner(child.pid), now + 5)) is None
        assert child.poll() is None  # asking whether it runs sends it no signal
        write_lock(tmp_path, host_owner(child.pid), now + 5)
        with pytest.raises(LockHeld):
            StoreLock(tmp_path, "distilld.test.1").acquire(0)
        # Written long before the child started: that pid was reused, the writer is gone.
        reason = abandoned_owner(LockLine(host_owner(child.pid), now - 120))
        if Path("/proc/self/stat").exists():
            assert reason == f"process {child.pid} of this machine started after the lock was written (a reused pid)"


@pytest.mark.slow  # runs child processes: in the full run, not the default one
def test_a_killed_pass_is_followed_at_once_by_the_next(tmp_path: Path) -> None:
    store = tmp_path / "store"
    busy_store(store)
    killed = run_distilld(["gc", "--apply", str(store)], env={"DISTILLD_CRASH_AT": "file-moved"})
    assert killed.returncode == -signal.SIGKILL
    assert (store / ".lock").read_text().split()[0].startswith("distilld.")
    started = time.monotonic()
    done = run_distilld(["gc", "--apply", str(store)])  # --wait 0: a held lock would refuse at once
    assert done.returncode == 0, done.stderr
    assert "recovered projects/heron.md" in done.stdout
    assert not (store / ".lock").exists()
    assert time.monotonic() - started < POLICY.lock.stale_seconds


@pytest.mark.slow  # runs child processes: in the full run, not the default one
def test_the_takeover_after_a_kill_leaves_a_json_report_clean(tmp_path: Path) -> None:
    # The lock package logs the takeover; a command's stdout must stay its --json document.
    store = tmp_path / "store"
    busy_store(store)
    killed = run_distilld(["gc", "--apply", str(store)], env={"DISTILLD_CRASH_AT": "file-moved"})
    assert killed.returncode == -signal.SIGKILL
    done = run_distilld(["gc", "--apply", "--json", str(store)])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True
    assert "took over the lock of distilld." in done.stderr and "no longer runs" in done.stderr
    assert "without a heartbeat" not in done.stderr


# -- temp files ---------------------------------------------------------------------------------

def test_the_temp_patterns_name_their_pid() -> None:
    assert temp_owner_pid(".SPINE.md.distilld-tmp.4242.0a1b2c3d") == 4242
    assert temp_owner_pid(".lock.swap.77.ab12cd34") == 77
    assert temp_owner_pid(".lock.new.78.ab12cd34") == 78
    assert temp_owner_pid(".status.tmp.79") == 79
    for other in ("SPINE.md", ".lock", ".lock.takeover", ".status", "x.md.tmp", ".x.distilld-tmp.12"):
        assert temp_owner_pid(other) is None


KILL_MID_WRITE = textwrap.dedent("""
    import os, signal, sys
    target = int(os.environ["KILL_AT_FSYNC"])
    real = os.fsync
    count = [0]
    def fsync(fd):
        count[0] += 1
        if count[0] == target:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(fd)
    os.fsync = fsync
    from distilld.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def temp_files(*folders: Path) -> list[str]:
    return sorted(str(p) for f in folders for p in f.rglob("*") if temp_owner_pid(p.name) is not None)


FSYNC_STRIDE = 4  # the fsyncs are split into this many interleaved sets, n = set, set + 4, ...
FSYNC_COMMANDS = [["gc", "--apply"], ["restore", "archive/projects/marlin.md"], ["compact", "--apply"]]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "first"), sampled(
    [pytest.param(command, first, id=f"{command[0]}-from-{first}-every-{FSYNC_STRIDE}")
     for command in FSYNC_COMMANDS for first in range(1, FSYNC_STRIDE + 1)],
    group=lambda case: case.values[0][0], keep=0, always=lambda case: case.values[1] == 1))
def test_a_kill_at_every_fsync_leaves_temps_the_next_pass_sweeps(tmp_path: Path, command: list[str],
                                                                 first: int) -> None:
    """SIGKILL at the n-th fsync of a real pass, for n = first, first + 4, ... until the pass
    completes (the four sets together are every n): each temp kind it leaves (the lock's
    .lock.new/.lock.swap, .status.tmp, fs temps of the manifest, the journals, SPINE, catalog) is
    removed by the next pass, which leaves none of its own. Set 1 is the sample: its first kill,
    at the pass's first fsync (its lock's new-file temp), always leaves a temp to sweep; a later
    set may fall only on fsyncs of folders, which leave none."""
    kinds: set[str] = set()
    kills = 0
    for n in range(first, 200, FSYNC_STRIDE):
        store = tmp_path / f"store-{n}"
        busy_store(store)
        args = [*command[:1], *command[1:], str(store)] if command[0] != "restore" else ["restore", command[1], str(store)]
        child = subprocess.run([sys.executable, "-c", KILL_MID_WRITE, *args], capture_output=True, text=True,
                               env={**os.environ, "KILL_AT_FSYNC": str(n)}, timeout=120)
        left = temp_files(store)
        kinds.update(Path(p).name.split(".distilld-tmp")[0] if "distilld-tmp" in p else
                     ".".join(Path(p).name.split(".")[:3]) for p in left)
        # The next pass in this process (the same code path as the command line, one process
        # start fewer per kill): the temps belong to the killed child's pid, not to this one.
        said = io.StringIO()
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            cli_main(args)
        assert temp_files(store) == [], (n, left, said.getvalue())
        if child.returncode == 0 or child.returncode == 1:
            break
        kills += 1
    assert kills, f"no kill at fsync {first} or later: the pass made fewer fsyncs"
    assert kinds or first != 1, "no kill ever caught a temp file"


def test_planted_temps_of_dead_processes_are_swept_and_live_ones_kept(tmp_path: Path,
                                                                    distilld_dirs: dict[str, Path]) -> None:
    store = tmp_path / "store"
    busy_store(store)
    dead = dead_pid()
    state = distilld_dirs["state"]
    planted = [store / f".lock.swap.{dead}.ab12cd34", store / f".lock.new.{dead}.ab12cd34",
               store / f".status.tmp.{dead}", store / f"data/gc-manifests/.x.json.distilld-tmp.{dead}.0a0b0c0d",
               store / f"data/compact-journals/.j.json.distilld-tmp.{dead}.0a0b0c0d",
               store / f"craft/.testing.md.distilld-tmp.{dead}.0a0b0c0d",
               store / f".git/distilld/.state.json.distilld-tmp.{dead}.0a0b0c0d",
               state / f"x/.status.json.distilld-tmp.{dead}.0a0b0c0d"]
    live = [store / f".lock.swap.{os.getppid()}.ab12cd34", store / f"projects/.k.md.distilld-tmp.{os.getppid()}.aa"]
    for path in planted + live:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
    removed = sweep_temp_files(store, state, store / ".git" / "distilld")
    assert sorted(removed) == sorted(planted)
    assert all(p.exists() for p in live)


def test_every_write_pass_sweeps_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    busy_store(store)
    temp = store / f"projects/.heron.md.distilld-tmp.{dead_pid()}.0a0b0c0d"
    temp.write_bytes(b"half")
    assert cli_main(["gc", "--apply", str(store)]) == 0, capsys.readouterr().err
    assert not temp.exists()


# -- the ledger only grows -----------------------------------------------------------------------

def archived_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    busy_store(store)
    run_gc_apply(store, POLICY, lambda: FIXED_NOW)  # archives heron: two ledger lines now
    return store


def drop_first_ledger_line(store: Path) -> bytes:
    ledger = store / "archive/LEDGER.md"
    raw = ledger.read_bytes()
    first = next(line for line in raw.split(b"\n") if line.startswith(b"- "))
    ledger.write_bytes(raw.replace(first + b"\n", b""))
    return raw


WRITE_COMMANDS = [
    ["gc", "--apply"], ["gc", "--revert"], ["restore", "archive/projects/heron.md"], ["compact", "--apply"],
    ["migrate", "--apply"], ["catalog", "--write"],
]


def test_a_pass_remembers_the_ledger_in_the_state_folder(tmp_path: Path) -> None:
    store = archived_store(tmp_path)
    kept = state_dir() / instance_key(store.resolve()) / "LEDGER.seen.md"  # the name the README gives
    assert seen_ledger_path(store.resolve()) == kept
    assert kept.read_bytes() == (store / "archive/LEDGER.md").read_bytes()
    assert lost_ledger_lines(store.resolve()) is None
    first = next(line for line in kept.read_text().splitlines() if line.startswith("- "))
    drop_first_ledger_line(store)
    lost = lost_ledger_lines(store.resolve())
    assert lost is not None and (lost.lines, lost.since, lost.kept_in) == ([first], "the last pass",
                                                                          f"{kept} and in git")
    with pytest.raises(UnsafeStore) as refused:
        refuse_shrunken_ledger(store.resolve())
    assert str(refused.value) == f"{store.resolve() / 'archive/LEDGER.md'}: {lost}"
    remembered = kept.read_bytes()
    remember_ledger(store.resolve())  # the end of a pass during which the line went: the copy keeps it
    assert kept.read_bytes() == remembered and first.encode() in remembered


@pytest.mark.parametrize("command", WRITE_COMMANDS, ids=lambda c: " ".join(c))
def test_a_ledger_with_a_deleted_line_makes_every_write_pass_refuse(
        tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    store = archived_store(tmp_path)
    whole = drop_first_ledger_line(store)
    (store / "CATALOG.md").write_bytes((store / "CATALOG.md").read_bytes() + b"\n")  # catalog --write has work
    before = {p: p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file() and not p.name.startswith((".lock", ".status"))}
    args = command[:1] + ([command[1], str(store)] if command[0] == "restore" else [*command[1:], str(store)])
    code = cli_main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "archive/LEDGER.md lost 1 line(s)" in err and "marlin.md" in err
    after = {p: p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file() and not p.name.startswith((".lock", ".status"))}
    assert after == before
    (store / "archive/LEDGER.md").write_bytes(whole)  # put back: the pass runs again
    assert lost_ledger_lines(store.resolve()) is None


def test_a_changed_ledger_line_counts_as_lost_and_status_names_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store = archived_store(tmp_path)
    ledger = store / "archive/LEDGER.md"
    ledger.write_bytes(ledger.read_bytes().replace(b"reason: past threshold", b"reason: edited"))
    lost = lost_ledger_lines(store.resolve())
    assert lost is not None and len(lost.lines) == 1 and "past threshold" in lost.lines[0]
    assert cli_main(["status", "--store", str(store)]) in (0, 3)
    out = capsys.readouterr().out
    assert "nothing is archived, restored or migrated" in out and "marlin.md" in out
    with pytest.raises(UnsafeStore):
        run_gc_apply(store, POLICY, lambda: FIXED_NOW)


def test_a_join_sets_an_earlier_stores_kept_ledger_aside_and_drops_it_only_when_nothing_is_lost(
        tmp_path: Path) -> None:
    store = archived_store(tmp_path).resolve()
    kept = seen_ledger_path(store)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600  # the state folder's copy is private
    earlier = kept.read_bytes()
    aside = set_aside_seen_ledger(store, "20261130T120000Z")
    assert aside == kept.with_name("LEDGER.seen.before-join-20261130T120000Z.md")
    assert not kept.exists() and aside.read_bytes() == earlier
    assert set_aside_seen_ledger(store, "20261130T120001Z") is None  # nothing kept: nothing to set aside
    assert settle_set_aside_ledger(store, aside) is None and not aside.exists()  # the joined ledger holds it all
    aside.write_bytes(earlier + b"- 2026-01-01 archive | from: projects/gone.md | to: archive/projects/gone.md\n")
    assert settle_set_aside_ledger(store, aside) == (
        f"1 ledger line(s) an earlier store at this path had are not in the joined store's ledger: kept in "
        f"{aside}; add them back by hand if they belong to this store")
    assert aside.exists()


def test_a_pass_sweeps_the_store_its_state_folder_and_git_s_distilld_folder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    busy_store(store)
    (store / ".git/distilld").mkdir(parents=True)
    root = store.resolve()
    dead = dead_pid()
    planted = [root / f".x.md.distilld-tmp.{dead}.0a", root / f".git/distilld/.s.json.distilld-tmp.{dead}.0b",
               state_dir() / instance_key(root) / f".status.json.distilld-tmp.{dead}.0c"]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
    check_before_writing(root)
    assert [path for path in planted if path.exists()] == []


def test_a_pending_migration_stops_a_pass_naming_its_first_marker(tmp_path: Path) -> None:
    store = tmp_path / "store"
    busy_store(store)
    for stamp in ("20261130T120000Z", "20261201T120000Z"):
        (store / "data/migration" / stamp).mkdir(parents=True)
        (store / "data/migration" / stamp / "PENDING").write_bytes(b"")
    with pytest.raises(GcRefused) as refused:
        refuse_unless_settled(take_snapshot(store), GcRefused, "before gc", "migrate it first")
    first = store.resolve() / "data/migration/20261130T120000Z/PENDING"
    assert str(refused.value) == (f"{first}: a store migration is PENDING; finish or revert it "
                                  "(distilld migrate --finish / --revert) before gc")
    shutil.rmtree(store / "data/migration")
    (store / "CATALOG.md").unlink()  # a store from before the 1.2 layout
    with pytest.raises(GcRefused) as unmigrated:
        refuse_unless_settled(take_snapshot(store), GcRefused, "before gc", "migrate it first")
    assert str(unmigrated.value) == f"{store.resolve()}: pre-1.2 store (no CATALOG.md); migrate it first"


def test_lost_lines_are_shown_three_at_most_each_cut_at_100_characters() -> None:
    long = "- 2026-11-30T12:00:00Z | archive | " + "x" * 100
    lost = LostLines([long, "- b", "- c", "- d", "- e"], "the last pass", "the kept copy")
    assert str(lost) == (f"archive/LEDGER.md lost 5 line(s) since the last pass: {long[:100]}; - b; - c and 2 more. "
                         "The ledger only grows: put the lines back (they are in the kept copy); nothing is "
                         "archived, restored or migrated until then")
    for lines, shown in ((["- b", "- c", "- d"], "- b; - c; - d. "), (["- b", "- c", "- d", "- e"],
                                                                       "- b; - c; - d and 1 more. ")):
        assert str(LostLines(lines, "the last pass", "git")).startswith(
            f"archive/LEDGER.md lost {len(lines)} line(s) since the last pass: {shown}The ledger")


def test_a_ledger_that_grew_by_a_merge_is_accepted(tmp_path: Path) -> None:
    store = archived_store(tmp_path)
    ledger = store / "archive/LEDGER.md"
    lines = ledger.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"- "))
    lines.insert(at, b"- 2026-01-02 restore | from: archive/projects/old.md | to: projects/old.md | reason: other machine")
    ledger.write_bytes(b"\n".join(lines))  # a line from another machine sorted in before ours
    assert lost_ledger_lines(store.resolve()) is None


def test_the_links_check_runs_before_a_pass_writes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    busy_store(store)
    outside = tmp_path / "outside"
    os.rename(store / "archive", outside)
    (store / "archive").symlink_to(outside)
    with pytest.raises(UnsafeStore, match=f"{store}/archive is a symbolic link \\(to {outside}\\)"):
        run_gc_apply(store, POLICY, lambda: FIXED_NOW)
    assert (store / "projects/heron.md").exists() and not (outside / "projects/heron.md").exists()
    assert not (store / ".lock").exists()
    assert not (store / "data").exists()  # not even the manifest


def test_the_sweep_never_enters_git_or_a_linked_folder_and_goes_past_a_vanished_temp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, outside = tmp_path / "store", tmp_path / "outside"
    busy_store(store)
    dead = dead_pid()
    outside.mkdir()
    (store / "notes").symlink_to(outside)  # a folder distilld does not manage, linked out of the store
    kept = [outside / f".x.md.distilld-tmp.{dead}.0a0b0c0d", store / f".git/objects/.y.distilld-tmp.{dead}.0a"]
    swept = [store / f"craft/.{name}.distilld-tmp.{dead}.0a0b0c0d" for name in ("b", "c", "d")]
    for path in kept + swept + [store / f"craft/.a.distilld-tmp.{dead}.0a0b0c0d"]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
    real_unlink = Path.unlink

    def another_sweeper_was_first(self: Path, missing_ok: bool = False) -> None:
        if self.name.startswith(".a."):  # the first of the folder, gone before our unlink
            real_unlink(self)
        real_unlink(self, missing_ok)

    monkeypatch.setattr(Path, "unlink", another_sweeper_was_first)
    assert sorted(sweep_temp_files(store)) == sorted(swept)
    assert all(path.exists() for path in kept)


@pytest.mark.parametrize("count", [1, 2, 5])
def test_every_link_is_counted_and_the_first_four_named(tmp_path: Path, count: int) -> None:
    store = tmp_path / "store"
    busy_store(store)
    outside = tmp_path / "outside"
    outside.mkdir()
    for folder in ("craft", "evidence", "inbox", "ops", "profile")[:count]:
        if (store / folder).exists():
            os.rename(store / folder, outside / folder)
        else:
            (outside / folder).mkdir()
        (store / folder).symlink_to(outside / folder)
    with pytest.raises(UnsafeStore) as refused:
        run_gc_apply(store, POLICY, lambda: FIXED_NOW)
    more = {1: "", 2: f" (and 1 more: evidence -> {outside}/evidence)",
            5: f" (and 4 more: ops -> {outside}/ops, profile -> {outside}/profile, evidence -> {outside}/evidence)"}
    assert str(refused.value) == (
        f"{store}/craft is a symbolic link (to {outside}/craft){more[count]}: distilld never writes through a link, "
        "so this pass wrote nothing. Replace the link with a real folder holding the files, then run it again.")


def test_the_daemon_sweeps_at_start_up_and_logs_it(tmp_path: Path, distilld_dirs: dict[str, Path]) -> None:
    store = tmp_path / "store"
    busy_store(store)
    dead = dead_pid()
    temps = [store / f".lock.swap.{dead}.ab12cd34", store / f".status.tmp.{dead}",
             store / f"data/compact-journals/.j.json.distilld-tmp.{dead}.0a0b0c0d"]
    for path in temps:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
    done = run_distilld(["run", "--once", "--store", str(store)])
    assert done.returncode in (0, 1), done.stderr
    assert not [p for p in temps if p.exists()]
    activity = next(distilld_dirs["state"].glob("*/activity.log")).read_text()
    assert "removed 3 temp file(s) left by processes that no longer run" in activity
    log = next(distilld_dirs["state"].glob("*/distilld.jsonl")).read_text()
    records = [json.loads(line) for line in log.splitlines()]
    logged = sorted(r["path"] for r in records if r.get("event") == "temp.removed"
                    and r.get("logger") == "distilld.guard" and r.get("why") == "left by a process that no longer runs")
    assert logged == sorted(str(p.resolve()) for p in temps)


def test_the_daemon_archives_nothing_and_commits_nothing_while_the_ledger_is_short(
        tmp_path: Path, distilld_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    store = archived_store(tmp_path)
    (store / ".lifecycle").write_text("enabled\n")
    whole = drop_first_ledger_line(store)
    shortened = (store / "archive/LEDGER.md").read_bytes()
    done = run_distilld(["run", "--once", "--store", str(store)])
    assert done.returncode == 1, done.stderr  # a pass failed: the follow, stuck on the ledger
    assert (store / "archive/LEDGER.md").read_bytes() == shortened
    activity = next(distilld_dirs["state"].glob("*/activity.log")).read_text()
    assert "stuck: archive/LEDGER.md lost 1 line(s)" in activity and "marlin.md" in activity
    stuck_line = "    - archive/LEDGER.md lost 1 line(s) since the last pass"
    assert cli_main(["status", "--store", str(store)]) in (0, 3)
    assert stuck_line in capsys.readouterr().out
    (store / "archive/LEDGER.md").write_bytes(whole)  # put back: no longer stuck on it
    assert cli_main(["status", "--store", str(store)]) in (0, 3)
    assert stuck_line not in capsys.readouterr().out


def test_a_new_store_where_an_earlier_one_stood_is_not_refused_and_the_old_copy_is_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 27: the state folder is keyed on the path, and a new store there was refused with
    # "the ledger lost lines" (the earlier store's ledger copy)
    store = archived_store(tmp_path)
    old_copy = seen_ledger_path(store.resolve()).read_bytes()
    store.rename(tmp_path / "the-earlier-store")  # still on disk: the new folder is another one
    assert cli_main(["new", str(store)]) == 0
    assert lost_ledger_lines(store.resolve()) is None
    assert cli_main(["gc", "--apply", str(store)]) == 0, capsys.readouterr().err
    kept = list(seen_ledger_path(store.resolve()).parent.glob("LEDGER.seen.another-store-*.md"))
    if (store / "archive/LEDGER.md").exists():  # the pass remembered the new store's ledger
        assert [p.read_bytes() for p in kept] == [old_copy]


def test_a_ledger_edited_in_place_in_another_folder_is_still_refused(tmp_path: Path) -> None:
    store = archived_store(tmp_path)
    moved = tmp_path / "moved"
    shutil.copytree(store, moved)  # another folder (a restore from a backup) at the same path
    shutil.rmtree(store)
    moved.rename(store)
    drop_first_ledger_line(store)  # it keeps the other line: the same store, shrunk
    assert lost_ledger_lines(store.resolve()) is not None
