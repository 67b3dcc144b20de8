"""The daemon's incremental pass gives the findings of a cold snapshot, after any sequence of edits.

Random sequences of edits (content, frontmatter, stamps, pins, files added, removed and
archived, SPINE, catalog and ledger edits, symlinks, unreadable bytes) are applied to a real
store in a temporary folder; after each one the incremental snapshot and check must equal
``check_store(take_snapshot(...))`` finding for finding, in order. Each edit moves the file's
mtime forward, as time passing does; the one case the stamps cannot see (same size, same
inode, same mtime) is what the scheduled full rescan is for, tested last.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from builders import healthy_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distilld.policy import load_policy
from distilld.store.budget import measure_budget
from distilld.store.catalog import ROW_MAKERS, render_catalog
from distilld.store.incremental import IncrementalStore
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits
NOW = datetime(2027, 1, 2, 9, 30, tzinfo=UTC)

EXISTING = ["profile/rowan.md", "craft/testing.md", "craft/testing-2.md", "ops/deploy.md", "projects/kestrel.md",
            "projects/osprey.md", "feedback/preferences.md", "evidence/craft/testing.md",
            "archive/projects/marlin.md", "archive/old-notes.md", "evidence/projects/marlin.md",
            "SPINE.md", "CATALOG.md", "archive/LEDGER.md"]
NEW = ["projects/heron.md", "craft/testing-3.md", "archive/projects/kestrel.md", "evidence/projects/heron.md",
       "craft/archive/old.md", "archive/legacy/x.md", "local/SPINE.md", "local/notes.md"]
TEXTS = [
    b"# Heron\n\n- new project\n",
    b"---\nscope: Heron | pipes\nlast_updated: 2026-12-01\n---\n# Heron\n",
    b"---\nlifecycle: pinned\nread_with: [ops/deploy.md, projects/nowhere.md]\n---\n",
    b"---\nsplit_from: craft/testing.md\noversize: big table\n---\n" + b"x" * 7000,
    b"---\nevidence_for: projects/heron.md\n---\n- 2026-01-01 observe: x\n- 2026-01-02 observe: y\n",
    b"---\nunclosed frontmatter\nlast_validated: 2027-01-01\n",
    b"line\r\nmixed\nendings\r\n",
    b"\xef\xbb\xbf# with a BOM\n\xff\xfe broken utf-8\n",
    b"- [Heron](projects/heron.md) \xe2\x80\x94 a pointer. Read when heron.\n" * 3,
    b"".join(b"line %d\n" % n for n in range(70)),
    b"",
]
APPENDS = [b"\n- 2027-02-02 note\n", b"last_updated: 2027-03-03\n", b"- [Heron](projects/heron.md) \xe2\x80\x94 x\n",
           b"- projects/heron.md | Heron | validated 2026-12-01\n",
           b"- 2027-01-05T10:00:00Z archive | from: projects/kestrel.md | to: archive/projects/kestrel.md\n",
           b"rebuilt: 2028-01-01T00:00:00Z\n", b"[NON-NEGOTIABLE]\n"]

# Targeted edits of one file that change what a rule reads about another file.
REPLACEMENTS = [
    ("CATALOG.md", b"| validated 2026-11-02", b"| validated 2026-11-03"),
    ("CATALOG.md", b"- ops/deploy.md | ", b"- ops/deploy.md | pinned | "),
    ("CATALOG.md", b"| hook: ", b"| hook: X"),
    ("CATALOG.md", b"| 2 entries", b"| 3 entries"),
    ("CATALOG.md", b"- archive/old-notes.md | ", b"- archive/old-notes.md | x\n- "),
    ("archive/LEDGER.md", b"sha256: ", b"sha256: 0"),
    ("archive/LEDGER.md", b"spine-entry: - [", b"spine-entry: - [X"),
    ("archive/LEDGER.md", b"2026-09-11T08:00:00Z", b"2029-09-11T08:00:00Z"),
    ("SPINE.md", b"(ops/deploy.md)", b"(ops/deploy-2.md)"),
    ("craft/testing.md", b"last_updated: 2026-09-20", b"last_updated: 2026-09-21"),
    ("ops/deploy.md", b"read_with: [craft/testing.md]", b"read_with: [craft/testing-3.md]"),
    ("evidence/craft/testing.md", b"- 2026-05-02", b"* 2026-05-02"),
    ("archive/projects/marlin.md", b"Done.", b"Done!"),
]

edit = st.one_of(
    st.tuples(st.just("replace"), st.sampled_from(range(len(REPLACEMENTS))).map(str), st.just(b"")),
    st.tuples(st.just("write"), st.sampled_from(EXISTING + NEW), st.sampled_from(TEXTS)),
    st.tuples(st.just("append"), st.sampled_from(EXISTING + NEW), st.sampled_from(APPENDS)),
    st.tuples(st.just("remove"), st.sampled_from(EXISTING + NEW), st.just(b"")),
    st.tuples(st.just("symlink"), st.sampled_from(NEW), st.just(b"")),
    st.tuples(st.just("check"), st.just(""), st.just(b"")),
)


class Clock:
    """Strictly increasing mtimes, one per edit: what time passing between edits gives."""

    def __init__(self) -> None:
        self.now = 1_800_000_000_000_000_000

    def touch(self, path: Path) -> None:
        self.now += 10_000_000
        os.utime(path, ns=(self.now, self.now), follow_symlinks=False)


def apply(root: Path, clock: Clock, kind: str, relative: str, data: bytes) -> None:
    target = root / relative
    if kind == "check":
        return
    if kind == "replace":
        relative, old, new = REPLACEMENTS[int(relative)]
        target = root / relative
        if target.is_file() and not target.is_symlink():
            target.write_bytes(target.read_bytes().replace(old, new))
            clock.touch(target)
        return
    if kind == "remove":
        if target.is_symlink() or target.is_file():
            target.unlink()
        return
    if target.is_symlink():
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        if target.exists():
            target.unlink()
        target.symlink_to(root / "ops" / "deploy.md")
        return
    with open(target, "ab" if kind == "append" else "wb") as handle:
        handle.write(data)
    clock.touch(target)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edit, min_size=1, max_size=12), st.booleans())
def test_incremental_findings_equal_a_cold_snapshot_after_every_edit(edits: list[tuple[str, str, bytes]],
                                                                     small_caps: bool) -> None:
    small = replace(LIMITS, spine=replace(LIMITS.spine, max_lines=20, max_bytes=2000, entry_max_bytes=120),
                    tier_file=replace(LIMITS.tier_file, max_lines=8, max_bytes=300))
    caps = small if small_caps else LIMITS
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "store"
        healthy_store(root)
        clock = Clock()
        passes = IncrementalStore()
        assert passes.check(passes.snapshot(root), caps) == check_store(take_snapshot(root), caps)
        limits = replace(LIMITS, tier_file=caps.tier_file)  # the SPINE at its usual caps
        for number, (kind, relative, data) in enumerate(edits):
            apply(root, clock, kind, relative, data)
            snapshot, cold = passes.snapshot(root), take_snapshot(root)
            assert passes.check(snapshot, caps) == check_store(cold, caps), (kind, relative)
            today = date(2027, 1, 1 + number % 2)  # the day moves on too: ages change
            assert passes.budget(snapshot, limits, today) == measure_budget(cold, limits, today), (kind, relative)
            assert passes.catalog(snapshot, NOW) == render_catalog(cold, NOW), (kind, relative)


def test_unchanged_files_are_not_read_again(tmp_path: Path) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    passes = IncrementalStore()
    first = passes.snapshot(root)
    parsed = first.knowledge("ops/deploy.md")
    assert parsed.line_count > 0  # its facts cached, to be carried over
    (root / "projects" / "kestrel.md").write_bytes(b"# Kestrel\n\n- rewritten, longer than before\n")
    second = passes.snapshot(root)
    assert second.contents["ops/deploy.md"] is first.contents["ops/deploy.md"]
    assert second.knowledge("ops/deploy.md") is parsed
    assert second.contents["projects/kestrel.md"] == b"# Kestrel\n\n- rewritten, longer than before\n"


def test_the_catalog_is_rebuilt_from_kept_rows_where_nothing_they_read_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    passes = IncrementalStore()
    assert passes.catalog(passes.snapshot(root), NOW) == render_catalog(take_snapshot(root), NOW)
    # one file's bytes, and the ledger line that archived another file: both rows are made again
    with open(root / "ops" / "deploy.md", "ab") as handle:
        handle.write(b"- one more rule\n")
    ledger = root / "archive" / "LEDGER.md"
    ledger.write_bytes(ledger.read_bytes().replace(b"2026-09-11T08:00:00Z", b"2026-09-12T08:00:00Z"))
    made: list[str] = []
    for kind, maker in dict(ROW_MAKERS).items():
        monkeypatch.setitem(ROW_MAKERS, kind, lambda snap, path, maker=maker: made.append(path) or maker(snap, path))
    text = passes.catalog(passes.snapshot(root), NOW)
    monkeypatch.undo()
    assert text == render_catalog(take_snapshot(root), NOW)
    assert "archived 2026-09-12" in text
    assert sorted(made) == ["archive/projects/marlin.md", "ops/deploy.md"]


def test_a_change_the_stamps_cannot_see_is_found_by_the_full_rescan(tmp_path: Path) -> None:
    root = tmp_path / "store"
    healthy_store(root)
    target = root / "projects" / "kestrel.md"
    passes = IncrementalStore()
    passes.check(passes.snapshot(root), LIMITS)
    before = os.stat(target)
    same_size = target.read_bytes().replace(b"Schema registry", b"Schema REGISTRY")
    with open(target, "r+b") as handle:  # in place: same inode and size
        handle.write(same_size)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    if os.stat(target).st_ctime_ns != before.st_ctime_ns:
        # ctime moved (it always does, unless the clock did not tick): the refresh sees it already.
        assert passes.snapshot(root).contents["projects/kestrel.md"] == same_size
    passes.reset()
    assert passes.snapshot(root).contents["projects/kestrel.md"] == same_size
    assert passes.check(passes.snapshot(root), LIMITS) == check_store(take_snapshot(root), LIMITS)
