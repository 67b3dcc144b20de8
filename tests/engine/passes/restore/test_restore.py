"""restore PATH (STORE-FORMAT.md 1.7, 1.9, 4.5) and the short-hook writer (store/hooks.py).

Stores are built from ``healthy_store`` (persona Rowan; projects/marlin.md is archived with a
ledger line) in tmp_path, with the clock fixed at 2026-11-30T12:00:00Z. The CLI is called
in-process with its clock patched to the same instant. Crash recovery of restore is covered by
test_crash_safety.py.
"""

from __future__ import annotations

import hashlib
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import distilld.cli as cli_module
import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, MARLIN_ENTRY, StoreBuilder, healthy_store
from distilld.actions.gc import run_gc_apply
from distilld.actions.restore import render_text, run_restore
from distilld.cli import main as cli_main
from distilld.engine.passes.gc.apply import GcRefused
from distilld.engine.passes.restore.apply import RestoreOutcome
from distilld.engine.passes.restore.plan import RestoreRefused
from distilld.errors import DistilldError
from distilld.policy import load_policy
from distilld.store.catalog import render_catalog
from distilld.store.findings import fail
from distilld.store.hooks import entry_within_cap, short_entry, short_hook
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

POLICY = load_policy()
STAMP = "2026-11-30T12:00:00Z"
LATER = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)
OSPREY_ENTRY = f"- [Osprey](projects/osprey.md) {EM} exports under legal hold; pinned. Read before deleting any export."
MARLIN_ARCHIVED = b"---\nscope: Marlin reporting backfill\nlast_updated: 2026-04-01\n---\n\n# Marlin\n\n- Done.\n"
MARLIN_RESTORED = b"---\nscope: Marlin reporting backfill\nlast_updated: 2026-11-30\n---\n\n# Marlin\n\n- Done.\n"
LOCK_FILES = (".status", ".lock.takeover")
ELLIPSIS = "\u2026"


# -- helpers --------------------------------------------------------------------------------------

def clock() -> datetime:
    return FIXED_NOW


def later() -> datetime:
    return LATER


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def files(root: Path, skip: tuple[str, ...] = LOCK_FILES) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).as_posix() not in skip}


def failing(findings: list) -> list[str]:
    return [f"[{f.group}] {f.code}: {f.message}" for f in findings if f.severity == "fail"]


def ledger_lines(root: Path) -> list[str]:
    return [line for line in (root / "archive/LEDGER.md").read_text("utf-8").split("\n") if line.startswith("- ")]


def restore_line(x: str, raw: bytes, event: str = "restore", stamp: str = STAMP) -> str:
    return f"- {stamp} {event} | from: archive/{x} | to: {x} | sha256: {sha(raw)} | reason: user request"


def archive_by_hand(b: StoreBuilder, x: str, raw: bytes, entry: str,
                    stamp: str = "2026-10-01T00:00:00Z") -> StoreBuilder:
    """An archived file with its ledger line, as an earlier gc would have left it."""
    b.write(f"archive/{x}", raw)
    b.append_ledger(b.archive_line(stamp, x, entry))
    return b.rebuild_catalog()


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def section(spine: str, heading: str) -> list[str]:
    lines = spine.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


def assert_healthy(root: Path, now: datetime = FIXED_NOW) -> None:
    assert failing(check_store(take_snapshot(root), POLICY.limits)) == []
    assert (root / "CATALOG.md").read_bytes().decode() == render_catalog(take_snapshot(root), now)


@pytest.fixture
def b(tmp_path: Path) -> StoreBuilder:
    return healthy_store(tmp_path / "store")


@pytest.fixture(autouse=True)
def fixed_cli_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_module, "_now", clock)


# -- restore ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("arg", ["projects/marlin.md", "archive/projects/marlin.md"])
def test_restore_by_either_path_through_the_cli(b: StoreBuilder, arg: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert b.read("archive/projects/marlin.md") == MARLIN_ARCHIVED
    spine_before = b.read("SPINE.md").decode()
    ledger_before = b.read("archive/LEDGER.md")

    code, out, err = run_cli(["restore", arg, str(b.root)], capsys)

    assert (code, out, err) == (0, "restored projects/marlin.md\nself-check passed (C1-C3)\n", "")
    assert b.read("projects/marlin.md") == MARLIN_RESTORED
    assert not (b.root / "archive/projects/marlin.md").exists()
    assert b.read("archive/LEDGER.md") == ledger_before + (
        restore_line("projects/marlin.md", MARLIN_ARCHIVED) + "\n").encode()
    # The saved entry comes back at the end of its tier's section; nothing else in the SPINE moves.
    assert b.read("SPINE.md").decode() == spine_before.replace(OSPREY_ENTRY + "\n",
                                                               OSPREY_ENTRY + "\n" + MARLIN_ENTRY + "\n")
    assert section(b.read("SPINE.md").decode(), "## Projects") == [KESTREL_ENTRY, OSPREY_ENTRY, MARLIN_ENTRY, ""]
    assert_healthy(b.root)


def test_recall_count_drift_restores_as_restore_and_drops_the_line(b: StoreBuilder) -> None:
    drifted = MARLIN_ARCHIVED.replace(b"last_updated:", b"recall_count: 4\nlast_updated:")
    b.write("archive/projects/marlin.md", drifted)
    b.rebuild_catalog()

    outcome = run_restore(b.root, "projects/marlin.md", POLICY, clock)

    assert outcome.restored == ["projects/marlin.md"]
    assert outcome.notes == [("projects/marlin.md: differed from its ledger checksum only by recall_count; "
                             "the recall_count line was removed")]
    assert b.read("projects/marlin.md") == MARLIN_RESTORED
    assert ledger_lines(b.root)[-1] == restore_line("projects/marlin.md", drifted)
    assert_healthy(b.root)


def test_a_modified_archive_restores_as_restore_modified_with_the_observed_checksum(b: StoreBuilder) -> None:
    modified = MARLIN_ARCHIVED.replace(b"last_updated: 2026-04-01", b"last_updated: 2026-06-09") + b"- Reopened.\n"
    b.write("archive/projects/marlin.md", modified)
    b.rebuild_catalog()

    outcome = run_restore(b.root, "archive/projects/marlin.md", POLICY, clock)

    assert outcome.notes == [("projects/marlin.md: archived bytes differ from the ledger checksum; "
                             "restored anyway as 'restore (modified)'")]
    assert ledger_lines(b.root)[-1] == restore_line("projects/marlin.md", modified, "restore (modified)")
    assert b.read("projects/marlin.md") == modified.replace(b"last_updated: 2026-06-09", b"last_updated: 2026-11-30")
    assert_healthy(b.root)


def test_a_split_family_comes_back_together_one_ledger_line_each(b: StoreBuilder) -> None:
    hook = "Pelican CDC replication off the old CRM. Read when touching CRM replication."
    entry = f"- [Pelican](projects/pelican.md) + [Pelican, continued](projects/pelican-2.md) {EM} {hook}"
    b.tier("projects/pelican.md", "# Pelican\n\n- Debezium reads the CRM binlog.\n\nContinued in `projects/pelican-2.md`.\n",
           domain="project", scope="Pelican CDC", last_updated="2025-03-01")
    b.tier("projects/pelican-2.md", "## Cut-over\n\n- The CRM was retired.\n", domain="project",
           scope="Pelican CDC (continued)", last_updated="2025-03-01", split_from="projects/pelican.md")
    b.write("SPINE.md", b.read("SPINE.md").replace(KESTREL_ENTRY.encode() + b"\n",
                                                   KESTREL_ENTRY.encode() + b"\n" + entry.encode() + b"\n"))
    b.rebuild_catalog()
    originals = {x: b.read(x) for x in ("projects/pelican.md", "projects/pelican-2.md")}
    run_gc_apply(b.root, POLICY, clock)
    assert not (b.root / "projects/pelican.md").exists()
    lines_before = len(ledger_lines(b.root))

    outcome = run_restore(b.root, "archive/projects/pelican-2.md", POLICY, later)  # the child, named alone

    assert outcome.restored == ["projects/pelican.md", "projects/pelican-2.md"]
    assert ledger_lines(b.root)[lines_before:] == [
        restore_line(x, originals[x], stamp="2026-12-01T08:00:00Z") for x in ("projects/pelican.md", "projects/pelican-2.md")]
    for x, raw in originals.items():
        assert b.read(x) == raw.replace(b"last_updated: 2025-03-01", b"last_updated: 2026-12-01"), x
        assert not (b.root / f"archive/{x}").exists()
    assert entry + "\n" in b.read("SPINE.md").decode()  # one line again, parent pointer first
    assert_healthy(b.root, LATER)


@pytest.mark.parametrize(("archived", "restored"), [
    (b"---\nscope: Wren telemetry\n---\n# Wren\n\n- Wren notes.\n",
     b"---\nscope: Wren telemetry\nlast_updated: 2026-11-30\n---\n# Wren\n\n- Wren notes.\n"),
    (b"# Wren\n\n- Wren notes.\n",
     b"---\nlast_updated: 2026-11-30\n---\n# Wren\n\n- Wren notes.\n"),
    (b"# Wren\r\n\r\n- Wren notes.\r\n",
     b"---\r\nlast_updated: 2026-11-30\r\n---\r\n# Wren\r\n\r\n- Wren notes.\r\n"),
    (b"---\r\nscope: Wren telemetry\r\nlast_updated: 2025-02-03\r\n---\r\n# Wren\r\n\r\n- last_updated: 2025-01-01 in prose\r\n",
     b"---\r\nscope: Wren telemetry\r\nlast_updated: 2026-11-30\r\n---\r\n# Wren\r\n\r\n- last_updated: 2025-01-01 in prose\r\n"),
], ids=["added-when-missing", "frontmatter-created", "frontmatter-created-crlf", "replaced-crlf"])
def test_last_updated_is_set_to_the_clocks_date_keeping_line_endings(b: StoreBuilder, archived: bytes,
                                                                     restored: bytes) -> None:
    archive_by_hand(b, "projects/wren.md", archived, f"- [Wren](projects/wren.md) {EM} wren telemetry. Read for wren.")

    outcome = run_restore(b.root, "projects/wren.md", POLICY, clock)

    assert outcome.self_check == [] and outcome.notes == []
    assert b.read("projects/wren.md") == restored
    assert ledger_lines(b.root)[-1] == restore_line("projects/wren.md", archived)
    assert_healthy(b.root)


def test_a_saved_entry_over_400_bytes_becomes_a_short_entry_plus_index_detail(b: StoreBuilder) -> None:
    hook = ("Wren telemetry collector: OpenTelemetry agents, the sampling rules per service, the collector "
            "fleet sizing, the exporters to three backends, the cardinality budget, the label allow-list, "
            "drop rules for health checks, the on-call runbook and the dashboards that depend on it; owners "
            "changed twice and the retention differs per region and per tenant tier. Read when working on wren.")
    saved = f"- [Wren](projects/wren.md) {EM} {hook}"
    assert len(saved.encode()) > 400
    archived = b"---\nscope: Wren telemetry\nlast_updated: 2025-02-03\n---\n\n# Wren\n\n- Wren notes.\n"
    archive_by_hand(b, "projects/wren.md", archived, saved)

    outcome = run_restore(b.root, "projects/wren.md", POLICY, clock)

    assert outcome.notes == [("projects/wren.md: its saved SPINE entry was over the cap; a short entry was "
                             "written and the whole hook appended under Index detail")]
    wren = [line for line in b.read("SPINE.md").decode().splitlines() if "(projects/wren.md)" in line]
    assert len(wren) == 1 and len(wren[0].encode()) <= 400
    assert wren[0].startswith(f"- [Wren](projects/wren.md) {EM} ") and wren[0].endswith("Read when working on wren.")
    assert wren[0] in section(b.read("SPINE.md").decode(), "## Projects")
    assert b.read("projects/wren.md") == (archived.replace(b"2025-02-03", b"2026-11-30")
                                          + b"\n## Index detail (moved from SPINE 2026-11-30)\n\n"
                                          + hook.encode() + b"\n")
    assert_healthy(b.root)


def test_a_restore_that_fills_the_spine_to_exactly_80_lines_is_allowed(b: StoreBuilder) -> None:
    spine = b.read("SPINE.md")
    lines = spine.count(b"\n")
    b.write("SPINE.md", spine + b"".join(b"<!-- filler %d -->\n" % i for i in range(79 - lines)))
    b.rebuild_catalog()

    run_restore(b.root, "projects/marlin.md", POLICY, clock)

    assert b.read("SPINE.md").count(b"\n") == 80
    assert_healthy(b.root)


# -- refusals ----------------------------------------------------------------------------------------

def collision(b: StoreBuilder) -> tuple[str, str]:
    b.write("projects/marlin.md", "# Marlin\n\n- a stub an older client re-created\n")
    return ("projects/marlin.md",
            "projects/marlin.md already exists; restoring archive/projects/marlin.md would overwrite it. Nothing restored.")


def no_archive_event(b: StoreBuilder) -> tuple[str, str]:
    b.write("archive/projects/heron.md", "---\nlast_updated: 2025-01-01\n---\n# Heron\n")
    return ("projects/heron.md",
            "archive/projects/heron.md: the ledger's last event for projects/heron.md is not an archive; nothing restored")


def last_event_is_restore(b: StoreBuilder) -> tuple[str, str]:
    b.append_ledger(f"- 2026-10-01T00:00:00Z restore | from: archive/projects/marlin.md | to: projects/marlin.md"
                    f" | sha256: {sha(MARLIN_ARCHIVED)} | reason: user request")
    return ("archive/projects/marlin.md",
            "archive/projects/marlin.md: the ledger's last event for projects/marlin.md is not an archive; nothing restored")


def uncontained(arg: str):
    def setup(b: StoreBuilder) -> tuple[str, str]:
        return arg, f"{arg}: not a contained tier path (like projects/x.md); nothing restored"
    setup.__name__ = f"uncontained {arg}"
    return setup


def not_archived(b: StoreBuilder) -> tuple[str, str]:
    return "projects/nope.md", "archive/projects/nope.md: no such archived file; `distilld catalog --print` lists the archive"


def unmigrated(b: StoreBuilder) -> tuple[str, str]:
    b.remove("CATALOG.md")
    return "projects/marlin.md", f"{b.root.resolve()}: pre-1.2 store (no CATALOG.md); migrate it before gc or restore"


def pending_migration(b: StoreBuilder) -> tuple[str, str]:
    b.write("data/migration/20261129T100000Z/PENDING", "data/migration/20261129T100000Z/PLAN.md\n")
    return ("projects/marlin.md",
            (f"{b.root.resolve()}/data/migration/20261129T100000Z/PENDING: a store migration is PENDING; finish or "
            "revert it (migrate --finish / --revert) before gc or restore"))


def spine_full_of_lines(b: StoreBuilder) -> tuple[str, str]:
    spine = b.read("SPINE.md")
    spine += b"".join(b"<!-- filler %d -->\n" % i for i in range(80 - spine.count(b"\n")))
    b.write("SPINE.md", spine)
    grown = len(spine) + len(MARLIN_ENTRY.encode()) + 1
    return ("projects/marlin.md", (f"SPINE.md has no room for 1 more entry: it would have 81 lines and {grown} bytes "
                                  "(caps 80 and 16000); compact the SPINE first. Nothing restored."))


def spine_full_of_bytes(b: StoreBuilder) -> tuple[str, str]:
    spine = b.read("SPINE.md")
    pad = 15_950 - len(spine) - len(b"<!--  -->\n")
    spine += b"<!-- " + b"x" * pad + b" -->\n"
    assert len(spine) == 15_950
    b.write("SPINE.md", spine)
    lines = spine.count(b"\n")
    grown = 15_950 + len(MARLIN_ENTRY.encode()) + 1
    return ("projects/marlin.md", (f"SPINE.md has no room for 1 more entry: it would have {lines + 1} lines and {grown} "
                                  "bytes (caps 80 and 16000); compact the SPINE first. Nothing restored."))


REFUSALS = [collision, no_archive_event, last_event_is_restore, uncontained("../x.md"), uncontained("/etc/x.md"),
            uncontained("archive/../x.md"), uncontained("projects/../../x.md"), uncontained("projects\\x.md"),
            not_archived, unmigrated, pending_migration, spine_full_of_lines, spine_full_of_bytes]


@pytest.mark.parametrize("setup", REFUSALS, ids=[s.__name__ for s in REFUSALS])
def test_refusals_say_why_and_change_nothing(b: StoreBuilder, setup, capsys: pytest.CaptureFixture[str]) -> None:
    arg, message = setup(b)
    if (b.root / "CATALOG.md").exists():
        b.rebuild_catalog()
    before = files(b.root)

    with pytest.raises((RestoreRefused, GcRefused)) as refused:
        run_restore(b.root, arg, POLICY, clock)
    assert str(refused.value) == message
    # a PATH it cannot restore is 2; a store it may not change (a migration to finish first) is 6
    expected = 6 if isinstance(refused.value, GcRefused) else 2
    assert isinstance(refused.value, DistilldError) and refused.value.exit_code == expected

    code, out, err = run_cli(["restore", arg, str(b.root)], capsys)
    assert (code, out, err) == (expected, "", f"distilld: {message}\n")
    assert files(b.root) == before
    assert not (b.root / ".lock").exists()


def test_a_failed_self_check_is_never_reported_as_passed() -> None:
    finding = fail("C2", "spine-missing-file", "projects/x.md", "SPINE pointer to missing file: projects/x.md")
    outcome = RestoreOutcome(restored=["projects/x.md"], self_check=[finding])

    text = render_text(outcome)

    assert not outcome.ok
    assert "self-check FAILED:\n    - [C2] SPINE pointer to missing file: projects/x.md\n" in text
    assert "self-check passed" not in text


# -- legacy restore -----------------------------------------------------------------------------------

EMBER_LEGACY = (b"---\nscope: Ember carrier-rate import\narchived_from: projects/ember.md\narchived_on: 2026-05-20\n"
                b"reason: finished in May\nrecall_count: 3\n---\n\n# Ember\n\n- Carrier rates were imported nightly.\n")
EMBER_RESTORED = (b"---\nscope: Ember carrier-rate import\nrestored_from: archive/legacy/archive/projects/ember.md\n"
                  b"last_updated: 2026-11-30\n---\n\n# Ember\n\n- Carrier rates were imported nightly.\n")


@pytest.mark.parametrize("arg", ["archive/legacy/archive/projects/ember.md", "projects/ember.md"])
def test_a_legacy_restore_is_a_copy_with_the_legacy_fields_dropped(b: StoreBuilder, arg: str) -> None:
    b.write("archive/legacy/archive/projects/ember.md", EMBER_LEGACY)
    b.rebuild_catalog()
    ledger_before = b.read("archive/LEDGER.md")

    outcome = run_restore(b.root, arg, POLICY, clock)

    assert outcome.restored == ["projects/ember.md"] and outcome.self_check == []
    assert b.read("archive/legacy/archive/projects/ember.md") == EMBER_LEGACY
    assert b.read("projects/ember.md") == EMBER_RESTORED
    assert b.read("archive/LEDGER.md") == ledger_before
    projects = section(b.read("SPINE.md").decode(), "## Projects")
    assert [line for line in projects if "(projects/ember.md)" in line] == [
        (f"- [Ember carrier-rate import](projects/ember.md) {EM} restored from the legacy archive "
        "archive/legacy/archive/projects/ember.md. Read when this topic comes up.")]
    assert_healthy(b.root)


# -- the short hook writer ----------------------------------------------------------------------------

WORD_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789é—日本語🙂ü"
words = st.text(alphabet=WORD_CHARS, min_size=1, max_size=12)
clause_text = st.lists(words, min_size=1, max_size=10).map(" ".join)


def hook_from(body: list[str], read: str | None, ends: list[str]) -> str:
    parts = [c + e for c, e in zip(body, ends)]
    if read is not None:
        parts.append(read)
    return " ".join(parts)


def whole_words_of(out: str, hook: str) -> bool:
    """Every word of ``out`` is a whole word of ``hook`` (a final one may lose trailing ,;: and
    carry an ellipsis): the writer cuts between words only, never inside a character."""
    allowed = {w.rstrip(",;:.") for w in hook.split(" ")} | {"keywords"}  # the keyword list's own word
    allowed |= {w.lstrip("(") for w in allowed} | {w.rstrip(")") for w in allowed}
    for word in (w.rstrip(",;:.") for w in out.split(" ")) if out else []:
        if word in allowed or (word.endswith(ELLIPSIS) and word[:-1].rstrip(",;:.") in allowed):
            continue
        if word.endswith(ELLIPSIS) and any(w.startswith(word[:-1]) and any(
                unicodedata.east_asian_width(c) in "WF" for c in w) for w in allowed):
            continue  # a script written without spaces is cut between its characters
        return False
    return True


@pytest.mark.slow  # many examples: in the full run, not the default one
@settings(max_examples=400, deadline=None)
@given(body=st.lists(clause_text, max_size=8), read=st.one_of(st.none(), clause_text.map(lambda c: f"Read when {c}.")),
       ends=st.lists(st.sampled_from([".", ";"]), min_size=8, max_size=8), limit=st.integers(0, 420))
def test_short_hook_is_within_the_limit_cuts_at_words_and_keeps_the_read_clause(
        body: list[str], read: str | None, ends: list[str], limit: int) -> None:
    hook = hook_from(body, read, ends)

    out = short_hook(hook, limit)

    raw = out.encode("utf-8")  # strict: a half character would not encode
    assert len(raw) <= limit
    assert raw.decode("utf-8") == out
    assert whole_words_of(out, hook), (hook, limit, out)
    if read is not None and len(read.encode()) <= limit:
        assert out.endswith(read), (hook, limit, out)
    if len(hook.encode()) <= limit:
        assert out == hook
    assert short_hook(hook, limit) == out  # deterministic


@settings(max_examples=200, deadline=None)
@given(body=st.lists(clause_text, min_size=1, max_size=8), read=clause_text.map(lambda c: f"Read when {c}."),
       ends=st.lists(st.sampled_from([".", ";"]), min_size=8, max_size=8), pinned=st.booleans(),
       two_pointers=st.booleans())
def test_entry_within_cap_keeps_the_pointer_group_and_the_read_clause(
        body: list[str], read: str, ends: list[str], pinned: bool, two_pointers: bool) -> None:
    group = ("[Wren](projects/wren.md) + [Wren, continued](projects/wren-2.md)" if two_pointers
             else "[Wren](projects/wren.md)")
    hook = hook_from(body, read, ends)
    entry = f"- {group} {EM} {hook}"

    written, detail = entry_within_cap(entry, "projects/wren.md", pinned, 400, 200)

    if len(entry.encode()) <= 400:
        assert (written, detail) == (entry, "")
        return
    assert detail == hook
    assert len(written.encode()) <= 200
    assert written.startswith(f"- {group} {EM} ")
    if len(read.encode()) <= 200 - len(f"- {group} {EM} pinned ".encode()):
        assert written.endswith(read)
    assert entry_within_cap(entry, "projects/wren.md", pinned, 400, 200) == (written, detail)


def test_short_hook_on_multibyte_text_cuts_before_the_character_not_inside_it() -> None:
    # "日本語" is 9 bytes and "🙂" 4: every byte limit from 0 to the whole length is tried.
    hook = "日本語 の データ 🙂🙂 パイプライン 移行; 詳細 は 別紙. Read when 日本語 データ を 扱う."
    read = "Read when 日本語 データ を 扱う."
    assert len(read.encode()) == 41
    outputs = []
    for limit in range(len(hook.encode()) + 1):
        out = short_hook(hook, limit)
        assert len(out.encode("utf-8")) <= limit, limit
        assert whole_words_of(out, hook), (limit, out)
        if limit >= 41:
            assert out.endswith(read), (limit, out)
        outputs.append(out)
    assert outputs[41] == read  # exactly the clause's 41 bytes: nothing else fits
    assert outputs[-1] == hook  # room for everything: unchanged
    assert [short_hook(hook, limit) for limit in range(len(outputs))] == outputs  # deterministic


def test_short_entry_keeps_the_group_and_stays_within_the_limit() -> None:
    group = "[Wren](projects/wren.md) + [Wren, continued](projects/wren-2.md)"
    hook = ("Wren telemetry collector; sampling rules per service; the exporters to three backends; the "
            "cardinality budget and label allow-list. Read when working on wren.")

    for limit in (120, 150, 200):
        out = short_entry(group, hook, limit)
        assert out.startswith(f"- {group} {EM} "), out
        assert len(out.encode()) <= limit, out
        assert out.endswith("Read when working on wren."), out
        assert whole_words_of(out[len(f"- {group} {EM} "):], hook), out
        pinned = short_entry(group, hook, limit, ("pinned",))
        assert len(pinned.encode()) <= limit and "pinned" in pinned, pinned
        assert pinned.endswith("Read when working on wren."), pinned


OSPREY_LONG_HOOK = ("Osprey exports for the finance team; nightly to the warehouse, weekly to legal; retention is seven "
                    "years per the 2024 audit; schema owned by the finance platform group; legal hold, pinned until "
                    "the audit closes; the exporter retries three times then pages. Read before deleting any export.")


def test_a_short_entry_for_a_pinned_file_still_says_pinned() -> None:
    """STORE-FORMAT 1.3: the word "pinned" is echoed in the hook of a pinned file's entry. Here the
    long hook says "pinned" only in a clause the shortening drops."""
    entry = f"- [Osprey](projects/osprey.md) {EM} {OSPREY_LONG_HOOK}"
    assert len(entry.encode()) > 200

    written, detail = entry_within_cap(entry, "projects/osprey.md", True, 200, 200)

    assert detail == OSPREY_LONG_HOOK
    assert len(written.encode()) <= 200 and written.endswith("Read before deleting any export.")
    assert "pinned" in written, written


def test_restoring_a_pinned_file_with_a_long_saved_entry_keeps_pinned_in_its_entry(b: StoreBuilder) -> None:
    entry = (f"- [Tern](projects/tern.md) {EM} " + OSPREY_LONG_HOOK.replace("Osprey", "Tern").replace(
        "then pages.", "then pages; the quarterly close and the auditors' sample pulls read it; the CFO's office "
        "owns the retention calendar."))
    assert len(entry.encode()) > 400
    archived = b"---\nscope: Tern exports\nlifecycle: pinned\nlast_updated: 2025-02-03\n---\n\n# Tern\n"
    archive_by_hand(b, "projects/tern.md", archived, entry)

    run_restore(b.root, "projects/tern.md", POLICY, clock)

    tern = [line for line in b.read("SPINE.md").decode().splitlines() if "(projects/tern.md)" in line]
    assert len(tern) == 1 and len(tern[0].encode()) <= 400
    assert "pinned" in tern[0], tern[0]


# -- restore never finishes over the SPINE budget ---------------------------------------------------

def near_full_bytes(b: StoreBuilder, ending: bytes, final_newline: bool) -> None:
    """A SPINE with exactly room for Marlin's saved entry plus one LF: 16000 - len(entry) - 1 bytes."""
    spine = b.read("SPINE.md").replace(b"\n", ending)
    target = 16_000 - len(MARLIN_ENTRY.encode()) - 1
    tail = ending if final_newline else b""
    spine += b"<!-- " + b"x" * (target - len(spine) - len(b"<!--  -->" + tail)) + b" -->" + tail
    assert len(spine) == target
    b.write("SPINE.md", spine)


def crlf_spine(b: StoreBuilder) -> None:
    near_full_bytes(b, b"\r\n", True)


def spine_without_final_newline(b: StoreBuilder) -> None:
    near_full_bytes(b, b"\n", False)


def no_projects_heading_at_79_lines(b: StoreBuilder) -> None:
    spine = b.read("SPINE.md").replace(b"## Projects\n", b"## Work\n")
    b.write("SPINE.md", spine + b"".join(b"<!-- filler %d -->\n" % i for i in range(79 - spine.count(b"\n"))))


@pytest.mark.parametrize("setup", [crlf_spine, spine_without_final_newline, no_projects_heading_at_79_lines],
                         ids=["crlf-bytes", "no-final-newline-bytes", "new-heading-lines"])
def test_a_restore_never_finishes_with_the_spine_over_budget(b: StoreBuilder, setup) -> None:
    """STORE-FORMAT 4.5 step 5: "A restore never finishes with the SPINE over budget." The store is
    within 16,000 bytes and 80 lines before; the restore must refuse (changing nothing) or end
    within both caps."""
    setup(b)
    b.rebuild_catalog()
    assert failing(check_store(take_snapshot(b.root), POLICY.limits)) == []
    before = files(b.root)

    try:
        outcome = run_restore(b.root, "projects/marlin.md", POLICY, clock)
    except RestoreRefused:
        assert files(b.root) == before
        return
    spine = b.read("SPINE.md")
    assert len(spine) <= 16_000 and spine.replace(b"\r", b"").count(b"\n") + (not spine.endswith(b"\n")) <= 80
    assert outcome.self_check == [], failing(outcome.self_check)


def test_the_saved_entry_is_unescaped_when_re_added(b: StoreBuilder) -> None:
    archived = b"---\nscope: Wren telemetry\nlast_updated: 2025-02-03\n---\n# Wren\n"
    archive_by_hand(b, "projects/wren.md", archived,
                    f"- [Wren](projects/wren.md) {EM} agents \\| collectors. Read for wren.")

    run_restore(b.root, "projects/wren.md", POLICY, clock)

    assert f"- [Wren](projects/wren.md) {EM} agents | collectors. Read for wren.\n" in b.read("SPINE.md").decode()
    assert_healthy(b.root)


@pytest.mark.parametrize(("legacy", "restored"), [
    (EMBER_LEGACY.replace(b"\n", b"\r\n"), EMBER_RESTORED.replace(b"\n", b"\r\n")),
    (b"# Ember\n\n- Carrier rates were imported nightly.\n",
     (b"---\nrestored_from: archive/legacy/archive/projects/ember.md\nlast_updated: 2026-11-30\n---\n"
     b"# Ember\n\n- Carrier rates were imported nightly.\n")),
], ids=["crlf", "no-frontmatter"])
def test_a_legacy_restore_keeps_line_endings_and_creates_frontmatter(b: StoreBuilder, legacy: bytes,
                                                                     restored: bytes) -> None:
    b.write("archive/legacy/archive/projects/ember.md", legacy)
    b.rebuild_catalog()

    run_restore(b.root, "projects/ember.md", POLICY, clock)

    assert b.read("projects/ember.md") == restored
    assert b.read("archive/legacy/archive/projects/ember.md") == legacy
    assert_healthy(b.root)


def test_a_legacy_restore_onto_an_existing_file_is_refused(b: StoreBuilder) -> None:
    b.write("archive/legacy/archive/projects/ember.md", EMBER_LEGACY)
    b.tier("projects/ember.md", "# Ember\n", domain="project", last_updated="2026-11-01")
    b.write("SPINE.md", b.read("SPINE.md") + f"- [Ember](projects/ember.md) {EM} ember. Read for ember.\n".encode())
    b.rebuild_catalog()
    before = files(b.root)

    with pytest.raises(RestoreRefused) as refused:
        run_restore(b.root, "archive/legacy/archive/projects/ember.md", POLICY, clock)

    assert str(refused.value) == ("projects/ember.md (or archive/projects/ember.md) already exists; "
                                  "nothing restored")
    assert files(b.root) == before


def test_an_edit_after_a_killed_restore_step_is_kept_and_the_restore_finished(tmp_path: Path) -> None:
    """A kill after the file came back (its step marked), before the stamp; then the distiller
    edited SPINE.md and the file: the recovery stamps the file and adds the entry on the files as
    they now are, and both edits stay."""
    from distilld.actions.passes import locked_pass
    from distilld.engine.passes.restore.plan import plan_restore, restore_steps
    from distilld.engine.journal import new_journal
    from distilld.engine.recovery import finish_interrupted

    root = tmp_path / "store"
    healthy_store(root)
    snapshot = take_snapshot(root)
    members = plan_restore(snapshot, "projects/marlin.md", POLICY.limits)
    steps = restore_steps(snapshot, members, "2026-11-30", POLICY.limits.spine.entry_max_bytes)
    journal = new_journal(root / "data/restore-journals", "restore", FIXED_NOW, STAMP, steps)
    journal.create()
    with (root / "archive/LEDGER.md").open("a") as ledger:  # the first step, done and marked before the kill
        ledger.write(restore_line("projects/marlin.md", MARLIN_ARCHIVED) + "\n")
    (root / "archive/projects/marlin.md").rename(root / "projects/marlin.md")
    journal.mark(0)
    (root / "projects/marlin.md").write_bytes(MARLIN_ARCHIVED + b"- An edit made after the kill.\n")
    (root / "SPINE.md").write_bytes((root / "SPINE.md").read_bytes() + b"<!-- an edit after the kill -->\n")

    with locked_pass(root, POLICY, clock) as ctx:
        finish_interrupted(ctx)
    assert (root / "projects/marlin.md").read_bytes() == MARLIN_RESTORED + b"- An edit made after the kill.\n"
    spine = (root / "SPINE.md").read_text("utf-8")
    assert MARLIN_ENTRY in spine and "<!-- an edit after the kill -->" in spine
    assert len([line for line in ledger_lines(root) if " restore | from: archive/projects/marlin.md" in line]) == 1


def test_a_file_over_its_caps_is_restored_and_the_breach_reported(tmp_path: Path) -> None:
    root = tmp_path / "store"
    big = MARLIN_ARCHIVED + b"".join(f"- line {n} of a long file.\n".encode() for n in range(80))
    b = healthy_store(root)
    b.write("archive/projects/marlin.md", big)
    b.rebuild_catalog()
    outcome = run_restore(root, "projects/marlin.md", POLICY, clock)
    assert outcome.restored == ["projects/marlin.md"]
    assert (root / "projects/marlin.md").exists() and not (root / "archive/projects/marlin.md").exists()
    assert any(f.path == "projects/marlin.md" for f in outcome.self_check + outcome.still_over_budget)



def test_a_restore_asked_for_again_is_answered_as_done_and_changes_nothing(tmp_path: Path) -> None:
    """The second `restore X` (the first finished, or a kill's recovery finished it) finds X back,
    its last ledger event a restore: exit 0, a note that says so, not a byte changed."""
    root = tmp_path / "store"
    healthy_store(root)
    first = run_restore(root, "projects/marlin.md", POLICY, clock)
    assert first.restored == ["projects/marlin.md"] and first.ok
    after_first = files(root)
    again = run_restore(root, "archive/projects/marlin.md", POLICY, later)
    assert again.restored == [] and again.ok
    assert any("projects/marlin.md is back already" in note for note in again.notes), again.notes
    assert files(root) == after_first
    assert cli_main(["restore", "projects/marlin.md", str(root)]) == 0
    assert files(root) == after_first


@pytest.mark.slow
def test_a_restore_asked_again_after_a_kill_past_its_move_reports_the_restore_it_finished(tmp_path: Path) -> None:
    """Killed after the file came back and was stamped, before the SPINE pointed at it: asked again,
    the recovery writes only the SPINE. The report used to look for the file among the recovery's
    writes alone, and said both "finished an interrupted restore" and "back already; nothing to do"."""
    import os
    import subprocess
    import sys

    root = tmp_path / "store"
    healthy_store(root)
    restore = [sys.executable, "-m", "distilld", "restore", "projects/marlin.md", str(root)]
    killed = subprocess.run(restore, env={**os.environ, "DISTILLD_CRASH_AT": "step-marked:2"},
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert (root / "projects/marlin.md").exists() and MARLIN_ENTRY not in (root / "SPINE.md").read_text()

    again = subprocess.run(restore, capture_output=True, text=True, timeout=300)

    assert again.returncode == 0, again.stdout + again.stderr
    assert "back already" not in again.stdout + again.stderr
    assert "restored projects/marlin.md" in again.stdout, again.stdout
    assert MARLIN_ENTRY in (root / "SPINE.md").read_text()
