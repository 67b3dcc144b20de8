"""Attacks on the registry's journals (daemon/registry.py, engine/passes/__init__.py, engine/journal.py):
finished journals pile up (nothing deletes them), junk in a journal folder, and the recovery order."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import FIXED_NOW, healthy_store

from distilld.engine import journal as engine_journal
from distilld.engine.executor import FileWrite, Step
from distilld.engine.journal import JournalUnreadable, new_journal, unfinished_journals
from distilld.engine.recovery import interrupted_passes

BIG = b"x" * 200_000  # a compaction's journal keeps every byte it writes: megabytes on a real store


def finished_journal(directory: Path, second: int, rolled_back: bool = False) -> Path:
    moment = FIXED_NOW.replace(second=second)
    journal = new_journal(directory, "compaction", moment, "2026-11-30T12:00:00Z",
                          [Step("write a big file", [FileWrite("projects/big.md", None, BIG, None)])])
    journal.create()
    journal.mark(0)
    journal.finish(rolled_back)
    return journal.path


def test_finished_journals_are_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job (job_runner asks for the interrupted passes after each one, follow too) read and
    parsed every journal ever written, each holding every byte its pass wrote: 50 compactions of a
    real store took 0.8 s a call. A finished journal is known by its last line."""
    store = healthy_store(tmp_path / "store").root
    directory = store / "data/compact-journals"
    for second in range(10):
        finished_journal(directory, second, rolled_back=second % 2 == 1)
    loaded: list[Path] = []
    load = engine_journal.load_journal

    def counting_load(path: Path, pass_name: str) -> engine_journal.PassJournal:
        loaded.append(path)
        return load(path, pass_name)

    monkeypatch.setattr(engine_journal, "load_journal", counting_load)
    assert interrupted_passes(store) == []
    assert loaded == []

    open_one = new_journal(directory, "compaction", FIXED_NOW.replace(second=30), "x",
                           [Step("s", [FileWrite("projects/big.md", None, b"y\n", None)])])
    open_one.create()
    assert interrupted_passes(store) == [f"data/compact-journals/{open_one.path.name}"]
    assert loaded == [open_one.path]


@pytest.mark.parametrize("junk", [b"", b"not json\n", b'{"finished": true}', b'\xff\xfe\n'],
                         ids=["empty", "text", "torn-finished-line", "binary"])
def test_junk_in_a_journal_folder_is_still_refused_by_name(tmp_path: Path, junk: bytes) -> None:
    directory = tmp_path / "journals"
    directory.mkdir()
    (directory / "20261130T120000Z.jsonl").write_bytes(junk)
    with pytest.raises(JournalUnreadable, match="20261130T120000Z.jsonl"):
        unfinished_journals(directory, "compaction")


def test_a_journal_cut_after_its_finished_line_is_still_finished(tmp_path: Path) -> None:
    """A full disk can tear an append (the next one takes it back): a torn line after the finished
    line is ignored, as the whole read ignores it."""
    path = finished_journal(tmp_path / "journals", 1)
    path.write_bytes(path.read_bytes() + b'{"don')
    assert unfinished_journals(path.parent, "compaction") == []
