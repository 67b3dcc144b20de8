"""Adversarial generator of unmigrated stores shaped like the design research's Store B.

Store B is the real store the research measured: a 51 KB SPINE over 79 lines with 65 entries
(most far over 400 bytes), 95 tier files of which most are over their caps. What this
generator adds to the benchmark generator (tests/benchmarks/storegen.py) is the shapes agents
really write and that broke migration when other people's stores were tried:

* topic files written as ONE long section (`## Principles`, `## Output rules`, …) of 50 to
  250 lines: bullets with 1-4 indented continuation lines, paragraphs, tables, code fences,
  `###` subsections, marked bullets and marked `##` sections in the middle;
* SPINE hooks with parentheses, quotes, `code`, semicolons and a "Read when…" clause, wrapped
  entries, and pointer groups joined by ", ", " / ", " and " or "; " instead of " + ";
* a `local/` overlay with its own SPINE, an `inbox/` item, folders distilld does not manage
  (`topics/`, `private/`), CRLF files, files without a final newline, headings with trailing
  spaces, non-ASCII and spaced file names, a subfolder, nested and flat legacy archives.

Every byte comes from one seeded ``random.Random``: the same seed gives the same store.
``python tests/realshapes.py OUT --seed 3`` writes one store.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from random import Random

EM = "\u2014"
TIERS = {"profile": 6, "craft": 34, "ops": 20, "projects": 23, "feedback": 12}
SECTION_TITLES = ("Principles", "Output rules", "Patterns", "Checks", "Rules", "Notes")
JOINERS = (" + ", ", ", " / ", " and ", "; ")
NAMES = ("Atlas", "Beacon", "Comet", "Dune", "Ember", "Fjord", "Garnet", "Harbor", "Iris", "Juno", "Kite",
         "Lark", "Mesa", "Nimbus", "Orca", "Pike", "Quartz", "Reef", "Sable", "Talon", "Umber", "Vale",
         "Wren", "Yarrow", "Zephyr")
TOOLS = ("pytest", "terraform", "kubectl", "pg_dump", "ruff", "mypy", "helm", "cargo", "gradle", "redis-cli",
         "jq", "rsync", "systemd", "nginx", "kafka", "airflow", "dbt", "grafana", "vault", "sops")
ERRORS = ('"connection reset by peer"', '"lock wait timeout exceeded"', '"no space left on device"',
          '"permission denied (publickey)"', '"card_declined"', '"context deadline exceeded"',
          '"OOMKilled"', '"too many open files"')
CODE = ("`retry(max=3)`", "`--dry-run`", "`SELECT ... FOR UPDATE`", "`set -euo pipefail`", "`git push --force`",
        "`POST /v2/charges`", "`fsync()`", "`ulimit -n`", "`@pytest.mark.slow`", "`ORDER BY id`")
VERBS = ("check", "prefer", "avoid", "measure", "log", "pin", "retry", "review", "name", "test", "batch", "cache")
NOUNS = ("migrations", "fixtures", "dashboards", "rollbacks", "alerts", "timeouts", "schemas", "release notes",
         "feature flags", "backfills", "runbooks", "queues", "indexes", "secrets", "budgets", "retries")
ADJ = ("small", "explicit", "idempotent", "boring", "reversible", "dated", "shared", "local", "cheap", "slow")
READS = ("Read before writing or reviewing any test.", "Read when working in the {n} repos.",
         "Read before shipping to production.", "Read when shaping output for the user.",
         "Read before touching {n} billing.", "Read when a deploy of {n} fails.",
         "Read at session start.", "Read before changing anything in {n}-api.")
CONF = ("experimental", "provisional", "validated", "hardened")


@dataclass
class Planned:
    path: str
    title: str
    project: str
    terms: tuple[str, ...] = ()  # what this file alone is about: its hook and its body both name them


SYLLABLES = ("ka", "lo", "mi", "ver", "dra", "po", "zu", "ten", "gri", "sol", "bex", "an", "qua", "rho", "fen")


def unique_terms(rng: Random, slug: str) -> tuple[str, ...]:
    """A vendor name, a config key, a command and an error string no other file mentions."""
    def word(parts: int) -> str:
        return "".join(rng.choice(SYLLABLES) for _ in range(parts))
    stem = slug.replace("/", "-").replace(" ", "-").split("-")[0]
    return (word(3).capitalize(), f"`{stem}.{word(2)}_{word(2)}`", f"`{word(2)} --{word(2)}`",
            f'"{word(2)} {word(3)} failed"', f"{word(2).upper()}-{rng.randrange(100, 999)}")


class Writer:
    def __init__(self, rng: Random) -> None:
        self.rng = rng

    def pick(self, options: tuple[str, ...]) -> str:
        return self.rng.choice(options)

    def phrase(self) -> str:
        r = self.rng
        kind = r.randrange(6)
        if kind == 0:
            return f"{self.pick(VERBS)} {self.pick(ADJ)} {self.pick(NOUNS)}"
        if kind == 1:
            return f"{self.pick(NOUNS)} via {self.pick(CODE)}"
        if kind == 2:
            return f"{self.pick(TOOLS)} for {self.pick(NOUNS)} ({self.pick(ADJ)} {self.pick(NOUNS)})"
        if kind == 3:
            return f"{self.pick(ERRORS)} means {self.pick(ADJ)} {self.pick(NOUNS)}"
        if kind == 4:
            return f"{self.pick(NAMES)} {self.pick(NOUNS)} {self.pick(VERBS)} with {self.pick(TOOLS)}"
        return f"never {self.pick(VERBS)} {self.pick(NOUNS)} without {self.pick(NOUNS)}"

    def sentence(self, words: int) -> str:
        parts = [self.phrase()]
        while len(" ".join(parts).split()) < words:
            parts.append(self.phrase())
        text = ", ".join(parts)
        return text[0].upper() + text[1:] + "."

    def hook(self, project: str, target: int, pinned: bool, terms: tuple[str, ...] = ()) -> str:
        """Clauses until about ``target`` bytes, then a "Read when…" clause; the file's own terms
        are spread over the clauses, as a hook summarising its file would."""
        r = self.rng
        clauses = [f"{project} {self.pick(NOUNS)}: {self.phrase()}"]
        pending = list(terms)
        while len(" ".join(clauses).encode()) < target or (pending and len(clauses) < 12):
            clause = self.phrase()
            if pending and r.random() < 0.6:
                clause += f" with {pending.pop(0)}"
            if r.random() < 0.25:
                clause += f" (evidence: {r.randrange(5, 60)}% {self.pick(ADJ)}er at our {self.pick(NOUNS)})"
            if r.random() < 0.1:
                clause += " [NON-NEGOTIABLE]"
            clauses.append(clause)
        if pinned:
            clauses.append("pinned while the audit runs")
        body = "; ".join(clauses) if r.random() < 0.6 else ", ".join(clauses)
        return f"{body}. {self.pick(READS).format(n=project.lower())}"

    # -- tier file bodies ---------------------------------------------------------------------
    def bullet(self, marked: bool = False) -> list[str]:
        r = self.rng
        tag = r.choice(("[NON-NEGOTIABLE]", "[DIRECTIVE 2026-07-20]", "[IMPORTANT]")) if marked else \
            r.choice(("[PRINCIPLE]", "[DECISION]", "", ""))
        head = f"- {tag + ' ' if tag else ''}{self.sentence(r.randrange(8, 30))}"
        lines = [head]
        for _ in range(r.randrange(1, 5)):
            kind = r.randrange(4)
            if kind == 0:
                lines.append(f"  confidence: {r.choice(CONF)} ({r.randrange(1, 9)} confirmations, "
                             f"{r.randrange(0, 3)} corrections)")
            elif kind == 1:
                lines.append(f"  last_validated: 2026-{r.randrange(1, 10):02d}-{r.randrange(1, 28):02d}")
            elif kind == 2:
                lines.append(f"  Why: {self.sentence(r.randrange(6, 20))}")
            else:
                lines.append(f"  origin: directive (user, 2026-0{r.randrange(1, 9)}-1{r.randrange(0, 9)})")
        return lines

    def block(self) -> list[str]:
        r = self.rng
        kind = r.random()
        if kind < 0.62:
            return self.bullet()
        if kind < 0.70:
            return [self.sentence(r.randrange(15, 45)), self.sentence(r.randrange(10, 30))]
        if kind < 0.75:
            rows = ["| case | what to do |", "|---|---|"]
            rows += [f"| {self.pick(ERRORS)} | {self.phrase()} |" for _ in range(r.randrange(2, 6))]
            return rows
        if kind < 0.80:
            body = [f"{self.pick(TOOLS)} {self.pick(CODE).strip('`')}" for _ in range(r.randrange(2, 8))]
            return ["```sh", *body, "```"]
        if kind < 0.86:
            return [f"- 2026-{r.randrange(1, 10):02d}-{r.randrange(10, 28)} {r.choice(('confirm', 'observe', 'correct'))}: "
                    f"{self.sentence(r.randrange(6, 16))}"]
        if kind < 0.92:
            return self.bullet(marked=True)
        return [f"- {self.sentence(r.randrange(5, 14))}"]

    def long_section(self, title: str, lines: int, depth_marks: bool) -> list[str]:
        r = self.rng
        out = [f"## {title}" + ("  " if r.random() < 0.05 else ""), ""]
        while len(out) < lines:
            roll = r.random()
            if depth_marks and roll < 0.03:
                out += [f"## [DIRECTIVE 2026-0{r.randrange(1, 9)}-20] {self.phrase().capitalize()}", ""]
                for _ in range(r.randrange(2, 5)):
                    out += self.bullet()
                out += ["", f"## {title} (more)", ""]
                continue
            if roll < 0.07:
                out += [f"### {self.phrase().capitalize()}", ""]
                for _ in range(r.randrange(2, 6)):
                    out += self.block()
                out.append("")
                continue
            out += self.block()
            if r.random() < 0.2:
                out.append("")
        return out

    def tier_file(self, planned: Planned, pinned: bool, read_with: str | None, long_lines: int) -> str:
        text = self._tier_file(planned, pinned, read_with, long_lines)
        lines = text.split("\n")
        for term in planned.terms:  # the file's own terms, in a few of its bullets
            at = self.rng.randrange(len(lines) // 2, len(lines))
            if lines[at].startswith("- ") and "[" not in lines[at][:4]:
                lines[at] = lines[at].rstrip(".") + f", see {term}."
            else:
                lines.insert(at, f"- Remember {term} for {self.phrase()}.") if not lines[at].startswith(("  ", "|", "```")) \
                    else None
        return "\n".join(lines)

    def _tier_file(self, planned: Planned, pinned: bool, read_with: str | None, long_lines: int) -> str:
        r = self.rng
        tier = planned.path.split("/", 1)[0]
        fm = ["---", f"domain: {'project' if tier == 'projects' else tier}",
              f"scope: {planned.title} {EM} {self.phrase()}",
              f"last_updated: 2026-{r.randrange(1, 10):02d}-{r.randrange(10, 28)}",
              "staleness_threshold: 90"]
        if pinned:
            fm.append("lifecycle: pinned")
        if read_with:
            fm.append(f"read_with: [{read_with}]")
        fm.append("---")
        body = ["", f"# {planned.title}", ""]
        shape = r.random()
        if shape < 0.7:  # the common shape: one long section
            body += self.long_section(r.choice(SECTION_TITLES), long_lines, depth_marks=True)
        else:
            for _ in range(r.randrange(2, 5)):
                body += self.long_section(r.choice(SECTION_TITLES), long_lines // 3, depth_marks=False)
                body.append("")
        if r.random() < 0.3:
            body += ["", f"See `{self.pick(('craft', 'ops'))}/notes.md` and {planned.project} docs."]
        return "\n".join(fm + body) + "\n"


def _plan_files(rng: Random) -> list[Planned]:
    files: list[Planned] = []
    for tier, count in TIERS.items():
        for index in range(count):
            project = NAMES[(index * 7 + len(tier)) % len(NAMES)]
            slug = f"{project.lower()}-{index}" if tier == "projects" else f"{tier}-topic-{index}"
            if tier == "craft" and index == 3:
                slug = "café-notes"
            if tier == "ops" and index == 4:
                slug = "on call"
            if tier == "craft" and index == 5:
                slug = "lang/rust-tips"
            files.append(Planned(f"{tier}/{slug}.md", f"{project} {tier} {index}".title(), project,
                                 unique_terms(rng, slug)))
    return files


def spine_text(rng: Random, writer: Writer, files: list[Planned], pinned: set[str]) -> str:
    """79 lines, 65 entries, ~51 KB: 30 files share entries through joined pointer groups."""
    lines = ["# Distill Knowledge Index", "",
             "<!-- Managed by aura-distill. Max 80 lines. Entry: - [Title](path.md) -- when to read this. "
             "last_updated: 2026-08-30 -->", ""]
    by_tier: dict[str, list[Planned]] = {}
    for planned in files:
        by_tier.setdefault(planned.path.split("/", 1)[0], []).append(planned)
    groups: list[list[Planned]] = []
    shared = 30
    for tier in TIERS:
        queue = list(by_tier[tier])
        while queue:
            take = 2 if shared > 0 and len(queue) >= 2 and rng.random() < 0.55 else 1
            shared -= take - 1
            groups.append(queue[:take])
            queue = queue[take:]
    heading = {"profile": "Profile", "craft": "Craft", "ops": "Ops", "projects": "Projects", "feedback": "Feedback"}
    current = ""
    for group in groups:
        tier = group[0].path.split("/", 1)[0]
        if tier != current:
            lines += ([""] if current else []) + [f"## {heading[tier]}"]
            current = tier
        joiner = rng.choice(JOINERS) if len(group) > 1 else ""
        pointers = joiner.join(f"[{p.title}]({p.path})" for p in group)
        target = rng.choice((150, 250, 380, 480, 560, 700, 900, 1400))
        hook = writer.hook(group[0].project, target, any(p.path in pinned for p in group),
                           tuple(t for p in group for t in p.terms))
        entry = f"- {pointers} {EM} {hook}"
        if rng.random() < 0.12 and len(entry) > 200:  # a wrapped entry
            words = entry.split(" ")
            half = len(words) // 2
            lines += [" ".join(words[:half]), "  " + " ".join(words[half:])]
        else:
            lines.append(entry)
    return "\n".join(lines) + "\n"


def generate(root: Path, seed: int, crlf_share: float = 0.06, overlay: bool = True) -> Path:
    """Write one unmigrated Store-B-shaped store into ``root`` (which must not exist yet)."""
    rng = Random(seed)
    writer = Writer(rng)
    files = _plan_files(rng)
    pinned = {p.path for p in rng.sample(files, 4)}
    read_with_targets = [p.path for p in files if p.path.startswith("projects/")][:3]
    root.mkdir(parents=True)

    def put(relative: str, text: str, crlf: bool = False, final_newline: bool = True) -> None:
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not final_newline:
            text = text.rstrip("\n")
        if crlf:
            text = text.replace("\n", "\r\n")
        target.write_bytes(text.encode("utf-8"))

    for index, planned in enumerate(files):
        roll = rng.random()
        long_lines = rng.randrange(50, 250) if roll < 0.6 else rng.randrange(12, 45)
        read_with = read_with_targets[index % 3] if planned.path.startswith("ops/") and index % 7 == 0 else None
        text = writer.tier_file(planned, planned.path in pinned, read_with, long_lines)
        put(planned.path, text, crlf=rng.random() < crlf_share, final_newline=rng.random() > 0.05)
    put("SPINE.md", spine_text(rng, writer, files, pinned))
    if overlay:
        put("local/SPINE.md", f"# Local index\n\n- [Laptop](local/laptop.md) {EM} this machine's paths and keys.\n")
        put("local/laptop.md", "---\nscope: this laptop\n---\n\n- The repos live under ~/src.\n")
    put("inbox/2026-09-01-remember.md", "Remember: the Harbor deploy needs two approvals.\n")
    put("topics/reading-list.md", "# Reading list\n\n- Designing Data-Intensive Applications\n")
    put("private/diary.md", "# Not for agents\n")
    put("projects/archive/old-pilot.md",
        "---\nscope: an old pilot\nlast_updated: 2025-01-10\n---\n\n- The pilot ended in 2025.\n")
    put("archive/old-notes.md", "# Old notes\n\n- Kept from the 1.0 layout.\n")
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    generate(args.out, args.seed)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
