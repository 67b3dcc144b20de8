"""The one internal journal (engine/journal.py): written, marked, closed, and read back; a
compaction journal of the previous version (no "pass" key) still reads as a compaction's."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from distilld.engine.executor import FileWrite, LedgerAppend, SpineEdit, Step
from distilld.engine.journal import JournalUnreadable, load_journal, new_journal, unfinished_journals

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def steps() -> list[Step]:
    return [Step("split craft/x.md", [FileWrite("craft/x.md", "a" * 64, b"new\n", b"old\n")]),
            Step("archive projects/y.md", [LedgerAppend("projects/y.md", "archive", "b" * 64, "stale", "c" * 64, "- [Y](projects/y.md)"),
                                           SpineEdit("projects/y.md")])]


def test_a_journal_reads_back_as_written_marked_and_closed(tmp_path: Path) -> None:
    journal = new_journal(tmp_path / "data/compact-journals", "compaction", NOW, "2026-11-30T12:00:00Z", steps())
    journal.create()
    journal.mark(0)
    again = load_journal(journal.path, "compaction")
    assert (again.pass_name, again.ts, again.today) == ("compaction", "2026-11-30T12:00:00Z", "2026-11-30")
    assert again.steps == [Step(s.title, s.ops, i == 0) for i, s in enumerate(steps())]
    assert unfinished_journals(tmp_path / "data/compact-journals", "compaction") == [again]
    journal.finish()
    assert unfinished_journals(tmp_path / "data/compact-journals", "compaction") == []
    second = new_journal(tmp_path / "data/compact-journals", "compaction", NOW, "x", [])
    assert second.path.name == "20261130T120000Z-2.jsonl"  # the same second: a name of its own


def test_a_compaction_journal_of_the_previous_version_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "20261130T120000Z.jsonl"
    head = {"ts": "2026-11-30T12:00:00Z", "today": "2026-11-30",
            "steps": [{"title": "t", "done": False, "ops": [{"write": "craft/x.md", "before": None, "data": "x\n"}]}]}
    path.write_text(json.dumps(head) + "\n" + json.dumps({"done": 0}) + "\n")
    journal = load_journal(path, "compaction")
    assert journal.pass_name == "compaction" and journal.steps[0].done and not journal.finished


def test_an_unreadable_journal_names_itself_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "data/restore-journals/20261130T120000Z.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("{not json\n")
    with pytest.raises(JournalUnreadable, match=r"20261130T120000Z.jsonl: not a readable restore journal .*move it out of "
                                                r"restore-journals/"):
        unfinished_journals(path.parent, "restore")


def test_a_torn_final_line_is_a_mark_never_written_and_the_next_mark_takes_it_back(tmp_path: Path) -> None:
    journal = new_journal(tmp_path / "data/compact-journals", "compaction", NOW, "2026-11-30T12:00:00Z", steps())
    journal.create()
    journal.mark(0)
    with journal.path.open("ab") as handle:
        handle.write(b'{"done": 1')  # a full disk cut the next mark
    again = load_journal(journal.path, "compaction")
    assert [s.done for s in again.steps] == [True, False] and not again.finished
    again.mark(1)
    again.finish()
    lines = journal.path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and [json.loads(line) for line in lines[1:-1]] == [{"done": 0}, {"done": 1}, {"finished": True}]
    assert unfinished_journals(tmp_path / "data/compact-journals", "compaction") == []
