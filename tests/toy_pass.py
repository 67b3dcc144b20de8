"""A toy pass, registered the way docs/adding-a-pass.md says: a planner and one table entry. It
trims the blank lines a tier file ends with (keeping one line break). Imported by the registry
tests, in-process and in child processes (``register()`` adds it to the table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distilld import registry
from distilld.engine.executor import FileWrite, Step
from distilld.store.paths import contained
from distilld.store.snapshot import Snapshot
from distilld.store.text import sha256_hex

NAME = "trim"
ENTRY = registry.PassEntry(
    NAME, None, "data/trim-journals", job=NAME, planner="toy_pass:plan_trim",
    commands=(registry.CommandEntry(NAME, "pass_cmd", "Trim the blank lines tier files end with."),))
JOB = registry.JobEntry(NAME, None)


@dataclass
class TrimPlan:
    steps: list[Step]


def plan_trim(snapshot: Snapshot, ctx: Any) -> TrimPlan:
    """Pure: one step per tier file that ends in more than one line break."""
    steps = []
    for path, raw in sorted(snapshot.file_contents().items()):
        if not contained(path, "tier"):
            continue
        ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n"
        trimmed = raw.rstrip(b"\r\n") + ending
        if raw.rstrip(b"\r\n") and trimmed != raw:
            steps.append(Step(f"trim {path}", [FileWrite(path, sha256_hex(raw), trimmed)]))
    return TrimPlan(steps)


def register() -> None:
    """Add the toy to the one table (idempotent)."""
    if ENTRY not in registry.PASSES:
        registry.PASSES.append(ENTRY)
    if JOB not in registry.JOBS:
        registry.JOBS.append(JOB)


def unregister() -> None:
    if ENTRY in registry.PASSES:
        registry.PASSES.remove(ENTRY)
    if JOB in registry.JOBS:
        registry.JOBS.remove(JOB)
