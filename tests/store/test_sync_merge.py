"""The sync merge rules as pure functions over bytes: ledger union, line replay, the tree made
to agree with the ledger, inbox items for a file changed on both sides, sync classes."""

from __future__ import annotations

from pathlib import Path

from builders import FIXED_NOW, MARLIN_ENTRY, healthy_store
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.ledger import Ledger, merge_ledgers
from distilld.store.line_replay import replay_lines
from distilld.store.merge import BytesFiles, Sides, has_conflict_markers, merge_stores
from distilld.store.paths import sync_class
from distilld.store.snapshot import snapshot_from_files, take_snapshot
from distilld.store.text import sha256_hex, sha256_norm_hex

LIMITS = load_policy().limits

HEAD = b"# Archive ledger\n\n<!-- Append-only. -->\n\n"


def line(stamp: str, event: str, path: str) -> bytes:
    if event == "archive":
        return (f"- {stamp} archive | from: {path} | to: archive/{path} | sha256: {'a' * 64} | reason: stale"
                f" | spine-entry: - [X]({path}) \u2014 x\n").encode()
    return f"- {stamp} restore | from: archive/{path} | to: {path} | sha256: {'b' * 64} | reason: user request\n".encode()


# -- merge_ledgers -----------------------------------------------------------------------------

def test_ledger_union_interleaves_by_stamp_and_keeps_duplicates_once() -> None:
    common = line("2026-09-11T08:00:00Z", "archive", "projects/m.md")
    ours = HEAD + common + line("2026-11-30T10:00:00Z", "archive", "projects/a.md")
    theirs = HEAD + common + line("2026-11-30T09:00:00Z", "restore", "projects/m.md") + \
        line("2026-11-30T11:00:00Z", "archive", "projects/b.md")
    merged = merge_ledgers(ours, theirs, HEAD + common)
    assert merged == HEAD + common + line("2026-11-30T09:00:00Z", "restore", "projects/m.md") + \
        line("2026-11-30T10:00:00Z", "archive", "projects/a.md") + line("2026-11-30T11:00:00Z", "archive", "projects/b.md")
    assert merge_ledgers(theirs, ours) .count(common) == 1


def test_ledger_union_is_the_same_either_way_round_when_stamps_differ() -> None:
    ours = HEAD + line("2026-11-30T10:00:00Z", "archive", "projects/a.md")
    theirs = HEAD + line("2026-11-30T09:00:00Z", "archive", "projects/b.md")
    assert merge_ledgers(ours, theirs) == merge_ledgers(theirs, ours)


def test_equal_stamps_keep_ours_first_and_each_sides_order() -> None:
    a1 = line("2026-11-30T10:00:00Z", "archive", "projects/a.md")
    a2 = line("2026-11-30T10:00:00Z", "restore", "projects/a.md")
    b1 = line("2026-11-30T10:00:00Z", "archive", "projects/b.md")
    merged = merge_ledgers(HEAD + a1 + a2, HEAD + b1)
    assert merged == HEAD + a1 + a2 + b1
    assert Ledger(merged).last_event_by_path["projects/a.md"].is_restore


def test_a_date_only_line_never_jumps_above_its_own_predecessor() -> None:
    timed = line("2026-11-30T10:00:00Z", "archive", "projects/a.md")
    dated = line("2026-11-30", "restore", "projects/a.md")  # valid after a same-day timed line
    theirs = line("2026-11-30T09:00:00Z", "archive", "projects/b.md")
    merged = merge_ledgers(HEAD + timed + dated, HEAD + theirs)
    assert merged == HEAD + theirs + timed + dated
    assert Ledger(merged).last_event_by_path["projects/a.md"].is_restore


def test_ledger_line_endings_and_a_missing_final_newline() -> None:
    ours = (HEAD + line("2026-11-30T10:00:00Z", "archive", "projects/a.md")).replace(b"\n", b"\r\n")
    theirs = HEAD + line("2026-11-30T09:00:00Z", "archive", "projects/b.md").rstrip(b"\n")
    merged = merge_ledgers(ours, theirs)
    assert merged.startswith(HEAD.replace(b"\n", b"\r\n"))
    assert line("2026-11-30T09:00:00Z", "archive", "projects/b.md").rstrip(b"\n") + b"\r\n" in merged
    assert merged.endswith(line("2026-11-30T10:00:00Z", "archive", "projects/a.md").replace(b"\n", b"\r\n"))


def test_nothing_between_events_is_lost() -> None:
    ours = HEAD + line("2026-11-30T10:00:00Z", "archive", "projects/a.md") + b"\n<!-- a note -->\n"
    theirs = HEAD + b"<!-- their header note -->\n" + line("2026-11-30T09:00:00Z", "archive", "projects/b.md")
    merged = merge_ledgers(ours, theirs)
    assert b"<!-- a note -->" in merged and b"<!-- their header note -->" in merged
    assert merged.index(b"their header note") < merged.index(b"- 2026")


# -- replay_lines and conflict markers -----------------------------------------------------------

def test_replay_keeps_a_removal_on_one_side_and_an_adjacent_addition_on_the_other() -> None:
    base = b"## Projects\n- [A](projects/a.md) - a\n- [B](projects/b.md) - b\n\n## Feedback\n"
    ours = b"## Projects\n- [A](projects/a.md) - a\n\n## Feedback\n"  # B archived here
    theirs = b"## Projects\n- [A](projects/a.md) - a\n- [B](projects/b.md) - b\n- [M](projects/m.md) - m\n\n## Feedback\n"
    assert replay_lines(base, ours, theirs) == b"## Projects\n- [A](projects/a.md) - a\n- [M](projects/m.md) - m\n\n## Feedback\n"
    assert replay_lines(base, theirs, ours) == replay_lines(base, ours, theirs)


def test_replay_keeps_a_line_both_sides_added_once() -> None:
    base = b"a\nb\n"
    assert replay_lines(base, b"a\nx\nb\n", b"a\nx\nb\n") == b"a\nx\nb\n"
    assert replay_lines(base, b"a\nb\nours\n", b"a\nb\ntheirs\n") == b"a\nb\ntheirs\nours\n"


def test_conflict_markers_need_all_three_in_order() -> None:
    assert has_conflict_markers(b"x\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n")
    assert has_conflict_markers(b"<<<<<<< ours\r\na\r\n=======\r\nb\r\n>>>>>>> theirs")
    assert not has_conflict_markers(b"Title\n=======\n\ntext\n")
    assert not has_conflict_markers(b">>>>>>> x\n=======\n<<<<<<< y\n")


def test_sync_classes() -> None:
    for path in ("SPINE.md", "CATALOG.md", "craft/x.md", "craft/sub/y.md", "archive/LEDGER.md",
                 "archive/projects/x.md", "evidence/craft/x.md", "inbox/20261130T120000Z-ab12-x.md"):
        assert sync_class(path) == "shared", path
    for path in ("data/gc-log.jsonl", "local/SPINE.md", "bin/distill-lock.sh", ".lock", ".lifecycle",
                 ".status", "craft/.x.md.distilld-tmp.1.ab", "distill-process.md", "distill-monitor.md",
                 ".gitignore"):
        assert sync_class(path) == "local", path
    for path in ("README.md", "craft/diagram.png", "notes.txt"):
        assert sync_class(path) == "other", path


# -- merge_stores ------------------------------------------------------------------------------------

def store_files(root: Path) -> dict[str, bytes]:
    snapshot = take_snapshot(root)
    return {p: snapshot.contents.get(p, (root / p).read_bytes()) for p in snapshot.files}


def test_an_edit_on_one_side_and_an_archive_on_the_other_end_as_the_ledger_says(tmp_path: Path) -> None:
    base = store_files(healthy_store(tmp_path / "base").root)
    # Theirs archives kestrel (ledger line, move, SPINE pointer removed); ours edits kestrel.
    theirs = dict(base)
    raw = theirs.pop("projects/kestrel.md")
    theirs["archive/projects/kestrel.md"] = raw
    entry = next(x for x in base["SPINE.md"].decode().splitlines() if "(projects/kestrel.md)" in x)
    theirs["SPINE.md"] = base["SPINE.md"].replace(entry.encode() + b"\n", b"")
    theirs["archive/LEDGER.md"] = base["archive/LEDGER.md"] + (
        f"- 2026-11-30T11:00:00Z archive | from: projects/kestrel.md | to: archive/projects/kestrel.md"
        f" | sha256: {sha256_hex(raw)} | sha256-norm: {sha256_norm_hex(raw)} | reason: stale | spine-entry: {entry}\n"
    ).encode()
    ours = dict(base)
    ours["projects/kestrel.md"] = raw + b"- An agent added this on the other machine.\n"
    result = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS,
                          Sides("local", "remote"), token=lambda: "beef")
    assert result.ok, result.blocked_by
    merged = {**ours, **{p: r for p, r in result.changes.items() if r is not None}}
    for path, raw_change in result.changes.items():
        if raw_change is None:
            merged.pop(path, None)
    assert "projects/kestrel.md" not in merged
    assert merged["archive/projects/kestrel.md"] == raw
    assert result.inbox == ["inbox/20261130T120000Z-beef-sync-conflict-projects-kestrel.md"]
    kept = merged[result.inbox[0]]
    assert kept.endswith(ours["projects/kestrel.md"]) and b"kept_from: local" in kept
    assert b"(projects/kestrel.md)" not in merged["SPINE.md"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert [f.message for f in check_store(snapshot_from_files(empty, merged), LIMITS) if f.severity == "fail"] == []


def test_a_merge_with_a_new_failure_is_blocked_but_an_inherited_one_is_not(tmp_path: Path) -> None:
    base = store_files(healthy_store(tmp_path / "base").root)
    over = "".join(f"<!-- {n} -->\n" for n in range(30)).encode()
    ours = {**base, "SPINE.md": base["SPINE.md"] + over}
    theirs = {**base, "SPINE.md": over.replace(b"-->", b"theirs -->") + base["SPINE.md"]}
    blocked = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS)
    assert not blocked.ok and blocked.blocked_by[0].code == "spine-lines"
    # A breach both sides already had does not block a merge that adds none.
    big = over * 3
    base2 = {**base, "SPINE.md": base["SPINE.md"] + big}
    ours2 = {**base2, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    theirs2 = {**base2, "ops/deploy.md": base["ops/deploy.md"] + b"- theirs\n"}
    inherited = merge_stores(BytesFiles(base2), BytesFiles(ours2), BytesFiles(theirs2), FIXED_NOW, LIMITS)
    assert inherited.ok and inherited.inherited and inherited.inherited[0].code == "spine-lines"


def test_marlin_fixture_entry_is_what_a_restore_re_adds(tmp_path: Path) -> None:
    """A restore on one side whose SPINE edit was lost gets its entry back from the ledger."""
    base = store_files(healthy_store(tmp_path / "base").root)
    theirs = dict(base)
    raw = theirs.pop("archive/projects/marlin.md")
    theirs["projects/marlin.md"] = raw
    theirs["archive/LEDGER.md"] = base["archive/LEDGER.md"] + (
        "- 2026-11-30T11:00:00Z restore | from: archive/projects/marlin.md | to: projects/marlin.md"
        f" | sha256: {sha256_hex(raw)} | reason: user request\n").encode()
    ours = {**base, "SPINE.md": base["SPINE.md"] + b"<!-- ours -->\n"}
    result = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS)
    assert result.ok, result.blocked_by
    spine = result.changes["SPINE.md"]
    assert spine is not None and MARLIN_ENTRY.encode() in spine and b"<!-- ours -->" in spine
