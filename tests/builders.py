"""Small builders for fixture stores in temporary directories.

The persona is Rowan, a data engineer with projects Kestrel, Lumen, Osprey and Marlin. Every
store is built from scratch in a test's tmp_path; nothing touches a real store.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

from distilld.store.catalog import render_catalog
from distilld.store.paths import TIERS
from distilld.store.snapshot import take_snapshot
from distilld.store.text import sha256_hex, sha256_norm_hex

FIXED_NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
EM = "\u2014"


class StoreBuilder:
    """Write store files as raw bytes; every method returns self for chaining."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def path(self, relative: str) -> Path:
        return self.root / relative

    def write(self, relative: str, content: str | bytes) -> "StoreBuilder":
        target = self.root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return self

    def read(self, relative: str) -> bytes:
        return (self.root / relative).read_bytes()

    def remove(self, relative: str) -> "StoreBuilder":
        (self.root / relative).unlink()
        return self

    def tier(self, relative: str, body: str, **frontmatter: str) -> "StoreBuilder":
        """A tier file with the given frontmatter keys (in order) and body."""
        fm = "".join(f"{key}: {value}\n" for key, value in frontmatter.items())
        text = f"---\n{fm}---\n\n{body}" if frontmatter else body
        return self.write(relative, text)

    def spine(self, entries: list[str], *, catalog_line: bool = True, header: str | None = None) -> "StoreBuilder":
        lines = [header or "# Distill Knowledge Index", "", "<!-- Managed by aura-distill. -->", ""]
        if catalog_line:
            lines.append(f"- [Catalog](CATALOG.md) {EM} complete inventory; not loaded at start.")
            lines.append("")
        lines += entries
        return self.write("SPINE.md", "\n".join(lines) + "\n")

    def ledger(self, lines: list[str]) -> "StoreBuilder":
        head = "# Archive ledger\n\n<!-- Append-only. -->\n\n"
        return self.write("archive/LEDGER.md", head + "".join(line + "\n" for line in lines))

    def append_ledger(self, line: str) -> "StoreBuilder":
        with open(self.root / "archive/LEDGER.md", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        return self

    def archive_line(self, stamp: str, tier_path: str, spine_entry: str, reason: str = "past threshold") -> str:
        """A well-formed ledger archive line for a file already moved to archive/<tier_path>."""
        raw = self.read("archive/" + tier_path)
        return (
            f"- {stamp} archive | from: {tier_path} | to: archive/{tier_path} | sha256: {sha256_hex(raw)}"
            f" | sha256-norm: {sha256_norm_hex(raw)} | reason: {reason} | spine-entry: {spine_entry}"
        )

    def rebuild_catalog(self, now: datetime = FIXED_NOW) -> "StoreBuilder":
        text = render_catalog(take_snapshot(self.root), now)
        return self.write("CATALOG.md", text)


KESTREL_ENTRY = (
    f"- [Kestrel](projects/kestrel.md) {EM} Kestrel ingest pipeline (Kafka to Parquet, schema registry); "
    "Read when working in the kestrel repo."
)
MARLIN_ENTRY = (
    f"- [Marlin](projects/marlin.md) {EM} Marlin reporting backfill, finished in spring. "
    "Read when asked about the old reports."
)


def healthy_store(root: Path) -> StoreBuilder:
    """A migrated (1.2) store that passes C1-C3: every kind of file, every optional field."""
    b = StoreBuilder(root)
    b.tier(
        "profile/rowan.md",
        "# Who Rowan is\n\n## Working style\n\n- Prefers short answers with the command first.\n"
        "  confidence: validated (4 confirmations, 0 corrections)\n  last_validated: 2026-10-02\n",
        domain="profile", scope="Who Rowan is and how they work", last_updated="2026-10-01",
    )
    b.tier(
        "craft/testing.md",
        "# Testing\n\n## Principles\n\n- [NON-NEGOTIABLE] Real files in temporary folders, never mocks of the disk.\n"
        "  origin: directive (Rowan, 2026-03-04)\n- [PRINCIPLE] A failing test comes before the fix.\n\n"
        "Continued in `craft/testing-2.md`.\n",
        domain="craft", scope="Testing discipline for Rowan's pipelines", last_updated="2026-09-20",
    )
    b.tier(
        "craft/testing-2.md",
        "## [DIRECTIVE 2026-07-20] Fixtures\n\nGeneric personas only.\nNo production data.\n",
        domain="craft", scope="Testing discipline (continued)", last_updated="2026-09-20",
        split_from="craft/testing.md",
    )
    b.tier(
        "ops/deploy.md",
        "# Deploy\n\n- Canary first, then the rest after a 30 minute soak.\n",
        domain="ops", scope="Deploy procedure | canary and soak", last_updated="2026-08-25",
        read_with="[craft/testing.md]",
    )
    b.tier(
        "projects/kestrel.md",
        "# Kestrel\n\n- Schema registry is the source of truth for topics.\n",
        domain="project", scope="Kestrel ingest pipeline", last_updated="2026-11-02",
    )
    b.tier(
        "projects/osprey.md",
        "# Osprey\n\n- Legal hold: keep every export for seven years.\n",
        domain="project", scope="Osprey exports under legal hold", last_updated="2026-02-01",
        lifecycle="pinned",
    )
    b.tier(
        "feedback/preferences.md",
        "# Preferences\n\n- No emoji in commit messages.\n",
        domain="feedback", scope="Output preferences", oversize="one table that cannot be split",
    )
    b.write(
        "evidence/craft/testing.md",
        "---\nevidence_for: craft/testing.md\n---\n## Evidence log\n\n"
        "- 2026-04-18 directive: real files only (recorded as NON-NEGOTIABLE)\n"
        "- 2026-05-02 confirm: a temp-dir test caught a path bug\n",
    )
    b.write("archive/projects/marlin.md", "---\nscope: Marlin reporting backfill\nlast_updated: 2026-04-01\n---\n\n# Marlin\n\n- Done.\n")
    b.write("archive/old-notes.md", "# Old notes rewritten by an early compaction\n\n- kept as it was\n")
    b.write("evidence/projects/marlin.md", "---\nevidence_for: projects/marlin.md\n---\n- 2026-03-01 observe: backfill finished\n")
    b.ledger([b.archive_line("2026-09-11T08:00:00Z", "projects/marlin.md", MARLIN_ENTRY)])
    b.spine([
        "## Profile",
        f"- [Rowan](profile/rowan.md) {EM} data engineer; short answers, command first. Read at session start.",
        "",
        "## Craft",
        f"- [Testing](craft/testing.md) + [Testing, continued](craft/testing-2.md) {EM} real files, failing test first"
        " [NON-NEGOTIABLE]; generic personas.",
        "  Read before writing any test.",
        "",
        "## Ops",
        f"- [Deploy](ops/deploy.md) {EM} canary then soak. Read before shipping.",
        "",
        "## Projects",
        KESTREL_ENTRY,
        f"- [Osprey](projects/osprey.md) {EM} exports under legal hold; pinned. Read before deleting any export.",
        "",
        "## Feedback",
        f"- [Preferences](feedback/preferences.md) {EM} output rules. Read when shaping output.",
    ])
    b.rebuild_catalog()
    return b


def tier_lines(root: Path) -> Counter[str]:
    """Every non-blank line of every live tier file (C4-style multiset, frontmatter included);
    undecodable bytes are replaced, so a hostile store is counted too."""
    found: Counter[str] = Counter()
    for tier in TIERS:
        for path in (root / tier).rglob("*.md"):
            if path.exists():
                text = path.read_bytes().decode("utf-8", "replace")
                found.update(line for line in text.splitlines() if line.strip())
    return found
