"""The store's files as a compaction plan goes, and the steps that get them there: each file
parsed once per version, split families and their words read once per version of the tree."""

from __future__ import annotations

from collections import Counter

from ....store.limits import Limits
from ....store.paths import TIERS, is_nested_archive
from ....store.terms import StoreTerms
from ....store.text import sha256_hex
from ....store.tierfile import KnowledgeFile
from ...executor import FileWrite, Step
from .continuation import child_summary, child_title, family_names
from .findability import Findability
from .placement import child_pointer


def is_tier_path(path: str) -> bool:
    return path.endswith(".md") and path.split("/", 1)[0] in TIERS and "/" in path and not is_nested_archive(path)


class Tree:
    """The store's files as the plan goes, and the steps that get them there."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = dict(files)
        self.steps: list[Step] = []
        self._pinned: dict[str, bool] = {}
        self._known: dict[str, KnowledgeFile] = {}
        self._families: dict[str, list[str]] | None = None  # split children by parent, once asked for
        self._summaries: dict[str, str] = {}
        self._family_names: dict[str, Counter[str]] = {}  # by family head, as summary() reads them
        self._terms: StoreTerms | None = None  # built once a hook is shortened
        self._findability: Findability | None = None

    def pinned(self, path: str) -> bool:
        if path not in self._pinned:
            self._pinned[path] = path in self.files and self.knowledge(path).pinned
        return self._pinned[path]

    def write(self, step: Step, path: str, data: bytes) -> None:
        old = self.files.get(path)
        step.ops.append(FileWrite(path, sha256_hex(old) if old is not None else None, data))
        self.files[path] = data
        self._known.pop(path, None)
        self._families = None
        self._summaries.clear()
        self._family_names.clear()
        self._terms = None
        self._findability = None

    def summary(self, path: str) -> str:
        """A few words of what a split child holds, for its family's continuation line."""
        if path in self._summaries:
            return self._summaries[path]
        if self._families is None:
            self._families = {}
            for member in sorted(p for p in self.files if is_tier_path(p)):
                parent = self.knowledge(member).split_from
                if parent:
                    self._families.setdefault(parent, []).append(member)
        parent = self.knowledge(path).split_from or path
        family = [self.knowledge(p) for p in [parent, *self._families.get(parent, [])] if p in self.files]
        if parent not in self._family_names:
            self._family_names[parent] = family_names(family)
        self._summaries[path] = child_summary(self.knowledge(path), family, self._family_names[parent])
        return self._summaries[path]

    def child_title(self, path: str) -> str:
        """The title of a split child's pointer on a line of its own: words of its own piece."""
        if path not in self.files:
            return child_pointer(path).title
        return child_title(self.knowledge(path), self.summary(path)) or child_pointer(path).title

    def family_head(self, path: str) -> str:
        """The file a split child continues, followed to its first piece."""
        seen = {path}
        while path in self.files and (parent := self.knowledge(path).split_from) and parent not in seen:
            seen.add(parent)
            path = parent
        return path

    def terms(self) -> StoreTerms:
        """Every topic's terms (store/terms.py), read once per version of the tree."""
        if self._terms is None:
            self._terms = StoreTerms({p: data for p, data in self.files.items() if is_tier_path(p)},
                                     self.family_head)
        return self._terms

    def findability(self) -> Findability:
        """The store's self-queries (findability.py), built once per version of the tree."""
        if self._findability is None:
            self._findability = Findability({p: data for p, data in self.files.items() if is_tier_path(p)},
                                            self.family_head)
        return self._findability

    def taken(self, path: str) -> bool:
        return any(p in self.files for p in (path, "archive/" + path, "evidence/" + path))

    def knowledge(self, path: str) -> KnowledgeFile:
        if path not in self._known:
            self._known[path] = KnowledgeFile(path, self.files.get(path, b""))
        return self._known[path]

    def over_cap(self, path: str, limits: Limits) -> bool:
        file = self.knowledge(path)
        if file.oversize_reason is not None:  # `oversize:` lifts the byte cap, never the line cap
            return file.line_count > limits.tier_file.max_lines
        return file.line_count > limits.tier_file.max_lines or file.size > limits.tier_file.max_bytes
