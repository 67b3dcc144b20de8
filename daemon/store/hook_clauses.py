"""Reading a SPINE hook: its clauses and its distinctive phrases (what store/hooks.py keeps when
it shortens a hook). A clause runs to a top-level ``;``, ``, `` or sentence end ("top level":
outside brackets, parentheses, quotes and backticks, so every kept clause keeps its delimiters
balanced). Pure, deterministic."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from .text import byte_len

# One atom = one word, or a span that must stay whole although it holds spaces.
ATOM_RE = re.compile(
    r"\[[^\]\n]*\]\([^)\n]*\)"  # a markdown link
    r"|`[^`\n]*`"  # inline code
    r"|\[[^\]\n]*\]"  # a bracket marker such as [DIRECTIVE 2026-07-20]
    r"|\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d"  # a quoted (error) string
    r"|[^\s\[\]`\"\u201c\u201d]+"
)
# Capitalised words that open a clause without naming anything.
STOPWORDS = frozenset(
    """A An And Also Always Any As At Avoid Be Before After But By Check Do Don't Each Every For From
    How I If In Is It Its Keep Let Never No Not Note Of On Once One Only Or Our Prefer Put Run See
    Set Show So Some Split That The Their Then There These They This Those To Try Two Use We What
    When Where Which While Who Why With Write You Your Must Should""".split()
)
OPENERS = {"(": ")", "[": "]", "{": "}", "\u201c": "\u201d"}
QUOTES = ("`", '"')


def _core(word: str) -> str:
    return word.strip("()'\"").rstrip(",;:.!?")


@lru_cache(maxsize=65536)
def is_distinctive(word: str, opens_clause: bool) -> bool:
    """Names, identifiers, code, paths, quoted strings, numbers: what a reader searches for."""
    if word.startswith(("`", '"', "\u201c")) or "`" in word:
        return True
    core = _core(word)
    if not any(c.isalnum() for c in core):
        return False  # "=", "->": punctuation, not a name
    if any(c.isdigit() for c in core):
        return len(core) > 1
    if any(mark in core for mark in "/_@#=") or "." in core or "::" in core:
        return True
    if core.isupper() and core.capitalize() in STOPWORDS:
        return False  # "BEFORE", "NEVER": emphasis, not a name
    if any(c.isupper() for c in core[1:]):
        return True
    if core[0].isupper():
        return not (opens_clause and core in STOPWORDS)
    return False


@lru_cache(maxsize=16384)
def balanced_pairs(text: str) -> tuple[tuple[int, int, str], ...]:
    """The balanced pairs of a text: (opening index, closing index, closing character), for
    backticks, quotes and brackets. An opener without its closer is plain text, so a broken
    hook still splits into clauses."""
    inside = [False] * len(text)
    found: list[tuple[int, int, str]] = []
    for quote in QUOTES:  # backticks first: a quote inside code is code
        at = [i for i, c in enumerate(text) if c == quote and not inside[i]]
        for start, end in zip(at[0::2], at[1::2]):
            found.append((start, end, quote))
            for i in range(start + 1, end):
                inside[i] = True
    stack: list[tuple[str, int]] = []
    closers = {v: k for k, v in OPENERS.items()}
    for i, c in enumerate(text):
        if inside[i]:
            continue
        if c in OPENERS:
            stack.append((c, i))
        elif c in closers:
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth][0] == closers[c]:
                    found.append((stack[depth][1], i, c))
                    del stack[depth:]
                    break
    return tuple(found)


@lru_cache(maxsize=16384)
def inside_pairs(text: str) -> tuple[bool, ...]:
    """For every character: is it inside a balanced pair (see ``balanced_pairs``)?"""
    inside = [False] * len(text)
    for start, end, _ in balanced_pairs(text):
        for i in range(start + 1, end):
            inside[i] = True
    return tuple(inside)


@dataclass(frozen=True)
class Clause:
    index: int
    text: str  # without its delimiter
    delim: str  # ";", ",", "." or "" (the hook's last clause without one)

    @cached_property
    def aside_free(self) -> str:
        """The clause without its top-level parenthetical asides ("" when it has none)."""
        inside = inside_pairs(self.text)
        out, depth_start = [], None
        for i, c in enumerate(self.text):
            if c == "(" and not inside[i] and depth_start is None and ")" in self.text[i:]:
                depth_start = i
                continue
            if depth_start is not None:
                if c == ")" and (i + 1 == len(self.text) or not inside[i]):
                    depth_start = None
                continue
            out.append(c)
        shorter = re.sub(r"\s+([,;:.])", r"\1", re.sub(r"\s{2,}", " ", "".join(out))).strip(" ,;:.")
        if shorter == self.text or len(shorter.split()) < 3 and byte_len(shorter) * 3 < byte_len(self.text):
            return ""  # what is left is not a clause any more ("and"): no aside-free form
        return shorter


@lru_cache(maxsize=16384)
def _split_clauses(hook: str) -> tuple[Clause, ...]:
    return tuple(_clauses_of(hook))


def split_clauses(hook: str) -> list[Clause]:
    return list(_split_clauses(hook))


def _clauses_of(hook: str) -> list[Clause]:
    text = hook.strip()
    inside = inside_pairs(text)
    found: list[Clause] = []
    start = 0
    for i, c in enumerate(text):
        if inside[i] or c not in ";,.\u3002\uff1b\uff0c":  # and the ideographic full stop, semicolon, comma
            continue
        following = text[i + 1:i + 2]
        if following not in ("", " ") and c in ";,.":
            continue  # "delta.md", "1,000", "v2.3"
        if c == "." and following and not (text[i + 2:i + 3].isupper() or text[i + 2:i + 3] in "`\"[("):
            continue  # "e.g. the", an abbreviation: not a sentence end
        piece = text[start:i].strip()
        if piece:
            found.append(Clause(len(found), piece, c))
        start = i + 1
    rest = text[start:].strip()
    if rest:
        found.append(Clause(len(found), rest, ""))
    return found


def clauses(hook: str) -> list[str]:
    return [c.text + c.delim for c in split_clauses(hook)]


def distinctive_phrases(text: str) -> list[str]:
    return list(_distinctive_phrases(text))


@lru_cache(maxsize=16384)
def _distinctive_phrases(text: str) -> tuple[str, ...]:
    """The distinctive phrases of a text, in order, each once: runs of distinctive atoms next
    to each other ("Acme Bank", "HTTP 429"), links and markers included."""
    found: list[str] = []
    run: list[str] = []

    def close() -> None:
        phrase = " ".join(run).rstrip(",;:.!?")
        if phrase and phrase not in found:
            found.append(phrase)
        run.clear()

    for clause in split_clauses(text):
        for position, atom in enumerate(ATOM_RE.findall(clause.text)):
            if atom[0] in "`\"[\u201c" or is_distinctive(atom, position == 0):
                word = atom if atom[0] in "`\"[\u201c" else atom.strip("()'")
                if atom[0] == "[" or word != word.rstrip(",;:.!?"):
                    run.append(word)
                    close()
                    continue
                run.append(word)
            else:
                close()
        close()
    return tuple(found)
