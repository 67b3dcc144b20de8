"""A second Store-B-shaped generator, written from issue 24's description and STORE-FORMAT.md only.

Its author had not read the migration or compaction planner (daemon/engine/passes/) when it was
written, so the stores it makes are not tuned to what the planner does well. They are pre-1.2 stores
(no CATALOG.md) shaped the way agents leave them:

- a SPINE of about 51 KB (3.2x the 16 KB budget), long entries (many over the 400 B entry cap);
- many tier files, most written as one long `## Principles` section, some over the file caps;
- markers ([NON-NEGOTIABLE], dated [DIRECTIVE ...], [IMPORTANT], [DEPRECATED]) in files and hooks;
- several pointers on one entry joined by ", ", " / " or "; " as well as " + ";
- CRLF in some files (and in the SPINE of some seeds), odd file names (dots, underscores, capitals,
  digits, a name ending in -2 that is no split child);
- dated evidence lines inside some principle files.

`grow_store` then grows a (migrated) store the way agents do: long sections appended to files, new
files with long SPINE entries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

TIERS = ("craft", "ops", "profile", "projects", "feedback")
TIER_HEADINGS = {"craft": "Craft", "ops": "Ops", "profile": "Profile", "projects": "Projects", "feedback": "Feedback"}
TIER_SHARE = {"craft": 0.38, "ops": 0.24, "profile": 0.05, "projects": 0.23, "feedback": 0.10}

SUBJECTS = (
    "csv imports", "csv exports", "retry budgets", "flame graphs", "schema drift", "webhook relay",
    "canary deploys", "cache warming", "token refresh", "queue backpressure", "log sampling",
    "feature flags", "pdf rendering", "search ranking", "invoice sync", "timezone math",
    "batch sizing", "connection pools", "secret rotation", "disk quotas", "rate limits",
    "blue green", "pager rotation", "release notes", "code review", "test fixtures", "mock servers",
    "load shedding", "dns failover", "tls certificates", "image resizing", "thumbnail cache",
    "email bounces", "push fallback", "audit trail", "data retention", "backfill jobs",
    "cron drift", "heap dumps", "goroutine leaks", "sql migrations", "index bloat", "vacuum tuning",
    "cold starts", "lambda layers", "terraform state", "helm charts", "pod eviction",
    "node draining", "ssh bastion", "vpn split", "sso login", "oauth scopes", "api versioning",
    "graphql depth", "grpc deadlines", "protobuf evolution", "json streaming", "unicode names",
    "locale fallback", "currency rounding", "tax tables", "pricing tiers", "usage metering",
    "sla reports", "incident reviews", "on-call handoff", "runbook style", "dashboard hygiene",
    "alert fatigue", "trace sampling", "metric cardinality", "budget alerts", "cost tags",
)
QUALIFIERS = (
    "performance", "pitfalls", "checklist", "playbook", "notes", "gotchas", "rules", "design",
    "history", "limits", "defaults", "recovery", "tuning", "migration", "review", "style",
)
PROJECT_NAMES = (
    "Atlas", "Beacon", "Comet", "Delta", "Ember", "Fjord", "Garnet", "Harbor", "Iris", "Juniper",
    "Kestrel", "Lumen", "Magpie", "Nimbus", "Onyx", "Pylon", "Quartz", "Rook", "Sable", "Tundra",
    "Umber", "Vesper", "Wren", "Xylo", "Yarrow", "Zephyr", "Aster", "Birch", "Cobalt", "Dune",
)
PEOPLE = ("Noor", "Ravi", "Mina", "Tomas", "Ilse", "Kofi")
VERBS = (
    "prefer", "avoid", "measure", "pin", "batch", "retry", "log", "cap", "split", "stream", "cache",
    "validate", "reject", "rotate", "drain", "warm", "sample", "throttle", "version", "document",
)
NOUNS = (
    "rows", "requests", "workers", "shards", "tokens", "headers", "payloads", "jobs", "queues",
    "caches", "buckets", "tables", "indexes", "replicas", "pods", "nodes", "alerts", "dashboards",
    "traces", "budgets", "vendors", "plugins", "clients", "tenants", "regions", "releases",
)
SYLLABLES = ("ka", "lo", "mir", "zen", "tu", "bra", "vex", "qui", "dor", "pel", "syn", "rho", "gal", "fen", "ost", "ul")
MARKERS_PROTECTED = ("[NON-NEGOTIABLE]", "[NON-NEGOTIABLE 2026-05-02]", "[DIRECTIVE]", "[DIRECTIVE 2026-07-19]")
MARKERS_RETRIEVAL = ("[IMPORTANT]", "[DEPRECATED]", "[UPDATED 2026-08-01]", "[CORRECTED]")
JOINERS = (" + ", ", ", " / ", "; ")


@dataclass
class BlindFile:
    path: str
    title: str
    subject: str
    identifiers: list[str] = field(default_factory=list)
    rare_words: list[str] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)
    crlf: bool = False


@dataclass
class BlindStore:
    root: Path
    files: list[BlindFile]
    spine_crlf: bool


def _gerund(verb: str) -> str:
    if verb.endswith("e") and not verb.endswith("ee"):
        return verb[:-1] + "ing"
    if verb in ("pin", "log", "cap", "split"):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _rare_word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(3, 4)))


def _identifier(rng: random.Random, subject: str) -> str:
    stem = subject.replace(" ", "_").replace("-", "_")
    shape = rng.randrange(5)
    if shape == 0:
        return f"{stem}_{rng.choice(NOUNS)}()"
    if shape == 1:
        return f"--{subject.split()[0]}-{rng.choice(('max', 'min', 'limit', 'ttl'))}"
    if shape == 2:
        return f"ERR_{stem.upper()}_{rng.randint(100, 599)}"
    if shape == 3:
        return f"{stem.split('_')[0].upper()}_{rng.choice(('TIMEOUT', 'BATCH', 'RETRIES', 'WINDOW'))}"
    return f"{stem}.{rng.choice(('yaml', 'toml', 'sql', 'py'))}"


def _odd_name(rng: random.Random, subject: str, qualifier: str, used: set[str]) -> str:
    base = f"{subject.replace(' ', '-')}-{qualifier}"
    shape = rng.randrange(10)
    if shape == 0:
        base = base.replace("-", "_")
    elif shape == 1:
        base = base.upper()[:1] + base[1:]
    elif shape == 2:
        base = f"{base}.v{rng.randint(1, 3)}"
    elif shape == 3:
        base = f"{base}-2"  # looks like a split child, is not one
    elif shape == 4:
        base = f"{rng.randint(2019, 2026)}-{base}"
    name = base
    n = 1
    while name in used:
        n += 1
        name = f"{base}{n}"
    used.add(name)
    return name


def _bullet(rng: random.Random, f: BlindFile, marker: str | None) -> list[str]:
    ident = rng.choice(f.identifiers)
    rare = rng.choice(f.rare_words)
    words = f.subject.split()
    text = (
        f"{rng.choice(VERBS).capitalize()} {rng.choice(NOUNS)} for {' '.join(words)} when `{ident}` "
        f"reports {rng.randint(2, 900)} {rng.choice(NOUNS)}; the {rare} case needs "
        f"{rng.choice(VERBS)} before {_gerund(rng.choice(VERBS))} {rng.choice(NOUNS)}"
    )
    if rng.random() < 0.3:
        text += f' ("{rng.choice(VERBS)} the {rare} {rng.choice(NOUNS)}, not the {rng.choice(NOUNS)}")'
    if rng.random() < 0.25:
        text += f" (validated {rng.randint(2, 20)}x)"
    lead = "- [PRINCIPLE] " if marker is None else f"- {marker} "
    lines = [lead + text + "."]
    lines.append(f"  confidence: {rng.choice(('provisional', 'validated', 'hardened'))} "
                 f"({rng.randint(1, 12)} confirmations, {rng.randint(0, 3)} corrections)")
    if rng.random() < 0.4:
        lines.append(f"  last_validated: 2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}")
    return lines


def _file_text(rng: random.Random, f: BlindFile, tier: str, size: str) -> str:
    lines = [
        "---",
        f"domain: {'project' if tier == 'projects' else tier}",
        f"scope: {f.title} — {rng.choice(VERBS)} {rng.choice(NOUNS)} and {rng.choice(NOUNS)}",
        f"last_updated: 2026-0{rng.randint(1, 9)}-2{rng.randint(0, 8)}",
        "staleness_threshold: 90",
        "---",
        "",
        f"# {f.title}",
        "",
        "## Principles",
        "",
    ]
    n_bullets = {"small": rng.randint(3, 6), "medium": rng.randint(8, 14), "large": rng.randint(20, 34)}[size]
    marker_slots = set(rng.sample(range(n_bullets), k=min(len(f.markers), n_bullets)))
    markers = iter(f.markers)
    for i in range(n_bullets):
        lines.extend(_bullet(rng, f, next(markers) if i in marker_slots else None))
    if rng.random() < 0.3:
        lines.append("")
        lines.append(f"The {rng.choice(f.rare_words)} rule of thumb: `{rng.choice(f.identifiers)}` stays "
                     f"under {rng.randint(10, 99)} ms.")
    if rng.random() < 0.35:  # evidence lines an older client left in the principle file
        lines.append("")
        for _ in range(rng.randint(2, 5)):
            lines.append(f"- 2026-0{rng.randint(1, 8)}-1{rng.randint(0, 9)} confirm: {rng.choice(VERBS)} "
                         f"{rng.choice(NOUNS)} held for {f.subject}")
    text = "\n".join(lines) + "\n"
    return text.replace("\n", "\r\n") if f.crlf else text


def _hook(rng: random.Random, f: BlindFile, long: bool) -> str:
    parts = [f"{f.subject.capitalize()} {rng.choice(QUALIFIERS)}: {rng.choice(VERBS)} {rng.choice(NOUNS)}"]
    parts.append(f"`{f.identifiers[0]}` {rng.choice(('limits', 'controls', 'names', 'guards'))} "
                 f"{rng.choice(NOUNS)}")
    if rng.random() < 0.5:
        parts.append(f"{rng.randint(2, 40)} closed this month")
    if rng.random() < 0.5:
        parts.append(f"\"{rng.choice(VERBS)} {rng.choice(NOUNS)}, that is the pattern\"")
    for m in f.markers:
        if m.startswith(("[NON-NEGOTIABLE", "[DIRECTIVE")) or rng.random() < 0.5:
            parts.append(f"{rng.choice(VERBS)} {rng.choice(NOUNS)} {m}")
    if long:
        for _ in range(rng.randint(5, 11)):
            parts.append(f"{rng.choice(VERBS)} {rng.choice(NOUNS)} over {rng.choice(NOUNS)} "
                         f"({rng.choice(f.rare_words)}, {rng.randint(2, 99)} {rng.choice(NOUNS)})")
    body = "; ".join(parts)
    trigger = rng.choice((
        f"Read when {_gerund(rng.choice(VERBS))} {rng.choice(NOUNS)} for {f.subject}.",
        f"Read before touching {f.subject} or `{f.identifiers[-1]}`.",
        "Read at session start.",
        f"Read when working in the {f.subject.split()[0]} code.",
    ))
    return f"{body}. {trigger}"


def make_store(root: Path, seed: int, scale: float = 1.0, thin: bool = False) -> BlindStore:
    """Write a pre-1.2 Store-B-shaped store under root; return what was put in it."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    n_files = max(6, int((12 if thin else 90) * scale))
    used: set[str] = set()
    files_by_tier: dict[str, list[BlindFile]] = {t: [] for t in TIERS}
    for i in range(n_files):
        tier = rng.choices(TIERS, weights=[TIER_SHARE[t] for t in TIERS])[0]
        if tier == "projects":
            subject = f"{rng.choice(PROJECT_NAMES).lower()} {rng.choice(SUBJECTS).split()[0]}"
        elif tier == "profile":
            subject = f"{rng.choice(PEOPLE).lower()} {rng.choice(('habits', 'preferences', 'context'))}"
        else:
            subject = rng.choice(SUBJECTS)
        qualifier = rng.choice(QUALIFIERS)
        name = _odd_name(rng, subject, qualifier, used)
        f = BlindFile(
            path=f"{tier}/{name}.md",
            title=f"{subject.title()} {qualifier}",
            subject=subject,
            identifiers=[_identifier(rng, subject) for _ in range(rng.randint(2, 5))],
            rare_words=[_rare_word(rng) for _ in range(rng.randint(2, 5))],
            crlf=rng.random() < 0.15,
        )
        if rng.random() < 0.12:
            f.markers.append(rng.choice(MARKERS_PROTECTED))
        if rng.random() < 0.15:
            f.markers.append(rng.choice(MARKERS_RETRIEVAL))
        size = rng.choices(("small", "medium", "large"), weights=(3, 5, 2))[0]
        target = root / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_file_text(rng, f, tier, size).encode())
        files_by_tier[tier].append(f)
    spine_crlf = rng.random() < 0.3
    (root / "SPINE.md").write_bytes(_spine_text(rng, files_by_tier, spine_crlf, thin).encode())
    return BlindStore(root, [f for t in TIERS for f in files_by_tier[t]], spine_crlf)


def _spine_text(rng: random.Random, files_by_tier: dict[str, list[BlindFile]], crlf: bool, thin: bool) -> str:
    lines = [
        "# Distill Knowledge Index",
        "",
        "<!-- Managed by aura-distill. Max 80 lines. Entry: - [Title](path.md) -- when to read this. "
        "last_updated: 2026-08-30 -->",
        "",
    ]
    for tier in TIERS:
        files = files_by_tier[tier]
        if not files:
            continue
        lines.append(f"## {TIER_HEADINGS[tier]}")
        i = 0
        while i < len(files):
            group = files[i:i + (rng.choice((2, 3)) if rng.random() < 0.18 else 1)]
            i += len(group)
            joiner = rng.choice(JOINERS)
            pointers = joiner.join(f"[{f.title}]({f.path})" for f in group)
            hook = " ".join(_hook(rng, f, long=not thin and rng.random() < 0.85) for f in group)
            dash = "—" if rng.random() < 0.85 else "--"
            entry = f"- {pointers} {dash} {hook}"
            if rng.random() < 0.1 and len(entry) > 200:  # a wrapped continuation line
                cut = entry.rfind(" ", 0, len(entry) // 2)
                entry = entry[:cut] + "\n  " + entry[cut + 1:]
            lines.append(entry)
        lines.append("")
    text = "\n".join(lines)
    return text.replace("\n", "\r\n") if crlf else text


def grow_store(root: Path, seed: int, new_files: int = 12, appended_files: int = 25) -> list[str]:
    """Grow a store as agents do: long sections on existing files, new files with long entries.

    Returns the paths written. The SPINE is appended to (new entries under their tier heading or at
    the end); existing entries are left as they are.
    """
    rng = random.Random(seed * 7919 + 1)
    spine_path = root / "SPINE.md"
    spine = spine_path.read_bytes().decode()
    crlf = "\r\n" in spine
    existing = sorted(p.relative_to(root).as_posix() for t in TIERS for p in (root / t).rglob("*.md"))
    written: list[str] = []
    for rel in rng.sample(existing, k=min(appended_files, len(existing))):
        p = root / rel
        raw = p.read_bytes().decode()
        nl = "\r\n" if "\r\n" in raw else "\n"
        subject = Path(rel).stem.replace("-", " ").replace("_", " ")
        f = BlindFile(rel, subject.title(), subject, [_identifier(rng, subject)], [_rare_word(rng)])
        add = ["", f"## {rng.choice(('Learned since', 'More principles', 'Session notes'))}", ""]
        for _ in range(rng.randint(2, 5)):
            add.extend(_bullet(rng, f, None))
        p.write_bytes((raw.rstrip("\r\n") + nl + nl.join(add) + nl).encode())
        written.append(rel)
    used = {Path(r).stem for r in existing}
    new_lines: list[str] = []
    for _ in range(new_files):
        tier = rng.choice(("craft", "ops", "projects"))
        subject = rng.choice(SUBJECTS)
        qualifier = rng.choice(QUALIFIERS)
        name = _odd_name(rng, subject, qualifier, used)
        f = BlindFile(f"{tier}/{name}.md", f"{subject.title()} {qualifier}", subject,
                      [_identifier(rng, subject) for _ in range(3)], [_rare_word(rng) for _ in range(3)])
        if rng.random() < 0.2:
            f.markers.append(rng.choice(MARKERS_PROTECTED))
        (root / tier).mkdir(exist_ok=True)
        (root / f.path).write_bytes(_file_text(rng, f, tier, rng.choice(("medium", "large"))).encode())
        new_lines.append(f"- [{f.title}]({f.path}) — {_hook(rng, f, long=True)}")
        written.append(f.path)
    nl = "\r\n" if crlf else "\n"
    spine_path.write_bytes((spine.rstrip("\r\n") + nl + nl.join(new_lines) + nl).encode())
    return written
