"""`distilld find`: findability, honest not-found, latency, index cost, and the MCP round trip.

Not a pytest test: run it by hand (the `bench` and `mcp` extras: `pip install -e '.[bench,mcp]'`).

    python tests/benchmarks/bench_find.py                     # 10 Store-B-shaped stores, x1 x10 x100
    python tests/benchmarks/bench_find.py --stores 3 --scales 1,10

Findability is measured as bench_retrieval.py measures the SPINE: on Store-B-shaped stores
(tests/realshapes.py) migrated by distilld, every tier file of the store before migration gets
queries from its own content (its title, its rarest identifiers, its rarest names; never its
SPINE entry); a query counts as found at k when the file (or a split child of it) is among the
first k. The baseline is BM25 (bm25s) over the migrated SPINE's lines alone, on the same queries.
Out-of-scope queries are made of words no file holds (alone, and with one word the store does
hold); each should be answered not-found.

Speed is measured on storegen's migrated stores (tests/benchmarks/storegen.py) at x1, x10 and
x100: warm find (an open index that is current: the stat check of every knowledge file plus the
query), cold find (a new index object per query: the connection opened, the store scanned),
the first build's CPU, the update after one file changes, the index's size, and the wall time
of a search_knowledge round trip to a real `distilld serve` child over stdio.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from retrieval_measure import SpineEntries, build_queries, spine_entries, tier_files  # noqa: E402
from benchutil import header, load_average, ms, row, run_call  # noqa: E402

from distilld.actions.migrate import run_migrate  # noqa: E402
from distilld.policy import load_policy  # noqa: E402
from distilld.mcp_server import RECHECK_SECONDS  # noqa: E402
from distilld.search.answers import find_answer  # noqa: E402
from distilld.runtime.change_counter import ChangeCounter  # noqa: E402
from distilld.search.session import SearchIndex  # noqa: E402
from distilld.store.snapshot import take_snapshot  # noqa: E402
from realshapes import generate  # noqa: E402
from storegen import generate_store  # noqa: E402

NOW = datetime(2026, 10, 1, 12, 0, 0, tzinfo=UTC)
SYLLABLES = ("zor", "vek", "qui", "blan", "drux", "mip", "tov", "skel", "frim", "gno", "wuz", "plet")


def families(root: Path) -> dict[str, set[str]]:
    """Each tier file (after migration) with every split child that continues it."""
    snap = take_snapshot(root)
    parent = {p: snap.knowledge(p).split_from for p in snap.tier_paths}
    found: dict[str, set[str]] = {p: {p} for p in snap.tier_paths}
    for child in snap.tier_paths:
        seen, up = {child}, parent.get(child)
        while up and up in found and up not in seen:
            found[up].add(child)
            seen.add(up)
            up = parent.get(up)
    return found


def queries_for(files: dict[str, bytes]) -> list[tuple[str, str, str]]:
    return [(q.path, q.kind, q.text) for q in build_queries(files)]


def spine_ranks(entries: SpineEntries, queries: list[str]) -> list[list[int]]:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(entries.texts, stopwords="en", show_progress=False), show_progress=False)
    out = []
    for query in queries:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            out.append([])
            continue
        results, _ = retriever.retrieve(tokens, k=min(3, len(entries.texts)), show_progress=False)
        out.append([int(i) for i in results[0]])
    return out


def absent_words(vocabulary: set[str], rng: random.Random, count: int) -> list[str]:
    words: list[str] = []
    while len(words) < count:
        word = "".join(rng.sample(SYLLABLES, rng.randint(2, 3)))
        if word not in vocabulary and word not in words:
            words.append(word)
    return words


def findability(base: Path, stores: int) -> None:
    policy = load_policy(None)
    tallies: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # n, find@1, find@3, spine@1, spine@3, found
    out_pure = [0, 0]
    out_mixed = [0, 0]
    for seed in range(1, stores + 1):
        root = base / f"real-{seed}"
        generate(root, seed)
        before = base / f"real-{seed}-before"
        shutil.copytree(root, before, symlinks=True)
        run_migrate(root, policy, lambda: NOW, "apply")
        files = tier_files(before)
        queries = queries_for(files)
        entries = spine_entries((root / "SPINE.md").read_bytes())
        spine = spine_ranks(entries, [q for _, _, q in queries])
        index = SearchIndex(root)
        family = families(root)
        for (path, kind, query), ranked in zip(queries, spine):
            right = family.get(path, {path})
            answer = find_answer(index, query, 5)
            got = [r["path"] for r in answer["results"]]
            entry_right = {i for i, paths in enumerate(entries.paths) if paths & right}
            tally = tallies[kind]
            tally[0] += 1
            tally[1] += bool(got[:1] and got[0] in right)
            tally[2] += bool(set(got[:3]) & right)
            tally[3] += bool(ranked[:1] and ranked[0] in entry_right)
            tally[4] += bool(set(ranked[:3]) & entry_right)
            tally[5] += bool(set(got) & right)
        vocabulary = {w.lower() for text in files.values() for w in text.decode("utf-8", "replace").split()}
        common = sorted(w for w in vocabulary if w.isalpha() and len(w) > 4)
        rng = random.Random(seed)
        for _ in range(30):
            words = absent_words(vocabulary, rng, rng.randint(1, 3))
            out_pure[0] += 1
            out_pure[1] += not find_answer(index, " ".join(words))["found"]
            out_mixed[0] += 1
            out_mixed[1] += not find_answer(index, " ".join([*words, rng.choice(common)]))["found"]
        index.close()
    print(f"\nFindability on {stores} Store-B-shaped stores after migration (k = 5 answers asked for)")
    print(f"  {'kind':12} {'queries':>7}  find R@1  R@3  | SPINE-only BM25 R@1  R@3 | found (in k)")
    total = [0] * 6
    for kind, tally in sorted(tallies.items()):
        total = [a + b for a, b in zip(total, tally)]
        n = tally[0]
        print(f"  {kind:12} {n:7}  {tally[1]/n:8.2f} {tally[2]/n:4.2f}  | {tally[3]/n:19.2f} {tally[4]/n:4.2f} |"
              f" {tally[5]/n:.2f}")
    n = total[0]
    print(f"  {'all':12} {n:7}  {total[1]/n:8.2f} {total[2]/n:4.2f}  | {total[3]/n:19.2f} {total[4]/n:4.2f} |"
          f" {total[5]/n:.2f}")
    rejected = (out_pure[1] + out_mixed[1]) / (out_pure[0] + out_mixed[0])
    print(f"  out of scope: {out_pure[1]}/{out_pure[0]} absent-word queries and {out_mixed[1]}/{out_mixed[0]} "
          "absent words + one store word answered not-found")
    row("find R@1 after migration (all kinds)", f"{total[1]/n:.2f}", ">= 0.87", total[1] / n >= 0.87)
    row("find R@3 after migration (all kinds)", f"{total[2]/n:.2f}", ">= 0.95", total[2] / n >= 0.95)
    row("out-of-scope answered not-found", f"{rejected:.2f}", ">= 0.90", rejected >= 0.90)
    row("in-scope queries returning their file", f"{total[5]/n:.2f}", ">= 0.93", total[5] / n >= 0.93)


def quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def speed(base: Path, scale: int, rounds: int) -> None:
    root = base / f"gen-x{scale}"
    generate_store(root, scale, "migrated")
    files = tier_files(root)
    queries = [q for _, _, q in queries_for(files)]
    rng = random.Random(scale)
    rng.shuffle(queries)
    queries = queries[:rounds]
    state = Path(os.environ["DISTILLD_STATE_DIR"])
    build = run_call(lambda: SearchIndex(root).current())
    index = SearchIndex(root)
    size = os.path.getsize(index.path)
    find_answer(index, queries[0])  # warm-up
    warm_runs = [run_call(lambda q=q: find_answer(index, q)) for q in queries]  # type: ignore[misc]
    warm = [r.wall for r in warm_runs]
    served = SearchIndex(root, recheck_after=RECHECK_SECONDS)
    find_answer(served, queries[0])
    counter = ChangeCounter(root).start()  # what `distilld serve` runs: a watch on the store
    watched = SearchIndex(root, recheck_after=RECHECK_SECONDS, changes=counter.count,
                          changed_paths=counter.take_changes)
    find_answer(watched, queries[0])
    server_runs, watched_runs = [], []
    for q in queries:  # the two server paths interleaved, query by query
        server_runs.append(run_call(lambda q=q: find_answer(served, q)))  # type: ignore[misc]
        watched_runs.append(run_call(lambda q=q: find_answer(watched, q)))  # type: ignore[misc]
    target = root / sorted(files)[len(files) // 3]
    watched_updates = []
    for n in range(7):  # the server's update: the watch names the file that changed
        seen = counter.count()
        target.write_bytes(target.read_bytes() + f"\n- bench watched edit {n}: the lynx rule\n".encode())
        deadline = time.monotonic() + 10
        while counter.count() == seen and time.monotonic() < deadline:
            time.sleep(0.002)
        watched_updates.append(run_call(lambda: watched.current()))
    assert find_answer(watched, "lynx")["found"]
    counter.stop()
    watched_update = statistics.median(s.wall for s in watched_updates)
    watched_update_cpu = statistics.median(s.cpu for s in watched_updates)
    cold = [run_call(lambda q=q: find_answer(SearchIndex(root), q)).wall for q in queries[: max(20, rounds // 5)]]  # type: ignore[misc]
    target = root / sorted(files)[len(files) // 2]
    updates = []
    for n in range(7):
        target.write_bytes(target.read_bytes() + f"\n- bench edit {n}: the ocelot rule\n".encode())
        updates.append(run_call(lambda: index.current()))
    assert find_answer(index, "ocelot")["found"]
    update = statistics.median(s.wall for s in updates)
    update_cpu = statistics.median(s.cpu for s in updates)
    w50, w95 = quantiles(warm)
    c50, c95 = quantiles(cold)
    s50, s95 = quantiles([r.wall for r in server_runs])
    wcpu = statistics.median(r.cpu for r in warm_runs)
    scpu = statistics.median(r.cpu for r in server_runs)
    wcpu95 = quantiles([r.cpu for r in warm_runs])[1]
    scpu95 = quantiles([r.cpu for r in server_runs])[1]
    print(f"\nx{scale}: {len(files)} tier files; index {size / 1e6:.1f} MB in {state.name}/; first build CPU "
          f"{ms(build.cpu)} (wall {ms(build.wall)}); update after one file changed {ms(update)} wall, "
          f"{ms(update_cpu)} CPU (medians of 7)")
    print(f"  warm find, every file's stamp checked (a command): p50 {ms(w50)} p95 {ms(w95)}, CPU median "
          f"{ms(wcpu)}, CPU p95 {ms(wcpu95)} (n={len(warm)})")
    print(f"  warm find, folders checked between full checks each {RECHECK_SECONDS:g} s (the server): p50 {ms(s50)} "
          f"p95 {ms(s95)}, CPU median {ms(scpu)}, CPU p95 {ms(scpu95)} (n={len(server_runs)})")
    v50, v95 = quantiles([r.wall for r in watched_runs])
    vcpu = statistics.median(r.cpu for r in watched_runs)
    vcpu95 = quantiles([r.cpu for r in watched_runs])[1]
    print(f"  warm find, the store watched, every file checked only after a change (the server): p50 {ms(v50)} "
          f"p95 {ms(v95)}, CPU median {ms(vcpu)}, CPU p95 {ms(vcpu95)} (n={len(watched_runs)})")
    print(f"  cold find (a new index object: connection opened, every file checked): p50 {ms(c50)} p95 {ms(c95)} "
          f"(n={len(cold)})")
    for label, p95 in (("server, watched", v95), ("server without a watch", s95), ("every file checked", w95)):
        if scale == 10:
            row(f"warm find p95 at x10 ({label})", ms(p95), "<= 10 ms", p95 <= 0.010)
        if scale == 100:
            row(f"warm find p95 at x100 ({label})", ms(p95), "<= 50 ms", p95 <= 0.050)
    print(f"  update after one file changed, the store watched (the server): {ms(watched_update)} wall, "
          f"{ms(watched_update_cpu)} CPU (medians of 7)")
    row(f"update after one file change at x{scale} (server, watched)", ms(watched_update), "<= 50 ms",
        watched_update <= 0.050)
    row(f"update after one file change at x{scale} (a command: every file checked)", ms(update), "<= 50 ms",
        update <= 0.050)
    if scale == 10:
        mcp_round_trip(root, queries)


def mcp_round_trip(root: Path, queries: list[str]) -> None:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "distilld", "serve", str(root)],
                                   env={k: v for k, v in os.environ.items() if k.startswith(("DISTILLD_", "HOME", "PATH"))})
    walls: list[float] = []

    async def run() -> None:
        async with Client(params) as client:
            await client.call_tool("search_knowledge", {"query": queries[0]})
            for query in queries:
                started = time.perf_counter()
                result = await client.call_tool("search_knowledge", {"query": query})
                walls.append(time.perf_counter() - started)
                assert not result.is_error

    anyio.run(run)
    p50, p95 = quantiles(walls)
    print(f"  MCP search_knowledge round trip over stdio: p50 {ms(p50)} p95 {ms(p95)} (n={len(walls)})")
    row("MCP round trip p95 over stdio at x10", ms(p95), "<= 30 ms", p95 <= 0.030)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", type=int, default=10, help="Store-B-shaped stores for findability (seeds 1..N)")
    parser.add_argument("--scales", default="1,10,100", help="storegen scales for speed")
    parser.add_argument("--rounds", type=int, default=200, help="queries per latency figure")
    args = parser.parse_args(argv)
    header("distilld find", 5)
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        os.environ["DISTILLD_STATE_DIR"] = str(base / "state")  # never the user's state folder
        if args.stores:
            findability(base, args.stores)
        for scale in (int(s) for s in args.scales.split(",") if s):
            speed(base, scale, args.rounds)
    print(f"\n  {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
