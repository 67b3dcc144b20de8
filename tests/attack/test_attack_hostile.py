"""Hostile stores through the pass driver (compaction): each must end clean (no lost tier line, no
new failure, no lock, temp file or unfinished journal, nothing left for the next pass), or be
refused with nothing changed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, tier_lines
from maintenance_fixtures import long_file, migrated_store_over_targets

from distilld.actions.compaction import preview_compaction, run_compaction
from distilld.engine.passes.compaction.apply import CompactionRefused
from distilld.engine.recovery import interrupted_passes
from distilld.policy import load_policy
from distilld.store.fs import TEMP_RE
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def failing(root: Path) -> set[str]:
    return {f"{f.code}: {f.message}" for f in check_store(take_snapshot(root), POLICY.limits) if f.severity == "fail"}


def crlf_spine(root: Path) -> None:
    spine = root / "SPINE.md"
    spine.write_bytes(spine.read_bytes().replace(b"\n", b"\r\n"))


def bom_spine(root: Path) -> None:
    spine = root / "SPINE.md"
    spine.write_bytes(b"\xef\xbb\xbf" + spine.read_bytes())


def local_overlay(root: Path) -> None:
    (root / "local").mkdir()
    (root / "local/SPINE.md").write_text(f"# Local\n\n- [Mine](local/mine.md) {EM} mine. Read always.\n")
    (root / "local/mine.md").write_text("# Mine\n\n" + long_file("Mine", 12))


def unmanaged_folder(root: Path) -> None:
    (root / "notes").mkdir()
    (root / "notes/todo.md").write_text("# Todo\n\n" + long_file("Todo", 12))


def joiner(between: str) -> Callable[[Path], None]:
    def join(root: Path) -> None:
        spine = (root / "SPINE.md").read_text()
        pair = (f"[Retries](craft/retries.md) {EM} retry budgets per call site. Read before adding a retry.\n"
                "- [Retries, continued](craft/retries-2.md)")
        assert pair in spine
        spine = spine.replace(pair, f"[Retries](craft/retries.md){between}[Retries, continued](craft/retries-2.md)")
        (root / "SPINE.md").write_text(spine)
    return join


def odd_name(root: Path) -> None:
    os.rename(root / "ops/runbook.md", root / "ops/run+book_ü.md")
    spine = root / "SPINE.md"
    spine.write_text(spine.read_text().replace("(ops/runbook.md)", "(ops/run+book_ü.md)"))


def long_section(root: Path) -> None:
    body = "# Big\n\n## One section\n\n" + "".join(f"- line {n} of one long section, word w{n}\n" for n in range(2000))
    (root / "ops/big.md").write_text(f"---\ndomain: ops\nscope: big\nlast_updated: 2026-09-01\n---\n\n{body}")
    spine = root / "SPINE.md"
    entry = f"- [Big](ops/big.md) {EM} big. Read when big.\n"
    spine.write_text(spine.read_text().replace("## Ops\n", "## Ops\n" + entry, 1))


def symlinked_tier_file(root: Path) -> None:
    outside = root.parent / "runbook-outside.md"
    shutil.move(root / "ops/runbook.md", outside)
    os.symlink(outside, root / "ops/runbook.md")


HELD: dict[str, Callable[[Path], None]] = {
    "crlf-spine": crlf_spine, "bom-spine": bom_spine, "local-overlay": local_overlay,
    "unmanaged-folder": unmanaged_folder, "joiner-comma": joiner(", "), "joiner-amp": joiner(" & "),
    "joiner-tight-plus": joiner("+"), "odd-name": odd_name, "2000-line-section": long_section,
    "symlinked-tier-file": symlinked_tier_file,
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", list(HELD.values()), ids=list(HELD))
def test_a_hostile_store_is_compacted_clean(edit: Callable[[Path], None], tmp_path: Path) -> None:
    root = migrated_store_over_targets(tmp_path / "store").root
    edit(root)
    lines, failures = tier_lines(root), failing(root)
    outside = sorted(p.name for p in tmp_path.iterdir())
    report = run_compaction(root, POLICY, lambda: NOW, apply=True)
    assert report.pass_ok
    assert not lines - tier_lines(root)
    assert failing(root) - failures == set()
    assert interrupted_passes(root) == []
    assert not (root / ".lock").exists()
    assert [p.name for p in root.rglob("*") if TEMP_RE.match(p.name)] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == outside
    plan = preview_compaction(root, POLICY, NOW).plan
    assert plan is not None and plan.steps == []


def test_an_emptied_spine_is_refused_not_rewritten(tmp_path: Path) -> None:
    """An emptied SPINE (an editor's crash, a bad merge) was compacted as if it were the index: the
    pass split the over-cap files and wrote a SPINE pointing at the new children only, so `check`
    no longer led with "SPINE.md points at no file" and a SPINE given back from git missed the
    children's pointers."""
    root = migrated_store_over_targets(tmp_path / "store").root
    (root / "SPINE.md").write_bytes(b"")
    before = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with pytest.raises(CompactionRefused, match="points at no file"):
        run_compaction(root, POLICY, lambda: NOW, apply=True)
    with pytest.raises(CompactionRefused, match="points at no file"):
        run_compaction(root, POLICY, lambda: NOW, apply=False)
    after = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert {k: v for k, v in after.items() if not k.startswith(".lock") and k != ".status"} == before
