"""Property tests: for random stores, migration and compaction never lose a line (C4 passes).

Random pre-1.2 stores: tier files of random sections with plain, dated, marked and continued
bullets, code fences, duplicates and CRLF endings; a SPINE of random entries (long, wrapped,
multi-pointer); legacy archives flat and nested. A migration either is refused and changes
nothing, or finishes with C1-C3 passing and C4 passing against its backup; compacting the
result again (after the files grow) keeps C4 against the store before it.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from distilld.actions.compaction import run_compaction
from distilld.actions.migrate import run_migrate
from distilld.engine.passes.migration.apply import MigrationRefused
from distilld.engine.passes.migration.checklist import migration_dirs
from distilld.policy import parse_policy
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EM = "\u2014"
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
# Small caps, so that small random stores exercise cuts, merges and splits.
POLICY = parse_policy("""
[spine]
max_lines = 30
max_bytes = 4000
entry_max_bytes = 300
compact_at_lines = 20
compact_at_bytes = 2500
entry_target_bytes = 150
[tier_file]
max_lines = 25
max_bytes = 1500
compact_at_lines = 20
compact_at_bytes = 1200
""", "test")
EXAMPLES = settings(max_examples=30, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
TIERS = ("craft", "ops", "projects")
WORD = st.sampled_from(["kiln", "loom", "`run_all`", "ECONNRESET", "pinned", "Delta", "v2.1", "retry", "queue", "the", "of", "and", '"disk', 'full"', "ops/x.md", "é", "日本", "[IMPORTANT]", "42"])
TEXT = st.lists(WORD, min_size=1, max_size=12).map(" ".join)


def clock() -> datetime:
    return NOW


@st.composite
def bullet(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["plain", "dated", "marked", "continued", "dated-continued"]))
    text = draw(TEXT)
    if kind == "dated":
        return f"- 2026-0{draw(st.integers(1, 9))}-1{draw(st.integers(0, 9))} observe: {text}"
    if kind == "marked":
        return f"- [NON-NEGOTIABLE] {text}"
    if kind == "continued":
        return f"- {text}\n  confidence: validated (2 confirmations, 0 corrections)"
    if kind == "dated-continued":
        return f"- 2026-03-0{draw(st.integers(1, 9))} correct: {text}\n  Why: {draw(TEXT)}"
    return f"- {text}"


@st.composite
def tier_file(draw: st.DrawFn) -> str:
    sections = []
    for n in range(draw(st.integers(0, 9))):
        heading = draw(st.sampled_from([f"## Part {n}", f"## [DIRECTIVE 2026-07-0{n % 9 + 1}] Part {n}"]))
        bullets = draw(st.lists(bullet(), min_size=1, max_size=5))
        if draw(st.booleans()):
            bullets.append("```\n## inside a fence\n```")
        if draw(st.booleans()) and bullets:
            bullets.append(bullets[0])  # a duplicate
        sections.append(heading + "\n\n" + "\n".join(bullets) + "\n")
    # A scope starting "pinned" would read as "| pinned" in its catalog row: a limit of the format.
    head = "---\nscope: Scope " + draw(TEXT) + "\nlast_updated: 2026-09-01\n---\n\n# Title\n\n"
    text = head + "\n".join(sections)
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


@st.composite
def old_store(draw: st.DrawFn) -> dict[str, str]:
    files: dict[str, str] = {}
    entries: dict[str, list[str]] = {t: [] for t in TIERS}
    for n in range(draw(st.integers(1, 7))):
        tier = draw(st.sampled_from(TIERS))
        path = f"{tier}/f{n}.md"
        files[path] = draw(tier_file())
        hook = " ".join(draw(st.lists(TEXT, min_size=1, max_size=8))) + ". Read when " + draw(TEXT) + "."
        line = f"- [F{n}]({path}) {EM} {hook}"
        if draw(st.booleans()) and entries[tier] and not entries[tier][-1].startswith("  "):
            previous = entries[tier].pop()  # a multi-pointer line
            line = previous.replace(f" {EM} ", f" + [F{n}]({path}) {EM} ", 1)
        entries[tier].append(line)
        if draw(st.booleans()):
            entries[tier].append("  " + draw(TEXT))  # a wrapped continuation
    if draw(st.booleans()):
        files["archive/projects/old.md"] = "# Old\n\n- archived by an old client\n"
    if draw(st.booleans()):
        files["craft/archive/older.md"] = "# Older\n\n- rewritten long ago\n"
    if draw(st.booleans()):
        files["archive/flat.md"] = "# Flat\n\n- legacy\n"
    spine = ["# Distill Knowledge Index", "", "<!-- Managed by aura-distill. Max 80 lines. -->", ""]
    for tier in TIERS:
        if entries[tier]:
            spine += [f"## {tier.capitalize()}", *entries[tier], ""]
    files["SPINE.md"] = "\n".join(spine) + "\n"
    return files


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(text.encode("utf-8"))


def knowledge_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not p.relative_to(root).as_posix().startswith(("data/", "."))}


def failing(found: list) -> list:  # type: ignore[type-arg]
    return [f for f in found if f.severity == "fail"]


@pytest.mark.slow  # many examples: in the full run (CI), not in -m "not slow"
@EXAMPLES
@given(store=old_store())
def test_migration_never_loses_a_line_and_then_compaction_never_does(store: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "store"
        root.mkdir()
        write(root, store)
        before = knowledge_bytes(root)
        try:
            outcome = run_migrate(root, POLICY, clock, "apply")
        except MigrationRefused:
            assert knowledge_bytes(root) == before  # refused: nothing changed
            return
        assert outcome.ok, [f.message for f in outcome.self_check]
        backup = migration_dirs(root)[0].backup
        after = take_snapshot(root)
        assert failing(check_store(after, POLICY.limits)) == []
        assert failing(check_c4(take_snapshot(backup), after)) == []

        # the files grow again; compaction brings them back and still loses nothing
        for path in take_snapshot(root).tier_paths[:2]:
            with open(root / path, "ab") as handle:
                handle.write(b"\n## Later\n\n" + b"".join(b"- later note %d\n" % n for n in range(30)))
        previous = Path(scratch) / "previous"
        shutil.copytree(root, previous)
        report = run_compaction(root, POLICY, clock)
        assert report.outcome is not None
        assert failing(check_c4(take_snapshot(previous), take_snapshot(root))) == []
