"""The one table of passes and jobs (daemon/registry.py) drives the commands, the daemon's jobs,
the schedule settings, the order of `status` and the recovery: every registered pass conforms,
and a toy pass that is a planner plus one table entry gets its command, its job, its status line
and its recovery without a line of code elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest
import toy_pass
from builders import healthy_store
from click.testing import CliRunner
from distilld import registry
from distilld.actions.passes import locked_pass
from distilld.actions.status import build_view, render_text
from distilld.cli import cli, command_table
from distilld.engine.lock import default_owner
from distilld.engine.passes import Pass, registered_passes
from distilld.engine.recovery import finish_interrupted, interrupted_passes
from distilld.log import ActivityLog, StatusFile
from distilld.policy import load_policy
from distilld.runtime.job_runner import job_function, run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.store_git import StoreGit
from distilld.settings import ScheduleSettings, load_settings
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot

POLICY = load_policy()
TESTS = Path(__file__).parent


def failing(store: Path) -> list[str]:
    return [f.message for f in check_store(take_snapshot(store), POLICY.limits) if f.severity == "fail"]


# -- every registered pass conforms ------------------------------------------------------------

@pytest.mark.parametrize("entry", registry.PASSES, ids=lambda entry: entry.name)
def test_every_registered_pass_conforms(entry: registry.PassEntry, tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    plugin = next(p for p in registered_passes() if p.name == entry.name)
    assert isinstance(plugin, Pass) and plugin.name == entry.name
    assert plugin.unfinished(store) == []  # a healthy store has nothing of it to recover
    assert entry.journals.startswith("data/")  # machine-local, never synced as knowledge
    for command in entry.commands:
        assert command_table()[command.name] == (command.module, command.summary)
        assert cli.get_command(click.Context(cli), command.name) is not None
    if entry.job is not None:
        assert entry.job in registry.job_names()
        assert entry.job in registry.status_order()
    if entry.planner is not None:
        assert callable(entry.load_planner())


@pytest.mark.parametrize("job", registry.JOBS, ids=lambda job: job.name)
def test_every_job_runs_something_and_its_schedule_setting_exists(job: registry.JobEntry) -> None:
    assert callable(job_function(job.name))
    if job.runs is None:  # the pass driver runs it: the job must belong to a pass with a planner
        assert registry.pass_of_job(job.name).planner is not None, job.name
    if job.schedule is not None:
        assert job.schedule in ScheduleSettings.model_fields
        assert isinstance(getattr(ScheduleSettings(), job.schedule), int)
    assert job.name in registry.status_order()
    run_now_help = " ".join(CliRunner().invoke(cli, ["run-now", "--help"]).output.split())
    assert f" {job.name}" in run_now_help.partition("JOB is one of")[2].partition(".")[0], run_now_help
    assert (f" {job.name}" in run_now_help.partition("Without a JOB:")[2].partition(" in that order")[0]) \
        == job.by_default


def test_the_tables_the_daemon_and_the_cli_read_are_the_registry() -> None:
    assert registry.default_jobs() == ("follow", "sync", "compaction", "lifecycle")
    assert registry.status_order()[:3] == ("follow", "check", "commit")
    assert [p.name for p in registry.PASSES] == ["restore", "gc", "compaction", "migration"]  # recovery order
    assert {"gc", "restore", "lifecycle", "compact", "migrate"} <= set(command_table())


# -- a toy pass: a planner and one table entry ---------------------------------------------------

@pytest.fixture
def toy() -> Iterator[None]:
    toy_pass.register()
    try:
        yield
    finally:
        toy_pass.unregister()
        cli.commands.pop(toy_pass.NAME, None)  # the group keeps a command once loaded


def untrimmed_store(root: Path) -> Path:
    store = healthy_store(root).root
    for name in ("profile/rowan.md", "projects/kestrel.md"):
        path = store / name
        if path.exists():
            path.write_bytes(path.read_bytes().rstrip(b"\n") + b"\n\n\n")
    return store


def untrimmed(store: Path) -> list[str]:
    return sorted(path.relative_to(store).as_posix() for tier in ("craft", "ops", "profile", "projects", "feedback")
                  for path in (store / tier).glob("*.md") if path.read_bytes().endswith(b"\n\n"))


def test_a_toy_pass_gets_its_command(toy: None, tmp_path: Path) -> None:
    store = untrimmed_store(tmp_path / "store")
    left = untrimmed(store)
    assert left and failing(store) == []
    assert toy_pass.NAME in CliRunner().invoke(cli, ["--help"]).output

    preview = CliRunner().invoke(cli, [toy_pass.NAME, str(store)])
    assert preview.exit_code == 0, preview.output
    assert f"trim preview (nothing changed): {len(left)} steps" in preview.output
    assert untrimmed(store) == left

    applied = CliRunner().invoke(cli, [toy_pass.NAME, "--apply", str(store)])
    assert applied.exit_code == 0, applied.output
    assert "self-check passed" in applied.output
    assert untrimmed(store) == [] and failing(store) == []
    assert not (store / ".lock").exists()

    again = CliRunner().invoke(cli, [toy_pass.NAME, "--apply", "--json", str(store)])
    assert again.exit_code == 0 and '"steps": []' in again.output


@pytest.fixture
def env(tmp_path: Path) -> JobEnv:
    store = untrimmed_store(tmp_path / "store")
    settings = load_settings(overrides={"store": str(store)})
    later = datetime(2028, 1, 1, 12, 0, 0, tzinfo=UTC)
    return JobEnv(settings=settings, policy=POLICY, store=store, owner=default_owner(),
                  status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                  stop=threading.Event(), lock_changed=threading.Event(),
                  git=StoreGit(store, settings, POLICY, lambda: later), clock=lambda: later)


def test_a_toy_pass_gets_its_job_and_its_status_line(toy: None, env: JobEnv) -> None:
    result = run_job(env, toy_pass.NAME, "run-now")
    assert result.ok and result.details["changed"], result.summary
    assert untrimmed(env.store) == [] and failing(env.store) == []
    assert "trim: wrote " in env.activity.path.read_text()

    view = build_view(env.store, env.status.data(), None, None, {})
    lines = render_text(view).splitlines()
    passes = [line.split()[0] for line in lines[lines.index("last passes:") + 1:] if line.startswith("    ")]
    assert toy_pass.NAME in passes


@pytest.mark.slow
def test_a_toy_pass_killed_mid_apply_is_recovered_by_the_one_recovery(toy: None, tmp_path: Path) -> None:
    store = untrimmed_store(tmp_path / "store")
    script = ("import sys, toy_pass\ntoy_pass.register()\nfrom distilld.cli import main\n"
              "sys.exit(main(sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
           "DISTILLD_CRASH_AT": "step-marked:1"}
    killed = subprocess.run([sys.executable, "-c", script, toy_pass.NAME, "--apply", str(store)],
                            env=env, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr  # killed after its first step
    left = interrupted_passes(store)
    assert left and left[0].startswith("data/trim-journals/"), left
    assert len(untrimmed(store)) == 1  # one of the two files was trimmed before the kill

    (store / ".lock").unlink(missing_ok=True)  # the killed owner's lock (its pid no longer runs)
    with locked_pass(store, POLICY, lambda: datetime.now(UTC)) as ctx:
        resumed = finish_interrupted(ctx)
    assert resumed.notes["trim"] == ["finished an interrupted trim: trim projects/kestrel.md"]
    assert interrupted_passes(store) == []
    assert untrimmed(store) == [] and failing(store) == []
