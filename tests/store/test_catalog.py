"""The canonical CATALOG.md rebuild (STORE-FORMAT.md 1.8) and `refresh_catalog`.

Rows, order, escaping and the ``rebuilt:`` stamp are compared as exact text: the catalog is
shared between machines and every client must produce the same bytes from the same tree.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, StoreBuilder, healthy_store

from distilld.actions.catalog import refresh_catalog
from distilld.errors import DistilldError
from distilld.store.catalog import render_catalog
from distilld.store.invariants import check_c2
from distilld.store.snapshot import take_snapshot
from distilld.store.text import sha256_hex, sha256_norm_hex

UTC = timezone.utc
INSTALL_CLOCK = datetime(2026, 9, 23, 10, 0, 0, tzinfo=UTC)
INSTALLER_SPINE = (
    "# Distill Knowledge Index\n\n<!-- managed -->\n\n"
    "- [Catalog](CATALOG.md) \u2014 complete inventory; not loaded at start.\n"
)
INSTALLER_CATALOG = (
    "# Knowledge catalog\n\n<!-- Complete inventory, rebuilt by /distill. Not loaded at session start. "
    "rebuilt: 2026-09-23T10:00:00Z -->\n\n## active\n\n## archived\n\n## evidence\n"
)
HEADER = (
    "# Knowledge catalog\n\n<!-- Complete inventory, rebuilt by /distill. Not loaded at session start. "
    "rebuilt: {stamp} -->\n\n"
)
STAMP_RE = re.compile(r"rebuilt: (\S+) -->")


# -- helpers ----------------------------------------------------------------------------------
def render(root: Path, now: datetime = FIXED_NOW) -> str:
    return render_catalog(take_snapshot(root), now)


def section(catalog: str, name: str) -> list[str]:
    """The row lines of one ``## name`` section."""
    lines = catalog.split("\n")
    start = lines.index(f"## {name}") + 1
    rows: list[str] = []
    for line in lines[start:]:
        if line.startswith("## "):
            break
        if line:
            rows.append(line)
    return rows


def rebuilt(catalog: str) -> str:
    match = STAMP_RE.search(catalog)
    assert match, catalog
    return match.group(1)


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def bare_store(root: Path) -> StoreBuilder:
    """An installer-shaped store: the SPINE with its catalog line and the empty catalog."""
    return StoreBuilder(root).write("SPINE.md", INSTALLER_SPINE).write("CATALOG.md", INSTALLER_CATALOG)


def archive_line(b: StoreBuilder, stamp: str, tier_path: str, entry: str, reason: str | None = "stale") -> str:
    raw = b.read("archive/" + tier_path)
    line = (
        f"- {stamp} archive | from: {tier_path} | to: archive/{tier_path} | sha256: {sha256_hex(raw)}"
        f" | sha256-norm: {sha256_norm_hex(raw)}"
    )
    if reason is not None:
        line += f" | reason: {reason}"
    return line + f" | spine-entry: {entry}"


def c2_messages(root: Path) -> list[str]:
    return [f.message for f in check_c2(take_snapshot(root))]


# -- the empty installer-shaped store ------------------------------------------------------------
def test_installer_shaped_store_renders_the_exact_installer_catalog(tmp_path: Path) -> None:
    StoreBuilder(tmp_path).write("SPINE.md", INSTALLER_SPINE)
    assert render(tmp_path, INSTALL_CLOCK) == INSTALLER_CATALOG


def test_installer_catalog_is_a_fixed_point(tmp_path: Path) -> None:
    bare_store(tmp_path)
    assert render(tmp_path, INSTALL_CLOCK) == INSTALLER_CATALOG
    outcome = refresh_catalog(tmp_path, INSTALL_CLOCK)
    assert outcome.written is False
    assert (tmp_path / "CATALOG.md").read_bytes() == INSTALLER_CATALOG.encode()


# -- the whole healthy store -------------------------------------------------------------------------
def test_healthy_store_catalog_exact_text(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    assert render(tmp_path) == HEADER.format(stamp="2026-11-30T12:00:00Z") + (
        "## active\n"
        "- craft/testing-2.md | Testing discipline (continued) | validated 2026-09-20\n"
        "- craft/testing.md | Testing discipline for Rowan's pipelines | validated 2026-09-20\n"
        "- feedback/preferences.md | Output preferences | oversize: one table that cannot be split\n"
        "- ops/deploy.md | Deploy procedure \\| canary and soak | validated 2026-08-25\n"
        "- profile/rowan.md | Who Rowan is and how they work | validated 2026-10-02\n"
        "- projects/kestrel.md | Kestrel ingest pipeline | validated 2026-11-02\n"
        "- projects/osprey.md | Osprey exports under legal hold | validated 2026-02-01 | pinned\n"
        "\n"
        "## archived\n"
        "- archive/old-notes.md | Old notes rewritten by an early compaction | legacy\n"
        "- archive/projects/marlin.md | Marlin reporting backfill | archived 2026-09-11 | reason: past threshold"
        " | from projects/marlin.md | hook: Marlin reporting backfill, finished in spring."
        " Read when asked about the old reports.\n"
        "\n"
        "## evidence\n"
        "- evidence/craft/testing.md | for craft/testing.md | 2 entries\n"
        "- evidence/projects/marlin.md | for projects/marlin.md | 1 entries\n"
    )


# -- active rows ------------------------------------------------------------------------------------
ACTIVE_CASES = [
    pytest.param({"scope": "Kestrel ingest", "last_updated": "2026-10-01"}, "# Heading\n",
                 "- projects/x.md | Kestrel ingest | validated 2026-10-01", id="scope-from-frontmatter"),
    pytest.param({"last_updated": "2026-10-01"}, "intro line\n### Deep heading\n# Later heading\n",
                 "- projects/x.md | Deep heading | validated 2026-10-01", id="scope-from-first-heading"),
    pytest.param({"domain": "project"}, "no heading here\n- just a bullet\n",
                 "- projects/x.md | (no scope)", id="no-scope-undated"),
    pytest.param({}, "plain text only\n", "- projects/x.md | (no scope)", id="no-frontmatter-at-all"),
    pytest.param({"scope": "S", "last_updated": "2026-08-01", "last_validated": "2026-07-01"},
                 "- [PRINCIPLE] p\n  confidence: validated (2 confirmations, 0 corrections)\n"
                 "  last_validated: 2026-09-15\n- [PRINCIPLE] q\n  last_validated: 2026-09-02\n",
                 "- projects/x.md | S | validated 2026-09-15", id="newest-stamp-per-principle"),
    pytest.param({"scope": "S", "last_updated": "2026-08-01", "last_validated": "2026-10-11"},
                 "- [PRINCIPLE] p\n  last_validated: 2026-09-15\n",
                 "- projects/x.md | S | validated 2026-10-11", id="newest-stamp-frontmatter"),
    pytest.param({"scope": "S", "lifecycle": "pinned"}, "# X\n",
                 "- projects/x.md | S | pinned", id="pinned-undated"),
    pytest.param({"scope": "S", "oversize": "one atomic table"}, "# X\n",
                 "- projects/x.md | S | oversize: one atomic table", id="oversize"),
    pytest.param({"scope": "S", "last_updated": "2026-01-05", "lifecycle": "pinned", "oversize": "big table"}, "",
                 "- projects/x.md | S | validated 2026-01-05 | pinned | oversize: big table", id="all-fields"),
]


@pytest.mark.parametrize(("frontmatter", "body", "row"), ACTIVE_CASES)
def test_active_row_forms(tmp_path: Path, frontmatter: dict[str, str], body: str, row: str) -> None:
    bare_store(tmp_path).tier("projects/x.md", body, **frontmatter)
    assert section(render(tmp_path), "active") == [row]


def test_crlf_tier_file_reads_like_lf(tmp_path: Path) -> None:
    bare_store(tmp_path).write(
        "projects/x.md", "---\r\nscope: Crlf scope\r\nlast_updated: 2026-03-04\r\nlifecycle: pinned\r\n---\r\n# X\r\n")
    assert section(render(tmp_path), "active") == ["- projects/x.md | Crlf scope | validated 2026-03-04 | pinned"]


@pytest.mark.parametrize(("scope", "escaped"), [
    ("Deploy | canary", "Deploy \\| canary"),
    ("Deploy \\| canary", "Deploy \\| canary"),
    ("a|b \\| c | d", "a\\|b \\| c \\| d"),
    ("|edge|", "\\|edge\\|"),
])
def test_pipe_in_scope_is_escaped_once(tmp_path: Path, scope: str, escaped: str) -> None:
    bare_store(tmp_path).tier("ops/x.md", "# X\n", scope=scope)
    assert section(render(tmp_path), "active") == [f"- ops/x.md | {escaped}"]


def test_pipe_in_a_heading_scope_is_escaped(tmp_path: Path) -> None:
    bare_store(tmp_path).tier("ops/x.md", "## Deploy | canary\n")
    assert section(render(tmp_path), "active") == ["- ops/x.md | Deploy \\| canary"]


# -- archived rows ------------------------------------------------------------------------------------
HERON_ENTRY = f"- [Heron](projects/heron.md) {EM} Heron feeds a\\|b split; read when replaying feeds."


def heron_store(root: Path) -> StoreBuilder:
    b = bare_store(root)
    b.tier("archive/projects/heron.md", "# Heron\n\n- Feeds.\n", scope="Heron feeds", last_updated="2026-05-01")
    first = archive_line(b, "2026-06-01", "projects/heron.md", f"- [Heron](projects/heron.md) {EM} old hook", "first")
    restore = ("- 2026-07-01T08:00:00Z restore | from: archive/projects/heron.md | to: projects/heron.md"
               f" | sha256: {sha256_hex(b.read('archive/projects/heron.md'))} | reason: user request")
    second = archive_line(b, "2026-10-05T09:00:00Z", "projects/heron.md", HERON_ENTRY, "second \\| again")
    b.ledger([first, restore, second])
    return b


def test_ledgered_row_uses_the_last_archive_line(tmp_path: Path) -> None:
    heron_store(tmp_path)
    assert section(render(tmp_path), "archived") == [
        "- archive/projects/heron.md | Heron feeds | archived 2026-10-05 | reason: second \\| again"
        " | from projects/heron.md | hook: Heron feeds a\\|b split; read when replaying feeds."
    ]


def test_ledgered_row_without_reason_and_with_double_dash_hook(tmp_path: Path) -> None:
    b = bare_store(tmp_path)
    b.tier("archive/projects/heron.md", "# Heron\n", scope="Heron feeds")
    b.ledger([archive_line(b, "2026-06-01T10:00:00Z", "projects/heron.md",
                           "- [Heron](projects/heron.md) -- Heron hook text   ", None)])
    assert section(render(tmp_path), "archived") == [
        "- archive/projects/heron.md | Heron feeds | archived 2026-06-01 | from projects/heron.md | hook: Heron hook text"
    ]


def test_hook_of_a_merged_line_drops_the_whole_leading_pointer_group(tmp_path: Path) -> None:
    b = bare_store(tmp_path)
    b.tier("archive/projects/heron.md", "# Heron\n", scope="Heron feeds")
    b.ledger([archive_line(b, "2026-06-01T10:00:00Z", "projects/heron.md",
                           f"- [Heron](projects/heron.md) + [Heron, continued](projects/heron-2.md) {EM} shared hook")])
    assert section(render(tmp_path), "archived")[0].endswith(" | from projects/heron.md | hook: shared hook")


def test_legacy_and_pending_rows(tmp_path: Path) -> None:
    b = bare_store(tmp_path)
    b.write("archive/old-notes.md", "# Old notes | rewritten\n")
    b.write("archive/legacy/archive/projects/ember.md", "---\narchived_from: projects/ember.md\nrecall_count: 3\n"
            "---\n\n# Ember (finished 2026-05)\n")
    b.write("archive/legacy/craft/archive/y.md", "no heading\n")
    b.write("archive/projects/gannet.md", "---\nscope: Gannet exports\nlast_updated: 2026-01-01\n---\n")
    b.ledger([])
    assert section(render(tmp_path), "archived") == [
        "- archive/legacy/archive/projects/ember.md | Ember (finished 2026-05) | legacy",
        "- archive/legacy/craft/archive/y.md | (no scope) | legacy",
        "- archive/old-notes.md | Old notes \\| rewritten | legacy",
        "- archive/projects/gannet.md | Gannet exports",
    ]


def test_pending_row_without_any_ledger(tmp_path: Path) -> None:
    bare_store(tmp_path).write("archive/projects/gannet.md", "# Gannet\n")
    assert section(render(tmp_path), "archived") == ["- archive/projects/gannet.md | Gannet"]


def test_files_named_ledger_are_not_archive_files(tmp_path: Path) -> None:
    b = heron_store(tmp_path)
    b.write("archive/projects/LEDGER.md", "# not an archived file\n")
    b.write("archive/legacy/LEDGER.md", "# nor this\n")
    assert [r.split(" | ")[0] for r in section(render(tmp_path), "archived")] == ["- archive/projects/heron.md"]


# -- evidence rows -------------------------------------------------------------------------------------
def test_evidence_row_counts_dash_lines(tmp_path: Path) -> None:
    b = bare_store(tmp_path)
    b.write("evidence/projects/kestrel.md",
            "---\nevidence_for: projects/kestrel.md\n---\n## Evidence log\n\n- 2026-01-01 confirm: a\n"
            "  - indented, not an entry\n-not an entry either\n- 2026-01-02 correct: b\n- 2026-01-03 observe: c\n")
    b.write("evidence/craft/crlf.md", "---\r\nevidence_for: craft/crlf.md\r\n---\r\n- 2026-01-01 confirm: a\r\n")
    b.write("evidence/ops/empty.md", "---\nevidence_for: ops/empty.md\n---\n")
    assert section(render(tmp_path), "evidence") == [
        "- evidence/craft/crlf.md | for craft/crlf.md | 1 entries",
        "- evidence/ops/empty.md | for ops/empty.md | 0 entries",
        "- evidence/projects/kestrel.md | for projects/kestrel.md | 3 entries",
    ]


# -- file sets and order ---------------------------------------------------------------------------------
def test_only_tier_archive_and_evidence_markdown_is_cataloged(tmp_path: Path) -> None:
    b = bare_store(tmp_path)
    b.tier("projects/sub/deep.md", "# Deep\n")
    b.write("craft/archive/old.md", "# nested legacy archive\n")
    b.write("craft/notes.txt", "not markdown\n")
    b.write("local/SPINE.md", "# local\n").write("local/mine.md", "# mine\n")
    b.write("inbox/20261130T120000Z-abcd-item.md", "---\norigin: user-explicit\n---\nremember\n")
    b.write("data/migration/x/backup/craft/a.md", "# backup\n")
    assert render(tmp_path).endswith("## active\n- projects/sub/deep.md | Deep\n\n## archived\n\n## evidence\n")


def test_rows_sort_in_byte_order(tmp_path: Path) -> None:
    b = bare_store(tmp_path)
    for name in ("alpha", "a_b", "a", "a-b", "Zeta", "\u00e9t\u00e9", "B"):
        b.tier(f"projects/{name}.md", "# T\n")
    b.tier("craft/z.md", "# T\n").tier("ops/a.md", "# T\n").tier("feedback/a.md", "# T\n")
    paths = [row.split(" | ")[0][2:] for row in section(render(tmp_path), "active")]
    assert paths == [
        "craft/z.md", "feedback/a.md", "ops/a.md",
        "projects/B.md", "projects/Zeta.md", "projects/a-b.md", "projects/a.md", "projects/a_b.md",
        "projects/alpha.md", "projects/\u00e9t\u00e9.md",
    ]


def test_archived_and_evidence_rows_sort_in_byte_order(tmp_path: Path) -> None:
    b = bare_store(tmp_path)
    for rel in ("archive/projects/b.md", "archive/legacy/z.md", "archive/Old.md", "archive/old-notes.md",
                "archive/old.md"):
        b.write(rel, "# T\n")
    for rel in ("evidence/projects/a.md", "evidence/craft/b-2.md", "evidence/craft/b.md"):
        b.write(rel, f"---\nevidence_for: {rel[len('evidence/'):]}\n---\n")
    catalog = render(tmp_path)
    assert [r.split(" | ")[0][2:] for r in section(catalog, "archived")] == [
        "archive/Old.md", "archive/legacy/z.md", "archive/old-notes.md", "archive/old.md", "archive/projects/b.md"]
    assert [r.split(" | ")[0][2:] for r in section(catalog, "evidence")] == [
        "evidence/craft/b-2.md", "evidence/craft/b.md", "evidence/projects/a.md"]


# -- the rebuilt: stamp ------------------------------------------------------------------------------------
def test_rebuilt_is_the_injected_clock_in_utc(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    plus_one = timezone(timedelta(hours=1))
    assert rebuilt(render(tmp_path, datetime(2026, 11, 30, 13, 0, 5, tzinfo=plus_one))) == "2026-11-30T12:00:05Z"


def test_rebuilt_never_earlier_than_a_newer_ledger_stamp(tmp_path: Path) -> None:
    # Another machine's clock ran ahead: its ledger line is later than this machine's "now".
    b = healthy_store(tmp_path)
    b.append_ledger("- 2026-12-01T09:30:15Z restore | from: archive/projects/none.md | to: projects/none.md"
                    " | reason: user request")
    catalog = render(tmp_path, FIXED_NOW)
    assert rebuilt(catalog) == "2026-12-01T09:30:15Z"


def test_rebuilt_from_a_minutes_only_ledger_stamp_is_a_full_timestamp(tmp_path: Path) -> None:
    # 1.2: new clients write full timestamps (%Y-%m-%dT%H:%M:%SZ) in the catalog rebuilt: stamp.
    b = healthy_store(tmp_path)
    b.append_ledger("- 2026-12-01T09:30Z restore | from: archive/projects/none.md | to: projects/none.md"
                    " | reason: user request")
    assert rebuilt(render(tmp_path, FIXED_NOW)) == "2026-12-01T09:30:00Z"


def test_rebuilt_not_earlier_than_a_later_date_only_ledger_stamp(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger("- 2026-12-03 restore | from: archive/projects/none.md | to: projects/none.md | reason: x")
    stamp = rebuilt(render(tmp_path, FIXED_NOW))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
    assert stamp[:10] >= "2026-12-03"
    refresh_catalog(tmp_path, FIXED_NOW)
    assert not [m for m in c2_messages(tmp_path) if m.startswith("catalog stale")]


def test_rebuilt_is_the_clock_when_the_ledger_is_older(tmp_path: Path) -> None:
    healthy_store(tmp_path)  # its ledger line is 2026-09-11T08:00:00Z
    assert rebuilt(render(tmp_path, FIXED_NOW)) == "2026-11-30T12:00:00Z"


# -- determinism ------------------------------------------------------------------------------------------
def test_same_store_same_clock_same_bytes(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    assert render(tmp_path) == render(tmp_path)


def test_different_clock_changes_only_the_stamp(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    first, second = render(tmp_path, FIXED_NOW), render(tmp_path, FIXED_NOW + timedelta(days=3, seconds=7))
    assert first != second
    assert rebuilt(second) == "2026-12-03T12:00:07Z"
    assert first.replace("2026-11-30T12:00:00Z", "STAMP") == second.replace("2026-12-03T12:00:07Z", "STAMP")


def test_creation_order_does_not_matter(tmp_path: Path) -> None:
    names = [f"projects/p{i}.md" for i in range(12)] + ["craft/a.md", "ops/b.md"]
    for root, order in ((tmp_path / "one", names), (tmp_path / "two", list(reversed(names)))):
        b = bare_store(root)
        for name in order:
            b.tier(name, "# T\n", scope=name, last_updated="2026-01-01")
    assert render(tmp_path / "one") == render(tmp_path / "two")


# -- refresh_catalog ----------------------------------------------------------------------------------------
def test_write_creates_the_catalog_of_a_new_store(tmp_path: Path) -> None:
    StoreBuilder(tmp_path).write("SPINE.md", INSTALLER_SPINE)
    outcome = refresh_catalog(tmp_path, INSTALL_CLOCK)
    assert outcome.written is True
    assert tree(tmp_path) == {"SPINE.md": INSTALLER_SPINE.encode(), "CATALOG.md": INSTALLER_CATALOG.encode()}


def test_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.tier("projects/new.md", "# New\n", scope="New project", last_updated="2026-11-29")
    before = set(tree(tmp_path))
    outcome = refresh_catalog(tmp_path, FIXED_NOW)
    assert outcome.written is True
    assert set(tree(tmp_path)) == before
    assert (tmp_path / "CATALOG.md").read_text("utf-8") == render(tmp_path)


def test_write_is_atomic_when_the_final_rename_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b = healthy_store(tmp_path)
    b.tier("projects/new.md", "# New\n", scope="New project", last_updated="2026-11-29")
    old = tree(tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", refuse)
    monkeypatch.setattr(os, "rename", refuse)
    with pytest.raises(OSError):
        refresh_catalog(tmp_path, FIXED_NOW)
    monkeypatch.undo()
    assert tree(tmp_path) == old  # the old catalog intact, no half-written or temporary file


def test_write_leaves_the_file_untouched_when_only_the_stamp_would_change(tmp_path: Path) -> None:
    healthy_store(tmp_path)
    catalog = tmp_path / "CATALOG.md"
    old_bytes = catalog.read_bytes()
    os.utime(catalog, ns=(1_000_000_000, 1_000_000_000))
    outcome = refresh_catalog(tmp_path, FIXED_NOW + timedelta(days=2))
    assert outcome.written is False
    assert catalog.read_bytes() == old_bytes
    assert catalog.stat().st_mtime_ns == 1_000_000_000


def test_write_rewrites_when_a_file_was_added(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.tier("projects/new.md", "# New\n", scope="New project", last_updated="2026-11-29")
    later = FIXED_NOW + timedelta(hours=1)
    outcome = refresh_catalog(tmp_path, later)
    assert outcome.written is True
    written = (tmp_path / "CATALOG.md").read_text("utf-8")
    assert written == render(tmp_path, later)
    assert "- projects/new.md | New project | validated 2026-11-29\n" in written
    assert rebuilt(written) == "2026-11-30T13:00:00Z"


def test_write_rewrites_when_a_file_was_removed(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.remove("evidence/projects/marlin.md")
    assert refresh_catalog(tmp_path, FIXED_NOW).written is True
    assert "evidence/projects/marlin.md" not in (tmp_path / "CATALOG.md").read_text("utf-8")


def test_write_rewrites_when_a_ledger_line_is_newer_than_rebuilt(tmp_path: Path) -> None:
    # Another machine archived and restored kestrel: the tree and every row are as they were,
    # but the ledger is newer than the catalog, so the catalog is stale (1.8).
    b = healthy_store(tmp_path)
    sha = sha256_hex(b.read("projects/kestrel.md"))
    b.append_ledger(f"- 2026-12-01T08:00:00Z archive | from: projects/kestrel.md | to: archive/projects/kestrel.md"
                    f" | sha256: {sha} | reason: stale | spine-entry: {KESTREL_ENTRY}")
    b.append_ledger(f"- 2026-12-01T08:05:00Z restore | from: archive/projects/kestrel.md | to: projects/kestrel.md"
                    f" | sha256: {sha} | reason: user request")
    assert "catalog stale: rebuilt 2026-11-30T12:00:00Z but newest ledger event is 2026-12-01T08:05:00Z" in \
        c2_messages(tmp_path)
    later = datetime(2026, 12, 2, 0, 0, 0, tzinfo=UTC)
    outcome = refresh_catalog(tmp_path, later)
    assert outcome.written is True
    assert rebuilt((tmp_path / "CATALOG.md").read_text("utf-8")) == "2026-12-02T00:00:00Z"
    assert c2_messages(tmp_path) == []


def test_write_keeps_the_catalog_when_the_ledger_is_older_than_rebuilt(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger("- 2026-11-30T11:00:00Z restore | from: archive/projects/none.md | to: projects/none.md"
                    " | reason: user request")
    old = b.read("CATALOG.md")
    assert refresh_catalog(tmp_path, FIXED_NOW + timedelta(days=1)).written is False
    assert b.read("CATALOG.md") == old


def test_crlf_catalog_stays_crlf_when_rewritten(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("CATALOG.md", b.read("CATALOG.md").replace(b"\n", b"\r\n"))
    b.tier("projects/new.md", "# New\n", scope="New project", last_updated="2026-11-29")
    assert refresh_catalog(tmp_path, FIXED_NOW).written is True
    assert b.read("CATALOG.md") == render(tmp_path).replace("\n", "\r\n").encode()


def test_crlf_catalog_current_apart_from_stamp_is_left_alone(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    crlf = b.read("CATALOG.md").replace(b"\n", b"\r\n")
    b.write("CATALOG.md", crlf)
    assert refresh_catalog(tmp_path, FIXED_NOW + timedelta(days=1)).written is False
    assert b.read("CATALOG.md") == crlf


def test_write_refuses_a_pre_12_store_and_creates_nothing(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path).write("SPINE.md", INSTALLER_SPINE).tier("projects/x.md", "# X\n")
    with pytest.raises(DistilldError):
        refresh_catalog(tmp_path, FIXED_NOW)
    assert not b.path("CATALOG.md").exists()


def rich_store(root: Path) -> StoreBuilder:
    """Healthy plus: a legacy adoption, a re-archived file, an archive-and-restore, a sub-folder file,
    a CRLF tier file, a heading-only scope and a ledger line stamped after the clock."""
    b = healthy_store(root)
    b.write("archive/legacy/archive/projects/ember.md", "---\narchived_from: projects/ember.md\nrecall_count: 4\n"
            "---\n\n# Ember (finished 2026-05)\n")
    b.tier("projects/sub/deep.md", "# Deep dive | notes\n\n- sub-folder file\n", last_updated="2026-11-01")
    b.write("craft/crlf.md", "---\r\nscope: Windows-edited notes\r\nlast_validated: 2026-11-20\r\n---\r\n# C\r\n")
    b.tier("archive/projects/heron.md", "# Heron\n\n- Feeds.\n", scope="Heron feeds", last_updated="2026-05-01")
    heron_entry = f"- [Heron](projects/heron.md) {EM} Heron feeds a\\|b split; read when replaying feeds."
    b.append_ledger(archive_line(b, "2026-10-01T09:00:00Z", "projects/heron.md", heron_entry, "first"))
    b.append_ledger("- 2026-10-02T09:00:00Z restore | from: archive/projects/heron.md | to: projects/heron.md"
                    f" | sha256: {sha256_hex(b.read('archive/projects/heron.md'))} | reason: user request")
    b.append_ledger(archive_line(b, "2026-12-01T07:00:00Z", "projects/heron.md", heron_entry, "past \\| threshold"))
    b.write("evidence/projects/heron.md", "---\nevidence_for: projects/heron.md\n---\n- 2026-05-01 observe: x\n")
    spine = b.read("SPINE.md").decode()
    spine = spine.replace(KESTREL_ENTRY, KESTREL_ENTRY
                          + f"\n- [Deep](projects/sub/deep.md) {EM} deep dive notes."
                          + f"\n- [Crlf](craft/crlf.md) {EM} windows notes.")
    b.write("SPINE.md", spine)
    return b


def test_store_whose_catalog_was_just_written_has_no_c2_findings(tmp_path: Path) -> None:
    rich_store(tmp_path)
    assert any(m.startswith("file not in catalog") for m in c2_messages(tmp_path))
    assert refresh_catalog(tmp_path, FIXED_NOW).written is True
    assert c2_messages(tmp_path) == []
    catalog = (tmp_path / "CATALOG.md").read_text("utf-8")
    assert rebuilt(catalog) == "2026-12-01T07:00:00Z"
    assert "- archive/projects/heron.md | Heron feeds | archived 2026-12-01 | reason: past \\| threshold" \
        " | from projects/heron.md | hook: Heron feeds a\\|b split; read when replaying feeds.\n" in catalog
    assert "- projects/sub/deep.md | Deep dive \\| notes | validated 2026-11-01\n" in catalog
    assert "- craft/crlf.md | Windows-edited notes | validated 2026-11-20\n" in catalog
    assert "- archive/legacy/archive/projects/ember.md | Ember (finished 2026-05) | legacy\n" in catalog
    # and a second write is a no-op
    assert refresh_catalog(tmp_path, FIXED_NOW + timedelta(days=5)).written is False
