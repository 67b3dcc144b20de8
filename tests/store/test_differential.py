"""distilld check against an independent implementation of the reference checker.

tests/oracle/distill-check-store.sh was written from the specification alone, in bash, by a
different hand. For stores made by random mutations of a healthy store, and for random small
stores, both must give the same PASS/FAIL for every group, and the same canonical catalog.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, StoreBuilder, healthy_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle_cache import run_oracle

from distilld.policy import load_policy
from distilld.store.catalog import render_catalog
from distilld.store.findings import GROUPS
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the oracle needs bash")


def oracle_verdicts(store: Path, before: Path | None = None) -> dict[str, str]:
    done = run_oracle([store, *(["--before", before] if before else [])], timeout=60)
    assert done.returncode in (0, 1), done.stderr
    verdicts = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        head = line.split(" ")
        if len(head) == 2 and head[0] in GROUPS and head[1] in ("PASS", "FAIL"):
            verdicts[head[0]] = head[1]
    return verdicts


def distilld_verdicts(store: Path, before: Path | None = None) -> dict[str, str]:
    after = take_snapshot(store)
    findings = check_store(after, LIMITS)
    groups = list(GROUPS[:3])
    if before is not None:
        findings += check_c4(take_snapshot(before), after)
        groups.append("C4")
    failed = {f.group for f in findings if f.severity == "fail"}
    return {g: "FAIL" if g in failed else "PASS" for g in groups}


def oracle_catalog(store: Path) -> bytes:
    done = run_oracle(["--print-catalog", store], env={"DISTILL_NOW": "2026-11-30T12:00:00Z"}, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- mutations: each changes one thing a distiller, a user or an old client might do ------------

Mutation = Callable[[StoreBuilder], None]


def _append(b: StoreBuilder, path: str, text: str) -> None:
    b.write(path, b.read(path) + text.encode())


def _replace(b: StoreBuilder, path: str, old: str, new: str) -> None:
    b.write(path, b.read(path).replace(old.encode(), new.encode(), 1))


MUTATIONS: dict[str, Mutation] = {
    "long-entry": lambda b: _append(b, "SPINE.md", f"- [Kestrel notes](projects/kestrel.md) {EM} " + "word " * 90 + "\n"),
    "wrapped-entry": lambda b: _append(b, "SPINE.md", "  continues the last entry on a wrapped line\n"),
    "many-lines": lambda b: _append(b, "SPINE.md", "\n" * 70),
    "drop-catalog-line": lambda b: _replace(b, "SPINE.md", "- [Catalog](CATALOG.md)", "- Catalog (CATALOG.md)"),
    "dangling-pointer": lambda b: _append(b, "SPINE.md", f"- [Ghost](projects/ghost.md) {EM} gone.\n"),
    "uncontained-pointer": lambda b: _append(b, "SPINE.md", f"- [Up](../outside.md) {EM} escape.\n"),
    "unpointed-file": lambda b: b.tier("ops/oncall.md", "# On call\n", scope="On call", last_updated="2026-10-10"),
    "pointer-in-comment": lambda b: (b.tier("ops/oncall.md", "# On call\n", scope="On call"),
                                     _append(b, "SPINE.md", "<!-- - [On call](ops/oncall.md) -->\n")),
    "catalog-row-removed": lambda b: _replace(b, "CATALOG.md", "- projects/kestrel.md |", "- projects/kestrel-old.md |"),
    "catalog-validated-wrong": lambda b: _replace(b, "CATALOG.md", "validated 2026-11-02", "validated 2026-11-01"),
    "catalog-pinned-dropped": lambda b: _replace(b, "CATALOG.md", " | pinned", ""),
    "catalog-bare-pipe": lambda b: _replace(b, "CATALOG.md", "canary and soak", "canary | soak"),
    "evidence-count": lambda b: _append(b, "evidence/craft/testing.md", "- 2026-06-01 confirm: again\n"),
    "evidence-orphan": lambda b: b.write("evidence/ops/gone.md", "---\nevidence_for: ops/gone.md\n---\n"),
    "evidence-wrong-target": lambda b: _replace(b, "evidence/craft/testing.md", "evidence_for: craft/testing.md",
                                                "evidence_for: craft/other.md"),
    "archived-bytes-changed": lambda b: _append(b, "archive/projects/marlin.md", "- edited after archiving\n"),
    "recall-drift": lambda b: _replace(b, "archive/projects/marlin.md", "scope:", "recall_count: 3\nscope:"),
    "pending-adoption": lambda b: b.write("archive/ops/old-runbook.md", "# Old runbook\n"),
    "nested-archive": lambda b: b.write("craft/archive/old.md", "# Old craft notes\n"),
    "flat-legacy": lambda b: b.write("archive/stray.md", "# Stray\n"),
    "ledger-out-of-order": lambda b: b.append_ledger(
        "- 2026-01-01 restore | from: archive/projects/zed.md | to: projects/zed.md | reason: test"),
    "ledger-unknown-event": lambda b: b.append_ledger("- 2026-12-01 purge | from: projects/x.md | to: archive/projects/x.md"),
    "ledger-malformed": lambda b: b.append_ledger("- yesterday archive | from: projects/x.md"),
    "ledger-bare-pipe": lambda b: _replace(b, "archive/LEDGER.md", "reason: past threshold", "reason: past | threshold"),
    "ledger-escaped-pipe": lambda b: _replace(b, "archive/LEDGER.md", "reason: past threshold", "reason: past \\| threshold"),
    "catalog-stale": lambda b: _replace(b, "CATALOG.md", "rebuilt: 2026-11-30T12:00:00Z", "rebuilt: 2026-09-01T00:00:00Z"),
    "catalog-no-stamp": lambda b: _replace(b, "CATALOG.md", "rebuilt: 2026-11-30T12:00:00Z", "rebuilt never"),
    "collision": lambda b: b.write("archive/projects/kestrel.md", "# Kestrel copy\n"),
    "tier-too-long": lambda b: _append(b, "projects/kestrel.md", "- a line\n" * 60),
    "tier-too-big": lambda b: _append(b, "ops/deploy.md", "x" * 6100 + "\n"),
    "oversize-too-big": lambda b: _append(b, "feedback/preferences.md", "y" * 6100 + "\n"),
    "read-with-block": lambda b: _replace(b, "ops/deploy.md", "read_with: [craft/testing.md]", "read_with:\n  - craft/testing.md"),
    "read-with-missing": lambda b: _replace(b, "ops/deploy.md", "[craft/testing.md]", "[craft/testing.md, craft/none.md]"),
    "read-with-local": lambda b: _replace(b, "ops/deploy.md", "[craft/testing.md]", "[local/mine.md]"),
    "split-from-missing": lambda b: _replace(b, "craft/testing-2.md", "split_from: craft/testing.md", "split_from: craft/none.md"),
    "crlf-spine": lambda b: b.write("SPINE.md", b.read("SPINE.md").replace(b"\n", b"\r\n")),
    "bom-tier": lambda b: b.write("projects/osprey.md", b"\xef\xbb\xbf" + b.read("projects/osprey.md")),
    "non-utf8": lambda b: b.write("profile/rowan.md", b.read("profile/rowan.md") + b"\xff\xfe\n"),
    "symlink": lambda b: os.symlink("/etc/hostname", b.path("craft/linked.md")),
    "local-spine-bad": lambda b: b.write("local/SPINE.md", f"- [Mine](craft/testing.md) {EM} not local\n"),
    "local-spine-ok": lambda b: b.write("local/mine.md", "# mine\n").write("local/SPINE.md", f"- [Mine](local/mine.md) {EM} ok\n"),
}


def _build(root: Path, names: list[str]) -> None:
    b = healthy_store(root)
    for name in names:
        MUTATIONS[name](b)


@pytest.mark.slow  # many examples: in the full run (CI), not in -m "not slow"
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=0, max_size=4, unique=True))
def test_verdicts_agree_on_mutated_stores(names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "store"
        _build(root, names)
        assert distilld_verdicts(root) == oracle_verdicts(root), names


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_mutation_alone_agrees(tmp_path: Path, name: str) -> None:
    _build(tmp_path / "store", [name])
    assert distilld_verdicts(tmp_path / "store") == oracle_verdicts(tmp_path / "store")


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_c4_agrees_after_each_mutation(tmp_path: Path, name: str) -> None:
    before = tmp_path / "before"
    healthy_store(before)
    after = tmp_path / "after"
    shutil.copytree(before, after, symlinks=True)
    MUTATIONS[name](StoreBuilder(after))
    assert distilld_verdicts(after, before) == oracle_verdicts(after, before)


@pytest.mark.parametrize("names", [[], ["pending-adoption", "flat-legacy", "recall-drift"], ["crlf-spine", "bom-tier"]])
def test_catalogs_are_byte_identical(tmp_path: Path, names: list[str]) -> None:
    _build(tmp_path / "store", names)
    ours = render_catalog(take_snapshot(tmp_path / "store"), FIXED_NOW).encode("utf-8", "surrogateescape")
    assert ours == oracle_catalog(tmp_path / "store")


def test_spine_missing_agrees_and_skips_the_pointer_checks(tmp_path: Path) -> None:
    # STORE-FORMAT.md 3.3 step 2: without SPINE.md both checkers skip the pointer checks, so C2
    # passes a store whose only fault is the missing SPINE (C1 says so).
    root = tmp_path / "store"
    healthy_store(root)
    (root / "SPINE.md").unlink()
    assert distilld_verdicts(root) == oracle_verdicts(root) == {"C1": "FAIL", "C2": "PASS", "C3": "PASS"}
