"""The click CLI: help for every command, --version, JSON output, policy errors, catalog --write,
and the $DISTILLD_STORE default. Every store lives in tmp_path; $HOME points into tmp_path too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import click
import pytest
from builders import EM, FIXED_NOW, StoreBuilder, healthy_store
from click.testing import CliRunner

import distilld.cli as cli_module
from distilld import __version__
from distilld.cli import cli, main

EMPTY_CATALOG_AT_FIXED_NOW = (
    "# Knowledge catalog\n\n<!-- Complete inventory, rebuilt by /distill. Not loaded at session start. "
    "rebuilt: 2026-11-30T12:00:00Z -->\n\n## active\n\n## archived\n\n## evidence\n"
)
INSTALLER_SPINE = f"# Distill Knowledge Index\n\n<!-- managed -->\n\n- [Catalog](CATALOG.md) {EM} complete inventory; not loaded at start.\n"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("DISTILLD_STORE", raising=False)
    monkeypatch.delenv("DISTILLD_POLICY", raising=False)
    monkeypatch.setattr(cli_module, "_now", lambda: FIXED_NOW)
    return home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def tree_state(root: Path) -> dict[str, tuple[Any, ...]]:
    state: dict[str, tuple[Any, ...]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        content = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        state[str(path.relative_to(root))] = (content, info.st_mtime_ns)
    return state


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- help and version --------------------------------------------------------------------------


def walk(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in sorted(command.list_commands(ctx)):  # the top group imports a command when asked
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, (*path, name))


ALL_COMMANDS = list(walk(cli))


def test_the_cli_has_the_read_only_commands() -> None:
    names = {path for path, _ in ALL_COMMANDS}
    assert {(), ("check",), ("catalog",), ("budget",)} <= names


@pytest.mark.parametrize("path, command", ALL_COMMANDS, ids=[" ".join(p) or "distilld" for p, _ in ALL_COMMANDS])
def test_every_command_has_help_text(path: tuple[str, ...], command: click.Command) -> None:
    assert (command.help or "").strip(), f"{' '.join(path) or 'distilld'} has no help text"
    assert command.get_short_help_str().strip()


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("path, command", ALL_COMMANDS, ids=[" ".join(p) or "distilld" for p, _ in ALL_COMMANDS])
def test_help_exits_0(path: tuple[str, ...], command: click.Command, flag: str) -> None:
    result = CliRunner().invoke(cli, [*path, flag])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    first_help_line = (command.help or "").strip().splitlines()[0]
    assert " ".join(first_help_line.split()) in " ".join(result.output.split())


def test_help_through_the_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in ("check", "catalog", "budget"):
        assert name in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"distilld, version {__version__}\n"
    code, out, _ = run(capsys, "--version")
    assert (code, out) == (0, f"distilld, version {__version__}\n")


# -- check --json and budget --json ----------------------------------------------------------------


def test_check_json_on_a_healthy_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    code, out, _ = run(capsys, "check", "--json", str(store))
    report = json.loads(out)
    assert code == 0
    assert report["groups"] == {"C1": "PASS", "C2": "PASS", "C3": "PASS"}
    assert report["findings"] == []
    assert report["ok"] is True


def test_check_json_lists_findings_with_group_and_severity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path / "store")
    b.write("ops/archive/old.md", "# old\n")
    code, out, _ = run(capsys, "check", "--json", str(b.root))
    report = json.loads(out)
    assert report["groups"] == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    assert report["ok"] is False
    message = ("legacy archive inside a tier directory: ops/archive/old.md "
               "(migration adopts it to archive/legacy/ops/archive/old.md)")
    matching = [f for f in report["findings"] if f["message"] == message]
    assert len(matching) == 1
    assert matching[0]["group"] == "C2" and matching[0]["severity"] == "fail"
    assert code == 1  # 3.1: exit 0 iff every group passes


def test_check_exit_code_through_cli_runner(tmp_path: Path) -> None:
    b = healthy_store(tmp_path / "store")
    assert CliRunner().invoke(cli, ["check", str(b.root)]).exit_code == 0
    b.remove("CATALOG.md")
    result = CliRunner().invoke(cli, ["check", str(b.root)])
    assert result.exit_code == 1
    assert "C2 FAIL\n" in result.output and "    - CATALOG.md missing\n" in result.output


@pytest.mark.slow
def test_console_entry_point_exit_codes(tmp_path: Path) -> None:
    """`python -m distilld check` (the installed script calls the same main): 0 pass, 1 fail, 2 usage."""
    b = healthy_store(tmp_path / "store")
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("DISTILLD_STORE", None)
    env.pop("DISTILLD_POLICY", None)

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "distilld", *args], capture_output=True, text=True, env=env, timeout=60)

    assert check("check", str(b.root)).returncode == 0
    b.remove("CATALOG.md")
    failing = check("check", str(b.root))
    assert "C2 FAIL" in failing.stdout
    assert failing.returncode == 1
    missing = check("check", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_budget_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    spine = (store / "SPINE.md").read_bytes()
    code, out, _ = run(capsys, "budget", "--json", str(store))
    report = json.loads(out)
    assert code == 0
    assert report["spine_present"] is True
    assert report["spine_bytes"] == len(spine)
    assert report["spine_lines"] == spine.count(b"\n")
    assert report["entries_over"] == [] and report["files_over"] == []
    assert report["oversize_exempt"] == [["feedback/preferences.md", "one table that cannot be split"]]
    assert report["stale_projects"] == []  # osprey is old but pinned; kestrel is fresh at FIXED_NOW
    assert report["debt"] == 1
    # issue 27: the debt adds bytes to counts; its parts are given each in its own unit
    assert report["debt_parts"] == {"spine_bytes_over": 0, "entries_over": 0, "files_over": 0,
                                    "stale_projects": 0, "oversize_exemptions": 1}


def test_budget_text_names_the_caps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    size = (store / "SPINE.md").stat().st_size
    code, out, _ = run(capsys, "budget", str(store))
    assert code == 0
    assert f"SPINE.md: {size} bytes of 16000" in out
    assert "debt: SPINE 0 bytes over its cap; 0 entries, 0 files over a cap; 0 stale projects; " \
           "1 oversize exemptions (debt figure 1: their sum, a trend)" in out


# -- policy files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, key",
    [
        ('[spine]\nmax_lines = "many"\n', "spine.max_lines"),
        ("[spine]\nmax_bytes = -5\n", "spine.max_bytes"),
        ("[spine]\nmax_line = 80\n", "spine.max_line"),
        ("[tier_file]\nmax_lines = 60\ncolour = 'blue'\n", "tier_file.colour"),
        ("[spines]\nmax_lines = 80\n", "spines"),
        ("[spine]\nmax_lines = 50\ncompact_at_lines = 70\n", "compact_at_lines"),
        ("[lifecycle]\ncandidate_dirs = ['projects', 'inbox']\n", "inbox"),
    ],
    ids=["wrong-type", "negative", "unknown-key", "unknown-key-2", "unknown-table", "target-over-cap", "not-a-tier"],
)
@pytest.mark.parametrize("command", ["check", "budget"])
def test_bad_policy_file_is_one_line_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, key: str, command: str
) -> None:
    store = healthy_store(tmp_path / "store").root
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    code, out, err = run(capsys, "--policy", str(policy), command, str(store))
    assert code == 78  # a bad policy is bad settings (issue 27)
    assert out == ""
    line = one_line(err)
    assert key in line
    assert str(policy) in line


def test_unknown_key_is_called_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    policy = tmp_path / "policy.toml"
    policy.write_text("[spine]\nmax_line = 80\n")
    code, _, err = run(capsys, "--policy", str(policy), "check", str(store))
    assert code == 78  # a bad policy is bad settings (issue 27)
    assert "unknown" in one_line(err)


@pytest.mark.parametrize("text", ["[spine\nmax_lines = 80\n", "max_lines = = 3\n"])
def test_policy_that_is_not_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    store = healthy_store(tmp_path / "store").root
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    code, _, err = run(capsys, "--policy", str(policy), "check", str(store))
    assert code == 78  # a bad policy is bad settings (issue 27)
    assert str(policy) in one_line(err)


def test_missing_policy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    code, _, err = run(capsys, "--policy", str(tmp_path / "absent.toml"), "check", str(store))
    assert code == 78  # a bad policy is bad settings (issue 27)
    assert str(tmp_path / "absent.toml") in one_line(err)


def test_policy_from_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    store = healthy_store(tmp_path / "store").root
    policy = tmp_path / "policy.toml"
    policy.write_text('[spine]\nmax_lines = "many"\n')
    monkeypatch.setenv("DISTILLD_POLICY", str(policy))
    code, _, err = run(capsys, "check", str(store))
    assert code == 78  # a bad policy is bad settings (issue 27)
    assert "spine.max_lines" in one_line(err)


def test_policy_caps_are_applied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    lines = (store / "SPINE.md").read_bytes().count(b"\n")
    policy = tmp_path / "policy.toml"
    policy.write_text("[spine]\nmax_lines = 20\ncompact_at_lines = 15\n")
    code, out, _ = run(capsys, "--policy", str(policy), "check", str(store))
    assert out.startswith(f"C1 FAIL\n    - SPINE has {lines} lines (max 20)\nC2 PASS\nC3 PASS\n")
    assert code == 1


# -- catalog --write ------------------------------------------------------------------------------------


def test_catalog_write_creates_the_catalog_of_a_new_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = StoreBuilder(tmp_path / "store").write("SPINE.md", INSTALLER_SPINE)
    code, out, _ = run(capsys, "catalog", "--write", str(b.root))
    assert code == 0
    assert b.read("CATALOG.md").decode() == EMPTY_CATALOG_AT_FIXED_NOW
    assert "CATALOG.md" in out
    code, out, _ = run(capsys, "check", str(b.root))
    assert (code, out) == (0, "C1 PASS\nC2 PASS\nC3 PASS\n")


def add_lumen(b: StoreBuilder) -> None:
    b.tier("projects/lumen.md", "# Lumen\n\n- Dashboards refresh hourly.\n",
           domain="project", scope="Lumen dashboards", last_updated="2026-10-10")
    b.write("SPINE.md", b.read("SPINE.md") + f"- [Lumen](projects/lumen.md) {EM} dashboards.\n".encode())


def test_catalog_write_updates_then_says_current_and_leaves_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path / "store")
    add_lumen(b)
    code, out, _ = run(capsys, "check", str(b.root))
    assert "    - file not in catalog: projects/lumen.md\n" in out
    code, out, _ = run(capsys, "catalog", "--write", str(b.root))
    assert code == 0
    written = b.read("CATALOG.md").decode()
    assert "- projects/lumen.md | Lumen dashboards | validated 2026-10-10\n" in written
    assert written.index("- projects/kestrel.md |") < written.index("- projects/lumen.md |") < written.index("- projects/osprey.md |")
    code, out, _ = run(capsys, "check", str(b.root))
    assert (code, out) == (0, "C1 PASS\nC2 PASS\nC3 PASS\n")

    before = tree_state(tmp_path)
    cli_module_now = FIXED_NOW.replace(hour=18)  # a later run: only the stamp would differ
    code, out, _ = run_at(capsys, cli_module_now, "catalog", "--write", str(b.root))
    assert code == 0
    assert "current" in out
    assert tree_state(tmp_path) == before


def run_at(capsys: pytest.CaptureFixture[str], now: Any, *argv: str) -> tuple[int, str, str]:
    original = cli_module._now
    cli_module._now = lambda: now  # type: ignore[assignment]
    try:
        return run(capsys, *argv)
    finally:
        cli_module._now = original  # type: ignore[assignment]


def test_catalog_write_on_a_current_store_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path / "store")
    before = tree_state(tmp_path)
    code, out, _ = run(capsys, "catalog", "--write", str(b.root))
    assert code == 0 and "current" in out
    assert tree_state(tmp_path) == before


def test_catalog_write_refreshes_a_stale_rebuilt_stamp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path / "store")
    b.write("CATALOG.md", b.read("CATALOG.md").replace(b"rebuilt: 2026-11-30T12:00:00Z", b"rebuilt: 2026-09-10"))
    code, out, _ = run(capsys, "check", str(b.root))
    assert "catalog stale: rebuilt 2026-09-10 but newest ledger event is 2026-09-11T08:00:00Z" in out
    code, out, _ = run(capsys, "catalog", "--write", str(b.root))
    assert code == 0 and "current" not in out
    assert b"rebuilt: 2026-11-30T12:00:00Z" in b.read("CATALOG.md")
    assert run(capsys, "check", str(b.root))[1] == "C1 PASS\nC2 PASS\nC3 PASS\n"


def test_catalog_write_keeps_crlf_line_endings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path / "store")
    b.write("CATALOG.md", b.read("CATALOG.md").replace(b"\n", b"\r\n"))
    add_lumen(b)
    code, _, _ = run(capsys, "catalog", "--write", str(b.root))
    assert code == 0
    raw = b.read("CATALOG.md")
    assert b"- projects/lumen.md | Lumen dashboards | validated 2026-10-10\r\n" in raw
    assert raw.count(b"\n") == raw.count(b"\r\n")


@pytest.mark.parametrize("content", ["tier", "archive"])
def test_catalog_write_refuses_an_unmigrated_store(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    b = StoreBuilder(tmp_path / "store").write("SPINE.md", "# Distill Knowledge Index\n\n- [Kestrel](projects/kestrel.md) -- ingest.\n")
    if content == "tier":
        b.tier("projects/kestrel.md", "# Kestrel\n", scope="Kestrel", last_updated="2026-10-01")
    else:
        b.write("archive/projects/old.md", "# Old\n")
    before = tree_state(tmp_path)
    code, out, err = run(capsys, "catalog", "--write", str(b.root))
    assert code == 2
    assert str(b.root) in one_line(err)
    assert not (b.root / "CATALOG.md").exists()
    assert tree_state(tmp_path) == before
    # Printing is still allowed, and writes nothing either.
    code, out, _ = run(capsys, "catalog", "--print", str(b.root))
    assert code == 0 and out.startswith("# Knowledge catalog\n")
    assert tree_state(tmp_path) == before


# -- $DISTILLD_STORE ------------------------------------------------------------------------------------


def test_store_defaults_to_distilld_store(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    b = healthy_store(tmp_path / "store")
    monkeypatch.setenv("DISTILLD_STORE", str(b.root))
    assert run(capsys, "check") == (0, "C1 PASS\nC2 PASS\nC3 PASS\n", "")
    explicit = run(capsys, "catalog", "--print", str(b.root))
    assert run(capsys, "catalog", "--print") == explicit
    assert explicit[1] == b.read("CATALOG.md").decode()
    report = json.loads(run(capsys, "budget", "--json")[1])
    assert report["spine_bytes"] == len(b.read("SPINE.md"))
    b.remove("CATALOG.md")
    code, out, _ = run(capsys, "check")
    assert "C2 FAIL\n" in out and "    - CATALOG.md missing\n" in out
    code, out, _ = run(capsys, "catalog", "--write")
    assert code == 2  # tier files but no catalog: unmigrated, refused
    assert not (b.root / "CATALOG.md").exists()


def test_explicit_store_wins_over_distilld_store(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    good = healthy_store(tmp_path / "good").root
    monkeypatch.setenv("DISTILLD_STORE", str(tmp_path / "missing"))
    assert run(capsys, "check", str(good))[0] == 0


def test_without_distilld_store_the_default_is_under_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], _isolated: Path
) -> None:
    # $HOME is tmp_path/home here, so the default ~/.aura-distill is a missing folder in tmp_path.
    before = tree_state(tmp_path)
    code, out, err = run(capsys, "check")
    assert code == 2
    assert str(_isolated / ".aura-distill") in one_line(err)
    assert tree_state(tmp_path) == before
