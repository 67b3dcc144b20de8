"""Lifecycle facts about a file (STORE-FORMAT.md 4.4): activity, staleness, exemptions. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from .tierfile import KnowledgeFile


@dataclass(frozen=True)
class Activity:
    stamp: str
    age_days: int
    threshold_days: int

    @property
    def stale(self) -> bool:
        return self.age_days > self.threshold_days


def staleness_threshold(file: KnowledgeFile, default_days: int) -> int:
    value = (file.fm("staleness_threshold") or "").strip(" \t")
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses.
    return int(value) if re.fullmatch(r"[0-9]+", value) and int(value) > 0 else default_days


def activity(file: KnowledgeFile, today: date, default_days: int) -> Activity | None:
    """The file's newest activity stamp and its age; None when undated (unknown, not inactive)."""
    stamp = file.newest_stamp
    if stamp is None:
        return None
    try:
        age = (today - date.fromisoformat(stamp)).days
    except ValueError:
        return None  # an impossible date such as 2026-13-40 says nothing about age
    return Activity(stamp, age, staleness_threshold(file, default_days))


def exemption(file: KnowledgeFile) -> str | None:
    """Why the lifecycle must never move this file, or None."""
    if file.looks_pinned:
        return "pinned (lifecycle: pinned)"
    if file.has_non_negotiable:
        return "carries [NON-NEGOTIABLE] (treated as pinned)"
    return None


def is_candidate(path: str, candidate_dirs: tuple[str, ...]) -> bool:
    """Only files directly under a candidate directory (projects/) age out."""
    directory, _, rest = path.partition("/")
    return directory in candidate_dirs and bool(rest) and "/" not in rest
