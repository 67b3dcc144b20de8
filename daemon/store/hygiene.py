"""Bad-input diagnostics: encodings, binary content, line endings, unreadable files.

The reference checker is silent on these, so they are notes (they never fail a group),
except a file that cannot be read at all, which fails the group that owns the file.
"""

from __future__ import annotations

import re

from .findings import Finding, Group, fail, note
from .paths import CATALOG, LEDGER, LOCAL_SPINE, SPINE
from .safety import unsafe_name_reason
from .text import shown
from .snapshot import Snapshot

BOM = b"\xef\xbb\xbf"
# Whatever could make unsafe_name_reason say something, searched in "/" + name + "/": a control
# character or one Windows refuses (' | ' included), a part starting with '-' or ending with '.'
# or ' ', a reserved device name (no non-ASCII letter upper-cases into one). A name with none of
# these is safe. Every branch starts with a '/', '.', ' ' or refused character, so the search
# stops at few places of a name.
MAYBE_UNSAFE_NAME_RE = re.compile(
    r'[\x00-\x1f\x7f<>:"|?*\udc80-\udcff]|/-|[. ]/|/(?:con|prn|aux|nul|com[1-9]|lpt[1-9])[./]', re.IGNORECASE)


def maybe_unsafe_name(path: str) -> bool:
    return MAYBE_UNSAFE_NAME_RE.search("/" + path + "/") is not None


def _group_of(path: str) -> Group:
    if path in (SPINE, LOCAL_SPINE):
        return "C1"
    if path == CATALOG or path.split("/", 1)[0] in ("archive", "evidence"):
        return "C2"
    return "C3"


def _encoding_notes(path: str, raw: bytes) -> list[Finding]:
    found: list[tuple[str, str]] = []  # (code, message); the group is looked up only for a note
    if b"\x00" in raw:
        found.append(("binary", f"{path} holds NUL bytes (binary content); keep only text in the store"))
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        found.append(("not-utf8",
                      f"{path} is not valid UTF-8 (first bad byte at offset {error.start}); re-save it as UTF-8"))
    if raw.startswith(BOM):
        found.append(("bom", f"{path} starts with a byte-order mark, which hides its first line "
                             "(frontmatter, title) from every reader; remove the BOM"))
    crlf = raw.count(b"\r\n") if b"\r" in raw else 0
    if crlf and crlf != raw.count(b"\n"):
        found.append(("mixed-line-endings", f"{path} mixes CRLF and LF line endings; writers keep them as they are"))
    if not found:
        return []
    group = _group_of(path)
    return [note(group, code, path, message) for code, message in found]


def hygiene_findings(snapshot: Snapshot) -> list[Finding]:
    found: list[Finding] = []
    for error in snapshot.read_errors:
        found.append(fail(_group_of(error.path), "unreadable", error.path,
                          f"{error.path}: {error.message}; fix its permissions so the store can be checked"))
    unreadable = {error.path for error in snapshot.read_errors}
    for path, raw in snapshot.contents.items():
        unsafe = unsafe_name_reason(path) if maybe_unsafe_name(path) else None
        if unsafe:
            found.append(note(_group_of(path), "unsafe-name", path,
                              f"{shown(path)}: no pass will archive, restore or catalog it under this name "
                              f"({unsafe}); rename it"))
        if path in unreadable:
            continue
        found += _encoding_notes(path, raw)
        if path in (SPINE, CATALOG, LEDGER, LOCAL_SPINE):
            continue
        file = snapshot.knowledge(path)
        if file.frontmatter_unclosed:
            found.append(note(_group_of(path), "frontmatter-unclosed", path,
                              f"{path} opens frontmatter with '---' but never closes it; "
                              "the whole file is read as frontmatter"))
    if snapshot.ledger is not None and snapshot.ledger.raw and not snapshot.ledger.raw.endswith(b"\n"):
        found.append(note("C2", "ledger-no-final-newline", LEDGER,
                          f"{LEDGER} ends in a torn line (no line break): an append that never finished, a line "
                          "never written; the next write pass takes it back and keeps its bytes in the activity log"))
    return sorted(found, key=lambda f: ("C1", "C2", "C3", "C4").index(f.group))
