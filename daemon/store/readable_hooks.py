"""Short SPINE hooks chosen by findability that still read as sentences (issue 24). Pure.

A hook is read as units: its top-level clauses that end at ``;`` or at a sentence end, each kept
with its comma pieces (a piece picked out of a comma list reads as a fragment), and its closing
"Read when/before…" sentence. A shortened hook is made of whole units in their order, a unit
possibly without its parenthetical aside or cut after one of its comma pieces, never in the
middle of a piece: no ellipsis, no one-word lead, no keyword list. Brackets, quotes and
backticks stay balanced, since units end only at the top level.

What is kept is what a reader finds the line by: each word is worth what the caller's
``weights`` say (the store's findability, compaction/findability.py); units are taken by what
they add per byte. The Read sentence is kept whole or shrunk to its trigger words ("Read when:
flame graphs."), whichever leaves the hook worth most; it is left out only where
neither fits. Markers such as ``[NON-NEGOTIABLE]``, links and "pinned" are always kept: a reader must know a rule binds before
opening the file. A line for several hooks (a merge) has at most one Read sentence: the hooks'
triggers, together.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, cast

from .hook_clauses import split_clauses
from .text import byte_len, distinct_words


class WordWeights(Protocol):
    """What a word is worth to a reader: a plain dict of them, or the store's findability
    weights (compaction/findability.py); an empty one counts every word alike."""

    def get(self, word: str, default: float, /) -> float: ...

READ_RE = re.compile(r"^(?:Read|Consult|Use|Open|Check|Load)\b")
MARKER_RE = re.compile(
    r"\[(?:NON-NEGOTIABLE|DIRECTIVE|UPDATED|DEPRECATED|CORRECTED|IMPORTANT|CONTEXT|PROVISIONAL)[^\]]*\]")
LINK_RE = re.compile(r"\[[^\]]*\]\([^)]*\)")
TRIGGER_HEAD = "Read when: "
# Words of a Read sentence that say when, not what: a trigger keeps the rest.
FILLER = frozenset("""read consult use open check load when whenever before after at during while on in
    into the a an any all of for to or and with your our this that these those its their touching
    working doing writing reviewing changing editing shipping planning answering shaping debugging
    running starting using about around changes change code repo repos session start work task tasks
    something anything new first every each""".split())
LEAD_BONUS = 1.0  # the lead names the subject: a hook that keeps it reads as the entry's own
WHOLE_READ_BONUS = 0.2


@dataclass(frozen=True)
class Unit:
    index: int
    forms: tuple[str, ...]  # the whole unit first, then shorter readings of it
    end: str  # ";" or "."


@dataclass(frozen=True)
class Parsed:
    units: tuple[Unit, ...]
    read: str  # the whole Read sentence ("" when there is none)
    trigger: str  # its trigger words ("" when it names nothing but when)


def _forms(pieces: list[tuple[str, str]]) -> tuple[str, ...]:
    """A unit of comma pieces: whole, without asides, and cut after each of its pieces."""
    whole = "".join(text + (delim + " " if i < len(pieces) - 1 else "") for i, (text, delim) in enumerate(pieces))
    found = [whole.strip()]
    asides = [(c, d) for c, d in pieces]
    for k in range(len(pieces) - 1, 0, -1):
        found.append("".join(t + (", " if i < k - 1 else "") for i, (t, _) in enumerate(asides[:k])).strip())
    return tuple(dict.fromkeys(f for f in found if f))


@lru_cache(maxsize=16384)
def parse(hook: str) -> Parsed:
    clauses = split_clauses(hook.strip())
    read_at = next((i for i in range(len(clauses) - 1, -1, -1) if READ_RE.match(clauses[i].text)
                    and all(c.delim != "." for c in clauses[i:-1])), None)
    read = ""
    if read_at is not None:
        read = " ".join(c.text + c.delim for c in clauses[read_at:]).strip()
        read = read if read.endswith(".") else read + "."
        clauses = clauses[:read_at]
    units: list[Unit] = []
    pieces: list[tuple[str, str]] = []
    for clause in clauses:
        text = clause.text
        aside_free = clause.aside_free
        pieces.append((text, clause.delim))
        if clause.delim in (";", ".", "") or clause is clauses[-1]:
            forms = list(_forms(pieces))
            if len(pieces) == 1 and aside_free:
                forms.insert(1, aside_free)
            units.append(Unit(len(units), tuple(dict.fromkeys(forms)), "." if clause.delim == "." else ";"))
            pieces = []
    return Parsed(tuple(units), read, trigger_of(read))


def trigger_of(read: str) -> str:
    """The words of a Read sentence that say what it is about: "Read before touching invoices or
    reconciliation." gives "invoices, reconciliation"; "Read at session start." gives ""."""
    body = READ_RE.sub("", read, count=1).strip().rstrip(".")
    body = re.sub(r"^(?:when)?\s*:\s*", "", body)  # a trigger sentence read again: "Read when: a, b."
    phrases = []
    for phrase in re.split(r",\s+|\s+or\s+|\s+and\s+|;\s+", body):
        words = phrase.split()
        while words and words[0].lower().strip("`\"") in FILLER:
            words.pop(0)
        while words and words[-1].lower().strip("`\".") in FILLER:
            words.pop()
        if words:
            phrases.append(" ".join(words))
    return ", ".join(dict.fromkeys(phrases))


def _value(text: str, weights: WordWeights) -> float:
    """What a text is worth to a reader (every word alike when no weights are known)."""
    words = distinct_words(text)
    return sum(weights.get(w, 0.0) for w in words) if weights else float(len(words))


def _render(chosen: dict[tuple[int, int], str], units: list[tuple[tuple[int, int], Unit]], extras: list[str], read: str) -> str:
    parts: list[tuple[str, str]] = []
    for key, unit in units:
        if key in chosen:
            parts.append((chosen[key], unit.end))
    parts += [(extra, ";") for extra in extras]
    out: list[str] = []
    for number, (text, end) in enumerate(parts):
        last = number == len(parts) - 1
        if (number == 0 or out[-1].endswith(".")) and text[:1].isascii() and text[:1].islower():
            text = text[0].upper() + text[1:]  # a sentence opens with a capital
        out.append(text + ("." if last or end == "." else ";"))
    if read:
        out.append(read)
    return " ".join(out)


def readable_hook(hooks: Sequence[str], limit: int, weights: WordWeights,
                  must_keep: tuple[str, ...] = ()) -> str:
    """See ``_readable_hook``; cached when ``weights`` is hashable (findability.Weights is)."""
    if type(weights).__hash__ is None:
        return _readable_hook.__wrapped__(tuple(hooks), limit, weights, must_keep)
    return _readable_hook(tuple(hooks), limit, cast(Hashable, weights), must_keep)


@lru_cache(maxsize=65536)
def _readable_hook(hooks: tuple[str, ...], limit: int, weights: WordWeights,
                   must_keep: tuple[str, ...]) -> str:
    """One hook of at most ``limit`` bytes for the line of ``hooks`` (see the module docstring).
    Only markers, links and ``must_keep`` words can make it longer than ``limit``."""
    parsed = [parse(h) for h in hooks if h.strip()]
    if not parsed:
        return ""
    if len(parsed) == 1 and byte_len(hooks[0].strip()) <= limit:
        return hooks[0].strip()
    units = [((n, u.index), u) for n, p in enumerate(parsed) for u in p.units]
    reads = [p.read for p in parsed if p.read]
    triggers = list(dict.fromkeys(t for p in parsed for t in p.trigger.split(", ") if t))
    read_options = []  # a hook says when to read its file, whole or by its trigger words, if it can
    if triggers:
        read_options.append(TRIGGER_HEAD + ", ".join(triggers) + ".")
    if len(set(reads)) == 1:
        read_options.append(reads[0])
    read_options.append("")  # the last resort: taken only when no hook with a Read sentence fits
    joined = " ".join(hooks)
    mandatory = list(dict.fromkeys(MARKER_RE.findall(joined) + LINK_RE.findall(joined)))
    mandatory += [w for w in must_keep if w not in joined or w == "pinned"]
    candidates: list[tuple[bool, float, str]] = []
    for read in read_options:
        chosen: dict[tuple[int, int], str] = {}
        for key, unit in units:  # the units that hold what must stay, in their shortest form that does
            held = [m for m in mandatory if m in unit.forms[0]]
            for form in reversed(unit.forms) if held else ():
                if all(m in form for m in held):
                    chosen[key] = form
                    break
        extras = [m for m in mandatory if not any(m in t for t in chosen.values()) and m not in read]
        if byte_len(_render(chosen, units, extras, read)) > limit and chosen:
            chosen = {}  # the bare markers are shorter than their units
            extras = [m for m in mandatory if m not in read]
        _fill(chosen, units, extras, read, limit, weights)
        text = _render(chosen, units, extras, read) if chosen or extras or read else ""
        score = _value(text, weights) + LEAD_BONUS * any(k[1] == 0 for k in chosen) + \
            WHOLE_READ_BONUS * (read in reads and bool(read))
        candidates.append((byte_len(text) <= limit, score, text))
    fitting = [c for c in candidates[:-1] if c[0]] or [c for c in candidates[-1:] if c[0]]
    if fitting:
        return max(fitting, key=lambda c: (c[1], byte_len(c[2])))[2]
    return min(candidates, key=lambda c: byte_len(c[2]))[2]


def _fill(chosen: dict[tuple[int, int], str], units: list[tuple[tuple[int, int], Unit]], extras: list[str],
          read: str, limit: int, weights: WordWeights) -> None:
    """Add units (or longer forms of them) by what they add per byte, while they fit. A part
    costs its bytes, its delimiter and a space."""
    priced = {form: [(w, weights.get(w, 0.0) if weights else 1.0) for w in distinct_words(form)]
              for _, unit in units for form in unit.forms}
    sizes = {form: byte_len(form) for form in priced}
    covered: set[str] = set(distinct_words(read))
    for text in [*chosen.values(), *extras]:
        covered |= distinct_words(text)
    size = byte_len(_render(chosen, units, extras, read))
    empty = not chosen and not extras
    while True:
        pick: tuple[float, tuple[int, int], str] | None = None
        for key, unit in units:
            old = chosen.get(key)
            for form in unit.forms:
                if old is not None and sizes[form] <= sizes[old]:
                    break
                grow = sizes[form] - (sizes[old] if old is not None else -2)
                if empty and old is None and not read:
                    grow -= 1  # the first part has no space before it
                if size + grow > limit:
                    continue
                gain = sum(v for w, v in priced[form] if w not in covered) + \
                    (LEAD_BONUS if key[1] == 0 and old is None else 0)
                per_byte = gain / max(1, grow)
                if gain > 0 and (pick is None or per_byte > pick[0]):
                    pick = (per_byte, key, form)
                break  # the longest form that fits is the one weighed
        if pick is None:
            return
        chosen[pick[1]] = pick[2]
        covered |= distinct_words(pick[2])
        size = byte_len(_render(chosen, units, extras, read))
        empty = False


def contributes(hook: str, line_hook: str) -> bool:
    """Does ``line_hook`` keep a unit of ``hook`` of its own (not only its markers or triggers)?"""
    parsed = parse(hook)
    kept = line_hook.lower()  # a unit may have gained a capital where it opens a sentence
    return any(form.lower() in kept for unit in parsed.units for form in unit.forms
               if not MARKER_RE.fullmatch(form.strip()))
