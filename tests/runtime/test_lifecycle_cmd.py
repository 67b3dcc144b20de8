"""`distilld lifecycle enable|disable|status`: the store's local .lifecycle, written plainly."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import healthy_store
from distilld.cli import main
from distilld.store.local import lifecycle_enabled


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_enable_disable_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    code, out, _ = run(capsys, "lifecycle", "status", "--store", str(store))
    assert code == 0 and "lifecycle is disabled (no " in out
    code, out, _ = run(capsys, "lifecycle", "enable", "--store", str(store))
    assert code == 0 and "lifecycle is now enabled" in out
    assert (store / ".lifecycle").read_bytes() == b"enabled\n"
    assert lifecycle_enabled(store)
    code, out, _ = run(capsys, "lifecycle", "enable", "--store", str(store))
    assert "lifecycle is enabled" in out  # already so: nothing rewritten
    code, out, _ = run(capsys, "lifecycle", "disable", "--store", str(store))
    assert (store / ".lifecycle").read_bytes() == b"disabled\n"
    assert not lifecycle_enabled(store)


def test_a_bom_and_blanks_are_read_as_the_format_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    (store / ".lifecycle").write_bytes(b"\xef\xbb\xbf  enabled \r\n")
    code, out, _ = run(capsys, "lifecycle", "status", "--store", str(store))
    assert "is enabled" in out


def test_default_store_from_the_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    store = healthy_store(tmp_path / "store").root
    monkeypatch.setenv("DISTILLD_STORE", str(store))
    assert run(capsys, "lifecycle", "enable")[0] == 0
    assert lifecycle_enabled(store)


def test_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "lifecycle", "enable", "--store", str(tmp_path / "nope"))
    assert code == 2 and "no such store" in err
