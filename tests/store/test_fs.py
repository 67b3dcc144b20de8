"""store/fs.py, the one writer: line endings kept, moves and copies that never overwrite, the
half-done move finished only when both names are one file, and refusals that say what to do.
Real files in tmp_path, confined to a store root as a pass is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from distilld.errors import UnsafeStore
from distilld.store import fs


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    (root / "projects").mkdir(parents=True)
    (root / "projects/a.md").write_bytes(b"# A\r\n\r\n- one\r\n")
    return root


def test_writing_text_keeps_the_files_crlf_endings_and_a_new_file_gets_lf(store: Path) -> None:
    with fs.confined_to(store):
        written = fs.write_text_keeping_endings(store / "projects/a.md", "# A\n\n- one\n- two\n")
        fresh = fs.write_text_keeping_endings(store / "projects/b.md", "# B\n\n- one\n")
    assert written == b"# A\r\n\r\n- one\r\n- two\r\n" == (store / "projects/a.md").read_bytes()
    assert fresh == b"# B\n\n- one\n" == (store / "projects/b.md").read_bytes()
    assert fs.with_line_ending(b"a\nb\n", b"\n") == b"a\nb\n"
    assert fs.with_line_ending(b"a\nb\n", b"\r\n") == b"a\r\nb\r\n"


def test_a_line_appended_to_a_file_without_a_final_break_starts_a_line_of_its_own(store: Path) -> None:
    ledger = store / "archive/LEDGER.md"
    with fs.confined_to(store):
        fs.append_line(ledger, "- first", header="# Ledger\n\n")  # a new file (and folder) gets the header
        assert ledger.read_bytes() == b"# Ledger\n\n- first\n"
        ledger.write_bytes(b"# Ledger\r\n\r\n- first")
        fs.append_line(ledger, "- second")
    assert ledger.read_bytes() == b"# Ledger\r\n\r\n- first\r\n- second\r\n"


def test_a_move_creates_the_target_folder_and_never_overwrites(store: Path) -> None:
    with fs.confined_to(store):
        fs.move_exact(store / "projects/a.md", store / "archive/projects/a.md")
    assert (store / "archive/projects/a.md").read_bytes() == b"# A\r\n\r\n- one\r\n"
    assert not (store / "projects/a.md").exists()
    (store / "projects/a.md").write_bytes(b"new\n")
    with fs.confined_to(store), pytest.raises(FileExistsError) as refused:
        fs.move_exact(store / "projects/a.md", store / "archive/projects/a.md")
    assert str(refused.value) == f"{store / 'archive/projects/a.md'} already exists; refusing to overwrite it"
    assert (store / "projects/a.md").read_bytes() == b"new\n"
    assert (store / "archive/projects/a.md").read_bytes() == b"# A\r\n\r\n- one\r\n"


def test_a_copy_makes_its_folder_keeps_the_bytes_and_refuses_to_overwrite(store: Path) -> None:
    target = store / "restored/deep/a.md"
    with fs.confined_to(store):
        fs.copy_exact(store / "projects/a.md", target)
    assert target.read_bytes() == (store / "projects/a.md").read_bytes() == b"# A\r\n\r\n- one\r\n"
    target.write_bytes(b"kept\n")
    with fs.confined_to(store), pytest.raises(FileExistsError) as refused:
        fs.copy_exact(store / "projects/a.md", target)
    assert str(refused.value) == f"{target} already exists; refusing to overwrite it"
    assert target.read_bytes() == b"kept\n"
    with fs.confined_to(store), pytest.raises(FileNotFoundError) as missing:
        fs.copy_exact(store / "projects/gone.md", store / "restored/gone.md")
    assert (missing.value.strerror, missing.value.filename) == ("no such file", str(store / "projects/gone.md"))
    assert not (store / "restored/gone.md").exists()


def test_reading_never_creates_folders(store: Path) -> None:
    with fs.confined_to(store):
        fs.write_text_keeping_endings(store / "new/folder/x.md", "x\n")  # writing does
        with pytest.raises(FileNotFoundError):
            fs.remove(store / "missing/x.md")
        with pytest.raises(FileNotFoundError):
            fs.fsync_file(store / "missing-too/x.md")
    assert (store / "new/folder/x.md").read_bytes() == b"x\n"
    assert not (store / "missing").exists() and not (store / "missing-too").exists()


def test_finishing_an_interrupted_move_drops_the_old_name_only_when_both_are_one_file(store: Path) -> None:
    source, target = store / "projects/a.md", store / "archive/projects/a.md"
    target.parent.mkdir(parents=True)
    os.link(source, target)  # killed between link and unlink
    with fs.confined_to(store):
        fs.finish_interrupted_move(source, target)
    assert not source.exists() and target.read_bytes() == b"# A\r\n\r\n- one\r\n"

    source.write_bytes(b"a different file\n")  # two files: the caller judges, nothing is removed
    with fs.confined_to(store):
        fs.finish_interrupted_move(source, target)
    assert source.read_bytes() == b"a different file\n" and target.exists()

    target.unlink()
    target.symlink_to(source)  # a planted link at the target is not "the same file"
    with fs.confined_to(store):
        fs.finish_interrupted_move(source, target)
    assert source.read_bytes() == b"a different file\n"


def test_refusals_say_that_nothing_was_written_and_what_to_do(store: Path, tmp_path: Path) -> None:
    with fs.confined_to(store), pytest.raises(UnsafeStore) as outside:
        fs.atomic_write(tmp_path / "elsewhere.md", b"x\n")
    assert str(outside.value) == (f"{tmp_path}: outside the store {store}; a pass writes only "
                                  "inside its store (a journal or manifest naming this path was crafted or "
                                  "damaged), so nothing was written")
    (tmp_path / "away").mkdir()
    (store / "archive").symlink_to(tmp_path / "away")
    with fs.confined_to(store), pytest.raises(UnsafeStore) as linked:
        fs.atomic_write(store / "archive/x.md", b"x\n")
    assert str(linked.value) == (f"{store / 'archive'} is a symbolic link (to {tmp_path / 'away'}): distilld "
                                 "never writes through a link, so nothing was written. Replace the link with a "
                                 "real folder (move the files back into the store), then run the pass again.")
    assert list((tmp_path / "away").iterdir()) == []
