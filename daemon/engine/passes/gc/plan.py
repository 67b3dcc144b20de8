"""plan_gc: which project files the lifecycle archives, and why (STORE-FORMAT.md 4.4). Pure.

A snapshot, the policy's lifecycle rules and ``today`` in; a GcPlan out. The plan also carries
the SPINE as it will be after the moves, so the ledger's ``spine-entry`` of every move is known
before the first write.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date

from ....store.lifecycle import activity, exemption, is_candidate
from ....store.limits import Limits
from ....store.mentions import path_mentions
from ....store.paths import archived_path, contained
from ....store.safety import unsafe_name_reason
from ....store.snapshot import Snapshot
from ....store.stamps import format_utc
from ....store.spine import Spine, SpineEditor
from ....store.text import clip, encode
from ....store.tierfile import parse_inline_list
from ...context import PlanInputs
from .model import GcPlan, Move, Skip


def split_families(snapshot: Snapshot) -> dict[str, tuple[str, ...]]:
    """Each active tier file's split family (parent and children), itself included."""
    parent_of: dict[str, str] = {}
    paths = set(snapshot.tier_paths)

    def root_of(path: str) -> str:
        while path in parent_of:
            path = parent_of[path]
        return path

    for path in snapshot.tier_paths:
        parent = snapshot.knowledge(path).split_from
        if parent and parent != path and contained(parent, "tier") and parent in paths:
            if root_of(parent) != path:  # a split_from cycle is not a family
                parent_of[path] = parent
    members: dict[str, list[str]] = defaultdict(list)
    for path in snapshot.tier_paths:
        members[root_of(path)].append(path)
    family: dict[str, tuple[str, ...]] = {}
    for top, group in members.items():
        ordered = (top, *sorted(p for p in group if p != top))
        for path in group:
            family[path] = ordered
    return family


def _read_with_index(snapshot: Snapshot) -> dict[str, list[str]]:
    named_by: dict[str, list[str]] = defaultdict(list)
    for path in snapshot.tier_paths:
        value = snapshot.knowledge(path).fm("read_with")
        for target in parse_inline_list(value or "") or []:
            named_by[target].append(path)
    return named_by


def _prose_index(snapshot: Snapshot, directories: tuple[str, ...]) -> dict[str, list[str]]:
    mentioned_by: dict[str, list[str]] = defaultdict(list)
    for path in snapshot.tier_paths:
        for target in path_mentions(snapshot.knowledge(path).text, directories):
            if target != path:
                mentioned_by[target].append(path)
    return mentioned_by


def _hook_links(spine: Spine | None) -> dict[str, int]:
    """Paths linked from inside a SPINE hook (not a leading pointer), with the entry's line."""
    links: dict[str, int] = {}
    for entry in spine.entries if spine else []:
        leading = {p.path for p in entry.leading_group}
        for pointer in entry.pointers:
            if pointer not in leading:
                links.setdefault(pointer, entry.line_index + 1)
    return links


def plan(snapshot: Snapshot, ctx: PlanInputs) -> GcPlan:
    """The pass's planner: what the lifecycle archives now. Its steps are the moves' (gc's journal
    is the manifest the store format fixes, which names moves)."""
    now = ctx.now()
    return plan_gc(snapshot, now.date(), format_utc(now), ctx.limits)


def plan_gc(snapshot: Snapshot, today: date, now_stamp: str, limits: Limits) -> GcPlan:
    """The plan at its fixed point: a file blocked only by the ``read_with`` of files this same
    plan archives is free once they leave, so the plan is made again with them gone until it
    moves nothing more; a second pass then archives nothing new. Each round is a whole plan in
    file order, so the moves and the skip lines keep that order."""
    leaving: frozenset[str] = frozenset()
    while True:
        plan = _plan_round(snapshot, today, now_stamp, limits, leaving)
        moving = frozenset(m.source for m in plan.moves)
        if moving <= leaving:
            return plan
        leaving = leaving | moving


def _plan_round(snapshot: Snapshot, today: date, now_stamp: str, limits: Limits,
                leaving: frozenset[str]) -> GcPlan:
    default_days, candidate_dirs = limits.lifecycle.staleness_threshold_days, limits.lifecycle.candidate_dirs
    spine = snapshot.spine
    plan = GcPlan(now=now_stamp)
    if spine is not None:
        plan.spine_lines_before = plan.spine_lines_after = spine.line_count
        plan.spine_bytes_before = plan.spine_bytes_after = spine.size
    families = split_families(snapshot)
    read_with = {target: [r for r in readers if r not in leaving]
                 for target, readers in _read_with_index(snapshot).items()}
    prose = _prose_index(snapshot, candidate_dirs)
    hook_links = _hook_links(spine)
    decided: set[str] = set()
    editor = SpineEditor(spine) if spine is not None else None

    for path in snapshot.tier_paths:
        if path in decided or not is_candidate(path, candidate_dirs):
            continue
        family = families.get(path, (path,))
        decided.update(family)
        verdict = _family_verdict(snapshot, family, today, default_days, candidate_dirs,
                                  read_with, hook_links)
        if isinstance(verdict, Skip):
            if verdict.status != "recent":  # recently active files are simply not candidates
                plan.skipped.append(verdict)
            continue
        moves = _family_moves(snapshot, family, verdict, editor, prose, plan)
        if moves is not None:
            plan.moves += moves
    if editor is not None and plan.moves:
        after = Spine(encode(editor.text()))
        plan.spine_lines_after = after.line_count
        plan.spine_bytes_after = after.size
    return plan


def _family_verdict(snapshot: Snapshot, family: tuple[str, ...], today: date, default_days: int,
                    candidate_dirs: tuple[str, ...], read_with: dict[str, list[str]],
                    hook_links: dict[str, int]) -> Skip | dict[str, tuple[str, int, int]]:
    """A Skip for the family's first member, or each member's (stamp, age, threshold)."""
    head = family[0]
    together = f" (its split family {', '.join(family)} moves together or not at all)" if len(family) > 1 else ""
    seen: dict[str, tuple[str, int, int]] = {}
    recent: list[str] = []
    for member in family:
        file = snapshot.knowledge(member)
        who = "it" if member == head else member
        unsafe = unsafe_name_reason(member)
        if unsafe:  # the ledger and the catalog would hold it changed, or broken: left where it is
            named = "the name" if member == head else f"the name {member!r}"
            return Skip(head, "blocked", f"{named} cannot be written to the ledger unchanged "
                                         f"({unsafe}); rename the file to archive it{together}")
        if not contained(member, "tier") or not is_candidate(member, candidate_dirs):
            return Skip(head, "ineligible", f"{who} is not directly under {'/, '.join(candidate_dirs)}/{together}")
        reason = exemption(file)
        if reason:
            return Skip(head, "exempt", f"{reason}{'' if member == head else ' (' + member + ')'}{together}")
        readers = [r for r in read_with.get(member, []) if r not in family]
        if readers:
            return Skip(head, "blocked", f"{who} is in the read_with of {', '.join(readers)}{together}")
        if member in hook_links:
            return Skip(head, "blocked", f"{who} is linked from the hook of the SPINE entry on line "
                                         f"{hook_links[member]}; edit that hook first{together}")
        if snapshot.exists(archived_path(member)):
            return Skip(head, "blocked", f"{archived_path(member)} already exists{together}")
        state = activity(file, today, default_days)
        if state is None:
            return Skip(head, "ineligible", f"{who} has no activity stamp (unknown, not inactive){together}")
        if not state.stale:
            recent.append(f"{who} was active {state.age_days} days ago (threshold {state.threshold_days})")
            continue
        seen[member] = (state.stamp, state.age_days, state.threshold_days)
    if recent and not seen:
        return Skip(head, "recent", recent[0])  # nothing is stale: not a candidate, not reported
    if recent:
        return Skip(head, "ineligible", f"{'; '.join(recent)}{together}")
    return seen


def _family_moves(snapshot: Snapshot, family: tuple[str, ...], facts: dict[str, tuple[str, int, int]],
                  editor: SpineEditor | None, prose: dict[str, list[str]], plan: GcPlan) -> list[Move] | None:
    """Moves for a stale family, with the SPINE edits simulated in order."""
    if editor is not None:
        doubled = [m for m in family if editor.occurrences.get(m, 0) > 1]
        if doubled:
            plan.skipped.append(Skip(family[0], "blocked",
                                     f"{', '.join(doubled)} has more than one SPINE line; merge them first"))
            return None
    if editor is not None:
        escaped = [m for m in family if "\\|" in editor.entry_text(m)]
        if escaped:
            plan.skipped.append(Skip(family[0], "blocked",
                                     f"the SPINE entry of {', '.join(escaped)} holds a literal '\\|', which a "
                                     "ledger line cannot record exactly; reword that entry first"))
            return None
    moves: list[Move] = []
    for member in family:
        spine_entry = ""
        removal = editor.remove(member) if editor is not None else None
        if removal is not None:
            spine_entry = removal.spine_entry
            plan.spine_changes.append(("remove line: " if removal.whole_entry else "remove pointer: ")
                                      + clip(spine_entry, 100))
        file = snapshot.knowledge(member)
        stamp, age, threshold = facts[member]
        referrers = tuple(sorted(r for r in prose.get(member, []) if r not in family))
        moves.append(Move(
            source=member, target=archived_path(member), sha256=file.sha256, sha256_norm=file.sha256_norm,
            spine_entry=spine_entry, reason=f"no activity for {age} days (threshold {threshold})",
            stamp=stamp, age_days=age, threshold_days=threshold, directives=file.directive_count,
            referrers=referrers, family=family if len(family) > 1 else (),
        ))
    return moves
