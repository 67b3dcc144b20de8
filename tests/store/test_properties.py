"""Property tests: the canonical catalog over random stores, and parsers over arbitrary bytes.

(a) For random small stores, render_catalog is deterministic and idempotent, and once it is
    written the store has no catalog-consistency findings (STORE-FORMAT.md 1.8, 3.3 items 5-13).
(b) No parser, check or rebuild crashes on arbitrary bytes, and each keeps its basic contract.
"""

from __future__ import annotations

import re
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from distilld.actions.catalog import refresh_catalog
from distilld.policy import load_policy
from distilld.store.budget import measure_budget
from distilld.store.catalog import Catalog, render_catalog
from distilld.store.invariants import check_c2, check_store
from distilld.store.ledger import Ledger
from distilld.store.lossless import check_c4
from distilld.store.snapshot import take_snapshot
from distilld.store.spine import Spine
from distilld.store.text import sha256_hex, sha256_norm_hex
from distilld.store.tierfile import KnowledgeFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LIMITS = load_policy().limits

UTC = timezone.utc
EM = "\u2014"
TIERS = ("craft", "ops", "profile", "projects", "feedback")
CATALOG_CODES = frozenset({
    "not-in-catalog", "catalog-missing-target", "catalog-stale", "catalog-no-stamp", "catalog-validated-wrong",
    "catalog-validated-undated", "catalog-lacks-pinned", "catalog-false-pinned", "catalog-count-wrong",
    "catalog-unescaped-pipe", "catalog-hook-differs", "legacy-unlabelled", "nested-labelled-legacy",
    "archived-row-no-from", "archived-row-no-hook",
})
SEED_CATALOG = "# stale hand-written catalog\n"
EXAMPLES = settings(max_examples=80, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ = settings(max_examples=250, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- (a) random well-formed stores -----------------------------------------------------------------
# Free text avoids '/', 'h', 'p', 'v', 'l', 'f': a scope or hook that itself spelled "- <path> |",
# "| pinned", "| validated …", "| legacy", "| from " or "hook: " would fool the checker's substring
# tests (3.3 items 8 and 10) even in a canonical catalog; that is a limit of the format, not of the
# rebuild, so the strategies stay clear of it.
FREE = st.lists(st.one_of(st.sampled_from([" | ", "|", "\\|", " \\| ", "\\", EM, "\u00e9", " "]),
                          st.text(alphabet="abcdekqzZQ09-_.", min_size=1, max_size=5)),
                min_size=1, max_size=6).map("".join)
NAME = st.text(alphabet="abcdekqz019-_", min_size=1, max_size=6)
DATE = st.dates(min_value=datetime(2025, 1, 1).date(), max_value=datetime(2027, 6, 30).date()).map(str)
CLOCK = st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 1, 1)).map(
    lambda d: d.replace(microsecond=0, tzinfo=UTC))


@st.composite
def stamps(draw) -> str:
    day = draw(DATE)
    form = draw(st.sampled_from(["date", "minutes", "seconds"]))
    hour, minute, second = draw(st.integers(0, 23)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
    if form == "date":
        return day
    if form == "minutes":
        return f"{day}T{hour:02d}:{minute:02d}Z"
    return f"{day}T{hour:02d}:{minute:02d}:{second:02d}Z"


@st.composite
def tier_path(draw) -> str:
    tier = draw(st.sampled_from(TIERS))
    sub = draw(st.sampled_from(["", "", "", "sub/"]))
    return f"{tier}/{sub}{draw(NAME)}.md"


BODY_LINE = st.one_of(
    FREE,
    st.sampled_from(["", "# Title kq", "## Section", "### [DIRECTIVE 2026-07-20] rule", "- [PRINCIPLE] a rule",
                     "- [NON-NEGOTIABLE] never", "plain prose"]),
    DATE.map(lambda d: f"  last_validated: {d}"),
    DATE.map(lambda d: f"last_updated: {d}"),
    FREE.map(lambda t: "# " + t),
)


@st.composite
def knowledge_text(draw) -> str:
    fm: list[str] = []
    if draw(st.booleans()):
        fm.append(f"scope: {draw(FREE)}")
    if draw(st.booleans()):
        fm.append(f"last_updated: {draw(DATE)}")
    if draw(st.booleans()):
        fm.append(f"last_validated: {draw(DATE)}")
    if draw(st.integers(0, 3)) == 0:
        fm.append("lifecycle: pinned")
    if draw(st.integers(0, 3)) == 0:
        fm.append("oversize: " + draw(FREE))
    if draw(st.integers(0, 5)) == 0:
        fm.append("oversize:")
    if draw(st.integers(0, 4)) == 0:
        fm.append(f"recall_count: {draw(st.integers(0, 9))}")
    fm = list(draw(st.permutations(fm)))
    body = draw(st.lists(BODY_LINE, max_size=6))
    lines = (["---", *fm, "---"] if fm or draw(st.booleans()) else []) + body
    text = "\n".join(lines) + ("\n" if lines and draw(st.booleans()) else "")
    return text.replace("\n", "\r\n") if draw(st.integers(0, 4)) == 0 else text


def escape(text: str) -> str:
    return re.sub(r"(?<!\\)\|", r"\\|", text)


@st.composite
def stores(draw) -> dict:
    actives = draw(st.lists(tier_path(), max_size=6, unique=True))
    archived = draw(st.lists(tier_path(), max_size=4, unique=True).map(
        lambda ps: [p for p in ps if p not in actives]))
    files: dict[str, str] = {p: draw(knowledge_text()) for p in actives}
    for p in archived:
        files["archive/" + p] = draw(knowledge_text())
    for _ in range(draw(st.integers(0, 2))):
        files[f"archive/{draw(NAME)}.md"] = draw(knowledge_text())                     # flat legacy
    for _ in range(draw(st.integers(0, 2))):
        files[f"archive/legacy/archive/{draw(tier_path())}"] = draw(knowledge_text())  # adopted legacy
    for p in draw(st.lists(st.sampled_from(actives + archived + ["projects/orphan.md"]), unique=True)
                  if actives or archived else st.just(["projects/orphan.md"])):
        entries = draw(st.lists(st.one_of(
            DATE.map(lambda d: f"- {d} confirm: noted"), FREE.map(lambda t: "- " + t),
            st.sampled_from(["  - indented", "-no space", "## Evidence log", ""])), max_size=6))
        ending = draw(st.sampled_from(["\n", "\r\n"]))
        files["evidence/" + p] = ending.join(["---", f"evidence_for: {p}", "---", *entries]) + ending
    ledger: list[str] = []
    for p in archived:
        raw = files["archive/" + p].encode()
        for _ in range(draw(st.integers(1, 2))):
            reason = draw(st.one_of(st.none(), FREE))
            hook = draw(FREE)
            dash = draw(st.sampled_from([EM, "--"]))
            line = (f"- {draw(stamps())} archive | from: {p} | to: archive/{p} | sha256: {sha256_hex(raw)}"
                    f" | sha256-norm: {sha256_norm_hex(raw)}")
            if reason is not None:
                line += f" | reason: {escape(reason)}"
            ledger.append(line + f" | spine-entry: {escape(f'- [{draw(NAME)}]({p}) {dash} {hook}')}")
    ledger.sort(key=lambda line: line.split(" ", 2)[1][:10])  # date order, as appended
    spine = ["# Distill Knowledge Index", "", f"- [Catalog](CATALOG.md) {EM} complete inventory.", ""]
    spine += [f"- [{draw(NAME)}]({p}) {EM} {draw(FREE)}" for p in actives]
    return {"files": files, "ledger": ledger if archived or draw(st.booleans()) else None,
            "spine": "\n".join(spine) + "\n", "clock": draw(CLOCK)}


def build(root: Path, plan: dict) -> None:
    def put(rel: str, data: str) -> None:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode("utf-8"))

    for rel, text in plan["files"].items():
        put(rel, text)
    if plan["ledger"] is not None:
        put("archive/LEDGER.md", "# Archive ledger\n\n" + "".join(line + "\n" for line in plan["ledger"]))
    put("SPINE.md", plan["spine"])
    put("CATALOG.md", SEED_CATALOG)


@pytest.mark.slow  # many examples: in the full run (CI), not in -m "not slow"
@EXAMPLES
@given(plan=stores())
def test_catalog_is_deterministic_idempotent_and_consistent(plan: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, plan)
        now = plan["clock"]
        first = render_catalog(take_snapshot(root), now)
        assert first == render_catalog(take_snapshot(root), now)

        outcome = refresh_catalog(root, now)
        assert outcome.written is True
        written = (root / "CATALOG.md").read_bytes()
        assert written == first.encode("utf-8")
        # Re-rendering the store with its new catalog gives the same bytes, and a second write is a no-op.
        assert render_catalog(take_snapshot(root), now).encode("utf-8") == written
        assert refresh_catalog(root, now + timedelta(days=1)).written is False
        assert (root / "CATALOG.md").read_bytes() == written

        bad = [f.message for f in check_c2(take_snapshot(root)) if f.code in CATALOG_CODES]
        assert bad == [], (bad, written.decode())


# -- (b) arbitrary bytes --------------------------------------------------------------------------
FRAGMENTS = [
    "\r", "\n", "\r\n", "|", "\\|", " | ", "---", "---\n", "- [", "](x.md)", "](craft/a.md)", "- ", "-- ", "# ",
    "## [DIRECTIVE 2026-07-20] ", "[NON-NEGOTIABLE", "[IMPORTANT]", "]", "(", ")", "  ", "\t", EM, "\u00e9",
    "\x00", "\ufeff", "last_validated: 2026-01-02", "last_updated: 2026-13-45", "recall_count: 3",
    "rebuilt: 2026-01-01T00:00:00Z", "rebuilt: 2026-01-01T00:00Z", "- 2026-01-01 archive", "- 2026-01-01T10:00Z restore",
    " | to: archive/craft/a.md", " | from: craft/a.md", " | to: ../x.md", " | sha256: ", " | sha256-norm: ",
    " | reason: ", " | spine-entry: - [A](craft/a.md) \u2014 hook", "scope: ", "lifecycle: pinned",
    "oversize:", "oversize: big", "split_from: craft/a.md", "read_with: [ops/b.md, local/x.md]",
    "evidence_for: craft/a.md", "- craft/a.md | ", " | validated 2026-01-01", " | legacy", " | 3 entries",
]
MESSY_TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=40).map("".join)
RAW = st.one_of(st.binary(max_size=400), MESSY_TEXT.map(lambda t: t.encode("utf-8")),
                st.tuples(MESSY_TEXT, st.binary(max_size=20)).map(lambda p: p[0].encode("utf-8") + p[1]))


def is_subsequence(part: list[str], whole: list[str]) -> bool:
    it = iter(whole)
    return all(any(item == candidate for candidate in it) for item in part)


@pytest.mark.slow  # many examples: in the full run, not the default one
@FUZZ
@given(raw=RAW)
def test_spine_parser_never_crashes(raw: bytes) -> None:
    spine = Spine(raw)
    for item in spine.entries:
        assert item.first_line.startswith("- [")
        assert item.byte_len >= len(item.first_line.encode("utf-8", "surrogateescape"))
        _ = (item.hook, item.first_line_hook, item.leading_group, item.pointers, item.is_catalog_line)
    assert all(p.endswith(".md") for p in spine.pointer_list)
    assert len(set(spine.pointer_list)) == len(spine.pointer_list)
    assert spine.line_count == len(spine.lines)
    _ = spine.has_catalog_line


@pytest.mark.slow  # many examples: in the full run, not the default one
@FUZZ
@given(raw=RAW)
def test_ledger_parser_never_crashes(raw: bytes) -> None:
    ledger = Ledger(raw)
    for line in ledger.lines:
        assert line.text.startswith("- ")
        assert line.is_event == (line.stamp is not None)
    for path, line in ledger.last_event_by_path.items():
        assert line.is_event and line.state_key == path
    newest = ledger.newest_stamp
    assert newest is None or re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d)?Z)?", newest)
    _ = ledger.last_archive_line("archive/craft/a.md")


@pytest.mark.slow  # many examples: in the full run, not the default one
@FUZZ
@given(raw=RAW)
def test_catalog_parser_never_crashes(raw: bytes) -> None:
    catalog = Catalog(raw)
    for row in catalog.rows:
        assert row.line.startswith("- ")
        assert row.path is None or f"- {row.path} |" in row.line
    stamp = catalog.rebuilt
    assert stamp is None or re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d)?Z)?", stamp)
    _ = (catalog.row_for("craft/a.md"), catalog.listed_paths, catalog.stamp_masked())


@pytest.mark.slow  # many examples: in the full run, not the default one
@FUZZ
@given(raw=RAW)
def test_knowledge_file_parser_never_crashes(raw: bytes) -> None:
    file = KnowledgeFile("craft/a.md", raw)
    _ = (file.frontmatter.lines, file.has_frontmatter, file.body_lines, file.pinned, file.oversize_reason,
         file.split_from, file.has_non_negotiable, file.directive_count, file.dash_entry_count())
    assert file.newest_stamp is None or re.fullmatch(r"\d{4}-\d\d-\d\d", file.newest_stamp)
    assert file.scope and "\n" not in file.scope and "\r" not in file.scope
    assert re.search(r"(?<!\\)\|", file.scope) is None  # every '|' escaped
    assert is_subsequence(file.protected_lines, file.lines)
    assert file.sha256 == sha256_hex(raw)


@pytest.mark.slow  # many examples: in the full run, not the default one
@FUZZ
@given(raw=RAW)
def test_sha256_norm_follows_the_awk_reference(raw: bytes) -> None:
    norm = sha256_norm_hex(raw)
    assert norm == sha256_norm_hex(raw)
    records = raw.split(b"\n")
    if records and records[-1] == b"":
        records.pop()
    if not records or records[0] not in (b"---", b"---\r"):
        # No frontmatter: awk re-emits each record with a LF, nothing is removed.
        assert norm == sha256_hex(b"".join(r + b"\n" for r in records))


STORE_FILES = ("SPINE.md", "CATALOG.md", "archive/LEDGER.md", "craft/a.md", "ops/b.md", "projects/c.md",
               "archive/craft/a.md", "archive/projects/d.md", "archive/x.md", "archive/legacy/archive/ops/e.md",
               "evidence/craft/a.md", "evidence/ops/b.md", "local/SPINE.md", "craft/archive/n.md")


@pytest.mark.slow  # many examples: in the full run (CI), not in -m "not slow"
@settings(max_examples=80, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(contents=st.fixed_dictionaries({}, optional={name: RAW for name in STORE_FILES}), now=CLOCK)
def test_whole_store_of_random_bytes_never_crashes(contents: dict[str, bytes], now: datetime) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, raw in contents.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(raw)
        snapshot = take_snapshot(root)
        findings = check_store(snapshot, LIMITS)
        assert all(f.group in ("C1", "C2", "C3") and f.severity in ("fail", "note") for f in findings)
        assert all("\n" not in f.message for f in findings)
        text = render_catalog(snapshot, now)
        assert text.startswith("# Knowledge catalog\n\n<!-- Complete inventory")
        assert text == render_catalog(take_snapshot(root), now)
        text.encode("utf-8", "surrogateescape")
        measure_budget(snapshot, LIMITS, now.date())
        assert all(f.group == "C4" for f in check_c4(snapshot, take_snapshot(root)))
