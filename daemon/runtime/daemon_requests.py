"""What a person asks of a running daemon: the control socket's commands (status, run-now,
pause, resume, reload) and the settings reload (SIGHUP, or the reload command)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import DistilldError
from ..log import utc_stamp
from ..policy import load_policy
from ..settings import load_settings
from ..store.paths import set_extra_synced_folders
from ..registry import default_jobs, job_names

if TYPE_CHECKING:
    from .daemon import Daemon


def answer(daemon: Daemon, request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one control request."""
    command = request.get("cmd")
    env = daemon.env
    assert env is not None
    worker = daemon.worker
    if command == "status":
        daemon.refresh_status()
        return {"ok": True, "status": env.status.data()}
    if worker is None:
        return {"ok": False, "error": "the daemon is not ready yet"}
    if command == "run-now":
        job = request.get("job")
        if job is not None and job not in job_names():
            return {"ok": False, "error": f"unknown job {job!r}; jobs: {', '.join(job_names())}"}
        jobs = [job] if job else list(default_jobs())
        for name in jobs:
            worker.request(name, "run-now")
        note = " (paused: they run after `distilld resume`)" if worker.paused else ""
        env.activity.write(f"run now requested: {', '.join(jobs)}{note}")
        return {"ok": True, "requested": jobs, "paused": worker.paused}
    if command == "pause":
        worker.pause()
        env.status.update(paused=True)
        env.activity.write("paused: no pass starts until `distilld resume` (changes are still followed)")
        return {"ok": True, "paused": True}
    if command == "resume":
        worker.resume()
        worker.request("follow", "resume")
        env.status.update(paused=False)
        env.activity.write("resumed")
        return {"ok": True, "paused": False}
    if command == "reload":
        daemon.request_reload()
        return {"ok": True, "reload": "requested"}
    return {"ok": False, "error": f"unknown command {command!r}; commands: status, run-now, pause, resume, reload"}


def reload_settings(daemon: Daemon) -> None:
    """Read the settings and the policy again and apply them; invalid ones are refused and the
    settings in use kept. Another store needs a restart."""
    env = daemon.env
    assert env is not None
    try:
        new = load_settings(daemon.config, daemon.overrides)
        policy = load_policy(new.policy)
    except DistilldError as error:
        env.activity.write(f"reload refused, keeping the settings in use: {error}")
        env.status.update(last_error={"at": utc_stamp(), "job": "reload", "message": str(error)})
        return
    if new.store != daemon.store:
        env.activity.write(f"reload: following another store ({new.store}) needs a restart; "
                           f"still following {daemon.store}")
        new = new.model_copy(update={"store": daemon.store})
    old = daemon.settings
    daemon.settings = env.settings = new
    set_extra_synced_folders(new.git.extra_folders)
    env.policy = policy
    env.git.settings, env.git.policy = new, policy
    if daemon.debouncer is not None:
        daemon.debouncer.configure(new.watch.quiet_seconds, new.watch.max_wait_seconds)
    if daemon.schedule is not None:
        daemon.schedule.apply(new.schedule)
    watcher = daemon.watcher
    if watcher is not None and (new.watch.observer != old.watch.observer
                                or new.watch.polling_interval_seconds != old.watch.polling_interval_seconds):
        watcher.mode = new.watch.observer
        watcher.polling_interval = new.watch.polling_interval_seconds
        watcher.restart("the watch settings changed")
    env.activity.write("reloaded the settings")
    daemon.refresh_status(force=True)
