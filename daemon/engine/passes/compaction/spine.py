"""SPINE compaction, mechanically (STORE-FORMAT.md 4.2), on a SpineModel. Pure.

1. Entries over the entry cap are cut, and while the SPINE is over its byte target entries are
   shortened longest first toward the entry target: every entry longer than a level L is cut to
   L, with L the highest level (between the target and the cap) that brings the SPINE within
   its byte target. No entry is cut below the target.
2. While the SPINE is over its line target: split children join their parent's line, then
   blank lines go (headings stay), then entries of one tier directory and one section merge
   into one multi-pointer line: those that share a topic first, then neighbours, smallest
   pair first.
3. What cannot be reached is reported: as debt when within the hard caps, as a breach otherwise.

The catalog line and entries whose hook has nowhere to go (no existing tier file in their
group) are never cut or merged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from copy import copy
from dataclasses import dataclass, field

from ....store.hooks import LINK_RE
from ....store.limits import SpineLimits
from ....store.spine import hook_of_entry
from ....store.text import byte_len, distinct_words, rtrim
from ...cancel import checkpoint
from .allocate import Rung, allocate
from .continuation import continued_family
from .findability import Weights
from .pairs import MergePairs
from .spine_model import Entry, SpineModel, format_group, merged_text, must_keep, rewrite

MERGE_TRIALS = 8  # merges weighed per step: the ranking puts the likeliest first
LADDER_STEP = 60  # bytes between two versions of an entry an allocation weighs


def floor_of(entry: Entry, floor: int) -> int:
    """The shortest this entry may become: its group, and a hook of at least ``floor`` bytes."""
    head = byte_len(f"- {format_group(entry.group)} \u2014 ")
    return head + min(byte_len(entry.hook), floor)


@dataclass
class SpineResult:
    level: int  # entries longer than this were cut to it
    lines: int
    size: int
    floor: int  # the hook bytes every shortened entry kept at least
    debt: list[str] = field(default_factory=list)  # over a target, within the caps
    breaches: list[str] = field(default_factory=list)  # over a hard cap


def _states(entries: list[Entry]) -> list[tuple[Entry, Entry]]:
    """Every entry with a copy of it as it is now (a merge replaces fields, never edits them)."""
    return [(entry, copy(entry)) for entry in entries]


def _restore(model: SpineModel, states: list[tuple[Entry, Entry]]) -> None:
    for entry, state in states:
        entry.__dict__.update(state.__dict__)
    model.forget_index()


def _worth(text: str, weights: Weights) -> float:
    """What the store's self-queries find in an entry's text (every word alike without them)."""
    words = distinct_words(text)
    return sum(weights.get(w, 0.0) for w in words) if weights else float(len(words))


def _merge(model: SpineModel, first: Entry, second: Entry, text: str, cap: int) -> None:
    """``second`` goes into ``first``'s line, which becomes ``text``."""
    first.group = first.group + second.group
    first.group_changed = True
    model.forget_index()
    first.text = text
    first.hook = rtrim(hook_of_entry(text))
    first.limit = cap
    first.merged = second.merged = second.removed = True


def _tier_of(entry: Entry) -> str | None:
    tiers = {p.path.split("/", 1)[0] for p in entry.group}
    return tiers.pop() if len(tiers) == 1 else None


class SpineCompactor:
    def __init__(self, model: SpineModel, limits: SpineLimits, detail_target: Callable[[Entry], str | None],
                 is_split_child_of: Callable[[str], str | None],
                 cut_before: Callable[[Entry], bool] = lambda entry: False,
                 target_full: Callable[[Entry], bool] = lambda entry: False) -> None:
        self.model = model
        # An entry whose Index detail would go to a file with no room for it is cut only when it
        # must be (over the entry cap): a cut for the byte target would push that file over a cap.
        self.target_full = target_full
        # An entry cut before (its target's Index detail holds its start) and over the level
        # again is cut to the entry target: room to grow, or every few words a writer adds
        # would append its whole hook to Index detail once more.
        self.cut_before = cut_before
        self.limits = limits
        self.parent_of = is_split_child_of
        self.movable: list[Entry] = []
        for entry in model.live_entries():
            if entry.is_catalog or entry.is_new or not entry.group or \
                    continued_family(entry.hook, entry.paths, is_split_child_of):
                continue  # a family's continuation lines are short already, and their hook says all they say
            entry.detail_target = detail_target(entry)
            if entry.detail_target is not None:
                self.movable.append(entry)
        self.level = limits.entry_max_bytes
        self.floor = limits.hook_floor
        # The targets are aims, the headroom a ceiling: past the targets only what costs no
        # findability is done (issue 24); the reasons say why a target was not reached.
        self.byte_ceiling = min(limits.max_bytes, limits.migrate_max_bytes)
        self.line_ceiling = min(limits.max_lines, limits.migrate_max_lines)
        self.reasons: list[str] = []
        self.reasons_lines: list[str] = []
        # Entries cut before keep their hook while the SPINE fits its caps without cutting them
        # again: each cut repeats the words the last one kept in Index detail.
        self.spare_recuts = True

    # 1. bytes -----------------------------------------------------------------------------
    def _ladder(self, entry: Entry, natural: int, cache: dict[tuple[int, int], str]) -> list[Rung]:
        """The versions ``entry`` may take, shortest first (see allocate.py). An entry cut before
        (its target's Index detail holds its start) that must be cut again gets the shortest one:
        room to grow, or every few words a writer adds would append its whole hook once more."""
        checkpoint()  # a huge hook takes long to shorten: a stop is seen between entries
        limits = self.limits
        weights = self.model.weights_of(entry)
        whole = Rung(natural, _worth(entry.current(), weights), None)
        low = max(limits.entry_target_bytes, floor_of(entry, self.floor))
        high = min(natural, limits.entry_max_bytes)
        again = self.cut_before(entry)
        if natural > limits.entry_max_bytes and again:
            # Every cut appends the whole hook (C4 wants it verbatim), the part an earlier cut
            # left included: cut to the floor, so that those repeated bytes are few and the room
            # to grow is large (issue 23, item 11: the share of Index detail stays flat).
            high = low = floor_of(entry, self.floor)
        within = natural <= limits.entry_max_bytes
        if natural <= low or within and (self.target_full(entry) or again and self.spare_recuts):
            return [whole]  # a cut-before entry within its cap is cut for the byte target only if need be
        rungs: list[Rung] = []
        for limit in [*range(low, high, LADDER_STEP), high]:
            text = cache.get((entry.key, limit))
            if text is None:
                text = cache[(entry.key, limit)] = rewrite(entry, limit, self.model.pinned, weights)
            if rungs and byte_len(text) <= rungs[-1].size:
                continue
            rungs.append(Rung(byte_len(text), _worth(text, weights), text))
        if natural <= limits.entry_max_bytes:
            rungs.append(whole)
        return rungs

    def _allocate(self, goal: int, natural: dict[int, int], ladders: dict[int, list[Rung]]) -> int:
        """Each entry's bytes, shared out by findability within ``goal`` (allocate.py)."""
        for entry in self.movable:
            entry.text, entry.limit = None, None
        other = self.model.size - sum(natural.values())
        chosen = allocate(ladders, other, goal)
        for entry in self.movable:
            rung = ladders[entry.key][chosen[entry.key]]
            if rung.text is not None and rung.size < natural[entry.key]:
                entry.text, entry.limit = rung.text, max(rung.size, floor_of(entry, self.floor))
        return self.model.size

    def _level_of(self, entry: Entry, level: int) -> int:
        return min(level, self.limits.entry_target_bytes) if self.cut_before(entry) else level

    def shorten(self) -> None:
        """Entries over the cap are cut; the SPINE's bytes go to the target only where that costs
        the store's self-queries nothing, else to the headroom (the ceiling) and no further."""
        limits = self.limits
        natural = {e.key: e.size for e in self.movable}
        cache: dict[tuple[int, int], str] = {}
        for entry in self.movable:
            entry.text, entry.limit = None, None
        ladders = {entry.key: self._ladder(entry, natural[entry.key], cache) for entry in self.movable}
        goal = limits.compact_at_bytes
        self._allocate(self.byte_ceiling, natural, ladders)
        if self.model.size > self.byte_ceiling:
            self.spare_recuts = False
            ladders = {entry.key: self._ladder(entry, natural[entry.key], cache) for entry in self.movable}
        self._allocate(goal, natural, ladders)
        if self.byte_ceiling > goal and self.model.findability() is not None:
            at_target = self.model.score()
            self._allocate(self.byte_ceiling, natural, ladders)
            at_ceiling = self.model.score()
            if at_target < at_ceiling:
                if self.model.size > goal:
                    self.reasons.append(f"shortening more hooks to reach {goal} bytes would lower the store's "
                                        f"self-query score from {at_ceiling:.3f} to {at_target:.3f}")
                goal = self.byte_ceiling
        self._allocate(goal, natural, ladders)
        self.level = max((e.limit for e in self.movable if e.limit is not None), default=limits.entry_max_bytes)
        for entry in self.movable:
            entry.cut = entry.text is not None and rtrim(hook_of_entry(entry.text)) != entry.hook

    def _refit(self, entry: Entry) -> None:
        limit = self._level_of(entry, max(entry.limit or 0, self.level))
        if entry.size > limit and entry.detail_target is not None:
            entry.limit = max(limit, floor_of(entry, self.floor))
            entry.text = rewrite(entry, entry.limit, self.model.pinned, self.model.weights_of(entry))
            entry.cut = entry.cut or rtrim(hook_of_entry(entry.text)) != entry.hook

    # 2. lines -----------------------------------------------------------------------------
    def _over_lines(self) -> bool:
        return self.model.line_count > self.limits.compact_at_lines

    def children_join_parents(self) -> None:
        for entry in list(self.movable):
            if entry.removed:
                continue
            parents = {self.parent_of(p.path) for p in entry.group}
            if len(parents) != 1 or None in parents:
                continue
            parent = parents.pop() or ""
            host = self.model.entry_of(parent)
            if host is None or host is entry or host.is_catalog:
                continue
            if LINK_RE.search(entry.hook):
                continue  # its hook links another file: that link must stay in the SPINE
            if not self._over_lines():
                return
            self.model.add_pointers(host, list(entry.group), parent)
            entry.removed = entry.merged = True
            self.model.forget_index()
            self._refit(host)

    def drop_blank_lines(self) -> None:
        while self._over_lines():
            rows = self.model.droppable_blank_rows()
            if not rows:
                return
            rows[-1].dropped = True

    def merge_neighbours(self) -> None:
        """Merges serve the line target only, so they never cut a hook below the first floor.

        Entries of one tier and section merge: neighbours, and entries that share a topic
        wherever they stand in the section (their titles, file names and hooks share rare
        words: store/topics.py). A pair whose two hooks fit whole on one line goes first, and
        of those the pair that shares the rarest words, then the smaller. A merge that must
        shorten hooks costs words a reader searches for, so of those the smaller pair goes
        first, shared words deciding a tie. The merged line stands where the first one stood."""
        cap = self.limits.entry_max_bytes
        memo: dict[tuple[object, ...], str | None] = {}
        tiers: dict[tuple[int, int], str | None] = {}

        def tier(entry: Entry) -> str | None:
            key = (entry.key, len(entry.group))
            if key not in tiers:
                tiers[key] = _tier_of(entry)
            return tiers[key]

        def merged(first: Entry, second: Entry) -> str | None:
            together = first.size + second.size
            key = (first.key, first.hook, len(first.group), together, second.key, second.hook, len(second.group))
            if key not in memo:
                must = must_keep(first, self.model.pinned) or must_keep(second, self.model.pinned)
                memo[key] = merged_text(first, second, min(cap, together), must,
                                        self.model.weights_for(first.paths + second.paths,
                                                               format_group(first.group + second.group)))
            text = memo[key]
            return text if text is not None and byte_len(text) <= cap else None

        def mergeable(one: Entry, two: Entry) -> bool:
            return (one.detail_target is not None and two.detail_target is not None and one.section == two.section
                    and not self.target_full(one) and not self.target_full(two)
                    and tier(one) is not None and tier(one) == tier(two))

        def merge_all(by_topic: bool) -> None:
            pairs = MergePairs(self.model.live_entries(), mergeable, lambda e: (e.section, tier(e)), by_topic)
            while self._over_lines():
                checkpoint()
                chosen = self._free_or_forced(
                    ((one, two, text) for one, two in pairs.ranked(self.model.live_entries(), cap)
                     if (text := merged(one, two)) is not None))
                if chosen is None:
                    return
                first, second, text = chosen
                _merge(self.model, first, second, text, cap)
                pairs.joined(first, second)

        before = _states(self.model.entries)
        merge_all(by_topic=True)
        if self._over_lines() and self.model.line_count > self.line_ceiling:
            # merges by topic can leave entries no partner: try neighbours alone
            by_topic, lines = _states(self.model.entries), self.model.line_count
            _restore(self.model, before)
            merge_all(by_topic=False)
            if self.model.line_count >= lines:  # no better: the merges by topic stay
                _restore(self.model, by_topic)

    def _free_or_forced(self, candidates: Iterable[tuple[Entry, Entry, str]]) -> tuple[Entry, Entry, str] | None:
        """The first merge that costs the store's self-queries nothing; over the line ceiling, the
        one of the first few that costs least. None: stop merging (the reason is kept)."""
        findability = self.model.findability()
        forced = self.model.line_count > self.line_ceiling
        least: tuple[float, tuple[Entry, Entry, str]] | None = None
        for tried, candidate in enumerate(candidates):
            if findability is None:
                return candidate
            if tried >= MERGE_TRIALS:
                break
            first, second, text = candidate
            only = findability.touching([first.current(), second.current(), text], first.paths + second.paths)
            before = self.model.score(only)
            states = _states([first, second])
            _merge(self.model, first, second, text, self.limits.entry_max_bytes)
            found = self.model.score(only)
            _restore(self.model, states)
            if found >= before:
                return candidate
            loss = found - before
            if least is None or loss > least[0]:
                least = (loss, candidate)
        if forced and least is not None:
            return least[1]
        if least is not None and not self.reasons_lines:
            base = self.model.score()
            self.reasons_lines.append(f"merging more entries to reach {self.limits.compact_at_lines} lines would "
                                      f"lower the store's self-query score (from {base:.3f} to {base + least[0]:.3f} "
                                      f"at the cheapest merge)")
        return None

    def run(self, floor: int) -> SpineResult:
        self.floor = floor
        self.shorten()
        if self._over_lines():
            self.children_join_parents()
        if self._over_lines():
            self.drop_blank_lines()
        if self._over_lines():
            self.merge_neighbours()
        return self.result()

    def result(self) -> SpineResult:
        limits = self.limits
        lines, size = self.model.line_count, self.model.size
        outcome = SpineResult(self.level, lines, size, self.floor)
        if lines > limits.max_lines:
            outcome.breaches.append(f"SPINE.md would have {lines} lines (cap {limits.max_lines})")
        elif lines > limits.compact_at_lines:
            why = f": {self.reasons_lines[0]}" if self.reasons_lines else ""
            outcome.debt.append(f"SPINE.md has {lines} lines (target {limits.compact_at_lines}){why}")
        if size > limits.max_bytes:
            outcome.breaches.append(f"SPINE.md would be {size} bytes (cap {limits.max_bytes})")
        elif size > limits.compact_at_bytes:
            why = f": {self.reasons[0]}" if self.reasons else ""
            outcome.debt.append(f"SPINE.md is {size} bytes (target {limits.compact_at_bytes}){why}")
        for entry in self.model.live_entries():
            if entry.size > limits.entry_max_bytes:
                what = "its pointer group alone is too long" if entry.detail_target else \
                    "no tier file in its group can take its hook"
                outcome.breaches.append(f"entry of {entry.paths[0] if entry.paths else '?'} would be "
                                        f"{entry.size} bytes (cap {limits.entry_max_bytes}): {what}")
        return outcome
