"""measure_budget on built stores (STORE-FORMAT.md 1.2-1.4, 4.1 Step 5, 4.4), and that budget never writes."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, StoreBuilder, healthy_store

from distilld.actions.budget import render_json, run_budget
from distilld.cli import main
from distilld.policy import load_policy
from distilld.store.budget import measure_budget
from distilld.store.limits import LifecycleLimits, Limits
from distilld.store.snapshot import take_snapshot

TODAY = FIXED_NOW.date()  # 2026-11-30
LIMITS = load_policy().limits
CATALOG_LINE = f"- [Catalog](CATALOG.md) {EM} complete inventory."


def budget(root: Path, limits: Limits = LIMITS, today: date = TODAY):
    return measure_budget(take_snapshot(root), limits, today)


def entry(size: int, path: str = "craft/a.md") -> str:
    """A single-line SPINE entry of exactly ``size`` bytes (the em dash counts 3)."""
    head = f"- [T]({path}) {EM} "
    pad = size - len(head.encode())
    assert pad > 0
    return head + "x" * pad


def sized(header: str, lines: int, size: int, newline: str = "\n") -> str:
    """``header`` (complete lines) padded to exactly ``lines`` lines and ``size`` raw bytes."""
    head_lines = header.count("\n")
    rest = lines - head_lines
    assert rest >= 1
    body = ("a" + newline) * (rest - 1)
    last = size - len((header + body).encode()) - len(newline)
    assert last >= 1, "size too small for the line count"
    text = header + body + "b" * last + newline
    assert len(text.encode()) == size and text.replace("\r", "").count("\n") == lines
    return text


def snapshot_of_disk(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
            if p.is_file()}


# -- SPINE size and token estimates --------------------------------------------------------------
def test_spine_lines_and_bytes_ignore_cr_for_lines_only(tmp_path: Path) -> None:
    raw = f"# Index\r\n\r\n{CATALOG_LINE}\r\nlast line without a newline".encode()
    StoreBuilder(tmp_path).write("SPINE.md", raw)
    report = budget(tmp_path)
    assert report.spine_present is True
    assert report.spine_lines == 4
    assert report.spine_bytes == len(raw) == 87


def test_token_estimates_use_bytes_and_characters(tmp_path: Path) -> None:
    text = f"# Index\n\n- [A](craft/a.md) {EM} \u00e9\u00e9\u00e9 caf\u00e9 {EM} xxxxxxx\n"
    StoreBuilder(tmp_path).write("SPINE.md", text)
    report = budget(tmp_path)
    assert (report.spine_lines, report.spine_bytes, report.spine_chars) == (3, 56, 48)
    assert report.tokens_estimate == 14  # 56 bytes / 4
    assert report.tokens_upper_estimate == 15  # 48 characters / 3.2


def test_missing_spine(tmp_path: Path) -> None:
    StoreBuilder(tmp_path).tier("craft/a.md", "# A\n")
    report = budget(tmp_path)
    assert (report.spine_present, report.spine_lines, report.spine_bytes, report.entries_over) == (False, 0, 0, [])


# -- entries over the entry cap --------------------------------------------------------------------
def test_entries_over_the_cap_with_joined_size_and_line_number(tmp_path: Path) -> None:
    wrapped_first = entry(300, "craft/b.md")
    lines = [
        "# Index", "", CATALOG_LINE, "", "## Craft",
        entry(400),                          # line 6: exactly at the cap
        wrapped_first,                       # line 7: 300 + 1 joining byte + 100 = 401
        "    " + "y" * 100,                  # line 8: continuation, left-trimmed before joining
        entry(450, "craft/c.md"),            # line 9
        "<!-- 450 bytes above -->",
        "## Ops",
        entry(399, "ops/d.md") + "\u00e9",   # line 12: 401 bytes, 400 characters
    ]
    StoreBuilder(tmp_path).write("SPINE.md", "\n".join(lines) + "\n")
    over = budget(tmp_path).entries_over
    assert [(e.line, e.bytes) for e in over] == [(7, 401), (9, 450), (12, 401)]
    assert over[0].start == wrapped_first.encode()[:60].decode()  # the first 60 bytes, as C1 quotes it


def test_entry_cap_is_a_parameter(tmp_path: Path) -> None:
    StoreBuilder(tmp_path).write("SPINE.md", "\n".join(["# I", entry(150), entry(120), entry(90)]) + "\n")
    report = budget(tmp_path, replace(LIMITS, spine=replace(LIMITS.spine, entry_max_bytes=100)))
    assert [(e.line, e.bytes) for e in report.entries_over] == [(2, 150), (3, 120)]


# -- tier files over their caps ---------------------------------------------------------------------
def files_over_store(root: Path) -> StoreBuilder:
    b = StoreBuilder(root).write("SPINE.md", f"# I\n\n{CATALOG_LINE}\n")
    b.write("craft/long.md", sized("---\nscope: long\n---\n", 61, 900))
    b.write("craft/exact.md", sized("---\nscope: exact\n---\n", 60, 6000))
    b.write("craft/big.md", sized("---\nscope: big\n---\n", 10, 6001))
    b.write("craft/oversize-big.md", sized("---\nscope: ob\noversize: one atomic table\n---\n", 10, 7000))
    b.write("craft/oversize-long.md", sized("---\nscope: ol\noversize: a long list\n---\n", 61, 2000))
    b.write("craft/crlf.md", sized("---\r\nscope: crlf\r\n---\r\n", 60, 6010, newline="\r\n"))
    b.write("craft/archive/huge.md", sized("# nested archive\n", 200, 9000))  # not a tier file
    b.write("archive/craft/huge.md", sized("# archived\n", 200, 9000))
    b.write("evidence/craft/long.md", sized("---\nevidence_for: craft/long.md\n---\n", 200, 9000))
    return b


def test_files_over_caps_and_oversize_exempts_bytes_only(tmp_path: Path) -> None:
    files_over_store(tmp_path)
    report = budget(tmp_path)
    assert [(f.path, f.lines, f.bytes, f.over_lines, f.over_bytes) for f in report.files_over] == [
        ("craft/big.md", 10, 6001, False, True),
        ("craft/crlf.md", 60, 6010, False, True),
        ("craft/long.md", 61, 900, True, False),
        ("craft/oversize-long.md", 61, 2000, True, False),
    ]
    assert report.oversize_exempt == [
        ("craft/oversize-big.md", "one atomic table"),
        ("craft/oversize-long.md", "a long list"),
    ]


# -- stale projects -----------------------------------------------------------------------------------
def stale_store(root: Path) -> StoreBuilder:
    b = StoreBuilder(root).write("SPINE.md", f"# I\n\n{CATALOG_LINE}\n")
    b.tier("projects/old.md", "# Old\n", last_updated="2026-01-01")                        # 333 days
    b.tier("projects/sub/old.md", "# Deep\n", last_updated="2026-01-01")                   # not directly under
    b.tier("craft/old.md", "# Craft\n", last_updated="2026-01-01")                         # not a candidate dir
    b.tier("projects/undated.md", "# Undated\n", scope="no stamp at all")                  # ineligible
    b.tier("projects/pinned.md", "# P\n", last_updated="2026-01-01", lifecycle="pinned")   # exempt
    b.tier("projects/nn.md", "- [NON-NEGOTIABLE 2026-01-01] keep\n", last_updated="2026-01-01")  # exempt
    b.tier("projects/slow.md", "# S\n", last_updated="2026-01-01", staleness_threshold="400")
    b.tier("projects/fast.md", "# F\n", last_updated="2026-11-15", staleness_threshold="10")
    b.tier("projects/ninety-one.md", "# N\n", last_updated="2026-08-31")                   # 91 days
    b.tier("projects/eighty-one.md", "# E\n", last_updated="2026-09-10")                   # 81 days
    b.tier("projects/principle.md", "- [PRINCIPLE] p\n  last_validated: 2026-11-01\n", last_updated="2026-01-01")
    b.write("archive/projects/gone.md", "---\nlast_updated: 2025-01-01\n---\n")            # archived: not debt
    return b


def test_stale_projects_only_directly_under_projects(tmp_path: Path) -> None:
    stale_store(tmp_path)
    report = budget(tmp_path)
    assert [(s.path, s.stamp, s.days, s.threshold) for s in report.stale_projects] == [
        ("projects/fast.md", "2026-11-15", 15, 10),
        ("projects/ninety-one.md", "2026-08-31", 91, 90),
        ("projects/old.md", "2026-01-01", 333, 90),
    ]


def test_candidate_dirs_and_default_threshold_are_parameters(tmp_path: Path) -> None:
    stale_store(tmp_path)
    report = budget(tmp_path, replace(LIMITS, lifecycle=LifecycleLimits(85, ("projects", "craft"), (60, 90))))
    assert [(s.path, s.days, s.threshold) for s in report.stale_projects] == [
        ("craft/old.md", 333, 85),
        ("projects/fast.md", 15, 10),
        ("projects/ninety-one.md", 91, 85),
        ("projects/old.md", 333, 85),
    ]


# -- debt -------------------------------------------------------------------------------------------
def test_debt_is_the_documented_sum(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    lines = ["# Index", "", CATALOG_LINE, "", "## Craft", entry(401), entry(450, "craft/c.md")]
    lines += [entry(390, f"projects/p{i}.md") for i in range(36)]
    text = "\n".join(lines) + "\n"
    pad = 16010 - len(text.encode()) - 1
    text += "## " + "z" * (pad - 3) + "\n"
    b.write("SPINE.md", text)
    b.write("craft/long.md", sized("---\nscope: long\n---\n", 61, 900))                       # over lines
    b.write("craft/big.md", sized("---\nscope: big\n---\n", 10, 6001))                        # over bytes
    b.write("craft/oversize-big.md", sized("---\nscope: ob\noversize: table\n---\n", 10, 7000))  # exemption
    b.tier("projects/old.md", "# Old\n", last_updated="2026-01-01")                          # stale
    b.tier("projects/fresh.md", "# Fresh\n", last_updated="2026-11-29")
    report = budget(tmp_path)
    assert report.spine_bytes == 16010 and report.spine_lines <= 80
    assert report.spine_bytes_over == 10
    assert len(report.entries_over) == 2
    assert len(report.files_over) == 2
    assert len(report.stale_projects) == 1
    assert len(report.oversize_exempt) == 1
    assert report.debt == 10 + 2 + 2 + 1 + 1


def test_healthy_store_debt_is_its_one_oversize_exemption(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    report = budget(tmp_path)
    raw = b.read("SPINE.md")
    assert (report.spine_lines, report.spine_bytes) == (raw.count(b"\n"), len(raw))
    assert (report.entries_over, report.files_over, report.stale_projects) == ([], [], [])
    assert report.oversize_exempt == [("feedback/preferences.md", "one table that cannot be split")]
    assert report.debt == 1


def test_report_to_dict_carries_the_derived_figures(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    data = budget(tmp_path).to_dict()
    assert data["debt"] == 1 and data["spine_bytes_over"] == 0
    assert data["tokens_estimate"] == round(data["spine_bytes"] / 4)


# -- budget never writes -------------------------------------------------------------------------------
@pytest.mark.parametrize("argv_tail", [[], ["--json"]])
def test_budget_never_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv_tail: list[str]) -> None:
    stale_store(tmp_path / "store")
    files_over_store(tmp_path / "store")
    root = tmp_path / "store"
    before = snapshot_of_disk(root)
    budget(root)
    run_budget(root, load_policy(), TODAY)
    assert main(["budget", str(root), *argv_tail]) == 0
    out = capsys.readouterr().out
    if argv_tail:
        assert json.loads(out)["spine_present"] is True
    else:
        assert "debt: " in out
    assert snapshot_of_disk(root) == before
    assert not (root / "CATALOG.md").exists()


def test_the_json_names_the_limits_as_it_always_has(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    data = json.loads(render_json(run_budget(tmp_path, load_policy(), TODAY)))
    assert data["limits"] == {"spine_max_lines": 80, "spine_max_bytes": 16000, "entry_max_bytes": 400,
                              "spine_compact_lines": 60, "spine_compact_bytes": 12000, "file_max_lines": 60,
                              "file_max_bytes": 6000, "staleness_days": 90, "candidate_dirs": ["projects"]}
