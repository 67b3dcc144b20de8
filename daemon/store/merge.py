"""Two machines' copies of a store as one: the sync merge rules, as functions over bytes.

The rules (one per kind of file, no model call, no conflict markers, nothing lost):

* ``archive/LEDGER.md``: the union of both sides' lines, sorted by stamp (``merge_ledgers``);
* ``SPINE.md`` and evidence twins (line-oriented indexes and logs): our line edits replayed
  onto theirs, so an entry removed on one machine and another added on the other both land
  (store/line_replay.py);
* any other knowledge file changed on both sides: theirs (the remote's) stays in place, ours is
  kept whole as an inbox item for the next distillation to fold in (store/sync_inbox.py);
* the tree is then made to agree with the merged ledger's last event per path, ``CATALOG.md``
  is rebuilt from the result, and C1-C3 run on it: a failure that neither side had blocks.

Nothing here touches git: the caller hands in three sets of files (base, ours, theirs) and
gets back the changes to make on top of ours.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from .conflicts import has_conflict_markers
from .findings import Finding
from .fs import line_ending_of, with_line_ending
from .incremental import IncrementalStore
from .hooks import entry_within_cap
from .index_detail import hooks_not_held, hooks_with_new_words
from .ledger import Ledger, LedgerLine, merge_ledgers, parsed_ledger
from .limits import Limits
from .line_replay import replay_lines
from .merge_sides import GROWTH_CAPS, BytesFiles, FileSet, Overlay, Sides, StoreMerge
from .paths import ARCHIVE_PREFIX, CATALOG, EVIDENCE_PREFIX, LEDGER, SPINE, archived_path
from .snapshot import snapshot_from_files
from .spine_dedupe import doubled_pointers, merge_doubled_entries
from .spine import Spine, add_entry, find_entry, remove_pointer, replace_entry
from .sync_inbox import ConflictInbox, conflict_item
from .tierfile import KnowledgeFile, append_index_detail
from .text import (
    decode,
    encode,
    lines_with_endings,
    sha256_hex,
    sha256_norm_hex,
    shown,
    unescape_free_text,
    whole_lines,
)

# The names callers import from here (the sides and the result live in store/merge_sides.py).
__all__ = ["GROWTH_CAPS", "BytesFiles", "FileSet", "Sides", "StoreMerge", "has_conflict_markers", "merge_stores"]


# -- the merge -----------------------------------------------------------------------------

class _Merger:
    def __init__(self, base: FileSet, ours: FileSet, theirs: FileSet, sides: Sides, now: datetime,
                 token: Callable[[], str], checks: IncrementalStore | None = None) -> None:
        self.base, self.ours, self.theirs, self.sides, self.now = base, ours, theirs, sides, now
        self.checks = checks if checks is not None else IncrementalStore()
        self.result = StoreMerge()
        self.view = Overlay(ours, self.result.changes)
        self.inbox = ConflictInbox(now, token, lambda p: self.view.get(p) is not None)
        self.touched: set[str] = set()

    def set(self, path: str, raw: bytes | None) -> None:
        if raw == self.ours.get(path):
            self.result.changes.pop(path, None)
        else:
            self.result.changes[path] = raw

    def keep_in_inbox(self, path: str, raw: bytes, kept_from: str, note: str) -> None:
        name = self.inbox.name(path)
        self.set(name, conflict_item(path, raw, kept_from, self.now, note))
        self.result.inbox.append(name)
        self.result.resolutions.append(f"{path}: {kept_from} version kept whole as {name}")

    # -- per-file rules ----------------------------------------------------------------
    def files(self) -> None:
        every = set(self.base.paths()) | set(self.ours.paths()) | set(self.theirs.paths())
        for path in sorted(every - {LEDGER, CATALOG}):
            b, o, t = self.base.ident(path), self.ours.ident(path), self.theirs.ident(path)
            if o == t:
                continue
            if o == b:
                self.touched.add(path)
                self.set(path, self.theirs.get(path))
                continue
            self.touched.add(path)
            if t == b:
                continue
            self.both_changed(path)

    def both_changed(self, path: str) -> None:
        ours, theirs = self.ours.get(path), self.theirs.get(path)
        if (path == SPINE or path.startswith(EVIDENCE_PREFIX)) and ours is not None and theirs is not None:
            self.set(path, replay_lines(self.base.get(path) or b"", ours, theirs))
            self.result.resolutions.append(f"{path}: changed on both sides; line edits of both kept")
            return
        self.set(path, theirs)
        if path.startswith(ARCHIVE_PREFIX):
            return  # archived bytes are never rewritten: the ledger decides which copy stays
        if ours is not None:
            self.keep_in_inbox(path, ours, self.sides.local,
                               f"changed on both machines; the {self.sides.remote} version stays at {path}")

    def doubled_entries(self, limits: Limits) -> None:
        """Entries the line replay doubled (both machines edited or compacted the same entry)
        made one again, every word kept (store/spine_dedupe.py)."""
        merged, ours, theirs = self.result.changes.get(SPINE), self.ours.get(SPINE), self.theirs.get(SPINE)
        if merged is None or ours is None or theirs is None:
            return
        before = set(doubled_pointers(Spine(ours))) | set(doubled_pointers(Spine(theirs)))
        new = set(doubled_pointers(Spine(merged))) - before
        if not new:
            return
        done = merge_doubled_entries(merged, new, limits.spine.entry_max_bytes)
        self.set(SPINE, done.raw)
        self.result.resolutions.append(f"{SPINE}: entries both machines changed made one again: "
                                       f"{', '.join(done.merged)}")
        for target, hooks in sorted(done.details.items()):
            raw = self.view.get(target)
            family = {p: r for p in self.view.paths() if p.startswith(target[:-3])
                      and (r := self.view.get(p)) is not None}
            entry = next((e for e in Spine(done.raw).entries if target in e.pointers), None)
            own_line = entry.joined if entry is not None else ""
            wanted = hooks_with_new_words(family, target, hooks, own_line) if raw is not None else []
            for hook in wanted:
                raw = append_index_detail(raw or b"", hook, self.now.date().isoformat())
            if wanted:
                self.set(target, raw)
                self.result.resolutions.append(f"{target}: the other version's hook kept in its Index detail")

    def entries_over_cap(self, limits: Limits) -> None:
        """An entry that the replay made longer than the cap from two versions within it (one
        machine added a pointer, the other lengthened the hook) is cut as compaction cuts: a
        short entry, its whole hook kept in its first file's Index detail. Left as it is, the
        merge would fail C1 on every later sync, and no local pass could mend it."""
        merged, ours, theirs = self.result.changes.get(SPINE), self.ours.get(SPINE), self.theirs.get(SPINE)
        if merged is None:
            return
        cap = limits.spine.entry_max_bytes
        over_already = {e.joined for raw in (ours, theirs) if raw is not None
                        for e in Spine(raw).entries if e.byte_len > cap}
        today = self.now.date().isoformat()
        for _ in range(len(Spine(merged).entries)):  # one entry a round: line numbers move
            spine = Spine(merged)
            entry = next((e for e in spine.entries if e.byte_len > cap and e.joined not in over_already
                          and e.leading_group and self.view.get(e.leading_group[0].path) is not None), None)
            if entry is None:
                break
            target = entry.leading_group[0].path
            raw = self.view.get(target) or b""
            short, hook = entry_within_cap(entry.joined, target, KnowledgeFile(target, raw).pinned, cap,
                                           limits.spine.entry_target_bytes)
            merged = replace_entry(merged, entry, short)
            if hook and hooks_not_held({target: raw}, target, [hook]):
                self.set(target, append_index_detail(raw, hook, today))
            self.result.resolutions.append(f"{SPINE}: the entry of {target} both machines changed came out over "
                                           f"{cap} bytes; cut, its whole hook kept in {target}'s Index detail")
        self.set(SPINE, merged)

    def ledger(self) -> Ledger | None:
        ours, theirs = self.ours.get(LEDGER), self.theirs.get(LEDGER)
        if ours != theirs:
            # A last line without its line break is a write that never finished: sorted in among
            # the other machine's lines, it would become a whole, malformed line for good.
            ours = self.without_torn_tail(ours, self.sides.local)
            theirs = self.without_torn_tail(theirs, self.sides.remote)
            merged = merge_ledgers(ours or b"", theirs or b"", self.base.get(LEDGER))
            self.set(LEDGER, merged)
            self.touched.add(LEDGER)
            if ours is not None and theirs is not None:
                self.result.resolutions.append(f"{LEDGER}: union of both sides' lines, sorted by stamp")
        raw = self.view.get(LEDGER)
        return parsed_ledger(raw) if raw is not None else None

    def without_torn_tail(self, raw: bytes | None, side: str) -> bytes | None:
        whole = whole_lines(raw) if raw is not None else None
        if raw is not None and whole != raw:
            self.result.resolutions.append(f"{LEDGER}: the {side} copy's last line has no line break (a write "
                                           f"that never finished), left out: {shown(raw[len(whole or b''):])}")
        return whole

    # -- the tree agrees with the ledger's last event per path --------------------------
    def agree_with(self, ledger: Ledger) -> None:
        for path, event in sorted(ledger.last_event_by_path.items()):
            archived = archived_path(path)
            if path not in self.touched and archived not in self.touched:
                continue  # neither side moved it: nothing this merge should decide
            if event.is_archive:
                self.make_archived(path, archived, event)
            else:
                self.make_restored(path, archived, ledger)

    def _versions(self, *paths: str) -> list[tuple[str, bytes]]:
        found: list[tuple[str, bytes]] = []
        for side, files in ((self.sides.remote, self.theirs), (self.sides.local, self.ours)):
            for path in paths:
                raw = files.get(path)
                if raw is not None:
                    found.append((side, raw))
        return found

    def make_archived(self, path: str, archived: str, event: LedgerLine) -> None:
        want, want_norm = event.value("sha256"), event.value("sha256-norm")

        def matches(raw: bytes) -> bool:
            return sha256_hex(raw) == want or (want_norm is not None and sha256_norm_hex(raw) == want_norm)

        current = self.view.get(archived)
        chosen = current
        if current is None or not matches(current):
            pick = next((raw for _, raw in self._versions(archived, path) if matches(raw)), None)
            if pick is not None:
                chosen = pick
                self.set(archived, pick)
                self.result.resolutions.append(f"{archived}: the copy the ledger's checksum names")
        kept = {chosen}
        for side, raw in self._versions(archived):
            if raw not in kept:
                kept.add(raw)
                self.keep_in_inbox(archived, raw, side, "a second archived copy; the ledger names the other one")
        active = self.view.get(path)
        if active is not None and chosen is not None:
            self.set(path, None)
            self.result.resolutions.append(f"{path}: archived, as the ledger's last event says")
            if active not in kept:
                side = self.sides.remote if active == self.theirs.get(path) else self.sides.local
                self.keep_in_inbox(path, active, side, f"edited while the other machine archived it to {archived}")
        self.drop_pointer(path, event)

    def drop_pointer(self, path: str, event: LedgerLine) -> None:
        raw = self.view.get(SPINE)
        if raw is None or self.view.get(path) is not None:
            return
        spine = Spine(raw)
        entry = find_entry(spine, path)
        removal = remove_pointer(spine, path)
        if entry is None or removal is None:
            return
        self.set(SPINE, encode(removal.text))
        self.result.resolutions.append(f"{SPINE}: pointer to archived {path} removed")
        saved = unescape_free_text(event.value("spine-entry") or "")
        if removal.whole_entry and entry.joined != saved:
            lines = lines_with_endings(decode(raw))[entry.line_index:entry.line_index + entry.line_count]
            self.keep_in_inbox(SPINE, encode("".join(lines)), "merged SPINE",
                               f"the SPINE entry for {path}, which the ledger archived; it differs from the "
                               "entry the ledger saved")

    def make_restored(self, path: str, archived: str, ledger: Ledger) -> None:
        if self.view.get(path) is None:
            version = next((raw for _, raw in self._versions(path)), None)
            if version is None:
                return  # nothing to restore from: C2 reports the disagreement and blocks
            self.set(path, version)
        stale = self.view.get(archived)
        if stale is not None:
            self.set(archived, None)
            self.result.resolutions.append(f"{archived}: removed, the ledger's last event restores {path}")
            if stale != self.base.get(archived):
                side = self.sides.remote if stale == self.theirs.get(archived) else self.sides.local
                self.keep_in_inbox(archived, stale, side, f"archived on one machine while {path} was restored")
        raw = self.view.get(SPINE)
        if raw is not None and find_entry(Spine(raw), path) is None:
            line = ledger.last_archive_line(archived)
            saved = unescape_free_text(line.value("spine-entry") or "") if line else ""
            if saved.startswith("- ["):
                self.set(SPINE, encode(add_entry(Spine(raw), saved, path)))
                self.result.resolutions.append(f"{SPINE}: entry for restored {path} re-added from the ledger")

    # -- derived file and checks --------------------------------------------------------
    def catalog_and_checks(self, limits: Limits) -> None:
        with tempfile.TemporaryDirectory(prefix="distilld-merge-") as empty:
            root = Path(empty)
            merged = snapshot_from_files(root, self.view.materialise())
            if self.ours.get(CATALOG) is not None or self.theirs.get(CATALOG) is not None:
                existing = self.theirs.get(CATALOG) or self.ours.get(CATALOG) or b""
                catalog = with_line_ending(encode(self.checks.catalog(merged, self.now)), line_ending_of(existing))
                self.set(CATALOG, catalog)
                if self.ours.get(CATALOG) != self.theirs.get(CATALOG):
                    self.result.resolutions.append(f"{CATALOG}: rebuilt from the merged tree and ledger")
                # The same snapshot, with the new catalog: nothing parsed from it depends on the catalog.
                merged.files.add(CATALOG)
                merged.contents[CATALOG] = catalog
            # Three checks of three trees that share most of their files: one incremental
            # checker, so a file (or rule) whose inputs are the same in the next tree is not
            # checked again (nor, when the caller keeps the checker, in the next merge's trees).
            # Same findings as check_store on each.
            passes = self.checks
            failing = [f for f in passes.check(merged, limits) if f.severity == "fail"]
            # A failure either side already had is inherited, not the merge's doing; each side is
            # checked only while some failure is still unexplained.
            for side in (self.theirs, self.ours):
                if not failing:
                    break
                files = {p: raw for p in side.paths() if (raw := side.get(p)) is not None}
                before = {(f.group, f.code, f.message) for f in passes.check(snapshot_from_files(root, files), limits)
                          if f.severity == "fail"}
                self.result.inherited += [f for f in failing if (f.group, f.code, f.message) in before]
                failing = [f for f in failing if (f.group, f.code, f.message) not in before]
        # Two sides within a cap can add up to more than it (both appended to one file): the next
        # compaction mends that, so it must not block the merge, or the machines never meet again.
        grown = [f for f in failing if f.code in GROWTH_CAPS]
        for finding in grown:
            self.result.resolutions.append(f"{finding.path}: over its cap after the merge ({finding.message}); "
                                           "the next compaction brings it back within")
        self.result.over_caps += grown
        self.result.blocked_by += [f for f in failing if f.code not in GROWTH_CAPS]

    def markers(self) -> None:
        for path, raw in sorted(self.result.changes.items()):
            if raw is not None and has_conflict_markers(raw):
                self.result.blocked_by.append(Finding("C2", "conflict-markers", path,
                                                      f"{path} holds git conflict markers"))


def merge_stores(base: FileSet, ours: FileSet, theirs: FileSet, now: datetime, limits: Limits, sides: Sides = Sides(),
                 token: Callable[[], str] = lambda: secrets.token_hex(2),
                 checks: IncrementalStore | None = None) -> StoreMerge:
    """Merge theirs into ours (both descended from base); see the module docstring. ``checks``:
    an incremental checker kept from earlier merges of the same store (used by one merge at a
    time); a fresh one by default."""
    merger = _Merger(base, ours, theirs, sides, now, token, checks)
    merger.files()
    merger.doubled_entries(limits)
    merger.entries_over_cap(limits)
    ledger = merger.ledger()
    if ledger is not None:
        merger.agree_with(ledger)
    merger.catalog_and_checks(limits)
    merger.markers()
    return merger.result
