"""Short SPINE hooks, written mechanically and deterministically (STORE-FORMAT.md 1.3, 4.2).

A short hook is a selection of the old hook's words, kept in their order and never altered
(a word may only lose a trailing ``,;:`` or gain an ellipsis). What is kept, by priority:

1. links (a ``](x.md)`` in a hook is a pointer the checker counts), markers such as
   ``[NON-NEGOTIABLE]``, and "pinned" when the file is pinned;
2. the clause that says when to read the file ("Read when…"), at the end;
3. distinctive words: names, identifiers, ``code``, paths, "error strings", numbers;
4. whole clauses: the lead clause first (before the distinctive words, when it takes at most
   half the room), then every later clause that still fits whole; when not even the lead
   clause fits, its first words, with an ellipsis.

Cuts fall between words, so never inside a UTF-8 character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .spine import LEADING_GROUP_RE, hook_of_entry
from .text import byte_len, rtrim

CLAUSE_END_RE = re.compile(r"(?<=[.;])\s+")
READ_CLAUSE_RE = re.compile(r"^(?:Read|Consult|Use|Open|Check)\b")
ELLIPSIS = "\u2026"
# One atom = one word, or a span that must stay whole although it holds spaces.
ATOM_RE = re.compile(
    r"\[[^\]\n]*\]\([^)\n]*\)\S*"  # a markdown link
    r"|`[^`\n]*`\S*"  # inline code
    r"|\[[^\]\n]*\]\S*"  # a bracket marker such as [DIRECTIVE 2026-07-20]
    r"|\"[^\"\n]*\"\S*|\u201c[^\u201d\n]*\u201d\S*"  # a quoted (error) string
    r"|\S+"
)
LINK_RE = re.compile(r"\[[^\]]*\]\([^)]*\)")
MARKER_START_RE = re.compile(r"^\[[A-Z]")
# Capitalised words that open a clause without naming anything.
STOPWORDS = frozenset(
    """A An And Also Always Any As At Avoid Be Before After But By Check Do Don't Each Every For From
    How I If In Is It Its Keep Let Never No Not Note Of On Once One Only Or Our Prefer Put Run See
    Set Show So Some Split That The Their Then There These They This Those To Try Two Use We What
    When Where Which While Who Why With Write You Your""".split()
)
TRAILING = ",;:"


def clauses(hook: str) -> list[str]:
    return [c for c in CLAUSE_END_RE.split(hook.strip()) if c]


def _core(word: str) -> str:
    return word.strip("()'\"").rstrip(TRAILING + ".!?")


@lru_cache(maxsize=65536)
def is_distinctive(word: str, opens_clause: bool) -> bool:
    """Names, identifiers, code, paths, quoted strings, numbers: what a reader searches for."""
    if word.startswith(("`", '"', "\u201c")) or "`" in word:
        return True
    core = _core(word)
    if not core:
        return False
    if any(c.isdigit() for c in core):
        return len(core) > 1
    if any(mark in core for mark in "/_@#=") or "." in core or "::" in core:
        return True
    if any(c.isupper() for c in core[1:]):
        return True
    if core[0].isupper():
        return not (opens_clause and core in STOPWORDS)
    return False


@dataclass
class _Clause:
    atoms: list[str]
    tiers: list[int]  # 0 must stay, 1 distinctive, 2 ordinary
    kept: list[bool] = field(default_factory=list)
    cut: bool = False  # the lead clause cut between words: its last lead word gets an ellipsis

    def __post_init__(self) -> None:
        self.kept = [tier == 0 for tier in self.tiers]

    def render(self) -> str:
        if all(self.kept):
            return " ".join(self.atoms)
        words: list[str] = []
        prefix = self.cut
        last = len(self.atoms) - 1
        for index, (atom, kept) in enumerate(zip(self.atoms, self.kept)):
            if not kept:
                if prefix and words:
                    words[-1] += ELLIPSIS  # the lead words stop here: say so
                prefix = False
                continue
            run_ends = index == last or not self.kept[index + 1]
            # Punctuation inside a run of kept words stays; where words were dropped it would dangle.
            words.append(atom.rstrip(TRAILING) if run_ends and index != last else atom)
        return " ".join(words)


def _parse(hook: str, pinned: bool) -> tuple[list[_Clause], list[str], bool]:
    """Body clauses, the read clause's atoms, and whether "pinned" already appears."""
    body, read, has_pinned = _parsed(hook, pinned)
    return [_Clause(list(atoms), list(tiers)) for atoms, tiers in body], list(read), has_pinned


@lru_cache(maxsize=4096)
def _parsed(hook: str, pinned: bool) -> tuple[tuple[tuple[tuple[str, ...], tuple[int, ...]], ...],
                                               tuple[str, ...], bool]:
    atoms = ATOM_RE.findall(hook)
    groups: list[list[str]] = [[]]
    for atom in atoms:
        groups[-1].append(atom)
        # Clauses end at ";" and "." and, since hooks are mostly lists, at ","; links never end one.
        if atom.endswith((".", ";", ",")) and not LINK_RE.fullmatch(atom):
            groups.append([])
    groups = [g for g in groups if g]
    read_index = next((i for i in range(len(groups) - 1, -1, -1)
                       if READ_CLAUSE_RE.match(groups[i][0])), None)
    read = groups[read_index] if read_index is not None else []
    body: list[tuple[tuple[str, ...], tuple[int, ...]]] = []
    has_pinned = False
    for index, group in enumerate(groups):
        if index == read_index:
            continue
        tiers = []
        for position, atom in enumerate(group):
            if LINK_RE.search(atom) or MARKER_START_RE.match(atom):
                tiers.append(0)
            elif pinned and _core(atom).lower() == "pinned":
                tiers.append(0)
                has_pinned = True
            else:
                tiers.append(1 if is_distinctive(atom, position == 0) else 2)
        body.append((tuple(group), tuple(tiers)))
    if pinned and any(_core(a).lower() == "pinned" for a in read):
        has_pinned = True
    return tuple(body), tuple(read), has_pinned


def _cut_words(text: str, limit: int) -> str:
    """The longest prefix of whole words within ``limit`` bytes, with an ellipsis."""
    words = text.split(" ")
    kept: list[str] = []
    for word in words:
        candidate = " ".join([*kept, word])
        if byte_len(candidate + ELLIPSIS) > limit:
            break
        kept.append(word)
    return (rtrim(" ".join(kept)).rstrip(TRAILING) + ELLIPSIS) if kept else ""


class _Selection:
    """The clauses with their kept flags, and the byte length of the result, kept up to date."""

    def __init__(self, body: list[_Clause], tail: str) -> None:
        self.body = body
        self.lengths = [byte_len(c.render()) for c in body]
        self._sum = sum(self.lengths)
        self._parts = sum(1 for n in self.lengths if n)
        self.tail = tail

    @property
    def tail(self) -> str:
        return self._tail

    @tail.setter
    def tail(self, value: str) -> None:
        self._tail = value
        self._tail_len = byte_len(value)

    def total(self) -> int:
        parts = self._parts + (1 if self._tail else 0)
        return self._sum + self._tail_len + max(0, parts - 1)

    def refresh(self, index: int) -> None:
        old = self.lengths[index]
        new = byte_len(self.body[index].render())
        self.lengths[index] = new
        self._sum += new - old
        self._parts += (1 if new else 0) - (1 if old else 0)

    def text(self) -> str:
        parts = [c.render() for c in self.body]
        return " ".join(p for p in [*parts, self.tail] if p)

    def try_keep(self, index: int, positions: list[int], limit: int) -> bool:
        clause = self.body[index]
        before = list(clause.kept)
        for position in positions:
            clause.kept[position] = True
        self.refresh(index)
        if self.total() <= limit:
            return True
        clause.kept = before
        self.refresh(index)
        return False


def short_hook(hook: str, limit: int, must_keep: tuple[str, ...] = ()) -> str:
    """A hook of at most ``limit`` bytes made of the old hook's words (see the module docstring).

    Only links, which must never leave the SPINE, can make the result longer than ``limit``.
    """
    if byte_len(hook) <= limit:
        return hook
    pinned = "pinned" in must_keep
    body, read_atoms, has_pinned = _parse(hook.strip(), pinned)
    extras = [w for w in must_keep if w != "pinned" and w not in hook]
    if pinned and not has_pinned:
        extras.append("pinned")
    read = " ".join(read_atoms)
    selection = _Selection(body, " ".join([*extras, read]).strip())
    if selection.total() > limit:
        # The must-stay words and the read clause do not fit together: cut the clause by words,
        # but never its links (a link may be another file's only SPINE pointer).
        links = [a for a in read_atoms if LINK_RE.search(a)]
        words = " ".join(a for a in read_atoms if not LINK_RE.search(a))
        selection.tail = " ".join([*extras, *links])
        room = limit - selection.total() - (1 if selection.total() else 0)
        cut = _cut_words(words, room) if words else ""
        selection.tail = " ".join(p for p in (" ".join(extras), cut, " ".join(links)) if p)
        _drop_markers_until_within(selection, limit)
        return selection.text()
    # The lead clause names the subject: it comes first, unless it would take more than half the
    # room, where the distinctive words of the whole hook are worth more to a reader searching.
    room = limit - selection.total()
    lead_first = bool(body) and byte_len(" ".join(body[0].atoms)) <= room // 2
    lead_whole = lead_first and selection.try_keep(0, list(range(len(body[0].atoms))), limit)
    seen: set[str] = {_core(a) for c in body for a, k in zip(c.atoms, c.kept) if k}
    for index, clause in enumerate(body):  # distinctive words, in order, each once
        for position, tier in enumerate(clause.tiers):
            core = _core(clause.atoms[position])
            if tier == 1 and core not in seen and selection.try_keep(index, [position], limit):
                seen.add(core)
    if body and not lead_first:
        lead_whole = selection.try_keep(0, list(range(len(body[0].atoms))), limit)
    if lead_whole:  # then whole clauses in order, each that still fits
        for index in range(1, len(body)):
            selection.try_keep(index, list(range(len(body[index].atoms))), limit)
    elif body:  # not even the lead clause fits whole: its first words, with an ellipsis
        body[0].cut = True
        selection.refresh(0)
        for position in range(len(body[0].atoms)):
            if not body[0].kept[position] and not selection.try_keep(0, [position], limit):
                break
        if selection.total() > limit:
            body[0].cut = False
            selection.refresh(0)
    return selection.text()


def _drop_markers_until_within(selection: _Selection, limit: int) -> None:
    for index in range(len(selection.body) - 1, -1, -1):
        clause = selection.body[index]
        for position in range(len(clause.atoms) - 1, -1, -1):
            if selection.total() <= limit:
                return
            if clause.kept[position] and not LINK_RE.search(clause.atoms[position]):
                clause.kept[position] = False
                selection.refresh(index)


def short_entry(group: str, hook: str, limit: int, must_keep: tuple[str, ...] = ()) -> str:
    """``- <group> — <short hook>`` within ``limit`` bytes (the group itself is never cut)."""
    head = f"- {group} \u2014 "
    return rtrim(head + short_hook(hook, max(0, limit - byte_len(head)), must_keep))


def entry_within_cap(entry: str, path: str, pinned: bool, entry_cap: int, target: int) -> tuple[str, str]:
    """(entry to write, hook for Index detail): the saved entry, or a fresh short one."""
    if byte_len(entry) <= entry_cap:
        return entry, ""
    match = LEADING_GROUP_RE.match(entry)
    group = match.group(0)[2:] if match else f"[{path}]({path})"
    hook = rtrim(hook_of_entry(entry))
    return short_entry(group, hook, target, ("pinned",) if pinned else ()), hook
