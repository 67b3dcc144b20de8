"""One interface: the store as [STORE] or --store on every command, --policy after the command,
one mode flag at a time, JSON errors and a schema on every --json document, one exit-code table,
`distilld new`, and commands that load only what they use (measured with -X importtime)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import distilld.cli as cli_module
import pytest
from builders import FIXED_NOW, healthy_store
from click.testing import CliRunner
from distilld.actions.new import INSTALLER_SPINE
from distilld.cli import cli, main
from distilld.exits import EXIT_CODES, exit_table_markdown

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for name, where in {"HOME": home, "XDG_CONFIG_HOME": home / ".config", "XDG_STATE_HOME": home / ".state",
                        "XDG_RUNTIME_DIR": home / "run", "DISTILLD_STATE_DIR": home / "state",
                        "DISTILLD_RUNTIME_DIR": home / "rt", "DISTILLD_CONFIG_DIR": home / "cfg"}.items():
        monkeypatch.setenv(name, str(where))
    for name in ("DISTILLD_STORE", "DISTILLD_POLICY", "DISTILLD_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cli_module, "_now", lambda: FIXED_NOW)
    return home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def subprocess_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTILLD_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"),
               XDG_RUNTIME_DIR=str(home / "run"), DISTILLD_STATE_DIR=str(home / "state"),
               DISTILLD_RUNTIME_DIR=str(home / "rt"))
    return env


def imported_modules(tmp_path: Path, *argv: str) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "distilld", *argv], capture_output=True,
                          text=True, env=subprocess_env(tmp_path), timeout=120)
    assert "Traceback" not in done.stderr
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


# -- what a command loads ---------------------------------------------------------------------

HEAVY = ("pydantic_settings", "pygit2", "watchdog", "apscheduler", "structlog")


def test_help_loads_no_action_and_no_heavy_library(tmp_path: Path) -> None:
    modules = imported_modules(tmp_path, "--help")
    assert "distilld.cli" in modules
    loaded = [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(("distilld.actions", "pydantic"))]
    assert loaded == []


def test_check_loads_its_action_but_not_the_settings_or_git(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    modules = imported_modules(tmp_path, "check", str(store))
    assert "distilld.actions.check" in modules
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []


# What `check` must not load: each was a measurable share of its start-up (README, Performance).
# platformdirs (and the tempfile, shutil, random it brings) only on Linux, where locations.py
# does without it.
NOT_FOR_CHECK = ("pydantic", "pydantic_core", "pydantic_settings", "pygit2", "platformdirs", "tempfile",
                 "shutil", "zipfile", "importlib.resources", "json", "secrets")


@pytest.mark.skipif(sys.platform != "linux", reason="elsewhere the folders come from platformdirs")
@pytest.mark.parametrize("policy", [[], ["--policy", str(REPO / "policies" / "default.toml")]],
                         ids=["default policy", "a policy file"])
def test_check_loads_nothing_its_start_up_was_rid_of(policy: list[str], tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    # as a user runs it: no DISTILLD_* folders, the XDG defaults under HOME
    env = {k: v for k, v in subprocess_env(tmp_path).items() if not k.startswith(("DISTILLD_", "XDG_"))}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "distilld", "check", *policy, str(store)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "distilld.actions.check" in modules
    assert sorted(m for m in modules if m in NOT_FOR_CHECK or m.split(".")[0] in NOT_FOR_CHECK) == []


@pytest.mark.skipif(sys.platform != "linux", reason="elsewhere the folders come from platformdirs")
@pytest.mark.parametrize("config", ["", '[git]\nextra_folders = ["topics"]\n', 'stor = "typo"\n[watch]\nquiet = 1\n'],
                         ids=["an empty config file", "extra folders", "a typo"])
def test_check_with_a_config_file_reads_only_the_setting_it_needs(config: str, tmp_path: Path) -> None:
    # issue 27: any config.toml made check load pydantic (3.2x dearer), and a typo made it exit 78
    store = healthy_store(tmp_path / "store").root
    env = {**subprocess_env(tmp_path), "DISTILLD_CONFIG_DIR": str(tmp_path / "config")}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(config)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "distilld", "check", str(store)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert sorted(m for m in modules if m in NOT_FOR_CHECK or m.split(".")[0] in NOT_FOR_CHECK) == []


def test_a_bad_extra_folders_value_is_refused_by_check_naming_the_key(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    env = {**subprocess_env(tmp_path), "DISTILLD_CONFIG_DIR": str(tmp_path / "config")}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text('[git]\nextra_folders = ["archive"]\n')
    done = subprocess.run([sys.executable, "-m", "distilld", "check", str(store)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 78 and "git.extra_folders" in done.stderr and "config.toml" in done.stderr


# What a `sync` with nothing to do must not load: pydantic (0.2 s of a 0.6 s sync, issue 26: the
# settings are checked without it when they are plain), the lock and what it brings (its log,
# structlog, the guards), recovery and every pass's planner, and the merge.
NOT_FOR_A_NO_OP_SYNC = ("pydantic", "pydantic_core", "pydantic_settings", "structlog", "logging",
                        "distilld.engine.lock", "distilld.engine.guard", "distilld.engine.recovery",
                        "distilld.engine.passes", "distilld.gitstore.integrate", "distilld.gitstore.merge",
                        "distilld.store.merge", "distilld.store.snapshot")


def test_a_sync_with_nothing_to_do_loads_neither_the_settings_model_nor_the_lock(tmp_path: Path) -> None:
    import pygit2
    from distilld.actions.sync import run_init, run_sync
    from distilld.policy import load_policy

    store = healthy_store(tmp_path / "store").root
    origin = tmp_path / "origin.git"
    pygit2.init_repository(str(origin), bare=True)
    run_init(store, load_policy(), lambda: FIXED_NOW, remote_url=str(origin), pack=False)
    assert run_sync(store, load_policy(), lambda: FIXED_NOW).pushed
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.toml").write_text('[watch]\nquiet_seconds = 0.5\n[git]\nextra_folders = ["topics"]\n')
    env = {**subprocess_env(tmp_path), "DISTILLD_CONFIG_DIR": str(tmp_path / "cfg")}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "distilld", "sync", str(store)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.endswith(": up to date\n"), done.stdout + done.stderr[-2000:]
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "distilld.gitstore.sync" in modules and "distilld.plain_settings" in modules
    assert sorted(m for m in modules if m.startswith(NOT_FOR_A_NO_OP_SYNC)) == []


def test_the_entry_point_imports_the_cli_without_collecting_then_sets_its_objects_aside(tmp_path: Path) -> None:
    script = ("import gc, sys\nfrom distilld.__main__ import run\nsys.argv = ['distilld', '--version']\n"
              "code = run()\nprint(code, gc.isenabled(), gc.get_freeze_count() > 1000, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(tmp_path), timeout=120, check=False)
    assert done.stdout.startswith("distilld, version")
    assert done.stderr.split() == ["0", "True", "True"], done.stderr


# -- the store both ways, options after the command -------------------------------------------

STORE_COMMANDS = [["check"], ["budget"], ["catalog"], ["gc"], ["compact"], ["lifecycle", "status"],
                  ["status"], ["log"]]


@pytest.mark.parametrize("command", STORE_COMMANDS, ids=[" ".join(c) for c in STORE_COMMANDS])
def test_every_command_takes_the_store_positionally_and_as_an_option(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    positional = run(capsys, *command, str(store))
    option = run(capsys, *command, "--store", str(store))
    assert "unexpected extra argument" not in positional[2] + option[2]
    assert positional == option
    assert positional[0] in (0, 3)  # 3: status with no daemon running


def test_two_different_stores_are_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    code, _, err = run(capsys, "check", str(store), "--store", str(tmp_path / "other"))
    assert code == 2 and "two different stores given" in err


def test_the_policy_works_after_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    bad = tmp_path / "bad.toml"
    bad.write_text('[spine]\nmax_lines = "many"\n')
    before = run(capsys, "--policy", str(bad), "check", str(store))
    after = run(capsys, "check", str(store), "--policy", str(bad))
    assert before[0] == after[0] == 78
    assert "max_lines" in after[2] and before[2] == after[2]


def test_version_long_and_short(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--version")[1].startswith("distilld, version ")
    assert run(capsys, "-V")[1].startswith("distilld, version ")


def test_the_console_script_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("distilld")
    if not script.exists():
        pytest.skip("the package is not installed with its console script in this Python's folder")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60,
                          env=subprocess_env(tmp_path))
    assert done.returncode == 0 and done.stdout.startswith("distilld, version ")


# -- modes, JSON, exit codes -------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["gc", "--apply", "--preview"], ["gc", "--revert", "--apply"],
                                  ["compact", "--preview", "--apply"], ["migrate", "--finish", "--revert"],
                                  ["catalog", "--print", "--write"]])
def test_conflicting_mode_flags_are_a_usage_error(argv: list[str], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    before = sorted(p.name for p in store.rglob("*"))
    code, out, err = run(capsys, *argv, str(store))
    assert code == 2 and "cannot be combined" in err and out == ""
    assert sorted(p.name for p in store.rglob("*")) == before


def test_errors_under_json_are_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", str(tmp_path / "missing"), "--json")
    error = json.loads(out)
    assert code == 2 and error["exit"] == 2 and error["schema"] == "distilld.error/1"
    assert "missing" in error["error"] and err == ""
    code, out, _ = run(capsys, "gc", "--json", "--apply", "--preview", str(tmp_path))
    assert code == 2 and json.loads(out)["exit"] == 2 and "cannot be combined" in json.loads(out)["error"]
    policy = tmp_path / "p.toml"
    policy.write_text("[spine]\nbogus = 1\n")
    store = healthy_store(tmp_path / "store").root
    code, out, _ = run(capsys, "budget", str(store), "--policy", str(policy), "--json")
    # issue 27: a bad policy is bad settings (78: the service is not restarted), and the JSON
    # error names the file at fault, not "file": null
    assert code == 78 and json.loads(out)["exit"] == 78 and json.loads(out)["file"] == str(policy)
    assert "did you mean" in json.loads(out)["error"] or "known:" in json.loads(out)["error"]


@pytest.mark.parametrize("argv, kind", [(["check"], "check"), (["budget"], "budget"), (["gc"], "gc"),
                                        (["compact"], "compact"), (["status"], "status")])
def test_every_json_document_carries_a_schema(argv: list[str], kind: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    _, out, _ = run(capsys, *argv, str(store), "--json")
    assert json.loads(out)["schema"] == f"distilld.{kind}/1"


def test_config_show_json_carries_a_schema(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "config", "show", "--json")
    assert json.loads(out)["schema"] == "distilld.config/1"


def test_one_exit_code_table_in_the_readme_and_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert exit_table_markdown() in readme
    _, out, _ = run(capsys, "--help")
    flat = " ".join(out.split())
    for code, meaning in EXIT_CODES:
        assert f"{code} {' '.join(meaning.split())}" in flat
    codes = [code for code, _ in EXIT_CODES]
    assert len(set(codes)) == len(codes)


def test_distinct_codes_for_check_failed_lock_held_unsafe_store_and_skipped_sync() -> None:
    from distilld.cli import exit_code_for
    from distilld.errors import LockHeld, StoreRefused
    from distilld.gitstore.errors import GitBusy

    codes = {1, exit_code_for(LockHeld("", None, None)), exit_code_for(StoreRefused()), exit_code_for(GitBusy())}
    assert codes == {1, 5, 6, 7}


# -- new: an empty 1.2 store that passes check ------------------------------------------------

def test_new_creates_the_installer_shaped_store_and_it_passes_check(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "fresh"
    code, out, _ = run(capsys, "new", str(store))
    assert code == 0 and "created an empty 1.2 store" in out
    assert (store / "SPINE.md").read_bytes() == INSTALLER_SPINE.encode()
    assert (store / "CATALOG.md").read_text() == (
        "# Knowledge catalog\n\n<!-- Complete inventory, rebuilt by /distill. Not loaded at session start. "
        "rebuilt: 2026-11-30T12:00:00Z -->\n\n## active\n\n## archived\n\n## evidence\n")
    assert sorted(p.name for p in store.iterdir() if p.is_dir()) == ["craft", "feedback", "ops", "profile",
                                                                       "projects"]
    assert not (store / "archive").exists()
    code, out, _ = run(capsys, "check", str(store))
    assert code == 0 and out == "C1 PASS\nC2 PASS\nC3 PASS\n"


def test_new_refuses_an_existing_store_or_a_full_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    spine = (store / "SPINE.md").read_bytes()
    code, _, err = run(capsys, "new", str(store))
    assert code == 2 and "already a store" in err
    assert (store / "SPINE.md").read_bytes() == spine
    (tmp_path / "afile").write_text("x")
    assert run(capsys, "new", str(tmp_path / "afile"))[0] == 2


def test_init_still_adopts_and_says_how_to_create(capsys: pytest.CaptureFixture[str]) -> None:
    result = CliRunner().invoke(cli, ["init", "--help"])
    assert "distilld new" in result.output


def test_commands_register_in_the_table_with_their_module_and_their_own_summary() -> None:
    ctx = click.Context(cli)
    table = cli_module.command_table()  # the CLI's own commands and the registered passes' ones
    modules = {module for module, _ in table.values()}
    declared = {}
    for module in modules:
        for command in cli_module.module_commands(module):
            declared[command.name] = (module, " ".join((command.help or "").partition("\n\n")[0].split()))
    assert declared == table  # every command listed once, under its module, with its words
    for name in table:
        assert cli.get_command(ctx, name) is not None


def loaded_command_modules(tmp_path: Path, *argv: str) -> list[str]:
    script = ("import sys\nfrom distilld.cli import main\ncode = main(sys.argv[1:])\n"
              "print(sorted(m for m in sys.modules if m.startswith('distilld.cli.')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True,
                          env=subprocess_env(tmp_path), timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return list(ast.literal_eval(done.stderr.strip().splitlines()[-1]))  # the list printed last


def test_help_imports_no_command_module_and_a_command_only_its_own(tmp_path: Path) -> None:
    assert loaded_command_modules(tmp_path, "--help") == ["distilld.cli._common"]
    store = healthy_store(tmp_path / "store").root
    assert loaded_command_modules(tmp_path, "check", str(store)) == [
        "distilld.cli._common", "distilld.cli.store_cmds"]


def test_shell_completion_works_as_the_readme_says(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert '_DISTILLD_COMPLETE=bash_source distilld' in readme
    script = Path(sys.executable).with_name("distilld")
    if not script.exists():
        pytest.skip("the console script is not installed beside this Python")
    env = {**subprocess_env(tmp_path), "_DISTILLD_COMPLETE": "bash_source"}
    source = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert source.returncode == 0 and "_distilld_completion" in source.stdout
    env.update(_DISTILLD_COMPLETE="bash_complete", COMP_WORDS="distilld mig", COMP_CWORD="1")
    words = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "migrate" in words


def test_a_mistyped_command_is_answered_with_the_nearest_name_even_before_any_is_loaded(tmp_path: Path) -> None:
    # a fresh process: no command module imported yet, as when a user types the name
    script = "import sys\nfrom distilld.cli import main\nsys.exit(main(sys.argv[1:]))"
    done = subprocess.run([sys.executable, "-c", script, "chek"], capture_output=True, text=True,
                          env=subprocess_env(tmp_path), timeout=120)
    assert done.returncode == 2
    assert "No such command 'chek'. Did you mean 'check'?" in done.stderr, done.stderr


def test_run_now_with_a_job_name_it_does_not_know_lists_the_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 27: `run-now bogus` took the name as a store and said the daemon was not running (3)
    code, _, err = run(capsys, "run-now", "bogus")
    assert code == 2 and "no job called 'bogus'" in err
    assert "follow, sync, compaction, lifecycle, reconcile" in err
    store = healthy_store(tmp_path / "store").root
    code, _, err = run(capsys, "run-now", str(store))  # a path is still a store
    assert code == 3 and "no daemon follows this store" in err


def test_an_unforeseen_error_is_one_line_and_a_crash_report_never_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import distilld.actions.check as check_action

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug nobody foresaw")

    monkeypatch.setattr(check_action, "run_check", broken)
    store = healthy_store(tmp_path / "store").root
    code, out, err = run(capsys, "check", str(store))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "RuntimeError: a bug nobody foresaw" in err
    reports = list(tmp_path.rglob("crash-*.txt"))  # in the state folder
    assert len(reports) == 1 and str(reports[0]) in err
    assert "Traceback" in reports[0].read_text() and "distilld check" in reports[0].read_text()


def test_catalog_and_lifecycle_status_speak_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 27: both lacked --json
    store = healthy_store(tmp_path / "store").root
    code, out, _ = run(capsys, "catalog", str(store), "--json")
    assert code == 0 and json.loads(out)["schema"] == "distilld.catalog/1"
    assert json.loads(out)["catalog"].startswith("# Knowledge catalog")
    code, out, _ = run(capsys, "catalog", "--write", str(store), "--json")
    assert code == 0 and json.loads(out)["written"] is False and json.loads(out)["path"].endswith("CATALOG.md")
    code, out, _ = run(capsys, "lifecycle", "status", str(store), "--json")
    state = json.loads(out)
    assert code == 0 and state["schema"] == "distilld.lifecycle/1" and state["enabled"] is False


def test_a_progress_phase_that_gives_way_to_the_next_ends_full(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 27: the "reading the store" bar stayed at 0% once planning began
    import distilld.cli._common as common

    bars: list[dict[str, Any]] = []

    class Bar:
        def __init__(self, length: int, label: str, file: Any) -> None:
            self.state = {"label": label, "length": length, "done": 0}
            bars.append(self.state)

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def update(self, steps: int) -> None:
            self.state["done"] += steps

    monkeypatch.setattr(common.click, "progressbar", Bar)
    progress = common.TerminalProgress()
    progress("reading the store", 0, 2)
    progress("planning the migration", 1, 2)
    progress("planning the migration", 2, 2)
    progress.close()
    assert [(b["label"], b["done"], b["length"]) for b in bars] == [
        ("reading the store", 2, 2), ("planning the migration", 2, 2)]
