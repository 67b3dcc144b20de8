"""Findings: what a check found, as data. Rendering is the caller's business."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Group = Literal["C1", "C2", "C3", "C4"]
Severity = Literal["fail", "note"]
GROUPS: tuple[Group, ...] = ("C1", "C2", "C3", "C4")


@dataclass(frozen=True, slots=True)  # slots: a check at scale makes tens of thousands of these
class Finding:
    group: Group
    code: str
    path: str
    message: str
    severity: Severity = "fail"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def fail(group: Group, code: str, path: str, message: str) -> Finding:
    return Finding(group, code, path, message, "fail")


def note(group: Group, code: str, path: str, message: str) -> Finding:
    return Finding(group, code, path, message, "note")
