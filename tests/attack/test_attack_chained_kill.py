"""A chained compaction (plan.py SETTLE_PLANS: three plans whose steps run in order) killed with a real
SIGKILL at each seam between its plans, then recovered by the next `distilld compact --apply`: the
store ends byte for byte as the uninterrupted run leaves it, passes `distilld check`, holds no lock,
temp file or unfinished journal, and the pass is one commit with the work tree clean."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
from builders import tier_lines
from waiting import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from storegen import generate_store  # noqa: E402

from distilld.actions.sync import run_init  # noqa: E402
from distilld.engine.context import PreviewInputs  # noqa: E402
from distilld.engine.passes.compaction import plan as compaction_plan  # noqa: E402
from distilld.engine.recovery import interrupted_passes  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.fs import TEMP_RE  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402

pytestmark = pytest.mark.slow
POLICY = load_policy()
STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
SEED = 2  # storegen seed 2 at scale 1 plans three chained plans: 152, 15 and 4 steps


def shared_files(root: Path) -> dict[str, bytes]:
    """The store's files as git would commit them, the catalog's rebuild stamp blanked."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not relative.startswith((".git/", "data/")) and relative not in (".lock", ".status"):
            data = path.read_bytes()
            found[relative] = STAMP.sub(b"<stamp>", data) if relative == "CATALOG.md" else data
    return found


def compact(root: Path, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DISTILLD_CRASH_AT"}
    if crash_at:
        env["DISTILLD_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "distilld", "compact", "--apply", str(root)], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chained") / "store"
    generate_store(root, 1, "migrated", seed=SEED)
    run_init(root, POLICY, lambda: datetime.now(UTC))
    return root


@pytest.fixture(scope="module")
def seams(pristine: Path) -> list[int]:
    """The number of steps done at the end of each chained plan (as the preview plans it)."""
    found: list[int] = []
    chained = compaction_plan._chained

    def counting(first: compaction_plan.CompactionPlan, then: compaction_plan.CompactionPlan,
                 read: set[str]) -> compaction_plan.CompactionPlan:
        found.append(len(first.steps))
        return chained(first, then, read)

    compaction_plan._chained = counting  # type: ignore[assignment]
    try:
        made = compaction_plan.plan(take_snapshot(pristine), PreviewInputs(POLICY.limits, lambda: datetime.now(UTC)))
    finally:
        compaction_plan._chained = chained  # type: ignore[assignment]
    return [*found, len(made.steps)]


@pytest.fixture(scope="module")
def uninterrupted(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("reference") / "store"
    shutil.copytree(pristine, root, symlinks=True)
    done = compact(root)
    assert done.returncode in (0, 1), done.stderr  # 1: debt the pass reports (SPINE over its target)
    return shared_files(root)


def test_the_store_plans_three_chained_plans(seams: list[int]) -> None:
    assert len(seams) == 3 and seams[0] < seams[1] < seams[2], seams


# (a seam given as "plan:offset": the steps done at the end of that plan, plus offset; "end" after all)
KILLS = [("end-of-plan-1", 0, 0), ("first-of-plan-2", 0, 1), ("end-of-plan-2", 1, 0),
         ("before-the-last-SPINE-write", 2, -1)]


@pytest.mark.parametrize(("name", "plan", "offset"), KILLS, ids=[k[0] for k in KILLS])
def test_a_kill_at_a_seam_of_the_chain_is_recovered_exactly(name: str, plan: int, offset: int, pristine: Path,
                                                            seams: list[int], uninterrupted: dict[str, bytes],
                                                            tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(pristine, root, symlinks=True)
    head = pygit2.Repository(str(root)).head.target
    killed = compact(root, f"step-marked:{seams[plan] + offset}")
    assert killed.returncode == -9, killed.stderr
    assert interrupted_passes(root)

    resumed = compact(root)
    assert resumed.returncode in (0, 1), resumed.stdout + resumed.stderr
    assert "finished an interrupted compaction" in resumed.stdout
    assert shared_files(root) == uninterrupted
    assert subprocess.run([sys.executable, "-m", "distilld", "check", str(root)],
                          capture_output=True).returncode == 0
    assert interrupted_passes(root) == []
    assert not (root / ".lock").exists()
    assert [p.name for p in root.rglob("*") if TEMP_RE.match(p.name)] == []
    repo = pygit2.Repository(str(root))
    assert repo.head.target != head  # the recovered pass was committed
    dirty = {path: flags for path, flags in repo.status().items() if not path.startswith(("data/", ".status"))}
    assert dirty == {}


AGENT_LINE = "- A line an agent wrote while the compaction ran."


def test_a_chained_compaction_rolled_back_and_killed_mid_rollback_is_recovered(
        pristine: Path, seams: list[int], tmp_path: Path) -> None:
    """A writer edits a file the second plan has still to write; the pass stops there and rolls
    back, and is SIGKILLed mid-rollback. The undo found the SPINE (written once, to be written
    twice more) in neither state its last write knows, kept it as foreign, and refused to undo
    anything: the rollback never reached its first file (the kill never came)."""
    root = tmp_path / "store"
    shutil.copytree(pristine, root, symlinks=True)
    plan = compaction_plan.plan(take_snapshot(root), PreviewInputs(POLICY.limits, lambda: datetime.now(UTC)))
    first = {op.path for step in plan.steps[:seams[0]] for op in step.ops}
    target = next(op.path for step in plan.steps[seams[0] + 2:seams[1]] for op in step.ops
                  if op.path not in first and op.path != "SPINE.md")
    lines = tier_lines(root) + Counter([AGENT_LINE])
    flag = tmp_path / "paused"
    env = {**os.environ, "DISTILLD_PAUSE_AT": f"step-marked:{seams[0] + 1}", "DISTILLD_PAUSE_FILE": str(flag),
           "DISTILLD_CRASH_AT": "file-restored:60"}
    child = subprocess.Popen([sys.executable, "-m", "distilld", "compact", "--apply", str(root)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: flag.exists() or child.poll() is not None, 300, "the pass to pause in its second plan")
        with (root / target).open("a", encoding="utf-8") as handle:
            handle.write(AGENT_LINE + "\n")
        flag.unlink()
        _, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert child.returncode == -9, err  # killed at its 60th restored file
    resumed = compact(root)
    assert resumed.returncode in (0, 1), resumed.stdout + resumed.stderr
    assert "an interrupted compaction was rolled back" in resumed.stdout
    assert "not undone" not in resumed.stdout
    assert not lines - tier_lines(root)
    assert (root / target).read_text(encoding="utf-8").count(AGENT_LINE) == 1
    assert subprocess.run([sys.executable, "-m", "distilld", "check", str(root)],
                          capture_output=True).returncode == 0
    assert interrupted_passes(root) == []
