"""The compaction's activity lines and summary for a store with many files over a cap: each pass
says them again, so they are capped (a one-shot run at x100 wrote 8,500 of them every time)."""

from __future__ import annotations

from distilld.actions.compaction import CompactionReport
from distilld.engine.passes.compaction.advice import CapFailure
from distilld.runtime.compaction_report import LISTED_OVER_CAP, describe_compaction


def failures(count: int) -> list[CapFailure]:
    return [CapFailure(f"craft/file-{n:03}.md", (f"craft/file-{n:03}.md has 90 lines (max 60)",),
                       ("Shorten it by hand",)) for n in range(count)]


def test_a_few_files_over_a_cap_are_each_named_in_a_line_and_in_the_summary() -> None:
    result = describe_compaction(CompactionReport("apply", over_caps=failures(3)))

    assert [line for line in result.lines if "could not fix" in line] == [
        f"compaction could not fix: craft/file-{n:03}.md has 90 lines (max 60): Shorten it by hand"
        for n in range(3)]
    assert result.summary.endswith("; still over a cap: craft/file-000.md, craft/file-001.md, craft/file-002.md")


def test_many_files_over_a_cap_are_named_up_to_the_limit_then_counted() -> None:
    result = describe_compaction(CompactionReport("apply", over_caps=failures(LISTED_OVER_CAP + 7)))

    named = [line for line in result.lines if line.startswith("compaction could not fix:")]
    assert len(named) == LISTED_OVER_CAP
    assert named[-1].startswith(f"compaction could not fix: craft/file-{LISTED_OVER_CAP - 1:03}.md")
    assert result.lines[-1] == ("compaction could not fix 7 more files over a cap (`distilld compact` lists "
                                "every one)")
    assert result.summary.endswith(f"craft/file-{LISTED_OVER_CAP - 1:03}.md and 7 more"), result.summary
    assert f"craft/file-{LISTED_OVER_CAP:03}.md" not in result.summary
