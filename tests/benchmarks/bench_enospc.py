"""A full disk at every amount of free space: restore, gc and compaction on a small tmpfs.

For each pass the starting store (a migrated store: for restore one whose gc already archived a
file; its ledger padded to end a few bytes before a page boundary, so that the pass's ledger
line needs a new page) is copied onto a fresh tmpfs, and a filler file leaves exactly k free pages, for every k
from 0 until a run needs no recovery (and a few pages beyond). The pass runs as the real command
(``python -m distilld ...``, the state folder on the ordinary disk); then the filler is deleted
(space is freed) and the same command runs again, which recovers first. A run is clean when,
after the fault, every ledger line is whole and every journal reads, and after the rerun the
store holds exactly the bytes of an uninterrupted run (time stamps aside) with no `.lock` left.

The tmpfs needs root (``mount -t tmpfs``); without it the sweep falls back to the injected-fault
sweep of tests/engine/test_full_disk.py (every byte of every append and journal write).

    sudo .venv/bin/python tests/benchmarks/bench_enospc.py [--passes restore,gc,compaction]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "engine")]

from benchutil import load_average  # noqa: E402
from builders import EM, KESTREL_ENTRY, StoreBuilder, healthy_store  # noqa: E402
from distilld.store.paths import LEDGER  # noqa: E402
from full_disk import tree, whole_store_problems  # noqa: E402
from maintenance_fixtures import migrated_store_over_targets  # noqa: E402

PAGE = 4096
STAMP_RE = re.compile(rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
TAIL_PAGES = 4  # clean first runs in a row that end a sweep


def stale_store(root: Path) -> None:
    b = healthy_store(root)
    b.tier("projects/c.md", "# C\n\n- C was a one-off migration.\n- Rollback script in ops.\n",
           domain="project", scope="C migration", last_updated="2025-02-01")
    entry = f"- [C](projects/c.md) {EM} C one-off migration of the billing tables. Read for C.\n"
    b.write("SPINE.md", b.read("SPINE.md").decode().replace(KESTREL_ENTRY + "\n", KESTREL_ENTRY + "\n" + entry))
    b.rebuild_catalog()


def pad_ledger(root: Path, end_before_page: int, known_growth: int = 0) -> None:
    """Add one archived file whose ledger line is as long as it takes for the ledger to end
    ``end_before_page`` bytes before a page boundary once ``known_growth`` more bytes are
    appended (the gc that builds the restore's store): the next append then crosses a page, and
    on a full tmpfs it is cut there."""
    b = StoreBuilder(root)
    b.write("archive/projects/padding.md", "---\nscope: padding\nlast_updated: 2025-01-01\n---\n\n# Padding\n")
    entry = f"- [Padding](projects/padding.md) {EM} padding"
    line = b.archive_line("2026-09-12T08:00:00Z", "projects/padding.md", entry, reason="padding ")
    size = len(b.read(LEDGER)) + len(line.encode()) + 1 + known_growth
    fill = (-size - end_before_page) % PAGE
    b.append_ledger(b.archive_line("2026-09-12T08:00:00Z", "projects/padding.md", entry,
                                   reason="padding " + "x" * fill))
    b.rebuild_catalog()


def distilld(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "distilld", *args], env=env, capture_output=True, timeout=300)


@dataclass
class Pass:
    name: str
    build: Callable[[Path, dict[str, str], int], None]
    args: Callable[[Path], list[str]]


def build_archived(root: Path, env: dict[str, str], shift: int) -> None:
    probe = root.with_name(root.name + "-probe")
    stale_store(probe)
    before = (probe / LEDGER).stat().st_size
    assert distilld(env, "gc", str(probe), "--apply").returncode == 0
    growth = (probe / LEDGER).stat().st_size - before  # the gc's own line
    shutil.rmtree(probe)
    stale_store(root)
    pad_ledger(root, shift, growth)
    done = distilld(env, "gc", str(root), "--apply")
    assert done.returncode == 0, done.stderr


def build_stale(root: Path, env: dict[str, str], shift: int) -> None:
    stale_store(root)
    pad_ledger(root, shift)


PASSES = {
    "restore": Pass("restore", build_archived, lambda root: ["restore", "archive/projects/c.md", str(root)]),
    "gc": Pass("gc", build_stale, lambda root: ["gc", str(root), "--apply"]),
    "compaction": Pass("compaction", lambda root, env, shift: migrated_store_over_targets(root, projects=12),
                       lambda root: ["compact", str(root), "--apply"]),
}
# Where the ledger ends before a page boundary (bytes) when the pass appends its line: the
# line is cut after that many bytes on a full disk. Compaction writes no ledger line.
SHIFTS = {"restore": (1, 40, 90, 150), "gc": (1, 100, 200, 350), "compaction": (0,)}


def normalised(files: dict[str, bytes]) -> dict[str, bytes]:
    return {path: STAMP_RE.sub(b"<stamp>", data) for path, data in files.items() if not path.startswith(".lock")}


def mount_tmpfs(where: Path, size: int) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True).returncode == 0


def unmount(where: Path) -> None:
    subprocess.run(["umount", str(where)], capture_output=True, check=False)


def free_bytes(path: Path) -> int:
    info = os.statvfs(path)
    return info.f_bavail * info.f_frsize


@dataclass
class Tally:
    runs: int = 0
    faulted: int = 0  # the first run did not finish (exit other than 0)
    clean: int = 0
    problems: list[str] = field(default_factory=list)


def one_run(spec: Pass, template: Path, mount: Path, pages: int, env: dict[str, str],
            expected: dict[str, bytes], size: int) -> tuple[bool, bool, list[str]]:
    """(first run faulted, clean, problems) for ``pages`` free pages."""
    if not mount_tmpfs(mount, size):
        raise SystemExit(f"mount of {mount} failed")
    # A state folder of its own: the one of the run before remembers that store's ledger.
    state = Path(env["DISTILLD_STATE_DIR"]) / f"run-{pages}"
    env = {**env, "DISTILLD_STATE_DIR": str(state)}
    try:
        root = mount / "store"
        shutil.copytree(template, root, symlinks=True)
        filler = mount / "filler"
        with open(filler, "wb") as handle:
            spare = free_bytes(mount) - pages * PAGE
            handle.write(b"\0" * max(0, spare))
        first = distilld(env, *spec.args(root))
        problems = [f"after the fault: {p}" for p in whole_store_problems(root)]
        filler.unlink()
        second = distilld(env, *spec.args(root))
        # 2 only for a restore that the recovery already finished: nothing is archived there now
        if second.returncode != 0 and not (spec.name == "restore" and second.returncode == 2):
            problems.append(f"the rerun exited {second.returncode}: {second.stderr.decode(errors='replace')[:200]}")
        problems += [f"after the rerun: {p}" for p in whole_store_problems(root)]
        got = normalised(tree(root))
        differ = sorted(p for p in expected.keys() | got.keys() if expected.get(p) != got.get(p))
        if differ:
            problems.append(f"ended unlike an uninterrupted run in {differ[:4]}")
        if (root / ".lock").exists():
            problems.append(".lock left behind")
        return first.returncode != 0, not problems, [f"{pages} free pages: {p}" for p in problems]
    finally:
        unmount(mount)
        shutil.rmtree(state, ignore_errors=True)


def sweep_tmpfs(names: list[str], max_pages: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-enospc-"))
    env = {**os.environ, "DISTILLD_STATE_DIR": str(work / "state"), "DISTILLD_RUNTIME_DIR": str(work / "run"),
           "DISTILLD_CONFIG_DIR": str(work / "config")}
    env.pop("DISTILLD_CRASH_AT", None)
    mount = work / "mnt"
    print(f"# ENOSPC sweep on tmpfs ({load_average()})")
    print("pass (ledger ends N bytes before a page)  runs  faulted  clean  free pages swept")
    try:
        for name in names:
            spec = PASSES[name]
            total = Tally()
            for shift in SHIFTS[name]:
                template = work / f"{name}-{shift}-template"
                spec.build(template, env, shift)
                reference = work / f"{name}-{shift}-reference"
                shutil.copytree(template, reference, symlinks=True)
                done = distilld(env, *spec.args(reference))
                assert done.returncode == 0, done.stderr
                expected = normalised(tree(reference))
                used = sum(p.stat().st_size // PAGE + 2 for p in template.rglob("*") if p.is_file())
                size = (used + max_pages + 64) * PAGE
                tally = Tally()
                pages, tail = 0, 0
                while pages <= max_pages and tail < TAIL_PAGES:
                    faulted, clean, problems = one_run(spec, template, mount, pages, env, expected, size)
                    tally.runs += 1
                    tally.faulted += faulted
                    tally.clean += clean
                    tally.problems += problems
                    tail = tail + 1 if not faulted and clean else 0
                    pages += 1
                shown = f"{name} ({shift} B)" if name != "compaction" else name
                print(f"{shown:<18} {tally.runs:>5} {tally.faulted:>8} {tally.clean:>6}  0..{pages - 1}", flush=True)
                for problem in tally.problems[:6]:
                    print(f"    {problem}", flush=True)
                total.runs += tally.runs
                total.faulted += tally.faulted
                total.clean += tally.clean
            print(f"{name + ' (all)':<18} {total.runs:>5} {total.faulted:>8} {total.clean:>6}", flush=True)
    finally:
        unmount(mount)
        shutil.rmtree(work, ignore_errors=True)


def sweep_injected() -> None:
    import pytest  # the fixtures of the injected sweep live with its tests

    from test_full_disk import SCENARIOS, sweep

    print(f"# ENOSPC injected at every byte (no tmpfs could be mounted; {load_average()})")
    for scenario in SCENARIOS:
        with tempfile.TemporaryDirectory() as folder:
            with pytest.MonkeyPatch.context() as patch:
                for name in ("DISTILLD_STATE_DIR", "DISTILLD_RUNTIME_DIR", "DISTILLD_CONFIG_DIR"):
                    patch.setenv(name, str(Path(folder) / name.lower()))
                points, failures = sweep(Path(folder), scenario, every_byte=True)
        print(f"{scenario:<11} {points:>6} faults, {points - len(failures):>6} clean")
        for failure in failures[:10]:
            print(f"    {failure}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", default="restore,gc,compaction")
    parser.add_argument("--max-pages", type=int, default=160)
    parser.add_argument("--injected", action="store_true", help="the injected-fault sweep even where a tmpfs mounts")
    options = parser.parse_args()
    probe = Path(tempfile.mkdtemp(prefix="bench-enospc-probe-"))
    can_mount = not options.injected and mount_tmpfs(probe, 64 * PAGE)
    if can_mount:
        unmount(probe)
    probe.rmdir()
    if can_mount:
        sweep_tmpfs(options.passes.split(","), options.max_pages)
    else:
        sweep_injected()


if __name__ == "__main__":
    main()
