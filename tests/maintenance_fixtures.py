"""Fixture stores for compaction, splitting and migration tests (own text, generic persona).

The persona is Ines, a platform engineer; her projects are Quill (a payments gateway), Saffron
(a search indexer), Tundra (a cold-storage archiver) and Vireo (a feature-flag service). Every
store is written into a test's tmp_path. ``oracle`` runs the independent reference checker.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from builders import EM, StoreBuilder
from oracle_cache import run_oracle
from distilld.engine.lock import format_iso, read_lock

OLD_HEADER = ("<!-- Managed by aura-distill. Max 80 lines. Entry: - [Title](path.md) -- when to read this. "
              "last_updated: 2026-08-30 -->")


def oracle(store: Path, before: Path | None = None) -> tuple[int, str]:
    """(exit code, output) of the reference checker; C4 too with ``before``."""
    done = run_oracle([store, *(["--before", before] if before else [])])
    assert done.returncode in (0, 1), done.stderr.decode("utf-8", "replace")
    return done.returncode, done.stdout.decode("utf-8", "replace")


def oracle_passes(store: Path, before: Path | None = None) -> str:
    code, out = oracle(store, before)
    assert code == 0, out
    expected = ["C1 PASS", "C2 PASS", "C3 PASS"] + (["C4 PASS"] if before else [])
    assert [line for line in out.splitlines() if line[:2] in ("C1", "C2", "C3", "C4")] == expected, out
    return out


def age_lock(root: Path) -> None:
    """The killed child still "holds" `.lock`: make its line an hour old, as time would."""
    line = read_lock(root)
    assert line is not None, "a killed pass leaves its .lock behind"
    old = int(time.time()) - 3600
    (root / ".lock.test-aging").write_text(f"{line.owner} {old} {format_iso(old)}\n")
    os.replace(root / ".lock.test-aging", root / ".lock")


def have_bash() -> bool:
    return shutil.which("bash") is not None


# -- text --------------------------------------------------------------------------------------

def section(title: str, bullets: list[str], prose: str = "") -> str:
    body = "".join(f"- {b}\n" for b in bullets)
    return f"## {title}\n\n{body}" + (f"\n{prose}\n" if prose else "") + "\n"


def long_file(topic: str, sections: int, start: int = 0) -> str:
    """``sections`` sections of 6 lines each (heading, blank, three bullets, blank)."""
    out = []
    for n in range(start, start + sections):
        out.append(section(f"{topic} rule {n}", [
            f"{topic} rule {n}: keep the retry budget at {n + 3} attempts per request.",
            f"Measure rule {n} in the `{topic.lower()}_latency_seconds` histogram.",
            f"Rule {n} came from incident INC-{4100 + n}.",
        ]))
    return "".join(out)


QUILL_HOOK = (
    "Quill payments gateway: the `POST /v2/charges` idempotency keys, the retry ladder for "
    "\"card_declined\" and \"processor_unavailable\", settlement files from Acme Bank via SFTP, "
    "the ledger reconciliation job (quill-recon) that runs at 02:00 UTC, PCI scope notes and the "
    "rotation of the HSM keys [NON-NEGOTIABLE]; pinned while the audit runs. Read before changing "
    "anything in quill-api or quill-recon."
)
SAFFRON_HOOK = (
    "Saffron search indexer; Elasticsearch 8 mappings, the reindex-without-downtime alias swap, "
    "the nightly `saffron-compact` job, shard sizing at 30 GB, and why ECONNRESET from the bulk API "
    "means the coordinating node ran out of heap;"
)
SAFFRON_WRAP = "the synonyms file lives in config/synonyms.txt. Read when touching search relevance or the indexer."


def unmigrated_store(root: Path) -> StoreBuilder:
    """A pre-1.2 store: an old SPINE (over its caps in places, a wrapped entry, a multi-pointer
    line, no catalog line), tier files over their caps, dated observations, protected blocks,
    a code fence with a heading inside, duplicates, a CRLF file, and legacy archives both flat
    and nested (``archive/<tier>/`` and ``<tier>/**/archive/**``)."""
    b = StoreBuilder(root)
    b.tier("profile/ines.md",
           "# Who Ines is\n\n## Working style\n\n- Prefers the command first, then the why.\n"
           "  confidence: validated (6 confirmations, 0 corrections)\n  last_validated: 2026-09-02\n"
           "- 2026-08-14 confirm: asked for the command before the explanation again\n",
           domain="profile", scope="Who Ines is and how she works", last_updated="2026-09-02")
    testing = (
        "# Testing\n\n"
        "## [DIRECTIVE 2026-07-20] Fixtures\n\n"
        "- Generic personas only; never a colleague's name.\n"
        "- 2026-07-20 directive: fixtures use invented names (recorded as DIRECTIVE)\n\n"
        "## Principles\n\n"
        "- [NON-NEGOTIABLE] A failing test comes before the fix.\n"
        "  origin: directive (Ines, 2026-03-04)\n"
        "- Real files in temporary folders, never mocks of the disk.\n"
        "- 2026-04-18 confirm: a temp-dir test caught a path bug in the exporter\n"
        "- 2026-05-02 confirm: a temp-dir test caught a path bug in the exporter\n"
        "- 2026-05-09 correct: a flaky test was a hypothesis, not noise\n"
        "  Why: the seed was fixed after the fact\n"
        "- [CORRECTED 2026-06-01] 2026-06-01 sleeps in tests replaced by polling\n\n"
        "## Observations\n\n"
        "- 2026-06-11 observe: property tests found the CRLF bug first\n"
        "- 2026-06-30 observe: property tests found the CRLF bug first\n\n"
        "## Shell snippets\n\n"
        "```sh\n"
        "## not a heading: a comment inside a fence\n"
        "pytest -q -m 'not slow'\n"
        "```\n\n"
        + long_file("Testing", 9)
        + "## Duplicates kept\n\n- Run the whole suite before a commit.\n- Run the whole suite before a commit.\n"
    )
    b.tier("craft/testing.md", testing, domain="craft", scope="Testing discipline", last_updated="2026-09-01")
    deploy = ("---\r\ndomain: ops\r\nscope: Deploy procedure\r\nlast_updated: 2026-08-20\r\n---\r\n\r\n"
              "# Deploy\r\n\r\n" + long_file("Deploy", 11).replace("\n", "\r\n"))
    b.write("ops/deploy.md", deploy)
    b.tier("projects/quill.md", "# Quill\n\n" + long_file("Quill", 4)
           + "- [NON-NEGOTIABLE] HSM keys rotate every 90 days.\n",
           domain="project", scope="Quill payments gateway", last_updated="2026-03-01", lifecycle="pinned")
    b.tier("projects/saffron.md", "# Saffron\n\n- Reindex through an alias swap.\n",
           domain="project", scope="Saffron search indexer", last_updated="2026-08-01")
    b.tier("projects/tundra.md", "# Tundra\n\n- Cold storage moves after 30 days.\n",
           domain="project", scope="Tundra cold-storage archiver", last_updated="2026-01-10")
    b.tier("projects/vireo.md", "# Vireo\n\n- Flags default to off in production.\n",
           domain="project", scope="Vireo feature flags", last_updated="2026-08-28")
    b.tier("feedback/preferences.md", "# Preferences\n\n- No emoji in commit messages.\n",
           domain="feedback", scope="Output preferences", last_updated="2026-08-28")
    # legacy archives: nested under archive/<tier>/ (unledgered), flat, and inside a tier dir
    b.write("archive/projects/marten.md", "---\narchived_from: projects/marten.md\narchived_on: 2025-12-01\n"
            "recall_count: 3\n---\n\n# Marten (archived)\n\n- Finished in 2025.\n")
    b.write("archive/old-notes.md", "# Old notes, rewritten by an early compaction\n\n- kept as it was\n")
    b.write("craft/archive/style-2024.md", "# Style rules of 2024\n\n- Tabs, then spaces.\n")
    b.write("SPINE.md", "\n".join([
        "# Distill Knowledge Index", "", OLD_HEADER, "",
        "## Profile",
        f"- [Ines](profile/ines.md) {EM} platform engineer; command first, then the why. Read at session start.",
        "",
        "## Craft",
        (f"- [Testing](craft/testing.md) {EM} failing test first [NON-NEGOTIABLE]; generic personas "
        "[DIRECTIVE 2026-07-20]; real files in temp folders; property tests for parsers; no sleeps, poll "
        "instead; the `pytest -m 'not slow'` loop for quick runs and the full suite before every commit; "
        "flaky means a hypothesis to test, never noise to retry. Read before writing or reviewing any test."),
        "",
        "## Ops",
        f"- [Deploy](ops/deploy.md) {EM} canary, then staging, then prod with a 30 minute soak. Read before shipping.",
        "",
        "## Projects",
        f"- [Quill](projects/quill.md) {EM} {QUILL_HOOK}",
        f"- [Saffron](projects/saffron.md) {EM} {SAFFRON_HOOK}",
        f"  {SAFFRON_WRAP}",
        (f"- [Tundra](projects/tundra.md) + [Vireo](projects/vireo.md) {EM} Tundra cold storage and Vireo "
        "flags. Read when working in the tundra or vireo repos."),
        "",
        "## Feedback",
        f"- [Preferences](feedback/preferences.md) {EM} output rules. Read when shaping output.",
    ]) + "\n")
    return b


PROJECT_NAMES = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel", "ivy", "juniper", "kapok", "larch", "maple", "nutmeg", "oak", "pine", "quince", "rowan", "sumac", "teak", "ulmo", "vine", "willow", "yew", "zelkova", "acacia", "balsa", "cherry", "damson", "ebony", "fig", "guava", "holly", "iroko", "jacaranda", "karri", "laurel", "myrtle", "neem", "olive", "pecan", "quandong", "redwood", "sassafras", "tamarind", "umbrella", "viburnum", "walnut", "xylosma", "yucca", "zapote", "almond", "beech", "catalpa", "deodar", "eucalyptus"]


def project_hook(n: int, name: str) -> str:
    return (f"{name.capitalize()} service for the {name}-team: the `{name}_sync` job, the {name}-api "
            f"gateway on port {8000 + n}, retries capped at {n % 5 + 2} attempts, alerts on "
            f"\"{name} backlog over {n * 10 + 100}\", owners in the platform guild, and the {2020 + n % 6} "
            f"migration notes kept for audits and the quarterly review. Read when working in the {name} repo.")


def migrated_store_over_targets(root: Path, projects: int = 40) -> StoreBuilder:
    """A 1.2 store (catalog, catalog line) whose SPINE is over its targets (lines, bytes,
    entries over 400 bytes, a wrapped entry, a split child on its own line) and whose tier files
    include an over-cap file with protected blocks, a CRLF file over its caps, a file just under
    its caps whose long entry's hook will push it over, and an oversize file."""
    b = unmigrated_store(root)
    b.remove("craft/archive/style-2024.md")
    b.write("archive/legacy/craft/archive/style-2024.md", "# Style rules of 2024\n\n- Tabs, then spaces.\n")
    b.write("archive/legacy/archive/projects/marten.md", b.read("archive/projects/marten.md"))
    b.remove("archive/projects/marten.md")
    b.tier("craft/retries.md", "# Retries\n\n" + long_file("Retry", 3) + "Continued in `craft/retries-2.md`.\n",
           domain="craft", scope="Retry rules", last_updated="2026-08-01")
    b.tier("craft/retries-2.md", long_file("Retry", 2, 3), domain="craft", scope="Retry rules (continued)",
           split_from="craft/retries.md", last_updated="2026-08-01")
    b.tier("ops/runbook.md", "# Runbook\n\n" + long_file("Runbook", 8) + "- 9th line pad\n",
           domain="ops", scope="On-call runbook", last_updated="2026-08-02")
    b.tier("feedback/tables.md", "# Tables\n\n" + "".join(f"| row {n} | " + "cell " * 60 + "|\n" for n in range(20)),
           domain="feedback", scope="Output tables", oversize="one table that must stay whole")
    runbook_hook = ("on-call runbook: paging rules, the `oncall-rotate` script, escalation after 15 minutes, "
                    "the status page, \"disk full\" on the log volume, the restart order for the three "
                    "queues, who approves a rollback at night, the vendor contacts for the CDN and the DNS "
                    "provider, and the postmortem template with its five questions; the pager test runs every "
                    "Monday at 09:00 UTC. Read when on call.")
    spine = b.read("SPINE.md").decode()
    spine = spine.replace(OLD_HEADER + "\n", "<!-- Managed by aura-distill. Max 80 lines / 16 KB, 400 bytes per "
                          "entry. -->\n\n" + f"- [Catalog](CATALOG.md) {EM} complete inventory; not loaded at start.\n")
    spine = spine.replace("## Ops\n", f"## Ops\n- [Runbook](ops/runbook.md) {EM} {runbook_hook}\n", 1)
    spine = spine.replace("## Craft\n", "## Craft\n"
                          f"- [Retries](craft/retries.md) {EM} retry budgets per call site. Read before adding a retry.\n"
                          f"- [Retries, continued](craft/retries-2.md) {EM} more retry rules. Read with retries.\n", 1)
    spine = spine.replace("## Feedback\n", f"## Feedback\n- [Tables](feedback/tables.md) {EM} output tables. "
                          "Read when writing a table.\n", 1)
    lines = []
    for n, name in enumerate(PROJECT_NAMES[:projects]):
        b.tier(f"projects/{name}.md", f"# {name.capitalize()}\n\n- {name} notes.\n",
               domain="project", scope=f"{name.capitalize()} service", last_updated="2026-09-01")
        hook = project_hook(n, name)
        if n % 7 == 3:  # a wrapped entry
            cut = hook.index(", owners")
            lines += [f"- [{name.capitalize()}](projects/{name}.md) {EM} {hook[:cut + 1]}", f"  {hook[cut + 2:]}"]
        else:
            lines.append(f"- [{name.capitalize()}](projects/{name}.md) {EM} {hook}")
    spine = spine.replace("\n## Feedback", "\n" + "\n".join(lines) + "\n\n## Feedback", 1)
    b.write("SPINE.md", spine)
    from distilld.store.evidence import plan_evidence  # a 1.2 store keeps observations in twins
    for path in ("craft/testing.md", "profile/ines.md"):
        move = plan_evidence(path, b.read(path), None)
        assert move is not None
        b.write(path, move.principle)
        b.write("evidence/" + path, move.twin_header + "".join(line + "\n" for line in move.lines))
    b.rebuild_catalog()
    return b


def add_uncuttable_file(b: StoreBuilder) -> None:
    """``ops/fridays.md``, whose one marked section alone is over the caps (compaction never cuts
    inside it), with its SPINE entry: a store compaction cannot bring within its caps."""
    marked = "## [NON-NEGOTIABLE] Never deploy on Fridays\n\n" + "".join(f"- reason {n}\n" for n in range(70))
    b.tier("ops/fridays.md", "# Fridays\n\n## Intro\n\n- one\n\n" + marked, domain="ops", scope="Deploy days",
           last_updated="2026-09-01")
    spine = b.read("SPINE.md").decode()
    b.write("SPINE.md", spine.replace("## Ops\n", f"## Ops\n- [Fridays](ops/fridays.md) {EM} deploy days. "
                                      "Read before a release.\n", 1))
    b.rebuild_catalog()
