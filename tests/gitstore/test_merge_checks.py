"""The checks of a diverged sync's merge (gitstore/merge.py), fast and in memory: a bare
repository in tmp_path, trees built from a real store's files, no work tree and no remote."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pygit2
import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, healthy_store
from distilld.actions.gc import run_gc_apply
from distilld.gitstore.merge import (
    TreeFiles,
    TreeMerge,
    flatten,
    incoming_problems,
    is_store_path,
    merge_commits,
)
from distilld.gitstore.repo import ATTRIBUTE_LINES, BLOCK_END, BLOCK_START
from distilld.policy import load_policy
from distilld.store.incremental import IncrementalStore
from distilld.store.merge import Sides, merge_stores
from hostile import busy_store
from pygit2.enums import FileMode

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LIMITS = load_policy().limits
SIGNATURE = pygit2.Signature("Rowan", "rowan@example.invalid", 1795000000, 0)
CONFLICT = b"# Kestrel\n\n<<<<<<< ours\n- one\n=======\n- two\n>>>>>>> theirs\n"
ATTRIBUTES_TEXT = "\n".join([BLOCK_START, *ATTRIBUTE_LINES, BLOCK_END, ""]).encode()


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "repo.git"), bare=True)


def store_files(tmp_path: Path) -> dict[str, bytes]:
    root = tmp_path / "store"
    healthy_store(root)
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return {**files, ".gitattributes": ATTRIBUTES_TEXT, "README.txt": b"the user's own notes\n"}


def commit(repo: pygit2.Repository, files: dict[str, bytes], parents: list[pygit2.Oid]) -> pygit2.Commit:
    index = pygit2.Index()
    for path, data in sorted(files.items()):
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), FileMode.BLOB))
    tree = index.write_tree(repo)
    oid = repo.create_commit(None, SIGNATURE, SIGNATURE, "state", tree, parents)
    found = repo[oid]
    assert isinstance(found, pygit2.Commit)
    return found


def problems_between(repo: pygit2.Repository, before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    base, theirs = commit(repo, before, []), commit(repo, after, [])
    return incoming_problems(repo, flatten(base.tree), flatten(theirs.tree))


def test_an_incoming_store_file_with_conflict_markers_is_refused(repo: pygit2.Repository, tmp_path: Path) -> None:
    files = store_files(tmp_path)
    assert problems_between(repo, files, {**files, "projects/kestrel.md": CONFLICT}) == [
        "projects/kestrel.md: the remote's version holds git conflict markers"]


def test_an_incoming_attributes_file_keeping_the_marker_but_not_the_lines_is_refused(
        repo: pygit2.Repository, tmp_path: Path) -> None:
    files = store_files(tmp_path)
    hollow = f"{BLOCK_START}\n{BLOCK_END}\n".encode()
    found = problems_between(repo, files, {**files, ".gitattributes": hollow})
    assert len(found) == 1 and found[0].startswith(".gitattributes: the remote's version drops distilld's settings")
    assert problems_between(repo, files, {**files, ".gitattributes": ATTRIBUTES_TEXT + b"*.png binary\n"}) == []


def test_files_the_remote_did_not_change_are_not_inspected(repo: pygit2.Repository, tmp_path: Path) -> None:
    # Both already hold what would be refused if it came in: unchanged, it is not incoming.
    files = {**store_files(tmp_path), "projects/kestrel.md": CONFLICT, "data/gc-log.jsonl": b"{}\n",
             ".gitattributes": f"{BLOCK_START}\n{BLOCK_END}\n".encode()}
    changed = {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Roll back within ten minutes.\n"}
    assert problems_between(repo, files, changed) == []


def test_an_incoming_machine_local_path_is_refused(repo: pygit2.Repository, tmp_path: Path) -> None:
    files = store_files(tmp_path)
    assert problems_between(repo, files, {**files, "data/gc-log.jsonl": b"{}\n"}) == [
        "data/gc-log.jsonl: the remote tracks a machine-local path; distilld never takes one in"]


def test_a_non_store_file_changed_on_one_side_only_is_taken_not_refused(repo: pygit2.Repository,
                                                                      tmp_path: Path) -> None:
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "README.txt": b"edited here\n"}, [base.id])
    theirs = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Roll back fast.\n"}, [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main")
    assert merged.problems == [] and merged.ok and merged.commit is not None
    tree = repo[merged.commit].tree  # type: ignore[attr-defined]
    assert repo[tree["README.txt"].id].data == b"edited here\n"
    assert repo[tree["ops/deploy.md"].id].data.endswith(b"- Roll back fast.\n")
    # and the other way round: changed on their side only, taken from theirs
    merged = merge_commits(repo, theirs, ours, base, NOW, SIGNATURE, "p2", LIMITS, Sides(), "origin/main")
    assert merged.problems == [] and "README.txt" in merged.changed


def test_a_non_store_file_changed_on_both_sides_is_refused(repo: pygit2.Repository, tmp_path: Path) -> None:
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "README.txt": b"edited here\n"}, [base.id])
    theirs = commit(repo, {**files, "README.txt": b"edited there\n"}, [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main")
    assert merged.problems == ["README.txt: changed on both machines and not a store file; distilld will not "
                               "merge it (merge it with git yourself)"]
    assert merged.commit is None


class CountingRepo:
    """A repository that counts the objects read through it."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo, self.reads = repo, 0

    def __getitem__(self, oid: pygit2.Oid) -> object:
        self.reads += 1
        return self.repo[oid]


def test_tree_files_read_blobs_once_with_or_without_a_shared_cache(repo: pygit2.Repository, tmp_path: Path) -> None:
    files = store_files(tmp_path)
    flat = flatten(commit(repo, files, []).tree)
    alone = TreeFiles(repo, flat)
    assert alone.get("ops/deploy.md") == files["ops/deploy.md"]
    assert alone.get("README.txt") is None  # not a store file
    assert alone.get("projects/none.md") is None
    shared: dict[pygit2.Oid, bytes] = {}
    counted = CountingRepo(repo)
    cached = TreeFiles(counted, flat, shared)  # type: ignore[arg-type]
    assert cached.get("ops/deploy.md") == cached.get("ops/deploy.md") == files["ops/deploy.md"]
    assert counted.reads == 1  # read once, then from the cache
    assert shared == {flat["ops/deploy.md"][0]: files["ops/deploy.md"]}
    assert sorted(alone.paths()) == sorted(p for p in files if p.endswith(".md") and "/" in p or p in (
        "SPINE.md", "CATALOG.md"))


def commit_with_modes(repo: pygit2.Repository, files: dict[str, tuple[bytes | pygit2.Oid, FileMode]]) -> pygit2.Commit:
    index = pygit2.Index()
    for path, (data, mode) in sorted(files.items()):
        oid = data if isinstance(data, pygit2.Oid) else repo.create_blob(data)
        index.add(pygit2.IndexEntry(path, oid, mode))
    found = repo[repo.create_commit(None, SIGNATURE, SIGNATURE, "state", index.write_tree(repo), [])]
    assert isinstance(found, pygit2.Commit)
    return found


def test_an_incoming_symlink_or_submodule_is_refused_by_name(repo: pygit2.Repository, tmp_path: Path) -> None:
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    plain = {p: (d, FileMode.BLOB) for p, d in files.items()}
    theirs = commit_with_modes(repo, {**plain, "projects/link.md": (b"../../etc/passwd", FileMode.LINK),
                                      "projects/sub": (base.id, FileMode.COMMIT)})
    assert incoming_problems(repo, flatten(base.tree), flatten(theirs.tree)) == [
        "projects/link.md: the remote holds a symlink; the store holds none",
        "projects/sub: the remote holds a submodule; the store holds none",
    ]


@pytest.mark.parametrize(("name", "data", "problem"), [
    (".gitignore", b"*\n!*.md\n", True),  # the block is gone
    (".gitattributes", b"*.md text\n", True),
    (".gitattributes", f"{BLOCK_START}\n{BLOCK_END}\n".encode(), True),  # the marker without its lines
    (".gitattributes", ATTRIBUTES_TEXT + b"# caf\xe9 in Latin-1\n", False),  # undecodable bytes: still read
    (".gitignore", f"{BLOCK_START}\n*\n{BLOCK_END}\n".encode(), False),
])
def test_incoming_managed_files_must_keep_distillds_block(repo: pygit2.Repository, tmp_path: Path, name: str,
                                                          data: bytes, problem: bool) -> None:
    files = store_files(tmp_path)
    found = problems_between(repo, files, {**files, name: data})
    expected = [f"{name}: the remote's version drops distilld's settings (byte-exactness, the allow-list); "
                "run `distilld init` on the machine that changed it"]
    assert found == (expected if problem else [])


def test_a_refused_merge_reports_no_store_merge_and_no_change(repo: pygit2.Repository, tmp_path: Path) -> None:
    assert TreeMerge().problems == [] and TreeMerge().changed == [] and TreeMerge().ok
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "README.txt": b"edited here\n"}, [base.id])
    theirs = commit(repo, {**files, "README.txt": b"edited there\n"}, [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main")
    assert merged.store is None and merged.changed == [] and not merged.ok


def test_a_merge_that_would_break_the_store_is_not_committed(repo: pygit2.Repository, tmp_path: Path) -> None:
    files = store_files(tmp_path)
    spine = files["SPINE.md"]
    room = 80 - spine.count(b"\n")
    base = commit(repo, files, [])
    # Each side alone stays within the SPINE's 80 lines; both together do not.
    ours = commit(repo, {**files, "SPINE.md": spine + b"".join(b"<!-- here %d -->\n" % i for i in range(room))},
                  [base.id])
    theirs = commit(repo, {**files, "SPINE.md": spine + b"".join(b"<!-- there %d -->\n" % i for i in range(room))},
                    [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main")
    # Past a cap only together: merged (compaction mends it), or the machines never meet again.
    assert merged.problems == [] and merged.store is not None and merged.store.ok and merged.commit is not None
    assert [f.code for f in merged.store.over_caps] == ["spine-lines"]
    # One side drops a file, the other points at it: each passes alone, the merge would not.
    dropped = commit(repo, {p: raw for p, raw in files.items() if p != "projects/kestrel.md"} | {
        "SPINE.md": spine.replace(KESTREL_ENTRY.encode() + b"\n", b"")}, [base.id])
    pointed = commit(repo, {**files, "SPINE.md": spine + f"- [Replays](projects/kestrel.md) {EM} replays.\n".encode()},
                     [base.id])
    broken = merge_commits(repo, dropped, pointed, base, NOW, SIGNATURE, "p2", LIMITS, Sides(), "origin/main")
    assert broken.problems == [] and broken.store is not None and not broken.store.ok
    assert not broken.ok and broken.commit is None


def test_one_sided_non_store_changes_and_deletions_are_taken_from_theirs(repo: pygit2.Repository,
                                                                       tmp_path: Path) -> None:
    files = {**store_files(tmp_path), "NOTES.txt": b"to be removed there\n"}
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Roll back fast.\n"}, [base.id])
    theirs_files = {k: v for k, v in files.items() if k != "NOTES.txt"}
    theirs = commit(repo, {**theirs_files, "README.txt": b"edited there\n"}, [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main")
    assert merged.ok and merged.commit is not None and merged.store is not None
    tree = repo[merged.commit].tree  # type: ignore[attr-defined]
    assert repo[tree["README.txt"].id].data == b"edited there\n"
    assert "NOTES.txt" not in tree
    assert sorted(merged.changed) == ["NOTES.txt", "README.txt"]


def test_a_knowledge_file_changed_on_both_sides_is_kept_and_said_in_the_commit(repo: pygit2.Repository,
                                                                             tmp_path: Path) -> None:
    files = store_files(tmp_path)
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Ours: roll back fast.\n"}, [base.id])
    theirs = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Theirs: page first.\n"}, [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main",
                           token=lambda: "c0ffee")
    assert merged.ok and merged.commit is not None and merged.store is not None
    assert merged.store.inbox and all("c0ffee" in item for item in merged.store.inbox)
    text = repo[merged.commit].message  # type: ignore[attr-defined]
    assert text.startswith(f"distilld: merge origin/main ({len(merged.store.inbox)} version(s) kept in inbox/)")
    assert "\nResolutions:\n" in text
    assert all(f"\n    {line}" in text for line in merged.store.resolutions)


def test_failures_both_sides_had_are_listed_and_the_commit_carries_its_trailers(repo: pygit2.Repository,
                                                                              tmp_path: Path) -> None:
    unpointed = {f"projects/unpointed-{i:02}.md": b"# No SPINE line, on both machines\n" for i in range(21)}
    files = {**store_files(tmp_path), **unpointed}
    base = commit(repo, files, [])
    ours = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Ours: roll back.\n"}, [base.id])
    theirs = commit(repo, {**files, "ops/deploy.md": files["ops/deploy.md"] + b"- Theirs: page first.\n"}, [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "pass-7", LIMITS, Sides(), "origin/main")
    assert merged.ok and merged.commit is not None and merged.store is not None
    assert len(merged.store.inherited) > 20 and merged.store.resolutions
    text = repo[merged.commit].message  # type: ignore[attr-defined]
    assert text.startswith("distilld: merge origin/main (")
    listed = [f"    [{f.group}] {f.message}" for f in merged.store.inherited[:20]]
    # after the resolutions, the first 20 inherited failures and no more
    assert "\nFailures both sides already had (not caused by this merge):\n" + "\n".join(listed) + "\n\n" in text
    assert "\nResolutions:\n" in text.split("Failures both sides")[0]
    assert "Distilld-Operation: sync-merge" in text and "Distilld-Pass: pass-7" in text


def test_a_file_archived_on_their_side_leaves_the_merged_tree(repo: pygit2.Repository, tmp_path: Path) -> None:
    def tree_files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and is_store_path(p.relative_to(root).as_posix())}

    machine = tmp_path / "machine"
    busy_store(machine)
    before = {**tree_files(machine), ".gitattributes": ATTRIBUTES_TEXT, "README.txt": b"notes\n"}
    run_gc_apply(machine, load_policy(), lambda: FIXED_NOW)  # archives projects/heron.md
    after = {**tree_files(machine), ".gitattributes": ATTRIBUTES_TEXT, "README.txt": b"notes\n"}
    assert "projects/heron.md" in before and "projects/heron.md" not in after
    base = commit(repo, before, [])
    ours = commit(repo, {**before, "README.txt": b"edited here\n"}, [base.id])
    theirs = commit(repo, after, [base.id])
    merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main")
    assert merged.ok and merged.commit is not None
    tree = repo[merged.commit].tree  # type: ignore[attr-defined]
    assert "projects/heron.md" not in tree and "archive/projects/heron.md" in tree


def test_merges_of_one_repository_in_a_row_find_what_a_fresh_merge_finds(repo: pygit2.Repository,
                                                                        tmp_path: Path) -> None:
    """The process keeps one incremental checker per repository and the blobs it read: the next
    merge's verdict, catalog and inherited failures are those of a merge that kept nothing."""
    files = {**store_files(tmp_path), "projects/unpointed.md": b"# No SPINE line, on both machines\n"}
    spine = files["SPINE.md"]
    rounds = [
        ({"ops/deploy.md": files["ops/deploy.md"] + b"- Ours: roll back.\n"},
         {"craft/testing.md": files["craft/testing.md"] + b"- Theirs: one more test.\n"}),
        # ours drops the unpointed file, theirs points at it: together a pointer to a missing file
        ({"projects/unpointed.md": None},
         {"SPINE.md": spine + "- [Unpointed](projects/unpointed.md) \u2014 now pointed at.\n".encode()}),
        ({"ops/deploy.md": files["ops/deploy.md"] + b"- Ours: page first.\n"},
         {"ops/deploy.md": files["ops/deploy.md"] + b"- Theirs: page later.\n", "projects/unpointed.md": None}),
    ]
    base = commit(repo, files, [])
    seen = []
    for ours_edit, theirs_edit in rounds * 2:  # the second time round, everything is kept from the first
        def edited(edit: dict[str, bytes | None]) -> dict[str, bytes]:
            out = {**files, **{k: v for k, v in edit.items() if v is not None}}
            return {k: v for k, v in out.items() if edit.get(k, b"") is not None}
        ours, theirs = commit(repo, edited(ours_edit), [base.id]), commit(repo, edited(theirs_edit), [base.id])
        merged = merge_commits(repo, ours, theirs, base, NOW, SIGNATURE, "p1", LIMITS, Sides(), "origin/main",
                               token=lambda: "c0ffee")
        fresh = merge_stores(*(TreeFiles(repo, flatten(c.tree)) for c in (base, ours, theirs)), NOW, LIMITS,
                             Sides(), token=lambda: "c0ffee", checks=IncrementalStore())
        assert merged.store is not None
        assert merged.store.changes == fresh.changes
        assert merged.store.blocked_by == fresh.blocked_by and merged.store.inherited == fresh.inherited
        assert merged.store.resolutions == fresh.resolutions
        seen.append((merged.store.ok, bool(merged.store.inherited)))
    assert seen[:3] == [(True, True), (False, False), (True, False)] and seen[3:] == seen[:3]
