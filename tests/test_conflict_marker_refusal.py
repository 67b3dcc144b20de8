"""Conflict-marker lines are never knowledge (issue 23, item 11): every write pass (and the
compaction and gc previews) refuses a store whose SPINE or tier files hold one, wherever it
stands, naming the file and line, with exit 6 and nothing changed."""

from __future__ import annotations

from pathlib import Path

import distilld.cli as cli_module
import pytest
from builders import FIXED_NOW, healthy_store
from distilld.cli import main
from distilld.store.conflicts import conflict_marker_lines, has_conflict_markers

WHOLE = "<<<<<<< HEAD\n- ours\n=======\n- theirs\n>>>>>>> origin/main\n"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DISTILLD_STORE", raising=False)
    monkeypatch.delenv("DISTILLD_POLICY", raising=False)
    monkeypatch.setattr(cli_module, "_now", lambda: FIXED_NOW)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".lock") and p.name != ".status"}


def test_marker_lines_count_alone_and_out_of_order_but_a_lone_underline_does_not() -> None:
    assert conflict_marker_lines(WHOLE.encode()) == [1, 3, 5]
    assert conflict_marker_lines(b"- a\n>>>>>>> theirs\n") == [2]  # the rest was moved elsewhere
    assert conflict_marker_lines(b"- a\r\n<<<<<<<\r\n") == [2]
    assert conflict_marker_lines(b"Title\n=======\n\n- a\n") == []  # a Markdown heading underline
    assert conflict_marker_lines(b"- a <<<<<<< inside a line\n") == []
    assert not has_conflict_markers(b"- a\n>>>>>>> theirs\n")  # the commit rule wants a whole conflict


@pytest.mark.parametrize(("name", "text"), [
    ("SPINE.md", WHOLE),
    ("SPINE.md", ">>>>>>> 1a2b3c4 (a user's merge)\n"),  # only the closing line is left
    ("craft/testing.md", WHOLE),
])
@pytest.mark.parametrize("argv", [["gc", "--apply"], ["gc"], ["compact", "--apply"], ["compact"],
                                  ["migrate", "--apply"], ["restore", "projects/x.md"]],
                         ids=lambda a: " ".join(a) if isinstance(a, list) else a)
def test_every_pass_refuses_a_store_holding_conflict_markers(
        name: str, text: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path / "store")
    b.write(name, b.read(name) + text.encode())
    before = tree(b.root)

    code = main([*argv, str(b.root)])

    err = capsys.readouterr().err
    assert code == 6, err
    assert f"git conflict markers in {name} (line " in err, err
    assert "resolve the conflict by hand" in err and "Traceback" not in err
    assert tree(b.root) == before


def test_markers_shown_inside_a_code_fence_are_knowledge_about_git() -> None:
    lesson = b"# Git\n\n```\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n```\n- Resolve by hand.\n"
    assert conflict_marker_lines(lesson) == []
