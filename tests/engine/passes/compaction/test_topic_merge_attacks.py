"""Topic merges on a store nobody on the team wrote: near-identical titles over different bodies,
one title in two tiers, a local/ overlay, marked and [NON-NEGOTIABLE] blocks, CRLF, a file without
a final newline, a pinned file merged with a stale one, relative links between files, a tier file
that is a symlink. After compaction and migration: no line of knowledge lost, the store passes,
the local overlay untouched, every move in the ledger, and a restore of a merged file gives its
bytes back."""

from __future__ import annotations

import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM
from distilld.actions.compaction import run_compaction
from distilld.actions.gc import run_gc_apply
from distilld.actions.migrate import run_migrate
from distilld.actions.restore import run_restore
from distilld.policy import load_policy
from distilld.store.catalog import render_catalog
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot
from hostile import run_distilld

POLICY = load_policy()
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
KNOWLEDGE = ("craft", "ops", "profile", "projects", "feedback", "evidence", "archive", "local", "inbox")
NATO = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
        "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
        "xray", "yankee", "zulu"]
LINK_RE = re.compile(rb"\]\(((?:\.\./)*[a-z]+/[^)#\s]+\.md)\)")


def clock() -> datetime:
    return NOW


def put(root: Path, relative: str, data: str | bytes) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def head(domain: str, scope: str, updated: str = "2026-11-01", extra: str = "", eol: str = "\n") -> str:
    lines = ["---", f"domain: {domain}", f"scope: {scope}", f"last_updated: {updated}", *extra.splitlines(), "---",
             "", ""]
    return eol.join(lines)


def heron_store(root: Path, migrated: bool = True, filler: int = 90) -> None:
    """About a hundred SPINE entries over the caps; the heron files are the hostile ones."""
    entries = []

    def entry(title: str, path: str, hook: str) -> None:
        entries.append(f"- [{title}]({path}) {EM} {hook}")

    put(root, "ops/deploy-pipeline.md", head("ops", "Deploy pipeline for the heron service")
        + "# Deploy pipeline\n\n- Heron deploys go through the blue lane.\n- Rollback: `heron rollback --to N`.\n")
    put(root, "ops/deploy-pipelines.md", head("ops", "Deploy pipelines for the heron jobs")
        + "# Deploy pipelines\n\n- Heron batch jobs deploy at night.\n"
          "- Read [the service pipeline](deploy-pipeline.md) first.\n")
    entry("Deploy pipeline", "ops/deploy-pipeline.md", "heron service deploy pipeline: blue lane, `heron rollback`. "
          "Read when deploying heron.")
    entry("Deploy pipelines", "ops/deploy-pipelines.md", "heron batch deploy pipelines at night. Read when "
          "deploying heron jobs.")
    put(root, "craft/heron-testing.md", head("craft", "Heron testing craft") + "# Heron testing\n\n"
        "- Property tests for the heron parser.\n")
    put(root, "projects/heron-testing.md", head("project", "Heron testing project") + "# Heron testing\n\n"
        "- The heron test farm lives in rack 7.\n")
    entry("Heron testing", "craft/heron-testing.md", "heron testing: property tests for the parser. Read when "
          "testing heron.")
    entry("Heron testing", "projects/heron-testing.md", "heron testing farm, rack 7. Read when testing heron.")
    put(root, "local/SPINE.md", f"# Local\n\n- [Heron secrets](local/heron-secrets.md) {EM} this machine's heron "
        "keys.\n")
    put(root, "local/heron-secrets.md", "# Heron secrets\n\n- In the keyring under heron.\n")
    put(root, "ops/heron-keys.md", head("ops", "Heron key rotation") + "# Heron keys\n\n- Rotate heron keys "
        "monthly; this machine's copy is in the local overlay (`local/heron-secrets.md`).\n")
    entry("Heron keys", "ops/heron-keys.md", "heron key rotation, monthly. Read when rotating heron keys.")
    put(root, "craft/heron-rules.md", head("craft", "Heron rules") + "# Heron rules\n\n"
        "- [NON-NEGOTIABLE] Never deploy heron on a Friday.\n  origin: directive (Rowan, 2026-03-04)\n\n"
        "## [DIRECTIVE 2026-05-01] Heron reviews\n\nTwo reviewers for every heron change.\nNo self-merge.\n")
    entry("Heron rules", "craft/heron-rules.md", "heron rules: [NON-NEGOTIABLE] no Friday deploys; two reviewers. "
          "Read before changing heron.")
    put(root, "ops/heron-crlf.md", head("ops", "Heron on Windows", eol="\r\n") + "# Heron on Windows\r\n\r\n"
        "- heron.exe needs the VC runtime.\r\n- Paths use backslashes.\r\n")
    entry("Heron on Windows", "ops/heron-crlf.md", "heron on Windows: VC runtime, backslash paths. Read when "
          "running heron on Windows.")
    put(root, "ops/heron-windows-service.md", head("ops", "Heron Windows service") + "# Heron Windows service\n\n"
        "- heron.exe runs as a Windows service.\n")
    entry("Heron Windows service", "ops/heron-windows-service.md", "heron on Windows as a service, VC runtime, "
          "backslash paths. Read when running heron on Windows.")
    put(root, "ops/heron-nofinal.md", head("ops", "Heron logs") + "# Heron logs\n\n- Logs rotate at 100 MB.\n"
        "- The last line has no newline")
    entry("Heron logs", "ops/heron-nofinal.md", "heron logs rotate at 100 MB. Read when reading heron logs.")
    put(root, "ops/heron-logs-rotation.md", head("ops", "Heron log rotation") + "# Heron log rotation\n\n"
        "- logrotate for heron weekly.\n")
    entry("Heron log rotation", "ops/heron-logs-rotation.md", "heron logs rotation weekly, 100 MB logs. Read when "
          "reading heron logs.")
    put(root, "projects/heron-legal.md", head("project", "Heron legal hold", "2025-01-01", "lifecycle: pinned")
        + "# Heron legal\n\n- Keep heron exports seven years.\n")
    entry("Heron legal", "projects/heron-legal.md", "heron legal hold, seven years; pinned. Read before deleting "
          "heron exports.")
    put(root, "projects/heron.md", head("project", "Heron service") + "# Heron\n\n- Heron is the ingest service.\n"
        "- Deploy with [the pipeline](../ops/deploy-pipeline.md); the rules are in `craft/heron-rules.md`.\n")
    entry("Heron", "projects/heron.md", "heron ingest service overview. Read when working on heron.")
    put(root, "projects/heron-old.md", head("project", "Old heron prototype", "2025-01-01")
        + "# Old heron\n\n- The prototype used SQLite.\n")
    entry("Old heron", "projects/heron-old.md", "old heron prototype on SQLite, retired. Read when asked about the "
          "heron prototype.")
    for n in range(filler):
        tier, one, two = ("craft", "ops", "feedback")[n % 3], NATO[n % 26], NATO[(n * 7 + 3) % 26]
        path = f"{tier}/{one}-{two}-{n}.md"
        put(root, path, head(tier, f"{one} {two} notes {n}") + f"# {one.title()} {two} {n}\n\n- {one} fact {n}: "
            f"uses {two}.\n")
        entry(f"{one.title()} {two} {n}", path, f"{one} {two} notes number {n}, with the {two} details. Read when "
              f"{one} comes up.")
    top = ["# Distill Knowledge Index", "", "<!-- Managed by aura-distill. -->", ""]
    if migrated:
        top += [f"- [Catalog](CATALOG.md) {EM} complete inventory; not loaded at start.", ""]
    put(root, "SPINE.md", "\n".join(top + entries) + "\n")
    put(root, "archive/LEDGER.md", "# Archive ledger\n\n<!-- Append-only. -->\n\n")
    if migrated:
        put(root, "CATALOG.md", render_catalog(take_snapshot(root), NOW))


def files(root: Path) -> dict[str, bytes]:
    out = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "data", "backup")]
        for name in filenames:
            path = Path(directory, name)
            if not path.is_symlink():
                out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def lost_knowledge(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Every non-empty line of a knowledge file before that is no line of any file after (CR
    aside), and every SPINE hook before that no file after holds."""
    lines = {line.rstrip(b"\r") for data in after.values() for line in data.split(b"\n")}
    everything = b"\n".join(after.values())
    lost = []
    for path, data in before.items():
        if path.split("/")[0] in KNOWLEDGE:
            lost += [f"{path}: {line!r}" for line in data.split(b"\n") if line.strip() and line.rstrip(b"\r") not in lines]
    for line in before.get("SPINE.md", b"").split(b"\n"):
        if line.startswith(b"- [") and f" {EM} ".encode() in line:
            hook = line.split(f" {EM} ".encode(), 1)[1]
            if hook not in everything:
                lost.append(f"SPINE.md hook: {hook!r}")
    return lost


def links(tree: dict[str, bytes]) -> set[tuple[str, str]]:
    """(file, target) of every relative link of a tier file that resolves."""
    out = set()
    for path, data in tree.items():
        for target in LINK_RE.findall(data):
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target.decode()))
            if resolved in tree:
                out.add((path, resolved))
    return out


def failures(root: Path) -> list[str]:
    return [f"[{f.group}] {f.message}" for f in check_store(take_snapshot(root), POLICY.limits) if f.severity == "fail"]


def ledger_events(root: Path) -> list[str]:
    return [line for line in (root / "archive/LEDGER.md").read_text().splitlines() if line.startswith("- ")]


def assert_kept(before: dict[str, bytes], root: Path) -> dict[str, bytes]:
    after = files(root)
    assert lost_knowledge(before, after) == []
    assert failures(root) == []
    assert {p: d for p, d in after.items() if p.startswith("local/")} == \
        {p: d for p, d in before.items() if p.startswith("local/")}
    assert links(before) <= links(after)
    crlf = after["ops/heron-crlf.md"]
    assert crlf.count(b"\n") == crlf.count(b"\r\n")
    assert b"- The last line has no newline" in after["ops/heron-nofinal.md"].split(b"\n")
    return after


@pytest.fixture
def compacted(tmp_path: Path) -> tuple[Path, dict[str, bytes], dict[str, bytes]]:
    root = tmp_path / "store"
    heron_store(root)
    assert failures(root) and all(f.startswith("[C1]") for f in failures(root))  # only over its caps
    before = files(root)
    report = run_compaction(root, POLICY, clock)
    assert report.outcome is not None
    return root, before, files(root)


def test_compaction_merges_the_hostile_entries_and_loses_nothing(compacted: tuple[Path, dict[str, bytes],
                                                                                  dict[str, bytes]]) -> None:
    root, before, after = compacted
    assert_kept(before, root)
    spine = after["SPINE.md"].decode()
    merged = [line for line in spine.splitlines() if " + [" in line]
    assert merged, "the SPINE over 80 lines is brought back by merging entries"
    for path in ("ops/heron-crlf.md", "ops/heron-nofinal.md", "projects/heron-legal.md"):
        assert any(f"]({path})" in line for line in merged), path  # the hostile files are among the merged
        assert b"## Index detail (moved from SPINE " in after[path]
    same_title = [line for line in spine.splitlines() if "[Heron testing](" in line]
    assert not any("craft/heron-testing.md" in line and "projects/heron-testing.md" in line for line in same_title)
    assert "[NON-NEGOTIABLE]" in next(line for line in spine.splitlines() if "(craft/heron-rules.md)" in line)
    assert spine.count("\n") <= POLICY.limits.spine.max_lines


def test_a_merged_stale_file_is_archived_with_its_ledger_line_and_restored_byte_for_byte(
        compacted: tuple[Path, dict[str, bytes], dict[str, bytes]]) -> None:
    root, before, after = compacted
    path = "projects/heron-old.md"
    merged = next(line for line in after["SPINE.md"].decode().splitlines() if f"]({path})" in line)
    assert " + [" in merged, "the stale file shares its SPINE line with the pinned one"
    later = datetime(2027, 1, 10, tzinfo=UTC)
    gc = run_gc_apply(root, POLICY, lambda: later)
    assert gc.outcome is not None and gc.outcome.moved == [path]
    assert (root / "archive" / path).read_bytes() == after[path]
    archived = [e for e in ledger_events(root) if f"from: {path} " in e and " archive " in e]
    assert len(archived) == 1 and "spine-entry: - [Old heron]" in archived[0]
    assert (root / "projects/heron-legal.md").read_bytes() == after["projects/heron-legal.md"]  # pinned: stays
    assert failures(root) == []
    run_restore(root, path, POLICY, lambda: later)
    restored = (root / path).read_bytes()
    # The format has the restore set last_updated to its day; every other byte is the archived one.
    assert restored.replace(b"last_updated: 2027-01-10", b"last_updated: 2025-01-01") == after[path]
    assert [e for e in ledger_events(root) if f"from: archive/{path} " in e and " restore " in e]
    assert f"]({path})" in (root / "SPINE.md").read_text()
    assert lost_knowledge(before, files(root)) == []
    assert failures(root) == []


def test_migration_of_the_hostile_store_loses_nothing_and_keeps_the_backup(tmp_path: Path) -> None:
    root = tmp_path / "store"
    heron_store(root, migrated=False)
    before = files(root)
    outcome = run_migrate(root, POLICY, clock, mode="apply")
    assert outcome is not None
    assert (root / "CATALOG.md").exists()
    after = assert_kept(before, root)
    assert any(" + [" in line for line in after["SPINE.md"].decode().splitlines())
    backup = next((root / "data" / "migration").iterdir()) / "backup"
    copied = files(backup)
    assert [p for p, d in before.items() if p.split("/")[0] in KNOWLEDGE and p.split("/")[0] != "local"
            and copied.get(p) != d] == []


def test_a_merge_target_that_is_a_symlink_is_never_written_through(tmp_path: Path) -> None:
    root = tmp_path / "store"
    heron_store(root)
    outside = tmp_path / "outside.md"
    outside.write_bytes((root / "ops/deploy-pipeline.md").read_bytes())
    (root / "ops/deploy-pipeline.md").unlink()
    (root / "ops/deploy-pipeline.md").symlink_to(outside)
    kept = outside.read_bytes()
    spine_before = (root / "SPINE.md").read_bytes()
    report = run_compaction(root, POLICY, clock)
    assert outside.read_bytes() == kept
    assert (root / "ops/deploy-pipeline.md").is_symlink()
    # The store failed C2 for the link before the pass: that is not the pass's failure, so the
    # pass is not rolled back for it (it was, every time it ran, after writing some 45 files).
    assert report.outcome is not None and report.outcome.self_check == [], report.outcome
    assert (root / "SPINE.md").read_bytes() != spine_before
    findings = check_store(take_snapshot(root), POLICY.limits)
    assert [f.message for f in findings if f.severity == "fail"] == ["symlink in store: ops/deploy-pipeline.md"]


@pytest.mark.slow
def test_the_command_line_compacts_checks_and_restores_the_hostile_store(tmp_path: Path) -> None:
    root = tmp_path / "store"
    heron_store(root)
    before = files(root)
    done = run_distilld(["compact", "--apply", str(root)])
    assert done.returncode == 0, done.stdout + done.stderr
    checked = run_distilld(["check", str(root)])
    assert checked.returncode == 0, checked.stdout
    assert_kept(before, root)
    shutil.copytree(root, tmp_path / "compacted", symlinks=True)
    archived = run_distilld(["gc", "--apply", str(root)])  # the real clock: heron-old is long stale
    assert archived.returncode == 0, archived.stdout + archived.stderr
    assert "archived projects/heron-old.md" in archived.stdout
    restored = run_distilld(["restore", "projects/heron-old.md", str(root)])
    assert restored.returncode == 0, restored.stdout + restored.stderr
    old = (tmp_path / "compacted/projects/heron-old.md").read_bytes()
    now = re.sub(rb"last_updated: \d{4}-\d\d-\d\d", b"last_updated: 2025-01-01", (root / "projects/heron-old.md").read_bytes())
    assert now == old
    assert run_distilld(["check", str(root)]).returncode == 0
