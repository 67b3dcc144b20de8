"""Where a split family's new pointers stand in the SPINE: on their parent's line while it has
room, else on continuation lines of their own right after it, with no hook and no repeated path:
each child's pointer carries words of its own piece. Pure, on a SpineModel."""

from __future__ import annotations

import re
from collections.abc import Callable

from ....store.spine import Pointer
from ....store.text import byte_len
from .continuation import continued_family
from .spine_model import Entry, SpineModel, format_group

NUMBER_RE = re.compile(r"-([0-9]+)\.md$")


def child_pointer(path: str) -> Pointer:
    match = NUMBER_RE.search(path)
    return Pointer(match.group(1) if match else path.rsplit("/", 1)[-1][:-3], path)


ParentOf = Callable[[str], str | None]
ChildTitle = Callable[[str], str]  # a split child's path -> the title its pointer carries on a line of its own


def place_children(model: SpineModel, parent: str, children: list[str], cap: int, reserve: int,
                   title_of: ChildTitle, parent_of: ParentOf) -> None:
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
    continuation_lines(model, host, parent, pointers[len(fitting):], cap, title_of, parent_of)


def continuation_lines(model: SpineModel, host: Entry | None, parent: str, pointers: list[Pointer],
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


def relieve_crowded(model: SpineModel, parent_of: ParentOf, cap: int, reserve: int, title_of: ChildTitle) -> None:
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
        continuation_lines(model, entry, parent_of(moved[0].path) or "", moved, cap, title_of, parent_of)
