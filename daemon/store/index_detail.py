"""Which cut hooks a target's ``## Index detail`` still needs (issue 23, item 11).

A hook is appended only when its words are not there already: an entry cut again after it was
lengthened, or cut on two machines and merged, would otherwise add the same words once per
pass, and Index detail would grow without end. "There" is every Index detail section of the
target and of its split children (a split can carry the section into ``<name>-2.md``),
compared with runs of whitespace as one space, a trailing ellipsis ignored. Pure: asked by the
compaction plan and by the sync merge.
"""

from __future__ import annotations

import re

from .text import decode

_SPACES = re.compile(r"\s+")
_HEADING = "## Index detail"


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def index_detail_text(raw: bytes) -> str:
    """The text of every ``## Index detail`` section of a file, flattened to one line."""
    held: list[str] = []
    inside = False
    for line in decode(raw).splitlines():
        if line.startswith("## "):
            inside = line.startswith(_HEADING)
            continue
        if inside:
            held.append(line)
    return _flat(" ".join(held))


def _family(files: dict[str, bytes], target: str) -> list[str]:
    stem = target[:-3] if target.endswith(".md") else target
    children = [p for p in files if p.startswith(stem + "-") and p.endswith(".md")
                and p[len(stem) + 1:-3].isdigit()]
    return [target, *sorted(children)]


def hooks_not_held(files: dict[str, bytes], target: str, hooks: list[str]) -> list[str]:
    """``hooks`` less those whose words the target's Index detail (or a split child's) holds,
    and less repeats among themselves; their order kept."""
    held = " ".join(index_detail_text(files[p]) for p in _family(files, target) if p in files)
    wanted: list[str] = []
    for hook in hooks:
        words = _flat(hook).rstrip("…").rstrip()
        if words and (words in held or any(words in _flat(w) for w in wanted)):
            continue
        wanted.append(hook)
    return wanted
