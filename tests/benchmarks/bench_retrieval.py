"""Findability of the SPINE before and after distilld shortens it: recall@1 and recall@3.

Not a speed benchmark: it measures retrieval quality (can a reader still find each file from
the SPINE?) and prints no times; its baseline is the naive cut below, not a faster tool.
Not a pytest test: run it by hand (it needs the `bench` extra: `pip install -e '.[bench]'`).

    python tests/benchmarks/bench_retrieval.py                  # 5 adversarial stores + storegen 1x
    python tests/benchmarks/bench_retrieval.py --stores 10

A session decides which file to open from the SPINE alone, so a shortened entry must still be
found by what a reader would search for. For every tier file of the store before the pass,
queries are built from the file's own distinctive content, never from its SPINE entry: its
title, its rarest identifiers and `code`, and its rarest names and "error strings" (rarity
measured across the store's files). Entries are ranked by BM25 (the bm25s library) over their
titles and hook text, and a query counts as found at k when an entry pointing at the file is
among the first k. Three SPINEs are compared:

* before: the store's SPINE as it was;
* after: the SPINE distilld wrote (migration, or compaction of a migrated store);
* naive: the same pointer lines as "after", every hook replaced by the first N bytes of the
  files' original hooks, with N chosen so that the SPINE has the same size as "after".

Targets (issue 9): recall@3 after is at least 90% of recall@3 before, and clearly above naive.
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bm25s  # noqa: E402

from distilld.actions.compaction import run_compaction  # noqa: E402
from distilld.actions.migrate import run_migrate  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.store.hooks import ELLIPSIS  # noqa: E402
from distilld.store.paths import TIERS  # noqa: E402
from distilld.store.spine import GROUP_LINK_RE, LEADING_GROUP_RE, Spine, hook_of_entry  # noqa: E402
from distilld.store.text import rtrim  # noqa: E402
from realshapes import generate  # noqa: E402
from storegen import generate_store  # noqa: E402

NOW = datetime(2026, 10, 1, 12, 0, 0, tzinfo=UTC)
CODE_RE = re.compile(r"`([^`\n]{2,40})`")
QUOTED_RE = re.compile(r"\"([^\"\n]{3,40})\"")
IDENT_RE = re.compile(r"\b[A-Za-z][\w.-]*[_.][\w.-]*[A-Za-z0-9]\b")
NAME_RE = re.compile(r"\b[A-Z][a-z]+[A-Za-z0-9]*\b|\b[A-Z]{2,}[0-9]*\b")
POINTER_PATH_RE = re.compile(r"\]\(([^)]*\.md)\)")


@dataclass
class Entry:
    text: str  # titles and hook, as a reader ranks them
    paths: set[str]
    hook: str = ""


def spine_entries(raw: bytes) -> list[Entry]:
    found = []
    for entry in Spine(raw).entries:
        if entry.is_catalog_line:
            continue
        titles = " ".join(t for t, _ in GROUP_LINK_RE.findall(entry.joined))
        hook = POINTER_PATH_RE.sub(")", rtrim(hook_of_entry(entry.joined)))
        found.append(Entry(f"{titles} {hook}", set(POINTER_PATH_RE.findall(entry.joined)), hook))
    return found


def tier_files(root: Path) -> dict[str, str]:
    files = {}
    for tier in TIERS:
        for path in sorted((root / tier).rglob("*.md")) if (root / tier).is_dir() else []:
            relative = path.relative_to(root).as_posix()
            if "/archive/" not in relative:
                files[relative] = path.read_bytes().decode("utf-8", "replace")
    return files


def queries_for(files: dict[str, str]) -> list[tuple[str, str, str]]:
    """(path, kind, query) for every file: its title, its rarest identifiers, its rarest names."""
    def candidates(text: str) -> dict[str, list[str]]:
        return {"identifiers": CODE_RE.findall(text) + IDENT_RE.findall(text),
                "names": QUOTED_RE.findall(text) + NAME_RE.findall(text)}

    spread: Counter[str] = Counter()
    per_file = {}
    for path, text in files.items():
        found = candidates(text)
        per_file[path] = found
        spread.update({term for terms in found.values() for term in terms})
    out = []
    for path, text in files.items():
        title = next((line[2:] for line in text.splitlines() if line.startswith("# ")),
                     path.rsplit("/", 1)[-1][:-3].replace("-", " "))
        out.append((path, "title", title))
        for kind, terms in per_file[path].items():
            rare = sorted(dict.fromkeys(terms), key=lambda t: (spread[t], t))[:3]
            if rare and spread[rare[0]] <= max(2, len(files) // 10):
                out.append((path, kind, " ".join(rare)))
    return out


def recall(entries: list[Entry], queries: list[tuple[str, str, str]]) -> tuple[float, float, int]:
    corpus = [e.text for e in entries]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    hits1 = hits3 = asked = 0
    for path, _, query in queries:
        right = {i for i, e in enumerate(entries) if path in e.paths}
        if not right:
            continue
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            continue
        results, _ = retriever.retrieve(tokens, k=min(3, len(entries)), show_progress=False)
        ranked = [int(i) for i in results[0]]
        asked += 1
        hits1 += ranked[0] in right
        hits3 += bool(right & set(ranked[:3]))
    return hits1 / max(1, asked), hits3 / max(1, asked), asked


def naive_entries(before: list[Entry], after_raw: bytes) -> list[Entry]:
    """The after SPINE's pointer lines with the original hooks cut to N bytes, N chosen so the
    total size matches the after SPINE."""
    hooks_of = {}
    for entry in before:
        for path in entry.paths:
            hooks_of.setdefault(path, entry.hook)
    after = Spine(after_raw)
    groups = []
    for raw_entry in after.entries:
        if raw_entry.is_catalog_line:
            continue
        match = LEADING_GROUP_RE.match(raw_entry.first_line)
        group = match.group(0) if match else raw_entry.first_line
        paths = POINTER_PATH_RE.findall(raw_entry.joined)
        hook = " ".join(dict.fromkeys(hooks_of[p] for p in paths if p in hooks_of))
        groups.append((group, paths, hook))
    target = sum(e.byte_len for e in after.entries if not e.is_catalog_line)

    def build(n: int) -> tuple[int, list[Entry]]:
        size, out = 0, []
        for group, paths, hook in groups:
            cut = hook.encode()[:n].decode("utf-8", "ignore")
            text = f"{group} \u2014 {cut}{ELLIPSIS if len(cut) < len(hook) else ''}"
            size += len(text.encode())
            titles = " ".join(t for t, _ in GROUP_LINK_RE.findall(group))
            out.append(Entry(f"{titles} {cut}", set(paths)))
        return size, out

    low, high = 0, 4000
    while high - low > 1:
        middle = (low + high) // 2
        if build(middle)[0] <= target:
            low = middle
        else:
            high = middle
    return build(low)[1]


def measure(label: str, before_root: Path, after_root: Path) -> dict[str, float]:
    files = tier_files(before_root)
    queries = queries_for(files)
    before = spine_entries((before_root / "SPINE.md").read_bytes())
    after_raw = (after_root / "SPINE.md").read_bytes()
    after = spine_entries(after_raw)
    naive = naive_entries(before, after_raw)
    row = {}
    for name, entries in (("before", before), ("after", after), ("naive", naive)):
        r1, r3, asked = recall(entries, queries)
        row[f"{name}@1"], row[f"{name}@3"] = r1, r3
    print(f"{label:32} queries {asked:4}  recall@1 before {row['before@1']:.2f} after {row['after@1']:.2f} "
          f"naive {row['naive@1']:.2f} | recall@3 before {row['before@3']:.2f} after {row['after@3']:.2f} "
          f"naive {row['naive@3']:.2f} | SPINE {len((before_root / 'SPINE.md').read_bytes())} -> {len(after_raw)} B",
          flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=int, default=5, help="adversarial Store-B-shaped stores (seeds 1..N)")
    args = parser.parse_args(argv)
    policy = load_policy(None)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        cases: list[tuple[str, Path, str]] = []
        for seed in range(1, args.stores + 1):
            root = base / f"real-{seed}"
            generate(root, seed, overlay=False)  # retrieval reads SPINE.md only
            cases.append((f"realshapes seed {seed} (migrate)", root, "migrate"))
        storegen_root = base / "storegen-1x"
        generate_store(storegen_root, 1, "unmigrated")
        cases.append(("storegen 1x (migrate)", storegen_root, "migrate"))
        migrated_root = base / "storegen-1x-migrated"
        generate_store(migrated_root, 1, "migrated")
        cases.append(("storegen 1x migrated (compact)", migrated_root, "compact"))
        for label, root, how in cases:
            before = base / f"{root.name}-before"
            shutil.copytree(root, before, symlinks=True)
            if how == "migrate":
                run_migrate(root, policy, lambda: NOW, "apply")
            else:
                run_compaction(root, policy, lambda: NOW, apply=True)
            rows.append(measure(label, before, root))
    keys = rows[0].keys()
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in keys}
    print(f"\nmean over {len(rows)} stores: recall@1 before {mean['before@1']:.2f}, after {mean['after@1']:.2f}, "
          f"naive {mean['naive@1']:.2f}; recall@3 before {mean['before@3']:.2f}, after {mean['after@3']:.2f}, "
          f"naive {mean['naive@3']:.2f}")
    ratio = mean["after@3"] / mean["before@3"] if mean["before@3"] else math.nan
    print(f"recall@3 after / before = {ratio:.2f} (target >= 0.90); after - naive = "
          f"{mean['after@3'] - mean['naive@3']:+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
