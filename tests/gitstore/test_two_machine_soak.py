"""The two-machine soak (issue 23, item 11), a few rounds: both machines' compaction, writers on
both, one user commit with conflict markers. Identical bytes at the end, no marker on any
remote tip, no line lost, no duplicate entry, no Index-detail block twice, and the share of
Index detail flat. tests/benchmarks/bench_soak.py runs longer soaks with the same driver."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitmachines import GitCli, Origin, failures
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
    # flat: each hook word written lands in Index detail about once or twice (a cut appends the
    # whole hook), not once per pass; and the share moves by points, not by multiples
    assert figures.detail_bytes <= 2.5 * figures.hook_bytes, report
    assert figures.share_last <= figures.share_first + 0.1, report
    assert figures.problems == [], report
    assert failures(soak.a.root) == [] and failures(soak.b.root) == []
