"""plan_migration: a pre-1.2 store in, every step of its move to the 1.2 layout out
(STORE-FORMAT.md 1.9, 4.6). Pure: the snapshot, the limits, ``now`` and whether the local
lifecycle is enabled in; a MigrationPlan out.

Steps, in apply order: adopt legacy archives (byte-identical moves to ``archive/legacy/<path>``),
move dated observation lines to evidence twins, split over-cap files, append the hooks of cut
or merged entries and write the new SPINE (catalog line near the top), lifecycle moves when
enabled, rebuild the catalog. The plan predicts the store it will leave and runs the checks
(C1-C3, and C4 against the store now) on that prediction: a migration that could not pass its
own self-check is refused before anything is written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path

from ....store.catalog import render_catalog
from ....store.cross_refs import moved_references
from ....store.evidence import plan_evidence
from ....store.findings import Finding
from ....store.invariants import check_store
from ....store.ledger import LEDGER_HEADER, archive_event
from ....store.lifecycle import activity, is_candidate
from ....store.limits import Limits
from ....store.lossless import check_c4
from ....store.paths import CATALOG, LEGACY_PREFIX, SPINE, Layout, contained, is_legacy
from ....store.snapshot import Snapshot, planned_snapshot, snapshot_from_files
from ....store.spine import LEADING_GROUP_RE, Spine, SpineEditor, add_entry, find_entry, hook_of_entry
from ....store.stamps import format_utc
from ....store.text import byte_len, clip, encode, sha256_hex, split_lines
from ....store.tierfile import KnowledgeFile
from ..compaction.advice import spine_advice, topic_advice
from ..compaction.plan import CompactionPlan, is_tier_path, plan_compaction
from ..gc.plan import plan_gc
from ...context import PlanInputs
from ...journal import compact_utc
from ..gc.model import Move
from ...executor import FileMove, FileWrite, Step, TwinAppend

# The line the installer gives every new store (STORE-FORMAT.md 1.1): short, as the SPINE is tight.
CATALOG_LINE = "- [Catalog](CATALOG.md) \u2014 complete inventory; not loaded at start."
KIND_FIRST = "first migration to the 1.2 layout"
KIND_ADOPT = "already migrated: adoption of newly appeared unledgered archives only"
KIND_NOOP = "already migrated: nothing to do"


@dataclass
class MigrationPlan:
    ts: str  # names data/migration/<ts>/
    now: str
    today: str
    kind: str
    lifecycle_enabled: bool
    steps: list[Step] = field(default_factory=list)  # the checklist items that write files
    lifecycle: list[Move] = field(default_factory=list)
    lifecycle_candidates: list[str] = field(default_factory=list)  # what it would archive, when disabled
    lifecycle_spine: bytes = b""  # SPINE.md once the lifecycle moves removed their pointers
    lifecycle_spine_before: str = ""  # the checksum of SPINE.md before that edit
    adoptions: list[tuple[str, str]] = field(default_factory=list)
    moved_references: list[str] = field(default_factory=list)  # prose naming a path the plan moves
    evidence: list[tuple[str, int]] = field(default_factory=list)  # principle file, lines moved
    added_entries: list[str] = field(default_factory=list)  # entries for files the SPINE missed
    compact: CompactionPlan | None = None
    refusal: list[str] = field(default_factory=list)
    headroom_missed: list[str] = field(default_factory=list)  # why the SPINE ends above migrate_max_*
    suggestions: list[str] = field(default_factory=list)
    budget_before: dict[str, int] = field(default_factory=dict)
    budget_after: dict[str, int] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    predicted: dict[str, bytes] = field(default_factory=dict)  # the store's files once done

    @property
    def is_noop(self) -> bool:
        return self.kind == KIND_NOOP

    @property
    def refused(self) -> bool:
        return bool(self.refusal)


def pending_adoptions(snapshot: Snapshot) -> list[tuple[str, str]]:
    """Unledgered ``archive/<tier>/…`` files and nested ``<tier>/**/archive/**`` files, each to
    ``archive/legacy/<its path>`` (never a path taken from ``archived_from:``)."""
    ledger = snapshot.ledger
    found: list[tuple[str, str]] = []
    for path in snapshot.archive_paths:
        if is_legacy(path) or (ledger is not None and ledger.last_archive_line(path) is not None):
            continue
        found.append((path, LEGACY_PREFIX + path))
    for path in snapshot.nested_archive_paths:
        found.append((path, LEGACY_PREFIX + path))
    return found


def _budget(files: dict[str, bytes], limits: Limits) -> dict[str, int]:
    spine = Spine(files.get(SPINE, b""))
    over_entries = sum(1 for e in spine.entries if e.byte_len > limits.spine.entry_max_bytes)
    over_files = 0
    for path, raw in files.items():
        if is_tier_path(path):
            file = KnowledgeFile(path, raw)
            if file.line_count > limits.tier_file.max_lines or (
                    file.oversize_reason is None and file.size > limits.tier_file.max_bytes):
                over_files += 1
    return {"spine_lines": spine.line_count, "spine_bytes": spine.size, "entries_over_cap": over_entries,
            "tier_files": sum(1 for p in files if is_tier_path(p)), "tier_files_over_cap": over_files}


def _title_of(file: KnowledgeFile) -> str:
    heading = next((line.lstrip("#").strip() for line in file.lines if line.startswith("# ")), "")
    return heading or file.path.rsplit("/", 1)[-1][:-3].replace("-", " ")


def _orphan_entries(files: dict[str, bytes]) -> tuple[bytes, list[str]]:
    """The SPINE with an entry for every tier file it does not point at (Step 4: "missing
    entries are added"); the entries added."""
    raw = files.get(SPINE, b"")
    pointed = Spine(raw).pointer_set
    added: list[str] = []
    for path in sorted(p for p in files if is_tier_path(p)):
        if path in pointed:
            continue
        file = KnowledgeFile(path, files[path])
        if file.split_from and file.split_from in pointed:
            continue  # a split child: compaction puts it on its parent's line
        scope = file.fm("scope") or _title_of(file)
        entry = f"- [{_title_of(file)}]({path}) \u2014 {scope}. Read when this topic comes up."
        raw = encode(add_entry(Spine(raw), entry, path))
        added.append(entry)
    return raw, added


def unpointed_children(files: dict[str, bytes], spine_raw: bytes) -> list[tuple[str, list[str]]]:
    """Split children the SPINE misses whose parent it names: they join the parent's line."""
    spine = Spine(spine_raw)
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in files if is_tier_path(p)):
        parent = KnowledgeFile(path, files[path]).split_from or ""
        if path not in spine.pointer_set and find_entry(spine, parent) is not None:
            found.setdefault(parent, []).append(path)
    return list(found.items())


def plan(snapshot: Snapshot, ctx: PlanInputs) -> MigrationPlan:
    """The pass's planner. Whether the lifecycle may archive is this machine's setting (the
    store's local `.lifecycle`), read here beside the snapshot."""
    from ....store.local import lifecycle_enabled

    return plan_migration(snapshot, ctx.limits, ctx.now(), lifecycle_enabled(snapshot.root))


def plan_migration(snapshot: Snapshot, limits: Limits, now: datetime, lifecycle_enabled: bool) -> MigrationPlan:
    plan = MigrationPlan(ts=compact_utc(now), now=format_utc(now), today=now.date().isoformat(),
                         kind=KIND_FIRST, lifecycle_enabled=lifecycle_enabled)
    files = snapshot.file_contents()
    plan.budget_before = _budget(files, limits)
    unsafe = [p for p in (snapshot.spine.pointer_list if snapshot.spine else []) if not contained(p, "spine")]
    if unsafe:
        plan.refusal.append("SPINE.md points outside the store (D10): " + ", ".join(unsafe))
    if snapshot.symlinks:
        plan.refusal.append("symlinks in the store: " + ", ".join(snapshot.symlinks))
    if SPINE not in files:
        plan.refusal.append("SPINE.md is missing; create it (even empty) before migrating")
    adoptions = pending_adoptions(snapshot)
    if snapshot.layout is Layout.FILES_ONLY:
        plan.kind = KIND_ADOPT if adoptions else KIND_NOOP
    for source, target in adoptions:
        if target in files:
            plan.refusal.append(f"{source}: cannot adopt it, {target} already exists")
    if plan.refusal or plan.is_noop:
        plan.budget_after = plan.budget_before
        return plan

    steps: list[Step] = []
    for source, target in adoptions:
        steps.append(Step(f"adopt {source} -> {target}", [FileMove(source, target, sha256_hex(files[source]))]))
        files[target] = files.pop(source)
        plan.adoptions.append((source, target))
        plan.moved.append((source, target))
    if plan.kind == KIND_FIRST:
        _plan_evidence(files, steps, plan)
        _plan_spine(files, steps, plan, limits, (limits.spine.migrate_max_lines, limits.spine.migrate_max_bytes))
    plan.steps = steps
    virtual = snapshot.root / "data" / "migration" / ".in-memory"  # never created: nothing is read there
    if plan.kind == KIND_FIRST:
        _plan_lifecycle(virtual, files, plan, limits, now)
    _predict(snapshot, files, plan, limits, now)
    return plan


def _plan_evidence(files: dict[str, bytes], steps: list[Step], plan: MigrationPlan) -> None:
    for path in sorted(p for p in files if is_tier_path(p)):
        twin_raw = files.get("evidence/" + path)
        move = plan_evidence(path, files[path], twin_raw)
        if move is None:
            continue
        base = Counter(split_lines(twin_raw.decode("utf-8", "surrogateescape"))) if twin_raw else Counter()
        append = TwinAppend(move.twin, move.twin_header, move.lines, {k: base[k] for k in set(move.lines)},
                            move.ending)
        twin_after = append.result(twin_raw)
        append.planned = sha256_hex(twin_after)
        write = FileWrite(path, sha256_hex(files[path]), move.principle)
        steps.append(Step(f"move {len(move.lines)} dated observation line{'s' if len(move.lines) > 1 else ''} "
                          f"of {path} to {move.twin}", [append, write]))
        if twin_raw is None:
            plan.created.append(move.twin)
        files[move.twin] = twin_after
        files[path] = move.principle
        plan.evidence.append((path, len(move.lines)))


def _plan_spine(files: dict[str, bytes], steps: list[Step], plan: MigrationPlan, limits: Limits,
                headroom: tuple[int, int]) -> None:
    spine_raw, plan.added_entries = _orphan_entries(files)
    catalog_line = None if Spine(spine_raw).has_catalog_line else CATALOG_LINE
    edited = dict(files)
    edited[SPINE] = spine_raw
    unpointed = unpointed_children(files, spine_raw)
    # A migration should leave room for the next sessions' learning: it aims under the caps.
    roomy = replace(limits, spine=replace(limits.spine, max_lines=min(headroom[0], limits.spine.max_lines),
                                          max_bytes=min(headroom[1], limits.spine.max_bytes)))
    compact = plan_compaction(edited, roomy, plan.today, catalog_line, unpointed)
    lines, size = compact.spine_after
    only_short_of_headroom = all(b.startswith("SPINE.md would") for b in compact.breaches) and \
        lines <= limits.spine.max_lines and size <= limits.spine.max_bytes
    if not only_short_of_headroom:
        compact = plan_compaction(edited, limits, plan.today, catalog_line, unpointed)  # refused, if at all, for the caps
    elif compact.breaches:
        compact.breaches = []  # within the caps, only short of the headroom: said below
    if not compact.breaches:
        plan.headroom_missed = _headroom_missed(compact.spine_text, headroom)
    plan.compact = compact
    # The SPINE's own edits (orphans, catalog line) are part of the compaction's first SPINE
    # write: it replaces the SPINE as it is on disk (a later one replaces what that one wrote).
    original_sha, edited_sha = sha256_hex(files[SPINE]), sha256_hex(spine_raw)
    first_spine_write = next((op for step in compact.steps for op in step.ops
                              if isinstance(op, FileWrite) and op.path == SPINE), None)
    if first_spine_write is not None and first_spine_write.before == edited_sha:
        first_spine_write.before = original_sha
    for step in compact.steps:
        for op in step.ops:
            if isinstance(op, FileWrite) and op.before is None:
                plan.created.append(op.path)
        steps.append(step)
    if compact.spine_text != files[SPINE] and not any(
            isinstance(op, FileWrite) and op.path == SPINE for s in compact.steps for op in s.ops):
        steps.append(Step("write SPINE.md", [FileWrite(SPINE, original_sha, compact.spine_text)]))
    files.clear()
    files.update(compact.files)
    files[SPINE] = compact.spine_text
    plan.refusal += compact.breaches
    plan.refusal += [f"cannot split: {u}" for u in compact.unsplittable]


def _headroom_missed(spine_raw: bytes, headroom: tuple[int, int]) -> list[str]:
    """Where the migrated SPINE ends above migrate_max_*, with what its bytes are: pointer
    groups (every active file needs one, STORE-FORMAT.md 3.3) and hooks."""
    spine = Spine(spine_raw)
    entries = [e for e in spine.entries if not e.is_catalog_line]
    groups = [m.group(0) for e in entries if (m := LEADING_GROUP_RE.match(e.first_line))]
    missed = []
    if spine.line_count > headroom[0]:
        missed.append(f"SPINE.md has {spine.line_count} lines (headroom target {headroom[0]})")
    if spine.size > headroom[1]:
        missed.append(f"SPINE.md is {spine.size} bytes ({spine.size - headroom[1]} over the headroom target "
                      f"{headroom[1]}): its {sum(g.count('](') for g in groups)} pointers take "
                      f"{sum(byte_len(g) for g in groups)} bytes, its hooks "
                      f"{sum(byte_len(hook_of_entry(e.joined)) for e in entries)}")
    return missed


def _plan_lifecycle(root: Path, files: dict[str, bytes], plan: MigrationPlan, limits: Limits,
                    now: datetime) -> None:
    snapshot = snapshot_from_files(root, files)
    gc = plan_gc(snapshot, now.date(), plan.now, limits)
    if not plan.lifecycle_enabled:
        plan.lifecycle_candidates = [f"{m.source} ({m.reason})" for m in gc.moves]
        return
    spine = snapshot.spine
    if not gc.moves or spine is None:
        return
    plan.lifecycle_spine_before = sha256_hex(files[SPINE])
    editor = SpineEditor(spine)
    for move in gc.moves:
        editor.remove(move.source)
        files[move.target] = files.pop(move.source)
        plan.moved.append((move.source, move.target))
    plan.lifecycle = list(gc.moves)
    plan.lifecycle_spine = encode(editor.text())
    files[SPINE] = plan.lifecycle_spine


def _predict(original: Snapshot, files: dict[str, bytes], plan: MigrationPlan, limits: Limits,
             now: datetime) -> None:
    """Run the self-check on the whole store the plan would leave (``local/``, ``inbox/`` and
    folders distilld does not manage included); refuse what would fail it."""
    if plan.lifecycle:
        ledger = files.get("archive/LEDGER.md", b"")
        text = ledger.decode("utf-8", "surrogateescape") or LEDGER_HEADER
        for move in plan.lifecycle:
            text += archive_event(plan.now, move.source, move.sha256, move.sha256_norm, move.reason,
                                  move.spine_entry) + "\n"
        files["archive/LEDGER.md"] = encode(text)
    files[CATALOG] = encode(render_catalog(planned_snapshot(original, files), now))
    plan.predicted = files
    plan.budget_after = _budget(files, limits)
    after = planned_snapshot(original, files)
    plan.moved_references = moved_references(original, after)
    found: list[Finding] = check_store(after, limits) + check_c4(original, after)
    failing = [f for f in found if f.severity == "fail"]
    if failing and not plan.refusal:
        plan.refusal += [f"the migrated store would fail {f.group}: {clip(f.message, 200)}" for f in failing[:20]]
        if len(failing) > 20:
            plan.refusal.append(f"… and {len(failing) - 20} more findings")
    if plan.refusal:
        _suggest(files, plan, limits, lambda path: path in original.contents)


def _suggest(files: dict[str, bytes], plan: MigrationPlan, limits: Limits, exists: Callable[[str], bool]) -> None:
    """What a person could do by hand when the plan is refused, each only where it is true: the
    SPINE's own advice only when the SPINE is what stays over a cap (a refused split carries its
    advice in its own message)."""
    spine = Spine(files.get(SPINE, b""))
    if spine.line_count <= limits.spine.max_lines and spine.size <= limits.spine.max_bytes:
        plan.suggestions += spine_advice(spine, limits)  # an entry over its cap, if any
        return
    plan.suggestions += [f"archive (the lifecycle would, were .lifecycle enabled): {c}"
                         for c in plan.lifecycle_candidates]
    plan.suggestions += [f"pinned and past its staleness threshold (unpin it to let the lifecycle archive it): {p}"
                         for p in _stale_pinned(files, plan.today, limits)]
    plan.suggestions += topic_advice(spine, exists, limits)


def _stale_pinned(files: dict[str, bytes], today: str, limits: Limits) -> list[str]:
    """Pinned files the lifecycle would archive were they not pinned."""
    lifecycle = limits.lifecycle
    found = []
    for path in sorted(p for p in files if is_tier_path(p) and is_candidate(p, lifecycle.candidate_dirs)):
        file = KnowledgeFile(path, files[path])
        seen = activity(file, date.fromisoformat(today), lifecycle.staleness_threshold_days)
        if file.pinned and seen is not None and seen.stale:
            found.append(path)
    return found
