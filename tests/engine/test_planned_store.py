"""The planned store is the real store (issue 9, item 2): every self-check of a plan runs on the
whole store as the plan would leave it, the machine-local ``local/`` overlay, ``inbox/`` and
folders distilld does not manage included.

Each pass (compaction, migration, gc, restore, and the daemon's scheduled compaction) runs on a
store with a ``local/SPINE.md`` pointing at ``local/laptop.md``, an inbox item and a ``topics/``
folder: preview and apply both work, the reference checker accepts the result, and the files the
pass does not manage are left byte for byte.
"""

from __future__ import annotations

import contextlib
import re
import io
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, StoreBuilder, healthy_store
from distilld.actions.compaction import run_compaction
from distilld.engine.passes.compaction.plan import plan as plan_compaction_of
from distilld.actions.gc import preview_gc, run_gc_apply
from distilld.actions.migrate import run_migrate
from distilld.actions.passes import locked_pass
from distilld.actions.restore import run_restore
from distilld.cli import main as cli_main
from distilld.engine.passes.compaction.apply import CompactionRefused, apply_compaction
from distilld.engine.lock import default_owner
from distilld.engine.executor import FileWrite, Step
from distilld.log import ActivityLog, StatusFile
from distilld.policy import load_policy
from distilld.runtime.job_runner import run_job
from distilld.runtime.jobs import JobEnv
from distilld.runtime.store_git import StoreGit
from distilld.settings import load_settings
from distilld.store.invariants import check_store
from distilld.store.snapshot import planned_snapshot, take_snapshot
from distilld.store.text import sha256_hex
from maintenance_fixtures import have_bash, migrated_store_over_targets, oracle_passes, unmigrated_store

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
OVERLAY = {
    "local/SPINE.md": f"# Local index\n\n- [Laptop](local/laptop.md) {EM} this machine's paths and keys.\n",
    "local/laptop.md": "# Laptop\n\n- The checkout lives under ~/src.\n",
    "inbox/2026-11-29-note.md": "# A note an agent dropped\n\n- Try the faster parser.\n",
    "topics/reading.md": "# Reading list (not managed by distilld)\n\n- The data-intensive book.\n",
}
pytestmark = pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")


def clock() -> datetime:
    return NOW


def with_overlay(root: Path) -> Path:
    builder = StoreBuilder(root)
    for path, text in OVERLAY.items():
        builder.write(path, text)
    return root


def overlay_kept(root: Path) -> None:
    for path, text in OVERLAY.items():
        assert (root / path).read_text() == text, path


def cli(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(args)
    return code, out.getvalue() + err.getvalue()


def failing(root: Path) -> list[str]:
    return [f.message for f in check_store(take_snapshot(root), POLICY.limits) if f.severity == "fail"]


# -- the overlay itself ----------------------------------------------------------------------------

def test_the_planned_snapshot_lays_the_plan_over_the_store_on_disk(tmp_path: Path) -> None:
    root = with_overlay(healthy_store(tmp_path / "store").root)
    before = take_snapshot(root)
    files = before.file_contents()
    assert "local/laptop.md" not in files  # what planners see: the overlay's files are not in it
    files.pop("ops/deploy.md")  # moved away by the plan
    files["craft/testing-3.md"] = b"# new\n"  # written by the plan
    after = planned_snapshot(before, files)
    assert after.exists("local/laptop.md") and after.exists("inbox/2026-11-29-note.md")
    assert after.exists("topics/reading.md")
    assert not after.exists("ops/deploy.md") and "ops/deploy.md" not in after.tier_paths
    assert after.exists("craft/testing-3.md") and after.contents["craft/testing-3.md"] == b"# new\n"
    assert after.local_spine is not None and after.local_spine.pointer_list == ["local/laptop.md"]
    assert (root / "ops/deploy.md").exists() and not (root / "craft/testing-3.md").exists()  # nothing written
    unchanged = planned_snapshot(before, before.file_contents())
    assert check_store(unchanged, POLICY.limits) == check_store(before, POLICY.limits)


# -- the four passes ----------------------------------------------------------------------------------

def test_compaction_of_a_store_with_a_local_overlay(tmp_path: Path) -> None:
    root = with_overlay(tmp_path / "store")
    migrated_store_over_targets(root)
    shutil.copytree(root, tmp_path / "before")

    preview = run_compaction(root, POLICY, clock, apply=False)
    assert preview.plan is not None and preview.plan.steps
    code, out = cli(["compact", str(root), "--apply"])

    assert code == 0, out
    assert "would fail its self-check" not in out and "self-check passed" in out, out
    oracle_passes(root, tmp_path / "before")
    overlay_kept(root)


def test_migration_of_a_store_with_a_local_overlay(tmp_path: Path) -> None:
    root = tmp_path / "store"
    unmigrated_store(root)
    with_overlay(root)
    shutil.copytree(root, tmp_path / "before")

    preview = run_migrate(root, POLICY, clock, "preview")
    assert preview.plan is not None and not preview.plan.refusal, preview.plan.refusal
    code, out = cli(["migrate", str(root), "--apply"])

    assert code == 0, out
    oracle_passes(root, tmp_path / "before")
    overlay_kept(root)


def stale_project_store(root: Path) -> StoreBuilder:
    builder = healthy_store(root)
    builder.tier("projects/heron.md", "# Heron\n\n- Heron streams clickstream events.\n",
                 domain="project", scope="Heron clickstream", last_updated="2026-05-01")
    spine = builder.read("SPINE.md").decode()
    builder.write("SPINE.md", spine.replace("## Feedback\n",
                                            f"- [Heron](projects/heron.md) {EM} clickstream. Read for heron.\n\n"
                                            "## Feedback\n").replace("\n\n- [Heron]", "\n- [Heron]"))
    builder.rebuild_catalog()
    with_overlay(root)
    return builder


def test_gc_of_a_store_with_a_local_overlay(tmp_path: Path) -> None:
    root = stale_project_store(tmp_path / "store").root
    assert failing(root) == []
    shutil.copytree(root, tmp_path / "before")

    preview = preview_gc(root, POLICY, FIXED_NOW)
    assert [m.source for m in preview.plan.moves] == ["projects/heron.md"] if preview.plan else False
    report = run_gc_apply(root, POLICY, lambda: FIXED_NOW)

    assert report.ok and report.outcome is not None and report.outcome.moved == ["projects/heron.md"]
    assert failing(root) == []
    oracle_passes(root, tmp_path / "before")
    overlay_kept(root)


def test_restore_in_a_store_with_a_local_overlay(tmp_path: Path) -> None:
    root = with_overlay(healthy_store(tmp_path / "store").root)

    outcome = run_restore(root, "projects/marlin.md", POLICY, lambda: FIXED_NOW)

    assert outcome.ok, outcome.self_check
    assert outcome.restored == ["projects/marlin.md"] and (root / "projects/marlin.md").exists()
    assert failing(root) == []
    overlay_kept(root)


def test_the_daemons_scheduled_compaction_of_a_store_with_a_local_overlay(tmp_path: Path) -> None:
    root = with_overlay(tmp_path / "store")
    migrated_store_over_targets(root)
    shutil.copytree(root, tmp_path / "before")
    settings = load_settings(overrides={"store": str(root)})
    env = JobEnv(settings=settings, policy=POLICY, store=root, owner=default_owner(),
                 status=StatusFile(tmp_path / "status.json", {}), activity=ActivityLog(tmp_path / "activity.log"),
                 stop=threading.Event(), lock_changed=threading.Event(),
                 git=StoreGit(root, settings, POLICY, clock), clock=clock)

    result = run_job(env, "compaction", "schedule")

    assert result.ok, result.summary
    assert env.status.get("passes")["compaction"]["ok"] is True
    assert "SPINE.md" in result.summary or "split" in result.summary, result.summary
    oracle_passes(root, tmp_path / "before")
    overlay_kept(root)


# -- the whole planned store is checked before the first write (item 8) ----------------------------

@pytest.mark.parametrize("spoil", ["entry-over-its-cap", "tier-file-without-pointer"])
def test_a_plan_that_would_fail_c1_to_c3_is_refused_before_the_first_write(tmp_path: Path, spoil: str) -> None:
    """A plan is checked on the store it would leave (C1-C4 against the store before): one that
    would add a failure is refused with the failure named, and nothing is written, no journal."""
    root = with_overlay(tmp_path / "store")
    migrated_store_over_targets(root)
    shutil.copytree(root, tmp_path / "before")
    with locked_pass(root, POLICY, clock) as ctx:
        before = take_snapshot(ctx.root)
        plan = plan_compaction_of(before, ctx)
        if spoil == "entry-over-its-cap":  # the last SPINE write gets an entry of 500 bytes
            write = plan.steps[-1].ops[-1]
            assert isinstance(write, FileWrite) and write.path == "SPINE.md"
            write.data += f"- [Long](craft/testing.md) {EM} {'word ' * 100}\n".encode()
            plan.files["SPINE.md"] = write.data
            expected = "[C1]"
        else:  # a new tier file no SPINE line points at
            data = b"---\ndomain: craft\nscope: Stray\nlast_updated: 2026-11-30\n---\n\n# Stray\n\n- a line.\n"
            plan.steps.append(Step("write a stray file", [FileWrite("craft/stray.md", None, data)]))
            plan.files["craft/stray.md"] = data
            expected = "[C2] active file has no SPINE pointer: craft/stray.md"
        with pytest.raises(CompactionRefused, match=r"would fail its self-check: .*" + re.escape(expected)):
            apply_compaction(ctx, plan, before)

    assert not (root / "data/compact-journals").exists()
    assert {p.relative_to(root).as_posix(): sha256_hex(p.read_bytes()) for p in root.rglob("*") if p.is_file()
            and not p.name.startswith((".lock", ".status"))} == {
        p.relative_to(tmp_path / "before").as_posix(): sha256_hex(p.read_bytes())
        for p in (tmp_path / "before").rglob("*") if p.is_file()}
