"""Every command against a store it may not write, one it may not read, a file given as the store,
and a config file with a typo (with the store given, and with the store taken from that config):
no traceback, one phrasing per fault, and the exit code of the table (issue 27).

Root reads and writes whatever the modes say, so as root the commands run as the user `nobody`
(setpriv); as anyone else, the modes are enough. The commands run in one child process per case
(tests/bad_store_driver.py calls the real command line once per command): a child per command
would cost minutes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import healthy_store
from distilld.exits import BAD_SETTINGS, NOT_RUNNING, OK, USAGE

pytestmark = pytest.mark.slow

NOBODY = 65534
DRIVER = Path(__file__).with_name("bad_store_driver.py")

# (command, the exit code for: unwritable, unreadable, file, bad config with the store given)
R, W = OK, USAGE  # a reader works on a read-only store; a writer is refused as unwritable (2)
COMMANDS: list[tuple[list[str], tuple[int, int, int, int]]] = [
    (["budget"], (R, USAGE, USAGE, OK)),
    (["catalog"], (R, USAGE, USAGE, OK)),
    (["catalog", "--write"], (R, USAGE, USAGE, OK)),  # the catalog is current: nothing to write
    (["check"], (R, USAGE, USAGE, OK)),
    (["check", "--json"], (R, USAGE, USAGE, OK)),
    (["compact"], (R, USAGE, USAGE, OK)),
    (["compact", "--apply"], (W, USAGE, USAGE, OK)),
    (["gc"], (R, USAGE, USAGE, OK)),
    (["gc", "--apply"], (W, USAGE, USAGE, OK)),
    (["gc", "--revert"], (W, USAGE, USAGE, OK)),
    (["gc", "--manifest", "x.json"], (USAGE, USAGE, USAGE, USAGE)),  # --manifest only with --revert
    (["init"], (W, USAGE, USAGE, BAD_SETTINGS)),
    (["init", "--json"], (W, USAGE, USAGE, BAD_SETTINGS)),
    (["lifecycle", "status"], (R, USAGE, USAGE, OK)),
    (["lifecycle", "enable"], (W, USAGE, USAGE, OK)),
    (["lifecycle", "disable"], (W, USAGE, USAGE, OK)),
    (["log"], (R, USAGE, USAGE, BAD_SETTINGS)),
    (["migrate"], (R, USAGE, USAGE, OK)),
    (["migrate", "--apply"], (W, USAGE, USAGE, OK)),
    (["new"], (USAGE, USAGE, USAGE, USAGE)),  # it exists: `new` makes only new stores
    (["pause"], (NOT_RUNNING, USAGE, USAGE, BAD_SETTINGS)),
    (["resume"], (NOT_RUNNING, USAGE, USAGE, BAD_SETTINGS)),
    (["report"], (R, USAGE, USAGE, OK)),
    (["report", "--json"], (R, USAGE, USAGE, OK)),
    (["restore", "projects/x.md"], (W, USAGE, USAGE, USAGE)),  # nothing archived by that name
    (["run", "--once"], (W, USAGE, USAGE, BAD_SETTINGS)),
    (["run-now"], (NOT_RUNNING, USAGE, USAGE, BAD_SETTINGS)),
    (["run-now", "sync"], (NOT_RUNNING, USAGE, USAGE, BAD_SETTINGS)),
    (["service", "print"], (OK, USAGE, USAGE, OK)),
    (["status"], (NOT_RUNNING, USAGE, USAGE, BAD_SETTINGS)),
    (["status", "--json"], (NOT_RUNNING, USAGE, USAGE, BAD_SETTINGS)),
    (["sync"], (USAGE, USAGE, USAGE, BAD_SETTINGS)),  # not a git repository
]
CASES = ("unwritable", "unreadable", "file", "bad config")
PHRASES = {"unwritable": "this user may not write the store", "unreadable": "this user may not read the store",
           "file": "is a file, not a folder", "bad config": "config error at stor: unknown key"}


def _give(path: Path, uid: int) -> None:
    for folder, _, files in os.walk(path):
        os.chown(folder, uid, uid)
        for name in files:
            os.chown(os.path.join(folder, name), uid, uid)


@pytest.fixture(scope="module")
def as_other_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv: the modes cannot keep root out")
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    # A checkout in a private folder (mktemp -d is 0700) is out of `nobody`'s reach: its Python
    # and this driver cannot be opened, so the other user cannot run the commands at all.
    reach = subprocess.run([*prefix, sys.executable, "-c", f"open({str(DRIVER)!r}).close()"],
                           capture_output=True, text=True, check=False)
    if reach.returncode != 0:
        pytest.skip(f"`nobody` cannot reach this checkout ({reach.stderr.strip()[-200:]}): "
                    "as root only another user tells the modes apart")
    return prefix


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    # Not under tmp_path: pytest's base folder is private to the user running the tests, and
    # `nobody` must reach these folders. Made here and removed afterwards.
    base = Path(tempfile.mkdtemp(prefix="distilld-bad-stores-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for folder, dirs, _ in os.walk(base):
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _layout(base: Path, other_user: bool) -> dict[str, Path]:
    owner = NOBODY if other_user else os.geteuid()
    for name in ("home", "config", "bad-config", "state", "runtime"):
        (base / name).mkdir()
    (base / "runtime").chmod(0o700)
    (base / "bad-config" / "config.toml").write_text('stor = "typo"\n')
    stores = {"unwritable": healthy_store(base / "read-only").root,
              "unreadable": healthy_store(base / "unreadable").root,
              "bad config": healthy_store(base / "ok").root}
    (base / "a-file").write_text("# not a store\n")
    stores["file"] = base / "a-file"
    for name in ("home", "config", "bad-config", "state", "runtime", "ok"):
        _give(base / name, owner)
    if not other_user:  # the same user: only the modes keep it out
        for folder, dirs, files in os.walk(stores["unwritable"]):
            for name in files:
                os.chmod(os.path.join(folder, name), 0o444)
            os.chmod(folder, 0o555)
    stores["unreadable"].chmod(0)
    return stores


def _run_case(base: Path, prefix: list[str], case: str, store: Path | None, config: str) -> dict[str, dict]:
    argvs = []
    for command, _ in COMMANDS:
        where = ["--store", str(store)] if store is not None else []
        argvs.append([*command, *where])
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base / "home"), "LANG": "C.UTF-8",
           "DISTILLD_STATE_DIR": str(base / "state"), "DISTILLD_RUNTIME_DIR": str(base / "runtime"),
           "DISTILLD_CONFIG_DIR": str(base / config), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([*prefix, sys.executable, str(DRIVER), json.dumps(argvs)], env=env, cwd=base,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines()]
    return {" ".join(command): result for (command, _), result in zip(COMMANDS, results, strict=True)}


@pytest.fixture(scope="module")
def outcomes(place: Path, as_other_user: list[str]) -> dict[str, dict[str, dict]]:
    stores = _layout(place, bool(as_other_user))
    found = {case: _run_case(place, as_other_user, case, stores[case], "bad-config" if case == "bad config"
                             else "config") for case in CASES}
    found["bad config, store from it"] = _run_case(place, as_other_user, "default", None, "bad-config")
    return found


@pytest.mark.parametrize("case", CASES)
def test_every_command_says_the_fault_in_one_line_with_the_code_of_the_table(
        case: str, outcomes: dict[str, dict[str, dict]]) -> None:
    index = CASES.index(case)
    wrong = {}
    for command, codes in COMMANDS:
        result = outcomes[case][" ".join(command)]
        text = result["out"] + result["err"]
        assert "Traceback" not in text and "unexpected error" not in text, (command, text)
        if result["code"] != codes[index]:
            wrong[" ".join(command)] = (result["code"], codes[index], result["err"][-300:])
        if result["code"] == USAGE and case != "bad config" and command[0] not in ("new", "gc", "sync", "restore"):
            assert PHRASES[case] in text, (command, text)
        if result["code"] == BAD_SETTINGS:
            assert PHRASES["bad config"] in text, (command, text)
        if "--json" in command and result["code"] not in (OK, NOT_RUNNING):  # an error is JSON too
            assert json.loads(result["out"])["exit"] == result["code"], (command, result)
    assert wrong == {}


def test_a_config_typo_stops_every_command_that_needs_the_store_from_that_config(
        outcomes: dict[str, dict[str, dict]]) -> None:
    for command, _ in COMMANDS:
        if command[0] in ("service",):
            continue  # prints a unit; it reads no setting
        result = outcomes["bad config, store from it"][" ".join(command)]
        assert "Traceback" not in result["out"] + result["err"]
        assert result["code"] in (BAD_SETTINGS, USAGE), (command, result)
        if result["code"] == USAGE:  # only the usage errors the command line finds first
            assert command[:2] == ["gc", "--manifest"], (command, result)
        else:
            assert PHRASES["bad config"] in result["out"] + result["err"], (command, result)
