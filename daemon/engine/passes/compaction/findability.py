"""How well a reader finds each topic of the store from a SPINE: the score the planner optimises
(issue 24). Pure, deterministic.

A reader opens a file by searching the SPINE for words the file holds. So the store asks itself:
for every topic (a split family), queries are built from its own content as its author wrote it
(no frontmatter, no Index detail, no evidence citation): its title words, each of its rarest
words alone, and one query of the next rare words. The SPINE's entries are ranked for each query
by BM25, and a query counts 1/rank when an entry of its topic is among the first three. The
score is the mean of that over every query: it moves with every rank, so two SPINEs can be
compared even where recall at 3 is the same.

``weights`` gives, for the topics behind a line, what each word is worth to a hook: the rarer in
the store, the more; a word the topic does not hold counts little, and a word its pointer titles
already say counts half.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from ....store.tierfile import KnowledgeFile

TOKEN_RE = re.compile(r"\w\w+")
STOP = frozenset("""
    about after again all also an and any are as at be because been before being between both but by can
    could did do does doing down during each few for from further had has have having he her here hers him
    his how if in into is it its itself just me more most my no nor not now of off on once only or other
    our out over own same she should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who whom why will with you
    your read md confidence validated confirmations corrections last_validated principle provisional hardened
    experimental continued keep use""".split())
SKIPPED_LINE_RE = re.compile(r"^(?:Evidence: |Continued in |\s+(?:confidence|last_validated|origin):)")
RARE_QUERIES = 4  # single rare words asked per topic; then one query of the next three
FOREIGN_WEIGHT = 0.05  # a word the topic does not hold tells a reader nothing about it
TOP = 3
K1, B = 1.5, 0.75

_TOKENS: OrderedDict[bytes, tuple[str, tuple[str, ...]]] = OrderedDict()
KNOWN_FILES = 32768


def tokens(text: str) -> list[str]:
    return [t for t in TOKEN_RE.findall(text.lower()) if t not in STOP]


def authored(path: str, raw: bytes) -> tuple[str, tuple[str, ...]]:
    """(title, tokens) of what a file's author wrote, cached by its bytes."""
    digest = hashlib.sha256(raw).digest()
    found = _TOKENS.get(digest)
    if found is None:
        title, found_words = "", []
        for line in KnowledgeFile(path, raw).body_lines:
            if line.startswith("## Index detail"):
                break
            if SKIPPED_LINE_RE.match(line):
                continue
            if line.startswith("# ") and not title:
                title = line[2:].strip()
            found_words += tokens(line)
        found = _TOKENS[digest] = (title, tuple(found_words))
        if len(_TOKENS) > KNOWN_FILES:
            _TOKENS.popitem(last=False)
    title, words = found
    return title or re.sub(r"[-_.]+", " ", path.rsplit("/", 1)[-1][:-3]), words


class Findability:
    """The store's self-queries, and the score of a SPINE's entries against them."""

    def __init__(self, files: Mapping[str, bytes], family_of: Callable[[str], str]) -> None:
        self.family_of = family_of
        counts: dict[str, Counter[str]] = {}
        titles: dict[str, set[str]] = {}
        for path in sorted(files):
            family = family_of(path)
            title, words = authored(path, files[path])
            counts.setdefault(family, Counter()).update(words)
            if family == path or family not in files:
                titles[family] = set(tokens(title))
        self.families = counts
        spread: Counter[str] = Counter()
        for found in counts.values():
            spread.update(found.keys())
        total = max(1, len(counts))
        self.idf = {t: math.log(1 + total / n) for t, n in spread.items()}
        rare_enough = max(2, total // 20)
        self.queries: list[tuple[str, tuple[str, ...]]] = []
        for family, found in sorted(counts.items()):
            title_words = tuple(sorted(titles.get(family, set())))
            if title_words:
                self.queries.append((family, title_words))
            rare = sorted((t for t in found if spread[t] <= rare_enough), key=lambda t: (-found[t], spread[t], t))
            self.queries += [(family, (t,)) for t in rare[:RARE_QUERIES]]
            if len(rare) > RARE_QUERIES + 1:
                self.queries.append((family, tuple(rare[RARE_QUERIES:RARE_QUERIES + 3])))
        self._weights: dict[tuple[str, ...], Weights] = {}
        self._by_family_weights: dict[str, dict[str, float]] = {}
        self._families: dict[str, str] = {}
        self.by_word: dict[str, list[int]] = {}
        self.by_family: dict[str, list[int]] = {}
        for number, (family, words) in enumerate(self.queries):
            self.by_family.setdefault(family, []).append(number)
            for word in words:
                self.by_word.setdefault(word, []).append(number)

    def family(self, path: str) -> str:
        found = self._families.get(path)
        if found is None:
            found = self._families[path] = self.family_of(path)
        return found

    def touching(self, texts: Sequence[str], paths: Sequence[str]) -> frozenset[int]:
        """The self-queries an edit of these entries can move: those of their topics, and those
        asking for a word they hold."""
        found: set[int] = set()
        for path in paths:
            found.update(self.by_family.get(self.family(path), ()))
        for text in texts:
            for word in _doc(text):
                found.update(self.by_word.get(word, ()))
        return frozenset(found)

    def weights(self, paths: Sequence[str], titles: str = "") -> Weights:
        """What each word is worth to the hook of a line pointing at ``paths``."""
        key = (*paths, "\0", titles)
        found = self._weights.get(key)
        if found is None:
            tables = tuple(self._family_weights(f) for f in dict.fromkeys(self.family(p) for p in paths))
            found = self._weights[key] = Weights(tables, frozenset(tokens(titles)))
        return found

    def _family_weights(self, family: str) -> dict[str, float]:
        table = self._by_family_weights.get(family)
        if table is None:
            table = self._by_family_weights[family] = {
                w: self.idf.get(w, 0.0) ** 2 for w in self.families.get(family, ())}
        return table

    def score(self, entries: Sequence[tuple[str, Sequence[str]]], only: frozenset[int] | None = None) -> float:
        """Mean over the self-queries (or the sum over ``only`` of them, over the same count) of
        1/rank of the first entry of the query's topic, when it is among the first three.
        ``entries``: (the entry's whole text, the paths it points at)."""
        if not self.queries or not entries:
            return 0.0
        docs = [_doc(text) for text, _ in entries]
        owners: dict[str, set[int]] = {}
        for index, (_, paths) in enumerate(entries):
            for path in paths:
                owners.setdefault(self.family(path), set()).add(index)
        lengths = [sum(d.values()) for d in docs]
        mean_length = sum(lengths) / len(lengths) or 1.0
        postings: dict[str, list[tuple[int, int]]] = {}
        for index, doc in enumerate(docs):
            for word, count in doc.items():
                postings.setdefault(word, []).append((index, count))
        n = len(docs)
        norms = [K1 * (1 - B + B * length / mean_length) for length in lengths]
        total = 0.0
        asked = range(len(self.queries)) if only is None else sorted(only)
        for number in asked:
            family, words = self.queries[number]
            mine = owners.get(family)
            if not mine:
                continue
            scores: dict[int, float] = {}
            for word in words:
                found = postings.get(word)
                if not found:
                    continue
                idf = math.log(1 + (n - len(found) + 0.5) / (len(found) + 0.5))
                for index, count in found:
                    scores[index] = scores.get(index, 0.0) + idf * count * (K1 + 1) / (count + norms[index])
            best = max((scores[i] for i in mine if i in scores), default=None)
            if best is None:
                continue
            rank = 1 + sum(1 for i, s in scores.items() if s > best and i not in mine)
            if rank <= TOP:
                total += 1 / rank
        return total / len(self.queries)


class Weights:
    """A word's worth to a hook: the highest of its topics' (squared rarity), half where the
    line's pointer titles say it already. Hashed by identity, so a planner's caches can key on it."""

    __slots__ = ("tables", "halved")

    def __init__(self, tables: tuple[dict[str, float], ...] = (), halved: frozenset[str] = frozenset()) -> None:
        self.tables = tables
        self.halved = halved

    def get(self, word: str, default: float = 0.0) -> float:
        found = max((t[word] for t in self.tables if word in t), default=None)
        if found is None:
            return default
        return found / 2 if word in self.halved else found

    def __getitem__(self, word: str) -> float:
        return self.get(word)

    def __contains__(self, word: object) -> bool:
        return any(word in t for t in self.tables)

    def __bool__(self) -> bool:
        return bool(self.tables)


@lru_cache(maxsize=65536)
def _doc(text: str) -> Counter[str]:
    return Counter(tokens(text))
