"""A compaction that leaves the store over a cap exits 1 and says why (the exit-code table: 1 = the
store fails C1-C4), with the same words a refused split uses: the file, the unit that cannot be
cut with its size against the room a piece has, and what a person can do.

The real CLI runs in a child process on stores built in tmp_path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile import run_distilld
from maintenance_fixtures import add_uncuttable_file, have_bash, migrated_store_over_targets, oracle_passes

pytestmark = pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")
UNIT = "the marked section '## [NON-NEGOTIABLE] Never deploy on Fridays' at lines 13-84 is 72 lines"
ROOM = "more than a split piece can hold (about 52 lines and"
WHAT_TO_DO = "Shorten it or move part of it to another file by hand"


@pytest.fixture
def stuck_store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    add_uncuttable_file(migrated_store_over_targets(root))
    shutil.copytree(root, tmp_path / "before")
    return root


def test_compact_apply_exits_1_naming_the_file_the_unit_and_what_to_do(stuck_store: Path, tmp_path: Path) -> None:
    done = run_distilld(["compact", str(stuck_store), "--apply"])
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "self-check passed" in out  # the pass itself did what it planned ...
    assert "the store still fails its caps (exit 1); what cannot be cut, and what you can do:" in out
    tail = out.split("the store still fails its caps", 1)[1]
    assert "ops/fridays.md has 84 lines (max 60)" in tail  # ... and the store is still over a cap
    assert f"ops/fridays.md: {UNIT}" in tail and ROOM in tail and WHAT_TO_DO in tail
    assert out.count(UNIT) == 1  # said once, with its reasons, not also as plan debt
    # Everything else was compacted, and nothing was lost (C4 against the store before).
    check = run_distilld(["check", str(stuck_store), "--before", str(tmp_path / "before")])
    assert check.returncode == 1
    assert "C4 PASS" in check.stdout and "C1 PASS" in check.stdout and "ops/fridays.md has 84 lines" in check.stdout


def test_compact_json_says_it_too(stuck_store: Path) -> None:
    done = run_distilld(["compact", str(stuck_store), "--apply", "--json"])
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False and report["pass_ok"] is True
    [failure] = report["over_caps"]
    assert failure["path"] == "ops/fridays.md" and failure["problems"] == ["ops/fridays.md has 84 lines (max 60)"]
    [why] = failure["why"]
    assert why.startswith(f"ops/fridays.md: {UNIT}") and ROOM in why and WHAT_TO_DO in why


def test_a_preview_that_would_leave_a_cap_failing_exits_1_and_changes_nothing(stuck_store: Path,
                                                                              tmp_path: Path) -> None:
    done = run_distilld(["compact", str(stuck_store)])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the compacted store would still fail its caps (exit 1)" in done.stdout and UNIT in done.stdout
    assert run_distilld(["check", str(stuck_store), "--before", str(tmp_path / "before")]).returncode == 1
    assert sorted(p.name for p in stuck_store.iterdir()) == sorted(p.name for p in (tmp_path / "before").iterdir())


def test_a_second_compaction_with_nothing_left_to_do_still_exits_1(stuck_store: Path) -> None:
    assert run_distilld(["compact", str(stuck_store), "--apply"]).returncode == 1
    again = run_distilld(["compact", str(stuck_store), "--apply"])
    assert again.returncode == 1 and "nothing more can be done mechanically" in again.stdout
    assert UNIT in again.stdout


def test_a_compaction_whose_store_passes_exits_0(tmp_path: Path) -> None:
    root = tmp_path / "store"
    migrated_store_over_targets(root)
    shutil.copytree(root, tmp_path / "before")
    done = run_distilld(["compact", str(root), "--apply", "--json"])
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["over_caps"] == []
    oracle_passes(root, tmp_path / "before")
    assert run_distilld(["compact", str(root)]).returncode == 0  # and a preview of the store it left
