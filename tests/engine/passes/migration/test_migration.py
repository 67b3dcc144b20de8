"""migrate-store (STORE-FORMAT.md 1.9, 4.6): preview, apply, refusal, no-op, revert, lifecycle.

The store is ``unmigrated_store`` (maintenance_fixtures): an old SPINE with an entry over 400
bytes, a wrapped entry and no catalog line; over-cap files with protected blocks, a fence and
duplicates; a CRLF file; dated observations; legacy archives flat, nested under archive/<tier>/
and inside a tier directory. The clock is fixed at 2026-11-30T12:00:00Z. Every migrated store
must pass the independent reference checker, C4 against the backup and against the original.
"""

from __future__ import annotations

import hashlib
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, StoreBuilder
from distilld.actions.compaction import run_compaction
from distilld.actions.migrate import render_json, render_text, run_migrate
from distilld.cli import main as cli_main
from distilld.engine.passes.compaction.apply import CompactionRefused
from distilld.engine.passes.migration.apply import MigrationRefused
from distilld.engine.passes.migration.checklist import MigrationDir, migration_dirs
from distilld.policy import load_policy
from distilld.store.ledger import Ledger
from distilld.store.spine import Spine
from maintenance_fixtures import have_bash, oracle, oracle_passes, unmigrated_store

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
LATER = datetime(2026, 12, 1, 9, 0, 0, tzinfo=UTC)
pytestmark = pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")
KNOWLEDGE = ("SPINE.md", "CATALOG.md", "craft/", "ops/", "profile/", "projects/", "feedback/", "evidence/", "archive/")


def clock() -> datetime:
    return NOW


def later() -> datetime:
    return LATER


def files(root: Path, only: tuple[str, ...] = KNOWLEDGE) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).as_posix().startswith(only)}


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def only_dir(root: Path) -> MigrationDir:
    dirs = migration_dirs(root)
    assert len(dirs) == 1, dirs
    return dirs[0]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    unmigrated_store(root)
    shutil.copytree(root, tmp_path / "original")
    return root


# -- preview -------------------------------------------------------------------------------------------

def test_preview_writes_only_its_plan(store: Path, tmp_path: Path) -> None:
    outcome = run_migrate(store, POLICY, clock, "preview")

    assert files(store) == files(tmp_path / "original")
    made = sorted(p.relative_to(store).as_posix() for p in (store / "data").rglob("*") if p.is_file())
    assert made == ["data/migration/20261130T120000Z/PLAN.md"]
    plan = (store / made[0]).read_text()
    for heading in ("## Budgets", "## Legacy adoptions", "## Evidence (dated observation lines to twins)", "## Splits",
                    "## SPINE entries cut or merged", "## Proposed SPINE", "## Lifecycle moves",
                    "## Paths created or moved", "## Checklist"):
        assert f"\n{heading}" in plan, heading
    assert plan.endswith("\n## Writes\n\n")  # empty: nothing written yet
    assert "- [ ] 1. back up the knowledge tree to backup/ and verify the copy byte for byte\n" in plan
    assert "- [x]" not in plan
    assert "- archive/projects/marten.md -> archive/legacy/archive/projects/marten.md\n" in plan
    assert "- craft/archive/style-2024.md -> archive/legacy/craft/archive/style-2024.md\n" in plan
    assert "- status: preview: nothing changed\n" in plan
    assert outcome.plan is not None and not outcome.plan.refused
    assert "kind: first migration to the 1.2 layout" in render_text(outcome)


# -- apply ---------------------------------------------------------------------------------------------

def test_apply_migrates_to_a_store_the_reference_checker_accepts(store: Path, tmp_path: Path) -> None:
    outcome = run_migrate(store, POLICY, clock, "apply")

    assert outcome.ok and outcome.finished, render_text(outcome)
    directory = only_dir(store)
    assert directory.done.is_file() and not directory.pending.exists()
    assert files(directory.backup, ("",)) == files(tmp_path / "original")  # the backup is byte-exact
    oracle_passes(store, directory.backup)
    oracle_passes(store, tmp_path / "original")
    spine = Spine((store / "SPINE.md").read_bytes())
    assert spine.line_count <= 80 and spine.size <= 16000 and all(e.byte_len <= 400 for e in spine.entries)
    assert spine.lines[4].startswith("- [Catalog](CATALOG.md) " + EM)
    marks = directory.marks()
    assert marks and all(marks.values())
    done = directory.done.read_text()
    assert done.startswith("done 2026-11-30T12:00:00Z\nplan data/migration/20261130T120000Z/PLAN.md\n")
    assert "spine_bytes: 1824 -> " in done


def test_every_write_is_recorded_with_the_checksum_it_left(store: Path) -> None:
    run_migrate(store, POLICY, clock, "apply")
    directory = only_dir(store)
    recorded = directory.writes()
    for path in ("SPINE.md", "CATALOG.md", "craft/testing-2.md", "evidence/craft/testing.md",
                 "archive/legacy/archive/projects/marten.md", "projects/quill.md"):
        assert recorded[path] == sha((store / path).read_bytes()), path
    assert "- wrote craft/testing-2.md sha256 " in directory.plan_md.read_text()


def test_legacy_archives_are_adopted_byte_for_byte_and_flat_ones_stay(store: Path, tmp_path: Path) -> None:
    run_migrate(store, POLICY, clock, "apply")
    original = tmp_path / "original"
    assert (store / "archive/legacy/archive/projects/marten.md").read_bytes() == \
        (original / "archive/projects/marten.md").read_bytes()
    assert (store / "archive/legacy/craft/archive/style-2024.md").read_bytes() == \
        (original / "craft/archive/style-2024.md").read_bytes()
    assert not (store / "archive/projects/marten.md").exists()
    assert not [p for p in (store / "craft").rglob("*") if "archive" in p.parts and p.is_file()]
    assert (store / "archive/old-notes.md").read_bytes() == (original / "archive/old-notes.md").read_bytes()
    assert not (store / "archive/LEDGER.md").exists()  # adoption writes no ledger line


def test_dated_observations_and_only_those_move_to_twins_with_a_citation(store: Path) -> None:
    run_migrate(store, POLICY, clock, "apply")
    twin = (store / "evidence/craft/testing.md").read_text()
    assert twin.startswith("---\nevidence_for: craft/testing.md\n---\n## Evidence log\n\n")
    assert "- 2026-04-18 confirm: a temp-dir test caught a path bug in the exporter\n" in twin
    assert "\n## Observations\n\n- 2026-06-11 observe: property tests found the CRLF bug first\n" in twin
    family = (store / "craft/testing.md").read_text() + (store / "craft/testing-2.md").read_text()
    assert "- 2026-05-09 correct: a flaky test was a hypothesis, not noise\n  Why: the seed was fixed" in family
    assert "- [CORRECTED 2026-06-01] 2026-06-01 sleeps in tests replaced by polling" in family
    assert "- 2026-07-20 directive: fixtures use invented names (recorded as DIRECTIVE)" in family
    assert "Evidence: 2026-04-18 to 2026-06-30 in `evidence/craft/testing.md` (4 entries)." in family
    assert (store / "evidence/profile/ines.md").read_text().endswith(
        "- 2026-08-14 confirm: asked for the command before the explanation again\n")


def test_a_crlf_file_keeps_its_line_endings_through_split_and_catalog(store: Path) -> None:
    run_migrate(store, POLICY, clock, "apply")
    for path in ("ops/deploy.md", "ops/deploy-2.md"):
        raw = (store / path).read_bytes()
        assert raw.count(b"\n") == raw.count(b"\r\n") > 0, path
    assert b"split_from: ops/deploy.md\r\n" in (store / "ops/deploy-2.md").read_bytes()


def test_the_long_entry_is_cut_and_its_whole_hook_kept_in_its_file(store: Path, tmp_path: Path) -> None:
    before = Spine((tmp_path / "original/SPINE.md").read_bytes())
    quill_hook = next(e.hook for e in before.entries if "(projects/quill.md)" in e.first_line)
    run_migrate(store, POLICY, clock, "apply")
    assert (store / "projects/quill.md").read_text().endswith(
        f"\n## Index detail (moved from SPINE 2026-11-30)\n\n{quill_hook}\n")
    line = next(x for x in (store / "SPINE.md").read_text().splitlines() if "(projects/quill.md)" in x)
    assert len(line.encode()) <= 400 and "[NON-NEGOTIABLE]" in line and "pinned" in line
    assert line.endswith("Read before changing anything in quill-api or quill-recon.")


def test_migrating_a_migrated_store_is_a_no_op_that_says_so(store: Path) -> None:
    def everything_but_the_lock_status() -> dict[str, bytes]:  # .status carries the wall clock of the lock
        return {path: raw for path, raw in files(store, ("",)).items() if path != ".status"}

    run_migrate(store, POLICY, clock, "apply")
    after = everything_but_the_lock_status()
    outcome = run_migrate(store, POLICY, later, "apply")
    assert outcome.notes == ["the store is already in the 1.2 layout: nothing to migrate"]
    assert everything_but_the_lock_status() == after
    preview = run_migrate(store, POLICY, later, "preview")
    assert preview.plan is not None and preview.plan.is_noop
    # issue 27: each preview of a migrated store left another data/migration/<UTC>/PLAN.md
    assert preview.directory is None
    assert everything_but_the_lock_status() == after


def test_a_new_unledgered_archive_in_a_migrated_store_is_adopted_and_nothing_else(store: Path) -> None:
    run_migrate(store, POLICY, clock, "apply")
    StoreBuilder(store).write("archive/projects/finch.md", "# Finch\n\n- archived by an older client\n")
    before = files(store)
    outcome = run_migrate(store, POLICY, later, "apply")
    assert outcome.plan is not None
    assert outcome.plan.kind == "already migrated: adoption of newly appeared unledgered archives only"
    assert outcome.ok and outcome.finished
    after = files(store)
    assert after["archive/legacy/archive/projects/finch.md"] == before["archive/projects/finch.md"]
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed == {"archive/projects/finch.md", "archive/legacy/archive/projects/finch.md", "CATALOG.md"}
    assert oracle(store)[0] == 0


def test_a_second_apply_while_one_is_pending_is_refused(store: Path) -> None:
    (store / "data/migration/20261129T000000Z").mkdir(parents=True)
    (store / "data/migration/20261129T000000Z/PENDING").write_text("data/migration/20261129T000000Z/PLAN.md\n")
    before = files(store)
    with pytest.raises(MigrationRefused, match="another migration is PENDING"):
        run_migrate(store, POLICY, clock, "apply")
    assert files(store) == before
    with pytest.raises(CompactionRefused):
        run_compaction(store, POLICY, clock)


# -- refusal -------------------------------------------------------------------------------------------

def crowded_store(root: Path) -> StoreBuilder:
    """85 entries alternating craft and ops in one section: nothing can merge, so the SPINE
    cannot get under 80 lines."""
    b = StoreBuilder(root)
    lines = ["## Mixed"]
    for n in range(85):
        tier = ("craft", "ops")[n % 2]
        b.tier(f"{tier}/topic-{n}.md", f"# Topic {n}\n\n- note\n", scope=f"Topic {n}", last_updated="2026-09-01")
        lines.append(f"- [Topic {n}]({tier}/topic-{n}.md) {EM} topic {n}. Read for topic {n}.")
    b.tier("projects/kiln.md", "# Kiln\n\n- done\n", scope="Kiln", last_updated="2025-01-01")
    b.tier("projects/loom.md", "# Loom\n\n- kept\n", scope="Loom", last_updated="2025-01-01", lifecycle="pinned")
    lines += ["## Projects", f"- [Kiln](projects/kiln.md) {EM} kiln. Read for kiln.",
              f"- [Loom](projects/loom.md) {EM} loom; pinned. Read for loom."]
    b.spine(lines, catalog_line=False)
    return b


def test_a_spine_that_cannot_fit_is_refused_with_the_reason_and_what_to_do_by_hand(tmp_path: Path) -> None:
    root = tmp_path / "store"
    crowded_store(root)
    before = files(root)
    with pytest.raises(MigrationRefused) as refused:
        run_migrate(root, POLICY, clock, "apply")
    message = str(refused.value)
    assert message.startswith("migration refused; nothing was changed:\n  - SPINE.md would have 91 lines (cap 80)")
    assert "archive (the lifecycle would, were .lifecycle enabled): projects/kiln.md (no activity for" in message
    assert "pinned and past its staleness threshold (unpin it to let the lifecycle archive it): projects/loom.md" \
        in message
    # Its entries are short: none is called long; the lines are what binds, and no two entries share a topic.
    assert "long entry" not in message
    # issue 24: which topics (files that exist) to archive or merge, and what each frees
    assert "the SPINE would still be over its caps by 11 lines" in message
    assert message.count("archive or merge the topic ") == 11 and "frees " in message
    assert files(root) == before and not (root / "data").exists()  # not even a plan directory

    preview = run_migrate(root, POLICY, clock, "preview")
    plan = (Path(str(preview.directory)) / "PLAN.md").read_text()
    assert "## Refused: nothing will be changed\n\n- SPINE.md would have 91 lines (cap 80)" in plan
    assert "REFUSED" in render_text(preview)


# -- revert --------------------------------------------------------------------------------------------

def test_revert_gives_the_backup_back_and_keeps_later_changes_aside(store: Path, tmp_path: Path) -> None:
    run_migrate(store, POLICY, clock, "apply")
    b = StoreBuilder(store)
    b.write("craft/testing-2.md", b.read("craft/testing-2.md") + b"- learned after the migration\n")
    b.write("projects/saffron.md", b.read("projects/saffron.md") + b"- edited after the migration\n")
    b.write("projects/newcomer.md", "# Newcomer\n\n- written by an old client during PENDING\n")

    outcome = run_migrate(store, POLICY, later, "revert")

    assert outcome.finished and sorted(outcome.kept) == ["craft/testing-2.md", "projects/newcomer.md",
                                                        "projects/saffron.md"]
    directory = only_dir(store)
    assert directory.reverted.is_file() and directory.done.is_file() and not directory.pending.exists()
    after = files(store)
    # Changed after the backup: kept aside, and (as the format says) not deleted although created by the plan.
    assert after.pop("projects/newcomer.md") == b"# Newcomer\n\n- written by an old client during PENDING\n"
    assert after.pop("craft/testing-2.md").endswith(b"- learned after the migration\n")
    assert after == files(tmp_path / "original")
    kept = directory.kept
    assert (kept / "craft/testing-2.md").read_bytes().endswith(b"- learned after the migration\n")
    assert (kept / "projects/saffron.md").read_bytes().endswith(b"- edited after the migration\n")
    assert not (store / "CATALOG.md").exists()  # the store is pre-1.2 again
    assert "reverted: the store is as it was before the migration" in render_text(outcome)



def test_a_file_an_agent_changes_while_the_revert_runs_is_kept_aside_before_the_backup_goes_over_it(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The revert's first look finds SPINE.md as the migration left it (nothing to keep aside).
    A lockless writer then changes it, before the backup is written over it: the write is
    checked against what the look saw, so the writer's bytes go to kept-after-backup/ first."""
    import distilld.engine.passes.migration.revert as revert

    run_migrate(store, POLICY, clock, "apply")
    agent_bytes = (store / "SPINE.md").read_bytes() + b"- [Mid-revert](projects/saffron.md) - an agent wrote this\n"
    real_put = revert._Undo.put

    def writer_first(self: revert._Undo, path: str, data: bytes) -> None:
        if path == "SPINE.md":
            (store / path).write_bytes(agent_bytes)
        real_put(self, path, data)

    monkeypatch.setattr(revert._Undo, "put", writer_first)
    outcome = run_migrate(store, POLICY, later, "revert")

    assert outcome.finished and "SPINE.md" in outcome.kept
    assert (only_dir(store).kept / "SPINE.md").read_bytes() == agent_bytes
    assert (store / "SPINE.md").read_bytes() == (tmp_path / "original/SPINE.md").read_bytes()


def test_a_revert_run_again_keeps_each_version_an_agent_left_never_one_over_another(store: Path) -> None:
    """A revert interrupted after it kept SPINE.md aside and put the backup over it; an agent then
    edits SPINE.md again, and the revert runs again: the first kept copy held line A, the new one
    line B. The second used to be written over the first, and line A was then nowhere."""
    import distilld.engine.passes.migration.revert as revert
    from distilld.engine.passes.migration.apply import MigrateOutcome

    run_migrate(store, POLICY, clock, "apply")
    directory, outcome = only_dir(store), MigrateOutcome("revert")
    spine = (store / "SPINE.md").read_bytes()
    with_a, with_b = spine + b"- [A](projects/saffron.md) - line A\n", spine + b"- [B](projects/saffron.md) - line B\n"

    (store / "SPINE.md").write_bytes(with_a)
    revert._keep_aside(store, directory, outcome, "SPINE.md")
    revert._keep_aside(store, directory, outcome, "SPINE.md")  # the same version again: kept once
    (store / "SPINE.md").write_bytes(with_b)
    revert._keep_aside(store, directory, outcome, "SPINE.md")

    kept = sorted(p.relative_to(directory.kept).as_posix() for p in directory.kept.rglob("*") if p.is_file())
    assert kept == ["SPINE.kept-2.md", "SPINE.md"]
    assert (directory.kept / "SPINE.md").read_bytes() == with_a
    assert (directory.kept / "SPINE.kept-2.md").read_bytes() == with_b
    assert outcome.kept == ["SPINE.md"]

# -- lifecycle -----------------------------------------------------------------------------------------

def test_lifecycle_moves_run_only_when_enabled_ledger_first(store: Path, tmp_path: Path) -> None:
    (store / ".lifecycle").write_text("enabled\n")
    outcome = run_migrate(store, POLICY, clock, "apply")
    assert outcome.ok and outcome.plan is not None
    moved = [m.source for m in outcome.plan.lifecycle]
    assert moved == ["projects/saffron.md", "projects/tundra.md", "projects/vireo.md"]  # quill is pinned
    ledger = Ledger((store / "archive/LEDGER.md").read_bytes())
    assert [(e.event, e.value("from")) for e in ledger.events] == [("archive", p) for p in moved]
    for path in moved:
        assert (store / "archive" / path).read_bytes() == (tmp_path / "original" / path).read_bytes()
    assert "(projects/saffron.md)" not in (store / "SPINE.md").read_text()
    oracle_passes(store, only_dir(store).backup)

    reverted = run_migrate(store, POLICY, later, "revert")
    assert reverted.finished
    ledger = Ledger((store / "archive/LEDGER.md").read_bytes())  # kept, with a restore line per move
    assert [(e.event, e.value("to")) for e in ledger.events][3:] == [("restore", p) for p in reversed(moved)]
    assert all(e.value("reason") == f"revert {only_dir(store).ts}" for e in ledger.events[3:])
    after = files(store)
    after.pop("archive/LEDGER.md")
    assert after == files(tmp_path / "original")


def test_the_cli_migrates_and_says_what_it_did(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["migrate", str(store)]) == 0
    assert "plan: " in capsys.readouterr().out
    assert cli_main(["migrate", str(store), "--apply", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"finished": true' in out and '"files_split": 2' in out
    assert cli_main(["migrate", str(store), "--finish"]) == 6  # refused (the exit-code table: a migration that cannot be carried out)
    assert "no migration is PENDING" in capsys.readouterr().err
    assert cli_main(["migrate", str(store), "--revert"]) == 0
    assert files(store) == files(tmp_path / "original")
    assert render_json  # the JSON renderer is what --json printed


def test_a_second_revert_of_a_finished_revert_says_already_reverted_and_exits_0(
        store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As `gc --revert` does (issue 23, item 10): nothing to do is not a refusal."""
    assert cli_main(["migrate", str(store), "--apply"]) == 0
    assert cli_main(["migrate", str(store), "--revert"]) == 0
    reverted = files(store, KNOWLEDGE + ("data/",))
    capsys.readouterr()

    assert cli_main(["migrate", str(store), "--revert"]) == 0
    out = capsys.readouterr().out
    assert "is already reverted; nothing to do" in out, out
    assert files(store, KNOWLEDGE + ("data/",)) == reverted


def test_a_failed_self_check_leaves_pending_and_finish_completes_once_fixed(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import distilld.engine.passes.migration.apply as engine
    from distilld.store.findings import fail

    real = engine.check_c4
    monkeypatch.setattr(engine, "check_c4", lambda before, after: [fail("C4", "line-lost", "x.md", "injected")])
    outcome = run_migrate(store, POLICY, clock, "apply")
    assert not outcome.ok and not outcome.finished
    directory = only_dir(store)
    assert directory.pending.is_file() and not directory.done.exists()
    marks = directory.marks()
    assert [n for n, ticked in marks.items() if not ticked] == [max(marks)]  # only the self-check is left
    assert "self-check FAILED (PENDING stays):" in render_text(outcome)
    with pytest.raises(CompactionRefused):
        run_compaction(store, POLICY, clock)

    monkeypatch.setattr(engine, "check_c4", real)
    finished = run_migrate(store, POLICY, later, "finish")
    assert finished.ok and finished.finished and finished.items_done == ["self-check: C1-C3, and C4 against backup/"]
    assert directory.done.is_file() and not directory.pending.exists()
    oracle_passes(store, tmp_path / "original")
