"""Short SPINE hooks that still read as sentences (STORE-FORMAT.md 1.3, 4.2). Pure, deterministic.

The SPINE is what every session reads to decide which file to open, so a shortened hook is
made of whole clauses of the old one, in their order, never of words picked one at a time. A
clause runs to a top-level ``;``, ``, `` or sentence end ("top level": outside brackets,
parentheses, quotes and backticks, so every kept clause keeps its delimiters balanced; the
clauses and a hook's distinctive phrases are read in store/hook_clauses.py).

What is kept, by priority, while it fits:

1. the "Read when/before…" sentence (it goes last) and the lead clause, which names the
   subject; only when the lead clause alone is over the room is it cut, between top-level
   words, ending with ``…``;
2. clauses with links (a ``](x.md)`` in a hook is a pointer the checker counts), then the
   clauses richest in what a reader searches for (markers, "pinned", ``code``, "error strings",
   names, identifiers), then the others in order; a clause's parenthetical aside is the first
   thing dropped when the whole clause does not fit;
3. markers, "pinned" and other must-keep words the kept clauses lack, as a short clause;
4. the distinctive words still missing, as a trailing ``keywords: a, b, c`` list: first the
   rare terms of the entry's files, which tell it from every other entry (store/terms.py), then
   the hook's own names. Where the lead clause would take most of the room, a hook of those
   terms alone is weighed against it.

Only links, which must never leave the SPINE, can make a hook longer than its limit.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from .hook_clauses import Clause, balanced_pairs, distinctive_phrases, inside_pairs, split_clauses
from .spine import LEADING_GROUP_RE, hook_of_entry
from .text import byte_len, rtrim

READ_CLAUSE_RE = re.compile(r"^(?:Read|Consult|Use|Open|Check|Load)\b")
ELLIPSIS = "\u2026"
KEYWORDS = "keywords: "
# A hook over WINDOW times its room is shortened from its leading clauses in that window, its
# Read sentence (looked for in its last READ_TAIL characters), its markers and its links.
WINDOW, WINDOW_SLACK, READ_TAIL = 32, 4096, 2000
COMMON_WINDOW = 16_000  # of a hook, where common_phrases looks
LINK_RE = re.compile(r"\[[^\]]*\]\([^)]*\)")
MARKER_TEXT_RE = re.compile(
    r"\[(?:NON-NEGOTIABLE|DIRECTIVE|UPDATED|DEPRECATED|CORRECTED|IMPORTANT|CONTEXT|PROVISIONAL)[^\]]*\]")


@dataclass(frozen=True)
class _Parsed:
    lead: Clause | None
    body: tuple[Clause, ...]
    read: str  # the "Read when…" sentence, whole ("" when there is none)


@lru_cache(maxsize=4096)
def _windowed(hook: str, size: int) -> str:
    """A bloated hook's leading clauses within about ``size`` characters, and its Read sentence:
    a hook many times its room is shortened from these alone (its whole text goes to Index
    detail), so that shortening costs the same for a 20 KB hook and a 5 MB one."""
    read = _parse(hook[-READ_TAIL:]).read if len(hook) > READ_TAIL else _parse(hook).read
    kept: list[str] = []
    total = 0
    for clause in split_clauses(hook[:size]):
        if total + len(clause.text) > size and kept:
            break
        kept.append(clause.text + clause.delim)
        total += len(clause.text) + 1
    window = " ".join(kept)
    extras = [x for x in dict.fromkeys(MARKER_TEXT_RE.findall(hook) + LINK_RE.findall(hook)) if x not in window]
    return " ".join(p for p in (window, "; ".join(extras) + ("." if extras else ""), read) if p)


def _parse(hook: str) -> _Parsed:
    found = split_clauses(hook)
    read_at = next((i for i in range(len(found) - 1, -1, -1) if READ_CLAUSE_RE.match(found[i].text)
                    and all(c.delim != "." for c in found[i:-1])), None)
    read = ""
    if read_at is not None:
        read = " ".join(c.text + c.delim for c in found[read_at:])
        found = found[:read_at]
    lead = found[0] if found else None
    return _Parsed(lead, tuple(found[1:]), read)


def _cut_words(text: str, limit: int) -> str:
    """The longest prefix of ``text`` ending at a top-level space, within ``limit`` bytes with
    an ellipsis; "" when not even one word fits. When that leaves less than half the room (the
    clause is one long quote or aside, or a script written without spaces), the cut may fall
    inside a pair, which is then closed after the ellipsis: delimiters stay balanced."""
    inside = inside_pairs(text)
    best = ""
    for i, c in enumerate(text):
        if c == " " and not inside[i]:
            candidate = text[:i].rstrip(",;:") + ELLIPSIS
            if byte_len(candidate) > limit:
                break
            best = candidate
    if byte_len(best) * 2 >= limit:
        return best
    # a script written without spaces (ideographs, kana: wide characters): cut between characters
    unspaced = " " not in text and any(unicodedata.east_asian_width(c) in "WF" for c in text)
    for at_spaces in (True, False) if unspaced else (True,):
        for i in range(1, len(text)):
            if at_spaces and text[i] != " ":
                continue
            closing = "".join(c for start, end, c in sorted(balanced_pairs(text), key=lambda p: -p[0]) if start < i <= end)
            candidate = text[:i].rstrip(",;: ") + ELLIPSIS + closing
            if byte_len(candidate) > limit:
                break
            if byte_len(candidate) > byte_len(best):
                best = candidate
        if byte_len(best) * 2 >= limit:
            break
    return best


class _Draft:
    """The chosen clauses (by index, with the text each is kept as) and the extras."""

    def __init__(self, parsed: _Parsed, extras: list[str]) -> None:
        self.parsed = parsed
        self.kept: dict[int, str] = {}
        self.extras = extras
        self.keywords: list[str] = []

    def render(self) -> str:
        parts: list[tuple[str, str]] = []
        clauses = ([self.parsed.lead] if self.parsed.lead else []) + list(self.parsed.body)
        for clause in clauses:
            if clause.index in self.kept:
                parts.append((self.kept[clause.index], clause.delim))
        if self.extras:
            parts.append(("; ".join(self.extras), ";"))
        if self.keywords:
            parts.append((KEYWORDS + ", ".join(self.keywords), "."))
        out: list[str] = []
        for number, (text, delim) in enumerate(parts):
            last = number == len(parts) - 1
            if text.endswith(ELLIPSIS):
                delim = ""
            elif last:
                delim = "." if self.parsed.read or delim == "." else ""
            elif parts[number + 1][0].startswith(KEYWORDS) and delim != ".":
                delim = ";"
            elif self.extras and number == len(parts) - 2 - bool(self.keywords):
                delim = ";"  # the extras clause follows: "…, shard sizing at 30 GB; pinned."
            out.append(text + delim)
        if self.parsed.read:
            out.append(self.parsed.read)
        return " ".join(out)

    def size(self) -> int:
        return byte_len(self.render())

    def try_keep(self, index: int, text: str, limit: int) -> bool:
        previous = self.kept.get(index)
        self.kept[index] = text
        if self.size() <= limit:
            return True
        if previous is None:
            del self.kept[index]
        else:
            self.kept[index] = previous
        return False

    def try_keyword(self, key: str, limit: int) -> bool:
        self.keywords.append(key)
        if self.size() <= limit:
            return True
        self.keywords.pop()
        return False


@lru_cache(maxsize=65536)
def short_hook(hook: str, limit: int, must_keep: tuple[str, ...] = (), common: frozenset[str] = frozenset(),
               terms: tuple[str, ...] = ()) -> str:
    """A hook of at most ``limit`` bytes made of the old hook's clauses (see the module docstring).

    ``common`` holds phrases that many entries of the SPINE share: they tell a reader little
    about which file to open, so they count for less and never become keywords. ``terms`` are
    the rare terms of the entry's files, rarest first (store/terms.py): the keyword list
    draws on them before the hook's other phrases."""
    if byte_len(hook) <= limit:
        return hook
    if len(hook) > WINDOW * max(limit, 1) + WINDOW_SLACK:  # a bloated hook: its lead clauses and Read sentence
        return short_hook(_windowed(hook, WINDOW * max(limit, 1)), limit, must_keep, common, terms)
    out = _short_hook(hook, limit, must_keep, common, terms)
    links = [x for x in dict.fromkeys(LINK_RE.findall(hook)) if x not in _parse(hook.strip()).read]
    if byte_len(out) <= limit or not links:
        return out
    # The links, which must stay, did not fit beside what was chosen: choose again in the room
    # they leave, reading each link as its title, then name the links among the keywords.
    titled = LINK_RE.sub(lambda m: m.group(0)[1:m.group(0).index("](")], hook)
    reserve = byte_len(KEYWORDS) + sum(byte_len(x) + 2 for x in links) + 1
    inner = _short_hook(titled, max(0, limit - reserve), must_keep, common, terms)
    read = _parse(hook.strip()).read
    body = inner[:-len(read)].rstrip() if read and inner.endswith(read) else inner
    if KEYWORDS in body:
        body = body.rstrip(".") + ", " + ", ".join(links) + "."
    else:
        body = " ".join(p for p in (body.rstrip(";,") + (";" if body and not body.endswith(".") else ""),
                                    KEYWORDS + ", ".join(links) + ".") if p.strip(";"))
    return " ".join(p for p in (body, read) if p)


def _short_hook(hook: str, limit: int, must_keep: tuple[str, ...], common: frozenset[str],
                terms: tuple[str, ...]) -> str:
    parsed = _parse(hook.strip())
    base = _Draft(parsed, [])
    if base.size() > limit:  # the Read sentence alone is over the room
        return _tiny_hook(hook, parsed, limit, must_keep, common, terms)
    wanted = list(dict.fromkeys(MARKER_TEXT_RE.findall(hook)))
    wanted += [w for w in must_keep if w not in hook or (w == "pinned" and "pinned" not in parsed.read)]
    for word in wanted:  # markers and "pinned" are worth more than the lead clause's last words
        base.extras.append(word)
        if base.size() > limit:
            base.extras.pop()
    lead = parsed.lead
    bases = [base]
    keywords_only: _Draft | None = None
    if terms and lead is not None and 3 * byte_len(lead.aside_free or lead.text) > 2 * (limit - base.size()):
        # The lead would take most of the room, or not fit: the files' rare names may tell a
        # reader more. Then they stand alone; a later clause without its lead reads as a fragment.
        keywords_only = _Draft(parsed, list(base.extras))
        bases.append(keywords_only)
    if lead is not None:  # the lead names the subject: it stays, without its aside or cut if need be
        lighter = _Draft(parsed, list(base.extras))
        light = bool(lead.aside_free) and lighter.try_keep(lead.index, lead.aside_free, limit)
        if base.try_keep(lead.index, lead.text, limit):
            bases += [lighter] if light else []
        elif light:
            bases = [lighter]
        else:
            cut = _cut_words(lead.aside_free or lead.text, limit - base.size() - 1)
            if cut:
                base.kept[lead.index] = cut
    body_text = " ".join(c.text + c.delim for c in (lead, *parsed.body) if c is not None)
    keys = distinctive_phrases(body_text)
    # The rarest names of the files first (what tells this entry from the others), then the
    # hook's own names and code, then its bare numbers and dates.
    candidates = list(dict.fromkeys([*terms, *sorted(keys, key=_numeric)]))
    rare = set(terms)
    ordered = _by_priority(parsed.body)
    best: tuple[tuple[int, int, int], str] | None = None
    for start in bases:
        # Whole clauses first, as many as the priority order allows; what they miss of the
        # distinctive words goes into the keyword list. Keep the mix that leaves a reader the most.
        draft = _Draft(parsed, list(start.extras))
        draft.kept = dict(start.kept)
        states = [dict(draft.kept)]
        for clause in ordered if start is not keywords_only else ():
            if draft.try_keep(clause.index, clause.text, limit) or (
                    clause.aside_free and draft.try_keep(clause.index, clause.aside_free, limit)):
                states.append(dict(draft.kept))  # only a clause that was taken makes a new mix
        for kept in states:
            mix = _Draft(parsed, list(start.extras))
            mix.kept = kept
            text = mix.render()
            mix.extras = [w for w in mix.extras if w not in _without(text, mix.extras)]
            text = mix.render()
            for link in LINK_RE.findall(hook):  # a link must stay, whatever it costs
                if link not in text:
                    mix.keywords.append(link)
            for key in candidates:
                if key not in text and key not in mix.keywords and not key.startswith("[") and key not in common:
                    mix.try_keyword(key, limit)
            text = mix.render()
            # A whole clause reads better than a keyword: it counts as much as a rare phrase; a
            # phrase many entries share counts a quarter.
            covered = sum(1 if key in common and key not in rare else 4
                          for key in dict.fromkeys([*keys, *terms]) if key in text)
            # a clause cut short reads as a fragment: half a clause
            whole = sum(2 if kept.endswith(ELLIPSIS) else 4 for kept in mix.kept.values())
            score = (covered + whole, covered, -len(mix.keywords))
            if best is None or score > best[0]:
                best = (score, text)
    assert best is not None
    return best[1]


def _tiny_hook(hook: str, parsed: _Parsed, limit: int, must_keep: tuple[str, ...], common: frozenset[str],
               terms: tuple[str, ...]) -> str:
    """Room for less than the Read sentence: a cut "Read before…" tells a reader nothing, so
    the room goes to the rarest names (and "pinned", and any link, which must stay)."""
    links = LINK_RE.findall(hook)
    words = [w for w in must_keep if w not in links]
    lead_keys = distinctive_phrases(" ".join(c.text + c.delim for c in (parsed.lead, *parsed.body) if c))
    ranked = list(dict.fromkeys([*terms, *sorted((k for k in lead_keys if not k.startswith("[")),
                                                 key=lambda k: (k in common, _numeric(k)))]))
    chosen: list[str] = []
    head = "; ".join(words) + ("; " if words else "") + KEYWORDS
    for key in ranked:
        candidate = head + ", ".join([*chosen, key])
        if byte_len(candidate + ".") + sum(byte_len(x) + 1 for x in links) > limit:
            continue
        chosen.append(key)
    text = head + ", ".join(chosen) + "."
    if not chosen:  # no name fits either: the first words of the Read sentence, then
        text = _cut_words(parsed.read, max(0, limit - sum(byte_len(x) + 1 for x in links)))
    return " ".join(p for p in (text, *(x for x in links if x not in text)) if p)


def _numeric(key: str) -> bool:
    """A bare number, date or percentage: worth less to a reader than a name."""
    return not any(c.isalpha() for c in key.replace("x", "", 1))


def _without(text: str, extras: list[str]) -> str:
    """``text`` less its extras clause: what the kept clauses say by themselves."""
    if not extras:
        return text
    return text.replace("; ".join(extras), "", 1)


def _by_priority(body: tuple[Clause, ...]) -> list[Clause]:
    """Clauses with links first, then by how much a reader searches for per byte, then in order."""
    def rank(clause: Clause) -> tuple[int, float, int]:
        keys = distinctive_phrases(clause.text)
        has_link = bool(LINK_RE.search(clause.text))
        return (0 if has_link else 1, -len(keys) / max(1, byte_len(clause.text)), clause.index)
    return sorted(body, key=rank)


def short_entry(group: str, hook: str, limit: int, must_keep: tuple[str, ...] = (),
                common: frozenset[str] = frozenset(), terms: tuple[str, ...] = ()) -> str:
    """``- <group> — <short hook>`` within ``limit`` bytes (the group itself is never cut)."""
    head = f"- {group} \u2014 "
    fresh = tuple(t for t in terms if t not in group)  # the titles name it already
    return rtrim(head + short_hook(hook, max(0, limit - byte_len(head)), must_keep, common, fresh))


def common_phrases(hooks: list[str], share: int = 3) -> frozenset[str]:
    """The distinctive phrases that ``share`` or more of the hooks mention (a bloated hook's
    within its window: what a shortened hook can keep of it)."""
    counts: Counter[str] = Counter()
    for hook in hooks:
        counts.update(set(distinctive_phrases(hook if len(hook) <= COMMON_WINDOW else hook[:COMMON_WINDOW])))
    return frozenset(phrase for phrase, count in counts.items() if count >= share)


def entry_within_cap(entry: str, path: str, pinned: bool, entry_cap: int, target: int) -> tuple[str, str]:
    """(entry to write, hook for Index detail): the saved entry, or a fresh short one."""
    if byte_len(entry) <= entry_cap:
        return entry, ""
    match = LEADING_GROUP_RE.match(entry)
    group = match.group(0)[2:] if match else f"[{path}]({path})"
    hook = rtrim(hook_of_entry(entry))
    return short_entry(group, hook, target, ("pinned",) if pinned else ()), hook
