"""Dates and UTC timestamps as the store writes them: ``YYYY-MM-DD[THH:MM[:SS]Z]``."""

from __future__ import annotations

import re
from datetime import datetime, timezone

STAMP_PATTERN = r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}(?::[0-9]{2})?Z)?"
STAMP_RE = re.compile(STAMP_PATTERN)


def has_time(stamp: str) -> bool:
    return "T" in stamp


def _seconds_form(stamp: str) -> str:
    # "…T10:00Z" and "…T10:00:00Z" name the same instant; compare them as equals.
    if has_time(stamp) and len(stamp) == 17:
        return stamp[:-1] + ":00Z"
    return stamp


def full_stamp(stamp: str) -> str:
    """The same instant written in full, ``YYYY-MM-DDTHH:MM:SSZ`` (a date is its midnight)."""
    return _seconds_form(stamp) if has_time(stamp) else stamp + "T00:00:00Z"


def stamp_later(a: str, b: str) -> bool:
    """Is ``a`` later than ``b``? Full timestamps only when both carry a time, dates otherwise."""
    if has_time(a) and has_time(b):
        return _seconds_form(a) > _seconds_form(b)
    return a[:10] > b[:10]


def newest(stamps: list[str]) -> str | None:
    """The newest stamp, chosen the way ``sort | tail -1`` in the C locale chooses it."""
    return max(stamps) if stamps else None


def format_utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_utc(stamp: str) -> datetime:
    """Parse a store stamp as a UTC datetime (a bare date is midnight UTC)."""
    if not has_time(stamp):
        return datetime.strptime(stamp, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    form = "%Y-%m-%dT%H:%M:%SZ" if len(stamp) == 20 else "%Y-%m-%dT%H:%MZ"
    return datetime.strptime(stamp, form).replace(tzinfo=timezone.utc)
