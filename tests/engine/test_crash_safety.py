"""Crash safety of gc apply, gc recovery, gc revert and restore, with real SIGKILLed processes.

Every write boundary of the engine (``crashpoint`` in engine/gc.py and engine/restore.py) is hit
in a child ``python -m distilld ...`` that kills itself there (``DISTILLD_CRASH_AT``), at every
occurrence of that boundary in an uninterrupted run. The crashed child leaves its `.lock` behind,
as a killed process does; the test ages that line past the 300 s staleness (what waiting five
minutes would do) and runs the same command again, which takes the stale lock over, recovers
the unfinished work first and finishes it. The store must then be whole:

* C1-C3 pass; for gc apply (and gc recovery) C4 passes against a copy of the store taken before
  the pass; for revert and restore (files leave the archive, which C4.6 objects to) every
  trimmed line of every file that existed before is still in that file, active or archived;
* the ledger agrees with the tree in both directions, and was only appended to;
* no stub (X and archive/X both present), no temp files, no `.lock`;
* running the command once more changes nothing.

Recovery and the run after it are done in-process through the CLI's ``main``: the same code
path as the command line, without paying a process start-up twice per case.

Also here: recovery that meets a stub at the source path stops and changes nothing; a killed
pass followed by a *different* write command (every one recovers unfinished work first) leaves
a whole store that the next gc can work on; and the boundary/occurrence table is checked
against the engine's source and against an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from boundaries import boundaries_in, count_reached, executor_boundaries, sampled
from builders import EM, KESTREL_ENTRY, StoreBuilder, healthy_store
from distilld.cli import main as cli_main
from distilld.crashpoints import CRASH_ENV
from distilld.engine.passes.gc.manifest import all_manifests
from distilld.engine.lock import format_iso, read_lock
from distilld.policy import load_policy
from distilld.store.invariants import check_store
from distilld.store.lossless import check_c4
from distilld.store.paths import ARCHIVE_PREFIX, LEDGER, is_legacy, strip_archive
from distilld.store.snapshot import take_snapshot

LIMITS = load_policy().limits

pytestmark = pytest.mark.slow

# -- the boundaries and how often an uninterrupted run reaches each one ---------------------------

GC_BOUNDARIES = ("manifest-written", "ledger-appended", "file-moved", "spine-edited",
                 "manifest-marked", "catalog-written")
RESTORE_BOUNDARIES = ("journal-written", "ledger-appended", "file-moved", "file-stamped",
                      "spine-edited", "step-marked", "catalog-written")

# Where the gc apply is first crashed in the "recovery" scenario: the split family's parent is
# archived, its child (split_from the parent) is not, the SPINE still points at both.
RECOVERY_SETUP_CRASH = ("file-moved", 1)

# Measured on the fixture store below (4 moves: projects/a.md, projects/a-2.md, projects/b.md,
# projects/c.md; the restore brings back the family a.md + a-2.md). A boundary reached k times is
# crashed at every n in 1..k; test_occurrence_table_matches_an_uninterrupted_run keeps this
# table honest, and crashing at the last n proves k is not too high.
OCCURRENCES: dict[str, dict[str, int]] = {
    # 1 manifest, then per move: ledger line, move, SPINE edit, done flag; 1 catalog.
    "apply": {"manifest-written": 1, "ledger-appended": 4, "file-moved": 4, "spine-edited": 4,
              "manifest-marked": 4, "catalog-written": 1},
    # Recovering the manifest left by RECOVERY_SETUP_CRASH: move 1 (already moved) goes on from
    # its SPINE edit, moves 2-4 are carried out; no new manifest (nothing is left to plan).
    "recovery": {"manifest-written": 0, "ledger-appended": 3, "file-moved": 3, "spine-edited": 4,
                 "manifest-marked": 4, "catalog-written": 1},
    # Revert of the 4 done moves, newest first.
    "revert": {"manifest-written": 0, "ledger-appended": 4, "file-moved": 4, "spine-edited": 4,
               "manifest-marked": 4, "catalog-written": 1},
    # 2 members, each three steps: the ledger line and the move; the stamp; the SPINE entry (one
    # line names both, so the second finds it there); each step marked in the journal once done.
    "restore": {"journal-written": 1, "ledger-appended": 2, "file-moved": 2, "file-stamped": 2,
                "spine-edited": 2, "step-marked": 6, "catalog-written": 1},
}
OPERATIONS = tuple(OCCURRENCES)
RESTORE_TARGET = "projects/a.md"


def crash_cases() -> list[pytest.param]:
    """(operation, boundary, n) for every boundary and every occurrence it has: one occurrence of
    each boundary of each operation in the sample, the others in the exhaustive tier."""
    cases = []
    for operation, table in OCCURRENCES.items():
        for boundary, count in table.items():
            for n in range(1, count + 1):
                cases.append(pytest.param(operation, boundary, n, id=f"{operation}-{boundary}-{n}"))
    return sampled(cases, group=lambda case: case.values[:2])


# -- the fixture store ------------------------------------------------------------------------------

def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


STALE_ENTRIES = [
    (f"- [A](projects/a.md) + [A, continued](projects/a-2.md) {EM} nightly loads, retired in spring."
     " Read for the old loads."),
    f"- [B](projects/b.md) {EM} B dashboards | moved to the BI tool. Read for dashboards.",
    f"- [C](projects/c.md) {EM} C one-off migration of the billing tables. Read for C.",
]


def stale_store(root: Path) -> StoreBuilder:
    """healthy_store plus four stale project files (the CLI uses the real clock).

    projects/a.md + projects/a-2.md are a split family on one SPINE line; projects/b.md has an
    evidence twin, a [DIRECTIVE] and a `|` in its SPINE hook; projects/c.md is plain. Kestrel is
    made recent for whatever today is, so it never joins the moves.
    """
    b = healthy_store(root)
    kestrel = b.read("projects/kestrel.md").replace(b"last_updated: 2026-11-02",
                                                    f"last_updated: {today()}".encode())
    b.write("projects/kestrel.md", kestrel)
    b.tier("projects/a.md", "# A\n\n## Background\n\n- A ran the nightly loads.\n- Owned by the data team.\n\n"
           "Continued in `projects/a-2.md`.\n",
           domain="project", scope="A nightly loads", last_updated="2025-01-01")
    b.tier("projects/a-2.md", "## Retirement\n\n- A was retired in spring.\n- Its tables were dropped.\n",
           domain="project", scope="A nightly loads (continued)", last_updated="2025-01-01",
           split_from="projects/a.md")
    b.tier("projects/b.md", "# B\n\n- B dashboards moved to the new BI tool.\n"
           "- [DIRECTIVE 2025-01-01] never delete a dashboard without asking.\n",
           domain="project", scope="B dashboards", last_updated="2025-01-01")
    b.tier("projects/c.md", "# C\n\n- C was a one-off migration.\n- Rollback script in ops.\n",
           domain="project", scope="C migration", last_updated="2025-02-01")
    b.write("evidence/projects/b.md", "---\nevidence_for: projects/b.md\n---\n## Evidence log\n\n"
            "- 2025-01-01 observe: dashboards moved\n")
    spine = b.read("SPINE.md").decode()
    spine = spine.replace(KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + "".join(e + "\n" for e in STALE_ENTRIES))
    b.write("SPINE.md", spine)
    # Stamped with the real clock, so a catalog left un-rebuilt by a crash shows up as stale.
    b.rebuild_catalog(datetime.now(timezone.utc))
    return b


# -- running distilld -------------------------------------------------------------------------------

@dataclass
class Child:
    returncode: int
    pid: int
    stdout: str
    stderr: str


def run_child(args: list[str], crash: tuple[str, int] | None = None) -> Child:
    """``python -m distilld ARGS`` in a fresh process, crashing at ``crash`` if given."""
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash is not None:
        env[CRASH_ENV] = f"{crash[0]}:{crash[1]}"
    proc = subprocess.Popen([sys.executable, "-m", "distilld", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    return Child(proc.returncode, proc.pid, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """The CLI in this process (never crashes: DISTILLD_CRASH_AT is not set here)."""
    assert CRASH_ENV not in os.environ
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(args)
    out.flush()
    err.flush()
    return code, out.buffer.getvalue().decode("utf-8", "replace"), err.buffer.getvalue().decode("utf-8", "replace")


def crash(args: list[str], root: Path, boundary: str, n: int) -> None:
    """Run ARGS in a child that SIGKILLs itself at boundary:n; leave its lock stale."""
    child = run_child(args, (boundary, n))
    assert child.returncode == -signal.SIGKILL, (
        f"expected a SIGKILL at {boundary}:{n}, got exit {child.returncode}\n{child.stdout}{child.stderr}")
    age_dead_owners_lock(root, child.pid)


def age_dead_owners_lock(root: Path, pid: int) -> None:
    """The killed child still "holds" `.lock`: make its line 301+ s old, as time would."""
    line = read_lock(root)
    assert line is not None, "a killed pass should leave its .lock behind"
    assert line.owner.startswith("distilld.") and line.owner.endswith(f".{pid}"), line
    old = int(time.time()) - 3600
    temp = root / ".lock.test-aging"
    temp.write_text(f"{line.owner} {old} {format_iso(old)}\n")
    os.replace(temp, root / ".lock")


def gc_apply(root: Path) -> list[str]:
    return ["gc", str(root), "--apply"]


def gc_revert(root: Path) -> list[str]:
    return ["gc", str(root), "--revert"]


def restore(root: Path, target: str = RESTORE_TARGET) -> list[str]:
    return ["restore", target, str(root)]


def clean(args: list[str]) -> str:
    code, out, err = run_cli(args)
    assert code == 0, f"{args}: exit {code}\n{out}{err}"
    return out


def recovery_exit_ok(operation: str, code: int, err: str) -> bool:
    """Exit 0; or, when the interrupted pass was finished by the recovery that runs first, the
    refusal of the pass then asked for again (exit 2): a restore finds nothing archived at that
    path any more, a revert finds the manifest already reverted. Either way nothing more changes."""
    if code == 0:
        return True
    if operation == "restore":
        return code == 2 and RESTORE_TARGET in err
    if operation == "revert":
        return code == 2 and "already reverted" in err
    return False


def recover(operation: str, args: list[str]) -> None:
    """The same command again, no crash: it recovers the unfinished work first."""
    code, out, err = run_cli(args)
    assert recovery_exit_ok(operation, code, err), f"exit {code}\n{out}{err}"


# -- what a whole store looks like ------------------------------------------------------------------

TEMP_MARKERS = (".distilld-tmp", ".lock.new", ".lock.swap", ".status.tmp", ".lock.test-aging")


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if any(marker in p.name for marker in TEMP_MARKERS))


def stubs(root: Path) -> list[str]:
    """Tier paths present both as X and archive/X."""
    snap = take_snapshot(root)
    return [x for x in snap.tier_paths if snap.exists(ARCHIVE_PREFIX + x)]


def ledger_tree_disagreements(root: Path) -> list[str]:
    """The last ledger event of every path against where the file is, in both directions."""
    snap = take_snapshot(root)
    ledger = snap.ledger
    state = ledger.last_event_by_path if ledger else {}
    problems = []
    for x, line in state.items():
        active, archived = snap.exists(x), snap.exists(ARCHIVE_PREFIX + x)
        if line.is_archive and not (archived and not active):
            problems.append(f"{x}: last event archive (line {line.number}) but active={active} archived={archived}")
        if line.is_restore and not (active and not archived):
            problems.append(f"{x}: last event {line.event} (line {line.number}) but active={active} archived={archived}")
    for path in snap.archive_paths:
        if is_legacy(path):
            continue
        x = strip_archive(path)
        if x not in state or not state[x].is_archive:
            problems.append(f"{path}: archived, but the ledger's last event for {x} is "
                            f"{state[x].event if x in state else 'missing'}")
    for x in snap.tier_paths:
        if x in state and not state[x].is_restore:
            problems.append(f"{x}: active, but the ledger's last event for it is {state[x].event}")
    return problems


def failing(findings: list) -> list[str]:
    return [f"[{f.group}] {f.code}: {f.message}" for f in findings if f.severity == "fail"]


def trimmed_lines(raw: bytes) -> list[str]:
    return [line.strip() for line in raw.decode("utf-8", "surrogateescape").replace("\r", "").split("\n")
            if line.strip()]


FRONTMATTER_RESTAMPED = ("last_updated:", "recall_count:")


def frontmatter_lines(raw: bytes) -> set[int]:
    """Indexes (in trimmed_lines order) of the frontmatter's key lines."""
    lines = trimmed_lines(raw)
    if not lines or lines[0] != "---" or not raw.replace(b"\r", b"").startswith(b"---\n"):
        return set()
    inside = set()
    for index, line in enumerate(lines[1:], start=1):
        if line == "---":
            break
        inside.add(index)
    return inside


def lost_lines(before: Path, after: Path, restamped: frozenset[str] = frozenset()) -> list[str]:
    """Every trimmed non-blank line of every tier or archive file of ``before`` must still be in
    that file, wherever it is now (X or archive/X). For a path in ``restamped`` (a restore sets
    last_updated, and drops recall_count on drift) those frontmatter lines may differ."""
    snap = take_snapshot(before)
    problems = []
    for path in snap.tier_paths + snap.archive_paths:
        x = strip_archive(path)
        found = [p for p in (after / x, after / (ARCHIVE_PREFIX + x)) if p.is_file()]
        if len(found) != 1:
            problems.append(f"{path}: expected at exactly one of {x}, archive/{x}; found {found}")
            continue
        raw = (before / path).read_bytes()
        lines = trimmed_lines(raw)
        skip = {i for i in frontmatter_lines(raw) if x in restamped and lines[i].startswith(FRONTMATTER_RESTAMPED)}
        wanted = Counter(line for i, line in enumerate(lines) if i not in skip)
        have = Counter(trimmed_lines(found[0].read_bytes()))
        for line, count in (wanted - have).items():
            problems.append(f"{path} -> {found[0].relative_to(after)}: lost x{count}: {line[:70]}")
    return problems


def tree_hashes(root: Path, skip: tuple[str, ...] = ("data/", ".status")) -> dict[str, str]:
    hashes = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(rel == s or (s.endswith("/") and rel.startswith(s)) for s in skip):
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def assert_whole(root: Path, before: Path, operation: str) -> None:
    """Everything a store must be after a recovered pass (see the module docstring)."""
    after = take_snapshot(root)
    assert failing(check_store(after, LIMITS)) == []
    if operation in ("apply", "recovery"):
        assert failing(check_c4(take_snapshot(before), after)) == []
    else:
        restamped = frozenset({"projects/a.md", "projects/a-2.md"}) if operation == "restore" else frozenset()
        assert lost_lines(before, root, restamped) == []
        spine_before = Counter(trimmed_lines((before / "SPINE.md").read_bytes()))
        assert spine_before - Counter(trimmed_lines((root / "SPINE.md").read_bytes())) == Counter()
    assert ledger_tree_disagreements(root) == []
    assert stubs(root) == []
    ledger_before = (before / LEDGER).read_bytes()
    assert (root / LEDGER).read_bytes().startswith(ledger_before), "the ledger was rewritten, not appended to"
    for twin in take_snapshot(before).evidence_paths:
        assert (root / twin).read_bytes() == (before / twin).read_bytes(), f"{twin} changed"
    assert leftovers(root) == []
    assert not (root / ".lock").exists()
    assert (root / ".status").read_text().startswith("idle ")
    assert (root / ".lock.takeover").read_bytes() == b""


def assert_outcome(root: Path, operation: str, original: Path) -> None:
    """The pass did what it was asked, not only something consistent."""
    snap = take_snapshot(root)
    moved = ("projects/a.md", "projects/a-2.md", "projects/b.md", "projects/c.md")
    if operation in ("apply", "recovery"):
        for x in moved:
            assert (root / ARCHIVE_PREFIX / x).read_bytes() == (original / x).read_bytes(), x
        manifests = all_manifests(root)
        assert manifests and all(not m.unfinished for m in manifests)
    elif operation == "revert":
        for x in moved:
            assert (root / x).read_bytes() == (original / x).read_bytes(), x
        assert all(m.reverted for m in all_manifests(root))
    else:
        for x in ("projects/a.md", "projects/a-2.md"):
            assert snap.exists(x) and f"last_updated: {today()}" in snap.knowledge(x).text, x
        for x in ("projects/b.md", "projects/c.md"):
            assert snap.exists(ARCHIVE_PREFIX + x), x


# -- the scenarios ------------------------------------------------------------------------------------

@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "store"
    stale_store(root)
    shutil.copytree(root, tmp_path / "original")
    yield root


def prepare(operation: str, root: Path, target: str = RESTORE_TARGET) -> list[str]:
    """Bring the store to the state the operation starts from; return its command."""
    if operation in ("revert", "restore"):
        clean(gc_apply(root))
        return gc_revert(root) if operation == "revert" else restore(root, target)
    if operation == "recovery":
        crash(gc_apply(root), root, *RECOVERY_SETUP_CRASH)
    return gc_apply(root)


@pytest.mark.parametrize(("operation", "boundary", "n"), crash_cases())
def test_crash_then_recover(store: Path, tmp_path: Path, operation: str, boundary: str, n: int) -> None:
    original = tmp_path / "original"
    before = tmp_path / "before"
    if operation == "recovery":
        shutil.copytree(store, before)  # C4 is against the store before the first, crashed apply
    args = prepare(operation, store)
    if operation != "recovery":
        shutil.copytree(store, before)

    crash(args, store, boundary, n)
    recover(operation, args)

    assert_whole(store, before, operation)
    assert_outcome(store, operation, original)

    first = tree_hashes(store)
    recover(operation, args)
    assert tree_hashes(store) == first, "a second recovery run changed the store"
    assert_whole(store, before, operation)


def test_recovery_stops_on_a_stub_at_the_source_path(store: Path) -> None:
    """A crash right after the first move, then an older client re-creates projects/a.md (a
    stub): recovery must stop, name the manifest and the path, and change nothing."""
    crash(gc_apply(store), store, "file-moved", 1)
    assert (store / "archive/projects/a.md").is_file() and not (store / "projects/a.md").exists()
    StoreBuilder(store).tier("projects/a.md", "# A\n\n- (stub re-created by an older client)\n",
                             scope="A nightly loads", last_updated=today())
    skip = (".status", ".lock", ".lock.takeover")  # the lock protocol's own files
    before = tree_hashes(store, skip)
    manifest = all_manifests(store)[0].path

    child = run_child(gc_apply(store))
    assert child.returncode == 6, child.stdout + child.stderr  # refused: the store cannot be changed safely
    assert str(manifest) in child.stderr and "projects/a.md" in child.stderr, child.stderr
    assert tree_hashes(store, skip) == before
    assert not (store / ".lock").exists()
    assert leftovers(store) == []

    code, out, err = run_cli(["restore", "projects/b.md", str(store)])  # restore recovers gc first
    assert code == 6 and "projects/a.md" in err, out + err
    assert tree_hashes(store, skip) == before


CROSS_CASES = [
    # (interrupted operation, boundary, n, the command run next); restores are of projects/a.md
    # (the split family, which the newest manifest moved) unless a path follows.
    ("revert", "ledger-appended", 1, "apply"),
    ("revert", "file-moved", 2, "restore"),
    ("restore", "journal-written", 1, "revert"),
    ("restore", "file-moved", 2, "revert"),
    ("restore:projects/marlin.md", "ledger-appended", 1, "revert"),  # archived before any manifest
    ("restore", "step-marked", 1, "apply"),
    ("apply", "file-moved", 2, "revert"),
    ("apply", "ledger-appended", 3, "restore"),
]


@pytest.mark.parametrize(("operation", "boundary", "n", "then"), [
    pytest.param(*case, id=f"{case[0].replace('projects/', '')}-{case[1]}-{case[2]}-then-{case[3]}")
    for case in CROSS_CASES])
def test_the_next_command_whatever_it_is_recovers_first(
        store: Path, tmp_path: Path, operation: str, boundary: str, n: int, then: str) -> None:
    """A pass killed mid-way, then a *different* write command: every write command takes the
    lock and recovers unfinished work first, so the store must come out whole (or the command
    must stop having changed nothing), and must not be left wedged for the next gc."""
    before = tmp_path / "before"
    operation, _, target = operation.partition(":")
    args = prepare(operation, store, target or RESTORE_TARGET)
    shutil.copytree(store, before)
    crash(args, store, boundary, n)

    command = {"apply": gc_apply, "revert": gc_revert, "restore": restore}[then](store)
    code, out, err = run_cli(command)
    assert code in (0, 2), out + err
    restamped = frozenset({"projects/a.md", "projects/a-2.md", "projects/marlin.md"})

    def assert_whole_now(moment: str) -> None:
        assert failing(check_store(take_snapshot(store), LIMITS)) == [], moment
        assert ledger_tree_disagreements(store) == [], moment
        assert stubs(store) == [], moment
        assert lost_lines(before, store, restamped) == [], moment
        assert leftovers(store) == [] and not (store / ".lock").exists(), moment

    assert_whole_now(f"after `{' '.join(command[:2])}` exited {code}: {err.strip()[:200]}")
    code, out, err = run_cli(gc_apply(store))
    assert code == 0, f"the store is wedged: the next gc --apply exits {code}: {err.strip()}"
    assert_whole_now("after the next gc --apply")


# -- the table of boundaries and occurrences ---------------------------------------------------------

def test_boundary_list_matches_the_engine() -> None:
    # gc: its manifest and revert, the one executor's operations (ledger line, move, SPINE edit),
    # the one finish step; restore: the driver's journal, the executor, the journal's step marks, the finish
    gc = boundaries_in("passes/gc/apply.py", "passes/gc/manifest.py", "finish.py") | {"ledger-appended",
                                                                                      "file-moved", "spine-edited"}
    assert gc == set(GC_BOUNDARIES)
    restore = boundaries_in("driver.py", "journal.py", "finish.py") | {
        "ledger-appended", "file-moved", "file-stamped", "spine-edited"}
    assert restore == set(RESTORE_BOUNDARIES)
    assert {"ledger-appended", "file-moved", "spine-edited", "file-stamped"} <= executor_boundaries()
    assert "step-marked" in boundaries_in("journal.py")
    for operation in ("apply", "recovery", "revert"):
        assert set(OCCURRENCES[operation]) == set(GC_BOUNDARIES)
    assert set(OCCURRENCES["restore"]) == set(RESTORE_BOUNDARIES)


def test_occurrence_table_matches_an_uninterrupted_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Count each boundary in an uninterrupted run of every operation (in-process)."""
    reached = count_reached(monkeypatch)
    commands = {"apply": gc_apply, "recovery": gc_apply, "revert": gc_revert, "restore": restore}

    for operation, expected in OCCURRENCES.items():
        root = tmp_path / operation
        stale_store(root)
        if operation == "recovery":
            crash(gc_apply(root), root, *RECOVERY_SETUP_CRASH)
        elif operation in ("revert", "restore"):
            clean(gc_apply(root))
        reached.clear()
        clean(commands[operation](root))
        assert {b: reached[b] for b in expected} == expected, operation
        assert set(reached) <= set(expected), operation


@pytest.mark.slow
@pytest.mark.parametrize("operation", ["gc", "restore"])
def test_a_ctrl_c_of_gc_or_restore_says_what_it_left_and_the_next_run_finishes_it(store: Path, operation: str,
                                                                                 tmp_path: Path) -> None:
    """gc and restore only roll forward: a Ctrl-C at a move leaves their journal. The message used to
    be a bare "interrupted"; it names the journal and the command that finishes it."""
    args = prepare(operation, store) if operation == "restore" else gc_apply(store)
    env = {**os.environ, CRASH_ENV: "file-moved:1", "DISTILLD_CRASH_SIGNAL": "SIGINT"}
    stopped = subprocess.run([sys.executable, "-m", "distilld", *args], env=env, capture_output=True, text=True,
                             timeout=300)
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert "Traceback" not in stopped.stderr
    rerun = "gc --apply" if operation == "gc" else f"restore {RESTORE_TARGET}"
    assert "is unfinished" in stopped.stderr and f"`distilld {rerun}`" in stopped.stderr, stopped.stderr

    finished = subprocess.run([sys.executable, "-m", "distilld", *args], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    said = "recovery: manifest" if operation == "gc" else "finished an interrupted restore"
    assert said in finished.stdout, finished.stdout
    assert [f for f in check_store(take_snapshot(store), LIMITS) if f.severity == "fail"] == []
