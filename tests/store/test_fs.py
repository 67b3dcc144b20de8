"""store/fs.py, the one writer: line endings kept, moves and copies that never overwrite, the
half-done move finished only when both names are one file, and refusals that say what to do.
Real files in tmp_path, confined to a store root as a pass is."""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
from collections.abc import Callable
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


def test_a_torn_final_line_is_taken_back_never_finished_or_built_on(store: Path) -> None:
    ledger = store / "archive/LEDGER.md"
    with fs.confined_to(store):
        fs.append_line(ledger, "- first", header="# Ledger\n\n")  # a new file (and folder) gets the header
        assert ledger.read_bytes() == b"# Ledger\n\n- first\n"
        ledger.write_bytes(b"# Ledger\r\n\r\n- first\r\n- sec")  # an append a full disk cut
        fs.append_line(ledger, "- second")
        assert ledger.read_bytes() == b"# Ledger\r\n\r\n- first\r\n- second\r\n"
        assert fs.appended(b"# L\n- a\n- b", "- c", "# L\n") == b"# L\n- a\n- c\n"
        assert fs.appended(b"# L", "- c", "# L\n") == b"# L\n- c\n"  # torn from its first line: header again
        assert fs.appended(None, "- c", "# L\n") == b"# L\n- c\n"
        ledger.write_bytes(b"# L\n- a\n- torn")
        assert fs.drop_torn_tail(ledger) == b"- torn" and ledger.read_bytes() == b"# L\n- a\n"
        assert fs.drop_torn_tail(ledger) == b"" and fs.drop_torn_tail(store / "absent.md") == b""


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


def test_what_a_write_creates_gets_the_usual_permissions(store: Path) -> None:
    previous = os.umask(0o022)
    try:
        with fs.confined_to(store):
            fs.atomic_write(store / "archive/projects/new.md", b"x\n")
    finally:
        os.umask(previous)
    assert (store / "archive").stat().st_mode & 0o7777 == 0o755
    assert (store / "archive/projects").stat().st_mode & 0o7777 == 0o755
    assert (store / "archive/projects/new.md").stat().st_mode & 0o7777 == 0o644


def test_a_dangling_link_at_the_target_is_refused_as_a_file_already_there(store: Path, tmp_path: Path) -> None:
    target = store / "archive/projects/a.md"
    target.parent.mkdir(parents=True)
    target.symlink_to(tmp_path / "nowhere.md")
    for carry_out in (fs.move_exact, fs.copy_exact):
        with fs.confined_to(store), pytest.raises(FileExistsError) as refused:
            carry_out(store / "projects/a.md", target)
        assert str(refused.value) == f"{target} already exists; refusing to overwrite it"
    assert target.is_symlink() and not (tmp_path / "nowhere.md").exists()
    assert (store / "projects/a.md").read_bytes() == b"# A\r\n\r\n- one\r\n"


def test_a_target_written_by_another_program_meanwhile_is_kept(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = store / "archive/projects/a.md"
    real_link = os.link

    def another_writer_first(*args: object, **kwargs: object) -> None:
        target.write_bytes(b"theirs\n")  # lands between the move's check and its link
        real_link(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "link", another_writer_first)
    with fs.confined_to(store), pytest.raises(FileExistsError) as refused:
        fs.move_exact(store / "projects/a.md", target)
    assert str(refused.value) == f"{target} appeared meanwhile; refusing to overwrite it"
    assert target.read_bytes() == b"theirs\n"
    assert (store / "projects/a.md").read_bytes() == b"# A\r\n\r\n- one\r\n"


def test_a_move_on_a_file_system_without_hard_links_is_a_rename(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_hard_links(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_hard_links)
    with fs.confined_to(store):
        fs.move_exact(store / "projects/a.md", store / "archive/projects/a.md")
    assert (store / "archive/projects/a.md").read_bytes() == b"# A\r\n\r\n- one\r\n"
    assert not (store / "projects/a.md").exists()


def test_a_link_as_the_old_name_of_a_move_is_not_taken_for_a_half_done_move(store: Path) -> None:
    source, target = store / "projects/alias.md", store / "projects/a.md"
    source.symlink_to(target)  # resolves to the target, but it is a link, not a second name
    with fs.confined_to(store):
        fs.finish_interrupted_move(source, target)
    assert source.is_symlink() and target.read_bytes() == b"# A\r\n\r\n- one\r\n"


def test_a_tick_is_patched_in_place_only_over_the_bytes_expected(store: Path, tmp_path: Path) -> None:
    plan = store / "PLAN.md"
    plan.write_bytes(b"- [ ] 1. back up\n- [ ] 2. move\n")
    with fs.confined_to(store):
        fs.patch_in_place(plan, 3, b" ", b"x")
        assert plan.read_bytes() == b"- [x] 1. back up\n- [ ] 2. move\n"
        with pytest.raises(ValueError) as unexpected:
            fs.patch_in_place(plan, 3, b" ", b"x")
        assert str(unexpected.value) == f"{plan}: unexpected bytes at offset 3; not patched"
        with pytest.raises(ValueError) as longer:
            fs.patch_in_place(plan, 20, b" ", b"xx")
        assert str(longer.value) == "patch_in_place keeps the file's length: old and new must be as long"
    assert plan.read_bytes() == b"- [x] 1. back up\n- [ ] 2. move\n"
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"- [ ] kept\n")
    plan.unlink()
    plan.symlink_to(outside)
    with fs.confined_to(store), pytest.raises(OSError):
        fs.patch_in_place(plan, 3, b" ", b"x")  # never through a link
    assert outside.read_bytes() == b"- [ ] kept\n"


def test_append_line_starts_a_new_file_with_nothing_but_the_line_and_names_a_refused_one(store: Path) -> None:
    journal = store / "data/journal.jsonl"
    with fs.confined_to(store):
        fs.append_line(journal, '{"step": 1}')
        long_line = "- " + "x" * 80 + "\rmore"
        with pytest.raises(ValueError) as refused:
            fs.append_line(journal, long_line)
    assert journal.read_bytes() == b'{"step": 1}\n'
    assert str(refused.value) == f"{journal}: refusing to append a line holding a line break: {long_line[:70]!r}"


def test_durable_writes_reach_the_disk_before_they_return(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def recording(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)

    def flushed(write: object) -> list[str]:
        synced.clear()
        write()  # type: ignore[operator]
        # a new file is synced under its temp name, before the rename that makes it visible
        shown = [os.path.relpath(path, store) for path in synced]
        return [re.sub(r"\.([^/]*)\.distilld-tmp\.[0-9]+\.[0-9a-f]+$", r"\1 (temp)", path) for path in shown]

    with fs.confined_to(store):
        assert flushed(lambda: fs.atomic_write(store / "SPINE.md", b"x\n")) == ["SPINE.md (temp)", "."]
        assert flushed(lambda: fs.append_line(store / "archive/LEDGER.md", "- a")) == ["archive/LEDGER.md", "archive"]
        assert flushed(lambda: fs.append_line(store / "archive/LEDGER.md", "- b")) == ["archive/LEDGER.md"]
        assert flushed(lambda: fs.append_bytes(store / "data/j.jsonl", b"{}\n")) == ["data/j.jsonl", "data"]
        assert flushed(lambda: fs.copy_exact(store / "SPINE.md", store / "backup/SPINE.md")) == ["backup/SPINE.md", "backup"]
        assert flushed(lambda: fs.move_exact(store / "projects/a.md", store / "archive/projects/a.md")) == [
            "archive/projects", "projects"]
        assert flushed(lambda: fs.fsync_file(store / "SPINE.md")) == ["SPINE.md"]
        (store / "PLAN.md").write_bytes(b"- [ ] 1\n")
        assert flushed(lambda: fs.patch_in_place(store / "PLAN.md", 3, b" ", b"x")) == ["PLAN.md"]
        # durable=False leaves every flush to a later sync_barrier, a new file's folder included
        assert flushed(lambda: fs.append_bytes(store / "data/new.jsonl", b"{}\n", durable=False)) == []
        assert flushed(lambda: fs.atomic_write(store / "CATALOG.md", b"x\n", durable=False)) == []


def _finishes(action: Callable[[], object], fifo: Path) -> BaseException | None:
    """Run ``action`` in a thread; the error it raised, or fail if it blocks (on opening the
    FIFO as if it were a folder). A blocked open is released by opening the FIFO's other end."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            raised.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=60)
        pytest.fail(f"blocked opening {fifo} as a folder")
    return raised[0] if raised else None


def _remove_confined(root: Path, path: Path) -> None:
    with fs.confined_to(root):
        fs.remove(path)


def test_a_folder_that_is_a_fifo_is_refused_at_once_never_opened(tmp_path: Path) -> None:
    # A named pipe where a folder should be would block a plain open() until some writer came.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    unconfined = _finishes(lambda: fs.write_text_keeping_endings(fifo / "x.md", "x\n"), fifo)
    assert isinstance(unconfined, NotADirectoryError)
    # Confinement is per thread: entered in the thread that writes.
    confined = _finishes(lambda: _remove_confined(fifo, fifo / "x.md"), fifo)  # the store root itself
    assert isinstance(confined, NotADirectoryError)
    inside = _finishes(lambda: _remove_confined(tmp_path, fifo / "x.md"), fifo)  # a folder in the store
    assert isinstance(inside, OSError) and inside.errno == errno.ENOTDIR
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_source_swapped_for_a_link_after_its_check_moves_the_link_never_its_target(
        store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The narrowest race of a move: the source passed its check, then became a link to a file
    # outside the store. The hard link is made to the link itself, so the store never gains a
    # second name for the outside file (through which a later write would change it).
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"not the store's\n")
    source, target = store / "projects/a.md", store / "archive/projects/a.md"
    real_exists = fs._exists

    def swap_then_check(name: str, dir_fd: int) -> bool:
        if source.exists() and not source.is_symlink():
            source.unlink()
            source.symlink_to(outside)
        return real_exists(name, dir_fd)

    monkeypatch.setattr(fs, "_exists", swap_then_check)
    with fs.confined_to(store):
        fs.move_exact(source, target)
    assert target.is_symlink() and os.readlink(target) == str(outside)
    assert outside.stat().st_nlink == 1 and outside.read_bytes() == b"not the store's\n"


def test_an_append_cut_short_by_a_full_disk_is_taken_back_and_names_the_file(
        store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = store / "archive/LEDGER.md"
    with fs.confined_to(store):
        fs.append_line(ledger, "- first", header="# Ledger\n\n")
        before = ledger.read_bytes()
        calls = iter([5])  # the disk takes 5 bytes, then it is full

        def full_disk(fd: int, data: memoryview) -> int:
            size = next(calls, None)
            if size is None:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return os.write(fd, data[:size])

        monkeypatch.setattr(fs, "_write_some", full_disk)
        with pytest.raises(OSError) as failed:
            fs.append_line(ledger, "- second, a long line that the disk cuts")
        assert ledger.read_bytes() == before
        assert failed.value.filename == str(ledger) and failed.value.errno == errno.ENOSPC
        assert "taken back, so the file is as it was" in str(failed.value)
        with pytest.raises(OSError):
            fs.append_line(store / "archive/NEW.md", "- x", header="# New\n")
        assert not (store / "archive/NEW.md").exists()  # a file the failed append made goes again


def test_a_file_with_another_name_is_never_appended_in_place(store: Path, tmp_path: Path) -> None:
    ledger = store / "archive/LEDGER.md"
    with fs.confined_to(store):
        fs.append_line(ledger, "- first", header="# Ledger\n\n")
    os.link(ledger, tmp_path / "other-name.md")
    with fs.confined_to(store), pytest.raises(fs.HardLinked) as refused:
        fs.append_line(ledger, "- second")
    assert refused.value.filename == str(ledger) and "it has 2 hard links" in str(refused.value)
    assert (tmp_path / "other-name.md").read_bytes() == b"# Ledger\n\n- first\n"
