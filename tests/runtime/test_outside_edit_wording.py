"""An outside edit is said as what happens to it: "committed" only where distilld commits (issue
27: a store that is not a git repository heard "committed as they are" right after "not committing")."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from distilld.runtime.follow_job import _report_outside_edits


class Recorder:
    def __init__(self, git: dict[str, Any]) -> None:
        self.lines: list[str] = []
        self.data: dict[str, Any] = {"git": git}

    def write(self, line: str) -> None:
        self.lines.append(line)

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def update(self, flush: bool = True, **values: Any) -> None:
        self.data.update(values)


@pytest.mark.parametrize("commit, git, said, not_said", [
    (True, {}, "committed as they are", "kept as they are"),
    (True, {"note": "not a git repository"}, "kept as they are", "committed"),
    (False, {}, "kept as they are", "committed"),
])
def test_outside_edits_are_said_as_committed_only_where_distilld_commits(
        commit: bool, git: dict[str, Any], said: str, not_said: str) -> None:
    log = Recorder(git)
    env = SimpleNamespace(outside_edits={"projects/kestrel.md"}, settings=SimpleNamespace(git=SimpleNamespace(commit=commit)),
                          status=log, activity=log)
    _report_outside_edits(env)  # type: ignore[arg-type]
    [line] = log.lines
    assert "projects/kestrel.md" in line and said in line and not_said not in line
    assert [item["path"] for item in log.data["outside_edits"]] == ["projects/kestrel.md"]
