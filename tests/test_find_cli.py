"""`distilld find`, `bundle` and `serve` on the command line: exit codes (9 for an honest
not-found), plain and JSON output, bad input said in one line, and a store left as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from builders import healthy_store

from distilld.cli import main
from distilld.exits import NOT_FOUND


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out, captured.err


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_find_prints_ranked_files_and_leaves_the_store_as_it_was(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    before = tree(store)
    code, out, _ = run(capsys, "find", "schema registry", str(store))
    assert code == 0
    assert out.startswith("1. projects/kestrel.md  (matched: SPINE line, body)\n")
    assert "   SPINE: - [Kestrel](projects/kestrel.md)" in out and "store fingerprint " in out
    assert tree(store) == before


def test_not_found_has_its_own_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    code, out, _ = run(capsys, "find", "marlin backfill", "--store", str(store))
    assert code == NOT_FOUND == 9
    assert "The store holds nothing on 'marlin backfill'" in out
    assert "found in the archive: archive/projects/marlin.md (archived on 2026-09-11; restore with " \
           "`distilld restore projects/marlin.md`)" in out
    code, out, _ = run(capsys, "find", "marlin backfill", str(store), "--archived", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["schema"] == "distilld.find/1" and answer["results"][0]["status"] == "archived"


@pytest.mark.parametrize("query", ["", '"', "NEAR(", "x" * 100_000])
def test_bad_queries_are_said_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], query: str) -> None:
    store = healthy_store(tmp_path / "store").root
    code, out, err = run(capsys, "find", query, str(store))
    if query == "NEAR(":  # a plain word here: searched, and honestly not found
        assert code == NOT_FOUND and "holds nothing" in out
        return
    assert code == 2 and out == "" and err.startswith("distilld: the query ") and err.count("\n") == 1
    code, out, _ = run(capsys, "find", query, str(store), "--json")
    assert code == 2 and json.loads(out)["schema"] == "distilld.error/1"


def test_bundle_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = healthy_store(tmp_path / "store").root
    code, out, _ = run(capsys, "bundle", "deploy canary soak", str(store), "--budget", "400")
    assert code == 0
    assert out.startswith("# Knowledge bundle for: deploy canary soak\n")
    assert "\n## ops/deploy.md (answers the task, " in out
    assert "\n## craft/testing.md (read_with of ops/deploy.md, " in out
    code, out, _ = run(capsys, "bundle", "deploy canary soak", str(store), "--budget", "400", "--json")
    assert json.loads(out)["used_tokens"] <= 400
    assert run(capsys, "bundle", "kelp photosynthesis", str(store))[0] == NOT_FOUND
    code, _, err = run(capsys, "bundle", "deploy", str(store), "--budget", "0")
    assert code == 2 and "budget" in err


def test_a_missing_store_is_said_plainly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["find", "x"], ["bundle", "x"], ["serve"]):
        code, _, err = run(capsys, *argv, str(tmp_path / "nowhere"))
        assert code == 2 and "no such store directory" in err


@pytest.mark.slow
def test_serve_without_the_sdk_names_the_extra(tmp_path: Path) -> None:
    store = healthy_store(tmp_path / "store").root
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "mcp").mkdir()
    (blocker / "mcp/__init__.py").write_text("raise ImportError('no mcp here', name='mcp')\n")
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(blocker)!r}); "
                           "from distilld.cli import main; sys.exit(main(['serve', sys.argv[1]]))", str(store)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "pip install 'distilld[mcp]'" in done.stderr and "Traceback" not in done.stderr
