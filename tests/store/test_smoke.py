"""The healthy fixture store passes, and the empty installer-shaped store passes."""

from __future__ import annotations

from pathlib import Path

from builders import StoreBuilder, healthy_store

from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits

INSTALLER_SPINE = "# Distill Knowledge Index\n\n<!-- managed -->\n\n- [Catalog](CATALOG.md) \u2014 complete inventory; not loaded at start.\n"
INSTALLER_CATALOG = (
    "# Knowledge catalog\n\n<!-- Complete inventory, rebuilt by /distill. Not loaded at session start. "
    "rebuilt: 2026-09-23T10:00:00Z -->\n\n## active\n\n## archived\n\n## evidence\n"
)


def failures(root: Path) -> list[str]:
    return [f.message for f in check_store(take_snapshot(root), LIMITS) if f.severity == "fail"]


def test_healthy_store_passes(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    assert failures(tmp_path) == []


def test_installer_shaped_store_passes(tmp_path: Path) -> None:
    StoreBuilder(tmp_path).write("SPINE.md", INSTALLER_SPINE).write("CATALOG.md", INSTALLER_CATALOG)
    assert failures(tmp_path) == []


def test_missing_spine_fails_c1_only_with_that_reason(tmp_path: Path) -> None:
    StoreBuilder(tmp_path).write("CATALOG.md", INSTALLER_CATALOG)
    found = [f for f in check_store(take_snapshot(tmp_path), LIMITS) if f.group == "C1"]
    assert [f.message for f in found] == ["SPINE.md missing"]
