"""plan_compaction: the store's files in, every write of a compaction out (STORE-FORMAT.md 4.2,
4.3). Pure: no I/O, ``today`` injected.

Order, as the format asks: over-cap tier files are split (children join their parent's SPINE
line); the SPINE is compacted; every cut or merged entry's whole hook is appended to its target
under ``## Index detail``; targets the append pushed over their caps are split in turn. A split
adds pointers, which can change the compaction, so the plan is recomputed until it is stable.
Nothing is archived to make room.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ....store.limits import Limits
from ....store.snapshot import Snapshot
from ....store.index_detail import hooks_not_held, was_cut_before
from ....store.paths import SPINE, contained
from ....store.spine import Spine
from ....store.split import Limit, split_knowledge_file
from ....store.text import byte_len
from ....store.tierfile import append_index_details
from ...cancel import checkpoint
from ...context import PlanInputs
from ...executor import Step
from ...progress import report as report_progress
from .fit import SpineRoom, spine_floor, spine_refusal
from .placement import place_children, relieve_crowded
from .spine import SpineCompactor, SpineResult
from .spine_model import Entry, SpineModel
from .tree import Tree, is_tier_path

__all__ = ["CompactionPlan", "EntryChange", "SplitRecord", "is_tier_path", "plan_compaction"]

DETAIL_OVERHEAD = (4, 60)  # lines and bytes an Index detail section adds besides the hook itself
ROUNDS = 8
# A plan is carried on until planning the store it leaves finds nothing more (at most this many
# plans after the first), so the next compaction does not rewrite what this one just wrote.
SETTLE_PLANS = 2


def _targets_at_caps(limits: Limits) -> Limits:
    """The limits with the tier files' compaction target at their caps: split pieces end at
    the caps, so a file needs fewer of them (pieces end at the target otherwise, with room to grow)."""
    tier_file = limits.tier_file
    return replace(limits, tier_file=replace(tier_file, compact_at_lines=tier_file.max_lines,
                                             compact_at_bytes=tier_file.max_bytes))


@dataclass
class EntryChange:
    kind: str  # "cut", "merged", or "joined" (its pointers' joiners became " + ")
    paths: list[str]
    before: str
    after: str  # the line it became ("" when it went into another entry's line)
    target: str  # the file that received its whole hook


@dataclass
class SplitRecord:
    path: str
    children: list[str]
    after_index_detail: bool = False
    over_target: int = 0  # pieces that ended over the compaction target (within the caps)


@dataclass
class CompactionPlan:
    steps: list[Step] = field(default_factory=list)
    spine_before: tuple[int, int] = (0, 0)  # lines, bytes
    spine_after: tuple[int, int] = (0, 0)
    spine_text: bytes = b""
    changes: list[EntryChange] = field(default_factory=list)
    splits: list[SplitRecord] = field(default_factory=list)
    unsplittable: list[str] = field(default_factory=list)
    debt: list[str] = field(default_factory=list)
    breaches: list[str] = field(default_factory=list)
    level: int = 0
    floor: int = 0  # every shortened entry kept at least this many bytes of its hook
    floor_lowered: bool = False  # below the first hook floor, to keep the SPINE within its caps
    files: dict[str, bytes] = field(default_factory=dict)  # the store's files once carried out

    @property
    def cut(self) -> list[EntryChange]:
        return [c for c in self.changes if c.kind == "cut"]

    @property
    def merged(self) -> list[EntryChange]:
        return [c for c in self.changes if c.kind == "merged"]

    @property
    def children(self) -> int:
        return sum(len(s.children) for s in self.splits)

    @property
    def pieces_over_target(self) -> int:
        return sum(s.over_target for s in self.splits)


def _split(tree: Tree, path: str, limits: Limits, title: str, after_detail: bool,
           record: list[SplitRecord], unsplittable: list[str]) -> list[str]:
    tier_file = limits.tier_file
    outcome = split_knowledge_file(path, tree.files[path], tier_file.max_lines, tier_file.max_bytes,
                                   tree.taken, Limit(tier_file.compact_at_lines, tier_file.compact_at_bytes))
    if outcome is None:
        return []
    unsplittable += outcome.over_cap
    if not outcome.children or outcome.over_cap:
        return []  # a split that leaves a piece over its caps only moves the debt to a new file
    names = [name for name, _ in outcome.children]
    step = Step(f"{title} {path} into {', '.join(names)}")
    for name, data in outcome.children:  # children first: no line is ever only in flight
        tree.write(step, name, data)
    tree.write(step, path, outcome.parent)
    tree.steps.append(step)
    record.append(SplitRecord(path, names, after_detail, outcome.over_target))
    return names


def _build_model(spine: bytes, tree: Tree, children: list[tuple[str, list[str]]], limits: Limits,
                 catalog_line: str | None, start: int = 0) -> tuple[SpineModel, SpineResult]:
    """The compacted SPINE, with the highest hook floor that keeps it within the hard caps
    (searched from ``hook_floors[start]``: more pointers never make room for a higher floor)."""
    floors = limits.spine.hook_floors

    def attempt(index: int) -> tuple[SpineModel, SpineResult]:
        return _model_at(spine, tree, children, limits, catalog_line, floors[index])

    high = start
    best = attempt(high)
    if not best[1].breaches or high == len(floors) - 1:
        return best
    low = len(floors) - 1
    lowest = attempt(low)
    if lowest[1].breaches:
        return lowest  # not even bare pointer groups fit: the caller reports the breach
    best = lowest
    while low - high > 1:  # invariant: floors[high] breaches, floors[low] fits
        middle = (low + high) // 2
        found = attempt(middle)
        if found[1].breaches:
            high = middle
        else:
            low, best = middle, found
    return best


def _model_at(spine: bytes, tree: Tree, children: list[tuple[str, list[str]]], limits: Limits,
              catalog_line: str | None, floor: int) -> tuple[SpineModel, SpineResult]:
    model = SpineModel(spine)
    model.pinned = tree.pinned
    model.store_terms = tree.terms
    model.findability = tree.findability
    if catalog_line is not None:
        model.insert_top(catalog_line)

    def parent_of(path: str) -> str | None:
        if path not in tree.files:
            return None
        parent = tree.knowledge(path).split_from
        return parent if parent and parent in tree.files and parent != path else None

    for parent, kids in children:
        place_children(model, parent, kids, limits.spine.entry_max_bytes, limits.spine.hook_floor,
                        tree.child_title, parent_of)

    def has_room(entry: Entry, path: str) -> bool:
        file = tree.knowledge(path)
        need = byte_len(entry.original_hook) + DETAIL_OVERHEAD[1]
        return file.oversize_reason is None and file.size + need <= limits.tier_file.max_bytes and \
            file.line_count + DETAIL_OVERHEAD[0] <= limits.tier_file.max_lines

    def detail_target(entry: Entry) -> str | None:
        """The first file of the entry's group, or the first one with room for the whole hook
        when the first has none (an append that splits a file moves pointers, and so the cuts)."""
        members = [p for p in entry.paths if is_tier_path(p) and contained(p, "tier") and p in tree.files]
        return next((path for path in members if has_room(entry, path)), members[0] if members else None)

    def target_full(entry: Entry) -> bool:
        target = entry.detail_target
        return target is not None and target in tree.files and not has_room(entry, target)

    relieve_crowded(model, parent_of, limits.spine.entry_max_bytes, limits.spine.hook_floor,
                     tree.child_title)
    def cut_before(entry: Entry) -> bool:
        target = detail_target(entry)
        return target is not None and was_cut_before(tree.files, target, entry.original_hook)

    compactor = SpineCompactor(model, limits.spine, detail_target, parent_of, cut_before, target_full)
    return model, compactor.run(floor)


def _details(model: SpineModel) -> list[tuple[str, str]]:
    """(target, whole hook) for every cut or merged entry, in SPINE order."""
    found: list[tuple[str, str]] = []
    for entry in model.entries:
        if (entry.cut or entry.merged or entry.normalized) and entry.detail_target and entry.original_hook:
            found.append((entry.detail_target, entry.original_hook))
    return found


def plan(snapshot: Snapshot, ctx: PlanInputs) -> CompactionPlan:
    """The pass's planner: the compaction of the store as it is. A split child the SPINE misses
    (left by a pass that could not be finished or undone) joins its parent's line, as migration
    does."""
    from ..migration.plan import unpointed_children

    files = snapshot.file_contents()
    return plan_compaction(files, ctx.limits, ctx.now().date().isoformat(),
                           unpointed=unpointed_children(files, files.get(SPINE, b"")))


def plan_compaction(files: dict[str, bytes], limits: Limits, today: str,
                    catalog_line: str | None = None,
                    unpointed: list[tuple[str, list[str]]] | None = None) -> CompactionPlan:
    """Every write that brings the SPINE and the tier files toward their targets.

    ``catalog_line`` is added near the top of the SPINE (migration); ``unpointed`` lists split
    children the SPINE does not point at yet, by parent: they join their parent's line too.
    Split pieces end at the compaction target, so that they have room to grow, unless the
    pointers that costs would keep the SPINE over a hard cap: then they end at the caps.
    """
    plan = _best_plan(files, limits, today, catalog_line, unpointed)
    read = {entry.joined for entry in Spine(files.get(SPINE, b"")).entries}
    for _ in range(SETTLE_PLANS):
        if not plan.steps:
            break
        after = {**files, **plan.files, SPINE: plan.spine_text}
        more = _best_plan(after, limits, today, None, None)
        if not more.steps:
            break
        plan = _chained(plan, more, read)
    return plan


def _best_plan(files: dict[str, bytes], limits: Limits, today: str, catalog_line: str | None,
               unpointed: list[tuple[str, list[str]]] | None) -> CompactionPlan:
    plan = _plan_once(files, limits, today, catalog_line, unpointed)
    at_caps_limits = _targets_at_caps(limits)
    if at_caps_limits == limits or not plan.splits or (not plan.breaches and plan.floor >= limits.spine.hook_floor):
        return plan
    # The children's pointers cost the hooks their words (or the SPINE its caps): pieces that end
    # at the caps need fewer children. Take them when they leave the hooks more room.
    at_caps = _plan_once(files, at_caps_limits, today, catalog_line, unpointed)
    if (len(at_caps.breaches), -at_caps.floor) < (len(plan.breaches), -plan.floor):
        return at_caps
    return plan


def _chained(first: CompactionPlan, then: CompactionPlan, read: set[str]) -> CompactionPlan:
    """``first`` carried out, then ``then`` (planned from the store ``first`` leaves): one plan
    whose steps run in order, with what the last says of the store it leaves. An entry both
    changed is one change, from its first line to its last. ``read``: the entries of the SPINE
    the chain started from; an entry an earlier plan made is new to the reader however a later
    plan changes it, so it is reported as a new entry is (not at all), never as shortened."""
    changes = list(first.changes)
    for change in then.changes:
        earlier = next((i for i, c in enumerate(changes) if c.after and c.after == change.before), None)
        if earlier is None:
            if change.before in read:
                changes.append(change)
        else:
            changes[earlier] = replace(change, before=changes[earlier].before, target=changes[earlier].target,
                                       kind="merged" if "merged" in (changes[earlier].kind, change.kind)
                                       else change.kind)
    return replace(then, steps=first.steps + then.steps, spine_before=first.spine_before, changes=changes,
                   splits=first.splits + then.splits, files={**first.files, **then.files})


def _refused_at_once(tree: Tree, spine_raw: bytes, limits: Limits,
                     catalog_line: str | None) -> CompactionPlan | SpineRoom:
    """The refusal of a SPINE that no compaction can bring within its caps (fit.py), at once and
    with the figures; else the room its caps leave for the pointers of new split children."""
    spine = Spine(spine_raw)

    def is_split_child(path: str) -> bool:
        return path in tree.files and bool(tree.knowledge(path).split_from)

    floor = spine_floor(spine, limits, is_split_child)
    if catalog_line is not None:
        floor.lines, floor.bytes = floor.lines + 1, floor.bytes + byte_len(catalog_line) + 1
    why = spine_refusal(floor, spine, limits)
    if why is None:
        return SpineRoom(floor, limits)
    plan = CompactionPlan(files=dict(tree.files), breaches=[why])
    plan.spine_before = plan.spine_after = (spine.line_count, spine.size)
    plan.spine_text = spine_raw
    return plan


def _plan_once(files: dict[str, bytes], limits: Limits, today: str, catalog_line: str | None,
               unpointed: list[tuple[str, list[str]]] | None) -> CompactionPlan:
    spine_raw = files.get(SPINE, b"")
    plan = CompactionPlan()
    base = Tree(files)
    report_progress("planning the compaction", 0, 3)
    refused = _refused_at_once(base, spine_raw, limits, catalog_line)
    if isinstance(refused, CompactionPlan):
        return refused
    room = refused
    splits: list[SplitRecord] = []
    unsplittable: list[str] = []
    first_children: list[tuple[str, list[str]]] = list(unpointed or [])
    for path in sorted(p for p in files if is_tier_path(p)):
        checkpoint()
        if base.over_cap(path, limits):
            why_not = room.refusal(path, base.knowledge(path))
            if why_not is not None:  # its pointers cannot fit: refused before any splitting
                unsplittable.append(why_not)
                continue
            names = _split(base, path, limits, "split", False, splits, unsplittable)
            if names:
                first_children.append((path, names))
    report_progress("planning the compaction", 1, 3)

    previous: tuple[list[tuple[str, str]], list[tuple[str, list[str]]]] | None = None
    later_children: list[tuple[str, list[str]]] = []
    settled = False
    floor_index = 0
    for round_number in range(ROUNDS):
        checkpoint()
        report_progress("planning the compaction", min(2, 1 + round_number), 3)
        model, result = _build_model(spine_raw, base, first_children + later_children, limits, catalog_line,
                                     floor_index)
        floor_index = limits.spine.hook_floors.index(result.floor)
        details = _details(model)
        tree = Tree(base.files)
        tree.steps = list(base.steps)
        resplits: list[SplitRecord] = []
        again_unsplittable: list[str] = []
        by_target: dict[str, list[str]] = {}
        for target, hook in details:
            by_target.setdefault(target, []).append(hook)
        by_target = {t: held for t, hooks in by_target.items() if (held := hooks_not_held(tree.files, t, hooks))}
        for target, hooks in by_target.items():
            step = Step(f"append Index detail to {target} ({len(hooks)} whole hook{'s' if len(hooks) > 1 else ''})")
            tree.write(step, target, append_index_details(tree.files[target], hooks, today))
            tree.steps.append(step)
        new_children: list[tuple[str, list[str]]] = []
        for target in by_target:
            if tree.over_cap(target, limits):
                names = _split(tree, target, limits, "split (over its caps after Index detail)", True,
                               resplits, again_unsplittable)
                if names:
                    new_children.append((target, names))
        current = (details, new_children)
        if current == previous or not new_children and not later_children:
            settled = True
            break
        previous = current
        later_children = new_children

    report_progress("planning the compaction", 3, 3)
    spine_after = model.raw()
    if spine_after != spine_raw:
        step = Step("write SPINE.md")
        tree.write(step, SPINE, spine_after)
        tree.steps.append(step)
    plan.steps = tree.steps
    plan.files = tree.files
    plan.spine_text = spine_after
    before = Spine(spine_raw)
    plan.spine_before = (before.line_count, before.size)
    plan.spine_after = (model.line_count, model.size)
    plan.level = result.level
    plan.floor = result.floor
    plan.floor_lowered = result.floor < limits.spine.hook_floor
    plan.splits = splits + resplits
    plan.unsplittable = unsplittable + again_unsplittable
    plan.debt = list(result.debt)
    plan.breaches = list(result.breaches)
    if not settled:
        plan.breaches.append(f"the splits Index detail causes did not settle in {ROUNDS} rounds")
    for entry in model.entries:
        if entry.is_new or not (entry.cut or entry.merged or entry.normalized) or not entry.detail_target:
            continue
        after = "" if entry.removed else entry.current()
        kind = "merged" if entry.merged else "cut" if entry.cut else "joined"
        plan.changes.append(EntryChange(kind, entry.paths, entry.as_read,
                                        after, entry.detail_target))
    carried_out = Tree(plan.files)
    for path in sorted(p for p in plan.files if is_tier_path(p)):
        if carried_out.over_cap(path, limits):
            plan.debt.append(f"{path} is still over its caps")
    return plan
