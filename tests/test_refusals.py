"""Refusals that help, through the real command line: binary junk in SPINE.md or the ledger, a
missing store or a file given as the store, a refused migration preview, Ctrl-C in a migration,
a CRLF-converted archive, and output that never carries raw control bytes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import distilld.cli as cli_module
import pytest
from builders import FIXED_NOW, healthy_store
from distilld.cli import main
from distilld.store.readable import binary_reason
from maintenance_fixtures import unmigrated_store

JUNK = bytes(range(256)) * 4 + b"\x1b[2J\x1b]0;owned\x07"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DISTILLD_STORE", raising=False)
    monkeypatch.delenv("DISTILLD_POLICY", raising=False)
    monkeypatch.setattr(cli_module, "_now", lambda: FIXED_NOW)


def run(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> tuple[int, bytes, bytes]:
    code = main(list(argv))
    captured = capsysbinary.readouterr()
    assert b"Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".lock") and p.name != ".status"}


def raw_controls(data: bytes) -> list[int]:
    return [b for b in data if (b < 0x20 and b not in b"\t\n") or b == 0x7F]


@pytest.mark.parametrize("name", ["SPINE.md", "archive/LEDGER.md"])
@pytest.mark.parametrize("argv", [["gc", "--apply"], ["compact", "--apply"], ["compact", "--preview"],
                                  ["migrate", "--apply"], ["restore", "projects/x.md"]],
                         ids=lambda a: " ".join(a) if isinstance(a, list) else a)
def test_a_write_pass_refuses_binary_junk_in_one_line_naming_the_file(
        name: str, argv: list[str], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    b = healthy_store(tmp_path / "store")
    b.write(name, JUNK)
    before = tree(b.root)
    code, out, err = run(capsysbinary, *argv, str(b.root))
    assert code == 6, err
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and f"{b.root / name} cannot be read as text" in lines[0]
    assert out == b"" and raw_controls(err) == []
    assert tree(b.root) == before


def test_budget_says_the_spine_is_unreadable(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    b = healthy_store(tmp_path / "store")
    b.write("SPINE.md", JUNK)
    code, out, _ = run(capsysbinary, "budget", str(b.root))
    assert out.decode(errors="replace").splitlines()[0].startswith("SPINE.md: unreadable: ")
    assert b"lines of 80" not in out


def test_escaping_skips_only_text_that_holds_no_control_character() -> None:
    from distilld.cli._common import _ESCAPED_CONTROLS, escape_controls

    for code in range(0x110):  # every character of the table, and its neighbours
        text = f"ok {chr(code)} ok"
        assert escape_controls(text) == text.translate(_ESCAPED_CONTROLS), hex(code)
    assert escape_controls("plain\ttext\n" * 1000) == "plain\ttext\n" * 1000


def test_output_escapes_control_bytes(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    b = healthy_store(tmp_path / "store")
    (b.root / "projects" / "x\x1b[2J\x07.md").write_text("# x\n")  # a name a terminal would act on
    code, out, err = run(capsysbinary, "check", str(b.root))
    assert code == 1
    assert raw_controls(out + err) == []
    assert b"projects/x\\x1b[2J\\x07.md" in out


def test_a_stray_invalid_byte_is_still_text() -> None:
    assert binary_reason("caf\u00e9 and more text\n".encode("latin-1")) is None
    assert binary_reason(b"a\x00b") is not None


@pytest.mark.parametrize("argv", [["migrate", "--apply"], ["migrate"], ["gc", "--apply"], ["restore", "projects/x.md"],
                                  ["compact", "--apply"]], ids=" ".join)
def test_a_missing_store_or_a_file_is_named_as_such(argv: list[str], tmp_path: Path,
                                                   capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    missing = tmp_path / "nowhere"
    code, _, err = run(capsysbinary, *argv, str(missing))
    assert code == 2 and b"no such store" in err and b"lock" not in err
    afile = tmp_path / "afile"
    afile.write_text("not a store\n")
    code, _, err = run(capsysbinary, *argv, str(afile))
    assert code == 2 and b"is a file, not a folder" in err and b"lock" not in err
    assert not missing.exists() and afile.read_text() == "not a store\n"
    assert not list(tmp_path.glob("*.tmp*"))


def test_a_refused_migration_preview_exits_non_zero(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    root = tmp_path / "store"
    unmigrated_store(root)
    policy = tmp_path / "tight.toml"
    policy.write_text("[spine]\nmax_lines = 12\ncompact_at_lines = 10\nmax_bytes = 1200\ncompact_at_bytes = 1000\n")
    code, out, _ = run(capsysbinary, "migrate", str(root), "--policy", str(policy))
    assert b"REFUSED" in out
    assert code == 6
    code, out, _ = run(capsysbinary, "migrate", str(root), "--policy", str(policy), "--json")
    assert code == 6 and json.loads(out)["plan"]["refusal"]


@pytest.mark.slow
def test_ctrl_c_during_migrate_apply_says_finish_resumes_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    unmigrated_store(root)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "DISTILLD_CRASH_AT": "item-marked:2",
           "DISTILLD_CRASH_SIGNAL": "SIGINT"}
    done = subprocess.run([sys.executable, "-m", "distilld", "migrate", "--apply", str(root)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 130, done.stderr
    assert "PENDING" in done.stderr and "`distilld migrate --finish` resumes it" in done.stderr
    assert "Traceback" not in done.stderr
    env.pop("DISTILLD_CRASH_AT")
    # issue 27: status said "stuck: nothing" and check printed hundreds of failures first
    check = subprocess.run([sys.executable, "-m", "distilld", "check", str(root)], env=env,
                           capture_output=True, text=True, timeout=300, check=False)
    assert check.stdout.splitlines()[0].startswith("a migration is PENDING"), check.stdout[:500]
    assert "distilld migrate --finish" in check.stdout.splitlines()[0]
    assert len(check.stdout.splitlines()) < 120  # repeated findings are counted, not all listed
    status = subprocess.run([sys.executable, "-m", "distilld", "status", "--json", str(root)], env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert json.loads(status.stdout)["stuck"][0].startswith("a migration is PENDING"), status.stdout[:500]
    finished = subprocess.run([sys.executable, "-m", "distilld", "migrate", "--finish", str(root)], env=env,
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "DONE written" in finished.stdout


def test_a_crlf_converted_archive_says_so(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    b = healthy_store(tmp_path / "store")
    path = "archive/projects/marlin.md"  # archived with a ledger line holding its sha256
    raw = (b.root / path).read_bytes()
    assert b"\r\n" not in raw  # archived with LF; the ledger holds the sha256 of these bytes
    (b.root / path).write_bytes(raw.replace(b"\n", b"\r\n"))  # what a converting tool does
    code, out, _ = run(capsysbinary, "check", str(b.root))
    assert code == 1
    text = out.decode()
    assert f"ledger sha256 does not match archived file: {path}" in text
    assert "matches the ledger's sha256 once CRLF is read as LF: line endings were converted after archiving" in text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["--preview", "--apply"])
def test_migrate_shows_progress_on_a_terminal_and_not_in_a_pipe(mode: str, tmp_path: Path) -> None:
    import pty

    root = tmp_path / "store"
    unmigrated_store(root)
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    leader, follower = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "distilld", "migrate", mode, str(root)], env=env,
                          stdout=subprocess.PIPE, stderr=follower, timeout=300)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if len(chunk) < 65536:
            break
    os.close(leader)
    assert done.returncode == 0
    assert b"planning the migration" in seen
    if mode == "--apply":
        assert b"backing up" in seen and b"migrating" in seen
    assert b"planning" not in done.stdout  # the report on stdout stays clean
    piped = subprocess.run([sys.executable, "-m", "distilld", "migrate", str(root)], env=env,
                           capture_output=True, timeout=300)
    assert b"planning the migration" not in piped.stderr
