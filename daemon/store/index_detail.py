"""Which cut hooks a target's ``## Index detail`` still needs (issue 23, item 11).

A hook is appended only when its words are not there already: an entry cut again after it was
lengthened, or cut on two machines and merged, would otherwise add the same words once per
pass, and Index detail would grow without end. "There" is every Index detail section of the
target and of its split children (a split can carry the section into ``<name>-2.md``), and
"held" means the whole hook verbatim, as C4 looks for it (a hook never holds a newline). Pure:
asked by the compaction plan and by the sync merge.
"""

from __future__ import annotations

import re

from .text import decode

_WORD = re.compile(r"\w+")

_HEADING = "## Index detail"


def index_detail_text(raw: bytes) -> str:
    """The text of every ``## Index detail`` section of a file, one line per line."""
    held: list[str] = []
    inside = False
    for line in decode(raw).splitlines():
        if line.startswith("## "):
            inside = line.startswith(_HEADING)
            continue
        if inside:
            held.append(line)
    return "\n".join(line.rstrip("\r") for line in held)


def _family(files: dict[str, bytes], target: str) -> list[str]:
    stem = target[:-3] if target.endswith(".md") else target
    children = [p for p in files if p.startswith(stem + "-") and p.endswith(".md")
                and p[len(stem) + 1:-3].isdigit()]
    return [target, *sorted(children)]


def hooks_not_held(files: dict[str, bytes], target: str, hooks: list[str]) -> list[str]:
    """``hooks`` less those whose words the target's Index detail (or a split child's) holds,
    and less repeats among themselves; their order kept."""
    held = "\n".join(index_detail_text(files[p]) for p in _family(files, target) if p in files)
    wanted: list[str] = []
    for hook in hooks:
        words = hook.strip()
        if words and (words in held or any(words in w for w in wanted)):
            continue
        wanted.append(hook)
    return wanted


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def hooks_with_new_words(files: dict[str, bytes], target: str, hooks: list[str], also: str = "") -> list[str]:
    """``hooks`` less those every word of which the target family's Index detail or ``also``
    holds already: for the sync merge, which keeps every word of a doubled entry but is no cut
    (no hook of it must be found verbatim), so the other machine's version of a hook whose
    words are kept adds nothing."""
    held = _words(also)
    for p in _family(files, target):
        if p in files:
            held |= _words(index_detail_text(files[p]))
    wanted: list[str] = []
    for hook in hooks:
        new = _words(hook) - held
        if new:
            wanted.append(hook)
            held |= new
    return wanted


CUT_START_BYTES = 60  # how much of a hook's start marks an earlier cut of the same entry


def was_cut_before(files: dict[str, bytes], target: str, hook: str) -> bool:
    """Does the target's Index detail (or a split child's) hold an earlier hook of this entry:
    one that starts as this hook starts (a cut keeps a hook's start)?"""
    start = hook.strip().encode()[:CUT_START_BYTES].decode("utf-8", "ignore").casefold()
    if len(start) < CUT_START_BYTES // 2:
        return False
    # casefolded: a shortened hook opens with a capital where the writer's did not
    return any(line.casefold().startswith(start) for p in _family(files, target) if p in files
               for line in index_detail_text(files[p]).split("\n"))
