"""The one table of what distilld runs: its maintenance passes and the daemon's jobs.

Everything that lists passes or jobs reads it: the command line (a pass's commands), the
daemon's worker (which jobs exist, and the order pending ones are taken in), the scheduler
(which setting holds a job's interval, and when it first runs), `run --once` and `run-now`
(the jobs run by default), `status` (the order of its "last passes" lines) and the recovery
(each pass's unfinished journals, in recovery order). Adding a pass is one ``PassEntry`` here
(docs/adding-a-pass.md).

Only names live here (modules as dotted strings, imported when first used), so that reading
the table costs nothing: `distilld --help` reads it without loading any pass, and the recovery
and `status` load only the passes whose journal folder the store has.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any


@dataclass(frozen=True)
class CommandEntry:
    """A command of the command line: its module under ``daemon.cli`` (which lists it in its
    ``COMMANDS``) and the first paragraph of its help, shown by `distilld --help` without
    importing that module."""

    name: str
    module: str
    summary: str


@dataclass(frozen=True)
class JobEntry:
    """A job of the daemon. ``runs`` is "module:function" (a ``(JobEnv, trigger) -> PassResult``;
    the module relative to this package); None for the job of a registered pass that has no job
    function of its own: the pass driver runs it (runtime/pass_job.py).
    ``schedule`` names the ``[schedule]`` setting holding its interval in minutes (None: it runs
    only when asked for or triggered). ``first_run`` is when a job that never ran on this machine
    first runs: "start", "interval" (one interval after the start) or a delay. ``by_default``:
    `run --once` and a bare `run-now` run it. ``records`` are the other `status` lines it writes,
    shown right after its own."""

    name: str
    runs: str | None
    schedule: str | None = None
    first_run: str | timedelta = "start"
    by_default: bool = False
    records: tuple[str, ...] = ()

    def function(self) -> Any:
        assert self.runs is not None
        return _attribute(self.runs)


@dataclass(frozen=True)
class PassEntry:
    """A maintenance pass. ``plugin`` is "module:attribute" of its ``engine.passes.Pass`` (its
    unfinished journals and how to recover them), None for a pass journalled in the internal
    format (engine/journal.py), whose ``Pass`` is the generic one; ``journals`` is the store folder its journals
    live in, so that a store without that folder is known to have none without importing the
    pass. ``job`` is the daemon job that runs it, ``commands`` the commands that do. A pass
    with a ``planner`` needs no command or job code of its own: a command whose module is
    "pass_cmd" and a job whose ``runs`` is None drive it (engine/driver.py) from the planner.
    The ``planner`` module path, like the others, is relative to this package unless absolute."""

    name: str
    plugin: str | None
    journals: str
    job: str | None = None
    commands: tuple[CommandEntry, ...] = ()
    planner: str | None = None  # "module:function", ``(snapshot, ctx) -> plan``, for the driven command and job

    def load(self) -> Any:
        assert self.plugin is not None
        return _attribute(self.plugin)

    def load_planner(self) -> Any:
        assert self.planner is not None
        return _attribute(self.planner)


def _attribute(where: str) -> Any:
    """The attribute named by "module:attribute" (a module relative to this package, or absolute)."""
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module, __package__), attr)


# In recovery order: a restore and a gc pass first (their ledger lines are written), then a
# compaction's planned writes; a migration waits for a person.
PASSES: list[PassEntry] = [
    PassEntry("restore", ".engine.passes.restore.apply:PASS", "data/restore-journals", commands=(
        CommandEntry("restore", "lifecycle_cmds",
                     "Bring PATH (projects/x.md or archive/projects/x.md) back from the archive."),)),
    PassEntry("gc", ".engine.passes.gc.apply:PASS", "data/gc-manifests", job="lifecycle", commands=(
        CommandEntry("gc", "lifecycle_cmds", "Lifecycle: move stale project files to the archive, ledger line first."),
        CommandEntry("lifecycle", "lifecycle_cmds", ("Allow, stop or show scheduled archiving on this machine "
                                                     "(the store's local .lifecycle).")))),
    PassEntry("compaction", None, "data/compact-journals", job="compaction",
              commands=(CommandEntry("compact", "compaction", ("Bring the SPINE and the tier files back within "
                                                               "their budgets, losing no word.")),)),
    PassEntry("migration", ".engine.passes.migration.pending:PASS", "data/migration", commands=(
        CommandEntry("migrate", "compaction", ("Move a pre-1.2 store to the 1.2 layout, losslessly (checked by C4 "
                                               "against a backup).")),)),
]

# In the order the worker takes pending jobs: the agents' changes first, then the remote, then
# the passes that rewrite files, and the safety net last.
JOBS: list[JobEntry] = [
    JobEntry("follow", ".runtime.follow_job:follow", by_default=True, records=("check", "commit")),
    JobEntry("sync", ".runtime.scheduled_jobs:sync", schedule="sync_minutes", by_default=True),
    JobEntry("compaction", ".runtime.scheduled_jobs:compaction", schedule="compaction_minutes",
             by_default=True),
    JobEntry("lifecycle", ".runtime.scheduled_jobs:lifecycle_pass", schedule="lifecycle_minutes",
             by_default=True),
    # the daemon's first pass at start already covers what a reconcile would
    JobEntry("reconcile", ".runtime.follow_job:reconcile", schedule="reconcile_minutes",
             first_run="interval"),
    # a daemon that never wrote a health report writes one a while after it starts, not while
    # the first passes run
    JobEntry("report", ".runtime.scheduled_jobs:report", schedule="report_minutes",
             first_run=timedelta(minutes=10)),
]


def job_names() -> tuple[str, ...]:
    return tuple(job.name for job in JOBS)


def job_entry(name: str) -> JobEntry:
    for job in JOBS:
        if job.name == name:
            return job
    raise KeyError(name)


def default_jobs() -> tuple[str, ...]:
    """What `run --once` and a bare `run-now` run, in the worker's order."""
    return tuple(job.name for job in JOBS if job.by_default)


def scheduled_jobs() -> tuple[JobEntry, ...]:
    return tuple(job for job in JOBS if job.schedule is not None)


def status_order() -> tuple[str, ...]:
    """The order of the `status` lines of the last passes: each job, then what it also records."""
    return tuple(name for job in JOBS for name in (job.name, *job.records))


def pass_entry(name: str) -> PassEntry:
    for entry in PASSES:
        if entry.name == name:
            return entry
    raise KeyError(name)


def pass_of_job(job: str) -> PassEntry:
    for entry in PASSES:
        if entry.job == job:
            return entry
    raise KeyError(job)


def pass_of_command(command: str) -> PassEntry:
    for entry in PASSES:
        if any(c.name == command for c in entry.commands):
            return entry
    raise KeyError(command)


def pass_commands() -> dict[str, CommandEntry]:
    return {command.name: command for entry in PASSES for command in entry.commands}
