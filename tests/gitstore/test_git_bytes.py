"""Byte-exactness across machines, under a hostile global git configuration
(``core.autocrlf=true``), for the git CLI and for distilld's own libgit2 alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from builders import EM
from distilld.gitstore.repo import open_store
from distilld.gitstore.verify import verify_archive, verify_pull
from distilld.store.ledger import Ledger
from distilld.store.text import sha256_hex
from gitmachines import GitCli, Machine, Origin, assert_converged, lifecycle_store, shared_files
from pygit2.enums import ConfigLevel

pytestmark = pytest.mark.slow

CRLF_BODY = b"# Windows builds\r\n\r\n- Sign every installer.\r\n- Line endings stay CRLF here.\r\n"


@pytest.fixture
def hostile_home(tmp_path: Path) -> Path:
    home = tmp_path / "hostile-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\tautocrlf = true\n")
    return home


@pytest.fixture
def hostile_libgit2(hostile_home: Path) -> Iterator[Path]:
    """libgit2's global config read from the hostile HOME, for this test only."""
    saved = pygit2.settings.search_path[ConfigLevel.GLOBAL]
    pygit2.settings.search_path[ConfigLevel.GLOBAL] = str(hostile_home)
    try:
        yield hostile_home
    finally:
        pygit2.settings.search_path[ConfigLevel.GLOBAL] = saved


def crlf_store(root: Path) -> None:
    """A store with a CRLF tier file, and a stale project file that is CRLF too (so its
    archived bytes, and the ledger checksum over them, carry CRs)."""
    b = lifecycle_store(root)
    b.write("craft/windows.md", b"---\r\ndomain: craft\r\nscope: Windows builds\r\n---\r\n\r\n" + CRLF_BODY)
    old_a = b.read("projects/old-a.md").replace(b"\n", b"\r\n")
    b.write("projects/old-a.md", old_a)
    spine = b.read("SPINE.md").decode()
    spine = spine.replace("## Ops\n", f"- [Windows](craft/windows.md) {EM} signing and CRLF. Read before a release.\n"
                                     "\n## Ops\n")
    b.write("SPINE.md", spine)
    b.rebuild_catalog()


def test_the_hostile_configuration_really_converts(tmp_path: Path, hostile_home: Path) -> None:
    """Without distilld's attributes, git under this HOME normalises CRLF: the test is not vacuous."""
    git = GitCli(hostile_home)
    plain = tmp_path / "plain"
    plain.mkdir()
    git(plain, "init", "-q", "-b", "main")
    (plain / "a.md").write_bytes(b"one\r\ntwo\r\n")
    git(plain, "add", "a.md")
    git(plain, "commit", "-q", "-m", "crlf")
    assert git(plain, "cat-file", "-p", "HEAD:a.md").stdout == "one\ntwo\n"


def test_crlf_and_archived_files_arrive_byte_identical(tmp_path: Path, origin: Origin, hostile_home: Path,
                                                       hostile_libgit2: Path) -> None:
    git = GitCli(hostile_home)
    a = Machine("a", tmp_path / "a", origin)
    crlf_store(a.root)
    a.init()
    report, _ = a.gc()
    assert report.ok and "projects/old-a.md" in (report.outcome.moved if report.outcome else [])
    assert a.sync().pushed
    archived = a.read("archive/projects/old-a.md")
    assert b"\r\n" in archived

    # B: cloned by the user's git CLI under autocrlf=true, then adopted by distilld.
    git(tmp_path, "clone", "-q", origin.url, "b")
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    # C: joined by distilld itself, with libgit2 reading the same hostile global config.
    c = Machine("c", tmp_path / "c", origin)
    joined = c.init()
    assert not joined.mismatches
    for machine in (b, c):
        assert machine.read("craft/windows.md").endswith(CRLF_BODY)
        assert machine.read("archive/projects/old-a.md") == archived
        assert verify_archive(open_store(machine.root)) == []
        assert machine.repo().config.get_bool("core.autocrlf") is False
    assert git(b.root, "status", "--porcelain").stdout == ""

    # A CRLF edit made on B travels back byte for byte.
    b.append("craft/windows.md", "- Timestamp the signature.\r\n")
    assert b.sync().pushed
    for machine in (a, c, a, b, c):
        assert machine.sync().ok
    files = assert_converged(origin, a, b, c)
    assert files["craft/windows.md"].endswith(b"- Timestamp the signature.\r\n")
    ledger = Ledger(files["archive/LEDGER.md"])
    line = ledger.last_archive_line("archive/projects/old-a.md")
    assert line is not None and line.value("sha256") == sha256_hex(files["archive/projects/old-a.md"])
    assert shared_files(b.root) == shared_files(c.root)


def test_a_mismatch_after_a_pull_is_reported_loudly(tmp_path: Path, origin: Origin) -> None:
    """A machine whose own git converts line endings (here: a line of its .git/info/attributes,
    which outranks the store's .gitattributes, after distilld's own block there) is caught by the
    byte check after the pull."""
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    assert a.sync().pushed
    b = Machine("b", tmp_path / "b", origin)
    b.init()
    (b.root / ".git" / "info").mkdir(exist_ok=True)
    info = b.root / ".git" / "info" / "attributes"
    info.write_text(info.read_text() + "* text eol=crlf\n")
    a.append("craft/testing.md", "- Arrives converted on B.\n")
    assert a.sync().pushed
    report = b.sync()
    assert report.state == "mismatch" and not report.ok
    assert any(m.startswith("craft/testing.md:") for m in report.mismatches), report.mismatches
    assert report.reason == f"{len(report.mismatches)} file(s) differ from what was pulled: BYTE-EXACTNESS FAILED"


def test_every_tracked_file_is_verified_not_only_the_pulled_ones(tmp_path: Path, origin: Origin) -> None:
    a = Machine("a", tmp_path / "a", origin)
    lifecycle_store(a.root)
    a.init()
    store = open_store(a.root)
    head = a.repo().head.peel(pygit2.Commit)
    a.write("ops/deploy.md", a.read("ops/deploy.md").replace(b"\n", b"\r\n"))  # not written by any pull
    found = verify_pull(store, head.tree, head.tree)
    assert [m.path for m in found] == ["ops/deploy.md"]
    assert verify_pull(store, head.tree, head.tree, exempt=["ops/deploy.md"]) == []
    (a.root / "archive/projects/marlin.md").write_bytes(b"rewritten\n")
    assert [m.path for m in verify_pull(store, head.tree, head.tree, exempt=["ops/deploy.md"])] == [
        "archive/projects/marlin.md", "archive/projects/marlin.md"]  # the blob and the ledger checksum
