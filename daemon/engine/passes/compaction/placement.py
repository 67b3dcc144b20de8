"""Where a split family's new pointers stand in the SPINE: on their parent's line while it has
room, else on continuation lines of their own right after it (continuation.py words their
hooks). Pure, on a SpineModel."""

from __future__ import annotations

import re
from collections.abc import Callable

from ....store.spine import Pointer
from ....store.text import byte_len
from .continuation import bare_hook, continued_parent
from .spine_model import Entry, SpineModel, format_group

NUMBER_RE = re.compile(r"-([0-9]+)\.md$")


def child_pointer(path: str) -> Pointer:
    match = NUMBER_RE.search(path)
    return Pointer(match.group(1) if match else path.rsplit("/", 1)[-1][:-3], path)


ContinuationHook = Callable[[str, list[Pointer], int], str]  # (parent, its pointers on the line, room) -> hook


def place_children(model: SpineModel, parent: str, children: list[str], cap: int, reserve: int,
                    hook_for: ContinuationHook, room: int) -> None:
    """Children join the line of the entry that names their parent; what does not fit on it
    (or has no such line) gets a line of its own right after it."""
    pointers = [child_pointer(c) for c in children]
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
    continuation_lines(model, host, parent, pointers[len(fitting):], cap, hook_for, room)


def continuation_lines(model: SpineModel, host: Entry | None, parent: str, pointers: list[Pointer],
                        cap: int, hook_for: ContinuationHook, room: int) -> None:
    """Lines of their own for a family's pointers that its entry has no room for, right after
    the entry and the family's earlier continuation lines, in order. Each line keeps ``room``
    bytes (the hook floor) for a hook that says what its children hold (continuation.py)."""
    after: Entry | None = host
    if host is not None and pointers:
        live = model.live_entries()
        at = live.index(host) + 1
        while at < len(live) and continued_parent(live[at].hook) == parent:
            after = live[at]
            at += 1
    reserve = max(room, byte_len(bare_hook(parent)))
    rest = list(pointers)
    while rest:
        line: list[Pointer] = []
        for pointer in rest:
            if line and byte_len(f"- {format_group(line + [pointer])} \u2014 ") + reserve > cap:
                break
            line.append(pointer)
        rest = rest[len(line):]
        head = byte_len(f"- {format_group(line)} \u2014 ")
        section = after.section if after is not None else 0
        after = model.new_entry(line, hook_for(parent, line, min(reserve, cap - head)), after, section)


def relieve_crowded(model: SpineModel, parent_of: Callable[[str], str | None], cap: int, reserve: int,
                     hook_for: ContinuationHook, room: int) -> None:
    """An entry whose pointer group leaves its hook no room (a family that grew child by child)
    gives its trailing split children a continuation line of their own. A continuation line is
    left as it is: its hook names the children on it."""
    for entry in list(model.live_entries()):
        if entry.is_catalog or entry.is_new or continued_parent(entry.hook):
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
        continuation_lines(model, entry, parent_of(moved[0].path) or "", moved, cap, hook_for, room)
