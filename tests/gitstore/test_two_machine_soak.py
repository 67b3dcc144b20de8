"""The two-machine soak (issue 23, item 11), a few rounds: both machines' compaction, writers on
both, one user commit with conflict markers. Identical bytes at the end, no marker on any
remote tip, no line lost, no duplicate entry, no Index-detail block twice, and the share of
Index detail flat. tests/benchmarks/bench_soak.py runs longer soaks with the same driver."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import EM
from distilld.engine import finish
from gitmachines import GitCli, Origin, assert_converged, failures
from soak_machines import Soak

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed", [1, 2])
def test_two_machines_compacting_converge_without_markers_or_duplicates(
        tmp_path: Path, origin: Origin, git: GitCli, seed: int) -> None:
    soak = Soak(tmp_path, origin, git, rounds=6, seed=seed)
    figures = soak.run()
    report = "\n".join(figures.lines())

    assert figures.identical, report
    assert figures.lines_lost == 0, report
    assert figures.marked_tips == 0, report
    assert figures.refusals > 0, report  # the passes on the marked machine refused
    assert figures.duplicate_entries == 0, report
    assert figures.duplicate_details == 0, report
    # flat: each hook word written lands in Index detail about once (a cut appends the whole
    # hook), not once per pass; and the share moves by points, not by multiples
    assert figures.detail_bytes <= 1.5 * figures.hook_bytes, report
    assert figures.share_last <= figures.share_first + 0.05, report
    assert figures.problems == [], report
    assert failures(soak.a.root) == [] and failures(soak.b.root) == []


@pytest.mark.exhaustive
@pytest.mark.parametrize("seed", [5])
def test_a_long_soak_never_leaves_the_machines_apart(tmp_path: Path, origin: Origin, git: GitCli, seed: int) -> None:
    """60 rounds: writers on both machines push one tier file or one entry past its cap only
    together, and a merge that blocked on that kept the machines apart for good (this seed lost
    writer lines on the clone left behind). Index detail stays near one byte per hook byte."""
    soak = Soak(tmp_path, origin, git, rounds=60, seed=seed)
    figures = soak.run()
    report = "\n".join(figures.lines())

    assert figures.identical and figures.lines_lost == 0, report
    assert figures.duplicate_entries == 0 and figures.duplicate_details == 0, report
    assert figures.detail_bytes <= 1.8 * figures.hook_bytes, report
    assert figures.problems == [], report


def test_a_split_rolled_back_under_a_writer_never_syncs_a_pointer_to_a_missing_child(
        tmp_path: Path, origin: Origin, git: GitCli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak's "SPINE pointer to missing file: projects/<name>-2.md", on two machines: b's
    compaction splits heron while a's edits of heron come in; a writer on b adds a file between
    b's catalog rebuild and its self-check, so the pass is rolled back keeping the SPINE (with
    the child's pointer) and removing the child. Planned again at once, it splits again; both
    machines end identical, passing C1-C3."""
    soak = Soak(tmp_path, origin, git, rounds=1, seed=3)
    a, b = soak.a, soak.b
    a.append("projects/heron.md", "- a line from a\n")
    assert a.sync().pushed
    b.append("projects/heron.md", "".join(
        f"## Part {n}\n\n" + "".join(f"- heron fact {n}.{k} about the queue and the replay rules.\n"
                                      for k in range(8)) + "\n" for n in range(8)))
    real = finish.crashpoint
    written: list[bool] = []

    def writer_between_catalog_and_check(boundary: str) -> None:
        real(boundary)
        if boundary == "catalog-written" and not written:
            written.append(True)
            b.write("projects/flags.md", "---\ndomain: project\nscope: Flags\nlast_updated: 2026-11-30\n---\n\n"
                                         "# Flags\n\n- Flags default off.\n")
            spine = b.read("SPINE.md").decode()
            b.write("SPINE.md", spine.replace("\n## Feedback", f"\n- [Flags](projects/flags.md) {EM} flags. "
                                                               "Read before adding a flag.\n\n## Feedback", 1))

    monkeypatch.setattr(finish, "crashpoint", writer_between_catalog_and_check)
    report = soak.compact(b)
    monkeypatch.undo()

    assert written and report is not None
    assert any("rolled back" in note for note in report.notes), report.notes
    assert failures(b.root) == []
    for machine in (b, a, b):
        assert machine.sync().ok
    files = assert_converged(origin, a, b)  # C1-C3 pass on both: no pointer to a missing child
    assert "projects/heron-2.md" in files and b"(projects/heron-2.md)" in files["SPINE.md"]
