"""The SPINE as a planner edits it: entries with their pointer groups and hooks, every other
line kept as it was. Pure; ``render`` gives the bytes (untouched lines keep their bytes and
endings, new or rewritten lines take the file's dominant ending).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ....store.hooks import common_phrases
from ....store.readable_hooks import contributes, readable_hook
from ....store.spine import (
    DOUBLE_DASH_RE,
    EM_DASH,
    EM_DASH_RE,
    LEADING_GROUP_RE,
    Pointer,
    Spine,
    SpineEntry,
    hook_of_entry,
    is_continuation,
    joined_group,
)
from ....store.terms import StoreTerms
from .findability import Findability, Weights

NO_WEIGHTS = Weights()
from ....store.text import (
    byte_len,
    decode,
    dominant_ending,
    encode,
    lines_with_endings,
    replace_line_body,
    rtrim,
)

KEYWORD_CANDIDATES = 8  # a short hook has room for two or three; the rest only cost time


def format_group(group: list[Pointer]) -> str:
    return " + ".join(f"[{p.title}]({p.path})" for p in group)


@dataclass
class Entry:
    """One SPINE entry under edit: the entry as read (``read``, the store's SpineEntry, with
    its lines as they are on disk in ``raw_lines``), and what the plan makes of it."""

    key: int
    group: list[Pointer]
    hook: str  # the joined hook, trailing space trimmed (a merged line's: both hooks)
    read: SpineEntry | None = None  # None for a new entry
    raw_lines: list[str] = field(default_factory=list)  # with endings; [] for a new entry
    section: int = 0  # how many headings stand above it
    is_catalog: bool = False
    text: str | None = None  # a rewritten single line
    group_changed: bool = False
    removed: bool = False
    cut: bool = False  # the hook lost words: the whole hook goes to Index detail
    merged: bool = False  # merged into a multi-pointer line: the whole hook goes to Index detail
    limit: int | None = None  # the length it was shortened to
    original_hook: str = ""  # the hook as read: what Index detail receives
    detail_target: str | None = None  # where its whole hook goes when it is cut or merged
    normalized: bool = False  # read with its pointers joined by ", " or " / ": it is written with " + "

    def __post_init__(self) -> None:
        self.original_hook = self.original_hook or self.hook

    @property
    def is_new(self) -> bool:
        return not self.raw_lines

    @property
    def first_line(self) -> str:
        return self.read.first_line if self.read is not None else ""

    @property
    def continuations(self) -> tuple[str, ...]:
        return self.read.continuations if self.read is not None else ()

    @property
    def as_read(self) -> str:
        """The joined entry as read ("" for a new one)."""
        return self.read.joined if self.read is not None else ""

    def current(self) -> str:
        """The joined entry as the plan leaves it."""
        if self.text is not None:
            return self.text
        if self.normalized:
            return self.plain()
        first = self.first_line
        if self.group_changed:
            first = "- " + format_group(self.group) + LEADING_GROUP_RE.sub("", self.first_line, count=1)
        return " ".join((first, *self.continuations))

    def plain(self) -> str:
        """The entry as one line: its group joined by " + ", a dash, its hook."""
        group = format_group(self.group)
        return rtrim(f"- {group} {EM_DASH} {self.hook}" if self.hook else f"- {group}")

    def current_hook(self) -> str:
        return rtrim(hook_of_entry(self.current()))

    @property
    def size(self) -> int:
        return byte_len(self.current())

    @property
    def paths(self) -> list[str]:
        return [p.path for p in self.group]

    def render(self, ending: str) -> list[str]:
        if self.removed:
            return []
        text = self.text if self.text is not None else self.plain() if self.normalized else None
        if text is not None:
            return [replace_line_body(self.raw_lines[-1], text) if self.raw_lines else text + ending]
        if self.group_changed:
            first = "- " + format_group(self.group) + LEADING_GROUP_RE.sub("", self.first_line, count=1)
            return [replace_line_body(self.raw_lines[0], first), *self.raw_lines[1:]]
        return list(self.raw_lines)


@dataclass
class Row:
    raw: str  # the line with its ending ("" for an entry row: the entry renders itself)
    entry: Entry | None = None
    dropped: bool = False

    @property
    def blank(self) -> bool:
        return self.entry is None and not self.raw.strip()


class SpineModel:
    """A SPINE under edit. Entries keep their order; rows hold everything else."""

    def __init__(self, raw: bytes) -> None:
        text = decode(raw)
        self.ending = dominant_ending(text)
        raw_lines = lines_with_endings(text)
        spine = Spine(raw)
        self.rows: list[Row] = []
        self.entries: list[Entry] = []
        by_start = {e.line_index: e for e in spine.entries}
        section = 0
        index = 0
        while index < len(raw_lines):
            line = spine.lines[index]
            parsed = by_start.get(index)
            if parsed is None:
                if line.startswith("#"):
                    section += 1
                self.rows.append(Row(raw_lines[index]))
                index += 1
                continue
            entry = Entry(
                key=len(self.entries), group=list(parsed.leading_group), hook=parsed.hook, read=parsed,
                raw_lines=raw_lines[index:index + parsed.line_count], section=section,
                is_catalog=parsed.is_catalog_line,
            )
            _normalize_joiners(entry)
            self.entries.append(entry)
            self.rows.append(Row("", entry))
            index += parsed.line_count
        self._next_key = len(self.entries)
        self._hook_common = common_phrases([e.hook for e in self.entries if not e.is_catalog])
        self._common: frozenset[str] | None = None
        self.pinned: Callable[[str], bool] = lambda path: False
        # The store's terms (store/terms.py), asked for only once a hook is shortened: the
        # planner sets it; without it, hooks draw on their own words alone.
        self.store_terms: Callable[[], StoreTerms | None] = lambda: None
        self._index: dict[str, Entry] | None = None
        # The store's self-queries (findability.py): what a shortened hook keeps is what they find.
        self.findability: Callable[[], Findability | None] = lambda: None

    def weights_of(self, entry: Entry) -> Weights:
        """What each word is worth to ``entry``'s hook (empty without the store's self-queries)."""
        return self.weights_for(entry.paths, format_group(entry.group))

    def weights_for(self, paths: list[str], group: str) -> Weights:
        found = self.findability()
        return found.weights(paths, group) if found is not None else NO_WEIGHTS

    def score(self, only: frozenset[int] | None = None) -> float:
        """How well the store's self-queries (or ``only`` those) find their topics from the SPINE
        as planned."""
        found = self.findability()
        if found is None:
            return 0.0
        return found.score([(e.current(), e.paths) for e in self.live_entries() if not e.is_catalog], only)

    @property
    def common(self) -> frozenset[str]:
        """What many entries say, or many topics hold, tells a reader little about which file
        to open (see hooks.py)."""
        if self._common is None:
            terms = self.store_terms()
            self._common = self._hook_common | (terms.common() if terms is not None else frozenset())
        return self._common

    def terms_of(self, paths: list[str]) -> tuple[str, ...]:
        """The rarest terms of the topics behind ``paths``, for a hook that keeps too few
        words of its own."""
        terms = self.store_terms()
        return terms.keywords_for(paths)[:KEYWORD_CANDIDATES] if terms is not None else ()

    # -- reading ------------------------------------------------------------------------------
    def render(self) -> str:
        out: list[str] = []
        for row in self.rows:
            if row.dropped:
                continue
            if row.entry is None:
                out.append(row.raw)
            else:
                out += row.entry.render(self.ending)
        return "".join(_joined_safely(out, self.ending))

    def raw(self) -> bytes:
        return encode(self.render())

    @property
    def size(self) -> int:
        return len(self.raw())

    @property
    def line_count(self) -> int:
        return len(Spine(self.raw()).lines)

    def live_entries(self) -> list[Entry]:
        """The entries still in the SPINE, in file order."""
        return [row.entry for row in self.rows if row.entry is not None and not row.entry.removed]

    def entry_of(self, path: str) -> Entry | None:
        """The live entry whose leading group names ``path`` (the first, in file order)."""
        if self._index is None:
            self._index = {}
            for entry in self.live_entries():
                for pointer in entry.group:
                    self._index.setdefault(pointer.path, entry)
        found = self._index.get(path)
        return found if found is not None and not found.removed else None

    def forget_index(self) -> None:
        """Groups changed: entry_of looks again."""
        self._index = None

    # -- editing ------------------------------------------------------------------------------
    def new_entry(self, group: list[Pointer], hook: str, after: Entry | None, section: int) -> Entry:
        """A new single-line entry, right after ``after`` (or at the end of the file)."""
        entry = Entry(key=self._next_key, group=group, hook=hook, section=section)
        self._next_key += 1
        entry.text = f"- {format_group(group)} {EM_DASH} {hook}" if hook else f"- {format_group(group)}"
        at = len(self.rows)
        if after is not None:
            at = next(i for i, row in enumerate(self.rows) if row.entry is after) + 1
        elif self.rows and self.rows[-1].raw and not self.rows[-1].raw.endswith("\n"):
            self.rows[-1].raw += self.ending
        self.rows.insert(at, Row("", entry))
        self.entries.append(entry)
        self.forget_index()
        return entry

    def insert_top(self, line: str) -> None:
        """A line before the first heading or entry (the catalog line's place), with a blank
        line after it."""
        at = next((i for i, row in enumerate(self.rows)
                   if row.entry is not None or row.raw.startswith("## ")), len(self.rows))
        entry = Entry(key=self._next_key, group=list(Spine(encode(line + "\n")).entries[0].leading_group),
                      hook=rtrim(hook_of_entry(line)), is_catalog=True)
        self._next_key += 1
        entry.text = line
        new_rows = [Row("", entry), Row(self.ending)]
        if at > 0 and self.rows[at - 1].raw.strip():
            new_rows.insert(0, Row(self.ending))
        self.rows[at:at] = new_rows
        self.entries.insert(0, entry)
        self.forget_index()

    def add_pointers(self, host: Entry, pointers: list[Pointer], after_path: str) -> None:
        """Put ``pointers`` into ``host``'s leading group, after ``after_path`` and the pointers
        of its split family that already follow it."""
        group = host.group
        at = next((i for i, p in enumerate(group) if p.path == after_path), len(group) - 1) + 1
        stem = after_path[:-3] + "-"
        while at < len(group) and group[at].path.startswith(stem):
            at += 1
        group[at:at] = pointers
        host.group_changed = True
        self.forget_index()
        if host.text is not None:  # already rewritten: write it again with the longer group
            host.text = rewrite(host, host.limit or host.size, self.pinned, self.weights_of(host))

    def droppable_blank_rows(self) -> list[Row]:
        """Blank lines whose removal joins nothing: the next line is not one a reader would
        take as a continuation of the entry above."""
        live = [r for r in self.rows if not r.dropped]
        found: list[Row] = []
        for index, row in enumerate(live):
            if not row.blank:
                continue
            following = live[index + 1] if index + 1 < len(live) else None
            if following is None or following.entry is not None or not is_continuation(
                    following.raw.rstrip("\r\n")):
                found.append(row)
        return found


def _normalize_joiners(entry: Entry) -> None:
    """Pointers joined by ", ", " / ", " and " or "; " become one " + " group (the only joiner
    the checker reads), every word of the hook kept; the hook as the checker read it goes to
    Index detail, as for a cut entry."""
    found = joined_group(entry.as_read)
    if found is None:
        return
    pointers, rest = found
    hook = rtrim(DOUBLE_DASH_RE.sub("", EM_DASH_RE.sub("", rest, count=1), count=1))  # as hook_of_entry
    entry.group = list(pointers)
    entry.hook = hook
    entry.normalized = True


def _joined_safely(lines: list[str], ending: str) -> list[str]:
    """Every line but the last ends with a line break (an edit never glues two lines)."""
    return [line if line.endswith("\n") or i == len(lines) - 1 else line + ending
            for i, line in enumerate(lines)]


def rewrite(entry: Entry, limit: int, pinned: Callable[[str], bool], weights: Weights) -> str:
    """The entry as one line within ``limit`` bytes where its words allow (readable_hooks.py)."""
    group = format_group(entry.group)
    head = f"- {group} {EM_DASH} "
    hook = readable_hook([entry.hook], max(0, limit - byte_len(head)), weights, must_keep(entry, pinned)) \
        if entry.hook else ""
    return rtrim(head + hook) if hook else f"- {group}"


def must_keep(entry: Entry, pinned: Callable[[str], bool]) -> tuple[str, ...]:
    """A pinned file's entry says "pinned" (STORE-FORMAT.md 1.3)."""
    return ("pinned",) if any(pinned(p) for p in entry.paths) else ()


def merged_text(first: Entry, second: Entry, limit: int, must: tuple[str, ...],
                weights: Weights) -> str | None:
    """One multi-pointer line for two entries: both hooks, whole where they fit, else made of
    their most findable units with one Read sentence for both (readable_hooks.py); None when
    either hook would be left with nothing of its own."""
    group = first.group + second.group
    head = f"- {format_group(group)} {EM_DASH} "
    hooks = [first.current_hook(), second.current_hook()]
    hook = readable_hook(hooks, max(0, limit - byte_len(head)), weights, must)
    if not all(contributes(h, hook) for h in hooks if h):
        return None
    return rtrim(head + hook)
