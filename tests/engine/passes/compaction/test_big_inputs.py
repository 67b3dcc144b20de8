"""Compaction on big inputs (issue 23 items 4 and 11, issue 27 items 2 and 4): a split whose
pointers cannot fit in the SPINE, and a SPINE that no compaction can bring within its caps, are
refused at once with the figures, before any packing or SPINE planning; planning grows linearly
with a tier file's size; a file that declares ``oversize:`` is still split at the line cap; a
stop asked for while planning ends the planning at its next boundary.

Work is counted, never timed: calls of the packer and the SPINE compactor, and the function
calls a profile counts (deterministic for the same input).
"""

from __future__ import annotations

import cProfile
import pstats
from dataclasses import replace
from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, StoreBuilder, healthy_store
from distilld.actions.compaction import run_compaction
from distilld.engine.context import PreviewInputs
from distilld.engine.passes.compaction.plan import plan as plan_compaction_of
from distilld.engine.cancel import PassStopped, stoppable
from distilld.engine.passes.compaction import continuation
from distilld.engine.passes.compaction import plan as plan_module
from distilld.engine.passes.compaction.spine import SpineCompactor
from distilld.policy import load_policy
from distilld.store.limits import Limits
from distilld.store.hook_clauses import distinctive_phrases
from distilld.store.snapshot import take_snapshot
from distilld.store.tierfile import KnowledgeFile

pytestmark = pytest.mark.slow  # big stores: each test takes seconds
POLICY = load_policy()
LIMITS = POLICY.limits


def bullets(count: int, name: str = "Rule") -> str:
    return "".join(f"- {name} {n}: the ingest job retries a failed batch three times, then parks it.\n"
                   for n in range(count))


def store_with_big_file(root: Path, lines: int, oversize: str | None = None, name: str = "Rule") -> StoreBuilder:
    """The healthy store plus craft/huge.md: one section of ``lines`` bullets, with its entry.
    Stores planned in one test take their own ``name``: the word caches must not carry over."""
    b = healthy_store(root)
    extra = {"oversize": oversize} if oversize else {}
    b.tier("craft/huge.md", "# Huge\n\n## Principles\n\n" + bullets(lines, name), domain="craft", scope="Ingest rules",
           last_updated="2026-10-01", **extra)
    b.write("SPINE.md", b.read("SPINE.md").decode() + f"- [Ingest rules](craft/huge.md) {EM} retries. Read when.\n")
    return b.rebuild_catalog()


def small_spine_limits(max_bytes: int) -> Limits:
    spine = replace(LIMITS.spine, max_bytes=max_bytes, compact_at_bytes=min(LIMITS.spine.compact_at_bytes, max_bytes))
    return replace(LIMITS, spine=spine)


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    calls = [0]
    original = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_a_file_whose_pieces_cannot_fit_in_the_spine_is_refused_before_any_split(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "store"
    store_with_big_file(root, 3000)  # about 240 KB: 40 pieces at the caps, about 1 KB of pointers
    spine_bytes = len((root / "SPINE.md").read_bytes())
    limits = small_spine_limits(spine_bytes + 400)  # room for about 16 pointers
    packed = count_calls(monkeypatch, plan_module, "split_knowledge_file")
    plan = plan_module.plan_compaction(take_snapshot(root).file_contents(), limits, "2026-11-30")
    assert packed[0] == 0  # refused from its figures alone: nothing was packed
    [why] = [u for u in plan.unsplittable if u.startswith("craft/huge.md:")]
    file = KnowledgeFile("craft/huge.md", (root / "craft/huge.md").read_bytes())
    pieces = -(-file.line_count // LIMITS.tier_file.max_lines)
    assert f"{file.line_count} lines, {file.size} bytes would need at least {pieces} split pieces" in why
    assert "new SPINE pointers take at least" in why and "it was not split" in why
    assert not any("craft/huge.md" in step.title for step in plan.steps)


def test_a_20_mb_file_is_refused_with_the_figures_and_the_store_is_left_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "store"
    store_with_big_file(root, 250_000)  # 20 MB in one section
    before = (root / "craft/huge.md").read_bytes()
    assert len(before) > 19_000_000
    packed = count_calls(monkeypatch, plan_module, "split_knowledge_file")
    report = run_compaction(root, POLICY, lambda: FIXED_NOW, apply=True)
    assert (root / "craft/huge.md").read_bytes() == before
    assert not list((root / "craft").glob("huge-*.md"))
    assert packed[0] == 0
    [failure] = [f for f in report.over_caps if f.path == "craft/huge.md"]
    assert any("would need at least" in why and "split pieces" in why for why in failure.why)


def work_of(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """What planning this store's compaction does: the function calls a profile counts, and the
    names the split family's summaries read (each read of a file's names counts all of them:
    the word caches make a second read a cheap call, not cheap work)."""
    names = [0]

    def counted(text: str) -> list[str]:
        found = distinctive_phrases(text)
        names[0] += len(found)
        return found

    monkeypatch.setattr(continuation, "distinctive_phrases", counted)
    snapshot = take_snapshot(root)
    profile = cProfile.Profile()
    profile.runcall(plan_compaction_of, snapshot, PreviewInputs(POLICY.limits, lambda: FIXED_NOW))
    monkeypatch.undo()
    return int(pstats.Stats(profile).total_calls), names[0]  # type: ignore[attr-defined]


def test_planning_the_split_of_a_big_file_grows_linearly_with_its_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large, base = tmp_path / "small", tmp_path / "large", tmp_path / "base"
    healthy_store(base)
    work_of(base, monkeypatch)  # a warm-up: the word caches hold the healthy store's words, as below
    fixed = work_of(base, monkeypatch)  # what planning costs without the big file
    store_with_big_file(small, 1000, name="Alpha")  # about 80 KB: 27 pieces
    store_with_big_file(large, 4000, name="Beta")  # four times as big: 4x the pieces
    grown = [(big - base) / (little - base)
             for big, little, base in zip(work_of(large, monkeypatch), work_of(small, monkeypatch), fixed)]
    calls, names = grown
    assert calls < 4 * 1.5, calls
    assert names < 4 * 1.5, names  # every child summed up over every file of its family was 16x


def test_an_oversize_file_is_split_at_the_line_cap(tmp_path: Path) -> None:
    root = tmp_path / "store"
    b = store_with_big_file(root, 107, oversize="one long table of rules")
    original = b.read("craft/huge.md").decode()
    report = run_compaction(root, POLICY, lambda: FIXED_NOW, apply=True)
    assert report.pass_ok, report.outcome
    family = [root / "craft/huge.md", *sorted((root / "craft").glob("huge-*.md"))]
    assert len(family) >= 2
    text = ""
    for path in family:
        file = KnowledgeFile(path.relative_to(root).as_posix(), path.read_bytes())
        assert file.line_count <= LIMITS.tier_file.max_lines, (path, file.line_count)
        assert file.oversize_reason == "one long table of rules"  # the family keeps its exemption
        text += path.read_text()
    for line in original.splitlines():
        if line.startswith("- Rule "):
            assert text.count(line + "\n") == 1, line  # every rule kept, once
    spine = (root / "SPINE.md").read_text()
    assert all(f"({p.relative_to(root).as_posix()})" in spine for p in family)


def bloated_spine(root: Path, entries: int) -> StoreBuilder:
    """The healthy store with ``entries`` more entries, each its own small file."""
    b = healthy_store(root)
    extra = []
    for n in range(entries):
        b.tier(f"projects/p{n}.md", f"# P{n}\n\n- Note {n}.\n", domain="project", scope=f"P{n}",
               last_updated="2026-10-01")
        extra.append(f"- [Project number {n}](projects/p{n}.md) {EM} project {n}: its notes. Read when asked.")
    b.write("SPINE.md", b.read("SPINE.md").decode() + "\n## More projects\n" + "\n".join(extra) + "\n")
    return b.rebuild_catalog()


def test_a_spine_no_compaction_can_fit_is_refused_at_once_with_the_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "store"
    bloated_spine(root, 1500)  # about 120 KB; its pointers alone take about 50 KB
    before = (root / "SPINE.md").read_bytes()
    compacted = count_calls(monkeypatch, SpineCompactor, "run")
    report = run_compaction(root, POLICY, lambda: FIXED_NOW, apply=True)
    assert compacted[0] == 0  # refused from its figures: no SPINE planning at all
    assert (root / "SPINE.md").read_bytes() == before
    assert report.plan is not None and not report.plan.steps
    [why] = report.plan.breaches
    assert why.startswith(f"no compaction can bring SPINE.md ({len(before.splitlines())} lines, {len(before)} bytes)")
    entries = sum(1 for line in before.decode().splitlines() if line.startswith("- ["))
    assert f"its {entries} entries' pointers alone take" in why and "nothing was planned" in why
    [spine_failure] = [f for f in report.over_caps if f.path == "SPINE.md"]
    assert why in spine_failure.why
    assert "nothing more can be done mechanically" in report.notes


def test_a_spine_that_can_fit_is_still_planned(tmp_path: Path) -> None:
    root = tmp_path / "store"
    bloated_spine(root, 120)  # over its caps, but merges bring it within them
    plan = plan_compaction_of(take_snapshot(root), PreviewInputs(POLICY.limits, lambda: FIXED_NOW))
    assert plan.steps and not plan.breaches
    assert plan.spine_after[0] <= LIMITS.spine.max_lines and plan.spine_after[1] <= LIMITS.spine.max_bytes


def test_a_stop_asked_for_ends_the_planning_at_its_next_boundary(tmp_path: Path) -> None:
    root = tmp_path / "store"
    bloated_spine(root, 120)
    snapshot = take_snapshot(root)
    asked = [0]

    def stop_after_a_few_looks() -> bool:
        asked[0] += 1
        return asked[0] > 3

    with stoppable(stop_after_a_few_looks), pytest.raises(PassStopped):
        plan_compaction_of(snapshot, PreviewInputs(POLICY.limits, lambda: FIXED_NOW))
    assert asked[0] == 4  # it stopped at the first boundary after the stop


def test_the_same_file_is_split_where_the_spine_has_room(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store_with_big_file(root, 3000)
    plan = plan_compaction_of(take_snapshot(root), PreviewInputs(POLICY.limits, lambda: FIXED_NOW))
    [split] = [s for s in plan.splits if s.path == "craft/huge.md"]
    assert len(split.children) >= 50  # 3,000 lines need 51 pieces at the least


def test_a_bloated_hook_is_shortened_from_a_window_whatever_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    from distilld.store import hooks

    def bloated(clauses: int) -> str:
        body = "; ".join(f"Kestrel{n} ingest detail {n}" for n in range(clauses))
        return f"{body}; [NON-NEGOTIABLE] never drop a batch. Read when working on Kestrel ingest."

    read = [0]
    original = hooks.split_clauses

    def counted(text: str) -> list[object]:
        found = original(text)
        read[0] += len(found)
        return found

    monkeypatch.setattr(hooks, "split_clauses", counted)
    work = []
    for clauses in (20_000, 40_000):  # about 0.6 MB and 1.2 MB
        read[0] = 0
        short = hooks.short_hook(bloated(clauses), 200)
        work.append(read[0])
        assert len(short.encode()) <= 200
        assert short.endswith("Read when working on Kestrel ingest.")
        assert "[NON-NEGOTIABLE]" in short  # a marker past the window is kept
    assert work[1] <= work[0] * 1.1, work  # the clauses read do not grow with the hook
