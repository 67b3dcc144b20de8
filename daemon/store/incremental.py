"""The daemon's incremental pass: the last snapshot kept, and the findings of C1-C3 recomputed
only where what a rule reads has changed.

``IncrementalStore.snapshot`` re-reads only the files whose (mtime, ctime, size, inode) moved
(store/snapshot.refresh_snapshot). ``IncrementalStore.check`` gives exactly what
``invariants.check_store`` gives on the same snapshot, in the same order: each per-file rule is
run by the same code on a view of the snapshot that lists that one file, and its findings are
kept while the inputs that rule reads for that file are equal (the file's bytes, its catalog
row, the ledger line that archived it, the set of files that exist). Rules over the whole store
that cost little run every time. ``reset`` drops everything: the next pass is a cold one, which
is what the scheduled full rescan asks for.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from .budget import BudgetReport, measure_budget
from .catalog import ROW_MAKERS, Catalog, render_catalog
from .findings import GROUPS, Finding, fail
from .hygiene import hygiene_findings
from .invariants import (
    _active_rows,
    _archived_rows,
    _catalog_freshness,
    _catalog_lists_everything,
    _evidence_rows,
    _ledger_agrees_with_tree,
    _ledger_syntax,
    _spine_pointers,
    _tree_shape,
    check_c1,
    check_c3,
)
from .limits import Limits
from .paths import CATALOG, LEDGER, LOCAL_SPINE, SPINE
from .snapshot import Snapshot, refresh_snapshot

# Models a snapshot computes once; a view shares them with the snapshot it was made from.
_SHARED = ("tier_paths", "nested_archive_paths", "archive_paths", "evidence_paths", "spine", "local_spine",
           "ledger", "_knowledge_cache", "_symlinked_files", "layout")


def _view(snapshot: Snapshot, **overrides: Any) -> Snapshot:
    """The same snapshot, with some of its computed lists (or models) replaced."""
    view = Snapshot(snapshot.root, snapshot.files, snapshot.symlinks, snapshot.contents, snapshot.read_errors,
                    removed=snapshot.removed, stamps=snapshot.stamps)
    view.__dict__.update({name: getattr(snapshot, name) for name in _SHARED})
    view.__dict__.update(overrides)
    return view


class _Kept:
    """Results per key (a path, or a rule), kept while the inputs they were computed from are equal."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple[Hashable, ...], Any]] = {}
        self._used: dict[str, tuple[tuple[Hashable, ...], Any]] = {}
        # When set, the inputs of every key outside it are known to be unchanged this pass.
        self.changed: set[str] | None = None

    def get(self, key: str, inputs: Callable[[], tuple[Hashable, ...]], compute: Callable[[], Any]) -> Any:
        hit = self._kept.get(key)
        trusted = self.changed is not None and key not in self.changed
        if hit is None or not (trusted or hit[0] == inputs()):
            hit = (inputs(), compute())
        self._used[key] = hit
        return hit[1]

    def end_pass(self) -> None:
        """Keep only what this pass used: removed files drop out."""
        self._kept, self._used = self._used, {}


class IncrementalStore:
    """The last snapshot of one store and what was found in it (used by one thread at a time)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._previous: Snapshot | None = None
        self._tree: tuple[frozenset[str], tuple[str, ...]] | None = None
        self._tree_version = 0
        self._catalog: Catalog | None = None
        self._kept: dict[str, _Kept] = {}
        # Per kind of pass (check, budget): the bytes it last saw by path, and what every rule reads.
        self._seen: dict[str, tuple[dict[str, bytes], tuple[Hashable, ...]]] = {}
        self._pass: tuple[str, dict[str, bytes], tuple[Hashable, ...]] | None = None
        self._used: dict[str, _Kept] = {}

    def snapshot(self, store: Path | str) -> Snapshot:
        snapshot = refresh_snapshot(store, self._previous)
        self._previous = snapshot
        return snapshot

    def check(self, snapshot: Snapshot, limits: Limits) -> list[Finding]:
        """``check_store(snapshot, limits)``, recomputing only what changed since the last call."""
        changed = self._begin("check", snapshot, limits)
        spine = snapshot.contents.get(SPINE)
        found: list[Finding] = self._rule("c1", lambda: (spine, limits), lambda: check_c1(snapshot, limits))
        found = found + self._c2(snapshot, changed) + self._c3(snapshot, limits, changed) + self._hygiene(snapshot, changed)
        self._end()
        return found

    def catalog(self, snapshot: Snapshot, now: datetime) -> str:
        """``render_catalog(snapshot, now)``, making again only the rows whose inputs changed:
        a row reads its file's bytes, and an archived row the ledger line that archived it."""
        memos = {kind: self._kept.setdefault(f"catalog-{kind}", _Kept()) for kind in ROW_MAKERS}
        contents, ledger = snapshot.contents, snapshot.ledger

        def inputs(kind: str, path: str) -> tuple[Hashable, ...]:
            if kind != "archived":
                return (contents.get(path),)
            event = ledger.last_archive_line(path) if ledger is not None else None
            return (contents.get(path), ledger is None, event.text if event else None)

        def row(kind: str, path: str) -> str:
            made: str = memos[kind].get(path, lambda: inputs(kind, path), lambda: ROW_MAKERS[kind](snapshot, path))
            return made

        text = render_catalog(snapshot, now, row)
        for memo in memos.values():
            memo.end_pass()
        return text

    def budget(self, snapshot: Snapshot, limits: Limits, today: date) -> BudgetReport:
        """``measure_budget(snapshot, limits, today)``, measuring again only the files that changed."""
        files = self._memo("budget", self._begin("budget", snapshot, (limits, today)))
        spine_raw = snapshot.contents.get(SPINE)
        report: BudgetReport = self._rule("budget-spine", lambda: (spine_raw, limits),
                                          lambda: measure_budget(_view(snapshot, tier_paths=[]), limits, today))
        report = replace(report, entries_over=list(report.entries_over), files_over=[], oversize_exempt=[],
                         stale_projects=[])
        for path in snapshot.tier_paths:
            one: BudgetReport = files.get(path, lambda: (snapshot.contents.get(path), limits, today),
                                          lambda: _budget_of(snapshot, path, limits, today))
            report.files_over += one.files_over
            report.oversize_exempt += one.oversize_exempt
            report.stale_projects += one.stale_projects
        self._end()
        return report

    def _begin(self, kind: str, snapshot: Snapshot, settings: Hashable) -> set[str] | None:
        """The paths whose bytes changed since the last pass of this kind; None when something
        every rule reads (the set of files, the catalog, the ledger, the settings) changed too."""
        tree = (frozenset(snapshot.files), tuple(snapshot.symlinks))
        if tree != self._tree:
            self._tree, self._tree_version = tree, self._tree_version + 1
        world = (self._tree_version, snapshot.contents.get(CATALOG), snapshot.contents.get(LEDGER), settings,
                 snapshot.root)
        self._pass, self._used = (kind, dict(snapshot.contents), world), {}
        last = self._seen.get(kind)
        if last is None or not all(a is b or a == b for a, b in zip(world, last[1], strict=True)):
            return None
        seen = last[0]
        return {path for path, raw in snapshot.contents.items() if seen.get(path) is not raw}

    def _end(self) -> None:
        for kept in self._used.values():
            kept.end_pass()
        if self._pass is not None:
            kind, contents, world = self._pass
            self._seen[kind] = (contents, world)

    # -- helpers -------------------------------------------------------------------------------
    def _memo(self, name: str, changed: set[str] | None = None) -> _Kept:
        kept = self._kept.setdefault(name, _Kept())
        kept.changed = changed
        self._used[name] = kept
        return kept

    def _rule(self, name: str, inputs: Callable[[], tuple[Hashable, ...]], compute: Callable[[], Any]) -> Any:
        return self._memo(name).get(name, inputs, compute)  # a whole-store rule compares its inputs

    def _catalog_of(self, raw: bytes | None) -> Catalog | None:
        if raw is None:
            return None
        if self._catalog is None or self._catalog.raw != raw:
            self._catalog = Catalog(raw)
        return self._catalog

    # -- C2 -------------------------------------------------------------------------------------
    def _c2(self, snapshot: Snapshot, changed: set[str] | None) -> list[Finding]:
        tree = self._tree_version
        pointed = (snapshot.contents.get(SPINE), snapshot.contents.get(LOCAL_SPINE), tree)
        found: list[Finding] = list(self._rule("pointers", lambda: pointed, lambda: _spine_pointers(snapshot)))
        ledger = snapshot.ledger
        ledger_raw = ledger.raw if ledger is not None else None
        catalog = self._catalog_of(snapshot.catalog_raw)
        if catalog is None:
            found.append(fail("C2", "catalog-missing", CATALOG, "CATALOG.md missing"))
        else:
            found += self._rule("listing", lambda: (catalog.raw, tree), lambda: _catalog_lists_everything(snapshot, catalog))
            rows, contents = self._memo("active", changed), snapshot.contents
            for path in snapshot.tier_paths:
                found += rows.get(path, lambda: (contents.get(path), catalog.row_for(path)),
                                  lambda: _active_rows(_view(snapshot, tier_paths=[path]), catalog))
            twins = self._memo("evidence", changed)
            for path in snapshot.evidence_paths:
                found += twins.get(path, lambda: (contents.get(path), catalog.row_for(path), tree),
                                   lambda: _evidence_rows(_view(snapshot, evidence_paths=[path]), catalog))
            archived = self._memo("archived", changed)
            for path in snapshot.archive_paths:
                found += archived.get(path, lambda: _archived_inputs(snapshot, catalog, path),
                                      lambda: _archived_rows(_view(snapshot, archive_paths=[path]), catalog))
            if ledger is not None:
                found += self._rule("ledger-syntax", lambda: (ledger_raw,), lambda: _ledger_syntax(ledger))
        if ledger is not None:
            found += self._rule("ledger-tree", lambda: (ledger_raw, tree), lambda: _ledger_agrees_with_tree(snapshot, ledger))
            if catalog is not None:
                found += _catalog_freshness(catalog, ledger)
        found += self._rule("tree-shape", lambda: (tree,), lambda: _tree_shape(snapshot))
        return found

    # -- C3 and the bad-input notes -------------------------------------------------------------
    def _c3(self, snapshot: Snapshot, limits: Limits, changed: set[str] | None) -> list[Finding]:
        files, contents, tree = self._memo("c3", changed), snapshot.contents, self._tree_version
        found: list[Finding] = []
        for path in snapshot.tier_paths:
            found += files.get(path, lambda: (contents.get(path), limits, tree),
                               lambda: check_c3(_view(snapshot, tier_paths=[path]), limits))
        return found

    def _hygiene(self, snapshot: Snapshot, changed: set[str] | None) -> list[Finding]:
        # hygiene_findings orders: unreadable files, then each file's notes in read order, then the
        # ledger's final-newline note; then a stable sort by group. The same here, per file.
        whole = hygiene_findings(_view(snapshot, contents={}))
        errors = [f for f in whole if f.code == "unreadable"]
        unreadable = {error.path for error in snapshot.read_errors}
        notes, per_file = self._memo("hygiene", changed), []
        for path, raw in snapshot.contents.items():
            if path in unreadable:
                continue
            per_file += notes.get(path, lambda: (raw,),
                                  lambda: hygiene_findings(_view(snapshot, contents={path: raw}, read_errors=[],
                                                                 ledger=None)))
        tail = [f for f in whole if f.code != "unreadable"]
        return sorted(errors + per_file + tail, key=lambda f: GROUPS.index(f.group))


def _archived_inputs(snapshot: Snapshot, catalog: Catalog, path: str) -> tuple[Hashable, ...]:
    ledger = snapshot.ledger
    event = ledger.last_archive_line(path) if ledger is not None else None
    return (snapshot.contents.get(path), catalog.row_for(path), ledger is None, event.text if event else None)


def _budget_of(snapshot: Snapshot, path: str, limits: Limits, today: date) -> BudgetReport:
    """The budget findings of one file: measured on a view without the SPINE (whose size, measured
    once, is no file's business)."""
    snapshot.knowledge(path)  # parsed into the shared cache, so the view needs no contents
    return measure_budget(_view(snapshot, tier_paths=[path], spine=None, contents={}), limits, today)
