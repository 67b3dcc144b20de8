"""Every refusal and safety check of the lifecycle and the ledger, each with a test that fails
when the check is removed (the mutants listed in the data-safety issue, and those mutmut found).

Stores are built in tmp_path from ``busy_store`` (Rowan's store plus the stale Heron).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, StoreBuilder, healthy_store
from distilld.actions import gc as gc_action
from distilld.actions.gc import render_text, run_gc_apply, run_gc_revert
from distilld.actions.passes import locked_pass
from distilld.actions.restore import run_restore
from distilld.engine.passes.gc import apply as gc_engine
from distilld.engine.passes.gc.apply import GcRefused, RecoveryStopped
from distilld.engine.passes.gc.manifest import Manifest, ManifestError, ManifestMove, load_manifest
from distilld.engine.passes.gc.model import GcPlan
from distilld.errors import LockLost
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.ledger import merge_ledgers
from distilld.store.snapshot import take_snapshot
from distilld.store.text import sha256_hex, sha256_norm_hex
from hostile import HERON_ENTRY, HERON_RAW, busy_store

POLICY = load_policy()
MANIFESTS = "data/gc-manifests"


def now() -> object:
    return FIXED_NOW


def ledger_lines(root: Path) -> list[str]:
    return [line for line in (root / "archive/LEDGER.md").read_text("utf-8", "surrogateescape").split("\n")
            if line.startswith("- ")]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    busy_store(root)
    return root


# -- gc apply ------------------------------------------------------------------------------------

def test_a_move_that_changes_the_bytes_is_stopped_by_the_checksum(store: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    real = gc_engine.fs.move_exact

    def corrupting(source: Path, target: Path) -> None:
        real(source, target)
        target.write_bytes(target.read_bytes() + b"a byte the move added\n")

    monkeypatch.setattr(gc_engine.fs, "move_exact", corrupting)
    with pytest.raises(RecoveryStopped, match="checksum after the move differs"):
        run_gc_apply(store, POLICY, now)
    assert HERON_ENTRY in (store / "SPINE.md").read_text()  # stopped before the SPINE edit


def meanwhile(monkeypatch: pytest.MonkeyPatch, happen: Callable[[], object]) -> None:
    """``happen`` runs after the plan is made, just before the manifest: a change meanwhile."""
    real = gc_engine.new_manifest

    def late(*args: Any, **kwargs: Any) -> gc_engine.Manifest:
        happen()
        return real(*args, **kwargs)

    monkeypatch.setattr(gc_engine, "new_manifest", late)


def test_a_source_changed_since_the_plan_is_not_moved(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    meanwhile(monkeypatch, lambda: (store / "projects/heron.md").write_bytes(b"# Heron, edited by an agent\n"))
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_apply(store, POLICY, now)
    assert str(stopped.value) == "projects/heron.md changed since the plan was made; stopped (run gc again)"
    assert (store / "projects/heron.md").exists() and not (store / "archive/projects/heron.md").exists()


def test_a_target_that_appeared_since_the_plan_is_never_overwritten(store: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    meanwhile(monkeypatch, lambda: (store / "archive/projects/heron.md").write_bytes(b"an old client's copy\n"))
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_apply(store, POLICY, now)
    assert str(stopped.value) == "archive/projects/heron.md already exists; stopped before moving projects/heron.md"
    assert (store / "archive/projects/heron.md").read_bytes() == b"an old client's copy\n"


def test_a_gc_whose_lock_is_taken_over_stops_before_its_next_write(store: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # STORE-FORMAT: gc heartbeats after every file it writes or moves, so a pass whose lock was
    # taken over (it looked stale) stops there, not a second later after more writes.
    from distilld.engine import executor as executor_module

    spine, epoch = (store / "SPINE.md").read_bytes(), int(time.time())

    def taken_over_after_the_move(boundary: str) -> None:
        if boundary == "file-moved":
            (store / ".lock").write_text(f"other {epoch} {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(epoch))}\n")

    monkeypatch.setattr(executor_module, "crashpoint", taken_over_after_the_move)
    with pytest.raises(LockLost, match="held by other"):
        run_gc_apply(store, POLICY, now)
    assert (store / "archive/projects/heron.md").read_bytes() == HERON_RAW
    assert (store / "SPINE.md").read_bytes() == spine  # the SPINE edit was not made after the loss
    assert json.loads(next((store / MANIFESTS).glob("*.json")).read_text())["moves"][0]["done"] is False


def planned_as(monkeypatch: pytest.MonkeyPatch, change: Callable[[GcPlan], None]) -> None:
    """gc's plan, changed by ``change`` before it is carried out: a plan the planner never makes,
    for the checks behind it."""
    real = gc_action.gc_planner

    def changed(*args: Any) -> GcPlan:
        plan = real(*args)
        change(plan)
        return plan

    monkeypatch.setattr(gc_action, "gc_planner", changed)


def test_a_plan_that_would_break_the_store_is_refused_before_the_first_write(store: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The check of the planned store is the last line of defence behind the planner: a plan
    # that moves a split parent without its part (the planner never would) is refused whole.
    b = StoreBuilder(store)
    b.write("projects/heron.md", HERON_RAW + b"\nContinued in `projects/heron-2.md`.\n")
    b.tier("projects/heron-2.md", "# Heron, continued\n\n- Late events go to the batch path.\n", domain="project",
           scope="Heron clickstream (continued)", last_updated="2026-05-01", split_from="projects/heron.md")
    family = b"[Heron](projects/heron.md) + [Heron, continued](projects/heron-2.md)"
    b.write("SPINE.md", b.read("SPINE.md").replace(b"[Heron](projects/heron.md)", family))
    b.rebuild_catalog()

    def without_the_part(plan: GcPlan) -> None:
        assert [m.source for m in plan.moves] == ["projects/heron.md", "projects/heron-2.md"]
        plan.moves = plan.moves[:1]

    planned_as(monkeypatch, without_the_part)
    before = {p: p.read_bytes() for p in sorted(store.rglob("*.md"))}
    with pytest.raises(GcRefused) as refused:
        run_gc_apply(store, POLICY, now)
    assert str(refused.value) == (
        "the archived store would fail its self-check: [C3] projects/heron-2.md split_from target missing: "
        "projects/heron.md. Nothing was changed; reword or merge that entry by hand, or report the case")
    assert {p: p.read_bytes() for p in sorted(store.rglob("*.md"))} == before
    assert not (store / MANIFESTS).exists()


def test_a_planned_move_failing_containment_is_refused_before_anything_is_written(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def elsewhere(plan: GcPlan) -> None:
        plan.moves = [dataclasses.replace(plan.moves[0], target="archive/projects/elsewhere.md")]

    planned_as(monkeypatch, elsewhere)
    before = {p: p.read_bytes() for p in sorted(store.rglob("*.md"))}
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_apply(store, POLICY, now)
    assert str(stopped.value) == (
        f"{store.resolve() / MANIFESTS}: move projects/heron.md -> archive/projects/elsewhere.md fails path "
        "containment (a tier path and archive/ + that path); stopped, nothing more was changed")
    assert {p: p.read_bytes() for p in sorted(store.rglob("*.md"))} == before
    assert not (store / MANIFESTS).exists()


# -- gc recovery -------------------------------------------------------------------------------------

def half_done_manifest(store: Path, ledger_sha: str) -> None:
    """As a kill after the move leaves it: heron archived, its manifest move not done, and a
    ledger archive line for it whose sha256 is ``ledger_sha``."""
    raw = (store / "projects/heron.md").read_bytes()
    (store / "archive/projects").mkdir(parents=True, exist_ok=True)
    shutil.move(store / "projects/heron.md", store / "archive/projects/heron.md")
    with open(store / "archive/LEDGER.md", "a") as ledger:
        ledger.write(f"- 2026-11-30T12:00:00Z archive | from: projects/heron.md | to: archive/projects/heron.md"
                     f" | sha256: {ledger_sha} | sha256-norm: {sha256_norm_hex(raw)} | reason: stale"
                     f" | spine-entry: {HERON_ENTRY}\n")
    move = {"from": "projects/heron.md", "to": "archive/projects/heron.md", "sha256": sha256_hex(raw),
            "sha256_norm": sha256_norm_hex(raw), "spine_entry": HERON_ENTRY, "reason": "stale", "done": False}
    (store / MANIFESTS).mkdir(parents=True, exist_ok=True)
    (store / MANIFESTS / "20261130T120000Z.json").write_text(json.dumps(
        {"ts": "2026-11-30T12:00:00Z", "moves": [move], "finished": False}))


@pytest.mark.parametrize(("given", "recorded"), [
    ({"reason": "no activity for 213 days (threshold 90)", "done": False}, "no activity for 213 days (threshold 90)"),
    ({}, "no activity past the staleness threshold"),  # a client that writes no reason, and no flag until done
])
def test_a_move_killed_before_its_ledger_line_is_recorded_with_the_manifests_reason(
        store: Path, given: dict[str, str], recorded: str) -> None:
    raw = (store / "projects/heron.md").read_bytes()
    move = {"from": "projects/heron.md", "to": "archive/projects/heron.md", "sha256": sha256_hex(raw),
            "sha256_norm": sha256_norm_hex(raw), "spine_entry": HERON_ENTRY, **given}
    (store / MANIFESTS).mkdir(parents=True)
    (store / MANIFESTS / "20261130T120000Z.json").write_text(json.dumps(
        {"ts": "2026-11-30T12:00:00Z", "moves": [move], "finished": False}))
    report = run_gc_apply(store, POLICY, now)
    assert report.recovery is not None and report.recovery.recovered == ["projects/heron.md"]
    line = ledger_lines(store)[-1]
    assert " archive | from: projects/heron.md | " in line and f" | reason: {recorded} | " in line


def test_recovery_finishes_a_move_whose_ledger_line_matches(store: Path) -> None:
    half_done_manifest(store, sha256_hex((store / "projects/heron.md").read_bytes()))
    report = run_gc_apply(store, POLICY, now)
    assert report.recovery is not None and report.recovery.recovered == ["projects/heron.md"]
    assert HERON_ENTRY not in (store / "SPINE.md").read_text()
    # the user is told which manifest was finished, and what it did
    manifest = store.resolve() / MANIFESTS / "20261130T120000Z.json"
    assert f"recovery: manifest {manifest}\n    recovered projects/heron.md\n" in render_text(report)


def test_recovery_refuses_a_ledger_line_whose_sha_differs_from_the_manifest(store: Path) -> None:
    half_done_manifest(store, "f" * 64)
    spine = (store / "SPINE.md").read_bytes()
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_apply(store, POLICY, now)
    assert str(stopped.value) == "archive/projects/heron.md is archived but the ledger has no line for it; stopped"
    assert (store / "SPINE.md").read_bytes() == spine


def test_recovery_stops_on_a_state_it_cannot_explain(store: Path) -> None:
    half_done_manifest(store, sha256_hex((store / "projects/heron.md").read_bytes()))
    raw, stub = (store / "archive/projects/heron.md").read_bytes(), b"# a stub an old client re-created\n"
    (store / "projects/heron.md").write_bytes(stub)
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_apply(store, POLICY, now)
    assert str(stopped.value) == (
        f"{store / MANIFESTS / '20261130T120000Z.json'}: cannot recover projects/heron.md: source sha "
        f"{sha256_hex(stub)}, archived sha {sha256_hex(raw)}, manifest sha "
        f"{sha256_hex(raw)}. Nothing more was changed; compare the files with the ledger (an older client may "
        "have re-created a stub).")


def recovery_stopped(store: Path) -> str:
    """The message of the recovery that gc runs first, which must stop."""
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_apply(store, POLICY, now)
    return str(stopped.value)


def cannot_recover(store: Path, source: str, archived: str, planned: str) -> str:
    return (f"{store / MANIFESTS / '20261130T120000Z.json'}: cannot recover projects/heron.md: source sha "
            f"{source}, archived sha {archived}, manifest sha {planned}. ")


def test_recovery_stops_on_an_archived_copy_edited_after_a_kill(store: Path) -> None:
    raw = (store / "projects/heron.md").read_bytes()
    half_done_manifest(store, sha256_hex(raw))
    edited = raw + b"- a line added to the archived copy after the kill\n"
    (store / "archive/projects/heron.md").write_bytes(edited)
    spine, ledger = (store / "SPINE.md").read_bytes(), (store / "archive/LEDGER.md").read_bytes()
    assert recovery_stopped(store).startswith(cannot_recover(store, "absent", sha256_hex(edited), sha256_hex(raw)))
    assert (store / "archive/projects/heron.md").read_bytes() == edited
    assert (store / "SPINE.md").read_bytes() == spine and (store / "archive/LEDGER.md").read_bytes() == ledger


def test_recovery_stops_on_a_file_edited_after_a_kill_before_its_ledger_line(store: Path) -> None:
    raw = (store / "projects/heron.md").read_bytes()
    move = {"from": "projects/heron.md", "to": "archive/projects/heron.md", "sha256": sha256_hex(raw),
            "sha256_norm": sha256_norm_hex(raw), "spine_entry": HERON_ENTRY, "done": False}
    (store / MANIFESTS).mkdir(parents=True)
    (store / MANIFESTS / "20261130T120000Z.json").write_text(json.dumps(
        {"ts": "2026-11-30T12:00:00Z", "moves": [move], "finished": False}))
    edited = raw + b"- an edit made after the kill\n"
    (store / "projects/heron.md").write_bytes(edited)
    assert recovery_stopped(store).startswith(cannot_recover(store, sha256_hex(edited), "absent", sha256_hex(raw)))
    assert (store / "projects/heron.md").read_bytes() == edited


def test_a_breach_from_before_is_reported_not_failed_by_recovery_revert_and_apply(store: Path) -> None:
    deploy = store / "ops/deploy.md"
    deploy.write_bytes(deploy.read_bytes() + b"".join(b"- deploy note %d.\n" % n for n in range(120)))
    StoreBuilder(store).rebuild_catalog()
    half_done_manifest(store, sha256_hex((store / "projects/heron.md").read_bytes()))

    def breaches(outcome: gc_engine.GcOutcome | None) -> list[str | None]:
        assert outcome is not None and outcome.self_check == []
        return sorted({f.path for f in outcome.still_over_budget})

    assert breaches(run_gc_apply(store, POLICY, now).recovery) == ["ops/deploy.md"]
    assert breaches(run_gc_revert(store, POLICY, now, None).outcome) == ["ops/deploy.md"]
    report = run_gc_apply(store, POLICY, now)
    assert report.outcome is not None and report.outcome.moved == ["projects/heron.md"]
    assert breaches(report.outcome) == ["ops/deploy.md"]


def test_a_move_that_never_completed_is_recorded_once_even_when_killed_before_its_flag(store: Path) -> None:
    # A kill after the archive line, before the move; then someone edited the file: the move
    # can no longer be made, so recovery records it as never completed (a restore line).
    raw = (store / "projects/heron.md").read_bytes()
    half_done_manifest(store, sha256_hex(raw))
    shutil.move(store / "archive/projects/heron.md", store / "projects/heron.md")
    (store / "projects/heron.md").write_bytes(raw + b"- a line written after the kill\n")
    manifest = (store / MANIFESTS / "20261130T120000Z.json").read_text()

    def recover() -> list[str]:
        with locked_pass(store, POLICY, now) as ctx:  # the recovery alone: no new gc plan after it
            return gc_engine.recover_gc(ctx).abandoned

    assert recover() == ["projects/heron.md"]
    never = [line for line in ledger_lines(store) if "reason: move never completed" in line]
    assert len(never) == 1 and "from: archive/projects/heron.md" in never[0]
    assert json.loads((store / MANIFESTS / "20261130T120000Z.json").read_text())["moves"][0]["abandoned"] is True
    assert gc_engine.unfinished_manifests(store) == []  # settled: the next pass does not recover it again
    # As a kill right after that line and before the manifest's flag would leave it:
    (store / MANIFESTS / "20261130T120000Z.json").write_text(manifest)
    assert recover() == ["projects/heron.md"]
    assert [line for line in ledger_lines(store) if "reason: move never completed" in line] == never
    assert (store / "projects/heron.md").read_bytes().endswith(b"- a line written after the kill\n")


def like_heron(name: str) -> tuple[bytes, str]:
    """The bytes and SPINE entry of another stale project file, heron's under another name."""
    return (HERON_RAW.replace(b"Heron", name.title().encode()).replace(b"heron", name.encode()),
            HERON_ENTRY.replace("Heron", name.title()).replace("heron", name))


PLOVER_RAW, PLOVER_ENTRY = like_heron("plover")


def add_stale(store: Path, name: str) -> None:
    """Another stale project file beside heron, with its SPINE entry."""
    raw, entry = like_heron(name)
    (store / f"projects/{name}.md").write_bytes(raw)
    spine = (store / "SPINE.md").read_text()
    (store / "SPINE.md").write_text(spine.replace(KESTREL_ENTRY + "\n", f"{KESTREL_ENTRY}\n{entry}\n"))
    StoreBuilder(store).rebuild_catalog()


def add_stale_plover(store: Path) -> None:
    add_stale(store, "plover")


def test_recovery_goes_past_a_done_move_to_finish_the_next(store: Path) -> None:
    # One manifest of two moves, killed after the second file was moved, before its SPINE edit.
    add_stale_plover(store)
    run_gc_apply(store, POLICY, now)
    manifest = next((store / MANIFESTS).glob("*.json"))
    data = json.loads(manifest.read_text())
    assert [m["from"] for m in data["moves"]] == ["projects/heron.md", "projects/plover.md"]
    data["moves"][1]["done"], data["finished"] = False, False
    manifest.write_text(json.dumps(data))
    spine = (store / "SPINE.md").read_text()
    (store / "SPINE.md").write_text(spine.replace(KESTREL_ENTRY + "\n", f"{KESTREL_ENTRY}\n{PLOVER_ENTRY}\n"))

    with locked_pass(store, POLICY, now) as ctx:
        outcome = gc_engine.recover_gc(ctx)

    assert outcome.recovered == ["projects/plover.md"] and outcome.self_check == []
    assert PLOVER_ENTRY not in (store / "SPINE.md").read_text()
    assert all(m["done"] for m in json.loads(manifest.read_text())["moves"])


def test_recovery_finishes_every_interrupted_revert(store: Path) -> None:
    # Two gc passes, each revert killed right after it flagged its manifest "reverting": the
    # next command finishes both before anything else, and reports every file it put back.
    run_gc_apply(store, POLICY, now)
    add_stale_plover(store)
    run_gc_apply(store, POLICY, now)
    manifests = sorted((store / MANIFESTS).glob("*.json"))
    assert len(manifests) == 2
    for manifest in manifests:
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "reverting": True}))

    report = run_gc_revert(store, POLICY, now, None)

    assert report.recovery is not None and report.recovery.reverted == ["projects/heron.md", "projects/plover.md"]
    assert report.outcome is None  # the newest manifest was reverted by the recovery already
    assert (store / "projects/heron.md").read_bytes() == HERON_RAW
    assert (store / "projects/plover.md").read_bytes() == PLOVER_RAW
    assert not (store / "archive/projects/heron.md").exists() and not (store / "archive/projects/plover.md").exists()
    spine = (store / "SPINE.md").read_text()
    assert HERON_ENTRY in spine and PLOVER_ENTRY in spine
    assert [line.split(" | ")[1] for line in ledger_lines(store)[-2:]] == [
        "from: archive/projects/heron.md", "from: archive/projects/plover.md"]
    assert all(json.loads(m.read_text())["reverted"] for m in manifests)


def test_an_interrupted_revert_finished_by_recovery_reports_its_self_check(store: Path) -> None:
    # What the store fails after the revert is said, whichever command finished the revert.
    run_gc_apply(store, POLICY, now)
    manifest = next((store / MANIFESTS).glob("*.json"))
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "reverting": True}))
    ghost = f"- [Ghost](projects/ghost.md) {EM} gone. Read never."
    spine = (store / "SPINE.md").read_text()
    (store / "SPINE.md").write_text(spine.replace(KESTREL_ENTRY + "\n", f"{KESTREL_ENTRY}\n{ghost}\n"))

    report = run_gc_revert(store, POLICY, now, None)

    assert report.recovery is not None and report.recovery.reverted == ["projects/heron.md"]
    failed = "SPINE pointer to missing file: projects/ghost.md"
    assert [f.message for f in report.recovery.self_check] == [failed]
    assert not report.ok and f"self-check FAILED:\n    - [C2] {failed}\n" in render_text(report)


class Killed(Exception):
    """Stands for a kill at a write boundary, in process."""


def kill_at_a_flag(boundary: str) -> None:
    """In place of ``crashpoint``: killed once a manifest flag is written."""
    if boundary == "manifest-marked":
        raise Killed(boundary)


def test_a_revert_cut_after_its_first_file_puts_the_rest_back_on_the_next_run(store: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    add_stale_plover(store)
    run_gc_apply(store, POLICY, now)

    monkeypatch.setattr(gc_engine, "crashpoint", kill_at_a_flag)
    with pytest.raises(Killed):
        run_gc_revert(store, POLICY, now, None)  # newest first: plover is back, heron not yet
    monkeypatch.undo()
    assert (store / "projects/plover.md").exists() and not (store / "projects/heron.md").exists()

    report = run_gc_revert(store, POLICY, now, None)

    assert report.recovery is not None and report.recovery.reverted == ["projects/heron.md"]
    assert (store / "projects/heron.md").read_bytes() == HERON_RAW
    assert (store / "projects/plover.md").read_bytes() == PLOVER_RAW
    moves = json.loads(next((store / MANIFESTS).glob("*.json")).read_text())["moves"]
    assert [m.get("reverted") for m in moves] == [True, True]
    assert len([line for line in ledger_lines(store) if " restore | " in line]) == 2


def test_a_gc_killed_after_its_last_move_rebuilds_the_catalog_on_the_next_run(store: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from distilld.engine.passes.gc import manifest as manifest_module

    catalog = (store / "CATALOG.md").read_bytes()
    monkeypatch.setattr(manifest_module, "crashpoint", kill_at_a_flag)
    with pytest.raises(Killed):
        run_gc_apply(store, POLICY, now)  # heron moved and flagged done; the catalog not yet rebuilt
    monkeypatch.undo()
    manifest = next((store / MANIFESTS).glob("*.json"))
    assert json.loads(manifest.read_text())["finished"] is False
    assert (store / "CATALOG.md").read_bytes() == catalog

    report = run_gc_apply(store, POLICY, now)

    assert report.recovery is not None and report.recovery.self_check == []
    rebuilt = (store / "CATALOG.md").read_bytes()
    assert rebuilt != catalog and b"archive/projects/heron.md" in rebuilt
    assert json.loads(manifest.read_text())["finished"] is True


def test_a_gc_killed_once_its_manifest_is_written_makes_every_move_on_the_next_run(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = {p: p.read_bytes() for p in sorted(store.rglob("*.md"))}
    ledger = ledger_lines(store)

    def kill_at_the_manifest(boundary: str) -> None:
        if boundary == "manifest-written":
            raise Killed(boundary)

    monkeypatch.setattr(gc_engine, "crashpoint", kill_at_the_manifest)
    with pytest.raises(Killed):
        run_gc_apply(store, POLICY, now)
    monkeypatch.undo()
    manifest = json.loads(next((store / MANIFESTS).glob("*.json")).read_text())
    assert [m["done"] for m in manifest["moves"]] == [False] and manifest["finished"] is False
    assert {p: p.read_bytes() for p in sorted(store.rglob("*.md"))} == before  # the manifest alone

    report = run_gc_apply(store, POLICY, now)

    assert report.recovery is not None and report.recovery.recovered == ["projects/heron.md"]
    assert (store / "archive/projects/heron.md").read_bytes() == HERON_RAW
    assert not (store / "projects/heron.md").exists() and HERON_ENTRY not in (store / "SPINE.md").read_text()
    added = ledger_lines(store)[len(ledger):]
    assert len(added) == 1 and added[0].startswith(
        "- 2026-11-30T12:00:00Z archive | from: projects/heron.md | to: archive/projects/heron.md"
        f" | sha256: {sha256_hex(HERON_RAW)} | ")


def fsynced_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every file or folder synced from now on, a temp file under the name it gets."""
    synced: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        synced.append(name.split(".distilld-tmp.")[0].removeprefix(".") if ".distilld-tmp." in name else name)
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    return synced


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name a synced file")
def test_the_spine_edit_is_on_disk_before_the_move_is_flagged_done(store: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A power cut after the done flag must not find the SPINE still pointing at the moved file:
    # recovery skips a move flagged done, so the pointer would stay for good.
    synced = fsynced_names(monkeypatch)
    report = run_gc_apply(store, POLICY, now)
    assert report.outcome is not None and report.outcome.manifest is not None
    manifest = report.outcome.manifest.name
    assert "SPINE.md" in synced
    last_flag = len(synced) - 1 - synced[::-1].index(manifest)
    assert synced.index("SPINE.md") < last_flag


@pytest.mark.parametrize(("content", "why"), [
    ("not json", "Expecting value: line 1 column 1 (char 0)"),
    ('{"ts": "2026-11-30T12:00:00Z"}', "'moves'"),
])
def test_an_unreadable_manifest_stops_gc_and_says_what_to_do(store: Path, content: str, why: str) -> None:
    (store / MANIFESTS).mkdir(parents=True)
    (store / MANIFESTS / "20261130T120000Z.json").write_text(content)
    before = {p: p.read_bytes() for p in sorted(store.rglob("*.md"))}
    with pytest.raises(ManifestError) as stopped:
        run_gc_apply(store, POLICY, now)
    assert str(stopped.value) == (f"{store / MANIFESTS / '20261130T120000Z.json'}: not a readable gc manifest "
                                  f"({why}); move it out of data/gc-manifests/ after checking the ledger, then "
                                  "run gc again")
    assert {p: p.read_bytes() for p in sorted(store.rglob("*.md"))} == before


# -- gc revert ---------------------------------------------------------------------------------------

def archive_heron_with_recall_count(store: Path) -> None:
    raw = (store / "projects/heron.md").read_bytes().replace(b"scope:", b"recall_count: 3\nscope:")
    (store / "projects/heron.md").write_bytes(raw)
    StoreBuilder(store).rebuild_catalog()
    run_gc_apply(store, POLICY, now)
    assert (store / "archive/projects/heron.md").exists()


def test_a_revert_without_room_in_the_spine_refuses_and_changes_nothing(store: Path) -> None:
    run_gc_apply(store, POLICY, now)
    spine = (store / "SPINE.md").read_bytes()
    fill = POLICY.limits.spine.max_lines - spine.count(b"\n")
    (store / "SPINE.md").write_bytes(spine + b"".join(b"<!-- filler %d -->\n" % n for n in range(fill)))
    StoreBuilder(store).rebuild_catalog()
    before = {p: p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file() and p.name != ".status"}
    with pytest.raises(GcRefused) as refused:
        run_gc_revert(store, POLICY, now, None)
    size = len((store / "SPINE.md").read_bytes()) + len(HERON_ENTRY.encode()) + 1
    assert str(refused.value) == (
        f"cannot revert 20261130T120000Z.json: SPINE.md has no room for 1 more entry: it would have "
        f"{POLICY.limits.spine.max_lines + 1} lines and {size} bytes (caps {POLICY.limits.spine.max_lines} and "
        f"{POLICY.limits.spine.max_bytes}); compact the SPINE first. Nothing was changed.")
    assert {p: p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file() and p.name != ".status"} == before


def test_a_revert_after_recall_count_drift_only_writes_a_plain_restore(store: Path) -> None:
    archive_heron_with_recall_count(store)
    archived = store / "archive/projects/heron.md"
    archived.write_bytes(archived.read_bytes().replace(b"recall_count: 3", b"recall_count: 9"))
    run_gc_revert(store, POLICY, now, None)
    assert " restore | from: archive/projects/heron.md" in ledger_lines(store)[-1]


def test_a_revert_after_a_real_edit_writes_restore_modified(store: Path) -> None:
    archive_heron_with_recall_count(store)
    archived = store / "archive/projects/heron.md"
    archived.write_bytes(archived.read_bytes() + b"- a line added in the archive\n")
    run_gc_revert(store, POLICY, now, None)
    assert " restore (modified) | from: archive/projects/heron.md" in ledger_lines(store)[-1]


def test_a_revert_never_overwrites_a_file_re_created_since_the_gc(store: Path) -> None:
    run_gc_apply(store, POLICY, now)
    (store / "projects/heron.md").write_bytes(b"# Heron, written again by an agent\n")
    archived = (store / "archive/projects/heron.md").read_bytes()
    ledger = (store / "archive/LEDGER.md").read_bytes()
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_revert(store, POLICY, now, None)
    assert str(stopped.value) == "cannot revert projects/heron.md: expected it in archive/projects/heron.md only"
    assert (store / "projects/heron.md").read_bytes() == b"# Heron, written again by an agent\n"
    assert (store / "archive/projects/heron.md").read_bytes() == archived
    assert (store / "archive/LEDGER.md").read_bytes() == ledger


def test_a_revert_of_a_file_moved_back_by_hand_without_a_ledger_line_stops(store: Path) -> None:
    run_gc_apply(store, POLICY, now)
    shutil.move(store / "archive/projects/heron.md", store / "projects/heron.md")  # not through restore
    ledger, spine = (store / "archive/LEDGER.md").read_bytes(), (store / "SPINE.md").read_bytes()
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_revert(store, POLICY, now, None)
    assert str(stopped.value) == "cannot revert projects/heron.md: expected it in archive/projects/heron.md only"
    assert (store / "projects/heron.md").read_bytes() == HERON_RAW
    assert (store / "archive/LEDGER.md").read_bytes() == ledger and (store / "SPINE.md").read_bytes() == spine


def archive_heron_with_a_long_entry(store: Path, raw: bytes = HERON_RAW) -> str:
    """heron (with ``raw`` as its bytes) archived by gc with a SPINE entry over the 400-byte cap,
    whose revert writes a short entry and keeps the whole hook in the file; the hook."""
    detail = "Kafka topics, schema contracts, replay tooling, " * 8
    long_entry = HERON_ENTRY.replace("Read when", detail + "Read when")
    assert len(long_entry.encode()) > POLICY.limits.spine.entry_max_bytes
    (store / "projects/heron.md").write_bytes(raw)
    (store / "SPINE.md").write_text((store / "SPINE.md").read_text().replace(HERON_ENTRY, long_entry))
    StoreBuilder(store).rebuild_catalog()
    run_gc_apply(store, POLICY, now)
    assert (store / "archive/projects/heron.md").read_bytes() == raw
    return long_entry.split(" — ", 1)[1]


def test_a_revert_of_a_long_entry_keeps_the_bytes_of_a_file_that_is_not_utf8(store: Path) -> None:
    raw = HERON_RAW.replace(b"into the lake.", b"into the lake \xff\xfe.")
    hook = archive_heron_with_a_long_entry(store, raw)
    report = run_gc_revert(store, POLICY, now, None)
    assert report.outcome is not None and report.outcome.self_check == []
    assert (store / "projects/heron.md").read_bytes() == (
        raw + b"\n## Index detail (moved from SPINE 2026-11-30)\n\n" + hook.encode() + b"\n")


def test_a_revert_keeps_the_spine_entry_a_person_wrote_back_and_the_files_bytes(store: Path) -> None:
    archive_heron_with_a_long_entry(store)  # an entry already there is not re-added, so no hook is moved
    spine = (store / "SPINE.md").read_text().replace(KESTREL_ENTRY + "\n", f"{KESTREL_ENTRY}\n{HERON_ENTRY}\n")
    (store / "SPINE.md").write_text(spine)

    report = run_gc_revert(store, POLICY, now, None)

    assert report.outcome is not None and report.outcome.reverted == ["projects/heron.md"]
    assert report.outcome.self_check == []
    assert (store / "projects/heron.md").read_bytes() == HERON_RAW
    assert (store / "SPINE.md").read_text() == spine


def test_a_revert_of_a_file_restored_meanwhile_only_sees_to_its_flag(store: Path) -> None:
    run_gc_apply(store, POLICY, now)
    run_restore(store, "projects/heron.md", POLICY, now)
    restored = (store / "projects/heron.md").read_bytes()
    ledger = (store / "archive/LEDGER.md").read_bytes()

    report = run_gc_revert(store, POLICY, now, None)

    assert report.outcome is not None and report.outcome.reverted == ["projects/heron.md"]
    assert report.outcome.self_check == []
    assert (store / "projects/heron.md").read_bytes() == restored
    assert (store / "archive/LEDGER.md").read_bytes() == ledger  # restored once, recorded once


def test_a_revert_records_its_move_even_after_a_users_restore_line(store: Path) -> None:
    # Restored by the user, then put back in archive/ by hand (no ledger line): the revert that
    # moves it out again writes its own restore line, as every move out of the archive has one.
    run_gc_apply(store, POLICY, now)
    run_restore(store, "projects/heron.md", POLICY, now)
    shutil.move(store / "projects/heron.md", store / "archive/projects/heron.md")
    archived = (store / "archive/projects/heron.md").read_bytes()
    lines = ledger_lines(store)
    assert "reason: user request" in lines[-1]

    report = run_gc_revert(store, POLICY, now, None)

    assert report.outcome is not None and report.outcome.reverted == ["projects/heron.md"]
    assert (store / "projects/heron.md").read_bytes() == archived
    added = ledger_lines(store)[len(lines):]
    assert len(added) == 1 and " restore (modified) | from: archive/projects/heron.md | " in added[0]
    assert added[0].endswith(f" | sha256: {sha256_hex(archived)} | reason: revert 20261130T120000Z.json")


def revert_killed_after_its_ledger_line(store: Path) -> Path:
    """heron archived by gc, then its revert killed after the restore line, before the move back."""
    run_gc_apply(store, POLICY, now)
    manifest = next((store / MANIFESTS).glob("*.json"))
    with open(store / "archive/LEDGER.md", "a") as ledger:
        ledger.write(f"- 2026-11-30T12:00:00Z restore | from: archive/projects/heron.md | to: projects/heron.md"
                     f" | reason: revert {manifest.name}\n")
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "reverting": True}))
    return manifest


def test_a_resumed_revert_stops_on_a_file_re_created_after_its_ledger_line(store: Path) -> None:
    manifest = revert_killed_after_its_ledger_line(store)
    # then an agent wrote the file again: reporting it reverted would leave it both active and
    # archived for good
    (store / "projects/heron.md").write_bytes(b"# Heron, written again by an agent\n")
    archived = (store / "archive/projects/heron.md").read_bytes()
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_revert(store, POLICY, now, None)
    assert str(stopped.value) == "cannot revert projects/heron.md: expected it in archive/projects/heron.md only"
    assert (store / "projects/heron.md").read_bytes() == b"# Heron, written again by an agent\n"
    assert (store / "archive/projects/heron.md").read_bytes() == archived
    assert json.loads(manifest.read_text()).get("reverted") is None  # still to finish, once resolved


def test_a_revert_whose_file_is_gone_from_both_places_stops(store: Path) -> None:
    manifest = revert_killed_after_its_ledger_line(store)  # then the archived copy was deleted
    (store / "archive/projects/heron.md").unlink()
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_revert(store, POLICY, now, None)
    assert str(stopped.value) == "cannot revert projects/heron.md: neither it nor archive/projects/heron.md exists"
    assert json.loads(manifest.read_text()).get("reverted") is None


def test_a_revert_of_an_archived_copy_deleted_by_hand_says_it_is_gone_from_both_places(store: Path) -> None:
    run_gc_apply(store, POLICY, now)
    (store / "archive/projects/heron.md").unlink()
    ledger = (store / "archive/LEDGER.md").read_bytes()
    with pytest.raises(RecoveryStopped) as stopped:
        run_gc_revert(store, POLICY, now, None)
    assert str(stopped.value) == "cannot revert projects/heron.md: neither it nor archive/projects/heron.md exists"
    assert (store / "archive/LEDGER.md").read_bytes() == ledger


@pytest.mark.parametrize("where", ["outside", "subfolder", "sibling-name"])
def test_revert_takes_manifests_only_from_data_gc_manifests(store: Path, tmp_path: Path, where: str) -> None:
    archive_heron_with_recall_count(store)
    manifest = next((store / MANIFESTS).glob("*.json"))
    if where == "outside":
        chosen = tmp_path / "elsewhere.json"
    elif where == "subfolder":
        chosen = store / MANIFESTS / "sub" / manifest.name
        chosen.parent.mkdir()
    else:
        chosen = store / "data" / manifest.name
    shutil.copy(manifest, chosen)
    with pytest.raises(GcRefused, match="no such gc manifest"):
        run_gc_revert(store, POLICY, now, str(chosen))
    assert (store / "archive/projects/heron.md").exists()
    assert run_gc_revert(store, POLICY, now, manifest.name).outcome is not None  # the real one is taken


def test_revert_takes_the_newest_manifest_or_the_one_named_by_file_name_or_time_stamp(
        store: Path) -> None:
    run_gc_apply(store, POLICY, now)
    for name in ("plover", "tern"):  # three passes, one file each
        add_stale(store, name)
        run_gc_apply(store, POLICY, now)
    by_file = {json.loads(m.read_text())["moves"][0]["from"]: m for m in (store / MANIFESTS).glob("*.json")}
    heron, plover, tern = (by_file[f"projects/{name}.md"] for name in ("heron", "plover", "tern"))

    def archived() -> list[str]:
        return sorted(p.name for p in (store / "archive/projects").glob("*.md") if p.name != "marlin.md")

    report = run_gc_revert(store, POLICY, now, None)
    assert report.outcome is not None and report.outcome.manifest == tern.resolve()
    assert report.outcome.reverted == ["projects/tern.md"] and archived() == ["heron.md", "plover.md"]
    assert run_gc_revert(store, POLICY, now, heron.stem).outcome.reverted == ["projects/heron.md"]
    assert archived() == ["plover.md"]
    assert run_gc_revert(store, POLICY, now, plover.name).outcome.reverted == ["projects/plover.md"]
    assert archived() == []


# -- the ledger ----------------------------------------------------------------------------------

def test_the_ledger_union_keeps_a_line_as_often_as_one_side_has_it() -> None:
    head = b"# Archive ledger\n\n"
    twice = b"- 2026-01-01 archive | from: projects/a.md | to: archive/projects/a.md\n"
    other = b"- 2026-01-02 restore | from: archive/projects/a.md | to: projects/a.md\n"
    merged = merge_ledgers(head + twice + twice, head + twice + other)
    assert merged.count(twice) == 2 and merged.count(other) == 1
    merged = merge_ledgers(head + twice + other, head + twice + twice)
    assert merged.count(twice) == 2 and merged.count(other) == 1


def test_an_out_of_order_line_is_reported_once_against_the_line_before_it(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    marlin = b.read("archive/LEDGER.md").decode().split("\n")
    event = next(line for line in marlin if line.startswith("- "))
    b.ledger([event,
              "- 2026-09-01 restore | from: archive/projects/x.md | to: projects/x.md | reason: a",
              "- 2026-09-05 archive | from: projects/x.md | to: archive/projects/x.md | reason: b"])
    found = [f.message for f in check_store(take_snapshot(tmp_path), POLICY.limits) if f.code == "ledger-out-of-order"]
    # 2026-09-01 comes after 2026-09-11 (out of order); 2026-09-05 comes after 2026-09-01 (in order).
    assert found == ["ledger events out of order: 2026-09-01 appended after 2026-09-11T08:00:00Z "
                     "(append order must be date order)"]


@pytest.mark.parametrize(("source", "target"), [
    ("../outside.md", "archive/../outside.md"), ("/etc/hostname", "archive//etc/hostname"),
    ("projects/kestrel.md", "archive/projects/other.md"), ("SPINE.md", "archive/SPINE.md"),
    ("evidence/craft/testing.md", "archive/evidence/craft/testing.md"),  # in the store, not a tier path
])
@pytest.mark.parametrize("done", [False, True])
def test_manifest_paths_failing_containment_stop_recovery_and_revert(store: Path, source: str, target: str,
                                                                     done: bool) -> None:
    move = {"from": source, "to": target, "sha256": "0" * 64, "sha256_norm": "0" * 64, "spine_entry": "",
            "done": done}
    (store / MANIFESTS).mkdir(parents=True)
    (store / MANIFESTS / "20261130T120000Z.json").write_text(json.dumps(
        {"ts": "2026-11-30T12:00:00Z", "moves": [move], "finished": done}))
    before = {p: p.read_bytes() for p in sorted(store.rglob("*.md"))}
    run = (lambda: run_gc_revert(store, POLICY, now, None)) if done else (lambda: run_gc_apply(store, POLICY, now))
    with pytest.raises(RecoveryStopped) as stopped:
        run()
    assert str(stopped.value) == (f"{store / MANIFESTS / '20261130T120000Z.json'}: move {source} -> {target} fails "
                                  "path containment (a tier path and archive/ + that path); stopped, nothing "
                                  "more was changed")
    assert {p: p.read_bytes() for p in sorted(store.rglob("*.md"))} == before


def test_a_spine_with_invalid_utf8_keeps_its_bytes_when_gc_edits_it(store: Path) -> None:
    spine = (store / "SPINE.md").read_bytes().replace(b"canary then soak", b"canary then soak \xff\xfe")
    (store / "SPINE.md").write_bytes(spine)
    StoreBuilder(store).rebuild_catalog()
    report = run_gc_apply(store, POLICY, now)
    assert report.outcome is not None and report.outcome.moved == ["projects/heron.md"]
    assert (store / "SPINE.md").read_bytes() == spine.replace(HERON_ENTRY.encode() + b"\n", b"")
    assert gc_engine.GcOutcome(None).still_over_budget == [] and gc_engine.GcOutcome(None).ok


def test_a_manifests_done_and_abandoned_moves_are_steps_already_carried_out(tmp_path: Path) -> None:
    """Recovery and the check of the planned store read a manifest as a journal: a move done,
    or recorded as never completed, must never be carried out again."""
    moves = [ManifestMove(f"projects/p{n}.md", f"archive/projects/p{n}.md", "a" * 64, "b" * 64,
                          f"- [P{n}](projects/p{n}.md)", "stale", done=n == 0, abandoned=n == 1) for n in range(3)]
    assert [step.done for step in Manifest(tmp_path / "m.json", "ts", moves).steps] == [True, True, False]


def test_a_manifest_of_an_older_client_without_reasons_archives_with_the_stale_reason(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"ts": "t", "moves": [
        {"from": "projects/p.md", "to": "archive/projects/p.md", "sha256": "a" * 64}]}))
    manifest = load_manifest(path)
    move = manifest.moves[0]
    assert (move.reason, move.done, move.abandoned, move.spine_entry, move.sha256_norm) == (
        "no activity past the staleness threshold", False, False, "", "")
    manifest.mark(0)  # a resumed manifest is saved again with its own time stamp, or none
    assert json.loads(path.read_text())["ts"] == "t"
    path.write_text(json.dumps({"moves": [{"from": "projects/p.md", "to": "archive/projects/p.md", "sha256": "a" * 64}]}))
    load_manifest(path).mark(0)
    assert json.loads(path.read_text())["ts"] == ""
