"""C4, the lossless oracle (STORE-FORMAT.md 3.5): compare a store with a copy of its past.

``before`` is the store as it was (a migration backup, or the snapshot taken before a pass);
``after`` is the store now. Every rule is a multiset or byte comparison over raw files.
"""

from __future__ import annotations

from collections import Counter

from .findings import Finding, fail, note
from .ledger import Ledger
from .paths import (
    LEGACY_PREFIX,
    SPINE,
    archived_path,
    contained,
    evidence_twin,
    is_legacy,
    strip_archive,
)
from .snapshot import Snapshot
from .text import clip, decode, rtrim, trim
from .tierfile import parse_frontmatter


def _trimmed(lines: list[str]) -> list[str]:
    return [trim(line) for line in lines]


def _without_frontmatter(lines: list[str]) -> list[str]:
    _, body_start = parse_frontmatter(lines)
    return lines[body_start:]


def _same_file(a: Snapshot, a_path: str, b: Snapshot, b_path: str) -> tuple[bool, bool]:
    """(same, by drift only): equal bytes, or equal apart from the recall_count line."""
    left, right = a.knowledge(a_path), b.knowledge(b_path)
    if left.sha256 == right.sha256:
        return True, False
    return (left.sha256_norm == right.sha256_norm), True


class _Lossless:
    def __init__(self, before: Snapshot, after: Snapshot) -> None:
        self.before = before
        self.after = after
        self.found: list[Finding] = []
        self._children = self._split_children()

    def _fail(self, code: str, path: str, message: str) -> None:
        self.found.append(fail("C4", code, path, message))

    def _note(self, code: str, path: str, message: str) -> None:
        self.found.append(note("C4", code, path, message))

    def _split_children(self) -> dict[str, list[str]]:
        children: dict[str, list[str]] = {}
        for path in self.after.tier_paths + self.after.archive_paths:
            parent = self.after.knowledge(path).split_from
            if parent:
                children.setdefault(parent, []).append(path)
        return children

    def _readable(self, snapshot: Snapshot, path: str) -> list[str]:
        # Only files the scan read; a path from a synced file is never followed blindly.
        return snapshot.knowledge(path).lines if path in snapshot.contents else []

    # 1. multiset conservation --------------------------------------------------------------
    def conservation(self) -> None:
        before, after = self.before, self.after
        for path in before.tier_paths:
            pool = _trimmed(self._readable(before, path))
            twin = evidence_twin(path)
            if twin in before.contents:
                pool += _trimmed(_without_frontmatter(self._readable(before, twin)))
            wanted = Counter(line for line in pool if line)
            if not wanted:
                continue
            candidates: list[str] = []
            for source in (path, twin, archived_path(path)):
                candidates += self._readable(after, source)
            for child in self._children.get(path, []):
                candidates += self._readable(after, child)
                candidates += self._readable(after, evidence_twin(strip_archive(child)))
            have = Counter(_trimmed(candidates))
            for line, count in wanted.items():
                if have[line] < count:
                    self._fail("line-lost", path,
                               f"line lost from {path} (before x{count}, after x{have[line]}): {clip(line, 70)}")

    # 2-3. pinned and non-negotiable files stay active ---------------------------------------
    def exemptions(self) -> None:
        for path in self.before.tier_paths:
            file = self.before.knowledge(path)
            if any(line.startswith("lifecycle: pinned") for line in file.lines) and not self.after.exists(path):
                self._fail("pinned-moved", path, f"pinned file was moved: {path}")
            if file.has_non_negotiable and self.after.exists(archived_path(path)):
                self._fail("non-negotiable-archived", path, f"file carrying [NON-NEGOTIABLE] was archived: {path}")

    # 4. evidence twins are append-only ------------------------------------------------------
    def twins(self) -> None:
        for path in self.before.evidence_paths:
            if path not in self.after.contents:
                self._fail("twin-deleted", path, f"evidence twin deleted: {path}")
                continue
            wanted = Counter(line for line in _trimmed(self._readable(self.before, path)) if line)
            have = Counter(_trimmed(self._readable(self.after, path)))
            for line, count in wanted.items():
                if have[line] < count:
                    self._fail("line-lost", path,
                               f"line lost from {path} (before x{count}, after x{have[line]}): {clip(line, 70)}")

    # 5-7. archives: adopted, kept, never changed -------------------------------------------
    def _check_adopted(self, original: str, missing_message: str) -> None:
        adopted = LEGACY_PREFIX + original
        if adopted not in self.after.contents:
            self._fail("not-adopted", original, missing_message)
            return
        same, drift = _same_file(self.after, adopted, self.before, original)
        if not same:
            self._fail("legacy-changed", adopted, f"legacy archive file changed: {adopted}")
        elif drift:
            self._note("recall-count-drift", adopted, f"recall_count drift only (tolerated): {adopted}")

    def archives(self) -> None:
        before_ledger = self.before.ledger
        for path in self.before.archive_paths:
            ledgered = before_ledger is not None and before_ledger.last_archive_line(path) is not None
            if not is_legacy(path) and not ledgered:
                self._check_adopted(path, f"unledgered archive not adopted: {path} (expected {LEGACY_PREFIX}{path})")
            if not self.after.exists(path) and not self.after.exists(LEGACY_PREFIX + path):
                self._fail("archive-deleted", path, f"archive file deleted: {path}")
        for path in self.before.nested_archive_paths:
            self._check_adopted(path, f"nested legacy archive not adopted: {path} (expected {LEGACY_PREFIX}{path})")

    # 8. every archived file has an original ------------------------------------------------
    def archived_originals(self) -> None:
        before, after = self.before, self.after
        for path in after.archive_paths:
            if is_legacy(path):
                self._legacy_original(path)
                continue
            for original in (path, strip_archive(path)):
                if original not in before.contents:
                    continue
                same, drift = _same_file(after, path, before, original)
                if same:
                    if drift:
                        self._note("recall-count-drift", path, f"recall_count drift only (tolerated): {path}")
                    break
            else:
                self._ledgered_original(path)

    def _legacy_original(self, path: str) -> None:
        if path in self.before.contents:
            same, drift = _same_file(self.after, path, self.before, path)
            if not same:
                self._fail("legacy-changed", path, f"legacy archive file changed: {path}")
            elif drift:
                self._note("recall-count-drift", path, f"recall_count drift only (tolerated): {path}")
        elif path.startswith(LEGACY_PREFIX) and self.before.exists(path[len(LEGACY_PREFIX):]):
            return
        else:
            self._fail("no-original", path, f"archived file has no original: {path}")

    def _ledgered_original(self, path: str) -> None:
        before = self.before
        parent = self.after.knowledge(path).split_from
        has_parent = bool(parent) and contained(parent or "", "tier") and (
            before.exists(parent or "") or before.exists(archived_path(parent or ""))
        )
        if not before.exists(path) and not before.exists(strip_archive(path)) and not has_parent:
            self._fail("no-original", path, f"archived file has no original: {path}")
            return
        ledger: Ledger | None = self.after.ledger
        event = ledger.last_archive_line(path) if ledger else None
        file = self.after.knowledge(path)
        if event is None or not (
            event.value("sha256") == file.sha256 or event.value("sha256-norm") == file.sha256_norm
        ):
            self._fail("archived-differs", path,
                       f"archived file differs from original and from its ledger checksum: {path}")

    # 9. protected and marker lines survive in active or archived files ---------------------
    def protected(self) -> None:
        pool: set[str] = set()
        for path in self.after.tier_paths + self.after.archive_paths:
            pool.update(_trimmed(self._readable(self.after, path)))
        for path in self.before.tier_paths:
            for line in self.before.knowledge(path).protected_lines:
                line = trim(line)
                if line and line not in pool:
                    self._fail("protected-lost", path,
                               f"protected block line not in active/archive ({path}): {clip(line, 70)}")

    # 10. every SPINE hook is still findable ------------------------------------------------
    def hooks(self) -> None:
        before_spine = self.before.spine
        if before_spine is None:
            return
        scope_texts: list[str] = []
        for path in (SPINE, *self.after.tier_paths, *self.after.archive_paths):
            if path in self.after.contents:
                scope_texts.append(decode(self.after.contents[path]))
        catalog = self.after.catalog_raw
        if catalog is not None:
            scope_texts.append(decode(catalog).replace("\\|", "|"))
        # A hook never holds a newline, so searching the joined texts equals searching each file.
        haystack = "\n".join(scope_texts)
        for entry in before_spine.entries:
            for fragment in (entry.first_line_hook, *(rtrim(c) for c in entry.continuations)):
                if fragment and fragment not in haystack:
                    self._fail("hook-lost", SPINE, f"SPINE hook lost: {clip(fragment, 70)}")


def check_c4(before: Snapshot, after: Snapshot) -> list[Finding]:
    """C4: is ``after`` a lossless successor of ``before``?"""
    oracle = _Lossless(before, after)
    oracle.conservation()
    oracle.exemptions()
    oracle.twins()
    oracle.archives()
    oracle.archived_originals()
    oracle.protected()
    oracle.hooks()
    return oracle.found
