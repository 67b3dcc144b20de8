"""Every rule of the reference checker's C1, C2 and C3 (STORE-FORMAT.md 3.2-3.4), one at a time.

Each test starts from ``healthy_store`` (which passes everything), breaks exactly one rule, and
asserts the spec's message in the right group, that group's FAIL and the other groups' PASS.
Valid counterparts pin the subtle edges (byte counts, CR-blind line counts, wrapped entries,
escaped pipes, date-only stamps).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

import pytest
from builders import EM, FIXED_NOW, KESTREL_ENTRY, MARLIN_ENTRY, StoreBuilder, healthy_store

from distilld.cli import main
from distilld.policy import load_policy
from distilld.store.budget import measure_budget
from distilld.store.findings import Finding
from distilld.store.invariants import check_store
from distilld.store.snapshot import take_snapshot
from distilld.store.text import sha256_hex

LIMITS = load_policy().limits

GROUPS = ("C1", "C2", "C3")
MARLIN_STAMP = "2026-09-11T08:00:00Z"
REBUILT = "2026-11-30T12:00:00Z"


# -- helpers -------------------------------------------------------------------------------------


def findings(root: Path) -> list[Finding]:
    return check_store(take_snapshot(root), LIMITS)


def fails(found: list[Finding], group: str | None = None) -> list[str]:
    return [f.message for f in found if f.severity == "fail" and (group is None or f.group == group)]


def notes(found: list[Finding], group: str | None = None) -> list[str]:
    return [f.message for f in found if f.severity == "note" and (group is None or f.group == group)]


def verdicts(found: list[Finding]) -> dict[str, str]:
    return {g: "FAIL" if fails(found, g) else "PASS" for g in GROUPS}


# A finding's code and path are what `check --json` gives a program (and what the passes match
# budget findings by): the code each message comes with, and the file it names ("" for its own).
CODES: list[tuple[str, str, str]] = [
    (r"SPINE has \d+ lines \(max \d+\)", "spine-lines", "SPINE.md"),
    (r"SPINE is \d+ bytes \(max \d+\)", "spine-bytes", "SPINE.md"),
    (r"entry over \d+ bytes \(\d+\): .*", "entry-bytes", "SPINE.md"),
    (r"SPINE has no catalog line", "no-catalog-line", "SPINE.md"),
    (r"SPINE pointer to missing file: (?P<path>.+)", "spine-missing-target", ""),
    (r"active file has no SPINE pointer: (?P<path>.+)", "no-spine-pointer", ""),
    (r"local/SPINE.md may point only inside local/: .+", "local-uncontained", "local/SPINE.md"),
    (r"local/SPINE.md pointer to missing file: (?P<path>.+)", "local-missing-target", ""),
    (r"file not in catalog: (?P<path>.+)", "not-in-catalog", ""),
    (r"uncontained path in SPINE\.md: .+", "spine-uncontained", "SPINE.md"),
    (r"uncontained path in CATALOG\.md: .+", "catalog-uncontained", "CATALOG.md"),
    (r"unescaped ' \| ' inside a free-text field of CATALOG\.md .*", "catalog-unescaped-pipe", "CATALOG.md"),
    (r"catalog validated date wrong for (?P<path>\S+) \(newest stamp .+\)", "catalog-validated-wrong", ""),
    (r"catalog row lacks pinned for (?P<path>.+)", "catalog-lacks-pinned", ""),
    (r"catalog row says pinned but (?P<path>\S+) is not", "catalog-false-pinned", ""),
    (r"(?P<path>\S+) has no evidence_for", "evidence-no-target", ""),
    (r"nested archive file labelled legacy: (?P<path>.+)", "nested-labelled-legacy", ""),
    (r"archived row lacks 'from': (?P<path>.+)", "archived-row-no-from", ""),
    (r"archived row lacks 'hook': (?P<path>.+)", "archived-row-no-hook", ""),
    (r"archive/LEDGER\.md missing but (?P<path>\S+) is not legacy", "ledger-missing", ""),
    (r"ledger says archived but tree disagrees: (?P<path>.+)", "ledger-tree-archived", ""),
    (r"ledger says restored but tree disagrees: (?P<path>.+)", "ledger-tree-restored", ""),
    (r"uncontained path in archive/LEDGER\.md (from|to): .+", "ledger-uncontained", "archive/LEDGER.md"),
    (r"catalog has no rebuilt: stamp", "catalog-no-stamp", "CATALOG.md"),
    (r"path exists both active and archived: (?P<path>.+)", "active-and-archived", ""),
    (r"symlink in store: (?P<path>.+)", "symlink", ""),
    (r"(?P<path>\S+) has \d+ lines \(max \d+\)", "file-lines", ""),
    (r"uncontained path in (?P<path>\S+) split_from: .+", "split-from-uncontained", ""),
    (r"(?P<path>\S+) split_from target missing: .+", "split-from-missing", ""),
    (r"(?P<path>\S+) read_with must be an inline list \[a\.md, b\.md\]", "read-with-not-inline", ""),
    (r"(?P<path>\S+) read_with into local/ overlay: .+", "read-with-local", ""),
    (r"uncontained path in (?P<path>\S+) read_with: .+", "read-with-uncontained", ""),
    (r"(?P<path>\S+) read_with target missing: .+", "read-with-missing", ""),
    (r"no ledger archive event for: (?P<path>\S+) \(unledgered: pending adoption by migrate-store\)",
     "pending-adoption", ""),
    (r"recall_count drift only \(tolerated\): (?P<path>.+)", "recall-count-drift", ""),
    (r"catalog hook differs from ledger spine-entry hook: (?P<path>.+)", "catalog-hook-differs", ""),
    (r"ledger sha256 does not match archived file: (?P<path>[^;]+)(; .*)?", "ledger-sha-mismatch", ""),
    (r"malformed ledger line \(no leading date\): .*", "ledger-malformed", "archive/LEDGER.md"),
    (r"ledger events out of order: .+", "ledger-out-of-order", "archive/LEDGER.md"),
    (r"unknown ledger event '.*': .*", "ledger-unknown-event", "archive/LEDGER.md"),
    (r"unescaped ' \| ' inside a free-text field of archive/LEDGER\.md .*", "ledger-unescaped-pipe",
     "archive/LEDGER.md"),
    (r"ledger archive line must move X to archive/X: from .* to .*", "ledger-archive-shape", "archive/LEDGER.md"),
    (r"ledger restore line must move archive/X to X: from .* to .*", "ledger-restore-shape", "archive/LEDGER.md"),
    (r"SPINE\.md missing", "spine-missing", "SPINE.md"),
    (r"CATALOG\.md missing", "catalog-missing", "CATALOG.md"),
    (r"catalog line points at missing file: (?P<path>.+)", "catalog-missing-target", ""),
    (r"catalog stale: rebuilt .+ but newest ledger event is .+", "catalog-stale", "CATALOG.md"),
    (r"catalog claims a validated date for undated file (?P<path>.+)", "catalog-validated-undated", ""),
    (r"catalog count wrong for (?P<path>\S+) \(file has \d+ entries\)", "catalog-count-wrong", ""),
    (r"evidence_for disagrees with the twin's path: (?P<path>\S+) says .+", "evidence-target-mismatch", ""),
    (r"evidence twin of an adopted legacy archive: (?P<path>\S+) \(.+\)", "evidence-of-legacy", ""),
    (r"orphan evidence: (?P<path>\S+) \(evidence_for .+ is neither active nor archived\)", "orphan-evidence", ""),
    (r"flat archive file must be labelled legacy in the catalog: (?P<path>.+)", "legacy-unlabelled", ""),
    (r"legacy archive inside a tier directory: (?P<path>\S+) \(migration adopts it to archive/legacy/.+\)",
     "nested-archive", ""),
    (r"(?P<path>\S+) is \d+ bytes \(max \d+; declare oversize: <reason> to exempt\)", "file-bytes", ""),
    (r"SPINE\.md line \d+ joins its pointers with something other than ' \+ ' .*", "pointer-joiners", "SPINE.md"),
]
RULE_CODES = {code for _, code, _ in CODES}


def assert_code_and_path(finding: Finding) -> None:
    """Every finding of the rules has its row in CODES (the bad-input notes are hygiene's own)."""
    for pattern, code, path in CODES:
        matched = re.fullmatch(pattern, finding.message)
        if matched:
            assert (finding.code, finding.path) == (code, path or matched.group("path")), finding
            return
    assert finding.severity == "note" and finding.code not in RULE_CODES, f"no row in CODES for {finding}"


def expect_only(root: Path, group: str, message: str) -> list[Finding]:
    """``message`` is a failure of ``group``; that group fails and every other group passes."""
    found = findings(root)
    assert message in fails(found, group), f"{message!r} not among {group} failures: {fails(found)}"
    for finding in found:
        assert_code_and_path(finding)
    expected = {g: "PASS" for g in GROUPS}
    expected[group] = "FAIL"
    assert verdicts(found) == expected, fails(found)
    return found


def expect_pass(root: Path) -> list[Finding]:
    found = findings(root)
    assert fails(found) == []
    for finding in found:
        assert_code_and_path(finding)
    return found


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def text_of(b: StoreBuilder, relative: str) -> str:
    return b.read(relative).decode("utf-8")


def edit(b: StoreBuilder, relative: str, old: str, new: str) -> StoreBuilder:
    """Replace the one occurrence of ``old`` in a file (the test's own precondition)."""
    text = text_of(b, relative)
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {relative}"
    return b.write(relative, text.replace(old, new))


def append(b: StoreBuilder, relative: str, text: str) -> StoreBuilder:
    return b.write(relative, b.read(relative) + text.encode("utf-8"))


def drop_line_starting(b: StoreBuilder, relative: str, prefix: str) -> StoreBuilder:
    lines = text_of(b, relative).split("\n")
    kept = [line for line in lines if not line.startswith(prefix)]
    assert len(kept) == len(lines) - 1, f"no single line starts with {prefix!r}"
    return b.write(relative, "\n".join(kept))


def spine_add(b: StoreBuilder, *lines: str) -> StoreBuilder:
    return append(b, "SPINE.md", "".join(line + "\n" for line in lines))


def line_count(raw: bytes) -> int:
    """The spec's count: ``tr -d '\\r' | grep -c ''`` (a final unterminated line counts)."""
    text = raw.replace(b"\r", b"")
    return text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)


def crlf(raw: bytes) -> bytes:
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def archive_file(b: StoreBuilder, tier_path: str, stamp: str, body: str | None = None) -> str:
    """Put a file at archive/<tier_path>, append its ledger archive line; returns the spine-entry."""
    name = tier_path.rsplit("/", 1)[-1][:-3].capitalize()
    b.write("archive/" + tier_path, body or f"---\nscope: {name} notes\nlast_updated: 2026-03-01\n---\n\n# {name}\n")
    entry = f"- [{name}]({tier_path}) {EM} {name} notes, archived. Read when asked about {name}."
    b.append_ledger(b.archive_line(stamp, tier_path, entry))
    return entry


def test_healthy_store_has_no_finding_at_all(tmp_path: Path) -> None:
    found = findings(healthy_store(tmp_path).root)
    assert [(f.group, f.severity, f.message) for f in found] == []


def test_healthy_store_cli_passes_every_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    healthy_store(tmp_path)
    code, out, _ = run_cli(capsys, "check", str(tmp_path))
    assert (code, out) == (0, "C1 PASS\nC2 PASS\nC3 PASS\n")


# == C1: SPINE budgets (3.2) =====================================================================


def test_c1_1_spine_missing_skips_the_other_c1_checks(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.remove("SPINE.md")
    found = findings(tmp_path)
    assert fails(found, "C1") == ["SPINE.md missing"]
    assert [(f.code, f.path) for f in found if f.group == "C1"] == [("spine-missing", "SPINE.md")]
    # No SPINE: the pointer checks are skipped (3.3 step 2), C2 judges the rest; C3 is untouched.
    assert not [m for m in fails(found, "C2") if "SPINE pointer" in m]
    assert verdicts(found) == {"C1": "FAIL", "C2": "PASS", "C3": "PASS"}


def test_c2_without_spine_still_judges_the_catalog(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.remove("SPINE.md")
    b.write("projects/lumen.md", "# Lumen\n")
    found = findings(tmp_path)
    assert fails(found, "C2") == ["file not in catalog: projects/lumen.md"]
    for finding in found:
        assert_code_and_path(finding)
    assert [f.code for f in found if f.group == "C2"] == ["not-in-catalog"]


def test_a_pointer_group_joined_otherwise_is_a_c1_note_naming_its_line(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    spine = text_of(b, "SPINE.md").split("\n")
    at = next(i for i, line in enumerate(spine) if line == KESTREL_ENTRY)
    joined = KESTREL_ENTRY.replace(f" {EM} ", f", [Marlin](projects/marlin.md) {EM} ", 1)
    edit(b, "SPINE.md", KESTREL_ENTRY + "\n", joined + "\n")
    found = [f for f in findings(tmp_path) if f.code == "pointer-joiners"]
    assert [(f.group, f.severity, f.path) for f in found] == [("C1", "note", "SPINE.md")]
    # The line is quoted to its first 70 bytes: the em dash is 3 of them.
    assert found[0].message == (
        f"SPINE.md line {at + 1} joins its pointers with something other than ' + ' (the format reads only"
        f" ' + '; the rest counts as the hook): - [Kestrel](projects/kestrel.md), [Marlin](projects/marlin.md)"
        f" {EM} Kes; `distilld compact` or `migrate` rewrites it")


def pad_spine_lines(b: StoreBuilder, total: int, *, eol: str = "\n", final_newline: bool = True) -> None:
    raw = b.read("SPINE.md").replace(b"\r\n", b"\n")
    have = line_count(raw)
    assert have < total
    text = raw.decode("utf-8") + "\n" * (total - have - 1) + "<!-- end of index -->" + ("\n" if final_newline else "")
    b.write("SPINE.md", text.replace("\n", eol))
    assert line_count(b.read("SPINE.md")) == total


@pytest.mark.parametrize("total, verdict", [(80, "PASS"), (81, "FAIL")])
def test_c1_2_spine_line_cap_is_80(tmp_path: Path, total: int, verdict: str) -> None:
    b = healthy_store(tmp_path)
    pad_spine_lines(b, total)
    if verdict == "PASS":
        expect_pass(tmp_path)
    else:
        expect_only(tmp_path, "C1", "SPINE has 81 lines (max 80)")


@pytest.mark.parametrize("total, verdict", [(80, "PASS"), (81, "FAIL")])
def test_c1_2_crlf_spine_line_count_ignores_cr(tmp_path: Path, total: int, verdict: str) -> None:
    b = healthy_store(tmp_path)
    pad_spine_lines(b, total, eol="\r\n")
    assert b.read("SPINE.md").count(b"\r\n") == total
    if verdict == "PASS":
        expect_pass(tmp_path)
    else:
        expect_only(tmp_path, "C1", "SPINE has 81 lines (max 80)")


def test_c1_2_final_line_without_newline_still_counts(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    pad_spine_lines(b, 81, final_newline=False)
    assert not b.read("SPINE.md").endswith(b"\n")
    expect_only(tmp_path, "C1", "SPINE has 81 lines (max 80)")


def pad_spine_bytes(b: StoreBuilder, total: int, *, eol: str = "\n") -> None:
    """Append one HTML comment line (em dashes and ASCII) so that the raw SPINE is ``total`` bytes."""
    base = b.read("SPINE.md").decode("utf-8").replace("\n", eol)
    frame = "<!-- " + " -->" + eol
    need = total - len(base.encode()) - len(frame.encode())
    assert need > 3 * 1000
    dashes, rest = divmod(need, 3)
    dashes -= 1000  # keep some ASCII in the mix
    filler = EM * dashes + "x" * (rest + 3000)
    # One long comment line is not an entry, so no entry cap applies.
    b.write("SPINE.md", base + "<!-- " + filler + " -->" + eol)
    assert len(b.read("SPINE.md")) == total


@pytest.mark.parametrize("total, verdict", [(16000, "PASS"), (16001, "FAIL")])
def test_c1_3_spine_byte_cap_counts_raw_bytes(tmp_path: Path, total: int, verdict: str) -> None:
    b = healthy_store(tmp_path)
    pad_spine_bytes(b, total)
    # Multi-byte em dashes: the character count is far below the cap, the byte count is not.
    assert len(b.read("SPINE.md").decode("utf-8")) < 12000
    if verdict == "PASS":
        expect_pass(tmp_path)
    else:
        expect_only(tmp_path, "C1", "SPINE is 16001 bytes (max 16000)")


def test_c1_3_crlf_counts_every_cr_byte(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    pad_spine_bytes(b, 16000, eol="\r\n")
    expect_pass(tmp_path)
    # Same text with one more CRLF line: the CR is a byte like any other.
    b.write("SPINE.md", b.read("SPINE.md") + b"\r\n")
    expect_only(tmp_path, "C1", "SPINE is 16002 bytes (max 16000)")


FIRST_LINE = f"- [Kestrel](projects/kestrel.md) {EM} Kestrel ingest pipeline (Kafka to Parquet, schema registry);"


def wrapped_entry(total: int, *, indent: str = "  ", eol: str = "\n") -> tuple[str, str]:
    """A two-line Kestrel entry whose joined form (one space per newline) is ``total`` bytes.

    The continuation holds em dashes: far fewer characters than bytes. Returns (text, joined).
    """
    need = total - len(FIRST_LINE.encode()) - 1  # the joining space
    dashes = need // 3 - 10
    tail = EM * dashes + "r" * (need - 3 * dashes)
    joined = FIRST_LINE + " " + tail
    assert len(joined.encode()) == total
    return FIRST_LINE + eol + indent + tail, joined


def entry_over_message(joined: str) -> str:
    first60 = joined.encode("utf-8")[:60].decode("utf-8")  # ASCII at the cut, by construction
    return f"entry over 400 bytes ({len(joined.encode())}): {first60}..."


@pytest.mark.parametrize("total, verdict", [(400, "PASS"), (401, "FAIL")])
def test_c1_4_wrapped_entry_joined_length_is_capped_at_400_bytes(tmp_path: Path, total: int, verdict: str) -> None:
    b = healthy_store(tmp_path)
    text, joined = wrapped_entry(total)
    assert len(joined) < 300  # characters: an em dash is 3 bytes
    edit(b, "SPINE.md", KESTREL_ENTRY, text)
    if verdict == "PASS":
        expect_pass(tmp_path)
    else:
        expect_only(tmp_path, "C1", entry_over_message(joined))


def test_c1_4_continuation_indent_is_trimmed_before_joining(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    text, _ = wrapped_entry(400, indent=" " * 40)
    edit(b, "SPINE.md", KESTREL_ENTRY, text)
    expect_pass(tmp_path)


@pytest.mark.parametrize("total, verdict", [(400, "PASS"), (401, "FAIL")])
def test_c1_4_crlf_entry_is_measured_without_cr(tmp_path: Path, total: int, verdict: str) -> None:
    b = healthy_store(tmp_path)
    text, joined = wrapped_entry(total)
    edit(b, "SPINE.md", KESTREL_ENTRY, text)
    b.write("SPINE.md", crlf(b.read("SPINE.md")))
    if verdict == "PASS":
        expect_pass(tmp_path)
    else:
        expect_only(tmp_path, "C1", entry_over_message(joined))


def test_c1_4_three_line_entry_counts_one_joining_byte_per_newline(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    pad = 400 - len(FIRST_LINE.encode()) - 2 - len("second part")
    edit(b, "SPINE.md", KESTREL_ENTRY, FIRST_LINE + "\n  second part\n  " + "t" * pad)
    expect_pass(tmp_path)
    edit(b, "SPINE.md", "  " + "t" * pad, "  " + "t" * (pad + 1))
    found = expect_only(tmp_path, "C1", entry_over_message(FIRST_LINE + " second part " + "t" * (pad + 1)))
    assert len(fails(found, "C1")) == 1


@pytest.mark.parametrize(
    "follower",
    [
        "",  # a blank line
        "   ",  # whitespace only
        "## Notes",  # a heading
        "<!-- an index comment -->",  # an HTML comment start
        "- [Osprey](projects/osprey.md) {EM} another item",  # another item
    ],
    ids=["blank", "whitespace", "heading", "comment", "item"],
)
def test_c1_4_these_lines_end_an_entry_and_are_not_measured(tmp_path: Path, follower: str) -> None:
    b = healthy_store(tmp_path)
    text, _ = wrapped_entry(390)
    # The follower carries 120 more bytes itself, or (blank ones) is followed by a 120-byte line:
    # joined into the entry, either would push it over 400.
    if follower.strip():
        long_line = follower.replace("{EM}", EM) + " " + "z" * 120
    else:
        long_line = follower + "\n" + "z" * 120
    edit(b, "SPINE.md", KESTREL_ENTRY, text + "\n" + long_line)
    if follower.startswith("- [Osprey]"):
        edit(b, "SPINE.md", f"- [Osprey](projects/osprey.md) {EM} exports under legal hold; pinned. "
                            "Read before deleting any export.\n", "")
    expect_pass(tmp_path)


def test_c1_4_one_more_byte_in_a_continuation_fails(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    text, joined = wrapped_entry(390)
    edit(b, "SPINE.md", KESTREL_ENTRY, text + "\n  and eleven")
    expect_only(tmp_path, "C1", entry_over_message(joined + " and eleven"))


def test_c1_5_no_catalog_line(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    drop_line_starting(b, "SPINE.md", "- [Catalog](CATALOG.md)")
    expect_only(tmp_path, "C1", "SPINE has no catalog line")


@pytest.mark.parametrize(
    "replacement",
    [
        "<!-- - [Catalog](CATALOG.md) {EM} complete inventory. -->",
        "See [Catalog](CATALOG.md) for the inventory.",
        "* [Catalog](CATALOG.md) {EM} complete inventory.",
        "- Catalog: [Catalog](CATALOG.md)",
    ],
    ids=["comment", "prose", "star-bullet", "not-leading"],
)
def test_c1_5_catalog_line_must_be_an_entry_line(tmp_path: Path, replacement: str) -> None:
    b = healthy_store(tmp_path)
    edit(b, "SPINE.md", f"- [Catalog](CATALOG.md) {EM} complete inventory; not loaded at start.",
         replacement.replace("{EM}", EM))
    expect_only(tmp_path, "C1", "SPINE has no catalog line")


def test_c1_5_catalog_line_title_is_free(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "SPINE.md", "- [Catalog](CATALOG.md)", "- [Everything, archived too](CATALOG.md)")
    expect_pass(tmp_path)


# == C2: pointers, catalog, ledger, containment (3.3) =============================================

# -- 1. SPINE pointers --


@pytest.mark.parametrize(
    "pointer",
    [
        "../outside.md",
        "~/notes.md",
        "/etc/notes.md",
        "craft\\testing.md",
        "C:/craft/testing.md",
        "craft/./testing.md",
        "craft//testing.md",
        "craft/../craft/testing.md",
        "archive/projects/marlin.md",  # a store path, but not a SPINE kind
        "evidence/craft/testing.md",
        "notes.md",
        "inbox/today.md",
        "local/notes.md",
    ],
)
def test_c2_1_uncontained_spine_pointer(tmp_path: Path, pointer: str) -> None:
    b = healthy_store(tmp_path)
    spine_add(b, f"- [Elsewhere]({pointer}) {EM} should never be followed.")
    found = expect_only(tmp_path, "C2", f"uncontained path in SPINE.md: {pointer}")
    assert not any("pointer to missing file" in m for m in fails(found))


def test_c2_1_pointer_to_missing_file(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    spine_add(b, f"- [Gone](craft/gone.md) {EM} was never written.")
    expect_only(tmp_path, "C2", "SPINE pointer to missing file: craft/gone.md")


def test_c2_1_stale_pointer_to_an_archived_file(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    spine_add(b, MARLIN_ENTRY)  # projects/marlin.md only exists as archive/projects/marlin.md
    expect_only(tmp_path, "C2", "SPINE pointer to missing file: projects/marlin.md")


def test_c2_1_pointer_inside_hook_text_is_checked_too(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "SPINE.md", KESTREL_ENTRY, KESTREL_ENTRY + " See also [Runbook](ops/runbook.md).")
    expect_only(tmp_path, "C2", "SPINE pointer to missing file: ops/runbook.md")


def test_c2_1_each_unique_pointer_is_reported_once(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    spine_add(b, f"- [Gone](craft/gone.md) {EM} one.", f"- [Gone again](craft/gone.md) {EM} two.")
    found = expect_only(tmp_path, "C2", "SPINE pointer to missing file: craft/gone.md")
    assert fails(found, "C2").count("SPINE pointer to missing file: craft/gone.md") == 1


def test_c2_1_pointers_in_continuations_and_comments_are_not_followed(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "SPINE.md", KESTREL_ENTRY, KESTREL_ENTRY + "\n  wrapped [Gone](craft/gone.md) text")
    spine_add(b, "<!-- - [Gone](craft/gone.md) -->", "Prose with [Gone](craft/gone.md).")
    expect_pass(tmp_path)


# -- 2. every tier file has a pointer --


def add_lumen(b: StoreBuilder) -> StoreBuilder:
    b.tier("projects/lumen.md", "# Lumen\n\n- Dashboards refresh hourly.\n",
           domain="project", scope="Lumen dashboards", last_updated="2026-10-10")
    return b


def test_c2_2_active_file_without_pointer(tmp_path: Path) -> None:
    b = add_lumen(healthy_store(tmp_path)).rebuild_catalog()
    expect_only(tmp_path, "C2", "active file has no SPINE pointer: projects/lumen.md")


LUMEN = f"[Lumen](projects/lumen.md)"


@pytest.mark.parametrize(
    "placement",
    [
        "<!-- - " + LUMEN + f" {EM} Lumen dashboards -->",  # only inside an HTML comment line
        f"  continued: {LUMEN}",  # only on a continuation line of the Kestrel entry
        f"See {LUMEN} for dashboards.",  # prose
        f"## {LUMEN}",  # a heading
        f"* {LUMEN} {EM} Lumen dashboards",  # not a '- [' line
        f"-  {LUMEN} {EM} two spaces",  # not '- ['
        f"- [Lumen](./projects/lumen.md) {EM} not the exact path",
    ],
    ids=["html-comment", "continuation", "prose", "heading", "star", "two-spaces", "dot-slash"],
)
def test_c2_2_pointer_outside_an_entry_line_does_not_count(tmp_path: Path, placement: str) -> None:
    b = add_lumen(healthy_store(tmp_path)).rebuild_catalog()
    edit(b, "SPINE.md", KESTREL_ENTRY, KESTREL_ENTRY + "\n" + placement)
    found = findings(tmp_path)
    assert "active file has no SPINE pointer: projects/lumen.md" in fails(found, "C2")
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}


@pytest.mark.parametrize(
    "entry",
    [
        f"- {LUMEN} {EM} Lumen dashboards.",
        f"- [Kestrel](projects/kestrel.md) + {LUMEN} {EM} Kestrel and Lumen.",
        f"- [Kestrel](projects/kestrel.md) {EM} ingest; dashboards live in {LUMEN}.",
        f"- {LUMEN} -- Lumen dashboards, double-dash hook.",
    ],
    ids=["own-entry", "second-pointer", "in-hook", "double-dash"],
)
def test_c2_2_any_pointer_on_an_entry_line_counts(tmp_path: Path, entry: str) -> None:
    b = add_lumen(healthy_store(tmp_path)).rebuild_catalog()
    if entry.startswith("- [Kestrel]"):
        edit(b, "SPINE.md", KESTREL_ENTRY, entry)
    else:
        spine_add(b, entry)
    expect_pass(tmp_path)


def test_c2_2_tier_subfolders_are_tier_files(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.tier("craft/sql/joins.md", "# Joins\n", scope="Join patterns", last_updated="2026-10-01").rebuild_catalog()
    expect_only(tmp_path, "C2", "active file has no SPINE pointer: craft/sql/joins.md")
    spine_add(b, f"- [Joins](craft/sql/joins.md) {EM} join patterns.")
    expect_pass(tmp_path)


# -- 3. local/SPINE.md --


def test_c2_3_local_spine_pointing_inside_local_passes(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("local/notes.md", "# Machine notes\n")
    b.write("local/SPINE.md", f"# Local index\n\n- [Notes](local/notes.md) {EM} this machine only.\n")
    expect_pass(tmp_path)


@pytest.mark.parametrize("pointer", ["craft/testing.md", "local/../craft/testing.md", "../local/notes.md", "CATALOG.md"])
def test_c2_3_local_spine_may_point_only_inside_local(tmp_path: Path, pointer: str) -> None:
    b = healthy_store(tmp_path)
    b.write("local/SPINE.md", f"# Local index\n\n- [Out]({pointer}) {EM} escapes the overlay.\n")
    expect_only(tmp_path, "C2", f"local/SPINE.md may point only inside local/: {pointer}")


def test_c2_3_local_spine_pointer_to_missing_file(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("local/SPINE.md", f"# Local index\n\n- [Gone](local/gone.md) {EM} not here.\n")
    expect_only(tmp_path, "C2", "local/SPINE.md pointer to missing file: local/gone.md")


# -- 4. CATALOG.md missing --


def test_c2_4_catalog_missing_skips_every_catalog_check(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.remove("CATALOG.md")
    found = findings(tmp_path)
    # The SPINE's catalog line now points at a missing file (item 1); steps 5-13 are skipped.
    assert sorted(fails(found, "C2")) == ["CATALOG.md missing", "SPINE pointer to missing file: CATALOG.md"]
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    for finding in found:
        assert_code_and_path(finding)


# -- 5. every file has a row --


@pytest.mark.parametrize(
    "path",
    ["profile/rowan.md", "craft/testing-2.md", "archive/projects/marlin.md", "archive/old-notes.md",
     "evidence/craft/testing.md", "evidence/projects/marlin.md"],
)
def test_c2_5_file_not_in_catalog(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    drop_line_starting(b, "CATALOG.md", f"- {path} |")
    expect_only(tmp_path, "C2", f"file not in catalog: {path}")


def test_c2_5_new_archive_and_evidence_files_need_rows(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("archive/legacy/craft/archive/old.md", "# Old craft notes\n")
    b.write("evidence/ops/deploy.md", "---\nevidence_for: ops/deploy.md\n---\n- 2026-08-01 confirm: soak caught it\n")
    found = expect_only(tmp_path, "C2", "file not in catalog: archive/legacy/craft/archive/old.md")
    assert "file not in catalog: evidence/ops/deploy.md" in fails(found, "C2")
    b.rebuild_catalog()
    expect_pass(tmp_path)


# -- 6. catalog paths --


@pytest.mark.parametrize(
    "path",
    ["../outside.md", "~/x.md", "/etc/x.md", "craft\\x.md", "craft/x:y.md", "local/notes.md",
     "archive/", "craft/../ops/deploy.md", "inbox/today.md"],
)
def test_c2_6_uncontained_catalog_path(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "## archived\n", f"- {path} | hand-added\n\n## archived\n")
    found = expect_only(tmp_path, "C2", f"uncontained path in CATALOG.md: {path}")
    assert not any(m.startswith("catalog line points at missing file") for m in fails(found))


@pytest.mark.parametrize("path", ["craft/gone.md", "archive/projects/gone.md", "evidence/ops/gone.md"])
def test_c2_6_catalog_line_points_at_missing_file(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "## archived\n", f"- {path} | hand-added\n\n## archived\n")
    expect_only(tmp_path, "C2", f"catalog line points at missing file: {path}")


# -- 7. row syntax --

PIPE_MSG = "unescaped ' | ' inside a free-text field of CATALOG.md (write it as '\\|'): "


def test_c2_7_unescaped_pipe_in_active_scope(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "Deploy procedure \\| canary and soak", "Deploy procedure | canary and soak")
    expect_only(tmp_path, "C2", PIPE_MSG + "canary and soak")


def test_c2_7_unescaped_pipe_in_archived_reason(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "| reason: past threshold |", "| reason: past | threshold |")
    expect_only(tmp_path, "C2", PIPE_MSG + "threshold")


@pytest.mark.parametrize(
    "suffix",
    [" | validated 2026-11-02", " | pinned | oversize: big table | oversize", " | legacy", " | 3 entries"],
)
def test_c2_7_known_segments_pass_the_syntax_rule(tmp_path: Path, suffix: str) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "- projects/kestrel.md | Kestrel ingest pipeline | validated 2026-11-02",
         "- projects/kestrel.md | Kestrel ingest pipeline" + suffix)
    assert not any(m.startswith(PIPE_MSG) for m in fails(findings(tmp_path)))


# -- 8. active rows --


def test_c2_8_validated_date_is_the_newest_stamp_anywhere(tmp_path: Path) -> None:
    # profile/rowan.md: frontmatter last_updated 2026-10-01, per-principle last_validated 2026-10-02.
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "| validated 2026-10-02", "| validated 2026-10-01")
    expect_only(tmp_path, "C2", "catalog validated date wrong for profile/rowan.md (newest stamp 2026-10-02)")


def test_c2_8_validated_date_missing_from_row(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", " | validated 2026-11-02", "")
    expect_only(tmp_path, "C2", "catalog validated date wrong for projects/kestrel.md (newest stamp 2026-11-02)")


def test_c2_8_a_new_stamp_in_the_body_makes_the_row_wrong(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    append(b, "projects/kestrel.md", "- Topic names are lower-case.\n  last_validated: 2026-11-20\n")
    expect_only(tmp_path, "C2", "catalog validated date wrong for projects/kestrel.md (newest stamp 2026-11-20)")


def test_c2_8_validated_date_claimed_for_undated_file(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "Output preferences |", "Output preferences | validated 2026-08-01 |")
    expect_only(tmp_path, "C2", "catalog claims a validated date for undated file feedback/preferences.md")


def test_c2_8_row_lacks_pinned(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", " | pinned", "")
    expect_only(tmp_path, "C2", "catalog row lacks pinned for projects/osprey.md")


def test_c2_8_every_row_is_checked_after_a_file_without_one(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", " | pinned", "")
    b.tier("craft/aaa.md", "# First in path order\n", domain="craft", scope="No row yet")
    assert take_snapshot(tmp_path).tier_paths[0] == "craft/aaa.md"
    assert fails(findings(tmp_path), "C2") == [
        "active file has no SPINE pointer: craft/aaa.md",
        "file not in catalog: craft/aaa.md",
        "catalog row lacks pinned for projects/osprey.md",
    ]


def test_c2_8_row_says_pinned_but_file_is_not(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "| validated 2026-11-02", "| validated 2026-11-02 | pinned")
    expect_only(tmp_path, "C2", "catalog row says pinned but projects/kestrel.md is not")


def test_c2_8_dated_non_negotiable_is_not_catalog_pinned(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    append(b, "projects/kestrel.md", "- [NON-NEGOTIABLE 2026-05-02] Never drop a topic without a backup.\n")
    b.rebuild_catalog()
    expect_pass(tmp_path)
    assert "- projects/kestrel.md | Kestrel ingest pipeline | validated 2026-11-02\n" in text_of(b, "CATALOG.md")
    edit(b, "CATALOG.md", "| validated 2026-11-02", "| validated 2026-11-02 | pinned")
    expect_only(tmp_path, "C2", "catalog row says pinned but projects/kestrel.md is not")


def test_dated_non_negotiable_exempts_a_project_from_staleness_debt(tmp_path: Path) -> None:
    # 4.4: any [NON-NEGOTIABLE...] exempts, dated forms included (1.4 Markers).
    b = healthy_store(tmp_path)
    b.tier("projects/lumen.md", "# Lumen\n\n- Old dashboards.\n", scope="Lumen", last_updated="2026-01-01")
    limits = LIMITS
    stale = [s.path for s in measure_budget(take_snapshot(tmp_path), limits, FIXED_NOW.date()).stale_projects]
    assert stale == ["projects/lumen.md"]
    append(b, "projects/lumen.md", "- [NON-NEGOTIABLE 2026-05-02] Keep the audit tables.\n")
    assert measure_budget(take_snapshot(tmp_path), limits, FIXED_NOW.date()).stale_projects == []


# -- 9. evidence rows --


def test_c2_9_evidence_count_wrong(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    append(b, "evidence/craft/testing.md", "- 2026-06-01 confirm: the temp-dir rule again\n")
    expect_only(tmp_path, "C2", "catalog count wrong for evidence/craft/testing.md (file has 3 entries)")


def test_c2_9_evidence_count_counts_every_dash_line(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    append(b, "evidence/craft/testing.md", "-not an entry\n  - indented, not an entry\n- an undated entry\n")
    expect_only(tmp_path, "C2", "catalog count wrong for evidence/craft/testing.md (file has 3 entries)")


def test_c2_9_evidence_for_is_not_trimmed_or_unquoted(tmp_path: Path) -> None:
    # 1.2: fm_value has no quote handling and no trailing-whitespace trim.
    b = healthy_store(tmp_path)
    edit(b, "evidence/craft/testing.md", "evidence_for: craft/testing.md\n", "evidence_for: craft/testing.md \n")
    expect_only(tmp_path, "C2", "evidence_for disagrees with the twin's path: evidence/craft/testing.md says craft/testing.md ")
    edit(b, "evidence/craft/testing.md", "evidence_for: craft/testing.md \n", 'evidence_for: "craft/testing.md"\n')
    expect_only(tmp_path, "C2", 'evidence_for disagrees with the twin\'s path: evidence/craft/testing.md says "craft/testing.md"')


def test_c2_9_twin_without_evidence_for(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "evidence/craft/testing.md", "evidence_for: craft/testing.md\n", "kind: evidence\n")
    expect_only(tmp_path, "C2", "evidence/craft/testing.md has no evidence_for")


def test_c2_9_evidence_for_outside_frontmatter_does_not_count(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "evidence/craft/testing.md", "---\nevidence_for: craft/testing.md\n---\n",
         "---\nkind: evidence\n---\nevidence_for: craft/testing.md\n")
    expect_only(tmp_path, "C2", "evidence/craft/testing.md has no evidence_for")


def test_c2_9_evidence_for_disagrees_with_path(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "evidence/craft/testing.md", "evidence_for: craft/testing.md", "evidence_for: craft/testing-2.md")
    expect_only(tmp_path, "C2", "evidence_for disagrees with the twin's path: evidence/craft/testing.md says craft/testing-2.md")


def test_c2_9_orphan_evidence(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("evidence/ops/gone.md", "---\nevidence_for: ops/gone.md\n---\n- 2026-01-01 observe: x\n").rebuild_catalog()
    expect_only(tmp_path, "C2", "orphan evidence: evidence/ops/gone.md (evidence_for ops/gone.md is neither active nor archived)")


def test_c2_9_twin_of_adopted_legacy_archive_is_a_note_not_an_orphan(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("archive/legacy/archive/projects/ember.md", "---\nrecall_count: 2\n---\n# Ember (finished 2026-05)\n")
    b.write("evidence/projects/ember.md", "---\nevidence_for: projects/ember.md\n---\n- 2026-04-01 observe: done\n")
    b.rebuild_catalog()
    found = expect_pass(tmp_path)
    assert notes(found, "C2") == [
        "evidence twin of an adopted legacy archive: evidence/projects/ember.md "
        "(archive/legacy/archive/projects/ember.md)"
    ]
    assert not any(m.startswith("orphan evidence") for m in fails(found))


def test_c2_9_twin_of_archived_file_is_fine(tmp_path: Path) -> None:
    # evidence/projects/marlin.md names projects/marlin.md, which exists only as archive/projects/marlin.md.
    b = healthy_store(tmp_path)
    assert not (b.root / "projects/marlin.md").exists()
    assert (b.root / "archive/projects/marlin.md").exists()
    expect_pass(tmp_path)


# -- 10. archived rows --


@pytest.mark.parametrize("path", ["archive/old-notes.md", "archive/legacy/archive/projects/ember.md"])
def test_c2_10_legacy_file_must_be_labelled_legacy(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    if path.startswith("archive/legacy/"):
        b.write(path, "# Ember (finished 2026-05)\n").rebuild_catalog()
    catalog = text_of(b, "CATALOG.md")
    row = next(line for line in catalog.split("\n") if line.startswith(f"- {path} |"))
    assert row.endswith(" | legacy")
    edit(b, "CATALOG.md", row, row[: -len(" | legacy")])
    expect_only(tmp_path, "C2", f"flat archive file must be labelled legacy in the catalog: {path}")


def test_c2_10_legacy_files_need_no_ledger_event(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("archive/legacy/craft/archive/y.md", "# Y\n").write("archive/flat.md", "# Flat\n").rebuild_catalog()
    expect_pass(tmp_path)


MARLIN_ROW_TAIL = (
    " | archived 2026-09-11 | reason: past threshold | from projects/marlin.md"
    " | hook: Marlin reporting backfill, finished in spring. Read when asked about the old reports."
)


def test_c2_10_nested_archive_file_labelled_legacy(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", MARLIN_ROW_TAIL, MARLIN_ROW_TAIL + " | legacy")
    expect_only(tmp_path, "C2", "nested archive file labelled legacy: archive/projects/marlin.md")


def test_c2_10_archived_row_lacks_from(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", " | from projects/marlin.md", "")
    expect_only(tmp_path, "C2", "archived row lacks 'from': archive/projects/marlin.md")


def test_c2_10_archived_row_lacks_hook(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", " | hook: Marlin reporting backfill, finished in spring. Read when asked about the old reports.", "")
    expect_only(tmp_path, "C2", "archived row lacks 'hook': archive/projects/marlin.md")


def test_c2_10_ledger_missing_but_archive_is_not_legacy(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.remove("archive/LEDGER.md")
    expect_only(tmp_path, "C2", "archive/LEDGER.md missing but archive/projects/marlin.md is not legacy")


def test_c2_10_without_a_ledger_every_nested_archive_file_is_named(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("archive/ops/runbook.md", "---\nscope: Old runbook\n---\n# Runbook\n").rebuild_catalog()
    b.remove("archive/LEDGER.md")
    assert [m for m in fails(findings(tmp_path), "C2") if "LEDGER.md missing" in m] == [
        "archive/LEDGER.md missing but archive/ops/runbook.md is not legacy",
        "archive/LEDGER.md missing but archive/projects/marlin.md is not legacy",
    ]


@pytest.mark.parametrize("path", ["archive/ops/runbook.md", "archive/projects/sub/deep.md"])
def test_c2_10_unledgered_nested_archive_is_pending_adoption(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    b.write(path, "---\nscope: Old runbook\n---\n# Runbook\n").rebuild_catalog()
    expect_only(tmp_path, "C2", f"no ledger archive event for: {path} (unledgered: pending adoption by migrate-store)")


def test_c2_10_every_archived_file_is_checked_after_one_pending_adoption(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("archive/ops/runbook.md", "---\nscope: Old runbook\n---\n# Runbook\n").rebuild_catalog()
    append(b, "archive/projects/marlin.md", "- changed after it was archived\n")
    found = fails(findings(tmp_path), "C2")
    assert "no ledger archive event for: archive/ops/runbook.md (unledgered: pending adoption by migrate-store)" in found
    assert "ledger sha256 does not match archived file: archive/projects/marlin.md" in found


def test_c2_10_archive_event_needs_to_followed_by_a_field(tmp_path: Path) -> None:
    # 3.3 item 10: the event is a line containing "| to: <a> |"; a line ending in its to: field has none.
    b = healthy_store(tmp_path)
    b.ledger([f"- {MARLIN_STAMP} archive | from: projects/marlin.md | to: archive/projects/marlin.md"])
    found = findings(tmp_path)
    assert ("no ledger archive event for: archive/projects/marlin.md (unledgered: pending adoption by migrate-store)"
            in fails(found, "C2"))
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}


def test_c2_10_a_restore_line_is_not_an_archive_event(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("archive/ops/runbook.md", "# Runbook\n")
    b.append_ledger("- 2026-09-12T00:00:00Z restore | from: archive/ops/runbook.md | to: ops/runbook.md | reason: x")
    b.rebuild_catalog()
    found = findings(tmp_path)
    assert ("no ledger archive event for: archive/ops/runbook.md (unledgered: pending adoption by migrate-store)"
            in fails(found, "C2"))


def test_c2_10_archived_bytes_differ_from_ledger_checksum(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "archive/projects/marlin.md", "- Done.\n", "- Done, mostly.\n")
    expect_only(tmp_path, "C2", "ledger sha256 does not match archived file: archive/projects/marlin.md")


def test_c2_10_crlf_conversion_of_an_archive_breaks_its_checksum(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("archive/projects/marlin.md", crlf(b.read("archive/projects/marlin.md")))
    expect_only(tmp_path, "C2", "ledger sha256 does not match archived file: archive/projects/marlin.md; "
                "it matches the ledger's sha256 once CRLF is read as LF: line endings were converted after "
                "archiving (restore the file's bytes from git, or convert it back to LF)")


def test_c2_10_recall_count_drift_in_archive_is_a_note_and_passes(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "archive/projects/marlin.md", "---\nscope:", "---\nrecall_count: 3\nscope:")
    found = expect_pass(tmp_path)
    assert notes(found, "C2") == ["recall_count drift only (tolerated): archive/projects/marlin.md"]
    for finding in found:
        assert_code_and_path(finding)
    assert "recall-count-drift" in [f.code for f in found]


def test_c2_10_recall_count_outside_frontmatter_is_not_drift(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    append(b, "archive/projects/marlin.md", "recall_count: 3\n")
    expect_only(tmp_path, "C2", "ledger sha256 does not match archived file: archive/projects/marlin.md")


def test_c2_10_drift_without_sha256_norm_in_the_ledger_fails(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    line = b.archive_line(MARLIN_STAMP, "projects/marlin.md", MARLIN_ENTRY)
    head, _, rest = line.partition(" | sha256-norm: ")
    b.ledger([head + " | " + rest.split(" | ", 1)[1]])
    edit(b, "archive/projects/marlin.md", "---\nscope:", "---\nrecall_count: 3\nscope:")
    expect_only(tmp_path, "C2", "ledger sha256 does not match archived file: archive/projects/marlin.md")


def test_c2_10_a_row_and_an_entry_both_without_a_hook_do_not_differ(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.ledger([marlin_line(b, entry="- [Marlin](projects/marlin.md)")])
    edit(b, "CATALOG.md", " | hook: Marlin reporting backfill, finished", "")
    assert fails(findings(tmp_path), "C2") == ["archived row lacks 'hook': archive/projects/marlin.md"]


def test_c2_10_a_row_without_a_hook_and_an_archive_line_without_spine_entry_do_not_differ(tmp_path: Path) -> None:
    # The reference reads a field that is not there as empty, on both sides.
    b = healthy_store(tmp_path)
    line = marlin_line(b)
    b.ledger([line[: line.index(" | spine-entry: ")]])
    edit(b, "CATALOG.md", " | hook: Marlin reporting backfill, finished", "")
    assert fails(findings(tmp_path), "C2") == ["archived row lacks 'hook': archive/projects/marlin.md"]


def test_c2_10_catalog_hook_differs_from_ledger(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", "hook: Marlin reporting backfill, finished", "hook: Marlin backfill, finished")
    expect_only(tmp_path, "C2", "catalog hook differs from ledger spine-entry hook: archive/projects/marlin.md")


def test_c2_10_hook_comparison_trims_trailing_whitespace_and_knows_double_dash(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    entry = "- [Marlin](projects/marlin.md) -- Marlin reporting backfill, finished in spring.   "
    b.ledger([b.archive_line(MARLIN_STAMP, "projects/marlin.md", entry)]).rebuild_catalog()
    assert "| hook: Marlin reporting backfill, finished in spring.\n" in text_of(b, "CATALOG.md")
    edit(b, "CATALOG.md", "finished in spring.\n", "finished in spring.  \t\n")
    expect_pass(tmp_path)


# -- 11. ledger syntax --

LEDGER_PIPE_MSG = "unescaped ' | ' inside a free-text field of archive/LEDGER.md (write it as '\\|'): "


def marlin_line(b: StoreBuilder, reason: str = "past threshold", entry: str = MARLIN_ENTRY) -> str:
    return b.archive_line(MARLIN_STAMP, "projects/marlin.md", entry, reason=reason)


@pytest.mark.parametrize(
    "line",
    [
        "- 11 Sept 2026 archive | from: projects/marlin.md | to: archive/projects/marlin.md | reason: a typo in the date",
        "- moved projects/lumen.md by hand, see the notes of the weekly review for the reasons given",
        "- 2026-9-12 restore | from: archive/projects/marlin.md | to: projects/marlin.md",
        "- 2026-09-12T10:00 restore | from: archive/projects/marlin.md | to: projects/marlin.md",
    ],
    ids=["words", "prose", "short-month", "no-Z"],
)
def test_c2_11_malformed_line_without_leading_date(tmp_path: Path, line: str) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger(line)
    found = findings(tmp_path)
    prefix = "malformed ledger line (no leading date): "
    hits = [m for m in fails(found, "C2") if m.startswith(prefix)]
    assert len(hits) == 1, fails(found)
    shown = hits[0][len(prefix):]
    # "<70 chars>" of the line (whether the leading "- " is shown is not pinned down by 3.3).
    assert shown in (line[:70], line[2:72])
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    for finding in found:
        assert_code_and_path(finding)


def test_c2_11_every_line_after_a_malformed_one_is_still_checked(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger("- 2026/09/12 archive | moved by hand")
    add_runbook_after_marlin(b, "2026-09-10T23:59:59Z")
    found = fails(findings(tmp_path), "C2")
    assert [m.split(":")[0] for m in found] == ["malformed ledger line (no leading date)", "ledger events out of order"]


def test_c2_11_non_event_lines_are_free_text(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger("Notes: moved by hand | see the review")
    b.append_ledger("  - indented, not an event")
    expect_pass(tmp_path)


def add_runbook_after_marlin(b: StoreBuilder, stamp: str) -> None:
    archive_file(b, "ops/runbook.md", stamp)
    b.rebuild_catalog()


@pytest.mark.parametrize(
    "stamp",
    ["2026-09-10T23:59:59Z", "2026-09-10", "2026-09-11T07:59:59Z", "2026-09-11T07:59Z"],
)
def test_c2_11_ledger_events_out_of_order(tmp_path: Path, stamp: str) -> None:
    b = healthy_store(tmp_path)
    add_runbook_after_marlin(b, stamp)
    expect_only(tmp_path, "C2", f"ledger events out of order: {stamp} appended after {MARLIN_STAMP} "
                                "(append order must be date order)")


@pytest.mark.parametrize("stamp", ["2026-09-11", "2026-09-11T08:00:00Z", "2026-09-11T08:00:01Z", "2026-10-01"])
def test_c2_11_same_day_date_only_and_later_stamps_are_in_order(tmp_path: Path, stamp: str) -> None:
    b = healthy_store(tmp_path)
    add_runbook_after_marlin(b, stamp)
    expect_pass(tmp_path)


def test_c2_11_timestamp_after_same_day_date_only_is_in_order(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.ledger([b.archive_line("2026-09-11", "projects/marlin.md", MARLIN_ENTRY)])
    add_runbook_after_marlin(b, "2026-09-11T00:00:00Z")
    expect_pass(tmp_path)


@pytest.mark.parametrize("event", ["purge", "delete", "archived", "restore(modified)"])
def test_c2_11_unknown_ledger_event(tmp_path: Path, event: str) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger(f"- 2026-09-12T00:00:00Z {event} | from: projects/marlin.md | to: archive/projects/marlin.md | reason: tidy")
    found = findings(tmp_path)
    assert any(m.startswith(f"unknown ledger event '{event}': ") for m in fails(found, "C2")), fails(found)
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    for finding in found:
        assert_code_and_path(finding)


def test_c2_11_unknown_ledger_event_quotes_the_first_70_bytes_of_its_line(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    line = "- 2026-09-12T00:00:00Z purge | from: projects/marlin.md | to: archive/projects/marlin.md | reason: tidy"
    b.append_ledger(line)
    assert "unknown ledger event 'purge': - 2026-09-12T00:00:00Z purge | from: projects/marlin.md | to: archive/" in fails(
        findings(tmp_path), "C2")


def test_c2_11_escaped_pipes_in_free_text_pass(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    entry = MARLIN_ENTRY.replace("finished in spring.", "finished in spring \\| reports frozen.")
    b.ledger([marlin_line(b, reason="past threshold \\| no reads", entry=entry)]).rebuild_catalog()
    catalog = text_of(b, "CATALOG.md")
    assert "| reason: past threshold \\| no reads |" in catalog
    assert "| hook: Marlin reporting backfill, finished in spring \\| reports frozen." in catalog
    expect_pass(tmp_path)


@pytest.mark.parametrize(
    "reason, entry, segment",
    [
        ("past threshold | no reads", MARLIN_ENTRY, "no reads"),
        ("past threshold", MARLIN_ENTRY.replace("in spring.", "in spring | frozen."), "frozen. Read when asked about the old reports."),
        ("tidy | to: archive/projects/other.md", MARLIN_ENTRY, "to: archive/projects/other.md"),
    ],
    ids=["reason", "spine-entry", "forged-to"],
)
def test_c2_11_bare_pipe_in_free_text_fails(tmp_path: Path, reason: str, entry: str, segment: str) -> None:
    b = healthy_store(tmp_path)
    b.ledger([marlin_line(b, reason=reason, entry=entry)]).rebuild_catalog()
    found = findings(tmp_path)
    assert LEDGER_PIPE_MSG + segment in fails(found, "C2"), fails(found)
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}


def test_c2_11_repeated_key_fails(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    line = marlin_line(b).replace(" | reason: past threshold", " | reason: past threshold | reason: again")
    b.ledger([line])
    found = expect_only(tmp_path, "C2", LEDGER_PIPE_MSG + "reason: again")
    assert [m for m in fails(found) if m.startswith(LEDGER_PIPE_MSG)] == [LEDGER_PIPE_MSG + "reason: again"]


def test_c2_11_unknown_key_fails(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.ledger([marlin_line(b).replace(" | reason: ", " | note: by hand | reason: ")])
    expect_only(tmp_path, "C2", LEDGER_PIPE_MSG + "note: by hand")


@pytest.mark.parametrize("path", ["../projects/zed.md", "~/zed.md", "/projects/zed.md", "projects\\zed.md", "c:/zed.md"])
def test_c2_11_uncontained_ledger_from(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger(f"- 2026-09-12T00:00:00Z restore | from: {path} | to: projects/zed.md | reason: x")
    found = findings(tmp_path)
    assert f"uncontained path in archive/LEDGER.md from: {path}" in fails(found, "C2")
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    for finding in found:
        assert_code_and_path(finding)


def test_c2_11_an_event_without_a_from_field_is_uncontained(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger("- 2026-09-12T00:00:00Z archive | to: archive/projects/zed.md | reason: x")
    assert "uncontained path in archive/LEDGER.md from: " in fails(findings(tmp_path), "C2")


def test_c2_11_an_event_without_a_to_field_is_uncontained(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger("- 2026-09-12T00:00:00Z restore | from: archive/projects/marlin.md | reason: x")
    assert "uncontained path in archive/LEDGER.md to: " in fails(findings(tmp_path), "C2")


@pytest.mark.parametrize("path", ["archive/../projects/zed.md", "~/zed.md", "/archive/projects/zed.md", "archive\\zed.md", "archive/projects/z:ed.md"])
def test_c2_11_uncontained_ledger_to(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger(f"- 2026-09-12T00:00:00Z archive | from: projects/zed.md | to: {path} | reason: x")
    found = findings(tmp_path)
    assert f"uncontained path in archive/LEDGER.md to: {path}" in fails(found, "C2")
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    for finding in found:
        assert_code_and_path(finding)


@pytest.mark.parametrize(
    "source, target",
    [("projects/zed.md", "archive/ops/zed.md"), ("archive/projects/zed.md", "archive/archive/projects/zed.md"),
     ("evidence/ops/zed.md", "archive/evidence/ops/zed.md")],
)
def test_c2_11_archive_line_must_move_x_to_archive_x(tmp_path: Path, source: str, target: str) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger(f"- 2026-09-12T00:00:00Z archive | from: {source} | to: {target} | reason: x")
    found = findings(tmp_path)
    assert f"ledger archive line must move X to archive/X: from {source} to {target}" in fails(found, "C2")
    assert verdicts(found)["C2"] == "FAIL"


@pytest.mark.parametrize("event", ["restore", "restore (modified)"])
@pytest.mark.parametrize(
    "source, target",
    [("archive/ops/zed.md", "projects/zed.md"), ("archive/evidence/ops/zed.md", "evidence/ops/zed.md")],
)
def test_c2_11_restore_line_must_move_archive_x_to_x(tmp_path: Path, event: str, source: str, target: str) -> None:
    b = healthy_store(tmp_path)
    b.append_ledger(f"- 2026-09-12T00:00:00Z {event} | from: {source} | to: {target} | reason: x")
    found = findings(tmp_path)
    assert f"ledger restore line must move archive/X to X: from {source} to {target}" in fails(found, "C2")


# -- 12. ledger and tree agree --


def test_c2_12_ledger_says_archived_but_tree_disagrees(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    raw = b.read("projects/kestrel.md")
    b.append_ledger(f"- 2026-09-12T00:00:00Z archive | from: projects/kestrel.md | to: archive/projects/kestrel.md"
                    f" | sha256: {sha256_hex(raw)} | reason: x | spine-entry: {KESTREL_ENTRY}")
    expect_only(tmp_path, "C2", "ledger says archived but tree disagrees: projects/kestrel.md")


def test_c2_12_ledger_says_restored_but_tree_disagrees(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    raw = b.read("archive/projects/marlin.md")
    b.append_ledger(f"- 2026-09-12T00:00:00Z restore | from: archive/projects/marlin.md | to: projects/marlin.md"
                    f" | sha256: {sha256_hex(raw)} | reason: user request")
    found = expect_only(tmp_path, "C2", "ledger says restored but tree disagrees: projects/marlin.md")
    assert "ledger says archived but tree disagrees: projects/marlin.md" not in fails(found)


def test_c2_12_a_restored_file_in_neither_place_disagrees_with_the_ledger(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    raw = b.read("archive/projects/marlin.md")
    b.append_ledger(f"- 2026-09-12T00:00:00Z restore | from: archive/projects/marlin.md | to: projects/marlin.md"
                    f" | sha256: {sha256_hex(raw)} | reason: user request")
    b.remove("archive/projects/marlin.md")
    assert "ledger says restored but tree disagrees: projects/marlin.md" in fails(findings(tmp_path), "C2")


@pytest.mark.parametrize("event", ["restore", "restore (modified)"])
def test_c2_12_a_real_restore_passes_the_last_event_decides(tmp_path: Path, event: str) -> None:
    b = healthy_store(tmp_path)
    raw = b.read("archive/projects/marlin.md")
    b.append_ledger(f"- 2026-10-01T09:00:00Z {event} | from: archive/projects/marlin.md | to: projects/marlin.md"
                    f" | sha256: {sha256_hex(raw)} | reason: user request")
    b.write("projects/marlin.md", raw).remove("archive/projects/marlin.md")
    spine_add(b, MARLIN_ENTRY)
    b.rebuild_catalog()
    expect_pass(tmp_path)


# -- 13. catalog freshness --


def test_c2_13_catalog_without_rebuilt_stamp(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", f"rebuilt: {REBUILT}", "rebuilt by hand")
    expect_only(tmp_path, "C2", "catalog has no rebuilt: stamp")


@pytest.mark.parametrize("rebuilt", ["2026-09-10T23:59:59Z", "2026-09-10", "2026-09-11T07:59:59Z", "2026-09-11T07:59Z"])
def test_c2_13_catalog_stale(tmp_path: Path, rebuilt: str) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", f"rebuilt: {REBUILT}", f"rebuilt: {rebuilt}")
    expect_only(tmp_path, "C2", f"catalog stale: rebuilt {rebuilt} but newest ledger event is {MARLIN_STAMP}")


@pytest.mark.parametrize("rebuilt", ["2026-09-11", "2026-09-11T08:00:00Z", "2026-09-11T08:00:01Z"])
def test_c2_13_same_day_date_only_or_equal_stamp_is_fresh(tmp_path: Path, rebuilt: str) -> None:
    b = healthy_store(tmp_path)
    edit(b, "CATALOG.md", f"rebuilt: {REBUILT}", f"rebuilt: {rebuilt}")
    expect_pass(tmp_path)


def test_c2_13_a_ledger_without_events_leaves_any_stamped_catalog_fresh(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.remove("archive/projects/marlin.md").remove("evidence/projects/marlin.md")
    b.ledger([]).rebuild_catalog()
    edit(b, "CATALOG.md", f"rebuilt: {REBUILT}", "rebuilt: 2000-01-01")
    expect_pass(tmp_path)


def test_c2_13_newest_is_the_maximum_stamp_not_the_last_line(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    add_runbook_after_marlin(b, "2026-09-11")  # date-only, same day: in order, and not newer
    edit(b, "CATALOG.md", f"rebuilt: {REBUILT}", "rebuilt: 2026-09-11T07:00:00Z")
    found = findings(tmp_path)
    assert f"catalog stale: rebuilt 2026-09-11T07:00:00Z but newest ledger event is {MARLIN_STAMP}" in fails(found, "C2")


# -- 14-16. collisions, nested archives, symlinks --


def test_c2_14_path_exists_both_active_and_archived(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    b.write("projects/marlin.md", b.read("archive/projects/marlin.md"))
    spine_add(b, MARLIN_ENTRY)
    b.rebuild_catalog()
    found = expect_only(tmp_path, "C2", "path exists both active and archived: projects/marlin.md")
    assert "ledger says archived but tree disagrees: projects/marlin.md" in fails(found, "C2")


@pytest.mark.parametrize("path", ["craft/archive/old.md", "projects/kestrel/archive/2025/notes.md"])
def test_c2_15_legacy_archive_inside_a_tier_directory(tmp_path: Path, path: str) -> None:
    b = healthy_store(tmp_path)
    b.write(path, "---\nscope: x\n---\n" + "pre-1.2 line\n" * 70)  # over the C3 cap, yet not a tier file
    found = expect_only(tmp_path, "C2", f"legacy archive inside a tier directory: {path} "
                                        f"(migration adopts it to archive/legacy/{path})")
    assert fails(found, "C2") == [f"legacy archive inside a tier directory: {path} (migration adopts it to archive/legacy/{path})"]


@pytest.mark.parametrize(
    "link, target",
    [("craft/alias.md", "testing.md"), ("ops/shared", "../craft"), ("archive/projects/alias.md", "marlin.md"),
     ("evidence/craft/alias.md", "testing.md"), ("local/SPINE.md", "../SPINE.md")],
)
def test_c2_16_symlink_in_store(tmp_path: Path, link: str, target: str) -> None:
    b = healthy_store(tmp_path)
    (b.root / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, b.root / link)
    found = findings(tmp_path)
    assert f"symlink in store: {link}" in fails(found, "C2"), fails(found)
    assert verdicts(found) == {"C1": "PASS", "C2": "FAIL", "C3": "PASS"}
    for finding in found:
        assert_code_and_path(finding)


# == C3: tier files (3.4) ===========================================================================


def pad_file_lines(b: StoreBuilder, relative: str, total: int, *, eol: str = "\n", final_newline: bool = True) -> None:
    raw = b.read(relative).replace(b"\r\n", b"\n")
    have = line_count(raw)
    text = raw.decode() + "".join(f"- filler {i}\n" for i in range(total - have - 1)) + "- last filler"
    text += "\n" if final_newline else ""
    b.write(relative, text.replace("\n", eol))
    assert line_count(b.read(relative)) == total


@pytest.mark.parametrize("total, verdict", [(60, "PASS"), (61, "FAIL")])
@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_c3_1_line_cap_is_60_and_ignores_cr(tmp_path: Path, total: int, verdict: str, eol: str) -> None:
    b = healthy_store(tmp_path)
    pad_file_lines(b, "projects/kestrel.md", total, eol=eol)
    if verdict == "PASS":
        expect_pass(tmp_path)
    else:
        expect_only(tmp_path, "C3", "projects/kestrel.md has 61 lines (max 60)")


def test_c3_1_unterminated_last_line_counts(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    pad_file_lines(b, "projects/kestrel.md", 61, final_newline=False)
    expect_only(tmp_path, "C3", "projects/kestrel.md has 61 lines (max 60)")


def test_c3_1_oversize_does_not_exempt_the_line_cap(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    pad_file_lines(b, "feedback/preferences.md", 61)
    expect_only(tmp_path, "C3", "feedback/preferences.md has 61 lines (max 60)")


def pad_file_bytes(b: StoreBuilder, relative: str, total: int) -> None:
    """Append one line of em dashes and ASCII so the raw file is ``total`` bytes."""
    raw = b.read(relative)
    need = total - len(raw) - 1
    dashes = need // 3 - 5
    b.write(relative, raw + (EM * dashes + "w" * (need - 3 * dashes) + "\n").encode())
    assert len(b.read(relative)) == total


@pytest.mark.parametrize("total, verdict", [(6000, "PASS"), (6001, "FAIL")])
def test_c3_2_byte_cap_is_6000_raw_bytes(tmp_path: Path, total: int, verdict: str) -> None:
    b = healthy_store(tmp_path)
    pad_file_bytes(b, "projects/kestrel.md", total)
    assert len(b.read("projects/kestrel.md").decode()) < 2500  # em dashes: 3 bytes each
    if verdict == "PASS":
        expect_pass(tmp_path)
    else:
        expect_only(tmp_path, "C3", "projects/kestrel.md is 6001 bytes (max 6000; declare oversize: <reason> to exempt)")


def test_c3_2_crlf_bytes_count(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    pad_file_bytes(b, "projects/kestrel.md", 6000 - line_count(b.read("projects/kestrel.md")) - 1)
    b.write("projects/kestrel.md", crlf(b.read("projects/kestrel.md")))
    assert len(b.read("projects/kestrel.md")) == 6000
    expect_pass(tmp_path)
    b.write("projects/kestrel.md", b.read("projects/kestrel.md") + b"\r\n")
    expect_only(tmp_path, "C3", "projects/kestrel.md is 6002 bytes (max 6000; declare oversize: <reason> to exempt)")


def test_c3_2_oversize_exempts_the_byte_cap(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    pad_file_bytes(b, "feedback/preferences.md", 9000)
    expect_pass(tmp_path)


def test_c3_2_oversize_outside_frontmatter_does_not_exempt(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    append(b, "projects/kestrel.md", "oversize: not in the frontmatter\n")
    pad_file_bytes(b, "projects/kestrel.md", 6001)
    expect_only(tmp_path, "C3", "projects/kestrel.md is 6001 bytes (max 6000; declare oversize: <reason> to exempt)")


def set_read_with(b: StoreBuilder, value_line: str) -> None:
    edit(b, "ops/deploy.md", "read_with: [craft/testing.md]\n", value_line)


@pytest.mark.parametrize(
    "line",
    [
        "read_with:\n  - craft/testing.md\n",  # a block list
        "read_with: craft/testing.md\n",
        "read_with: craft/testing.md, profile/rowan.md\n",
        "read_with: [craft/testing.md\n",
        "read_with: \n",
    ],
    ids=["block-list", "bare", "bare-comma", "unclosed", "empty"],
)
def test_c3_3_read_with_must_be_an_inline_list(tmp_path: Path, line: str) -> None:
    b = healthy_store(tmp_path)
    set_read_with(b, line)
    expect_only(tmp_path, "C3", "ops/deploy.md read_with must be an inline list [a.md, b.md]")


@pytest.mark.parametrize(
    "value",
    [
        "[craft/testing.md, profile/rowan.md]",
        "[ craft/testing.md ,  profile/rowan.md ]",
        "[craft/testing.md, ]",
        "[]",
        "[archive/projects/marlin.md, evidence/craft/testing.md]",
        "[craft/testing-2.md,craft/testing.md]",
    ],
)
def test_c3_3_valid_inline_read_with(tmp_path: Path, value: str) -> None:
    b = healthy_store(tmp_path)
    set_read_with(b, f"read_with: {value}\n")
    expect_pass(tmp_path)


def test_c3_3_read_with_outside_frontmatter_is_ignored(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    append(b, "ops/deploy.md", "read_with: [craft/gone.md]\n")
    expect_pass(tmp_path)


@pytest.mark.parametrize("target", ["local/notes.md", "local/../craft/testing.md"])
def test_c3_3_read_with_into_local_overlay(tmp_path: Path, target: str) -> None:
    b = healthy_store(tmp_path)
    b.write("local/notes.md", "# Local\n")
    set_read_with(b, f"read_with: [craft/testing.md, {target}]\n")
    expect_only(tmp_path, "C3", f"ops/deploy.md read_with into local/ overlay: {target}")


@pytest.mark.parametrize(
    "target",
    ["../outside.md", "~/x.md", "/etc/x.md", "craft\\testing.md", "c:/x.md", "craft/./testing.md",
     "notes.md", "inbox/today.md", "archive", "evidence/", "SPINE.md", "CATALOG.md"],
)
def test_c3_3_uncontained_read_with(tmp_path: Path, target: str) -> None:
    b = healthy_store(tmp_path)
    set_read_with(b, f"read_with: [{target}]\n")
    expect_only(tmp_path, "C3", f"uncontained path in ops/deploy.md read_with: {target}")


@pytest.mark.parametrize("target", ["craft/gone.md", "archive/projects/gone.md", "evidence/ops/deploy.md"])
def test_c3_3_read_with_target_missing(tmp_path: Path, target: str) -> None:
    b = healthy_store(tmp_path)
    set_read_with(b, f"read_with: [craft/testing.md, {target}]\n")
    found = expect_only(tmp_path, "C3", f"ops/deploy.md read_with target missing: {target}")
    assert fails(found, "C3") == [f"ops/deploy.md read_with target missing: {target}"]


@pytest.mark.parametrize(
    "value",
    ["../craft/testing.md", "~/craft/testing.md", "/craft/testing.md", "craft\\testing.md", "craft:testing.md",
     "archive/craft/testing.md", "evidence/craft/testing.md", "testing.md", "craft/../craft/testing.md"],
)
def test_c3_4_uncontained_split_from(tmp_path: Path, value: str) -> None:
    b = healthy_store(tmp_path)
    edit(b, "craft/testing-2.md", "split_from: craft/testing.md", f"split_from: {value}")
    expect_only(tmp_path, "C3", f"uncontained path in craft/testing-2.md split_from: {value}")


def test_c3_4_split_from_is_not_trimmed_or_unquoted(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "craft/testing-2.md", "split_from: craft/testing.md\n", "split_from: craft/testing.md \n")
    expect_only(tmp_path, "C3", "craft/testing-2.md split_from target missing: craft/testing.md ")
    edit(b, "craft/testing-2.md", "split_from: craft/testing.md \n", 'split_from: "craft/testing.md"\n')
    expect_only(tmp_path, "C3", 'uncontained path in craft/testing-2.md split_from: "craft/testing.md"')


def test_c3_4_split_from_target_missing(tmp_path: Path) -> None:
    b = healthy_store(tmp_path)
    edit(b, "craft/testing-2.md", "split_from: craft/testing.md", "split_from: craft/testing-1.md")
    expect_only(tmp_path, "C3", "craft/testing-2.md split_from target missing: craft/testing-1.md")


# == the CLI reports the same verdicts ================================================================

CLI_CASES: list[tuple[str, Callable[[StoreBuilder], object], str]] = [
    ("no-pointer", lambda b: add_lumen(b).rebuild_catalog(), "active file has no SPINE pointer: projects/lumen.md"),
    ("stale", lambda b: edit(b, "CATALOG.md", f"rebuilt: {REBUILT}", "rebuilt: 2026-09-10"),
     f"catalog stale: rebuilt 2026-09-10 but newest ledger event is {MARLIN_STAMP}"),
    ("sha", lambda b: edit(b, "archive/projects/marlin.md", "- Done.", "- Done!"),
     "ledger sha256 does not match archived file: archive/projects/marlin.md"),
    ("nested", lambda b: b.write("ops/archive/old.md", "# old\n"),
     "legacy archive inside a tier directory: ops/archive/old.md (migration adopts it to archive/legacy/ops/archive/old.md)"),
    ("catalog-missing", lambda b: b.remove("CATALOG.md"), "CATALOG.md missing"),
]


@pytest.mark.parametrize("mutate, message", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_prints_c2_fail_with_reason_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mutate: Callable[[StoreBuilder], object], message: str
) -> None:
    mutate(healthy_store(tmp_path))
    code, out, err = run_cli(capsys, "check", str(tmp_path))
    lines = [line for line in out.splitlines() if not line.startswith("this store needs `distilld migrate`")]
    assert code == 1
    assert lines[0] == "C1 PASS"
    assert "C2 FAIL" in lines and "C3 PASS" in lines
    c2 = lines[lines.index("C2 FAIL") + 1: lines.index("C3 PASS")]
    assert f"    - {message}" in c2
    assert "Traceback" not in out + err


def test_cli_prints_notes_under_a_passing_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path)
    edit(b, "archive/projects/marlin.md", "---\nscope:", "---\nrecall_count: 3\nscope:")
    code, out, _ = run_cli(capsys, "check", str(tmp_path))
    assert code == 0
    assert out == ("C1 PASS\nC2 PASS\n    note: recall_count drift only (tolerated): archive/projects/marlin.md\n"
                   "C3 PASS\n")


def test_cli_c1_and_c3_fail_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = healthy_store(tmp_path)
    drop_line_starting(b, "SPINE.md", "- [Catalog](CATALOG.md)")
    pad_file_lines(b, "projects/kestrel.md", 61)
    code, out, _ = run_cli(capsys, "check", str(tmp_path))
    assert code == 1
    assert out == ("C1 FAIL\n    - SPINE has no catalog line\nC2 PASS\n"
                   "C3 FAIL\n    - projects/kestrel.md has 61 lines (max 60)\n"
                   "summary: C1 1 failing, C2 pass, C3 1 failing\n")
