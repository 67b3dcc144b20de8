"""A store built to the design research's published aggregates for "Store B", and a git
history that replays its growth.

The aggregates: SPINE.md 51,203 bytes, 79 lines, 65 entries (44 over 400 B, median 553 B),
95 links; 95 tier files, 56 over a cap; 23 project files, 18 named by path in another file,
7 past their threshold (3 exempt; under the current rule 1 blocked and 3 movable; under the
older rule, where any mention blocks, 2 movable). The history: on 2026-08-01 the SPINE was
31,032 bytes (51,203 is +65%) with the same 65 entries; distilld adopted the store on
2026-08-30, compacted it on 09-01 (4 entries shortened, craft/xray.md split), archived
projects/ember.md on 09-10, and committed the agents' changes on 09-05, 09-12 and 09-19.

Everything is deterministic (fixed seeds, fixed clocks); the persona is Rowan again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from random import Random

import pygit2
from distilld.store.catalog import render_catalog
from distilld.store.snapshot import snapshot_from_files
from distilld.store.text import sha256_hex, sha256_norm_hex
from pygit2.enums import FileMode

EM = "\u2014"
TODAY = date(2026, 9, 19)
NOW = datetime(2026, 9, 19, 12, 0, tzinfo=UTC)
SINCE = date(2026, 8, 1)
SPINE_BYTES = 51_203
SPINE_BYTES_SINCE = 31_032
TITLE = "# Distill Knowledge Index"
COMMENT = ("<!-- Managed by aura-distill. Max 80 lines / 16 KB, 400 bytes per entry. "
           "Entry: - [Title](path.md) -- when to read this. last_updated: 2026-09-19 -->")
CATALOG_LINE = f"- [Catalog](CATALOG.md) {EM} complete inventory of every knowledge file; not loaded at start."
HEADINGS = {"profile": "## Profile", "craft": "## Craft", "ops": "## Ops", "projects": "## Projects",
            "feedback": "## Feedback"}
TIER_ORDER = ("profile", "craft", "ops", "projects", "feedback")
WORDS = ("ingest", "schema", "registry", "partition", "backfill", "replay", "watermark", "checkpoint",
         "lineage", "contract", "warehouse", "lakehouse", "retention", "latency", "throughput", "canary",
         "rollback", "runbook", "alerting", "budget", "quota", "snapshot", "compaction", "vacuum",
         "parquet", "avro", "kafka", "airflow", "dbt", "spark", "terraform", "sidecar", "gateway",
         "pipeline", "consumer", "producer", "offset", "dedupe", "idempotent", "window", "join", "skew")

# Project files: (name, stamp, extra frontmatter, mentioned by path elsewhere, protected marker).
STALE = [
    ("atlas", "2026-03-01", {"lifecycle": "pinned"}, True),
    ("comet", "2026-04-10", {"lifecycle": "pinned"}, True),
    ("quill", "2026-05-20", {}, True),  # carries [NON-NEGOTIABLE]
    ("delta", "2026-05-01", {}, True),  # in the read_with of craft/contracts.md
    ("fjord", "2026-06-01", {}, True),  # named in prose only: movable now, blocked by the older rule
    ("garnet", "2026-07-15", {"staleness_threshold": "30"}, False),
    ("harbor", "2026-04-20", {}, False),
]
RECENT = ["lumen", "kestrel", "osprey", "marlin", "nimbus", "orca", "pelican", "raven", "sable",
          "tern", "umber", "vesper", "willow", "yarrow", "zephyr", "basalt"]
RECENT_UNMENTIONED = {"yarrow", "zephyr", "basalt"}
TIER_COUNTS = {"profile": 7, "craft": 30, "ops": 20, "feedback": 15}
PAIRS = {"profile": 2, "craft": 10, "ops": 6, "projects": 8, "feedback": 4}
SPLIT_PARENT, SPLIT_CHILD = "craft/xray.md", "craft/xray-2.md"
ARCHIVED = "projects/ember.md"
READ_WITH_HOLDER = "craft/contracts.md"
PROSE_HOLDER = "ops/runbook.md"


def entry_sizes() -> list[int]:
    """65 joined entry sizes, ascending; the largest is fitted later to the SPINE's bytes."""
    small = [180, 190, 200, 210, 220, 228, 235, 240]
    mid = [255, 270, 285, 300, 315, 330, 345, 355, 365, 375, 385, 392, 400]
    over = [410, 425, 440, 455, 470, 485, 500, 515, 530, 540, 550]
    return small + mid + over + [553] + [600 + 40 * i for i in range(32)]


def filler(rng: Random, length: int, lead: str = "") -> str:
    """Words to exactly ``length`` bytes (ASCII), never ending in a space."""
    text = lead
    while len(text) < length + 12:
        text += (" " if text else "") + rng.choice(WORDS)
    text = text[:length]
    return text[:-1] + "." if text.endswith(" ") else text


@dataclass
class Entry:
    paths: list[str]  # the leading pointer group in the final store
    size: int = 0  # joined bytes in the final store

    def group(self, paths: list[str]) -> str:
        return " + ".join(f"[{title_of(p)}]({p})" for p in paths)


def title_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1][:-3]
    return name.replace("-2", ", continued").replace("-", " ").title()


@dataclass
class StoreB:
    files: dict[str, bytes] = field(default_factory=dict)  # the final store
    entries: list[Entry] = field(default_factory=list)
    hooks_final: list[int] = field(default_factory=list)
    hooks_since: list[int] = field(default_factory=list)
    mentioned: set[str] = field(default_factory=set)
    expected_spine_bytes_lost: int = 0

    # -- the SPINE ---------------------------------------------------------------------------
    def spine_text(self, hooks: list[int], with_child: bool, with_archived: bool) -> str:
        lines = [TITLE, "", COMMENT, CATALOG_LINE]
        by_tier: dict[str, list[str]] = {tier: [] for tier in TIER_ORDER}
        for index, entry in enumerate(self.entries):
            paths = [p for p in entry.paths if with_child or p != SPLIT_CHILD]
            if with_archived and entry.paths == ["projects/lumen.md"]:
                paths = [*paths, ARCHIVED]
            rng = Random(f"hook-{index}")
            hook = filler(rng, hooks[index], f"{title_of(paths[0])} notes:")
            by_tier[entry.paths[0].split("/")[0]].append(f"- {entry.group(paths)} {EM} {hook}")
        for tier in TIER_ORDER:
            lines += ["", HEADINGS[tier], *by_tier[tier]]
        return "\n".join(lines) + "\n"


def _tier_paths() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    rng = Random(7)
    for tier, count in TIER_COUNTS.items():
        pool = [f"{tier}/{a}-{b}.md" for a in WORDS[:20] for b in WORDS[20:]]
        rng.shuffle(pool)
        chosen = sorted(pool[:count])
        names[tier] = chosen
    names["craft"][:3] = [SPLIT_PARENT, SPLIT_CHILD, READ_WITH_HOLDER]
    names["ops"][0] = PROSE_HOLDER
    names["projects"] = [f"projects/{n}.md" for n, *_ in STALE] + [f"projects/{n}.md" for n in RECENT]
    return {tier: sorted(set(paths)) for tier, paths in names.items()}


def _plan_entries(paths: dict[str, list[str]]) -> list[Entry]:
    entries: list[Entry] = []
    for tier in TIER_ORDER:
        tier_paths = [p for p in paths[tier] if p != SPLIT_CHILD]
        if tier == "craft":
            entries.append(Entry([SPLIT_PARENT, SPLIT_CHILD]))
            tier_paths.remove(SPLIT_PARENT)
            pairs = PAIRS[tier] - 1
        else:
            pairs = PAIRS[tier]
        if tier == "projects":
            tier_paths.remove("projects/lumen.md")
            entries.append(Entry(["projects/lumen.md"]))
        for number in range(pairs):
            entries.append(Entry(tier_paths[2 * number:2 * number + 2]))
        entries += [Entry([p]) for p in tier_paths[2 * pairs:]]
    return entries


def _assign_sizes(b: StoreB) -> None:
    sizes = entry_sizes()
    big = [s for s in sizes if s > 400]
    rest = [s for s in sizes if s <= 400]
    rng = Random(11)
    pair_sizes = big[:]
    rng.shuffle(pair_sizes)
    pairs = [e for e in b.entries if len(e.paths) > 1]
    for entry, size in zip(pairs, pair_sizes):
        entry.size = size
    singles_pool = rest + pair_sizes[len(pairs):]
    rng.shuffle(singles_pool)
    for entry, size in zip([e for e in b.entries if len(e.paths) == 1], singles_pool):
        entry.size = size
    b.hooks_final = [e.size - 7 - len(e.group(e.paths)) for e in b.entries]
    # Fit the largest entry so the SPINE is exactly SPINE_BYTES.
    largest = max(range(len(b.entries)), key=lambda i: b.entries[i].size)
    gap = SPINE_BYTES - len(b.spine_text(b.hooks_final, True, False).encode())
    b.hooks_final[largest] += gap
    b.entries[largest].size += gap
    assert len(b.spine_text(b.hooks_final, True, False).encode()) == SPINE_BYTES
    # On 2026-08-01 every hook was shorter (ember still shared lumen's line, xray was not split).
    ratio = 0.55
    b.hooks_since = [max(30, round(h * ratio)) for h in b.hooks_final]
    gap = SPINE_BYTES_SINCE - len(b.spine_text(b.hooks_since, False, True).encode())
    b.hooks_since[largest] += gap
    assert len(b.spine_text(b.hooks_since, False, True).encode()) == SPINE_BYTES_SINCE


# -- tier files ----------------------------------------------------------------------------------

BULLET_KINDS = ("plain", "plain", "dated", "mentions_date", "evidence", "plain", "protected")


def _bullet(rng: Random, kind: str, protected_marker: str) -> str:
    day = f"2026-0{rng.randint(1, 8)}-{rng.randint(10, 28)}"
    body = filler(rng, rng.randint(110, 190))
    if kind == "dated":
        return f"- {day} observe: {body}"
    if kind == "mentions_date":
        return f"- [PRINCIPLE] The {rng.choice(WORDS)} rule changed on {day}: {body}"
    if kind == "evidence":
        return f"- Confirmed by the {rng.choice(WORDS)} check: {body}"
    if kind == "protected":
        return f"- [{protected_marker} {day}] {body}"
    return f"- [PRINCIPLE] {body}"


def tier_text(path: str, stamp: str, target: int, extra: dict[str, str], lines_after: list[str],
              protected_marker: str = "DIRECTIVE") -> str:
    rng = Random(path)
    tier = path.split("/")[0]
    fm = ["---", f"domain: {tier.rstrip('s') if tier == 'projects' else tier}",
          f"scope: {title_of(path)} for Rowan's pipelines", f"last_updated: {stamp}"]
    fm += [f"{key}: {value}" for key, value in extra.items()]
    fm.append("---")
    body = ["", f"# {title_of(path)}", ""]
    text_len = len("\n".join(fm + body + lines_after)) + 1
    section = 0
    while True:
        if (len(body) - 3) % 9 == 0:
            section += 1
            candidate = ["", f"## {rng.choice(WORDS).title()} {section}", ""]
        else:
            candidate = [_bullet(rng, rng.choice(BULLET_KINDS), protected_marker)]
        grown = text_len + sum(len(line) + 1 for line in candidate)
        if grown > target:
            break
        body += candidate
        text_len = grown
    return "\n".join(fm + body + lines_after) + "\n"


def _tier_files(b: StoreB, paths: dict[str, list[str]]) -> None:
    rng = Random(5)
    stale = {f"projects/{n}.md": (stamp, extra) for n, stamp, extra, _ in STALE}
    all_paths = [p for tier in TIER_ORDER for p in paths[tier]]
    projects = paths["projects"]
    b.mentioned = {f"projects/{n}.md" for n, *_, named in STALE if named}
    b.mentioned |= {f"projects/{n}.md" for n in RECENT if n not in RECENT_UNMENTIONED}
    # Who names whom: each mentioned project is named by one craft or ops file.
    namers = [p for p in paths["craft"] + paths["ops"] if p not in (SPLIT_PARENT, SPLIT_CHILD)]
    mentions: dict[str, list[str]] = {}
    for number, target in enumerate(sorted(b.mentioned - {"projects/delta.md", "projects/fjord.md"})):
        mentions.setdefault(namers[(3 * number + 5) % len(namers)], []).append(target)
    mentions.setdefault(PROSE_HOLDER, []).append("projects/fjord.md")
    mentions[PROSE_HOLDER].append(ARCHIVED)  # a reference into the archive that resolves
    # 56 of 95 over a cap: 10 project files and 46 of the others.
    over = set(rng.sample([p for p in projects if p != "projects/quill.md"], 10))
    others = [p for p in all_paths if not p.startswith("projects/") and p not in (SPLIT_PARENT, SPLIT_CHILD)]
    over |= set(rng.sample(others, 46))
    for path in all_paths:
        extra: dict[str, str] = {}
        stamp = f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 18)}"
        marker = "NON-NEGOTIABLE" if not path.startswith("projects/") else "DIRECTIVE"
        if path in stale:
            stamp, extra = stale[path][0], dict(stale[path][1])
        elif path.startswith("projects/"):
            stamp = f"2026-09-{rng.randint(1, 15):02d}"
        after: list[str] = []
        if path == "projects/quill.md":
            marker = "NON-NEGOTIABLE"
            after.append("- [NON-NEGOTIABLE] Keep every settlement file for seven years.")
        if path == READ_WITH_HOLDER:
            extra["read_with"] = "[projects/delta.md]"
        if path == SPLIT_CHILD:
            extra["split_from"] = SPLIT_PARENT
        after += [f"- See `{target}` for the {rng.choice(WORDS)} details." for target in mentions.get(path, [])]
        if path == SPLIT_PARENT:
            after += ["", f"Continued in `{SPLIT_CHILD}`."]
        target = rng.randint(6400, 9800) if path in over else rng.randint(1500, 5200)
        b.files[path] = tier_text(path, stamp, target, extra, after, marker).encode()


def build_store_b() -> StoreB:
    b = StoreB()
    paths = _tier_paths()
    b.entries = _plan_entries(paths)
    assert len(b.entries) == 65 and sum(len(e.paths) for e in b.entries) == 95
    _assign_sizes(b)
    _tier_files(b, paths)
    b.files["SPINE.md"] = b.spine_text(b.hooks_final, True, False).encode()
    ember = tier_text(ARCHIVED, "2026-05-02", 3000, {}, []).encode()
    b.files["archive/" + ARCHIVED] = ember
    b.files["archive/old-warehouse-notes.md"] = b"# Old warehouse notes\n\n- kept as an early compaction left them\n"
    entry = f"- [Ember]({ARCHIVED}) {EM} Ember notes."
    b.files["archive/LEDGER.md"] = (
        "# Archive ledger\n\n<!-- Append-only. -->\n\n"
        f"- 2026-09-10T06:00:00Z archive | from: {ARCHIVED} | to: archive/{ARCHIVED} | sha256: {sha256_hex(ember)}"
        f" | sha256-norm: {sha256_norm_hex(ember)} | reason: no activity for 131 days (threshold 90)"
        f" | spine-entry: {entry}\n").encode()
    b.files["CATALOG.md"] = render_catalog(snapshot_from_files(Path("."), b.files), NOW).encode()
    return b


def write_store(root: Path, files: dict[str, bytes]) -> None:
    for path, raw in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)


# -- the history ---------------------------------------------------------------------------------


def _commit(repo: pygit2.Repository, files: dict[str, bytes], when: datetime, message: str) -> None:
    index = pygit2.Index()
    for path, raw in sorted(files.items()):
        index.add(pygit2.IndexEntry(path, repo.create_blob(raw), FileMode.BLOB))
    tree = index.write_tree(repo)
    sig = pygit2.Signature("Rowan", "rowan@example.invalid", int(when.timestamp()), 0)
    parents = [] if repo.head_is_unborn else [repo.head.target]
    repo.create_commit("refs/heads/main", sig, sig, message, tree, parents)


def _trailers(operation: str, day: str, paths: list[str]) -> str:
    return "\n".join([f"Distilld-Operation: {operation}", f"Distilld-Pass: {day.replace('-', '')}T060000Z-ab12",
                      f"Distilld-Path-Count: {len(paths)}", *[f"Distilld-Path: {p}" for p in paths]])


def build_store_b_with_history(root: Path) -> StoreB:
    """The final store on disk, as the last commit of a history that replays its growth."""
    b = build_store_b()
    repo = pygit2.init_repository(str(root), initial_head="main")
    parent_text = b.files[SPLIT_PARENT].decode().replace(f"Continued in `{SPLIT_CHILD}`.\n", "")
    child_body = b.files[SPLIT_CHILD].decode().split("---\n", 2)[2]
    joined = (parent_text + child_body).encode()
    early = {p: r for p, r in b.files.items()
             if p not in (SPLIT_CHILD, "CATALOG.md", "archive/LEDGER.md", "archive/" + ARCHIVED)}
    early[SPLIT_PARENT] = joined
    early[ARCHIVED] = b.files["archive/" + ARCHIVED]

    def hooks_at(step: int) -> list[int]:
        return [s + (f - s) * step // 7 for s, f in zip(b.hooks_since, b.hooks_final)]

    def at(hour_day: str) -> datetime:
        return datetime.fromisoformat(hour_day + "T06:00:00+00:00")

    def spine(step: int, child: bool, archived: bool, shorten: int = 0) -> bytes:
        hooks = hooks_at(step)
        for index in sorted(range(len(hooks)), key=lambda i: -hooks[i])[:shorten]:
            hooks[index] -= 150
        return b.spine_text(hooks, child, archived).encode()

    for step, day in enumerate(("2026-08-01", "2026-08-08", "2026-08-15", "2026-08-22", "2026-08-29")):
        early["SPINE.md"] = b.spine_text(b.hooks_since, False, True).encode() if step == 0 else spine(step, False, True)
        _commit(repo, early, at(day), f"notes: week of {day}\n")
    assert early["SPINE.md"] == spine(4, False, True)
    adopted = {**early, ".gitattributes": b"* -text\n"}
    _commit(repo, adopted, at("2026-08-30"), "distilld: adopt the store\n\n"
            + _trailers("adopt", "2026-08-30", [".gitattributes"]) + "\n")
    compacted = {**adopted, SPLIT_PARENT: b.files[SPLIT_PARENT], SPLIT_CHILD: b.files[SPLIT_CHILD],
                 "SPINE.md": spine(4, True, True, shorten=4)}
    b.expected_spine_bytes_lost = len(adopted["SPINE.md"]) - len(compacted["SPINE.md"])
    _commit(repo, compacted, at("2026-09-01"), "distilld: compaction (4 entries shortened, 1 file split)\n\n"
            + _trailers("compaction", "2026-09-01", ["SPINE.md", SPLIT_PARENT, SPLIT_CHILD]) + "\n")
    agents = {**compacted, "SPINE.md": spine(5, True, True)}
    _commit(repo, agents, at("2026-09-05"), "distilld: agent changes (0 added, 1 changed, 0 removed)\n\n"
            + _trailers("agent-changes", "2026-09-05", ["SPINE.md"]) + "\n")
    archived = {k: v for k, v in agents.items() if k != ARCHIVED}
    archived.update({"archive/" + ARCHIVED: b.files["archive/" + ARCHIVED],
                     "archive/LEDGER.md": b.files["archive/LEDGER.md"], "CATALOG.md": b.files["CATALOG.md"],
                     "SPINE.md": spine(5, True, False)})
    b.expected_spine_bytes_lost += len(agents["SPINE.md"]) - len(archived["SPINE.md"])
    _commit(repo, archived, at("2026-09-10"), "distilld: lifecycle archived 1 file\n\n"
            + _trailers("lifecycle", "2026-09-10", ["SPINE.md", ARCHIVED, "archive/" + ARCHIVED]) + "\n")
    for step, day in ((6, "2026-09-12"), (7, "2026-09-19")):
        archived = {**archived, "SPINE.md": spine(step, True, False)}
        _commit(repo, archived, at(day), "distilld: agent changes (0 added, 1 changed, 0 removed)\n\n"
                + _trailers("agent-changes", day, ["SPINE.md"]) + "\n")
    assert archived["SPINE.md"] == b.files["SPINE.md"]
    write_store(root, b.files)
    (root / ".gitattributes").write_bytes(b"* -text\n")
    return b
