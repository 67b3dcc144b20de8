"""A two-machine soak (issue 23, item 11): two clones of one store with a shared bare remote,
lockless writers on both, both machines' compaction passes (in-process), syncs in a random
order, and one user commit with conflict markers in SPINE.md that the user resolves later.

The driver is shared by tests/gitstore/test_two_machine_soak.py (a few rounds) and
tests/benchmarks/bench_soak.py (``--rounds N --seed S``), which print the same figures:
commits, merges, writer lines lost, remote tips that held marker lines, duplicate entries,
duplicated Index-detail blocks and the share of Index detail in the store, first -> last.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from builders import EM
from distilld.actions.compaction import CompactionReport, run_compaction
from distilld.errors import StoreRefused
from distilld.store.conflicts import conflict_marker_lines
from distilld.store.index_detail import index_detail_text
from distilld.store.paths import SPINE, TIERS
from distilld.store.spine import Spine
from distilld.store.spine_dedupe import doubled_pointers
from gitmachines import GitCli, Machine, Origin, lifecycle_store, shared_files

PROJECTS = ("heron", "ibis", "tern", "wren")
HOOK_WORDS = ("queue", "replay", "schema", "owner", "budget", "cutover", "retention", "alerts", "quota", "canary")


@dataclass
class SoakFigures:
    rounds: int
    seed: int
    commits: int = 0
    merges: int = 0
    writer_lines: int = 0
    lines_lost: int = 0
    marked_tips: int = 0  # remote tips seen holding a conflict-marker line in SPINE or a tier file
    duplicate_entries: int = 0  # pointers standing on two SPINE entries at the end
    duplicate_details: int = 0  # Index-detail blocks whose words another block of the file holds
    refusals: int = 0  # passes refused while the user's markers stood
    share_first: float = 0.0
    share_last: float = 0.0
    hook_bytes: int = 0  # hook words the store began with over the cap, and every word writers added to hooks
    detail_bytes: int = 0  # Index-detail hook bytes at the end
    share_every: int = 0  # the share is also taken every this many rounds (0: first and last only)
    shares: list[tuple[int, float, int, int]] = field(default_factory=list)  # round, share, detail bytes, hook bytes
    identical: bool = False
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [f"rounds {self.rounds}, seed {self.seed}",
                f"commits on the remote: {self.commits} ({self.merges} merges)",
                f"writer lines: {self.writer_lines} written, {self.lines_lost} lost",
                f"remote tips holding conflict markers: {self.marked_tips}",
                f"passes refused while the user's markers stood: {self.refusals}",
                f"pointers on duplicate entries: {self.duplicate_entries}",
                f"duplicated Index-detail blocks: {self.duplicate_details}",
                f"Index-detail share of the store: {self.share_first:.1%} -> {self.share_last:.1%}",
                f"Index-detail bytes per hook byte written: {self.detail_bytes} / {self.hook_bytes} = "
                f"{self.detail_bytes / max(self.hook_bytes, 1):.2f}",
                *[f"  after round {n}: share {share:.1%}, Index-detail bytes per hook byte {detail / max(hooks, 1):.2f}"
                  for n, share, detail, hooks in self.shares],
                f"both clones byte-identical: {'yes' if self.identical else 'NO'}",
                *[f"problem: {p}" for p in self.problems]]


def soak_store(root: Path) -> None:
    """lifecycle_store plus project files with entries the writers lengthen."""
    b = lifecycle_store(root)
    spine = b.read("SPINE.md").decode()
    entries = []
    for name in PROJECTS:
        b.tier(f"projects/{name}.md", f"# {name.capitalize()}\n\n- {name} started.\n", domain="project",
               scope=f"{name.capitalize()} service", last_updated="2026-11-20")
        long = ", ".join(f"{name} {w} rules" for w in HOOK_WORDS) if name == PROJECTS[0] else ""
        entries.append(f"- [{name.capitalize()}](projects/{name}.md) {EM} {name} service notes{': ' + long * 2 if long else ''}. "
                       f"Read when working on {name}.")  # the first is over 400 bytes: cut in round 0
    anchor = "pinned. Read before deleting any export.\n"
    b.write("SPINE.md", spine.replace(anchor, anchor + "".join(e + "\n" for e in entries), 1))
    b.rebuild_catalog()


# -- measuring ----------------------------------------------------------------------------------

def _knowledge(files: dict[str, bytes]) -> dict[str, bytes]:
    return {p: raw for p, raw in files.items() if p == SPINE or (p.split("/", 1)[0] in TIERS and p.endswith(".md"))}


def _hook_lines(raw: bytes) -> list[str]:
    """The hook lines of a file's Index detail: writers' bullets appended at the end of the file
    land under its heading too, and are not Index detail."""
    return [line for line in index_detail_text(raw).split("\n") if line.strip() and not line.startswith(("- ", "  "))]


def detail_bytes(files: dict[str, bytes]) -> int:
    return sum(len(line.encode()) + 1 for raw in _knowledge(files).values() for line in _hook_lines(raw))


def detail_share(files: dict[str, bytes]) -> float:
    total = sum(len(raw) for raw in _knowledge(files).values())
    return detail_bytes(files) / total if total else 0.0


def duplicated_details(files: dict[str, bytes]) -> int:
    """Index-detail hooks of a file whose words an earlier hook of it holds."""
    count = 0
    for raw in _knowledge(files).values():
        held: list[str] = []
        for line in _hook_lines(raw):
            count += any(line.strip() in earlier for earlier in held)
            held.append(line)
    return count


def tip_has_markers(origin: Origin) -> bool:
    repo = pygit2.Repository(str(origin.path))
    ref = repo.references.get("refs/heads/main")
    if ref is None:
        return False
    tree = repo[ref.target].peel(pygit2.Tree)
    stack = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for entry in node:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                stack.append((path + "/", repo[entry.id]))
            elif path in _knowledge({path: b""}) and conflict_marker_lines(repo[entry.id].read_raw()):
                return True
    return False


def history(origin: Origin) -> tuple[int, int]:
    repo = pygit2.Repository(str(origin.path))
    commits = list(repo.walk(repo.references["refs/heads/main"].target))
    return len(commits), sum(1 for c in commits if len(c.parents) > 1)


# -- what happens on a machine ------------------------------------------------------------------

class Soak:
    def __init__(self, tmp: Path, origin: Origin, git: GitCli, rounds: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.origin, self.git = origin, git
        self.figures = SoakFigures(rounds, seed)
        self.a = Machine("a", tmp / "a", origin)
        soak_store(self.a.root)
        self.a.init()
        assert self.a.sync().pushed
        self.b = Machine("b", tmp / "b", origin)
        self.b.init()
        self.written: list[str] = []
        self.marker_round = max(1, rounds // 3)
        self.fix_round = self.marker_round + 2
        self.counter = 0
        start = Spine(self.a.read(SPINE))
        self.figures.hook_bytes = sum(len(e.hook.encode()) for e in start.entries
                                      if e.byte_len > self.a.policy.limits.spine.entry_max_bytes)

    def note(self, machine: Machine, round_number: int) -> str:
        self.counter += 1
        return f"- {machine.name} round {round_number} writer note {self.counter}-{self.rng.randrange(10**6)}"

    def write(self, machine: Machine, round_number: int) -> None:
        """One lockless writer action, the way a distiller writes."""
        roll = self.rng.random()
        if roll < 0.45:
            path = f"projects/{self.rng.choice(PROJECTS)}.md"
            count = 1 if self.rng.random() < 0.7 else self.rng.randint(8, 20)  # now and then a burst
            lines = [self.note(machine, round_number) for _ in range(count)]
            machine.append(path, "".join(line + "\n" for line in lines))
            self.written += lines
        elif roll < 0.75:
            name = self.rng.choice(PROJECTS)  # both machines lengthen the same entries
            words = " ".join(self.rng.sample(HOOK_WORDS, 3))
            extra = f" {machine.name}{self.counter} {words} rule {self.rng.randrange(10**4)}."
            self.counter += 1
            spine = machine.read(SPINE).decode()
            lines = spine.split("\n")
            at = next((i for i, line in enumerate(lines) if line.startswith("- [") and f"(projects/{name}.md)" in line
                       and line.index(f"(projects/{name}.md)") < 80), None)
            if at is None:
                return
            self.figures.hook_bytes += len(extra.encode())
            lines[at] = lines[at].replace(f" Read when working on {name}.", "") + extra + f" Read when working on {name}."
            machine.write(SPINE, "\n".join(lines))
        else:
            name = f"n{machine.name}{self.counter}"
            self.counter += 1
            line = self.note(machine, round_number)
            machine.write(f"projects/{name}.md", f"---\ndomain: project\nscope: {name} notes\nlast_updated: "
                                                 f"2026-11-29\n---\n\n# {name}\n\n{line}\n")
            spine = machine.read(SPINE).decode()
            hook = f"{name} notes. Read when working on {name}."
            self.figures.hook_bytes += len(hook.encode())  # a merge to reach the line target moves it
            entry = f"- [{name}](projects/{name}.md) {EM} {hook}\n"
            anchor = "\n## Feedback"
            machine.write(SPINE, spine.replace(anchor, "\n" + entry.rstrip("\n") + anchor, 1) if anchor in spine
                          else spine + entry)
            self.written.append(line)

    def user_commits_markers(self, machine: Machine) -> None:
        spine = machine.read(SPINE).decode()
        # Two versions of a long entry, as `git merge` leaves them: a pass would cut them, and the
        # "=======" line (a continuation of the entry above it) would go to Index detail with the hook.
        long = ", ".join(f"heron {w} rules" for w in HOOK_WORDS) * 2
        block = ("<<<<<<< HEAD\n- [Heron](projects/heron.md) " + EM + f" heron, the user's side: {long}.\n=======\n"
                 "- [Heron](projects/heron.md) " + EM + f" heron, their side: {long}.\n>>>>>>> origin/main\n")
        machine.write(SPINE, spine.replace("\n## Feedback", "\n" + block + "\n## Feedback", 1))
        self.git(machine.root, "commit", "-qam", "user: merge by hand")

    def user_resolves(self, machine: Machine) -> None:
        spine = machine.read(SPINE).decode()
        kept = [line for line in spine.split("\n") if not conflict_marker_lines(line.encode())
                and line not in ("=======",) and "heron, the user's side" not in line and "heron, their side" not in line]
        if "\n".join(kept) == spine:
            return  # nothing left to resolve (without the soak rules, a pass moved the markers away)
        machine.write(SPINE, "\n".join(kept))
        self.git(machine.root, "commit", "-qam", "user: conflict resolved")

    def compact(self, machine: Machine) -> CompactionReport | None:
        def run(record):  # type: ignore[no-untyped-def]
            report = run_compaction(machine.root, machine.policy, machine.clock)
            record.subject = "distilld: compaction"
            return report
        try:
            return machine.operation("compaction", run)[0]  # type: ignore[no-any-return]
        except StoreRefused:
            self.figures.refusals += 1
            return None

    def run(self) -> SoakFigures:
        figures = self.figures
        for round_number in range(figures.rounds):
            for machine in self.rng.sample([self.a, self.b], 2):
                machine.later(self.rng.randint(1, 20))
                if machine is self.a and round_number == self.marker_round:
                    self.user_commits_markers(machine)
                if machine is self.a and round_number == self.fix_round:
                    self.user_resolves(machine)
                for _ in range(self.rng.randint(1, 4)):
                    self.write(machine, round_number)
                report = self.compact(machine)
                if report is not None and not report.pass_ok:
                    figures.problems.append(f"round {round_number} {machine.name}: compaction not ok: "
                                            f"{[n for n in report.notes][:2]}")
                machine.sync()
                figures.marked_tips += tip_has_markers(self.origin)
            if round_number == 0:
                figures.share_first = detail_share(shared_files(self.origin_clone()))
            if figures.share_every and (round_number + 1) % figures.share_every == 0:
                files = shared_files(self.origin_clone())
                figures.shares.append((round_number + 1, detail_share(files), detail_bytes(files), figures.hook_bytes))
        if figures.rounds <= self.fix_round and conflict_marker_lines(self.a.read(SPINE)):
            self.user_resolves(self.a)
        for machine in (self.a, self.b, self.a, self.b):
            self.compact(machine)
            machine.sync()
            figures.marked_tips += tip_has_markers(self.origin)
        return self.finish()

    def origin_clone(self) -> Path:
        return self.a.root  # a's tree, as it is after its own sync of the round

    def finish(self) -> SoakFigures:
        figures = self.figures
        a_files, b_files = shared_files(self.a.root), shared_files(self.b.root)
        figures.identical = a_files == b_files and self.a.head() == self.b.head() == self.origin.head()
        everything = b"".join(b_files.values())
        figures.writer_lines = len(self.written)
        figures.lines_lost = sum(1 for line in self.written if line.encode() not in everything)
        figures.duplicate_entries = len(doubled_pointers(Spine(b_files[SPINE])))
        figures.duplicate_details = duplicated_details(b_files)
        figures.share_last = detail_share(b_files)
        figures.detail_bytes = detail_bytes(b_files)
        figures.commits, figures.merges = history(self.origin)
        return figures
