"""plan_compaction: the store's files in, every write of a compaction out (STORE-FORMAT.md 4.2,
4.3). Pure: no I/O, ``today`` injected.

Order, as the format asks: over-cap tier files are split (children join their parent's SPINE
line); the SPINE is compacted; every cut or merged entry's whole hook is appended to its target
under ``## Index detail``; targets the append pushed over their caps are split in turn. A split
adds pointers, which can change the compaction, so the plan is recomputed until it is stable.
Nothing is archived to make room.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ....store.limits import Limits
from ....store.paths import SPINE, TIERS, contained, is_nested_archive
from ....store.spine import Pointer, Spine
from ....store.split import Limit, split_knowledge_file
from ....store.terms import StoreTerms
from ....store.text import byte_len, sha256_hex
from ....store.tierfile import KnowledgeFile, append_index_details
from ...executor import FileWrite, Step
from .findability import Findability
from .continuation import child_summary, child_title, continued_family
from .spine import SpineCompactor, SpineResult
from .spine_model import Entry, SpineModel, format_group

NUMBER_RE = re.compile(r"-([0-9]+)\.md$")
ParentOf = Callable[[str], str | None]
DETAIL_OVERHEAD = (4, 60)  # lines and bytes an Index detail section adds besides the hook itself
ROUNDS = 8


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


def is_tier_path(path: str) -> bool:
    return path.endswith(".md") and path.split("/", 1)[0] in TIERS and "/" in path and not is_nested_archive(path)


class _Tree:
    """The store's files as the plan goes, and the steps that get them there."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = dict(files)
        self.steps: list[Step] = []
        self._pinned: dict[str, bool] = {}
        self._known: dict[str, KnowledgeFile] = {}
        self._families: dict[str, list[str]] | None = None  # split children by parent, once asked for
        self._summaries: dict[str, str] = {}
        self._terms: StoreTerms | None = None  # built once a hook is shortened
        self._findability: Findability | None = None

    def pinned(self, path: str) -> bool:
        if path not in self._pinned:
            self._pinned[path] = path in self.files and self.knowledge(path).pinned
        return self._pinned[path]

    def write(self, step: Step, path: str, data: bytes) -> None:
        old = self.files.get(path)
        step.ops.append(FileWrite(path, sha256_hex(old) if old is not None else None, data))
        self.files[path] = data
        self._known.pop(path, None)
        self._families = None
        self._summaries.clear()
        self._terms = None
        self._findability = None

    def summary(self, path: str) -> str:
        """A few words of what a split child holds, for its family's continuation line."""
        if path in self._summaries:
            return self._summaries[path]
        if self._families is None:
            self._families = {}
            for member in sorted(p for p in self.files if is_tier_path(p)):
                parent = self.knowledge(member).split_from
                if parent:
                    self._families.setdefault(parent, []).append(member)
        parent = self.knowledge(path).split_from or path
        family = [self.knowledge(p) for p in [parent, *self._families.get(parent, [])] if p in self.files]
        self._summaries[path] = child_summary(self.knowledge(path), family)
        return self._summaries[path]

    def child_title(self, path: str) -> str:
        """The title of a split child's pointer on a line of its own: words of its own piece."""
        if path not in self.files:
            return _child_pointer(path).title
        return child_title(self.knowledge(path), self.summary(path)) or _child_pointer(path).title

    def family_head(self, path: str) -> str:
        """The file a split child continues, followed to its first piece."""
        seen = {path}
        while path in self.files and (parent := self.knowledge(path).split_from) and parent not in seen:
            seen.add(parent)
            path = parent
        return path

    def terms(self) -> StoreTerms:
        """Every topic's terms (store/terms.py), read once per version of the tree."""
        if self._terms is None:
            self._terms = StoreTerms({p: data for p, data in self.files.items() if is_tier_path(p)},
                                     self.family_head)
        return self._terms

    def findability(self) -> Findability:
        """The store's self-queries (findability.py), built once per version of the tree."""
        if self._findability is None:
            self._findability = Findability({p: data for p, data in self.files.items() if is_tier_path(p)},
                                            self.family_head)
        return self._findability

    def taken(self, path: str) -> bool:
        return any(p in self.files for p in (path, "archive/" + path, "evidence/" + path))

    def knowledge(self, path: str) -> KnowledgeFile:
        if path not in self._known:
            self._known[path] = KnowledgeFile(path, self.files.get(path, b""))
        return self._known[path]

    def over_cap(self, path: str, limits: Limits) -> bool:
        file = self.knowledge(path)
        if file.oversize_reason is not None:
            return False  # oversize files are left alone
        return file.line_count > limits.tier_file.max_lines or file.size > limits.tier_file.max_bytes


def _split(tree: _Tree, path: str, limits: Limits, title: str, after_detail: bool,
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


def _child_pointer(path: str) -> Pointer:
    match = NUMBER_RE.search(path)
    return Pointer(match.group(1) if match else path.rsplit("/", 1)[-1][:-3], path)


ChildTitle = Callable[[str], str]  # a split child's path -> the title its pointer carries on a line of its own


def _place_children(model: SpineModel, parent: str, children: list[str], cap: int, reserve: int,
                    title_of: ChildTitle, parent_of: ParentOf) -> None:
    """Children join the line of the entry that names their parent; what does not fit on it
    (or has no such line) gets a line of its own right after it."""
    pointers = [_child_pointer(c) for c in children]
    host = model.entry_of(parent)
    fitting: list[Pointer] = []
    if host is not None:
        for pointer in pointers:
            head = byte_len(f"- {format_group(host.group + fitting + [pointer])} \u2014 ")
            if head + reserve > cap:
                break
            fitting.append(pointer)
        if fitting:
            model.add_pointers(host, fitting, parent)
    _continuation_lines(model, host, parent, pointers[len(fitting):], cap, title_of, parent_of)


def _continuation_lines(model: SpineModel, host: Entry | None, parent: str, pointers: list[Pointer],
                        cap: int, title_of: ChildTitle, parent_of: ParentOf) -> None:
    """Lines of their own for a family's pointers that its entry has no room for, right after
    the entry and the family's earlier continuation lines, in order. Such a line has no hook and
    repeats no path: each pointer's title says what its piece holds (continuation.py)."""
    after: Entry | None = host
    if host is not None and pointers:
        live = model.live_entries()
        at = live.index(host) + 1
        while at < len(live) and continued_family(live[at].hook, live[at].paths, parent_of) == parent:
            after = live[at]
            at += 1
    rest = [Pointer(title_of(p.path), p.path) for p in pointers]
    while rest:
        line: list[Pointer] = []
        for pointer in rest:
            if line and byte_len(f"- {format_group(line + [pointer])}") > cap:
                break
            line.append(pointer)
        rest = rest[len(line):]
        section = after.section if after is not None else 0
        after = model.new_entry(line, "", after, section)


def _relieve_crowded(model: SpineModel, parent_of: ParentOf, cap: int, reserve: int, title_of: ChildTitle) -> None:
    """An entry whose pointer group leaves its hook no room (a family that grew child by child)
    gives its trailing split children a continuation line of their own. A continuation line is
    left as it is."""
    for entry in list(model.live_entries()):
        if entry.is_catalog or entry.is_new or continued_family(entry.hook, entry.paths, parent_of):
            continue
        moved: list[Pointer] = []
        while len(entry.group) > 1 and byte_len(f"- {format_group(entry.group)} \u2014 ") + reserve > cap:
            last = entry.group[-1]
            if parent_of(last.path) is None or (moved and parent_of(last.path) != parent_of(moved[0].path)):
                break
            moved.insert(0, entry.group.pop())
        if not moved:
            continue
        entry.group_changed = True
        model.forget_index()
        _continuation_lines(model, entry, parent_of(moved[0].path) or "", moved, cap, title_of, parent_of)


def _build_model(spine: bytes, tree: _Tree, children: list[tuple[str, list[str]]], limits: Limits,
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


def _model_at(spine: bytes, tree: _Tree, children: list[tuple[str, list[str]]], limits: Limits,
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
        _place_children(model, parent, kids, limits.spine.entry_max_bytes, limits.spine.hook_floor,
                        tree.child_title, parent_of)

    def detail_target(entry: Entry) -> str | None:
        """The first file of the entry's group, or the first one with room for the whole hook
        when the first has none (an append that splits a file moves pointers, and so the cuts)."""
        members = [p for p in entry.paths if is_tier_path(p) and contained(p, "tier") and p in tree.files]
        need = byte_len(entry.original_hook) + DETAIL_OVERHEAD[1]
        for path in members:
            file = tree.knowledge(path)
            if file.oversize_reason is None and file.size + need <= limits.tier_file.max_bytes and \
                    file.line_count + DETAIL_OVERHEAD[0] <= limits.tier_file.max_lines:
                return path
        return members[0] if members else None

    _relieve_crowded(model, parent_of, limits.spine.entry_max_bytes, limits.spine.hook_floor, tree.child_title)
    compactor = SpineCompactor(model, limits.spine, detail_target, parent_of)
    return model, compactor.run(floor)


def _details(model: SpineModel) -> list[tuple[str, str]]:
    """(target, whole hook) for every cut or merged entry, in SPINE order."""
    found: list[tuple[str, str]] = []
    for entry in model.entries:
        if (entry.cut or entry.merged or entry.normalized) and entry.detail_target and entry.original_hook:
            found.append((entry.detail_target, entry.original_hook))
    return found


def plan_compaction(files: dict[str, bytes], limits: Limits, today: str,
                    catalog_line: str | None = None,
                    unpointed: list[tuple[str, list[str]]] | None = None) -> CompactionPlan:
    """Every write that brings the SPINE and the tier files toward their targets.

    ``catalog_line`` is added near the top of the SPINE (migration); ``unpointed`` lists split
    children the SPINE does not point at yet, by parent: they join their parent's line too.
    Split pieces end at the compaction target, so that they have room to grow, unless the
    pointers that costs would keep the SPINE over a hard cap: then they end at the caps.
    """
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


def _plan_once(files: dict[str, bytes], limits: Limits, today: str, catalog_line: str | None,
               unpointed: list[tuple[str, list[str]]] | None) -> CompactionPlan:
    spine_raw = files.get(SPINE, b"")
    plan = CompactionPlan()
    base = _Tree(files)
    splits: list[SplitRecord] = []
    unsplittable: list[str] = []
    first_children: list[tuple[str, list[str]]] = list(unpointed or [])
    for path in sorted(p for p in files if is_tier_path(p)):
        if base.over_cap(path, limits):
            names = _split(base, path, limits, "split", False, splits, unsplittable)
            if names:
                first_children.append((path, names))

    previous: tuple[list[tuple[str, str]], list[tuple[str, list[str]]]] | None = None
    later_children: list[tuple[str, list[str]]] = []
    settled = False
    floor_index = 0
    for _ in range(ROUNDS):
        model, result = _build_model(spine_raw, base, first_children + later_children, limits, catalog_line,
                                     floor_index)
        floor_index = limits.spine.hook_floors.index(result.floor)
        details = _details(model)
        tree = _Tree(base.files)
        tree.steps = list(base.steps)
        resplits: list[SplitRecord] = []
        again_unsplittable: list[str] = []
        by_target: dict[str, list[str]] = {}
        for target, hook in details:
            by_target.setdefault(target, []).append(hook)
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
    for path in sorted(p for p in plan.files if is_tier_path(p)):
        if _Tree(plan.files).over_cap(path, limits):
            plan.debt.append(f"{path} is still over its caps")
    return plan
