"""Every printed file name goes through one escaping function (store/text.py ``shown``): a
newline, an ESC or a byte that is not UTF-8 in a name stays on its line in the gc plan, in
check's reasons and in the notes (issue 23, item 7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import healthy_store
from distilld.cli import main as cli_main
from distilld.store.text import shown


def test_shown_keeps_a_name_on_one_line_and_its_bytes_readable() -> None:
    assert shown("projects/plain-name.md") == "projects/plain-name.md"
    assert shown("projects/new\nline\r.md") == "projects/new\\nline\\r.md"
    assert shown("projects/\x1b[2Jx\t.md") == "projects/\\x1b[2Jx\\t.md"
    assert shown("projects/caf\udce9.md") == "projects/caf\\xe9.md" == shown(b"projects/caf\xe9.md")
    assert shown("projects/café \u0085.md") == "projects/café \\u0085.md"


@pytest.mark.parametrize("name", ["projects/new\nline.md", "projects/esc\x1b[2J.md"])
def test_an_odd_name_is_escaped_in_the_gc_plan_and_in_checks_reasons(
        tmp_path: Path, name: str, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    (root / name).write_text("---\ndomain: project\nscope: odd\nlast_updated: 2025-01-01\n---\n\n# Odd\n\n- old\n")
    escaped = shown(name)

    assert cli_main(["gc", str(root)]) == 0
    plan = capsysbinary.readouterr().out.decode()
    assert cli_main(["check", str(root)]) == 1
    check = capsysbinary.readouterr().out.decode()

    for shown_text in (plan, check):
        assert escaped in shown_text
        assert not [line for line in shown_text.split("\n") if line.startswith(("line.md", "[2J"))]
        assert "\x1b" not in shown_text
    assert f"- {escaped}: the name cannot be written to the ledger unchanged" in plan
    assert f"active file has no SPINE pointer: {escaped}" in check
    assert os.path.exists(root / name)  # a preview and a check change nothing
