"""`distilld run`: the wiring of the long-running process.

One process per store (an flock in the runtime folder). Threads: watchdog's observer, the
debouncer, APScheduler's clock, the one worker that runs every job, and the control socket;
the main thread only supervises, refreshes status.json, answers systemd's watchdog and handles
signals (SIGTERM/SIGINT: finish the current step and exit 0, 130 after SIGINT; SIGHUP: reload the settings;
SIGUSR1: run everything now).
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from .. import __version__
from ..engine.guard import sweep_temp_files
from ..engine.lock import LockStateKind, default_owner
from ..errors import StoreError
from ..exits import INTERRUPTED
from ..log import ActivityLog, StatusFile, configure_logging, console_mode, get_logger, read_json, utc_stamp
from ..policy import Policy, load_policy
from ..registry import default_jobs, scheduled_jobs
from ..settings import InstancePaths, Settings, ensure_private_dir
from ..store.paths import set_extra_synced_folders
from ..store.unmanaged import unmanaged_folders
from . import sdnotify
from .control import ControlServer
from .daemon_requests import answer, reload_settings
from .instance import InstanceLock
from .job_runner import run_job
from .jobs import JobEnv
from .once import run_cycle, say_on_stderr
from .scheduler import Schedule, Worker
from .store_git import StoreGit
from .debounce import Debouncer
from .watcher import StoreWatcher

log = get_logger("distilld.daemon")

TICK_SECONDS = 15.0  # supervision and status refresh; events and signals wake it sooner



def _parse_stamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


class Daemon:
    def __init__(self, settings: Settings, *, config: Path | None = None,
                 overrides: dict[str, Any] | None = None, once: bool = False,
                 lock_wait_seconds: float | None = None) -> None:
        self.settings = settings
        self.config = config
        self.overrides = overrides or {}
        self.once = once
        self.lock_wait_seconds = lock_wait_seconds  # --once --wait
        self.store = settings.store
        set_extra_synced_folders(settings.git.extra_folders)
        self.paths = InstancePaths.for_store(self.store)
        self.stop = threading.Event()
        self.wake = threading.Event()
        self._reload_requested = False
        self._stop_reason = "a request"
        self.env: JobEnv | None = None
        self.watcher: StoreWatcher | None = None
        self.debouncer: Debouncer | None = None
        self.worker: Worker | None = None
        self.schedule: Schedule | None = None
        self.control: ControlServer | None = None
        self._distiller_seen = False  # a .lock change since the last batch of changes

    # -- entry -----------------------------------------------------------------------------

    def run(self) -> int:
        self.paths.check_socket_length()
        ensure_private_dir(self.paths.state)
        ensure_private_dir(self.paths.runtime)
        if self.once and not self.store.is_dir():
            raise StoreError(missing_store_line(self.store, waiting=False))
        instance = InstanceLock(self.paths.instance_lock)
        instance.acquire(self.store)
        try:
            log_settings = self.settings.log
            configure_logging(self.paths.json_log, log_settings.level, log_settings.console,
                              log_settings.max_bytes, log_settings.backups)
            policy = load_policy(self.settings.policy)
            self.env = self._make_env(policy)
            self._sweep_temp_files()
            self._repair_index()
            self._install_signals()
            code = self._run_once() if self.once else self._serve()
            # Ctrl-C is 130 as the exit table says (exits.py); SIGTERM is a clean stop, 0
            return INTERRUPTED if self._stop_reason == "SIGINT" else code
        finally:
            instance.release()

    def _make_env(self, policy: Policy) -> JobEnv:
        previous = read_json(self.paths.status_file) or {}
        status = StatusFile(self.paths.status_file, {
            "schema": 1, "version": __version__, "pid": os.getpid(), "store": str(self.store),
            "mode": "once" if self.once else "daemon", "state": "starting", "started_at": utc_stamp(),
            "paused": False, "passes": previous.get("passes") or {}, "budgets": previous.get("budgets"),
            "git": previous.get("git") or {}, "waiting": None, "current": None, "last_error": None,
            "lifecycle": None, "settings": {"config": str(self.config) if self.config else None},
        })
        activity = ActivityLog(self.paths.activity_log, self.settings.log.max_bytes, self.settings.log.backups)
        env = JobEnv(settings=self.settings, policy=policy, store=self.store, owner=default_owner(),
                     status=status, activity=activity, stop=self.stop, lock_changed=threading.Event(),
                     git=StoreGit(self.store, self.settings, policy, lambda: datetime.now(UTC)),
                     block_on_lock=self.once, lock_wait_seconds=self.lock_wait_seconds,
                     say=say_on_stderr if self.once else None)
        if not self.store.is_dir():
            return env  # nothing to ask git yet; the first pass after the store appears does
        try:
            status.update(git={**(status.get("git") or {}), **env.git.state()}, flush=False)
        except Exception:  # an odd repository must not keep the daemon from starting
            log.exception("git.state_failed")
        return env

    def _sweep_temp_files(self) -> None:
        """Temp files a killed distilld left (in the store and the state folder) go at start-up."""
        folders = [self.paths.state] + ([self.store] if self.store.is_dir() else [])
        removed = sweep_temp_files(*folders)
        if removed and self.env is not None:
            self.env.activity.write(f"removed {len(removed)} temp file(s) left by processes that no longer run: "
                                    + ", ".join(str(p) for p in removed[:5]))

    def _repair_index(self) -> None:
        """What a killed distilld left in git's index is set right before anything else runs."""
        if self.env is None or not self.store.is_dir():
            return
        repaired = self.env.git.repair_index()
        if repaired:
            self.env.activity.write(f"set {len(repaired)} index entr{'y' if len(repaired) == 1 else 'ies'} back to "
                                    "HEAD: they named what the file held before distilld's last commit (a killed "
                                    "distilld left them so): " + ", ".join(repaired[:5]))

    # -- signals ---------------------------------------------------------------------------

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # tests may drive a daemon from a thread; signals stay with the test runner
        signal.signal(signal.SIGTERM, self._on_stop_signal)
        signal.signal(signal.SIGINT, self._on_stop_signal)
        signal.signal(signal.SIGHUP, self._on_reload_signal)
        signal.signal(signal.SIGUSR1, self._on_run_now_signal)

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        self.request_stop(signal.Signals(signum).name)

    def _on_reload_signal(self, signum: int, frame: FrameType | None) -> None:
        self.request_reload()

    def _on_run_now_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.worker is not None:
            for job in default_jobs():
                self.worker.request(job, "SIGUSR1")

    def request_stop(self, reason: str = "a request") -> None:
        self._stop_reason = reason
        self.stop.set()
        self.wake.set()
        if self.env is not None:
            self.env.lock_changed.set()  # a job waiting for the lock looks up and sees the stop

    # -- one cycle -------------------------------------------------------------------------

    def _run_once(self) -> int:
        code = run_cycle(self._env, self.stop, self.lock_wait_seconds)
        if not self.stop.is_set():
            return code
        # a signal ended the cycle early: each pass stopped at a boundary (finished or rolled back)
        say_on_stderr(f"stopped by {self._stop_reason} before the cycle finished; the next run picks it up")
        return INTERRUPTED

    # -- the daemon ------------------------------------------------------------------------

    @property
    def _env(self) -> JobEnv:
        assert self.env is not None
        return self.env

    def _serve(self) -> int:
        env = self._env
        settings = self.settings
        self.control = ControlServer(self.paths.control_socket, self.dispatch)
        self.control.start()  # first: it sets the umask, which must not race other threads
        self.worker = Worker(lambda job, trigger: run_job(env, job, trigger), after=self._after_job)
        self.schedule = Schedule(self.worker, settings.schedule)
        self.debouncer = Debouncer(settings.watch.quiet_seconds, settings.watch.max_wait_seconds, self._on_quiet)
        self.watcher = StoreWatcher(self.store, self.debouncer, self._on_lock, self._on_rescan,
                                    settings.watch.observer, settings.watch.polling_interval_seconds)
        env.worker, env.schedule, env.watcher = self.worker, self.schedule, self.watcher
        self.debouncer.start()
        self.worker.start()
        env.activity.write(f"started: following {self.store} (pid {os.getpid()}, distilld {__version__})")
        if not self.watcher.start():
            env.activity.write(f"waiting: {missing_store_line(self.store, waiting=True)}")
        for folder in unmanaged_folders(self.store, settings.git.extra_folders):
            env.activity.write(folder.describe())
        git_note = (env.status.get("git") or {}).get("note")
        if git_note and settings.git.commit:
            env.activity.write(f"not committing the agents' changes: {git_note}")
        self.worker.request("follow", "start")
        self.schedule.start(self._last_runs())
        self.refresh_status(force=True)
        sdnotify.notify("READY=1\nSTATUS=following " + str(self.store))
        try:
            self._main_loop()
        finally:
            self._shutdown()
        return 0

    def _last_runs(self) -> dict[str, datetime]:
        passes = self._env.status.get("passes") or {}
        found: dict[str, datetime] = {}
        for entry in scheduled_jobs():
            record = passes.get(entry.name) or {}
            when = _parse_stamp(record.get("at"))
            if when is not None:
                found[entry.name] = when
        return found

    def _main_loop(self) -> None:
        watchdog_every = sdnotify.watchdog_interval()
        tick = min(TICK_SECONDS, watchdog_every) if watchdog_every else TICK_SECONDS
        while not self.stop.is_set():
            self.wake.wait(tick)
            self.wake.clear()
            if self.stop.is_set():
                break
            if self._reload_requested:
                self._reload_requested = False
                self.reload()
            try:
                assert self.watcher is not None
                self.watcher.check()
            except Exception:
                log.exception("watcher.check_failed")
            self.refresh_status()
            if watchdog_every and self._healthy():
                sdnotify.notify("WATCHDOG=1")

    def _healthy(self) -> bool:
        worker_alive = self.worker is not None and self.worker._thread.is_alive()
        return worker_alive and not self.stop.is_set()

    def _shutdown(self) -> None:
        env = self._env
        sdnotify.notify("STOPPING=1")
        env.status.update(state="stopping")
        running = self.worker.state()["running"] if self.worker else None
        step = f"; finishing {running['job']}" if running else ""
        env.activity.write(f"stopping ({self._stop_reason}){step}")
        if self.watcher is not None:
            self.watcher.stop()
        if self.debouncer is not None:
            self.debouncer.stop()
        if self.schedule is not None:
            self.schedule.shutdown()
        if self.worker is not None:
            self.worker.shutdown()
        if self.control is not None:
            self.control.close()
        env.status.update(state="stopped", current=None, next_runs={}, pid=None)
        env.activity.write("stopped")

    def _after_job(self) -> None:
        self.refresh_status()
        _give_back_memory()

    # -- events from the watcher -------------------------------------------------------------

    def _on_quiet(self, paths: set[str], poked: bool) -> None:
        assert self.watcher is not None and self.worker is not None
        kept = self.watcher.drop_own(paths)
        if not kept and not poked:
            log.debug("watch.own_writes_only", paths=len(paths))
            return
        log.info("watch.quiet", paths=len(kept), lock_released=poked)
        self._note_outside_edits(kept, poked)
        self.worker.request("follow", "watch")

    def _note_outside_edits(self, paths: set[str], poked: bool) -> None:
        """Changes in a batch during which no distiller touched the lock and no distillation
        ran (.status says so) were made by something else: the follow pass says which."""
        distiller = self._distiller_seen or poked
        self._distiller_seen = False
        if distiller or not paths:
            return
        env = self._env
        state = env.lock_state()
        if state.kind is LockStateKind.HELD or distillation_running(self.store):
            return
        env.outside_edits |= {p for p in paths if p.endswith(".md")}

    def _on_lock(self) -> None:
        env = self._env
        state = env.lock_state()
        if state.kind is not LockStateKind.FREE and state.owner != env.owner:
            self._distiller_seen = True  # someone else's lock: what changes now is a distillation's
        env.lock_changed.set()
        if env.wants_release and self.debouncer is not None:
            if state.kind is not LockStateKind.HELD:
                self.debouncer.poke()  # released: follow once the store has been quiet

    def _on_rescan(self, reason: str) -> None:
        env = self._env
        env.activity.write(f"watcher restarted ({reason}); rescanning the store by content")
        if self.worker is not None:
            self.worker.request("reconcile", "rescan")

    # -- status ----------------------------------------------------------------------------

    def refresh_status(self, force: bool = False) -> None:
        env = self._env
        state = env.lock_state()
        lock = {"state": state.kind.value, "owner": state.owner, "age_seconds": state.age,
                "ours": state.owner == env.owner, "alive": state.alive, "liveness": state.liveness}
        worker = self.worker.state() if self.worker else {}
        parts: dict[str, Any] = {"lock": lock, "worker": worker,
                                 "paused": bool(worker.get("paused"))}
        if self.watcher is not None:
            parts["watcher"] = self.watcher.snapshot_health()
        if self.schedule is not None:
            parts["next_runs"] = self.schedule.next_runs()
        env.status.update(flush=False, **parts)
        env.status.flush(force=force)

    # -- control and reload (runtime/daemon_requests.py) -------------------------------------

    def dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        return answer(self, request)

    def request_reload(self) -> None:
        self._reload_requested = True
        self.wake.set()

    def reload(self) -> None:
        reload_settings(self)


def distillation_running(store: Path) -> bool:
    """The legacy protocol's word (STORE-FORMAT.md 2.1): .status says a run is under way."""
    try:
        return (store / ".status").read_text("utf-8", "replace").startswith("running")
    except OSError:
        return False


def _give_back_memory() -> None:
    """A pass reads the whole store; hand the freed heap back to the OS so an idle daemon stays
    small (glibc keeps freed memory otherwise)."""
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass  # not glibc: nothing to trim


def missing_store_line(store: Path, *, waiting: bool) -> str:
    """One plain line: what is missing, the command that fixes it, and what happens meanwhile."""
    what = "not a folder" if store.exists() else "no store"
    then = "; waiting for it to appear" if waiting else ""
    return (f"{what} at {store}: `distilld new {store}` creates an empty one (or clone one there, "
            f"or pass --store DIR){then}")


def run_daemon(settings: Settings, *, config: Path | None, overrides: dict[str, Any], once: bool,
               lock_wait_seconds: float | None = None) -> int:
    if not once and not settings.store.is_dir() and console_mode(settings.log.console) == "off":
        # Said even when stderr is no terminal (a terminal and the journal get the activity log's
        # own line); the daemon then waits for the store, so a service does not crash-loop.
        print(f"distilld: {missing_store_line(settings.store, waiting=True)}", file=sys.stderr, flush=True)
    elif not once and sys.stderr.isatty():
        # the activity log's "started: following ..." line is echoed here already: only the hint
        print("distilld: `distilld status` shows what it does; Ctrl-C stops it", file=sys.stderr)
    return Daemon(settings, config=config, overrides=overrides, once=once, lock_wait_seconds=lock_wait_seconds).run()
