"""The hostile-store corpus: every write command, and the daemon's `run --once`, on stores with
symbolic links where the store keeps its folders, links planted as a move's destination, names
the ledger cannot hold, and journals and manifests crafted to point outside the store.

Each store sits in its own folder beside a ``canary`` folder (the links point there). Before and
after, the sha256 listing of the canary and of the whole parent folder (less the store) must be
the same; an audit hook on open/rename/link/remove/mkdir is the second witness. Afterwards every
ledger line parses, and a recovery run leaves no temp file.

The default run drives the commands in-process through the click entry point; the `slow` variant
runs every command and the daemon as `python -m distilld` child processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _pytest.mark.structures import ParameterSet
from boundaries import sampled
from distilld.cli import main as cli_main
from distilld.engine.guard import temp_owner_pid
from distilld.store.ledger import Ledger
from hostile import (
    audited_writes,
    busy_store,
    bytes_differing,
    outside,
    run_distilld,
    sha_listing,
)

Case = Callable[[Path, Path], None]


def _link_folder(relative: str) -> Case:
    def make(store: Path, canary: Path) -> None:
        place = store / relative
        moved = canary / relative.replace("/", "_")
        if place.exists():
            os.rename(place, moved)
        else:
            moved.mkdir(parents=True)
        place.parent.mkdir(parents=True, exist_ok=True)
        place.symlink_to(moved)
    make.__name__ = f"linked {relative}/"
    return make


def _link_file(relative: str, existing: bool) -> Case:
    def make(store: Path, canary: Path) -> None:
        target = canary / ("planted-" + relative.replace("/", "_"))
        if existing:
            target.write_bytes(b"not the store's\n")
        place = store / relative
        if place.exists():
            place.unlink()
        place.parent.mkdir(parents=True, exist_ok=True)
        place.symlink_to(target)
    make.__name__ = f"linked file {relative}{'' if existing else ' (dangling)'}"
    return make


def _odd_name(name: str, label: str) -> Case:
    def make(store: Path, canary: Path) -> None:
        (store / os.fsdecode(name.encode("utf-8", "surrogateescape"))).write_bytes(
            b"---\ndomain: project\nscope: odd\nlast_updated: 2026-01-01\n---\n\n# Odd\n")
    make.__name__ = f"name with {label}"
    return make


def _crafted_manifest(source: str, target: str) -> Case:
    def make(store: Path, canary: Path) -> None:
        (canary / "victim.md").write_bytes(b"# victim\n")
        folder = store / "data/gc-manifests"
        folder.mkdir(parents=True, exist_ok=True)
        move = {"from": source.format(canary=canary), "to": target.format(canary=canary),
                "sha256": "0" * 64, "sha256_norm": "0" * 64, "spine_entry": "", "done": False}
        (folder / "20261130T120000Z.json").write_text(json.dumps({"ts": "2026-11-30T12:00:00Z", "moves": [move]}))
        done = dict(move, done=True)
        (folder / "20261130T120001Z.json").write_text(json.dumps(
            {"ts": "2026-11-30T12:00:01Z", "moves": [done], "finished": True}))  # for --revert
    make.__name__ = f"crafted gc manifest {source} -> {target}"
    return make


def _crafted_compaction_journal(path: str) -> Case:
    def make(store: Path, canary: Path) -> None:
        folder = store / "data/compact-journals"
        folder.mkdir(parents=True)
        write = {"write": path.format(canary=canary), "before": None, "data": "# written outside\n"}
        move = {"move": "projects/kestrel.md", "to": path.format(canary=canary) + ".moved", "sha256": "0" * 64}
        head = {"ts": "2026-11-30T12:00:00Z", "today": "2026-11-30",
                "steps": [{"title": "crafted", "done": False, "ops": [write, move]}]}
        (folder / "20261130T120000Z.json").write_text(json.dumps(head) + "\n")
    make.__name__ = f"crafted compaction journal writing {path}"
    return make


def _crafted_restore_journal(path: str) -> Case:
    def make(store: Path, canary: Path) -> None:
        folder = store / "data/restore-journals"
        folder.mkdir(parents=True)
        member = {"path": path.format(canary=canary), "source": "archive/projects/marlin.md", "event": "restore",
                  "sha256": "0" * 64, "drift": False, "spine_entry": "", "index_detail": "", "steps": []}
        (folder / "20261130T120000Z.json").write_text(json.dumps(
            {"today": "2026-11-30", "members": [member], "finished": False}))
    make.__name__ = f"crafted restore journal to {path}"
    return make


CASES: list[Case] = [
    *(_link_folder(f) for f in ("projects", "craft", "ops", "profile", "feedback", "archive", "archive/projects",
                                "evidence", "evidence/craft", "inbox", "data", "data/gc-manifests")),
    _link_file("archive/projects/heron.md", existing=False),  # the destination of gc's move
    _link_file("archive/projects/heron.md", existing=True),
    _link_file("projects/marlin.md", existing=False),  # the destination of restore's move
    _link_file("archive/LEDGER.md", existing=True),
    _link_file("CATALOG.md", existing=True),
    _link_file("SPINE.md", existing=True),
    _link_file("data/gc-log.jsonl", existing=True),
    _odd_name("projects/new\nline.md", "a newline"),
    _odd_name("projects/cr\rret.md", "a CR"),
    _odd_name("projects/tab\tbed.md", "a tab"),
    _odd_name("projects/pipe | split.md", "' | '"),
    _odd_name("projects/-dash.md", "a leading dash"),
    _odd_name("projects/win<dows>?.md", "Windows-illegal characters"),
    _odd_name("projects/quote\".md", "a double quote"),
    _odd_name("projects/con.md", "a reserved device name"),
    _odd_name("projects/caf\udce9.md", "invalid UTF-8"),  # refused: the ledger must stay UTF-8
    _odd_name("projects/café-ünïcode.md", "non-ASCII (archived as usual)"),
    _crafted_manifest("../canary/victim.md", "archive/../canary/victim.md"),
    _crafted_manifest("{canary}/victim.md", "archive/{canary}/victim.md"),
    _crafted_compaction_journal("../canary/written.md"),
    _crafted_compaction_journal("{canary}/written.md"),
    _crafted_restore_journal("../canary/restored.md"),
]

COMMANDS: list[list[str]] = [
    ["gc", "--apply"], ["gc", "--revert"], ["gc", "--revert", "--manifest", "../../canary/victim.md"],
    ["restore", "archive/projects/marlin.md"], ["compact", "--apply"], ["migrate"], ["migrate", "--apply"],
    ["migrate", "--finish"], ["migrate", "--revert"], ["catalog", "--write"], ["lifecycle", "enable", "--store"],
    ["sync"],
]


def _args(command: list[str], store: Path) -> list[str]:
    return [*command, str(store)]


def build(tmp_path: Path, case: Case) -> tuple[Path, Path, Path]:
    region = tmp_path / "case"
    store, canary = region / "store", region / "canary"
    busy_store(store)
    (store / ".lifecycle").write_text("enabled\n")  # the daemon's scheduled gc runs too
    canary.mkdir(parents=True)
    (canary / "keep.md").write_bytes(b"# a file beside the store\n")
    case(store, canary)
    return region, store, canary


def malformed_ledger_lines(store: Path) -> int:
    ledger = store / "archive/LEDGER.md"
    if ledger.is_symlink() or not ledger.is_file():
        return 0
    parsed = Ledger(ledger.read_bytes())
    header_like = [t for t in parsed.text_lines if t and not t.startswith(("- ", "#", "<!--"))]
    return sum(1 for line in parsed.lines if line.problems) + len(header_like)


def temp_files_left(*folders: Path) -> list[str]:
    return sorted(str(p) for f in folders if f.exists() for p in f.rglob("*")
                  if temp_owner_pid(p.name) is not None and not p.is_symlink())


def figures(region: Path, store: Path, canary: Path, run: Callable[[], None],
            distilld_dirs: dict[str, Path]) -> dict[str, object]:
    canary_before = sha_listing(canary)
    parent_before = sha_listing(region, skip=store)
    with audited_writes() as written:
        run()
    # a recovery run, then nothing may be left over
    code = cli_main(["gc", "--apply", str(store)])
    assert code in (0, 1, 2, 6)  # done, a check failed, could not run, or refused as unsafe (the exit-code table)
    return {
        "bytes_outside": bytes_differing(canary_before, sha_listing(canary), canary)
        + bytes_differing(parent_before, sha_listing(region, skip=store), region),
        "canary_changed": sha_listing(canary) != canary_before,
        "audit_outside": outside([os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))
                                  for p in written], region.resolve(), [store.resolve()]),
        "malformed_ledger_lines": malformed_ledger_lines(store),
        "temp_files": temp_files_left(store, distilld_dirs["state"]),
    }


CLEAN = {"bytes_outside": 0, "canary_changed": False, "audit_outside": [], "malformed_ledger_lines": 0,
         "temp_files": []}


def kind(case: ParameterSet) -> str:
    """A linked folder, a linked file, an odd name, or a crafted file of one pass."""
    words = case.id.split() if case.id else ["?"]
    return " ".join(words[:2]) if words[0] == "crafted" or words[1:2] == ["file"] else words[0]


def corpus(per_kind: int) -> list[ParameterSet]:
    """Every case; ``per_kind`` of each kind in the seeded sample, the others exhaustive."""
    return sampled([pytest.param(c, id=c.__name__) for c in CASES], group=kind, keep=per_kind)


@pytest.mark.parametrize("case", corpus(per_kind=2))
def test_every_write_command_keeps_inside_the_store(tmp_path: Path, case: Case, distilld_dirs: dict[str, Path],
                                                   capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    region, store, canary = build(tmp_path, case)

    def run() -> None:
        for command in COMMANDS:
            cli_main(_args(command, store))

    assert figures(region, store, canary, run, distilld_dirs) == CLEAN
    capsysbinary.readouterr()


@pytest.mark.parametrize("case", [c for c in CASES if c.__name__.startswith(("linked", "name with"))],
                         ids=lambda c: c.__name__)
def test_what_refuses_says_why_and_leaves_the_files(tmp_path: Path, case: Case,
                                                    capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    def output() -> tuple[str, str]:
        out, err = capsysbinary.readouterr()
        return out.decode("utf-8", "surrogateescape"), err.decode("utf-8", "surrogateescape")

    _, store, canary = build(tmp_path, case)
    code = cli_main(["gc", "--apply", str(store)])
    out, err = output()
    name = case.__name__
    if name.startswith("linked") and "heron.md" not in name and "marlin.md" not in name:
        assert code == 2 and "is a symbolic link (to " in err, (out, err)
        assert str(canary) in err
        assert (store / "projects/heron.md").exists() or name == "linked projects/"
    elif name.startswith("name with") and "as usual" not in name:
        assert code == 0, err
        assert "name cannot be written to the ledger unchanged" in out
        odd = [p for p in (store / "projects").iterdir() if p.name not in ("heron.md", "kestrel.md", "osprey.md")]
        assert len(odd) == 1 and odd[0].is_file()  # left where it is
        assert cli_main(["check", str(store)]) in (0, 1)
        assert "no pass will archive, restore or catalog it" in output()[0]
        assert cli_main(["budget", str(store)]) == 0
        assert "file names no pass will archive, restore or catalog: 1" in output()[0]
    elif "as usual" in name:
        assert code == 0, err
        assert not [p for p in (store / "projects").iterdir() if "caf" in p.name]  # archived
        assert [p for p in (store / "archive/projects").iterdir() if "caf" in p.name]


DAEMON_CASES = [c for c in CASES if c.__name__ in (
    "linked archive/projects/", "name with a newline", "crafted compaction journal writing ../canary/written.md")]


@pytest.mark.slow  # runs child processes: in the full run, not the default one
@pytest.mark.parametrize("case", DAEMON_CASES, ids=lambda c: c.__name__)
def test_the_daemon_once_keeps_inside_the_store(tmp_path: Path, case: Case, distilld_dirs: dict[str, Path]) -> None:
    region, store, canary = build(tmp_path, case)

    def run() -> None:
        done = run_distilld(["run", "--once", "--store", str(store)])
        assert done.returncode in (0, 1), done.stderr

    assert figures(region, store, canary, run, distilld_dirs) == {**CLEAN, "audit_outside": []}


@pytest.mark.slow
@pytest.mark.parametrize("case", corpus(per_kind=1))
def test_the_real_cli_and_daemon_on_every_case(tmp_path: Path, case: Case, distilld_dirs: dict[str, Path]) -> None:
    region, store, canary = build(tmp_path, case)

    def run() -> None:
        # Every command in one fresh interpreter (the real entry point, no test process state),
        # then the daemon as `python -m distilld run --once`.
        script = ("import sys\nfrom distilld.cli import main\n"
                  f"for args in {[_args(c, store) for c in COMMANDS]!r}:\n    main(args)\n")
        subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=600, check=False)
        done = run_distilld(["run", "--once", "--store", str(store)])
        assert done.returncode in (0, 1), done.stderr

    assert figures(region, store, canary, run, distilld_dirs) == CLEAN


def test_the_corpus_covers_what_the_issue_lists() -> None:
    names = " ".join(c.__name__ for c in CASES)
    for needed in ("linked projects/", "linked archive/", "linked archive/projects/", "linked evidence/",
                   "linked inbox/", "linked file archive/projects/heron.md", "a newline", "a CR", "a tab", "' | '",
                   "a leading dash", "Windows-illegal", "invalid UTF-8", "crafted gc manifest",
                   "crafted compaction journal", "crafted restore journal"):
        assert needed in names, needed
