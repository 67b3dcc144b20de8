"""What names a topic: the distinctive terms of its files' bodies, rarest in the store first.

A shortened SPINE hook keeps few words, and the words a reader searches for are the ones only
one topic holds: a product's name, an identifier, a `code` span, a quoted error string. The
hook's own clauses say what the file is for; these terms are what the hook's ``keywords:``
list draws on when the hook itself names too little (store/hooks.py). Pure, deterministic.

A topic is a split family (a file and the children whose ``split_from`` names it): its pieces
share one SPINE line, so a term every piece holds is still one topic's term.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from functools import lru_cache
from itertools import zip_longest

from .hook_clauses import STOPWORDS
from .tierfile import MARKER_RE, KnowledgeFile

TERM_RE = re.compile(
    r"`[^`\n]{2,40}`"  # inline code
    r"|\"[^\"\n]{3,40}\"|\u201c[^\u201d\n]{3,40}\u201d"  # a quoted (error) string
    r"|\b[A-Za-z][\w]*(?:[-_./:@][\w]+)+\b"  # an identifier: craft.cache_ttl, FENPO-131, a/b
    r"|\b[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b"  # an acronym or camel case: HTTP, OpenSearch
    r"|(?P<word>\b[A-Z][a-z]{2,}\b)"  # a capitalised word: a name, unless it only opens a sentence
)
# Where a capitalised word only opens a sentence, a bullet or a clause ("Generic personas only").
OPENING_RE = re.compile(r"(?:^|[.:;!?]\s)[\s\-*+>\d.)]*$")
DIGITS_RE = re.compile(r"[0-9]+")
LONGEST = 40  # bytes: a longer term costs a short hook more than it tells
STAMP_LINE_RE = re.compile(r"^(?:last_validated|last_updated|origin|split_from):|^Continued in ")


# Terms by the sha256 of a file's bytes: a plan rebuilds StoreTerms after each round of writes,
# and a daemon plans again and again; keyed by digest, the cache never holds a file's bytes.
_KNOWN: OrderedDict[bytes, tuple[tuple[str, int], ...]] = OrderedDict()
KNOWN_FILES = 32768


def file_terms(raw: bytes) -> tuple[tuple[str, int], ...]:
    """(term, how often) for a file's body, most frequent first, then in order of appearance.
    Frontmatter, headings, stamp lines, markers (``[CORRECTED …]``) and code fences (a
    command's secrets are no keyword) say nothing a reader searches for."""
    digest = hashlib.sha256(raw).digest()
    found = _KNOWN.get(digest)
    if found is None:
        found = _KNOWN[digest] = _read_terms(raw)
        if len(_KNOWN) > KNOWN_FILES:
            _KNOWN.popitem(last=False)
    return found


def _read_terms(raw: bytes) -> tuple[tuple[str, int], ...]:
    counts: Counter[str] = Counter()
    in_fence = False
    for line in KnowledgeFile("", raw).body_lines:
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        stripped = MARKER_RE.sub(" ", line).strip()
        if in_fence or not stripped or stripped.startswith("#") or STAMP_LINE_RE.match(stripped.lstrip("- ")):
            continue
        for found in TERM_RE.finditer(stripped):
            term = found.group(0)
            if found.group("word") and OPENING_RE.search(stripped, 0, found.start()):
                continue
            if _usable(term):
                counts[term] += 1
    return tuple(counts.most_common())


@lru_cache(maxsize=65536)
def _usable(term: str) -> bool:
    """A term that can stand in a SPINE keyword list as it is: not a sentence's first word,
    not a bare number, short, and nothing the checker would read as a pointer or a comment,
    nor a stray quote or bracket that would unbalance the hook, nor anything but printable text:
    an invalid byte (decoded as a surrogate), a NUL, a form feed or a line separator would
    corrupt the synced SPINE or break its line."""
    if not term.isprintable():
        return False
    if term in STOPWORDS or term.capitalize() in STOPWORDS or term.isdigit() or len(term.encode()) > LONGEST:
        return False
    inner = term[1:-1] if term[0] in "`\"\u201c" else term
    if ".md" in inner or "<!--" in inner or "-->" in inner:
        return False  # a path names another file; "](x.md)" would be a pointer
    return not any(c in inner for c in "`\"[](){}\u201c\u201d|")


class StoreTerms:
    """Every topic's terms and in how many topics each appears.

    ``files`` are the store's tier files as planned; ``family_of`` gives the topic (the family
    head) of a path."""

    def __init__(self, files: Mapping[str, bytes], family_of: Callable[[str], str]) -> None:
        self._family_of = family_of
        per_family: dict[str, Counter[str]] = {}
        for path in sorted(files):
            family = per_family.setdefault(family_of(path), Counter())
            for term, count in file_terms(files[path]):
                family[term] += count
        self._per_family = per_family
        self._spread: Counter[str] = Counter()
        for counts in per_family.values():
            self._spread.update(counts.keys())
        # A term that many topics share tells a reader little about which file to open.
        self._rare_enough = max(2, len(per_family) // 20)
        self._asked: dict[tuple[str, ...], tuple[str, ...]] = {}

    def spread(self, term: str) -> int:
        return self._spread.get(term, 0)

    def common(self) -> frozenset[str]:
        """The terms too many topics share to tell them apart."""
        return frozenset(t for t, spread in self._spread.items() if spread > self._rare_enough)

    def keywords_for(self, paths: list[str]) -> tuple[str, ...]:
        """The rare terms of the topics these paths belong to, each once. A reader searches
        for any one kind of term, and a merged line stands for several topics, so the order
        takes turns: each topic's rarest name, then its rarest code or identifier, then its
        rarest quoted string, then the next of each. Rarest means in the fewest topics, then
        the most mentioned, then alphabetical."""
        asked = tuple(paths)
        if asked not in self._asked:  # a planner asks for the same lines many times
            families = dict.fromkeys(self._family_of(p) for p in paths)
            per_topic = [self._ranked(family) for family in families]
            by_turn = (term for turn in zip_longest(*per_topic) for term in turn if term is not None)
            self._asked[asked] = tuple(dict.fromkeys(by_turn))
        return self._asked[asked]

    def _ranked(self, family: str) -> list[str]:
        counts = self._per_family.get(family, Counter())
        rare = sorted((self._spread[term], -count, term) for term, count in counts.items()
                      if self._spread[term] <= self._rare_enough)
        by_kind: dict[int, list[str]] = {}
        shapes: set[str] = set()
        for _, _, term in rare:
            shape = DIGITS_RE.sub("0", term)
            if shape in shapes:
                continue  # INC-4105 beside INC-4104 tells a reader nothing more
            shapes.add(shape)
            by_kind.setdefault(_kind(term), []).append(term)
        queues = [by_kind[kind] for kind in sorted(by_kind)]
        return [term for turn in zip_longest(*queues) for term in turn if term is not None]


def _kind(term: str) -> int:
    """0 a name, 1 code or an identifier, 2 a quoted string."""
    if term[0] in "\"\u201c":
        return 2
    if term[0] == "`" or any(mark in term for mark in "_./:@"):
        return 1
    return 0
