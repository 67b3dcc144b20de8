"""How findable a store's files are from its SPINE: the queries, the baselines and recall@k.

Used by bench_retrieval.py (issue 24). Queries come from a tier file's own content as it was
before the pass (never from a SPINE): its title words, an identifier of its body, its rarest
words and its quoted strings. Index detail sections, evidence citations and "Continued in"
lines are left out, since a pass writes them. SPINE entries are ranked by BM25 (bm25s) over
their whole joined text; a query is found at k when an entry pointing at the file, or at a
file of its split family, is among the first k with a score above zero.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import bm25s

from distilld.store.paths import TIERS
from distilld.store.spine import JOINED_GROUP_RE, POINTER_RE, Spine, hook_of_entry
from distilld.store.text import rtrim
from distilld.store.tierfile import KnowledgeFile

KINDS = ("title", "identifier", "rare", "quoted")
CODE_RE = re.compile(r"`([^`\n]{2,40})`")
QUOTED_RE = re.compile(r"\"([^\"\n]{6,60})\"")
IDENT_RE = re.compile(r"(?<![\w`])(?:[A-Za-z][\w]*[_.][\w.]*[A-Za-z0-9]|--[a-z][\w-]+|[A-Z]{2,}_[A-Z0-9_]+)(?![\w`])")
WORD_RE = re.compile(r"[a-z][a-z]{3,}")
STOP = frozenset(bm25s.stopwords.STOPWORDS_EN) | {
    "read", "when", "before", "confidence", "validated", "confirmations", "corrections", "last",
    "principle", "provisional", "hardened", "experimental", "with", "from", "that", "this", "into",
}
EM = "\u2014"


@dataclass
class Query:
    path: str
    kind: str
    text: str


@dataclass
class SpineEntries:
    texts: list[str]
    paths: list[set[str]]
    lines: int
    size: int


@dataclass
class Recall:
    r1: float
    r3: float
    asked: int
    by_kind: dict[str, tuple[float, float, int]] = field(default_factory=dict)


def tier_files(root: Path) -> dict[str, bytes]:
    found = {}
    for tier in TIERS:
        for path in sorted((root / tier).rglob("*.md")) if (root / tier).is_dir() else []:
            found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


def family_heads(files: dict[str, bytes]) -> dict[str, str]:
    """Every tier path to the first piece of its split family (itself when it is none)."""
    parent = {p: KnowledgeFile(p, raw).split_from for p, raw in files.items()}
    heads = {}
    for path in files:
        seen, at = {path}, path
        while (up := parent.get(at)) and up in files and up not in seen:
            seen.add(up)
            at = up
        heads[path] = at
    return heads


def content_of(path: str, raw: bytes) -> tuple[str, str]:
    """(title, body) of a tier file as its author wrote it: no frontmatter, no pass-written lines."""
    lines = KnowledgeFile(path, raw).body_lines
    body: list[str] = []
    for line in lines:
        if line.startswith("## Index detail"):
            break
        if line.startswith(("Evidence: ", "Continued in ")):
            continue
        body.append(line)
    title = next((line[2:].strip() for line in body if line.startswith("# ")), "")
    if not title:
        title = re.sub(r"[-_.]+", " ", path.rsplit("/", 1)[-1][:-3])
    return title, "\n".join(line for line in body if not line.startswith("# "))


def build_queries(files: dict[str, bytes]) -> list[Query]:
    """Title, identifier, rare-words and quoted-string queries for every file (rarity across files)."""
    parsed = {p: content_of(p, raw) for p, raw in files.items()}
    idents = {p: set(CODE_RE.findall(b)) | set(IDENT_RE.findall(b)) for p, (_, b) in parsed.items()}
    words = {p: Counter(w for w in WORD_RE.findall(b.lower()) if w not in STOP) for p, (_, b) in parsed.items()}
    quoted = {p: QUOTED_RE.findall(b) for p, (_, b) in parsed.items()}
    spread_ident: Counter[str] = Counter(i for found in idents.values() for i in found)
    spread_word: Counter[str] = Counter(w for found in words.values() for w in found)
    spread_quote: Counter[str] = Counter(q for found in quoted.values() for q in set(found))
    out = []
    for path, (title, _) in parsed.items():
        out.append(Query(path, "title", title))
        rare_idents = sorted((i for i in idents[path] if spread_ident[i] <= 2), key=lambda i: (spread_ident[i], i))
        out += [Query(path, "identifier", i) for i in rare_idents[:2]]
        rare = sorted((w for w in words[path] if spread_word[w] <= 2), key=lambda w: (spread_word[w], -words[path][w], w))
        if len(rare) >= 2:
            out.append(Query(path, "rare", " ".join(rare[:3])))
        # rare, as the other kinds are: an error string that most files quote names none of them
        rare_quotes = [q for q in quoted[path] if spread_quote[q] <= 2]
        if rare_quotes:
            out.append(Query(path, "quoted", rare_quotes[0]))
    return out


def spine_entries(raw: bytes) -> SpineEntries:
    spine = Spine(raw)
    texts, paths = [], []
    for entry in spine.entries:
        if entry.is_catalog_line:
            continue
        texts.append(entry.joined)
        paths.append(set(POINTER_RE.findall(entry.joined)))
    return SpineEntries(texts, paths, spine.line_count, spine.size)


def recall(entries: SpineEntries, queries: list[Query], heads: dict[str, str], query_heads: dict[str, str]) -> Recall:
    """heads: the SPINE's store paths to their family heads; query_heads: a query file to its head there."""
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(entries.texts, stopwords="en", show_progress=False), show_progress=False)
    families = [{heads.get(p, p) for p in found} for found in entries.paths]
    hits: dict[str, list[int]] = {k: [0, 0, 0] for k in KINDS}
    k = min(3, len(entries.texts))
    tokenized = bm25s.tokenize([q.text for q in queries], stopwords="en", show_progress=False, return_ids=False)
    for query, tokens in zip(queries, tokenized, strict=True):
        target = query_heads.get(query.path, query.path)
        tally = hits[query.kind]
        tally[2] += 1
        if not tokens:
            continue
        ids, scores = retriever.retrieve([tokens], k=k, show_progress=False)
        ranked = [int(i) for i, s in zip(ids[0], scores[0], strict=True) if s > 0]
        tally[0] += bool(ranked) and target in families[ranked[0]]
        tally[1] += any(target in families[i] for i in ranked[:3])
    asked = sum(t[2] for t in hits.values())
    by_kind = {kind: (t[0] / t[2], t[1] / t[2], t[2]) for kind, t in hits.items() if t[2]}
    return Recall(sum(t[0] for t in hits.values()) / max(1, asked), sum(t[1] for t in hits.values()) / max(1, asked),
                  asked, by_kind)


def _cut(hook: str, n: int) -> str:
    if len(hook.encode()) <= n:
        return hook
    cut = hook.encode()[:n].decode("utf-8", "ignore")
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip(",;:") + "\u2026"


def _shaped(before_raw: bytes, after_files: dict[str, bytes], after_raw: bytes,
            hook_for: "HookFor") -> tuple[bytes, int]:
    """A SPINE with the before SPINE's lines, each entry's leading group plus the pointers of the
    split children the pass made, and every hook cut by ``hook_for(hook, paths, n)`` to the
    largest n that keeps the SPINE no bigger than the after SPINE."""
    heads = family_heads(after_files)
    members: dict[str, list[str]] = {}
    for path, head in sorted(heads.items()):
        if path != head:
            members.setdefault(head, []).append(path)
    before = Spine(before_raw)
    starts = {e.line_index: e for e in before.entries}
    after_spine = Spine(after_raw)
    catalog = next((e.joined for e in after_spine.entries if e.is_catalog_line), None)
    pieces: list[tuple[str, list[str], str] | str] = [] if catalog is None or before.has_catalog_line else [catalog]
    pointed: set[str] = set()
    skip = 0
    for index, line in enumerate(before.lines):
        if skip:
            skip -= 1
            continue
        entry = starts.get(index)
        if entry is None:
            pieces.append(line)
            continue
        skip = entry.line_count - 1
        if entry.is_catalog_line:
            pieces.append(entry.joined)
            continue
        match = JOINED_GROUP_RE.match(entry.joined)
        group_text = match.group(0) if match else entry.joined
        links = re.findall(r"\[[^\]]*\]\([^)]*\)", group_text)
        group_paths = POINTER_RE.findall(group_text)
        extra = [f"[{c.rsplit('/', 1)[-1][:-3]}]({c})" for p in group_paths for c in members.get(p, [])]
        pointed |= set(group_paths) | {c for p in group_paths for c in members.get(p, [])}
        hook = rtrim(hook_of_entry(entry.joined if match is None else "- [x](x.md)" + entry.joined[match.end():]))
        pieces.append(("- " + " + ".join([*links, *extra]), group_paths, hook))
    for path in sorted(p for p in after_files if p not in pointed and heads[p] == p):
        if path in after_raw.decode("utf-8", "replace"):
            pieces.append((f"- [{path}]({path})", [path], ""))
    target = len(after_raw)

    def build(n: int) -> bytes:
        out = []
        for piece in pieces:
            if isinstance(piece, str):
                out.append(piece)
            else:
                group, paths, hook = piece
                short = hook_for(hook, paths, n)
                out.append(f"{group} {EM} {short}" if short else group)
        return ("\n".join(out) + "\n").encode()

    low, high = 0, 4000
    while high - low > 1:
        middle = (low + high) // 2
        if len(build(middle)) <= target:
            low = middle
        else:
            high = middle
    return build(low), low


class HookFor:  # (hook, paths, n) -> hook of at most about n bytes
    def __call__(self, hook: str, paths: list[str], n: int) -> str: ...


def naive_spine(before_raw: bytes, after_files: dict[str, bytes], after_raw: bytes) -> tuple[bytes, int]:
    """The naive cut: every original entry line kept, split children's pointers added to it,
    every hook cut to a prefix so the total bytes equal the after SPINE's."""
    return _shaped(before_raw, after_files, after_raw, lambda hook, paths, n: _cut(hook, n))


def oracle_spine(before_raw: bytes, after_files: dict[str, bytes], after_raw: bytes,
                 queries: list[Query]) -> tuple[bytes, int]:
    """A ceiling: the naive cut's lines and bytes, each hook opening with the benchmark's own query
    words for its files (which no planner may know), then the hook's prefix."""
    words: dict[str, list[str]] = {}
    for query in queries:
        words.setdefault(query.path, []).extend(query.text.split())

    def hook_for(hook: str, paths: list[str], n: int) -> str:
        asked = list(dict.fromkeys(w for p in paths for w in words.get(p, [])))
        return _cut(" ".join([*asked, hook]), n)

    return _shaped(before_raw, after_files, after_raw, hook_for)
