"""gc apply and revert (STORE-FORMAT.md 1.7, 1.11, 4.4): what lands on disk, byte for byte.

Stores are built from ``healthy_store`` (persona Rowan) in tmp_path; the clock is fixed at
2026-11-30T12:00:00Z for apply and 2026-12-01T08:00:00Z for revert. Crash and lock-contention
behaviour is covered by test_crash_safety.py and test_gc_concurrency.py, not here.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import distilld.cli as cli_module
import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, MARLIN_ENTRY, StoreBuilder, healthy_store
from distilld.actions.gc import GcReport, preview_gc, render_text, run_gc_apply, run_gc_revert
from distilld.cli import main as cli_main
from distilld.engine.passes.gc.apply import GcOutcome, GcRefused
from distilld.errors import DistilldError, LockHeld
from distilld.policy import load_policy
from distilld.store import fs as fs_module
from distilld.store.catalog import render_catalog
from distilld.store.findings import fail
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot

POLICY = load_policy()
APPLY_STAMP = "2026-11-30T12:00:00Z"
REVERT_NOW = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)
REVERT_STAMP = "2026-12-01T08:00:00Z"
MANIFEST_NAME = "20261130T120000Z.json"

HERON_RAW = (b"---\ndomain: project\nscope: Heron clickstream\nrecall_count: 7\nlast_updated: 2026-05-01\n---\n\n"
             b"# Heron\n\n- Heron streams clickstream events into the lake.\n"
             b"- [DIRECTIVE 2026-04-02] Replay only from the raw zone.\n")
HERON_HOOK = "Heron clickstream | batch fallback. Read when working on heron."
HERON_ENTRY = f"- [Heron](projects/heron.md) {EM} {HERON_HOOK}"
PELICAN_HOOK = "Pelican CDC replication off the old CRM. Read when touching CRM replication."
PELICAN_ENTRY = f"- [Pelican](projects/pelican.md) + [Pelican, continued](projects/pelican-2.md) {EM} {PELICAN_HOOK}"
LUMEN_LINES = [f"- [Lumen](projects/lumen.md) + [Ibis](projects/ibis.md) {EM} dashboards,",
               "  and the ibis exports. Read for either."]
MOVED = ["projects/heron.md", "projects/ibis.md", "projects/pelican.md", "projects/pelican-2.md"]


# -- helpers --------------------------------------------------------------------------------------

def clock() -> datetime:
    return FIXED_NOW


def revert_clock() -> datetime:
    return REVERT_NOW


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def sha_norm(raw: bytes) -> str:
    """The reference awk, written out again: drop the frontmatter recall_count line, re-emit
    every record with LF (so a missing final newline is added), keep CRs."""
    records = raw.split(b"\n")
    if records[-1] == b"":
        records.pop()
    out, inside = [], False
    for number, record in enumerate(records, start=1):
        fence = record.rstrip(b"\r") == b"---"
        if number == 1 and fence:
            inside = True
        elif inside and fence:
            inside = False
        elif inside and record.startswith(b"recall_count:"):
            continue
        out.append(record + b"\n")
    return sha(b"".join(out))


def with_entries(b: StoreBuilder, entries: list[str]) -> StoreBuilder:
    spine = b.read("SPINE.md").decode()
    spine = spine.replace(KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + "".join(e + "\n" for e in entries))
    b.write("SPINE.md", spine)
    return b.rebuild_catalog()


def heron_store(b: StoreBuilder, entry: str = HERON_ENTRY) -> StoreBuilder:
    b.write("projects/heron.md", HERON_RAW)
    return with_entries(b, [entry])


def busy_store(b: StoreBuilder) -> StoreBuilder:
    """Heron (a `|` in its hook), Ibis on a wrapped line shared with the recent Lumen, and the
    split family Pelican + Pelican, continued on one line: four moves."""
    b.write("projects/heron.md", HERON_RAW)
    b.tier("projects/ibis.md", "# Ibis\n\n- Ibis exports ran weekly.\n", domain="project", scope="Ibis exports",
           last_updated="2025-06-01")
    b.tier("projects/lumen.md", "# Lumen\n\n- Lumen dashboards.\n", domain="project", scope="Lumen dashboards",
           last_updated="2026-11-20")
    b.tier("projects/pelican.md", "# Pelican\n\n## Setup\n\n- Debezium reads the CRM binlog.\n\n"
           "Continued in `projects/pelican-2.md`.\n", domain="project", scope="Pelican CDC", last_updated="2025-03-01")
    b.tier("projects/pelican-2.md", "## Cut-over\n\n- The CRM was retired.\n", domain="project",
           scope="Pelican CDC (continued)", last_updated="2025-03-01", split_from="projects/pelican.md")
    return with_entries(b, [HERON_ENTRY, *LUMEN_LINES, PELICAN_ENTRY])


def files(root: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).as_posix() not in skip}


LOCK_FILES = (".status", ".lock.takeover")  # the lock protocol's own local files


def failing(findings: list) -> list[str]:
    return [f"[{f.group}] {f.code}: {f.message}" for f in findings if f.severity == "fail"]


def ledger_lines(root: Path) -> list[str]:
    return [line for line in (root / "archive/LEDGER.md").read_text("utf-8").split("\n") if line.startswith("- ")]


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def b(tmp_path: Path) -> StoreBuilder:
    return healthy_store(tmp_path / "store")


@pytest.fixture(autouse=True)
def fixed_cli_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_module, "_now", clock)


# -- the ledger ---------------------------------------------------------------------------------

def test_the_archive_line_follows_the_grammar_exactly(b: StoreBuilder) -> None:
    heron_store(b)
    ledger_before = b.read("archive/LEDGER.md")
    assert sha(HERON_RAW) != sha_norm(HERON_RAW)  # the recall_count line makes them differ

    report = run_gc_apply(b.root, POLICY, clock)

    assert report.outcome is not None and report.outcome.moved == ["projects/heron.md"]
    line = (f"- {APPLY_STAMP} archive | from: projects/heron.md | to: archive/projects/heron.md"
            f" | sha256: {sha(HERON_RAW)} | sha256-norm: {sha_norm(HERON_RAW)}"
            " | reason: no activity for 213 days (threshold 90)"
            f" | spine-entry: - [Heron](projects/heron.md) {EM} Heron clickstream \\| batch fallback."
            " Read when working on heron.")
    assert b.read("archive/LEDGER.md") == ledger_before + line.encode() + b"\n"
    assert line.split(" | ")[-1].startswith("spine-entry: - [")


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_a_first_gc_creates_the_ledger_and_a_crlf_ledger_stays_crlf(b: StoreBuilder, ending: bytes) -> None:
    heron_store(b)
    if ending == b"\n":  # no ledger yet: unarchive Marlin's story entirely
        for path in ("archive/LEDGER.md", "archive/projects/marlin.md", "evidence/projects/marlin.md"):
            b.remove(path)
        b.rebuild_catalog()
    else:
        b.write("archive/LEDGER.md", b.read("archive/LEDGER.md").replace(b"\n", b"\r\n"))
    before = b.read("archive/LEDGER.md") if ending == b"\r\n" else None

    run_gc_apply(b.root, POLICY, clock)

    ledger = b.read("archive/LEDGER.md")
    line = f"- {APPLY_STAMP} archive | from: projects/heron.md |".encode()
    if before is None:
        assert ledger.startswith(b"# Archive ledger\n\n<!-- Append-only.")
        assert ledger.count(b"\n- ") == 1 and line in ledger and b"\r" not in ledger
    else:
        assert ledger.startswith(before) and ledger[len(before):].startswith(line)
        assert ledger.endswith(b"\r\n") and ledger.count(b"\n") == ledger.count(b"\r\n")
    assert failing(check_store(take_snapshot(b.root), POLICY.limits)) == []


def test_ledger_line_and_manifest_are_written_before_each_move(b: StoreBuilder,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    busy_store(b)
    real_move = fs_module.move_exact
    seen: list[str] = []

    def checking_move(source: Path, target: Path) -> None:
        rel = source.relative_to(b.root).as_posix()
        ledger = b.read("archive/LEDGER.md").decode()
        assert f" archive | from: {rel} | to: archive/{rel} |" in ledger, f"{rel} moved before its ledger line"
        assert source.is_file() and not target.exists()
        manifest = json.loads(b.read(f"data/gc-manifests/{MANIFEST_NAME}"))
        entry = next(m for m in manifest["moves"] if m["from"] == rel)
        assert entry["done"] is False
        seen.append(rel)
        real_move(source, target)

    monkeypatch.setattr(fs_module, "move_exact", checking_move)
    run_gc_apply(b.root, POLICY, clock)

    assert seen == MOVED


def test_archived_bytes_are_identical_to_the_original(b: StoreBuilder) -> None:
    raw = (b"---\r\ndomain: project\r\nscope: Heron\r\nlast_updated: 2025-01-01\r\n---\r\n# Heron \xff\xfe\r\n\r\n"
           b"- caf\xc3\xa9 \xe2\x80\x94 no final newline")
    b.write("projects/heron.md", raw)
    with_entries(b, [HERON_ENTRY])

    run_gc_apply(b.root, POLICY, clock)

    assert not (b.root / "projects/heron.md").exists()
    assert b.read("archive/projects/heron.md") == raw
    assert f"| sha256: {sha(raw)} | sha256-norm: {sha_norm(raw)} |" in ledger_lines(b.root)[-1]


@pytest.mark.parametrize(("newest", "expected"), [
    ("2026-12-05T09:00:00Z", "2026-12-05T09:00:00Z"),
    ("2026-12-05T09:00Z", "2026-12-05T09:00:00Z"),
    ("2026-12-05", "2026-12-05T00:00:00Z"),
], ids=["full", "minutes", "date-only"])
def test_stamps_never_go_back_when_another_machine_wrote_a_later_line(b: StoreBuilder, newest: str,
                                                                      expected: str) -> None:
    busy_store(b)
    b.ledger([b.archive_line(newest, "projects/marlin.md", MARLIN_ENTRY)])
    b.rebuild_catalog(datetime(2026, 12, 6, tzinfo=UTC))

    run_gc_apply(b.root, POLICY, clock)

    lines = ledger_lines(b.root)
    assert [line.split(" ")[1] for line in lines] == [newest] + [expected] * 4
    assert failing(check_store(take_snapshot(b.root), POLICY.limits)) == []  # no "out of order", no "catalog stale"

    run_gc_revert(b.root, POLICY, revert_clock, None)
    assert [line.split(" ")[1] for line in ledger_lines(b.root)][-4:] == [expected] * 4
    assert failing(check_store(take_snapshot(b.root), POLICY.limits)) == []


# -- manifest, gc-log, catalog, self-check ----------------------------------------------------------

def test_the_manifest_lists_every_move_done_and_is_finished(b: StoreBuilder) -> None:
    busy_store(b)
    originals = {x: b.read(x) for x in MOVED}

    report = run_gc_apply(b.root, POLICY, clock)

    path = b.root / "data/gc-manifests" / MANIFEST_NAME
    assert report.outcome is not None and report.outcome.manifest == path.resolve()
    assert sorted(p.name for p in (b.root / "data/gc-manifests").iterdir()) == [MANIFEST_NAME]
    hook_ibis = "dashboards, and the ibis exports. Read for either."
    spine_entries = {
        "projects/heron.md": HERON_ENTRY,
        "projects/ibis.md": f"- [Ibis](projects/ibis.md) {EM} {hook_ibis}",
        "projects/pelican.md": f"- [Pelican](projects/pelican.md) {EM} {PELICAN_HOOK}",
        "projects/pelican-2.md": f"- [Pelican, continued](projects/pelican-2.md) {EM} {PELICAN_HOOK}",
    }
    ages = {"projects/heron.md": 213, "projects/ibis.md": 547, "projects/pelican.md": 639, "projects/pelican-2.md": 639}
    assert json.loads(path.read_text("utf-8")) == {
        "ts": APPLY_STAMP,
        "moves": [{"from": x, "to": f"archive/{x}", "sha256": sha(originals[x]), "sha256_norm": sha_norm(originals[x]),
                   "spine_entry": spine_entries[x], "reason": f"no activity for {ages[x]} days (threshold 90)",
                   "done": True} for x in MOVED],
        "finished": True,
    }


def test_gc_log_gets_one_json_line_per_blocked_file(b: StoreBuilder) -> None:
    b.write("data/gc-log.jsonl", '{"ts":"2026-01-01T00:00:00Z","path":"projects/old.md","status":"blocked","reason":"x"}\n')
    for name in ("heron", "ibis", "tern"):
        b.tier(f"projects/{name}.md", f"# {name}\n", domain="project", last_updated="2025-01-01")
    b.tier("projects/wren.md", "# wren\n", domain="project")  # undated: ineligible, not logged
    b.write("ops/deploy.md", b.read("ops/deploy.md").replace(
        b"read_with: [craft/testing.md]", b"read_with: [craft/testing.md, projects/heron.md]"))
    with_entries(b, [f"- [Heron](projects/heron.md) {EM} heron. Read for heron.",
                     f"- [Ibis](projects/ibis.md) {EM} ibis. Read for ibis.",
                     f"- [Ibis again](projects/ibis.md) {EM} ibis two. Read for ibis.",
                     f"- [Tern](projects/tern.md) {EM} tern. Read for tern.",
                     f"- [Wren](projects/wren.md) {EM} wren. Read for wren."])
    before = b.read("data/gc-log.jsonl")

    report = run_gc_apply(b.root, POLICY, clock)

    assert report.outcome is not None and report.outcome.moved == ["projects/tern.md"]
    log = b.read("data/gc-log.jsonl")
    assert log.startswith(before)
    assert [json.loads(line) for line in log[len(before):].decode().splitlines()] == [
        {"ts": APPLY_STAMP, "path": "projects/heron.md", "status": "blocked",
         "reason": "it is in the read_with of ops/deploy.md"},
        {"ts": APPLY_STAMP, "path": "projects/ibis.md", "status": "blocked",
         "reason": "projects/ibis.md has more than one SPINE line; merge them first"},
    ]


def test_the_catalog_is_rebuilt_with_the_archived_row(b: StoreBuilder) -> None:
    heron_store(b)

    run_gc_apply(b.root, POLICY, clock)

    catalog = b.read("CATALOG.md").decode()
    assert catalog == render_catalog(take_snapshot(b.root), FIXED_NOW)
    assert f"rebuilt: {APPLY_STAMP} -->" in catalog
    assert ("- archive/projects/heron.md | Heron clickstream | archived 2026-11-30"
            " | reason: no activity for 213 days (threshold 90) | from projects/heron.md"
            " | hook: Heron clickstream \\| batch fallback. Read when working on heron.\n") in catalog
    assert "- projects/heron.md |" not in catalog
    assert [f for f in failing(check_store(take_snapshot(b.root), POLICY.limits)) if f.startswith("[C2]")] == []


def test_the_self_check_passes_c1_to_c3_and_c4_against_the_store_before(b: StoreBuilder, tmp_path: Path) -> None:
    busy_store(b)
    shutil.copytree(b.root, tmp_path / "before")

    report = run_gc_apply(b.root, POLICY, clock)

    assert report.outcome is not None and report.outcome.self_check == [] and report.ok
    after = take_snapshot(b.root)
    assert failing(check_store(after, POLICY.limits)) == []
    assert failing(check_c4(take_snapshot(tmp_path / "before"), after)) == []
    assert "self-check passed (C1-C3, C4 against the store before the pass)\n" in render_text(report)


def test_gc_never_moves_a_file_its_own_self_check_calls_pinned(b: StoreBuilder) -> None:
    """`lifecycle: pinned ` with a trailing blank: C4.2 (`^lifecycle: pinned`) calls the file pinned,
    so gc must not move it (STORE-FORMAT 4.4: pinned files are never archived automatically)."""
    b.write("projects/heron.md", HERON_RAW.replace(b"last_updated:", b"lifecycle: pinned \nlast_updated:"))
    with_entries(b, [HERON_ENTRY.replace("Read when", "pinned. Read when")])

    report = run_gc_apply(b.root, POLICY, clock)

    assert report.outcome is None or report.outcome.self_check == [], failing(report.outcome.self_check)
    assert (b.root / "projects/heron.md").exists() and not (b.root / "archive/projects/heron.md").exists()


def test_a_failed_self_check_is_never_reported_as_passed() -> None:
    finding = fail("C2", "spine-missing-file", "projects/x.md", "SPINE pointer to missing file: projects/x.md")
    report = GcReport("apply", outcome=GcOutcome(None, moved=["projects/x.md"], self_check=[finding]))

    text = render_text(report)

    assert not report.ok
    assert "self-check FAILED:\n    - [C2] SPINE pointer to missing file: projects/x.md\n" in text
    assert "self-check passed" not in text


# -- refusals and consent ----------------------------------------------------------------------------

def make_pending(b: StoreBuilder) -> str:
    b.write("data/migration/20261129T100000Z/PENDING", "data/migration/20261129T100000Z/PLAN.md\n")
    root = b.root.resolve()
    return (f"{root}/data/migration/20261129T100000Z/PENDING: a store migration is PENDING; finish or revert it "
            "(migrate --finish / --revert) before gc or restore")


def make_unmigrated(b: StoreBuilder) -> str:
    b.remove("CATALOG.md")
    return f"{b.root.resolve()}: pre-1.2 store (no CATALOG.md); migrate it before gc or restore"


@pytest.mark.parametrize("setup", [make_pending, make_unmigrated], ids=["pending-migration", "unmigrated"])
def test_apply_refuses_and_says_what_to_do(b: StoreBuilder, setup, capsys: pytest.CaptureFixture[str]) -> None:
    heron_store(b)
    message = setup(b)
    before = files(b.root, LOCK_FILES)

    with pytest.raises(GcRefused) as refused:
        run_gc_apply(b.root, POLICY, clock)
    assert str(refused.value) == message
    with pytest.raises(GcRefused) as refused:
        preview_gc(b.root, POLICY, FIXED_NOW)
    assert str(refused.value) == message

    code, out, err = run_cli(["gc", "--apply", str(b.root)], capsys)
    assert (code, out, err) == (6, "", f"distilld: {message}\n")
    assert files(b.root, LOCK_FILES) == before
    assert not (b.root / ".lock").exists()


@pytest.mark.parametrize("content", [None, b"", b"disabled\n", b"Enabled\n", b"enabled please\n", b"# enabled\n"],
                         ids=["absent", "empty", "disabled", "capitalised", "extra-words", "comment"])
def test_a_scheduled_run_moves_nothing_unless_lifecycle_is_enabled(b: StoreBuilder, content: bytes | None) -> None:
    heron_store(b)
    if content is not None:
        b.write(".lifecycle", content)
    before = files(b.root)

    report = run_gc_apply(b.root, POLICY, clock, scheduled=True)

    assert report.notes == ["lifecycle is disabled for this store (.lifecycle); moved nothing"]
    assert report.outcome is None and report.plan is None
    assert files(b.root) == before


@pytest.mark.parametrize("content", [b"enabled", b"enabled\n", b"\xef\xbb\xbfenabled\r\n",
                                     b"\xef\xbb\xbf  enabled \n\n", b"\n\tenabled\t\n"],
                         ids=["bare", "newline", "bom-crlf", "bom-blanks", "tabs"])
def test_a_scheduled_run_applies_when_lifecycle_says_enabled(b: StoreBuilder, content: bytes) -> None:
    heron_store(b)
    b.write(".lifecycle", content)

    report = run_gc_apply(b.root, POLICY, clock, scheduled=True)

    assert report.outcome is not None and report.outcome.moved == ["projects/heron.md"]
    assert b.read(".lifecycle") == content


@pytest.mark.parametrize("content", [None, b"disabled\n"], ids=["absent", "disabled"])
def test_an_explicit_apply_moves_whatever_lifecycle_says(b: StoreBuilder, content: bytes | None,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    heron_store(b)
    if content is not None:
        b.write(".lifecycle", content)

    code, out, err = run_cli(["gc", "--apply", str(b.root)], capsys)

    assert (code, err) == (0, "")
    assert "    archived projects/heron.md\n" in out
    assert b.read("archive/projects/heron.md") == HERON_RAW


def test_a_fresh_lock_held_by_another_owner_refuses_and_changes_nothing(b: StoreBuilder,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    heron_store(b)
    epoch = int(time.time())
    b.write(".lock", f"other {epoch} {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(epoch))}\n")
    before = files(b.root, (".lock.takeover",))

    with pytest.raises(LockHeld) as held:
        run_gc_apply(b.root, POLICY, clock)

    assert held.value.owner == "other"
    assert re.fullmatch(rf"{re.escape(str(b.root.resolve()))}/\.lock is held \(other for \d+ s\): a distillation "
                        r"is running; nothing was changed\. Try again later, or pass --wait SECONDS\.",
                        str(held.value)), str(held.value)
    code, out, err = run_cli(["gc", "--apply", str(b.root)], capsys)
    assert (code, out) == (5, "") and "is held (other for " in err
    assert files(b.root, (".lock.takeover",)) == before


def test_json_output_parses_and_carries_the_moves(b: StoreBuilder, capsys: pytest.CaptureFixture[str]) -> None:
    busy_store(b)

    code, out, _ = run_cli(["gc", str(b.root), "--json"], capsys)
    assert code == 0
    preview = json.loads(out)
    assert preview["mode"] == "preview" and [m["source"] for m in preview["plan"]["moves"]] == MOVED

    code, out, _ = run_cli(["gc", "--apply", str(b.root), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert (data["mode"], data["ok"]) == ("apply", True)
    assert [(m["source"], m["target"], m["sha256"]) for m in data["plan"]["moves"]] == [
        (x, f"archive/{x}", sha(b.read(f"archive/{x}"))) for x in MOVED]
    assert data["plan"]["moves"][0]["directives"] == 1
    assert data["outcome"]["moved"] == MOVED
    assert data["outcome"]["manifest"] == str(b.root.resolve() / "data/gc-manifests" / MANIFEST_NAME)
    assert data["outcome"]["self_check"] == []


# -- revert -------------------------------------------------------------------------------------------

def test_revert_brings_every_move_back_with_a_restore_line_and_its_spine_entry(b: StoreBuilder) -> None:
    busy_store(b)
    originals = {x: b.read(x) for x in MOVED}
    spine_before = b.read("SPINE.md").decode()
    run_gc_apply(b.root, POLICY, clock)
    ledger_after_apply = b.read("archive/LEDGER.md")

    report = run_gc_revert(b.root, POLICY, revert_clock, None)

    assert report.outcome is not None and report.outcome.reverted == list(reversed(MOVED))
    assert report.outcome.self_check == []
    for x in MOVED:
        assert b.read(x) == originals[x], x
        assert not (b.root / f"archive/{x}").exists()
    assert b.read("archive/LEDGER.md") == ledger_after_apply + "".join(
        f"- {REVERT_STAMP} restore | from: archive/{x} | to: {x} | sha256: {sha(originals[x])}"
        f" | reason: revert {MANIFEST_NAME}\n" for x in reversed(MOVED)).encode()
    spine = b.read("SPINE.md").decode()
    assert PELICAN_ENTRY + "\n" in spine  # one line again, parent pointer first
    assert "\n".join(LUMEN_LINES) + "\n" in spine  # the merged, wrapped line re-joined as it was
    assert HERON_ENTRY + "\n" in spine
    assert Counter(spine.splitlines()) == Counter(spine_before.splitlines())
    assert b.read("CATALOG.md").decode() == render_catalog(take_snapshot(b.root), REVERT_NOW)
    assert failing(check_store(take_snapshot(b.root), POLICY.limits)) == []
    manifest = json.loads(b.read(f"data/gc-manifests/{MANIFEST_NAME}"))
    assert manifest["reverted"] is True and all(m["done"] for m in manifest["moves"])


def test_a_second_revert_is_a_no_op_that_says_so(b: StoreBuilder, capsys: pytest.CaptureFixture[str]) -> None:
    busy_store(b)
    run_gc_apply(b.root, POLICY, clock)
    run_gc_revert(b.root, POLICY, revert_clock, None)
    before = files(b.root, LOCK_FILES)
    manifest = b.root.resolve() / "data/gc-manifests" / MANIFEST_NAME

    report = run_gc_revert(b.root, POLICY, revert_clock, None)

    assert report.outcome is None
    assert report.notes == [f"{manifest} is already reverted; nothing to do"]
    code, out, err = run_cli(["gc", "--revert", str(b.root)], capsys)
    assert (code, out, err) == (0, f"note: {manifest} is already reverted; nothing to do\n", "")
    code, out, err = run_cli(["gc", "--revert", "--manifest", MANIFEST_NAME, str(b.root)], capsys)
    assert (code, out, err) == (0, f"note: {manifest} is already reverted; nothing to do\n", "")
    assert files(b.root, LOCK_FILES) == before


def test_revert_of_an_entry_over_400_bytes_writes_a_short_entry_and_keeps_the_hook(b: StoreBuilder) -> None:
    hook = ("Heron clickstream collector: Kafka topics, the schema registry contracts, the Flink jobs that "
            "sessionise events, the late-data policy, replay tooling, partitioning by event date, the "
            "compaction schedule, the GDPR erasure path, alerting thresholds and the on-call runbook links; "
            "owners changed twice, and the retention rules differ per region and per tenant tier. "
            "Read when working on heron or replaying clickstream.")
    entry = f"- [Heron](projects/heron.md) {EM} {hook}"
    assert len(entry.encode()) > 400
    heron_store(b, entry)
    run_gc_apply(b.root, POLICY, clock)
    assert ledger_lines(b.root)[-1].endswith(f"| spine-entry: {entry}")

    report = run_gc_revert(b.root, POLICY, revert_clock, None)

    assert report.outcome is not None and report.outcome.self_check == []
    spine = b.read("SPINE.md").decode()
    heron_lines = [line for line in spine.splitlines() if "(projects/heron.md)" in line]
    assert len(heron_lines) == 1
    short = heron_lines[0]
    assert len(short.encode()) <= 400
    assert short.startswith(f"- [Heron](projects/heron.md) {EM} ")
    assert short.endswith("Read when working on heron or replaying clickstream.")
    assert "pinned" not in short  # the file is not pinned: its entry must not say so
    assert b.read("projects/heron.md") == (
        HERON_RAW + b"\n## Index detail (moved from SPINE 2026-12-01)\n\n" + hook.encode() + b"\n")
    assert failing(check_store(take_snapshot(b.root), POLICY.limits)) == []


def test_revert_re_adds_entries_within_the_spine_budget(b: StoreBuilder) -> None:
    """STORE-FORMAT 4.4: revert restores the SPINE entries "within D1 (as in restore step 5)". The
    SPINE filled up to 80 lines after the gc; the revert must refuse (changing nothing) or still
    finish within 80 lines, never leave the SPINE over its cap."""
    heron_store(b)
    run_gc_apply(b.root, POLICY, clock)
    spine = b.read("SPINE.md")
    b.write("SPINE.md", spine + b"".join(b"<!-- filler %d -->\n" % i for i in range(80 - spine.count(b"\n"))))
    b.rebuild_catalog()
    before = files(b.root, LOCK_FILES)

    try:
        report = run_gc_revert(b.root, POLICY, revert_clock, None)
    except DistilldError:
        assert files(b.root, LOCK_FILES) == before
        return
    assert report.outcome is not None and report.outcome.self_check == [], failing(report.outcome.self_check)
    assert b.read("SPINE.md").count(b"\n") <= 80


def test_revert_with_nothing_to_revert_says_so_and_exits_0(b: StoreBuilder, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 27: it exited 6, "cannot be changed safely", for a store where nothing went wrong
    heron_store(b)
    before = files(b.root, LOCK_FILES)
    code, out, err = run_cli(["gc", "--revert", str(b.root)], capsys)
    assert code == 0, err
    assert "nothing to revert" in out + err
    assert files(b.root, LOCK_FILES) == before


def test_a_manifest_without_revert_is_a_usage_error(b: StoreBuilder, capsys: pytest.CaptureFixture[str]) -> None:
    heron_store(b)
    before = files(b.root, LOCK_FILES)
    code, _, err = run_cli(["gc", "--apply", "--manifest", "x.json", str(b.root)], capsys)
    assert code == 2 and "--manifest" in err and "--revert" in err
    assert files(b.root, LOCK_FILES) == before


def unknown_manifest(b: StoreBuilder) -> tuple[list[str], str]:
    heron_store(b)
    run_gc_apply(b.root, POLICY, clock)
    return (["--manifest", "20200101T000000Z.json"],
            "20200101T000000Z.json: no such gc manifest; `ls data/gc-manifests/` lists them")


def applied_then(setup):
    def both(b: StoreBuilder) -> tuple[list[str], str]:
        heron_store(b)
        run_gc_apply(b.root, POLICY, clock)
        return [], setup(b)
    both.__name__ = setup.__name__
    return both


@pytest.mark.parametrize("setup", [unknown_manifest, applied_then(make_pending),
                                   applied_then(make_unmigrated)],
                         ids=["unknown-manifest", "pending-migration", "unmigrated"])
def test_revert_refusals_say_why_and_change_nothing(b: StoreBuilder, setup,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    extra, message = setup(b)
    before = files(b.root, LOCK_FILES)

    code, out, err = run_cli(["gc", "--revert", *extra, str(b.root)], capsys)

    assert (code, out, err) == (6, "", f"distilld: {message}\n")
    assert files(b.root, LOCK_FILES) == before
    assert not (b.root / ".lock").exists()
