"""After a pull only what the pull changed is verified; the whole work tree is verified on the
reconciliation schedule (verify_work_tree), so a byte change nobody pulled is still found."""

from __future__ import annotations

from pathlib import Path

import pygit2
from distilld.gitstore.repo import open_store
from distilld.gitstore.verify import verify_pulled, verify_work_tree
from gitmachines import Machine, Origin, lifecycle_store


def joined_pair(tmp_path: Path, origin: Origin) -> tuple[Machine, Machine]:
    """Machine a with a store pushed to the origin, and machine b that joined from it."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    return a, b


def test_a_pull_verifies_the_paths_it_wrote_and_the_full_check_finds_the_rest(tmp_path: Path,
                                                                              origin: Origin) -> None:
    a, b = joined_pair(tmp_path, origin)
    before = b.repo().head.peel(pygit2.Commit).tree
    a.append("craft/testing.md", "- Pulled by B.\n")
    assert a.sync().pushed
    report = b.sync()
    assert report.integration == "fast-forward" and report.mismatches == []
    store = open_store(b.root)
    after = b.repo().head.peel(pygit2.Commit).tree
    # After the pull, bytes change that the pull did not bring: not what a pull checks.
    b.write("ops/deploy.md", b.read("ops/deploy.md").replace(b"\n", b"\r\n"))
    b.write("archive/projects/marlin.md", b.read("archive/projects/marlin.md") + b"tampered\n")
    assert verify_pulled(store, before, after) == []
    b.write("craft/testing.md", b.read("craft/testing.md") + b"- changed after the pull\n")
    assert [m.path for m in verify_pulled(store, before, after)] == ["craft/testing.md"]
    # The full check (the reconciliation's) finds the archived file against its ledger checksum;
    # edits git sees as uncommitted are not expected to match HEAD.
    assert [m.path for m in verify_work_tree(store)] == ["archive/projects/marlin.md"]

def test_a_pulled_ledger_line_has_its_archived_file_checked(tmp_path: Path, origin: Origin) -> None:
    a, b = joined_pair(tmp_path, origin)
    before = b.repo().head.peel(pygit2.Commit).tree
    a.gc()
    assert a.sync().pushed
    assert b.sync().ok
    after = b.repo().head.peel(pygit2.Commit).tree
    store = open_store(b.root)
    archived = [p for p in b.repo().head.peel(pygit2.Commit).tree["archive"]["projects"]]
    assert archived
    newly = sorted(f"archive/projects/{entry.name}" for entry in archived
                   if f"archive/projects/{entry.name}" not in {f"archive/projects/{e.name}" for e in
                                                               before["archive"]["projects"]})
    assert newly, "the gc archived something"
    target = b.root / newly[0]
    target.write_bytes(target.read_bytes() + b"changed after the pull\n")
    found = verify_pulled(store, before, after)
    assert [m.path for m in found] == [newly[0], newly[0]]  # its blob and its ledger checksum
