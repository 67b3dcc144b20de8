"""store/ledger.py: what a parsed line says, and ``lost_lines`` (which lines of an earlier copy
of the ledger are gone)."""

from __future__ import annotations

from distilld.store.ledger import LEDGER_HEADER, Ledger, lost_lines, merge_ledgers, parse_line, restore_event

A = "- 2026-03-01T10:00:00Z archive | from: projects/a.md | to: archive/projects/a.md | reason: stale"
B = "- 2026-03-02T10:00:00Z restore | from: archive/projects/a.md | to: projects/a.md | reason: asked"
C = "- 2026-03-03 archive | from: projects/c.md | to: archive/projects/c.md | reason: stale"


def ledger(*lines: str, ending: str = "\n") -> bytes:
    return (LEDGER_HEADER + "".join(line + ending for line in lines)).encode()


def test_nothing_is_lost_when_the_ledger_only_grew() -> None:
    assert lost_lines(ledger(A, B), ledger(A, B)) == []
    assert lost_lines(ledger(A, B), ledger(A, B, C)) == []
    assert lost_lines(ledger(B, C), ledger(A, B, C)) == []  # sorted in before: growth
    assert lost_lines(b"", ledger(A)) == []


def test_a_deleted_line_is_lost_and_named() -> None:
    assert lost_lines(ledger(A, B, C), ledger(A, C)) == [B]
    assert lost_lines(ledger(A, B), b"") == [A, B]


def test_a_changed_line_is_lost() -> None:
    assert lost_lines(ledger(A, B), ledger(A, B.replace("asked", "edited"))) == [B]
    assert lost_lines(ledger(A + " by X"), ledger(A + " by ")) == [A + " by X"]  # cut short at its end


def test_lines_count_as_often_as_they_occur() -> None:
    assert lost_lines(ledger(A, A, B), ledger(A, B)) == [A]
    assert lost_lines(ledger(A, A), ledger(A)) == [A]
    assert lost_lines(ledger(A), ledger(A, A)) == []


def test_line_endings_and_lines_outside_the_events_do_not_count() -> None:
    assert lost_lines(ledger(A, B), ledger(A, B, ending="\r\n")) == []
    assert lost_lines(ledger(A, B, ending="\r\n"), ledger(A, B)) == []
    assert lost_lines(ledger(A), ("# Another title\n\n" + A + "\n").encode()) == []  # header edits are not events
    assert lost_lines(ledger(A) + b"a stray note\n", ledger(A)) == []
    assert lost_lines(ledger(A) + b"  - indented\n", ledger(A)) == []


def test_bytes_that_are_not_utf8_come_back_as_they_were() -> None:
    odd = A.encode().replace(b"stale", b"st\xffle")
    lost = lost_lines(ledger().rstrip(b"\n") + b"\n" + odd + b"\n", ledger(A))
    assert len(lost) == 1 and lost[0].encode("utf-8", "surrogateescape") == odd


# -- parsing ---------------------------------------------------------------------------------

def test_only_an_archive_line_is_an_archive_event_for_its_target() -> None:
    # A restore line that (wrongly) names the archived path as its `to:` is not the archive
    # event of that file: the checker's test is `| to: A |` on an *archive* line.
    odd = "- 2026-03-04 restore | from: archive/projects/c.md | to: archive/projects/c.md | reason: odd"
    parsed = Ledger(ledger(A, odd))
    assert parsed.last_archive_line("archive/projects/c.md") is None
    found = parsed.last_archive_line("archive/projects/a.md")
    assert found is not None and found.text == A
    after_a_restore = Ledger(ledger(A, B, C)).last_archive_line("archive/projects/c.md")
    assert after_a_restore is not None and after_a_restore.text == C


def test_a_segment_that_is_not_a_known_key_is_an_unescaped_pipe() -> None:
    line = parse_line(7, A + " | more words")
    assert [(p.code, p.message) for p in line.problems] == [("ledger-unescaped-pipe", "more words")]
    assert parse_line(8, A).problems == []


# -- merging two machines' copies ------------------------------------------------------------

def test_a_merge_keeps_each_line_as_often_as_the_side_that_has_it_most() -> None:
    def count(raw: bytes, line: str) -> int:
        return raw.decode().splitlines().count(line)

    assert count(merge_ledgers(ledger(A, A), ledger(A, A, A)), A) == 3
    assert count(merge_ledgers(ledger(A, A, A), ledger(A, A)), A) == 3
    assert count(merge_ledgers(ledger(A, A, B), ledger(A, A, B, C)), A) == 2
    merged = merge_ledgers(ledger(A, A, B), ledger(A, A, B, C))
    assert merged == ledger(A, A, B, C)


def test_only_a_known_event_with_a_tier_target_decides_a_files_state() -> None:
    # An unknown event naming the file (C2 reports it) must not hide the archive line before it;
    # a known event missing its `to:`, or whose target is not a tier file, decides nothing.
    unknown = "- 2026-03-05 moved | from: archive/projects/a.md | to: projects/a.md | reason: by hand"
    no_target = "- 2026-03-06 restore | from: archive/projects/c.md | reason: asked"
    not_a_tier = "- 2026-03-07 restore | from: archive/evidence/c.md | to: evidence/c.md | reason: odd"
    state = Ledger(ledger(A, unknown, C, no_target, not_a_tier)).last_event_by_path
    assert {path: line.text for path, line in state.items()} == {"projects/a.md": A, "projects/c.md": C}


def test_every_segment_after_a_bad_one_is_still_read() -> None:
    text = ("- 2026-03-01 archive | from: projects/a.md | stray words | to: archive/projects/a.md"
            " | more | reason: stale")
    line = parse_line(3, text)
    assert [p.message for p in line.problems] == ["stray words", "more"]
    assert line.fields == {"from": "projects/a.md", "to": "archive/projects/a.md", "reason": "stale"}


def test_an_archived_name_holding_a_pipe_is_found_as_the_checker_finds_it() -> None:
    # An old client wrote `to:` unescaped; the checker's test is the substring `| to: A |`, so
    # the name is found whole, and so is every shorter cut that the substring test also matches.
    odd = ("- 2026-03-04 archive | from: projects/a | b.md | to: archive/projects/a | b.md"
           " | sha256: x | reason: stale")
    parsed = Ledger(ledger(odd))
    for name in ("archive/projects/a | b.md", "archive/projects/a"):
        found = parsed.last_archive_line(name)
        assert found is not None and found.text == odd
    assert parsed.last_archive_line("archive/projects/a | b") is None
    # A second `| to: ` further on (an unescaped reason) is one more match of the substring test.
    twice = A + " | to: archive/projects/z.md | spine-entry: x"
    found = Ledger(ledger(twice)).last_archive_line("archive/projects/z.md")
    assert found is not None and found.text == twice


def test_a_restore_line_is_plain_unless_modified_and_has_a_checksum_only_when_given() -> None:
    stamp = "2026-03-02T10:00:00Z"
    assert restore_event(stamp, "projects/a.md", "asked", None) == (
        "- 2026-03-02T10:00:00Z restore | from: archive/projects/a.md | to: projects/a.md | reason: asked")
    assert restore_event(stamp, "projects/a.md", "a | b", "ff", modified=True) == (
        "- 2026-03-02T10:00:00Z restore (modified) | from: archive/projects/a.md | to: projects/a.md"
        " | sha256: ff | reason: a \\| b")


def test_a_merge_sorts_a_line_behind_a_stray_cr_as_the_event_the_checker_reads() -> None:
    # The checker reads CR-blind, so "\r- <stamp> ..." is an event line: the merge must sort it
    # by its stamp, not leave it where it stood, or the merged ledger is out of order.
    early = "- 2026-03-01T09:00:00Z archive | from: projects/b.md | to: archive/projects/b.md | reason: stale"
    ours = (LEDGER_HEADER + "\r" + A + "\n").encode()
    merged = merge_ledgers(ours, ledger(early))
    assert merged == (LEDGER_HEADER + early + "\n\r" + A + "\n").encode()
    assert [line.text for line in Ledger(merged).events] == [early, A]


def test_a_merge_keeps_a_line_that_differs_from_ours_only_at_its_end() -> None:
    merged = merge_ledgers(ledger(A + " by "), ledger(A + " by X")).decode()
    assert merged.splitlines().count(A + " by ") == 1 and merged.splitlines().count(A + " by X") == 1


def test_a_merge_sorts_a_date_only_line_as_its_midnight() -> None:
    # C is dated 2026-03-03 only: it sorts before the other side's lines later that same day.
    later_that_day = "- 2026-03-03T08:00:00Z archive | from: projects/d.md | to: archive/projects/d.md | reason: stale"
    assert merge_ledgers(ledger(later_that_day), ledger(C)) == ledger(C, later_that_day)
    assert merge_ledgers(ledger(C), ledger(later_that_day)) == ledger(C, later_that_day)
