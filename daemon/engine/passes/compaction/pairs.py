"""The pairs of SPINE entries a merge may take: neighbours, and entries that share a topic word
(store/topics.py), ranked the way SpineCompactor.merge_neighbours tries them. Pure."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from ....store.topics import TopicOverlap, topic_words
from .spine_model import Entry


def _topic_text(entry: Entry) -> str:
    """What an entry's topic is read from: its pointers' titles and file names, and its whole hook."""
    return " ".join([*(f"{p.title} {p.path}" for p in entry.group), entry.original_hook])


class MergePairs:
    """The pairs a merge may take: neighbours, and entries that share a word (store/topics.py),
    each topical pair with its overlap score, kept up to date as merges join entries."""

    def __init__(self, entries: list[Entry], mergeable: Callable[[Entry, Entry], bool],
                 group: Callable[[Entry], object], by_topic: bool = True) -> None:
        self.mergeable = mergeable
        self.order = {e.key: i for i, e in enumerate(entries)}  # merges never reorder entries
        self.by_key = {e.key: e for e in entries}
        self.words = {e.key: topic_words(_topic_text(e)) if by_topic else frozenset() for e in entries}
        self.overlap = TopicOverlap(self.words.values())
        # Only entries of one group (tier and section) may merge: a word's postings are per group.
        self.group = {e.key: group(e) for e in entries}
        self.postings: dict[tuple[object, str], list[int]] = {}
        for entry in entries:
            for word in self.words[entry.key] & self.overlap.weight.keys():
                self.postings.setdefault((self.group[entry.key], word), []).append(entry.key)
        self.shared: dict[tuple[int, int], float] = {}
        for keys in self.postings.values():
            for i, one in enumerate(keys):
                for two in keys[i + 1:]:
                    self._consider(one, two)

    def _consider(self, one: int, two: int) -> None:
        pair = (one, two) if self.order[one] < self.order[two] else (two, one)
        first, second = self.by_key[pair[0]], self.by_key[pair[1]]
        if not first.removed and not second.removed and self.mergeable(first, second):
            self.shared[pair] = self.overlap.score(self.words[pair[0]], self.words[pair[1]])

    def joined(self, first: Entry, second: Entry) -> None:
        """``second`` went into ``first``'s line: its words are ``first``'s now."""
        self.shared = {pair: score for pair, score in self.shared.items() if second.key not in pair}
        new = self.words[second.key] - self.words[first.key]
        self.words[first.key] = self.words[first.key] | self.words[second.key]
        home = self.group[first.key]
        others = {k for w in self.words[first.key] for k in self.postings.get((home, w), ()) if k != first.key}
        for word in new & self.overlap.weight.keys():
            self.postings.setdefault((home, word), []).append(first.key)
        for other in others:
            self._consider(first.key, other)

    def ranked(self, live: list[Entry], cap: int) -> list[tuple[Entry, Entry]]:
        """The candidates in the order a merge tries them (see SpineCompactor.merge_neighbours)."""
        candidates = {(a.key, b.key) for a, b in pairwise(live) if self.mergeable(a, b)}
        candidates |= self.shared.keys()
        size = {e.key: e.size for e in live}

        def rank(pair: tuple[int, int]) -> tuple[bool, float, int, float, int, int]:
            together = size[pair[0]] + size[pair[1]]
            shared = self.shared.get(pair, 0.0)
            whole = together <= cap
            return (not whole, -shared if whole else 0.0, together, -shared, self.order[pair[0]], self.order[pair[1]])

        return [(self.by_key[a], self.by_key[b]) for a, b in sorted(candidates, key=rank)]
