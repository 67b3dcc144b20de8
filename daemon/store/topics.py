"""Which SPINE entries share a topic: a plain overlap score over their distinctive words. Pure.

An entry's words are those of its pointer titles, its file names and its hook, lower-cased,
less English function words. A word shared by two entries counts by how rare it is in the
SPINE (log N/df, the inverse document frequency), and a word that many entries use ("read",
"project", "rules") counts for nothing: it says nothing about which two belong together.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

WORD_RE = re.compile(r"[0-9A-Za-z\u00c0-\uffff][0-9A-Za-z\u00c0-\uffff_+#.-]*")
STOPWORDS = frozenset(
    """a about above after again against all also always an and any are as at be because been before
    being below between both but by can could did do does doing don down during each every few for from
    further had has have having here how if in into is it its just keep keywords less more most must
    never no nor not now of off on once one only or other our out over own same should so some such
    than that the their them then there these they this those through to too two under until up use
    used uses very via was we were what when where which while who why will with within without would
    yes you your md continues continued""".split()
)
SHARED_SHARE = 10  # a word in more than 1/SHARED_SHARE of the entries (and more than 2) counts for nothing


@lru_cache(maxsize=16384)
def topic_words(text: str) -> frozenset[str]:
    """The words of ``text`` a topic is recognised by (see the module docstring)."""
    words = set()
    for raw in WORD_RE.findall(text.replace("/", " ").replace("](", " ")):
        word = raw.strip("._-+#").lower().removesuffix(".md")
        for part in (word, *word.split("-")) if "-" in word else (word,):
            if len(part) >= 3 and part not in STOPWORDS and not part.isdigit():
                words.add(part)
    return frozenset(words)


class TopicOverlap:
    """The rarity of every word over a set of entries, and the overlap score of two of them."""

    def __init__(self, entries: Iterable[frozenset[str]]) -> None:
        counts: Counter[str] = Counter()
        total = 0
        for words in entries:
            counts.update(words)
            total += 1
        shared = max(2, total // SHARED_SHARE)
        self.weight = {w: math.log(total / c) for w, c in counts.items() if c <= shared and total > c}

    def score(self, one: frozenset[str], two: frozenset[str]) -> float:
        return sum(self.weight.get(word, 0.0) for word in one & two)

    def shared(self, one: frozenset[str], two: frozenset[str]) -> list[str]:
        """The words that make the score, rarest first."""
        return sorted((w for w in one & two if w in self.weight), key=lambda w: (-self.weight[w], w))
