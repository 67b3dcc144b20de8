"""Deterministic generator of synthetic Aura Distill stores for benchmarks.

The shape copies a real, bloated pre-1.2 store measured during the design research: a SPINE
far over its caps (about 51 KB over 79 lines, 65 entries of which 44 are over 400 bytes), 95
tier files of which most are over the 6,000-byte cap, protected markers, dated observation
bullets mixed into principle files, 20 archives and several hundred cross-references. Every
number below is the scale-1 value; ``scale`` multiplies the file counts, archives,
cross-references and SPINE entries.

Two layouts:

* ``unmigrated``: no CATALOG.md, no ledger, no evidence twins. The 18 nested archives under
  ``archive/<tier>/`` are pending adoption (the pre-1.2 shape the research measured).
* ``migrated``: the 1.2 layout. The nested archives have ``archive`` events in
  ``archive/LEDGER.md`` (with ``sha256:``, ``sha256-norm:`` and ``spine-entry:``), a few tier
  and archived files have evidence twins, the SPINE has its catalog line, and CATALOG.md is
  the canonical rebuild by ``distilld.store.catalog.render_catalog``.

The persona is Teal, a platform engineer; the projects are made-up codenames. All text comes
from the small word lists below, through one seeded ``random.Random`` per component, so the
same (scale, layout, seed) always gives the same bytes.

Run ``python tests/benchmarks/storegen.py --scale 1 --layout migrated --out /tmp/store`` to
write a store and print its measured shape (``--check`` also runs distilld's C1-C3).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from random import Random
from typing import Any

EM = "\u2014"
PERSONA = "Teal"
SPINE_ORDER = ("profile", "craft", "ops", "projects", "feedback")
HEADING = {
    "profile": "Profile",
    "craft": "Craft",
    "ops": "Ops",
    "projects": "Projects",
    "feedback": "Feedback",
}
DEFAULT_NOW = datetime(2026, 9, 23, 10, 0, 0, tzinfo=timezone.utc)
LAYOUTS = ("unmigrated", "migrated")

# --------------------------------------------------------------------------------------------
# The measured scale-1 shape (targets). Counts scale linearly; sizes are distributions.
# --------------------------------------------------------------------------------------------
TIER_FILES = {"profile": 6, "craft": 34, "ops": 20, "projects": 23, "feedback": 12}  # 95
SPINE_ENTRIES = 65
SPINE_LINES = 79
ENTRIES_UNDER_CAP = 21  # so 44 of 65 are over 400 bytes
ENTRY_MIN, ENTRY_UNDER_MAX, ENTRY_OVER_MIN, ENTRY_MEDIAN, ENTRY_MAX = 170, 395, 408, 553, 3200
ENTRY_TAIL_POWER = 3.2  # shapes the long tail so the SPINE totals about 51 KB
FILES_UNDER_CAP = 39  # so 56 of 95 are over 6,000 bytes
FILE_MIN, FILE_UNDER_MAX, FILE_OVER_MIN, FILE_MAX = 1700, 5850, 6150, 23000
FILE_TAIL_POWER = 2.2
SPLIT_CHILDREN = 5
PINNED = 4
READ_WITH = 9
SUBFOLDER_FILES = 3
MARKER_FILES = 49
MARKERS = 112
CROSS_REFERENCES = 529
ARCHIVES_NESTED = 18
ARCHIVES_FLAT = 2
EVIDENCE_ACTIVE = 10  # migrated layout only
EVIDENCE_ARCHIVED = 2  # migrated layout only
NESTED_ARCHIVE_TIERS = ("projects",) * 10 + ("craft",) * 4 + ("ops",) * 2 + ("feedback", "profile")

TIER_RE = r"(?:craft|ops|profile|projects|feedback)/[^)`\s]*\.md"
XREF_LINK_RE = re.compile(r"\]\((" + TIER_RE + r")\)")
XREF_TICK_RE = re.compile(r"`(" + TIER_RE + r")`")
PROTECTED_RE = re.compile(r"\[(?:NON-NEGOTIABLE|DIRECTIVE)[^\]]*\]")
POINTER_RE = re.compile(r"\]\(([^)]*\.md)\)")

# --------------------------------------------------------------------------------------------
# Word lists (the project's own; no real people).
# --------------------------------------------------------------------------------------------
VERBS = (
    "check retry rotate flush drain replay merge cache index batch throttle shard mirror snapshot "
    "audit profile lint pack deploy verify compact archive restore validate measure review document "
    "trace sample stage promote freeze seal export import parse encode render schedule bound "
    "reconcile dedupe quarantine backfill migrate rebase squash vendor"
).split()
NOUNS = (
    "queue worker schema migration index replica snapshot bucket cluster namespace secret token "
    "certificate release canary rollout dashboard alert runbook pipeline job backfill partition "
    "shard ledger invoice webhook consumer producer topic offset checkpoint manifest lockfile "
    "fixture contract endpoint handler cache config flag threshold budget quota timeout deadline "
    "retry backoff payload header cursor page batch report export import audit trace span metric "
    "sample probe heartbeat lease mutex build artifact image tag branch review commit changelog "
    "table column view trigger cron window region zone tenant account"
).split()
ADJECTIVES = (
    "stale idempotent flaky noisy cold warm pinned sharded bounded versioned signed encrypted "
    "read-only append-only nightly hourly regional staged partial atomic deterministic explicit "
    "narrow small boring reversible scoped tagged dated orphaned duplicate slow fast cheap "
    "expensive brittle durable transient local shared"
).split()
ADVERBS = (
    "quietly",
    "early",
    "late",
    "twice",
    "first",
    "explicitly",
    "by default",
    "on every run",
    "eagerly",
    "lazily",
    "rarely",
)
TOOLS = (
    "Postgres pgbouncer Kafka Parquet Terraform Helm Grafana Prometheus Redis nginx systemd cron "
    "S3 Airflow dbt ruff mypy pytest hypothesis k6 Vault Argo Envoy gRPC protobuf SQLite DuckDB "
    "ClickHouse Sentry Loki Tempo Jaeger Bazel uv tox git-lfs rclone restic Caddy HAProxy"
).split()
ERRORS = (
    "ECONNRESET EADDRINUSE OOMKilled SIGPIPE ETIMEDOUT 429 502 503 deadlock-detected "
    "serialization-failure lock-timeout checksum-mismatch"
).split()
UNITS = ("seconds", "minutes", "hours", "days", "requests", "rows", "retries", "megabytes")
OBSERVATION_KINDS = ("confirm", "confirm", "confirm", "correct", "observe", "observe", "directive")
CONFIDENCE = ("experimental", "provisional", "validated", "validated", "hardened")
FILLER = (
    "again also all at by each for in it its new no now of old on one or our so the then to two up "
    "via we yet"
).split()
CODENAMES = (
    "basalt cinder drumlin estuary fathom gantry heron isobar jetty keel lichen moraine nettle "
    "oxbow pylon quarry rampart sextant tessera umbra vellum wicket yarrow zephyr atoll bellows "
    "cairn dune fjord grotto halyard inlet jib kelp lagoon mizzen nimbus obelisk petrel reef "
    "shoal tarn upland vane weir"
).split()
PROJECT_SUFFIXES = (
    "relay ledger gate mesh forge vault sync lens port yard works link hub scope line".split()
)
TOPICS = {
    "craft": (
        "testing retries logging code-review sql-style python-typing error-handling api-design naming "
        "schema-evolution concurrency caching profiling dependency-pinning feature-flags migrations "
        "observability docs-style commit-messages fixtures property-tests shell-scripts packaging "
        "cli-design date-handling unicode config-files secrets benchmarks refactoring timeouts "
        "idempotency pagination rate-limits backfills queues"
    ).split(),
    "ops": (
        "deploy rollback on-call backups dns tls-certs secrets-rotation cost-review capacity alerts "
        "db-runbook incident-review access-requests ci-runners artifact-registry log-retention "
        "disaster-recovery cron-jobs vpn monitoring"
    ).split(),
    "profile": "work-style tooling schedule communication background environment hardware languages".split(),
    "feedback": (
        "preferences output-style review-tone corrections formatting questions pacing summaries "
        "explanations commit-style naming-feedback error-reports"
    ).split(),
}
TOPIC_QUALIFIERS = {
    "craft": "python sql go rust shell ci legacy v2 notes advanced checklist pitfalls".split(),
    "ops": "staging prod eu us edge batch legacy primary replica".split(),
    "profile": "core extra notes history".split(),
    "feedback": "chat code docs reviews terminal".split(),
}
SUBFOLDERS = {
    "craft": "python",
    "ops": "runbooks",
    "projects": "clients",
    "profile": "notes",
    "feedback": "tone",
}
WHEN = (
    "Read before touching {x}.",
    "Read when working in the {x} repos.",
    "Read before shipping {x}.",
    "Read when {x} pages.",
    "Read before reviewing {x} changes.",
    "Read when planning {x} work.",
)
REASONS = (
    "past threshold, no validation observed",
    "project finished; user asked to archive",
    "superseded by a newer file",
    "past staleness_threshold, nothing references it",
)


def _s3(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _ing(verb: str) -> str:
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    return verb + "ing"


def _plural(noun: str) -> str:
    return _s3(noun)


VERB_S3 = {v: _s3(v) for v in VERBS}
VERB_ING = {v: _ing(v) for v in VERBS}
NOUN_PL = {n: _plural(n) for n in NOUNS}


def a(word: str) -> str:
    """The word with its indefinite article."""
    return ("an " if word[0] in "aeiou" else "a ") + word


def lower_first(text: str) -> str:
    """Lower-case the first letter unless the first word is a name (has another capital)."""
    head = text.split(" ", 1)[0]
    return (
        text if any(c.isupper() for c in head[1:]) or head in TOOLS else text[0].lower() + text[1:]
    )


def blen(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (the em dash is 3)."""
    return len(text.encode("utf-8"))


class Prose:
    """English-like sentences from the word lists, driven by one Random."""

    def __init__(self, rng: Random) -> None:
        self.r = rng

    def date(self, start: date = date(2026, 1, 5), days: int = 250) -> str:
        return (start + timedelta(days=self.r.randrange(days))).isoformat()

    def noun(self) -> str:
        return self.r.choice(NOUNS)

    def nouns(self) -> str:
        return NOUN_PL[self.r.choice(NOUNS)]

    def verb(self) -> str:
        return self.r.choice(VERBS)

    def adj(self) -> str:
        return self.r.choice(ADJECTIVES)

    def tool(self) -> str:
        return self.r.choice(TOOLS)

    def sentence(self) -> str:
        r = self.r
        n = r.randrange(12)
        if n == 0:
            s = f"{self.verb()} the {self.noun()} before {VERB_ING[self.verb()]} the {self.adj()} {self.noun()}"
        elif n == 1:
            s = (
                f"when the {self.tool()} {self.noun()} {VERB_S3[self.verb()]} {r.choice(ADVERBS)}, "
                f"{self.verb()} the {self.noun()} first"
            )
        elif n == 2:
            s = f"prefer {self.adj()} {self.nouns()} over {self.adj()} {self.nouns()}; they {self.verb()} {r.choice(ADVERBS)}"
        elif n == 3:
            s = f"the {self.tool()} {self.noun()} {VERB_S3[self.verb()]} every {self.noun()}, so keep the {self.nouns()} {self.adj()}"
        elif n == 4:
            s = (
                f"{self.tool()} {VERB_S3[self.verb()]} each {self.noun()} within {r.randint(2, 90)} "
                f"{r.choice(UNITS)}; anything slower pages the on-call"
            )
        elif n == 5:
            s = f"never {self.verb()} {a(self.noun())} without {a(self.adj())} {self.noun()}"
        elif n == 6:
            s = f"keep {self.nouns()} {self.adj()} and {self.adj()}, because {self.tool()} {VERB_S3[self.verb()]} them {r.choice(ADVERBS)}"
        elif n == 7:
            s = f"{a(self.adj())} {self.noun()} usually means {a(self.noun())} {VERB_S3[self.verb()]} too late"
        elif n == 8:
            s = f"{r.choice(ERRORS)} from {self.tool()} is almost always {a(self.adj())} {self.noun()}, not the {self.noun()}"
        elif n == 9:
            s = f"split {self.nouns()} by {self.noun()} and {self.verb()} them in {self.adj()} {self.nouns()}"
        elif n == 10:
            s = f"{VERB_ING[self.verb()]} {self.nouns()} by hand is fine once; script it the second time"
        else:
            s = f"the {self.noun()} budget is {r.randint(2, 500)} {r.choice(UNITS)} per {self.noun()}"
        return s[0].upper() + s[1:] + "."

    def clause(self) -> str:
        r = self.r
        n = r.randrange(6)
        if n == 0:
            return f"{self.adj()} {self.nouns()} via {self.tool()}"
        if n == 1:
            return f"{self.tool()} {self.noun()} {self.verb()} rules"
        if n == 2:
            return f"{r.choice(ERRORS)} means {self.adj()} {self.noun()}"
        if n == 3:
            return f"{r.randint(2, 60)}/{r.randint(2, 90)} {r.choice(UNITS)} {self.noun()} window"
        if n == 4:
            return f"{VERB_ING[self.verb()]} {self.nouns()} before {self.tool()}"
        first, second = self.r.sample(NOUNS, 2)
        return f"who owns the {first} {second}"

    def phrase(self) -> str:
        return f"{self.adj()} {self.nouns()}"


# --------------------------------------------------------------------------------------------
# The plan: which files exist, how big they are, what they carry.
# --------------------------------------------------------------------------------------------
@dataclass
class TierFile:
    path: str
    tier: str
    title: str
    target_bytes: int = 0
    split_from: str | None = None
    child: str | None = None  # set on a split parent
    pinned: bool = False
    read_with: list[str] = field(default_factory=list)
    markers: list[tuple[str, str]] = field(default_factory=list)  # (where, marker)
    xrefs: list[tuple[str, str, str]] = field(default_factory=list)  # (target, title, style)
    evidence: bool = False


@dataclass
class Entry:
    tier: str
    files: list[TierFile]
    target: int = 0
    wrapped: bool = False


class Names:
    """Unique slugs per tier (active and archived share one namespace, so nothing collides)."""

    def __init__(self, rng: Random) -> None:
        self.r = rng
        self.used: set[str] = set()

    def take(self, tier: str) -> str:
        for attempt in range(200):
            slug = self._candidate(tier, attempt)
            path = f"{tier}/{slug}.md"
            if (
                path not in self.used
                and f"{tier}/{slug}-2.md" not in self.used
                and not slug.endswith("-2")
            ):
                self.used.add(path)
                return slug
        n = len(self.used)
        slug = f"{self._candidate(tier, 0)}-{n}"
        self.used.add(f"{tier}/{slug}.md")
        return slug

    def _candidate(self, tier: str, attempt: int) -> str:
        r = self.r
        if tier == "projects":
            if attempt < 3:
                return r.choice(CODENAMES)
            if attempt < 30:
                return f"{r.choice(CODENAMES)}-{r.choice(PROJECT_SUFFIXES)}"
            return f"{r.choice(CODENAMES)}-{r.choice(CODENAMES)}-{r.choice(PROJECT_SUFFIXES)}"
        topics, quals = TOPICS[tier], TOPIC_QUALIFIERS[tier]
        if tier == "profile" and attempt == 0 and f"profile/{PERSONA.lower()}.md" not in self.used:
            return PERSONA.lower()
        if attempt < 3:
            return r.choice(topics)
        if attempt < 40:
            return f"{r.choice(topics)}-{r.choice(quals)}"
        return f"{r.choice(topics)}-{r.choice(quals)}-{r.choice(CODENAMES)}"


def title_of(slug: str) -> str:
    words = slug.split("/")[-1].replace("-", " ")
    return words[0].upper() + words[1:]


def entry_lengths(count: int) -> list[int]:
    """Target bytes of ``count`` SPINE entries, ascending: the measured distribution, scaled."""
    under = round(count * ENTRIES_UNDER_CAP / SPINE_ENTRIES)
    middle = (count - 1) / 2
    found: list[int] = []
    for i in range(count):
        if i < under:
            t = i / (under - 1) if under > 1 else 1.0
            found.append(round(ENTRY_MIN + (ENTRY_UNDER_MAX - ENTRY_MIN) * t**0.9))
        elif i <= middle:
            t = (i - under) / (middle - under) if middle > under else 1.0
            found.append(round(ENTRY_OVER_MIN + (ENTRY_MEDIAN - ENTRY_OVER_MIN) * t))
        else:
            t = (i - middle) / (count - 1 - middle)
            found.append(round(ENTRY_MEDIAN + (ENTRY_MAX - ENTRY_MEDIAN) * t**ENTRY_TAIL_POWER))
    return found


def file_lengths(count: int) -> list[int]:
    """Target bytes of ``count`` tier files, ascending: 39 in 95 under the 6,000-byte cap."""
    under = round(count * FILES_UNDER_CAP / sum(TIER_FILES.values()))
    found: list[int] = []
    for i in range(count):
        if i < under:
            t = i / (under - 1) if under > 1 else 1.0
            found.append(round(FILE_MIN + (FILE_UNDER_MAX - FILE_MIN) * t**1.1))
        else:
            t = (i - under) / (count - 1 - under) if count - 1 > under else 0.0
            found.append(round(FILE_OVER_MIN + (FILE_MAX - FILE_OVER_MIN) * t**FILE_TAIL_POWER))
    return found


def plan_tier_files(scale: int, seed: int) -> list[TierFile]:
    rng = Random(f"{seed}:plan")
    names = Names(Random(f"{seed}:names"))
    files: list[TierFile] = []
    for tier in SPINE_ORDER:
        for _ in range(
            TIER_FILES[tier] * scale - (SPLIT_CHILDREN * scale if tier == "craft" else 0)
        ):
            slug = names.take(tier)
            files.append(TierFile(f"{tier}/{slug}.md", tier, title_of(slug)))
    # a few files in a subfolder (the checker allows them)
    movable = [f for f in files if f.path != f"profile/{PERSONA.lower()}.md"]
    for f in rng.sample(movable, SUBFOLDER_FILES * scale):
        slug = f.path.split("/", 1)[1][:-3]
        new = f"{f.tier}/{SUBFOLDERS[f.tier]}/{slug}.md"
        if new in names.used:
            continue
        names.used.add(new)
        f.path = new
    # split children count toward their tier's total: craft started SPLIT_CHILDREN*scale
    # short, and each child outside craft replaces one single file of its own tier with a new
    # craft file below, so every tier total comes out exact
    parents = rng.sample(
        [f for f in files if "/" not in f.path.split("/", 1)[1]], SPLIT_CHILDREN * scale
    )
    by_tier_extra: dict[str, int] = {t: 0 for t in SPINE_ORDER}
    for parent in parents:
        child_path = parent.path[:-3] + "-2.md"
        names.used.add(child_path)
        child = TierFile(
            child_path, parent.tier, parent.title + " (continued)", split_from=parent.path
        )
        parent.child = child_path
        files.insert(files.index(parent) + 1, child)
        by_tier_extra[parent.tier] += 1
    for tier, extra in by_tier_extra.items():
        if tier == "craft":
            continue
        for _ in range(extra):
            victims = [
                f
                for f in files
                if f.tier == tier
                and f.child is None
                and f.split_from is None
                and f.path != f"profile/{PERSONA.lower()}.md"
            ]
            victim = rng.choice(victims)
            files.remove(victim)
            names.used.discard(victim.path)
            slug = names.take("craft")
            files.append(TierFile(f"craft/{slug}.md", "craft", title_of(slug)))
    files.sort(key=lambda f: (SPINE_ORDER.index(f.tier), rng.random()))
    # keep each split child right after its parent
    ordered: list[TierFile] = []
    by_path = {f.path: f for f in files}
    for f in files:
        if f.split_from:
            continue
        ordered.append(f)
        if f.child:
            ordered.append(by_path[f.child])
    files = ordered
    # the persona's core profile file goes first
    core = [f for f in files if f.path == f"profile/{PERSONA.lower()}.md"]
    if core:
        files.remove(core[0])
        files.insert(0, core[0])
        core[0].title = f"{PERSONA} {EM} core"
    # sizes
    sizes = file_lengths(len(files))
    rng.shuffle(sizes)
    for f, size in zip(files, sizes):
        f.target_bytes = size
    # pinned: never on a split child; at least one project
    singles = [f for f in files if f.split_from is None]
    pinned = rng.sample([f for f in singles if f.tier == "projects"], scale)
    pinned += rng.sample([f for f in singles if f not in pinned], (PINNED - 1) * scale)
    for f in pinned:
        f.pinned = True
    # read_with inline lists
    paths = [f.path for f in files]
    for f in rng.sample(files, READ_WITH * scale):
        f.read_with = rng.sample([p for p in paths if p != f.path], rng.choice((1, 1, 2)))
    # protected markers
    marked = rng.sample(files, MARKER_FILES * scale)
    counts = {f.path: 1 for f in marked}
    for _ in range((MARKERS - MARKER_FILES) * scale):
        counts[rng.choice(marked).path] += 1
    prose = Prose(rng)
    for f in marked:
        for _ in range(counts[f.path]):
            kind = rng.random()
            if kind < 0.4:
                marker = "[NON-NEGOTIABLE]"
            elif kind < 0.65:
                marker = f"[NON-NEGOTIABLE {prose.date()}]"
            else:
                marker = f"[DIRECTIVE {prose.date()}]"
            f.markers.append(("heading" if rng.random() < 0.3 else "bullet", marker))
    # cross-references: "Continued in" lines count, the rest spread at random
    free = CROSS_REFERENCES * scale - len(parents)
    for _ in range(free):
        source = rng.choice(files)
        target = rng.choice(files)
        while target is source:
            target = rng.choice(files)
        source.xrefs.append((target.path, target.title, rng.choice(("link", "link", "tick"))))
    return files


def plan_entries(files: list[TierFile], scale: int, layout: str, seed: int) -> list[Entry]:
    rng = Random(f"{seed}:entries")
    entries: list[Entry] = []
    by_path = {f.path: f for f in files}
    for f in files:
        if f.split_from:
            continue
        group = [f] + ([by_path[f.child]] if f.child else [])
        entries.append(Entry(f.tier, group))
    wanted = SPINE_ENTRIES * scale
    while len(entries) > wanted:
        i = rng.randrange(len(entries) - 1)
        a, b = entries[i], entries[i + 1]
        if a.tier != b.tier or len(a.files) + len(b.files) > 3 or i == 0:
            continue  # the persona's core entry stays alone, at the top
        a.files += b.files
        del entries[i + 1]
    targets = entry_lengths(len(entries))
    # longer entries go to multi-pointer lines more often (their pointer groups are longer)
    rng.shuffle(targets)
    multi = sorted(range(len(entries)), key=lambda k: -len(entries[k].files) + rng.random() * 2.5)
    for k, target in zip(multi, sorted(targets, reverse=True)):
        entries[k].target = target
    # wrapped entries fill the line budget: 79 lines per scale unit in both layouts
    fixed = 4 + len(SPINE_ORDER) + (2 if layout == "migrated" else 0)
    wraps = max(0, SPINE_LINES * scale - fixed - len(entries))
    candidates = [e for e in entries if e.target > 300]
    for e in rng.sample(candidates, min(wraps, len(candidates))):
        e.wrapped = True
    return entries


# --------------------------------------------------------------------------------------------
# Rendering.
# --------------------------------------------------------------------------------------------
def pointer_group(files: list[TierFile]) -> str:
    return " + ".join(f"[{f.title}]({f.path})" for f in files)


def fill_hook(prose: Prose, lead: str, target: int, subject: str, pinned: bool) -> str:
    """A hook of clauses and filler words so that ``lead + hook`` is just under ``target`` bytes."""
    r = prose.r
    ending = " " + r.choice(WHEN).format(x=subject)
    parts = [f"{subject} {prose.phrase()}"]
    if pinned:
        parts.append("pinned: retention rules live here")
    budget = target - blen(lead) - blen(ending) - 1  # the final "."
    text = "; ".join(parts)
    misses = 0
    while misses < 8:
        candidate = text + "; " + prose.clause()
        if blen(candidate) <= budget:
            text = candidate
            misses = 0
        else:
            misses += 1
    words = list(FILLER) + list(NOUNS)
    r.shuffle(words)
    for word in sorted(words, key=len, reverse=True):
        if blen(text) + 1 + len(word) <= budget and r.random() < 0.5:
            text += " " + word
    for _ in range(3):  # close the last gap with the word that fits it best
        gap = budget - blen(text) - 1
        fitting = [w for w in words if len(w) <= gap]
        if not fitting:
            break
        text += " " + max(fitting, key=len)
    return text + "." + ending


def render_entry(entry: Entry, prose: Prose) -> list[str]:
    lead = f"- {pointer_group(entry.files)} {EM} "
    subject = entry.files[0].title.split(f" {EM} ")[0]
    hook = fill_hook(prose, lead, entry.target, subject, any(f.pinned for f in entry.files))
    line = lead + hook
    if not entry.wrapped:
        return [line]
    # wrap the hook (never the pointer group) at a word boundary near the middle of the hook
    start = len(lead)
    middle = start + (len(line) - start) // 2
    cut = line.rfind(" ", start + 1, middle + 1)
    if cut <= start:
        cut = line.find(" ", middle)
    if cut == -1:
        return [line]
    return [line[:cut], "  " + line[cut + 1 :]]


def render_spine(entries: list[Entry], layout: str, seed: int) -> str:
    prose = Prose(Random(f"{seed}:spine"))
    if layout == "migrated":
        head = [
            "# Distill Knowledge Index",
            "",
            (
                "<!-- Managed by aura-distill. Max 80 lines / 16 KB, 400 bytes per entry. "
                "Entry: - [Title](path.md) -- when to read this. last_updated: 2026-09-20 -->"
            ),
            "",
            (
                f"- [Catalog](CATALOG.md) {EM} complete inventory of every knowledge file incl. "
                "archived and evidence; not loaded at start; consult on any miss."
            ),
            "",
        ]
    else:
        head = [
            "# Distill Knowledge Index",
            "",
            (
                "<!-- Managed by aura-distill. Max 80 lines. Entry: - [Title](path.md) -- when to "
                "read this. last_updated: 2026-08-30 -->"
            ),
            "",
        ]
    lines = head
    for tier in SPINE_ORDER:
        lines.append(f"## {HEADING[tier]}")
        for entry in entries:
            if entry.tier == tier:
                lines += render_entry(entry, prose)
    return "\n".join(lines) + "\n"


class FileWriter:
    """Builds one knowledge file's text line by line, keeping a running byte count."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.size = 0

    def add(self, line: str) -> None:
        self.lines.append(line)
        self.size += blen(line) + 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def principle_block(p: Prose) -> list[str]:
    block = [f"- [PRINCIPLE] {p.sentence()}"]
    if p.r.random() < 0.8:
        n, m = p.r.randint(1, 9), p.r.randint(0, 3)
        block.append(f"  confidence: {p.r.choice(CONFIDENCE)} ({n} confirmations, {m} corrections)")
        block.append(f"  last_validated: {p.date()}")
    return block


def body_item(p: Prose) -> list[str]:
    r = p.r.random()
    if r < 0.30:
        return principle_block(p)
    if r < 0.52:
        return [f"- {p.sentence()}"]
    if r < 0.74:
        return [f"- {p.date()} {p.r.choice(OBSERVATION_KINDS)}: {lower_first(p.sentence()[:-1])}"]
    if r < 0.86:
        return [f"{p.sentence()} {p.sentence()}"]
    if r < 0.95:
        return [f"- [DECISION] {p.sentence()}"]
    return [f"- [UPDATED {p.date()}] {p.sentence()}"]


def marker_bullet(p: Prose, marker: str) -> list[str]:
    block = [f"- {marker} {p.sentence()}"]
    if p.r.random() < 0.6:
        block.append(f"  origin: directive ({PERSONA}, {p.date()})")
    if p.r.random() < 0.3:
        block.append(f"  Why: {p.sentence()}")
    return block


def xref_line(p: Prose, target: str, title: str, style: str) -> list[str]:
    label = title.split(f" {EM} ")[0].lower()
    if style == "link":
        if p.r.random() < 0.5:
            return [f"- {p.sentence()[:-1]}; see [{label}]({target})."]
        return [f"{p.sentence()} The {p.noun()} side is in [{label}]({target})."]
    if p.r.random() < 0.5:
        return [f"- {p.sentence()[:-1]} (details in `{target}`)."]
    return [f"{p.sentence()} The {p.phrase()} rules in `{target}` apply here too."]


def section_title(p: Prose, tier: str) -> str:
    n = p.r.randrange(5)
    if n == 0:
        return f"{p.adj().capitalize()} {p.nouns()}"
    if n == 1:
        return f"{p.tool()} {p.noun()} rules"
    if n == 2:
        return f"When the {p.noun()} {VERB_S3[p.verb()]}"
    if n == 3:
        return f"{VERB_ING[p.verb()].capitalize()} {p.nouns()}"
    return f"{p.noun().capitalize()} and {p.noun()} {p.r.choice(('budget', 'checklist', 'notes', 'pitfalls'))}"


def frontmatter(f: TierFile, p: Prose, extra: list[str] | None = None) -> list[str]:
    domain = f.tier if f.tier != "projects" else p.r.choice(("project", "projects"))
    scope = f"{f.title.split(f' {EM} ')[0]} {EM} {p.phrase()}, {p.phrase()} and {p.phrase()}"
    fm = [
        "---",
        f"domain: {domain}",
        f"scope: {scope}",
        f"last_updated: {p.date(date(2026, 3, 1), 190)}",
        f"staleness_threshold: {p.r.choice((90, 90, 90, 60, 120, 180)) if f.tier == 'projects' else 90}",
    ]
    if p.r.random() < 0.3:
        fm.append(f"last_validated: {p.date(date(2026, 4, 1), 160)}")
    if f.read_with:
        fm.append(f"read_with: [{', '.join(f.read_with)}]")
    if f.pinned:
        fm.append("lifecycle: pinned")
    if f.split_from:
        fm.append(f"split_from: {f.split_from}")
    fm += extra or []
    fm.append("---")
    return fm


def render_tier_file(f: TierFile, seed: int, evidence_entries: tuple[str, str, int] | None) -> str:
    p = Prose(Random(f"{seed}:file:{f.path}"))
    w = FileWriter()
    for line in frontmatter(f, p):
        w.add(line)
    w.add("")
    w.add(f"# {f.title}")
    w.add("")
    w.add(f"{p.sentence()} {p.sentence()}")
    w.add("")
    # required items: marker bullets and cross-references; marked headings go on sections
    required: list[list[str]] = [marker_bullet(p, m) for where, m in f.markers if where == "bullet"]
    required += [xref_line(p, t, title, style) for t, title, style in f.xrefs]
    p.r.shuffle(required)
    heading_markers = [m for where, m in f.markers if where == "heading"]
    tail: list[str] = []
    if evidence_entries is not None:
        first, last, count = evidence_entries
        tail.append(f"Evidence: {first} to {last} in `evidence/{f.path}` ({count} entries).")
    if f.child:
        tail.append(f"Continued in `{f.child}`.")
    tail_bytes = sum(blen(t) + 2 for t in tail)
    over = f.target_bytes > 6000
    estimate = max(2, round(f.target_bytes / 375))
    sections: list[list[tuple[list[str], bool]]] = []
    size = w.size + tail_bytes
    while True:
        left = max(1, estimate - len(sections))
        take = -(-len(required) // left) if required else 0
        items = [(item, True) for item in required[:take]]
        del required[:take]
        for _ in range(p.r.choice((2, 2, 3, 3, 3, 3, 3))):
            items.insert(p.r.randrange(len(items) + 1), (body_item(p), False))
        marker = heading_markers.pop() + " " if heading_markers else ""
        section = [([f"## {marker}{section_title(p, f.tier)}", ""], True)] + items + [([""], True)]
        sections.append(section)
        size += sum(blen(line) + 1 for block, _ in section for line in block)
        if required or heading_markers:
            continue
        if size >= f.target_bytes or (not over and size + 375 > f.target_bytes):
            break
    # an under-cap file must stay under the cap: drop plain items from the end until it fits
    if not over:
        for section in reversed(sections):
            for k in range(len(section) - 1, -1, -1):
                if size <= 5990:
                    break
                block, keep = section[k]
                if not keep:
                    size -= sum(blen(line) + 1 for line in block)
                    del section[k]
    for section in sections:
        for block, _ in section:
            for line in block:
                w.add(line)
    for line in tail:
        w.add(line)
        w.add("")
    w.lines.pop()  # no trailing blank line
    return w.text()


def render_evidence(path: str, rng_seed: str) -> tuple[str, str, str, int]:
    p = Prose(Random(rng_seed))
    count = p.r.randint(5, 40)
    dates = sorted(p.date(date(2026, 1, 10), 240) for _ in range(count))
    lines = ["---", f"evidence_for: {path}", "---", "## Evidence log", ""]
    for d in dates:
        kind = p.r.choice(OBSERVATION_KINDS)
        lines.append(f"- {d} {kind}: {lower_first(p.sentence()[:-1])}")
    return "\n".join(lines) + "\n", dates[0], dates[-1], count


def render_archived(path: str, tier: str, seed: int, recall: bool) -> tuple[str, str]:
    """An archived knowledge file (returns its text and its title)."""
    slug = path.rsplit("/", 1)[1][:-3]
    f = TierFile(path, tier, title_of(slug), target_bytes=0)
    p = Prose(Random(f"{seed}:archived:{path}"))
    extra = [f"recall_count: {p.r.randint(1, 7)}"] if recall else []
    lines = frontmatter(f, p, extra) + ["", f"# {f.title}", ""]
    for _ in range(p.r.randint(4, 12)):
        lines += [f"## {section_title(p, tier)}", ""]
        for _ in range(p.r.randint(1, 3)):
            lines += body_item(p)
        lines.append("")
    return "\n".join(lines[:-1]) + "\n", f.title


def render_flat_legacy(name: str, seed: int) -> str:
    p = Prose(Random(f"{seed}:legacy:{name}"))
    origin = f"projects/{name.removeprefix('old-')}"
    lines = [
        "---",
        f"archived_from: {origin}",
        f"archived_on: {p.date(date(2025, 11, 1), 100)}",
        "reason: rewritten by an early compaction",
        f"recall_count: {p.r.randint(0, 5)}",
        "---",
        "",
        f"# {title_of(name[:-3])} (archived)",
        "",
    ]
    for _ in range(p.r.randint(3, 8)):
        lines += body_item(p)
    return "\n".join(lines) + "\n"


def sha256_hex(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


# --------------------------------------------------------------------------------------------
# The store.
# --------------------------------------------------------------------------------------------
def build_contents(scale: int, layout: str, seed: int) -> dict[str, bytes]:
    """Every file of the store except CATALOG.md, as raw bytes keyed by store-relative path."""
    files = plan_tier_files(scale, seed)
    entries = plan_entries(files, scale, layout, seed)
    rng = Random(f"{seed}:store")
    contents: dict[str, bytes] = {}
    migrated = layout == "migrated"
    names = Names(Random(f"{seed}:archive-names"))
    names.used = {f.path for f in files}

    # archives: nested (archive/<tier>/...) and flat legacy (archive/<name>.md)
    nested: list[tuple[str, str, str]] = []  # (tier path X, archive path, title)
    for k in range(ARCHIVES_NESTED * scale):
        tier = NESTED_ARCHIVE_TIERS[k % len(NESTED_ARCHIVE_TIERS)]
        slug = names.take(tier)
        x = f"{tier}/{slug}.md"
        text, title = render_archived(x, tier, seed, recall=k % 4 == 1)  # a 1.1 client bumped it
        contents["archive/" + x] = text.encode("utf-8")
        nested.append((x, "archive/" + x, title))
    for k in range(ARCHIVES_FLAT * scale):
        name = f"old-{names.take('projects')}.md"
        contents["archive/" + name] = render_flat_legacy(name, seed).encode("utf-8")

    # evidence twins (1.2 only)
    twin_info: dict[str, tuple[str, str, int]] = {}
    if migrated:
        for f in rng.sample(files, EVIDENCE_ACTIVE * scale):
            text, first, last, count = render_evidence(f.path, f"{seed}:evidence:{f.path}")
            contents["evidence/" + f.path] = text.encode("utf-8")
            twin_info[f.path] = (first, last, count)
        for x, _, _ in rng.sample(nested, EVIDENCE_ARCHIVED * scale):
            text, *_ = render_evidence(x, f"{seed}:evidence:{x}")
            contents["evidence/" + x] = text.encode("utf-8")

    for f in files:
        contents[f.path] = render_tier_file(f, seed, twin_info.get(f.path)).encode("utf-8")
    contents["SPINE.md"] = render_spine(entries, layout, seed).encode("utf-8")

    if migrated:
        prose = Prose(Random(f"{seed}:ledger"))
        start = datetime(2026, 6, 1, 8, 0, 0, tzinfo=timezone.utc)
        span = (DEFAULT_NOW - timedelta(days=2) - start).total_seconds()
        stamps = sorted(start + timedelta(seconds=prose.r.randrange(int(span))) for _ in nested)
        lines = [
            "# Archive ledger",
            "",
            (
                "<!-- Append-only. One line per archive move or restore, written BEFORE the move. "
                "Synced with the knowledge set. Never rewrite past lines. -->"
            ),
            "",
        ]
        for k, ((x, a, title), moment) in enumerate(zip(nested, stamps)):
            raw = contents[a]
            norm = _sha256_norm(raw)
            lead = f"- [{title}]({x}) {EM} "
            entry = lead + fill_hook(prose, lead, prose.r.randint(180, 460), title, False)
            if k == 0:
                entry = entry.replace(
                    "; ", " \\| ", 1
                )  # a literal pipe, escaped as the ledger requires
            stamp = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
            lines.append(
                f"- {stamp} archive | from: {x} | to: {a} | sha256: {sha256_hex(raw)} | sha256-norm: {norm}"
                f" | reason: {prose.r.choice(REASONS)} | spine-entry: {entry}"
            )
        contents["archive/LEDGER.md"] = ("\n".join(lines) + "\n").encode("utf-8")
    return contents


def _sha256_norm(raw: bytes) -> str:
    """sha256 with the frontmatter ``recall_count:`` line removed; distilld's when importable."""
    try:
        from distilld.store.text import sha256_norm_hex
    except ImportError:  # the generator stays usable without distilld; same algorithm as 1.7
        records = raw.split(b"\n")
        if records[-1] == b"":
            records.pop()
        out, fm = [], False
        for number, record in enumerate(records, 1):
            fence = record in (b"---", b"---\r")
            if number == 1 and fence:
                fm = True
            elif fm and fence:
                fm = False
            elif fm and record.startswith(b"recall_count:"):
                continue
            out += [record, b"\n"]
        return hashlib.sha256(b"".join(out)).hexdigest()
    return sha256_norm_hex(raw)


def generate_store(
    root: Path, scale: int = 1, layout: str = "migrated", seed: int = 7, now: datetime = DEFAULT_NOW
) -> dict[str, Any]:
    """Write a synthetic store into ``root`` (which must be absent or empty); return its shape.

    ``now`` (timezone-aware) stamps the catalog of the migrated layout; the default is fixed so
    that the bytes are reproducible.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    if scale < 1:
        raise ValueError("scale must be a positive integer")
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        raise ValueError(f"{root} is not empty; give an empty or new directory")
    contents = build_contents(scale, layout, seed)
    for relative, raw in contents.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)
    if layout == "migrated":
        from distilld.store.catalog import render_catalog
        from distilld.store.snapshot import take_snapshot

        catalog = render_catalog(take_snapshot(root), now).encode("utf-8")
        (root / "CATALOG.md").write_bytes(catalog)
        contents["CATALOG.md"] = catalog
    shape = measure(contents)
    shape.update({"scale": scale, "layout": layout, "seed": seed})
    return shape


# --------------------------------------------------------------------------------------------
# Measuring (independent of distilld, following STORE-FORMAT.md 1.3-1.4).
# --------------------------------------------------------------------------------------------
def spine_entries(text: str) -> list[str]:
    lines = text.replace("\r", "").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    entries: list[str] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("- ["):
            i += 1
            continue
        parts = [lines[i]]
        i += 1
        while i < len(lines) and lines[i].strip() and not lines[i].startswith(("#", "- ", "<!--")):
            parts.append(lines[i].lstrip())
            i += 1
        entries.append(" ".join(parts))
    return entries


def split_frontmatter(text: str) -> tuple[list[str], list[str]]:
    lines = text.split("\n")
    if lines and lines[0] == "---":
        for k in range(1, len(lines)):
            if lines[k] == "---":
                return lines[1:k], lines[k + 1 :]
    return [], lines


def measure(contents: dict[str, bytes]) -> dict[str, Any]:
    tiers = SPINE_ORDER
    tier_paths = sorted(p for p in contents if p.split("/", 1)[0] in tiers and "/archive/" not in p)
    archives = sorted(
        p for p in contents if p.startswith("archive/") and not p.endswith("/LEDGER.md")
    )
    spine = contents.get("SPINE.md", b"").decode("utf-8")
    entries = spine_entries(spine)
    entry_bytes = [blen(e) for e in entries]
    links = [
        p for line in spine.split("\n") if line.startswith("- [") for p in POINTER_RE.findall(line)
    ]
    sizes, sections, line_counts = [], [], []
    marker_files = markers = marker_headings = observations = confidence = xrefs = 0
    pinned = split_children = read_with = 0
    for path in tier_paths:
        raw = contents[path]
        text = raw.decode("utf-8")
        fm, body = split_frontmatter(text)
        sizes.append(len(raw))
        line_counts.append(text.count("\n") + (0 if text.endswith("\n") else 1))
        sections.append(sum(1 for line in body if line.startswith("## ")))
        found = PROTECTED_RE.findall(text)
        markers += len(found)
        marker_files += bool(found)
        marker_headings += sum(
            1 for line in body if line.startswith("## ") and PROTECTED_RE.search(line)
        )
        observations += sum(1 for line in body if re.match(r"- \d{4}-\d{2}-\d{2} [a-z]+: ", line))
        confidence += sum(1 for line in body if line.startswith("  confidence: "))
        body_text = "\n".join(body)
        xrefs += len(XREF_LINK_RE.findall(body_text)) + len(XREF_TICK_RE.findall(body_text))
        pinned += "lifecycle: pinned" in fm
        split_children += any(line.startswith("split_from:") for line in fm)
        read_with += any(line.startswith("read_with:") for line in fm)
    pointed = set(links)
    shape: dict[str, Any] = {
        "files_total": len(contents),
        "bytes_total": sum(len(v) for v in contents.values()),
        "tier_files": len(tier_paths),
        "tier_files_by_dir": {
            t: sum(1 for p in tier_paths if p.startswith(t + "/")) for t in tiers
        },
        "tier_files_over_6000_bytes": sum(1 for s in sizes if s > 6000),
        "tier_files_over_60_lines": sum(1 for n in line_counts if n > 60),
        "tier_bytes_total": sum(sizes),
        "tier_bytes_median": int(statistics.median(sizes)) if sizes else 0,
        "tier_bytes_max": max(sizes, default=0),
        "sections_median": statistics.median(sections) if sections else 0,
        "sections_max": max(sections, default=0),
        "spine_bytes": len(contents.get("SPINE.md", b"")),
        "spine_lines": spine.count("\n") + (0 if spine.endswith("\n") or not spine else 1),
        "spine_entries": len(entries),
        "spine_entries_over_400": sum(1 for b in entry_bytes if b > 400),
        "spine_entry_median_bytes": statistics.median(entry_bytes) if entry_bytes else 0,
        "spine_entry_max_bytes": max(entry_bytes, default=0),
        "spine_links": len(links),
        "spine_multi_pointer_entries": sum(1 for e in entries if e.count("](") > 1),
        "spine_wrapped_entries": sum(1 for e, raw in zip(entries, _first_lines(spine)) if e != raw),
        "spine_has_catalog_line": any(
            line.startswith("- [Catalog](CATALOG.md)") for line in spine.split("\n")
        ),
        "tier_files_without_pointer": sum(1 for p in tier_paths if p not in pointed),
        "marker_files": marker_files,
        "markers": markers,
        "marker_headings": marker_headings,
        "observation_bullets": observations,
        "confidence_lines": confidence,
        "cross_references": xrefs,
        "pinned": pinned,
        "split_children": split_children,
        "read_with_files": read_with,
        "archives_total": len(archives),
        "archives_nested": sum(
            1
            for a in archives
            if "/" in a[len("archive/") :] and not a.startswith("archive/legacy/")
        ),
        "archives_flat": sum(1 for a in archives if "/" not in a[len("archive/") :]),
        "evidence_twins": sum(1 for p in contents if p.startswith("evidence/")),
        "ledger_events": sum(
            1
            for line in contents.get("archive/LEDGER.md", b"").decode().split("\n")
            if line.startswith("- ")
        ),
        "catalog_bytes": len(contents.get("CATALOG.md", b"")),
    }
    return shape


def _first_lines(spine: str) -> list[str]:
    return [line for line in spine.replace("\r", "").split("\n") if line.startswith("- [")]


TARGETS_AT_1X = {
    "spine_bytes": "~51,000",
    "spine_lines": 79,
    "spine_entries": 65,
    "spine_entries_over_400": 44,
    "spine_entry_median_bytes": "~553",
    "spine_entry_max_bytes": "~3,200",
    "spine_links": 95,
    "tier_files": 95,
    "tier_files_over_6000_bytes": 56,
    "sections_median": "~18",
    "marker_files": 49,
    "markers": 112,
    "archives_total": 20,
    "archives_nested": 18,
    "archives_flat": 2,
    "cross_references": 529,
}


def check_summary(root: Path) -> dict[str, Any]:
    """distilld's C1-C3 over the store: PASS/FAIL per group and the failure codes counted."""
    from collections import Counter

    from distilld.policy import load_policy
    from distilld.store.invariants import check_store
    from distilld.store.snapshot import take_snapshot

    found = check_store(take_snapshot(root), load_policy().limits)
    summary: dict[str, Any] = {}
    for group in ("C1", "C2", "C3"):
        fails = [f for f in found if f.group == group and f.severity == "fail"]
        notes = [f for f in found if f.group == group and f.severity == "note"]
        summary[group] = {
            "status": "FAIL" if fails else "PASS",
            "fail_codes": dict(Counter(f.code for f in fails)),
            "notes": dict(Counter(f.code for f in notes)),
            "first_failures": [f.message for f in fails[:3]],
        }
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--layout", choices=LAYOUTS, default="migrated")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True, help="an empty or new directory")
    parser.add_argument(
        "--check", action="store_true", help="also run distilld's C1-C3 and summarise"
    )
    parser.add_argument("--json", action="store_true", help="print the shape as JSON")
    args = parser.parse_args(argv)
    try:
        shape = generate_store(args.out, args.scale, args.layout, args.seed)
    except ValueError as error:
        print(f"storegen: {error}", file=sys.stderr)
        return 2
    if args.check:
        shape["check"] = check_summary(args.out)
    if args.json:
        print(json.dumps(shape, indent=2))
        return 0
    print(
        f"store written to {args.out} (scale {args.scale}, layout {args.layout}, seed {args.seed})"
    )
    for key, value in shape.items():
        if key == "check":
            continue
        target = TARGETS_AT_1X.get(key) if args.scale == 1 else None
        suffix = f"   (target at 1x: {target})" if target is not None else ""
        print(f"  {key:30} {value}{suffix}")
    for group, result in shape.get("check", {}).items():
        print(
            f"  {group} {result['status']}  fails={result['fail_codes']}  notes={result['notes']}"
        )
        for message in result["first_failures"]:
            print(f"      - {message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
