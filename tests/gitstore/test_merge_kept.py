"""Merges of one repository in a row, with what the process keeps between them (blobs, the
incremental checker, catalog rows, parsed ledgers): each must find exactly what a merge that
kept nothing finds, whatever the sequence of edits on either side."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest
from distilld.gitstore.merge import TreeFiles, flatten, merge_commits
from distilld.store.incremental import IncrementalStore
from distilld.store.merge import Sides, merge_stores
from test_merge_checks import LIMITS, NOW, SIGNATURE, commit, store_files

Files = dict[str, bytes]
MARLIN_LINE = ("- 2026-{month:02d}-11T08:00:00Z archive | from: projects/marlin.md | to: archive/projects/marlin.md"
               " | sha256: 4ab2 | sha256-norm: 4ab2 | reason: {reason} | spine-entry: - [Marlin](projects/marlin.md)"
               " — {hook}\n")


def scope(path: str, words: str) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        raw = files.get(path, b"")
        start = raw.find(b"scope: ")
        if start == -1:
            return  # removed (or rewritten) by an earlier edit
        files[path] = raw[:start] + b"scope: " + words.encode() + raw[raw.index(b"\n", start):]
    return edit


def append(path: str, line: str) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        if path in files:
            files[path] = files[path] + line.encode()
    return edit


def remove(path: str) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        files.pop(path, None)
    return edit


def add(path: str, data: str) -> Callable[[Files], None]:
    def edit(files: Files) -> None:
        files[path] = data.encode()
    return edit


def archive_again(month: int, reason: str, hook: str) -> Callable[[Files], None]:
    # a later archive line for marlin: the catalog's archived row reads the last one
    return append("archive/LEDGER.md", MARLIN_LINE.format(month=month, reason=reason, hook=hook))


EDITS: list[Callable[[Files], None]] = [
    scope("projects/kestrel.md", "Kestrel ingest, renamed"),
    scope("projects/kestrel.md", "Kestrel ingest pipeline"),
    scope("archive/projects/marlin.md", "Marlin backfill, the old one"),
    append("craft/testing.md", "- One more rule about fixtures.\n"),
    append("ops/deploy.md", "- " + "a very long line " * 60 + "\n"),
    append("evidence/craft/testing.md", "- 2026-06-01 confirm: another one\n"),
    scope("evidence/craft/testing.md", "ignored"),
    add("evidence/craft/testing.md", "---\nevidence_for: craft/other.md\n---\n## Evidence log\n\n- one\n"),
    remove("evidence/projects/marlin.md"),
    add("projects/heron.md", "---\ndomain: project\nscope: Heron, not in the SPINE\nlast_updated: 2026-11-01\n"
                             "---\n\n# Heron\n\n- New.\n"),
    remove("projects/osprey.md"),
    remove("CATALOG.md"),
    archive_again(10, "moved again", "Marlin, second time."),
    archive_again(11, "and once more", "Marlin, third time."),
    append("SPINE.md", "<!-- a note -->\n"),
]


def tokens(round_: int) -> Callable[[], str]:
    """The same inbox names for the kept and the fresh merge of a round, and new ones each round
    (a constant token would loop for ever on a name an earlier round took)."""
    counter = itertools.count(round_ * 100)
    return lambda: f"{next(counter):04x}"


@pytest.mark.parametrize("seed", range(4))
def test_a_random_run_of_merges_finds_what_fresh_merges_find(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    repo = pygit2.init_repository(str(tmp_path / "repo.git"), bare=True)
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    verdicts = set()
    for round_ in range(10):
        sides = []
        for _side in range(2):
            edited = dict(files)
            for edit in rng.sample(EDITS, rng.randint(0, 3)):
                edit(edited)
            sides.append(commit(repo, edited, [base.id]))
        ours, theirs = sides
        kept = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main",
                             token=tokens(round_))
        fresh = merge_stores(*(TreeFiles(repo, flatten(c.tree)) for c in (base, ours, theirs)), NOW, LIMITS,
                             Sides(), token=tokens(round_), checks=IncrementalStore())
        assert kept.store is not None
        assert kept.store.changes == fresh.changes
        assert kept.store.blocked_by == fresh.blocked_by and kept.store.inherited == fresh.inherited
        assert kept.store.resolutions == fresh.resolutions and kept.store.inbox == fresh.inbox
        verdicts.add((kept.store.ok, bool(kept.store.inherited)))
        if rng.random() < 0.5 and kept.commit is not None:  # move on from the merge, as the next sync does
            base = repo[kept.commit]  # type: ignore[assignment]
            files = {p: repo[e[0]].data for p, e in flatten(base.tree).items()}  # type: ignore[attr-defined]
    assert len(verdicts) > 1  # the run met more than one kind of outcome


def test_a_merge_that_stops_half_way_leaves_the_kept_checker_empty_and_free(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import distilld.gitstore.merge as gitstore_merge
    import distilld.store.merge as store_merge
    repo = pygit2.init_repository(str(tmp_path / "repo.git"), bare=True)
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Ours.\n"}, [base.id])
    theirs = commit(repo, {**files, "craft/testing.md": files["craft/testing.md"] + b"- Theirs.\n"}, [base.id])

    def merge() -> gitstore_merge.TreeMerge:
        return merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main",
                             token=tokens(0))

    first = merge()
    lock, checks = gitstore_merge._CHECKS[repo.path]
    assert checks._kept  # the checker keeps what it found for the next merge

    def stop(self: object) -> None:
        raise KeyboardInterrupt  # after the catalog and the checks, before the result
    monkeypatch.setattr(store_merge._Merger, "markers", stop)
    with pytest.raises(KeyboardInterrupt):
        merge()
    assert not checks._kept and not lock.locked()  # nothing half-kept, and the next merge may use it
    monkeypatch.undo()
    again = merge()
    assert again.store is not None and first.store is not None
    assert again.store.changes == first.store.changes and again.store.ok == first.store.ok
    assert checks._kept  # the kept checker was used again, not a stand-in


def test_a_merge_while_another_uses_the_kept_checker_checks_with_its_own(tmp_path: Path) -> None:
    import distilld.gitstore.merge as gitstore_merge
    repo = pygit2.init_repository(str(tmp_path / "repo.git"), bare=True)
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Ours.\n"}, [base.id])
    theirs = commit(repo, {**files, "projects/osprey.md": b"# Osprey gone wrong\n"}, [base.id])
    with gitstore_merge._store_checks(repo) as held:  # another thread's merge, half-way
        merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main",
                               token=tokens(0))
        assert not held._kept  # not touched by the second merge
    fresh = merge_stores(*(TreeFiles(repo, flatten(c.tree)) for c in (base, ours, theirs)), NOW, LIMITS,
                         Sides(), token=tokens(0), checks=IncrementalStore())
    assert merged.store is not None
    assert merged.store.changes == fresh.changes and merged.store.blocked_by == fresh.blocked_by
