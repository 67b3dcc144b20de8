"""Compaction never takes a link out of the SPINE: a link may be another file's only pointer."""

from __future__ import annotations

from pathlib import Path

from builders import EM, FIXED_NOW, StoreBuilder

from distilld.actions.compaction import run_compaction
from distilld.policy import load_policy
from distilld.store.hooks import short_hook
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits


def test_a_cut_read_clause_keeps_its_links() -> None:
    hook = "Alpha rules. Read when touching " + "subsystem and " * 30 + "with [Beta notes](craft/beta.md) open"
    short = short_hook(hook, 120)
    assert "[Beta notes](craft/beta.md)" in short


def test_compaction_keeps_the_only_pointer_that_sits_in_a_read_clause(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path)
    b.tier("craft/alpha.md", "# Alpha\n\n## Rules\n\n- Alpha rule one.\n", scope="Alpha rules",
           last_updated="2026-09-01")
    b.tier("craft/beta.md", "# Beta\n\n## Rules\n\n- Beta rule one.\n", scope="Beta rules", last_updated="2026-09-01")
    words = " ".join(f"subsystem{n} and" for n in range(30))
    b.spine(["## Craft", f"- [Alpha](craft/alpha.md) {EM} Alpha rules. Read when touching {words} always "
             "with [Beta notes](craft/beta.md) open"])
    b.rebuild_catalog()
    report = run_compaction(tmp_path, load_policy(), lambda: FIXED_NOW, apply=True)
    assert report.ok
    spine = (tmp_path / "SPINE.md").read_text()
    assert "](craft/beta.md)" in spine
    assert [f.message for f in check_store(take_snapshot(tmp_path), LIMITS) if f.severity == "fail"] == []
