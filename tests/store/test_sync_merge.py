"""The sync merge rules as pure functions over bytes: ledger union, line replay, the tree made
to agree with the ledger, inbox items for a file changed on both sides, sync classes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from builders import EM, FIXED_NOW, MARLIN_ENTRY, healthy_store
from distilld.policy import load_policy
from distilld.store.catalog import render_catalog
from distilld.store.findings import Finding
from distilld.store.invariants import check_store
from distilld.store.ledger import Ledger, merge_ledgers
from distilld.store.line_replay import replay_lines
from distilld.store.merge import BytesFiles, Sides, StoreMerge, has_conflict_markers, merge_stores
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
    assert has_conflict_markers(b"<<<<<<<\na\n=======\nb\n>>>>>>>\n")  # markers without labels
    assert not has_conflict_markers(b"Title\n=======\n\ntext\n")
    assert not has_conflict_markers(b">>>>>>> x\n=======\n<<<<<<< y\n")


@pytest.mark.parametrize("text", [
    b"<<<<<<< ours\na\n>>>>>>> theirs\n",  # no separator
    b"<<<<<<< ours\na\n=======\nb\n",  # no closing marker
    b"<<<<<<< ours\na\n=======X\nb\n>>>>>>> theirs\n",  # the separator is seven signs, alone
    b"<<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n",  # eight signs open nothing
    b"Title\n=======\n>>>>>>> quoted\n<<<<<<< quoted\n",  # a closing marker before any opening one
])
def test_text_that_only_looks_like_a_conflict_is_not_one(text: bytes) -> None:
    assert not has_conflict_markers(text)


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
    # Growth of both sides past a cap is no reason to stay apart for good: merged, and said.
    grown = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS)
    assert grown.ok and [f.code for f in grown.over_caps] == ["spine-lines"]
    assert any("the next compaction" in r for r in grown.resolutions), grown.resolutions
    marked = {**theirs, "craft/testing.md": base["craft/testing.md"] + b"<<<<<<< HEAD\n- a\n=======\n- b\n>>>>>>> x\n"}
    blocked = merge_stores(BytesFiles(base), BytesFiles(base), BytesFiles(marked), FIXED_NOW, LIMITS)
    assert not blocked.ok and blocked.blocked_by[0].code == "conflict-markers"
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


# -- merge_stores, rule by rule ----------------------------------------------------------------------
# Rowan's store with one more project (tern, indexed after osprey, so that its ledger path sorts
# after marlin's), and the edits a machine makes to it, as byte trees.

TERN_ENTRY = f"- [Tern](projects/tern.md) {EM} Tern metrics service, paused. Read when asked about tern."
# The resolution line of every merge whose two ledgers differ.
UNION = "archive/LEDGER.md: union of both sides' lines, sorted by stamp"


def rowan_files(tmp_path: Path) -> dict[str, bytes]:
    builder = healthy_store(tmp_path / "base")
    builder.tier("projects/tern.md", "# Tern\n\n- Metrics land in the warehouse nightly.\n",
                 domain="project", scope="Tern metrics service", last_updated="2026-03-01")
    spine = builder.read("SPINE.md").decode()
    osprey = next(x for x in spine.splitlines(keepends=True) if "(projects/osprey.md)" in x)
    builder.write("SPINE.md", spine.replace(osprey, osprey + TERN_ENTRY + "\n"))
    builder.rebuild_catalog()
    return store_files(builder.root)


def entry_of(files: dict[str, bytes], path: str) -> str:
    return next(x for x in files["SPINE.md"].decode().splitlines() if f"]({path})" in x)


def archived(files: dict[str, bytes], path: str, stamp: str, *, norm: bool = True) -> dict[str, bytes]:
    """``files`` after an archive of ``path`` as gc makes it: the ledger line, the move, the
    SPINE entry removed."""
    out = dict(files)
    raw = out.pop(path)
    entry = entry_of(files, path)
    out["archive/" + path] = raw
    out["SPINE.md"] = files["SPINE.md"].replace(entry.encode() + b"\n", b"")
    checksums = f"sha256: {sha256_hex(raw)}" + (f" | sha256-norm: {sha256_norm_hex(raw)}" if norm else "")
    out["archive/LEDGER.md"] = files["archive/LEDGER.md"] + (
        f"- {stamp} archive | from: {path} | to: archive/{path} | {checksums} | reason: stale"
        f" | spine-entry: {entry}\n").encode()
    return out


def restored(files: dict[str, bytes], path: str, stamp: str, *, spine: bool = True) -> dict[str, bytes]:
    """``files`` after a restore of ``path``: the ledger line, the move back and (unless
    ``spine`` is false) the entry its archive line saved re-added to the SPINE."""
    out = dict(files)
    saved = Ledger(files["archive/LEDGER.md"]).last_archive_line("archive/" + path)
    assert saved is not None and saved.value("spine-entry") is not None
    raw = out.pop("archive/" + path)
    out[path] = raw
    out["archive/LEDGER.md"] = files["archive/LEDGER.md"] + (
        f"- {stamp} restore | from: archive/{path} | to: {path} | sha256: {sha256_hex(raw)}"
        " | reason: user request\n").encode()
    if spine:
        out["SPINE.md"] = files["SPINE.md"] + f"{saved.value('spine-entry')}\n".encode()
    return out


def merge(base: dict[str, bytes], ours: dict[str, bytes], theirs: dict[str, bytes]) -> StoreMerge:
    return merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS,
                        Sides("local", "remote"), token=lambda: "beef")


def merged_tree(ours: dict[str, bytes], result: StoreMerge) -> dict[str, bytes]:
    tree = dict(ours)
    for path, raw in result.changes.items():
        if raw is None:
            tree.pop(path, None)
        else:
            tree[path] = raw
    return tree


def failures(tmp_path: Path, files: dict[str, bytes]) -> list[str]:
    empty = tmp_path / "checked"
    empty.mkdir(exist_ok=True)
    return [f.message for f in check_store(snapshot_from_files(empty, files), LIMITS) if f.severity == "fail"]


def inbox_item(path: str, kept_from: str, note: str, raw: bytes, hint: str | None) -> bytes:
    head = ["---", "origin: sync-conflict", "created: 2026-11-30T12:00:00Z", f"conflict_path: {path}",
            f"kept_from: {kept_from}", f"note: {note}", *([f"domain_hint: {hint}"] if hint else []), "---", "", ""]
    return "\n".join(head).encode() + raw


def item_name(path: str) -> str:
    return "inbox/20261130T120000Z-beef-sync-conflict-" + path.removesuffix(".md").replace("/", "-").lower() + ".md"


def test_every_ledger_line_of_both_sides_lands_in_stamp_order(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    ours = archived(base, "projects/tern.md", "2026-11-30T10:00:00Z")
    theirs = archived(base, "projects/kestrel.md", "2026-11-30T09:00:00Z")
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [] and result.inherited == [], result.blocked_by
    tree = merged_tree(ours, result)
    theirs_line = theirs["archive/LEDGER.md"].removeprefix(base["archive/LEDGER.md"])
    ours_line = ours["archive/LEDGER.md"].removeprefix(base["archive/LEDGER.md"])
    assert tree["archive/LEDGER.md"] == base["archive/LEDGER.md"] + theirs_line + ours_line
    for path in ("projects/tern.md", "projects/kestrel.md"):
        assert path not in tree and tree["archive/" + path] == base[path]
        assert f"]({path})".encode() not in tree["SPINE.md"]
    assert result.resolutions == [
        "SPINE.md: changed on both sides; line edits of both kept",
        UNION,
    ]
    assert failures(tmp_path, tree) == []


def test_edits_of_both_sides_to_different_files_all_land(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    ours = {**base, "craft/testing-2.md": base["craft/testing-2.md"] + b"- ours, first\n",
            "projects/tern.md": base["projects/tern.md"] + b"- ours, second\n"}
    theirs = {**base, "craft/testing.md": base["craft/testing.md"] + b"- theirs, first\n",
              "ops/deploy.md": base["ops/deploy.md"] + b"- theirs, second\n"}
    del theirs["evidence/projects/marlin.md"]
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [] and result.resolutions == [], result.blocked_by
    tree = merged_tree(ours, result)
    assert {p: tree.get(p) for p in ("craft/testing-2.md", "projects/tern.md", "craft/testing.md", "ops/deploy.md",
                                     "evidence/projects/marlin.md")} == {
        "craft/testing-2.md": ours["craft/testing-2.md"], "projects/tern.md": ours["projects/tern.md"],
        "craft/testing.md": theirs["craft/testing.md"], "ops/deploy.md": theirs["ops/deploy.md"],
        "evidence/projects/marlin.md": None}
    assert failures(tmp_path, tree) == []
    assert failures(tmp_path, {**tree, "CATALOG.md": base["CATALOG.md"]}) != []  # it counts the entries added


def test_a_file_changed_on_both_sides_stays_theirs_and_ours_is_kept_whole_in_the_inbox(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    ours = {**base, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    theirs = {**base, "craft/testing.md": base["craft/testing.md"] + b"- theirs\n"}
    # The defaults: sides named local and remote, a random four-digit hex token.
    result = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS)
    assert result.ok, result.blocked_by
    [name] = result.inbox
    assert re.fullmatch(r"inbox/20261130T120000Z-[0-9a-f]{4}-sync-conflict-craft-testing\.md", name)
    tree = merged_tree(ours, result)
    assert tree["craft/testing.md"] == theirs["craft/testing.md"]
    assert tree[name] == inbox_item("craft/testing.md", "local",
                                    "changed on both machines; the remote version stays at craft/testing.md",
                                    ours["craft/testing.md"], "craft")
    assert result.resolutions == [f"craft/testing.md: local version kept whole as {name}"]


def test_spine_and_evidence_edited_on_both_sides_keep_the_line_edits_of_both(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    evidence = base["evidence/craft/testing.md"]
    first = b"- 2026-04-18 directive: real files only (recorded as NON-NEGOTIABLE)\n"
    ours = {**base, "SPINE.md": base["SPINE.md"] + b"<!-- ours -->\n",
            "evidence/craft/testing.md": evidence.replace(first, b"")}
    theirs = {**base, "SPINE.md": base["SPINE.md"].replace(TERN_ENTRY.encode(), TERN_ENTRY.encode() + b" Theirs."),
              "evidence/craft/testing.md": evidence + b"- 2026-11-29 confirm: theirs\n"}
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [], result.blocked_by
    tree = merged_tree(ours, result)
    assert tree["SPINE.md"] == theirs["SPINE.md"] + b"<!-- ours -->\n"
    assert tree["evidence/craft/testing.md"] == theirs["evidence/craft/testing.md"].replace(first, b"")
    assert result.resolutions == ["SPINE.md: changed on both sides; line edits of both kept",
                                  "evidence/craft/testing.md: changed on both sides; line edits of both kept"]


def test_a_file_deleted_on_one_side_and_edited_on_the_other(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    edited = base["evidence/projects/marlin.md"] + b"- 2026-11-29 observe: theirs\n"
    # Ours deleted it, theirs edited it: theirs' version stays, and there is nothing of ours to keep.
    ours = {p: raw for p, raw in base.items() if p != "evidence/projects/marlin.md"}
    result = merge(base, ours, {**base, "evidence/projects/marlin.md": edited})
    assert result.ok and result.inbox == [] and result.resolutions == [], result.blocked_by
    assert merged_tree(ours, result)["evidence/projects/marlin.md"] == edited
    # Ours edited it, theirs deleted it: the deletion stays, and ours is kept whole in the inbox.
    ours = {**base, "evidence/projects/marlin.md": edited}
    result = merge(base, ours, {p: raw for p, raw in base.items() if p != "evidence/projects/marlin.md"})
    assert result.ok and result.inbox == [item_name("evidence/projects/marlin.md")], result.blocked_by
    tree = merged_tree(ours, result)
    assert "evidence/projects/marlin.md" not in tree
    assert tree[result.inbox[0]] == inbox_item(
        "evidence/projects/marlin.md", "local",
        "changed on both machines; the remote version stays at evidence/projects/marlin.md", edited, "projects")


def test_a_ledger_only_one_side_has_is_taken_byte_for_byte(tmp_path: Path) -> None:
    full = rowan_files(tmp_path)
    # A store that never archived anything has no ledger yet; the first archive creates it.
    base = {p: raw for p, raw in full.items()
            if p not in ("archive/LEDGER.md", "archive/projects/marlin.md", "evidence/projects/marlin.md")}
    first = archived({**base, "archive/LEDGER.md": HEAD}, "projects/tern.md", "2026-11-30T10:00:00Z")
    edit = {**base, "craft/testing.md": base["craft/testing.md"] + b"- an edit\n"}
    for ours, theirs in ((first, edit), (edit, first)):
        result = merge(base, ours, theirs)
        assert result.ok, result.blocked_by
        tree = merged_tree(ours, result)
        assert tree["archive/LEDGER.md"] == first["archive/LEDGER.md"]
        assert "projects/tern.md" not in tree and tree["archive/projects/tern.md"] == base["projects/tern.md"]
        assert not any(r.startswith("archive/LEDGER.md") for r in result.resolutions), result.resolutions


def test_a_file_archived_here_and_edited_there_is_archived_and_the_edit_kept_in_the_inbox(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    ours = archived(base, "projects/tern.md", "2026-11-30T10:00:00Z")
    edited = base["projects/tern.md"] + b"- An agent added this on the other machine.\n"
    theirs = {**base, "projects/tern.md": edited}
    result = merge(base, ours, theirs)
    assert result.ok, result.blocked_by
    tree = merged_tree(ours, result)
    assert "projects/tern.md" not in tree and tree["archive/projects/tern.md"] == base["projects/tern.md"]
    assert result.inbox == [item_name("projects/tern.md")]
    assert tree[result.inbox[0]] == inbox_item(
        "projects/tern.md", "remote", "edited while the other machine archived it to archive/projects/tern.md",
        edited, "projects")
    assert result.resolutions == [UNION,
                                  "projects/tern.md: archived, as the ledger's last event says",
                                  f"projects/tern.md: remote version kept whole as {result.inbox[0]}"]
    assert failures(tmp_path, tree) == []


@pytest.mark.parametrize("norm", [True, False])
def test_two_archived_copies_keep_the_one_the_ledgers_last_line_names(tmp_path: Path, norm: bool) -> None:
    """Both machines archived tern, one after an edit: the copy the newest archive line's
    checksum names stays in archive/, the other is kept whole in the inbox."""
    base = rowan_files(tmp_path)
    edited = {**base, "projects/tern.md": base["projects/tern.md"] + b"- Edited before it was archived.\n"}
    plain, changed = base["projects/tern.md"], edited["projects/tern.md"]
    for ours, theirs, stays, other, other_from in (
            (archived(base, "projects/tern.md", "2026-11-30T10:00:00Z", norm=norm),
             archived(edited, "projects/tern.md", "2026-11-30T11:00:00Z", norm=norm), changed, plain, "local"),
            (archived(base, "projects/tern.md", "2026-11-30T11:00:00Z", norm=norm),
             archived(edited, "projects/tern.md", "2026-11-30T10:00:00Z", norm=norm), plain, changed, "remote")):
        result = merge(base, ours, theirs)
        assert result.ok, result.blocked_by
        tree = merged_tree(ours, result)
        assert "projects/tern.md" not in tree and tree["archive/projects/tern.md"] == stays
        assert result.inbox == [item_name("archive/projects/tern.md")]
        assert tree[result.inbox[0]] == inbox_item("archive/projects/tern.md", other_from,
                                                   "a second archived copy; the ledger names the other one",
                                                   other, "projects")
        picked = ["archive/projects/tern.md: the copy the ledger's checksum names"] if stays == plain else []
        assert result.resolutions == [
            UNION, *picked,
            f"archive/projects/tern.md: {other_from} version kept whole as {result.inbox[0]}"]
        assert failures(tmp_path, tree) == []


def test_an_archived_copy_whose_only_change_is_its_recall_count_matches_the_ledger(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    ours = archived(base, "projects/tern.md", "2026-11-30T11:00:00Z")
    recalled = base["projects/tern.md"].replace(b"---\n\n", b"recall_count: 3\n---\n\n", 1)
    theirs = archived({**base, "projects/tern.md": recalled}, "projects/tern.md", "2026-11-30T10:00:00Z")
    assert sha256_hex(recalled) != sha256_hex(base["projects/tern.md"])
    result = merge(base, ours, theirs)
    assert result.ok, result.blocked_by
    # Ours' line is the newest; theirs' copy matches its sha256-norm, so theirs stays in place.
    tree = merged_tree(ours, result)
    assert tree["archive/projects/tern.md"] == recalled
    assert result.inbox == [item_name("archive/projects/tern.md")]
    assert tree[result.inbox[0]].endswith(b"kept_from: local\nnote: a second archived copy; the ledger names the "
                                          b"other one\ndomain_hint: projects\n---\n\n" + base["projects/tern.md"])


def test_an_entry_edited_while_the_other_machine_archived_its_file_goes_to_the_inbox(tmp_path: Path) -> None:
    """The pointer to an archived file leaves the SPINE; the entry's edited wording is not lost."""
    base = rowan_files(tmp_path)
    ours = archived(base, "projects/tern.md", "2026-11-30T10:00:00Z")
    edited_entry = TERN_ENTRY.encode() + b" Now resumed.\n  Read before touching the metrics jobs.\n"
    theirs = {**base, "SPINE.md": base["SPINE.md"].replace(TERN_ENTRY.encode() + b"\n", edited_entry)}
    result = merge(base, ours, theirs)
    assert result.ok, result.blocked_by
    tree = merged_tree(ours, result)
    assert tree["SPINE.md"] == ours["SPINE.md"]
    assert result.inbox == [item_name("SPINE.md")]
    assert tree[result.inbox[0]] == inbox_item(
        "SPINE.md", "merged SPINE", "the SPINE entry for projects/tern.md, which the ledger archived; it differs "
        "from the entry the ledger saved", edited_entry, None)
    assert result.resolutions == [
        "SPINE.md: changed on both sides; line edits of both kept",
        UNION,
        "SPINE.md: pointer to archived projects/tern.md removed",
        f"SPINE.md: merged SPINE version kept whole as {result.inbox[0]}"]
    assert failures(tmp_path, tree) == []


def test_a_pointer_the_archiving_machine_left_behind_is_removed(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    # Theirs archived tern, but its SPINE still points at it (the SPINE edit never came).
    theirs = {**archived(base, "projects/tern.md", "2026-11-30T10:00:00Z"), "SPINE.md": base["SPINE.md"]}
    assert failures(tmp_path, theirs) != []
    ours = {**base, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [], result.blocked_by
    tree = merged_tree(ours, result)
    assert tree["SPINE.md"] == base["SPINE.md"].replace(TERN_ENTRY.encode() + b"\n", b"")
    assert result.resolutions == [UNION,
                                  "SPINE.md: pointer to archived projects/tern.md removed"]
    assert failures(tmp_path, tree) == []


def test_a_restore_whose_entry_is_already_in_the_spine_keeps_it_once(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    theirs = restored(base, "projects/marlin.md", "2026-11-30T11:00:00Z")
    ours = {**base, "SPINE.md": b"<!-- ours -->\n" + base["SPINE.md"]}
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [], result.blocked_by
    tree = merged_tree(ours, result)
    assert tree["SPINE.md"] == b"<!-- ours -->\n" + theirs["SPINE.md"]
    assert tree["projects/marlin.md"] == base["archive/projects/marlin.md"] and "archive/projects/marlin.md" not in tree
    assert result.resolutions == ["SPINE.md: changed on both sides; line edits of both kept",
                                  UNION]


def test_a_restore_whose_entry_was_lost_gets_it_back_from_the_ledger(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    theirs = restored(base, "projects/marlin.md", "2026-11-30T11:00:00Z", spine=False)
    ours = {**base, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [], result.blocked_by
    tree = merged_tree(ours, result)
    assert tree["SPINE.md"].count(b"(projects/marlin.md)") == 1 and MARLIN_ENTRY.encode() in tree["SPINE.md"]
    assert result.resolutions == [UNION,
                                  "SPINE.md: entry for restored projects/marlin.md re-added from the ledger"]
    assert failures(tmp_path, tree) == []


def test_a_restore_here_after_a_new_archive_there_keeps_the_newer_archived_copy_in_the_inbox(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    # Theirs restored marlin, edited it and archived it again; ours restored it later.
    again = restored(base, "projects/marlin.md", "2026-11-30T08:00:00Z")
    again["projects/marlin.md"] += b"- Reopened for one more report.\n"
    theirs = archived(again, "projects/marlin.md", "2026-11-30T09:00:00Z")
    ours = restored(base, "projects/marlin.md", "2026-11-30T10:00:00Z")
    result = merge(base, ours, theirs)
    assert result.ok, result.blocked_by
    tree = merged_tree(ours, result)
    assert tree["projects/marlin.md"] == ours["projects/marlin.md"] and "archive/projects/marlin.md" not in tree
    assert result.inbox == [item_name("archive/projects/marlin.md")]
    assert tree[result.inbox[0]] == inbox_item(
        "archive/projects/marlin.md", "remote", "archived on one machine while projects/marlin.md was restored",
        again["projects/marlin.md"], "projects")
    assert result.resolutions == [
        UNION,
        "archive/projects/marlin.md: removed, the ledger's last event restores projects/marlin.md",
        f"archive/projects/marlin.md: remote version kept whole as {result.inbox[0]}"]
    assert failures(tmp_path, tree) == []


def test_a_restored_file_deleted_on_the_other_machine_without_a_ledger_line_comes_back(tmp_path: Path) -> None:
    base = restored(rowan_files(tmp_path), "projects/marlin.md", "2026-11-30T08:00:00Z")
    theirs = {p: raw for p, raw in base.items() if p != "projects/marlin.md"}
    theirs["SPINE.md"] = base["SPINE.md"].replace(MARLIN_ENTRY.encode() + b"\n", b"")
    ours = {**base, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [], result.blocked_by
    tree = merged_tree(ours, result)
    assert tree["projects/marlin.md"] == base["projects/marlin.md"]
    spine = tree["SPINE.md"]
    assert spine.count(b"(projects/marlin.md)") == 1
    assert spine.index(b"## Projects") < spine.index(MARLIN_ENTRY.encode()) < spine.index(b"## Feedback")
    assert result.resolutions == ["SPINE.md: entry for restored projects/marlin.md re-added from the ledger"]
    assert failures(tmp_path, tree) == []


def test_the_catalog_is_rebuilt_with_the_remotes_line_endings_and_never_created(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    ours = {**base, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    theirs = {**base, "ops/deploy.md": base["ops/deploy.md"] + b"- theirs\n",
              "CATALOG.md": base["CATALOG.md"].replace(b"\n", b"\r\n")}
    result = merge(base, ours, theirs)
    assert result.ok, result.blocked_by
    catalog = merged_tree(ours, result)["CATALOG.md"]
    assert catalog.count(b"\n") == catalog.count(b"\r\n") > 10
    assert failures(tmp_path, merged_tree(ours, result)) == []
    assert result.resolutions == ["CATALOG.md: rebuilt from the merged tree and ledger"]
    # Only one side has a catalog: it is rebuilt, with that side's line endings.
    bare = {p: raw for p, raw in base.items() if p != "CATALOG.md"}
    for ours, theirs in (({**bare, "craft/testing.md": ours["craft/testing.md"]}, theirs),
                         (theirs, {**bare, "craft/testing.md": ours["craft/testing.md"]})):
        result = merge(bare, ours, theirs)
        catalog = merged_tree(ours, result)["CATALOG.md"]
        assert catalog.count(b"\n") == catalog.count(b"\r\n") > 10
        assert failures(tmp_path, merged_tree(ours, result)) == []
    # Neither side has one: the merge does not make one up.
    ours = {**bare, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    result = merge(bare, ours, {**bare, "ops/deploy.md": theirs["ops/deploy.md"]})
    assert "CATALOG.md" not in merged_tree(ours, result) and "CATALOG.md" not in result.changes
    assert result.ok and "catalog-missing" in {f.code for f in result.inherited}, result.blocked_by


def test_failures_each_side_already_had_are_all_inherited(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    # Each side breaks a different rule, on a different file; the merge adds neither.
    ours = {**base, "ops/deploy.md": base["ops/deploy.md"].replace(b"read_with: [craft/testing.md]",
                                                                   b"read_with: [craft/gone.md]")}
    theirs = {**base, "craft/testing-2.md": base["craft/testing-2.md"].replace(b"split_from: craft/testing.md",
                                                                             b"split_from: craft/gone.md")}
    mine, yours = failures(tmp_path, ours), failures(tmp_path, theirs)
    assert len(mine) == len(yours) == 1 and mine != yours
    result = merge(base, ours, theirs)
    assert result.ok, result.blocked_by
    assert sorted(f.message for f in result.inherited) == sorted(mine + yours)


def test_a_note_does_not_block_a_merge(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    # A byte-order mark is worth a note, not a failure.
    ours = {**base, "craft/testing.md": b"\xef\xbb\xbf" + base["craft/testing.md"]}
    theirs = {**base, "ops/deploy.md": base["ops/deploy.md"] + b"- theirs\n"}
    snapshot = snapshot_from_files(tmp_path, merged_tree(ours, merge(base, ours, theirs)))
    assert [f.severity for f in check_store(snapshot, LIMITS)] == ["note"]
    result = merge(base, ours, theirs)
    assert result.ok and result.inherited == [], result.blocked_by


def test_a_merge_that_would_write_conflict_markers_is_blocked_naming_the_file(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    conflicted = base["craft/testing.md"] + b"<<<<<<< ours\n- one\n=======\n- two\n>>>>>>> theirs\n"
    ours = {**base, "ops/deploy.md": base["ops/deploy.md"] + b"- ours\n"}
    theirs = {p: raw for p, raw in base.items() if p != "evidence/projects/marlin.md"}
    theirs["craft/testing.md"] = conflicted
    result = merge(base, ours, theirs)
    assert not result.ok
    assert result.blocked_by == [Finding("C2", "conflict-markers", "craft/testing.md",
                                         "craft/testing.md holds git conflict markers")]
    # Markers a file already had on our side are not the merge's doing.
    assert merge(base, {**ours, "craft/testing.md": conflicted}, {**theirs, "craft/testing.md": conflicted}).ok


def test_an_inbox_item_never_takes_the_name_of_a_file_the_store_holds(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    taken = "inbox/20261130T120000Z-beef-sync-conflict-craft-testing.md"
    ours = {**base, "craft/testing.md": base["craft/testing.md"] + b"- ours\n", taken: b"an earlier item\n"}
    theirs = {**base, "craft/testing.md": base["craft/testing.md"] + b"- theirs\n"}
    tokens = iter(["beef", "beef", "cafe"])
    result = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS,
                          token=lambda: next(tokens))
    assert result.inbox == ["inbox/20261130T120000Z-cafe-sync-conflict-craft-testing.md"]
    assert taken not in result.changes and merged_tree(ours, result)[taken] == b"an earlier item\n"


def test_a_file_archived_here_since_the_last_sync_and_written_again_is_archived_as_the_ledger_says(
        tmp_path: Path) -> None:
    """Ours created wren and archived it since the last sync; then an agent that still had it
    open wrote it again. The merged tree agrees with the ledger, and the late text is kept."""
    base = rowan_files(tmp_path)
    wren = b"---\ndomain: project\nscope: Wren\nlast_updated: 2026-11-01\n---\n\n# Wren\n\n- A spike.\n"
    created = {**base, "projects/wren.md": wren,
               "SPINE.md": base["SPINE.md"].replace(TERN_ENTRY.encode(), TERN_ENTRY.encode() + f"\n- [Wren]"
                                                    f"(projects/wren.md) {EM} a spike. Read never.".encode())}
    late = wren + b"- Written after the archive.\n"
    ours = {**archived(created, "projects/wren.md", "2026-11-30T10:00:00Z"), "projects/wren.md": late}
    theirs = {**base, "craft/testing.md": base["craft/testing.md"] + b"- theirs\n"}
    result = merge(base, ours, theirs)
    assert result.ok, result.blocked_by
    tree = merged_tree(ours, result)
    assert "projects/wren.md" not in tree and tree["archive/projects/wren.md"] == wren
    assert result.inbox == [item_name("projects/wren.md")]
    assert tree[result.inbox[0]].endswith(b"\n---\n\n" + late)
    assert failures(tmp_path, tree) == []


def test_a_pointer_left_behind_on_a_joined_line_goes_and_the_other_pointer_stays(tmp_path: Path) -> None:
    plain = rowan_files(tmp_path)
    jobs = b"---\ndomain: project\nscope: Tern jobs\nlast_updated: 2026-03-01\n---\n\n# Tern jobs\n\n- Nightly.\n"
    joined = TERN_ENTRY.replace("(projects/tern.md)", "(projects/tern.md) + [Tern jobs](projects/tern-jobs.md)")
    base = {**plain, "projects/tern-jobs.md": jobs, "SPINE.md": plain["SPINE.md"].replace(TERN_ENTRY.encode(),
                                                                                         joined.encode())}
    base["CATALOG.md"] = render_catalog(snapshot_from_files(tmp_path, base), FIXED_NOW).encode()
    assert failures(tmp_path, base) == []
    # Theirs archived tern-jobs (the ledger saves the derived single-pointer entry) but its SPINE
    # edit never came.
    theirs = {p: raw for p, raw in base.items() if p != "projects/tern-jobs.md"}
    theirs["archive/projects/tern-jobs.md"] = jobs
    theirs["archive/LEDGER.md"] = base["archive/LEDGER.md"] + (
        "- 2026-11-30T10:00:00Z archive | from: projects/tern-jobs.md | to: archive/projects/tern-jobs.md"
        f" | sha256: {sha256_hex(jobs)} | reason: stale | spine-entry: - [Tern jobs](projects/tern-jobs.md) {EM}"
        " Tern metrics service, paused. Read when asked about tern.\n").encode()
    ours = {**base, "craft/testing.md": base["craft/testing.md"] + b"- ours\n"}
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [], result.blocked_by
    assert merged_tree(ours, result)["SPINE.md"] == plain["SPINE.md"]
    assert result.resolutions == [UNION, "SPINE.md: pointer to archived projects/tern-jobs.md removed"]


def test_an_archive_whose_file_changed_after_its_ledger_line_keeps_the_file_and_its_pointer(tmp_path: Path) -> None:
    """No copy matches the ledger's checksum: the merge cannot tell which text was archived, so
    the active file stays where it is, with its pointer, and C2 goes on reporting it."""
    base = rowan_files(tmp_path)
    line = archived(base, "projects/tern.md", "2026-11-30T10:00:00Z")["archive/LEDGER.md"]
    theirs = {**base, "archive/LEDGER.md": line.replace(sha256_hex(base["projects/tern.md"]).encode(), b"0" * 64)
              .replace(sha256_norm_hex(base["projects/tern.md"]).encode(), b"0" * 64)}
    ours = {**base, "projects/tern.md": base["projects/tern.md"] + b"- ours\n"}
    result = merge(base, ours, theirs)
    tree = merged_tree(ours, result)
    assert tree["projects/tern.md"] == ours["projects/tern.md"] and "archive/projects/tern.md" not in tree
    assert tree["SPINE.md"] == base["SPINE.md"] and result.inbox == []
    assert result.ok and [f.code for f in result.inherited] == ["ledger-tree-archived"], result.blocked_by


def test_an_evidence_twin_both_machines_created_keeps_the_lines_of_both_once(tmp_path: Path) -> None:
    base = rowan_files(tmp_path)
    head = b"---\nevidence_for: projects/kestrel.md\n---\n## Evidence log\n\n"
    ours = {**base, "evidence/projects/kestrel.md": head + b"- 2026-11-29 observe: ours\n"}
    theirs = {**base, "evidence/projects/kestrel.md": head + b"- 2026-11-28 observe: theirs\n"}
    result = merge(base, ours, theirs)
    assert result.ok and result.inbox == [], result.blocked_by
    merged = merged_tree(ours, result)["evidence/projects/kestrel.md"]
    # The frontmatter both added is there once (a blank line of ours may come again: blank lines
    # are never matched up), and both log lines, theirs first.
    assert merged.startswith(head + b"- 2026-11-28 observe: theirs\n") and merged.count(b"evidence_for") == 1
    assert merged.endswith(b"\n- 2026-11-29 observe: ours\n")


def test_a_torn_last_ledger_line_of_either_side_is_left_out_of_the_merge(tmp_path: Path) -> None:
    """A ledger line cut off by a full disk has no line break: a write that never happened. Sorted
    in among the other machine's lines it would become a whole, malformed line for good."""
    base = store_files(healthy_store(tmp_path / "base").root)
    torn = b"- 2026-11-30T11:00:00Z restore | from: archive/projects/marlin.md | to: projects/marlin.md | sha256"
    ours = {**base, "archive/LEDGER.md": base["archive/LEDGER.md"] + torn,
            "ops/deploy.md": base["ops/deploy.md"] + b"- ours\n"}
    theirs = {**base, "craft/testing.md": base["craft/testing.md"] + b"- theirs\n"}
    result = merge_stores(BytesFiles(base), BytesFiles(ours), BytesFiles(theirs), FIXED_NOW, LIMITS)
    assert result.ok, result.blocked_by
    merged = merged_tree(ours, result)
    assert merged["archive/LEDGER.md"] == base["archive/LEDGER.md"]
    assert any("last line has no line break" in r and "sha256" in r for r in result.resolutions), result.resolutions
