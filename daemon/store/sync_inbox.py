"""Sync-conflict inbox items: a version the merge could not keep in place, kept whole under
inbox/ with a frontmatter saying where it came from, for the next distillation to fold in."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from .fs import line_ending_of, with_line_ending
from .paths import ARCHIVE_PREFIX, EVIDENCE_PREFIX, TIERS
from .stamps import format_utc
from .text import encode

INBOX_PREFIX = "inbox/"



def _slug(path: str) -> str:
    stem = path.removesuffix(".md")
    slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-")
    return slug[:60].rstrip("-") or "file"


def _domain_hint(path: str) -> str | None:
    for prefix in (ARCHIVE_PREFIX, EVIDENCE_PREFIX):
        path = path.removeprefix(prefix)
    top = path.split("/", 1)[0]
    return top if top in TIERS else None


def conflict_item(path: str, raw: bytes, kept_from: str, now: datetime, note: str) -> bytes:
    """An inbox item holding ``raw`` whole, after a frontmatter saying where it came from."""
    ending = line_ending_of(raw) if raw else b"\n"
    head = ["---", "origin: sync-conflict", f"created: {format_utc(now)}", f"conflict_path: {path}",
            f"kept_from: {kept_from}", f"note: {note}"]
    hint = _domain_hint(path)
    if hint:
        head.append(f"domain_hint: {hint}")
    head += ["---", "", ""]
    return with_line_ending(encode("\n".join(head)), ending) + raw


class ConflictInbox:
    """Names for new inbox items that no file of the merged store holds yet."""

    def __init__(self, now: datetime, token: Callable[[], str], taken: Callable[[str], bool]) -> None:
        self.now, self.token, self.taken = now, token, taken

    def name(self, path: str) -> str:
        stamp = self.now.strftime("%Y%m%dT%H%M%SZ")
        while True:
            candidate = f"{INBOX_PREFIX}{stamp}-{self.token()}-sync-conflict-{_slug(path)}.md"
            if not self.taken(candidate):
                return candidate
