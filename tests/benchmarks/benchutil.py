"""What every benchmark under tests/benchmarks/ measures, and how it reports it.

A sample is CPU time (user+sys) and wall time. Child processes are measured with ``os.wait4``
(their own rusage, nothing of ours); in-process calls with ``time.process_time``. Candidates of
one comparison run interleaved, round by round, after a warm-up round, so that a load spike on the
shared machine hits all of them alike; the figures are medians of the rounds, and a ratio is
always against a baseline measured in the same run. The load average is printed with every
table, since absolute times on a loaded machine mean little on their own.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

MIN_RUNS = 5


@dataclass(frozen=True)
class Sample:
    cpu: float  # user + sys seconds
    wall: float


@dataclass
class Series:
    name: str
    samples: list[Sample] = field(default_factory=list)

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def min_wall(self) -> float:
        return min(s.wall for s in self.samples)

    def wall_quantile(self, q: float) -> float:
        """The wall time that ``q`` of the runs stayed under (0.99: the p99), nearest rank."""
        walls = sorted(s.wall for s in self.samples)
        return walls[min(len(walls) - 1, int(len(walls) * q))]


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def run_child(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | str | None = None,
              ok_codes: tuple[int, ...] = (0,)) -> Sample:
    """Run a command to its end; its own CPU (user+sys, from wait4) and wall time.

    The child may write bytecode caches, as Python does on a user's machine (and pip at install
    time), even where this shell says PYTHONDONTWRITEBYTECODE: a start-up measured without them
    would be the cost of compiling every module again, which no installed copy pays (the
    warm-up run writes them)."""
    child_env = dict(env) if env is not None else dict(os.environ)
    child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    child = subprocess.Popen(list(argv), env=child_env, cwd=cwd,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    child.stderr.close()
    if child.returncode not in ok_codes:
        raise RuntimeError(f"{' '.join(argv)} exited {child.returncode}:\n{errors.decode(errors='replace')}")
    return Sample(usage.ru_utime + usage.ru_stime, wall)


def run_call(action: Callable[[], object]) -> Sample:
    """Run a function in this process; the CPU and wall time it took."""
    cpu, started = time.process_time(), time.perf_counter()
    action()
    return Sample(time.process_time() - cpu, time.perf_counter() - started)


def tree_cpu() -> float:
    """CPU (user+sys) of this process and of the children it has waited for, so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Stopwatch:
    """CPU and wall time since it was made, for work that is one run, not a benchmark's round
    (a fuzzing run, an acceptance run): its children's CPU counts once they are waited for."""

    def __init__(self) -> None:
        self.cpu, self.wall = tree_cpu(), time.perf_counter()

    def sample(self) -> Sample:
        return Sample(tree_cpu() - self.cpu, time.perf_counter() - self.wall)


def read_every_file(root: Path) -> int:
    """The plain-Python baseline of any pass that reads a store: every file's bytes read once
    (git's own folder left out), nothing parsed. Returns the bytes read."""
    total = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                total += len(handle.read())
    return total


def make_store(target: Path, scale: int, stores: Path | None = None, layout: str = "migrated") -> Path:
    """A benchmark store at ``target``: a copy of ``stores``/x<scale> when given (storegen's
    output, made once), else generated now. Either way outside any timing."""
    if stores is not None:
        shutil.copytree(stores / f"x{scale}", target, symlinks=True)
    else:
        from storegen import generate_store  # only the scripts that make stores need it
        generate_store(target, scale, layout=layout)
    return target


def on_fresh_copy(pristine: Path, scratch: Path, work: Callable[[Path], Sample]) -> Callable[[], Sample]:
    """A candidate for work that changes a store: each round copies ``pristine`` into
    ``scratch`` (untimed), lets ``work`` measure itself on the copy, then removes the copy."""
    rounds = iter(range(1_000_000))

    def candidate() -> Sample:
        target = scratch / f"{pristine.name}-{next(rounds)}"
        shutil.copytree(pristine, target, symlinks=True)
        try:
            return work(target)
        finally:
            shutil.rmtree(target, ignore_errors=True)
    return candidate


def interleaved(candidates: Mapping[str, Callable[[], Sample]], runs: int = MIN_RUNS,
                warmup: int = 1) -> dict[str, Series]:
    """Each candidate once per round, the order rotated every round; ``warmup`` rounds dropped."""
    runs = max(runs, MIN_RUNS)
    names = list(candidates)
    series = {name: Series(name) for name in names}
    for round_number in range(warmup + runs):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            sample = candidates[name]()
            if round_number >= warmup:
                series[name].samples.append(sample)
    return series


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def describe(series: Series) -> str:
    return (f"{series.name}: CPU {ms(series.cpu)}, wall {ms(series.wall)} "
            f"(min {ms(series.min_wall)}, n={len(series.samples)})")


def show(found: Mapping[str, Series], indent: str = "    ") -> None:
    for series in found.values():
        print(f"{indent}{describe(series)}", flush=True)


def ratio(of: Series, to: Series, *, wall: bool = False) -> float:
    if wall:
        return of.wall / to.wall
    return of.cpu / to.cpu


def versus(of: Series, to: Series) -> str:
    """Both ratios of one comparison, named: CPU is the work done, wall what a user waits."""
    return f"{of.name} / {to.name}: CPU {ratio(of, to):.2f}x, wall {ratio(of, to, wall=True):.2f}x"


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "MISSED"


def distilld_install() -> str:
    """How this Python has distilld: an editable install (pip install -e) puts an import hook in
    site that every process start pays for, and that no user's install has; a start-up figure
    means little without saying which."""
    import importlib.util
    import sysconfig

    spec = importlib.util.find_spec("distilld")
    if spec is None or spec.origin is None:
        return "distilld is not importable here"
    origin = Path(spec.origin).resolve()
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if site in origin.parents:
        return f"distilld: non-editable install (as a user installs it), in {site}"
    hooked = any(site.glob("__editable__*distilld*"))
    kind = "editable install (pip install -e: its import hook runs at every start)" if hooked else "source folder"
    return f"distilld: {kind}, from {origin.parent}"


def header(title: str, runs: int) -> None:
    print(f"\n{title}")
    print(f"  {load_average()}; Python {sys.version.split()[0]}; median of {max(runs, MIN_RUNS)} runs "
          "after a warm-up, interleaved")
    print(f"  {distilld_install()}")


def row(what: str, value: str, target: str, met: bool | None = None) -> None:
    """One line of the summary table the README copies."""
    mark = "" if met is None else ("  met" if met else "  MISSED")
    print(f"  | {what} | {value} | {target} |{mark}", flush=True)
