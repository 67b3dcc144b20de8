"""The store invariants C1-C3 of the reference checker (STORE-FORMAT.md 3.2-3.4), as findings.

Each rule mirrors the reference checker's semantics, including its quirks (substring row
lookups, byte lengths, CR-blind line counts), so that a group's PASS/FAIL agrees with it.
Notes never fail a group; they carry the bad-input diagnostics the reference is silent on.
"""

from __future__ import annotations

from .catalog import Catalog, is_known_segment
from .findings import Finding, fail, note
from .hygiene import hygiene_findings
from .ledger import Ledger
from .limits import Limits
from .paths import CATALOG, EVIDENCE_PREFIX, LEDGER, SPINE, archived_path, contained, is_legacy
from .snapshot import Snapshot
from .spine import hook_of_entry
from .spine_dedupe import doubled_pointers
from .stamps import stamp_later
from .text import clip, field, rtrim, sha256_hex
from .tierfile import parse_inline_list


def check_c1(snapshot: Snapshot, limits: Limits) -> list[Finding]:
    spine = snapshot.spine
    if spine is None:
        return [fail("C1", "spine-missing", SPINE, "SPINE.md missing")]
    found: list[Finding] = []
    if spine.line_count > limits.spine.max_lines:
        found.append(fail("C1", "spine-lines", SPINE,
                          f"SPINE has {spine.line_count} lines (max {limits.spine.max_lines})"))
    if spine.size > limits.spine.max_bytes:
        found.append(fail("C1", "spine-bytes", SPINE,
                          f"SPINE is {spine.size} bytes (max {limits.spine.max_bytes})"))
    for entry in spine.entries:
        if entry.byte_len > limits.spine.entry_max_bytes:
            found.append(fail("C1", "entry-bytes", SPINE,
                              f"entry over {limits.spine.entry_max_bytes} bytes ({entry.byte_len}): "
                              f"{clip(entry.joined, 60)}..."))
    if not spine.has_catalog_line:
        found.append(fail("C1", "no-catalog-line", SPINE, "SPINE has no catalog line"))
    for entry in spine.entries:
        if entry.foreign_joiners:
            found.append(note("C1", "pointer-joiners", SPINE,
                              f"SPINE.md line {entry.line_index + 1} joins its pointers with something other than "
                              "' + ' (the format reads only ' + '; the rest counts as the hook): "
                              f"{clip(entry.first_line, 70)}; `distilld compact` or `migrate` rewrites it"))
    for path, lines in doubled_pointers(spine).items():  # a merge that kept both versions, say
        found.append(note("C1", "pointer-on-two-entries", SPINE,
                          f"SPINE.md points at {path} from {len(lines)} entries (lines "
                          f"{', '.join(map(str, lines))}); gc leaves it alone until you merge them into one"))
    return found


def _spine_pointers(snapshot: Snapshot) -> list[Finding]:
    found: list[Finding] = []
    spine = snapshot.spine
    pointers = spine.pointer_list if spine else []
    for pointer in pointers:
        if not contained(pointer, "spine"):
            found.append(fail("C2", "spine-uncontained", SPINE, f"uncontained path in SPINE.md: {pointer}"))
        elif not snapshot.exists(pointer):
            found.append(fail("C2", "spine-missing-target", pointer, f"SPINE pointer to missing file: {pointer}"))
    pointed = set(pointers)
    # Without a SPINE there is nothing to point from: C1 says "SPINE.md missing", and C2
    # judges the rest (STORE-FORMAT.md 3.3 step 2, as the reference checker does).
    for path in snapshot.tier_paths if spine is not None else []:
        if path not in pointed:
            found.append(fail("C2", "no-spine-pointer", path, f"active file has no SPINE pointer: {path}"))
    local = snapshot.local_spine
    if local is not None:
        for pointer in local.pointer_list:
            if not contained(pointer, "local"):
                found.append(fail("C2", "local-uncontained", "local/SPINE.md",
                                  f"local/SPINE.md may point only inside local/: {pointer}"))
            elif not snapshot.exists(pointer):
                found.append(fail("C2", "local-missing-target", pointer,
                                  f"local/SPINE.md pointer to missing file: {pointer}"))
    return found


def _catalog_lists_everything(snapshot: Snapshot, catalog: Catalog) -> list[Finding]:
    found: list[Finding] = []
    every = snapshot.tier_paths + snapshot.archive_paths + snapshot.evidence_paths
    for path in every:
        if catalog.row_for(path) is None:
            found.append(fail("C2", "not-in-catalog", path, f"file not in catalog: {path}"))
    for path in catalog.listed_paths:
        if not contained(path, "store"):
            found.append(fail("C2", "catalog-uncontained", CATALOG, f"uncontained path in CATALOG.md: {path}"))
        elif not snapshot.exists(path):
            found.append(fail("C2", "catalog-missing-target", path,
                              f"catalog line points at missing file: {path}"))
    for line in catalog.row_lines:
        for segment in line.split(" | ")[2:]:
            if not is_known_segment(segment):
                found.append(fail("C2", "catalog-unescaped-pipe", CATALOG,
                                  "unescaped ' | ' inside a free-text field of CATALOG.md "
                                  f"(write it as '\\|'): {segment}"))
    return found


def _active_rows(snapshot: Snapshot, catalog: Catalog) -> list[Finding]:
    found: list[Finding] = []
    for path in snapshot.tier_paths:
        row = catalog.row_for(path)
        if row is None:
            continue
        file = snapshot.knowledge(path)
        stamp = file.newest_stamp
        if stamp is not None and f"| validated {stamp}" not in row:
            found.append(fail("C2", "catalog-validated-wrong", path,
                              f"catalog validated date wrong for {path} (newest stamp {stamp})"))
        if stamp is None and "| validated " in row:
            found.append(fail("C2", "catalog-validated-undated", path,
                              f"catalog claims a validated date for undated file {path}"))
        says_pinned = "| pinned" in row
        if file.pinned and not says_pinned:
            found.append(fail("C2", "catalog-lacks-pinned", path, f"catalog row lacks pinned for {path}"))
        if says_pinned and not file.pinned:
            found.append(fail("C2", "catalog-false-pinned", path, f"catalog row says pinned but {path} is not"))
    return found


def _evidence_rows(snapshot: Snapshot, catalog: Catalog) -> list[Finding]:
    found: list[Finding] = []
    for path in snapshot.evidence_paths:
        twin = snapshot.knowledge(path)
        row = catalog.row_for(path)
        count = twin.dash_entry_count()
        if row is not None and f"| {count} entries" not in row:
            found.append(fail("C2", "catalog-count-wrong", path,
                              f"catalog count wrong for {path} (file has {count} entries)"))
        target = twin.fm("evidence_for") or ""
        expected = path[len(EVIDENCE_PREFIX):]
        if not target:
            found.append(fail("C2", "evidence-no-target", path, f"{path} has no evidence_for"))
        elif target != expected:
            found.append(fail("C2", "evidence-target-mismatch", path,
                              f"evidence_for disagrees with the twin's path: {path} says {target}"))
        elif not snapshot.exists(target) and not snapshot.exists(archived_path(target)):
            legacy = "archive/legacy/archive/" + target
            if snapshot.exists(legacy):
                found.append(note("C2", "evidence-of-legacy", path,
                                  f"evidence twin of an adopted legacy archive: {path} ({legacy})"))
            else:
                found.append(fail("C2", "orphan-evidence", path,
                                  f"orphan evidence: {path} (evidence_for {target} is neither active nor archived)"))
    return found


def _archived_rows(snapshot: Snapshot, catalog: Catalog) -> list[Finding]:
    found: list[Finding] = []
    ledger = snapshot.ledger
    for path in snapshot.archive_paths:
        row = catalog.row_for(path) or ""
        if is_legacy(path):
            if "| legacy" not in row:
                found.append(fail("C2", "legacy-unlabelled", path,
                                  f"flat archive file must be labelled legacy in the catalog: {path}"))
            continue
        if "| legacy" in row:
            found.append(fail("C2", "nested-labelled-legacy", path, f"nested archive file labelled legacy: {path}"))
        if "| from " not in row:
            found.append(fail("C2", "archived-row-no-from", path, f"archived row lacks 'from': {path}"))
        if "| hook: " not in row:
            found.append(fail("C2", "archived-row-no-hook", path, f"archived row lacks 'hook': {path}"))
        if ledger is None:
            found.append(fail("C2", "ledger-missing", path, f"archive/LEDGER.md missing but {path} is not legacy"))
            continue
        event = ledger.last_archive_line(path)
        if event is None:
            found.append(fail("C2", "pending-adoption", path,
                              f"no ledger archive event for: {path} (unledgered: pending adoption by migrate-store)"))
            continue
        file = snapshot.knowledge(path)
        if file.sha256 != event.value("sha256"):
            norm = event.value("sha256-norm")
            if norm is not None and norm == file.sha256_norm:
                found.append(note("C2", "recall-count-drift", path, f"recall_count drift only (tolerated): {path}"))
            else:
                found.append(fail("C2", "ledger-sha-mismatch", path,
                                  f"ledger sha256 does not match archived file: {path}"
                                  + crlf_conversion_hint(file.raw, event.value("sha256"))))
        ledger_hook = rtrim(hook_of_entry(event.value("spine-entry") or ""))
        row_hook = field(row, "hook") or ""
        if ledger_hook != row_hook:
            found.append(fail("C2", "catalog-hook-differs", path,
                              f"catalog hook differs from ledger spine-entry hook: {path}"))
    return found


def _ledger_syntax(ledger: Ledger) -> list[Finding]:
    found: list[Finding] = []
    previous: str | None = None
    for line in ledger.lines:
        if not line.is_event:
            found.append(fail("C2", "ledger-malformed", LEDGER,
                              f"malformed ledger line (no leading date): {clip(line.text, 70)}"))
            continue
        stamp = line.stamp or ""
        if previous is not None and stamp_later(previous, stamp):
            found.append(fail("C2", "ledger-out-of-order", LEDGER,
                              f"ledger events out of order: {stamp} appended after {previous} "
                              "(append order must be date order)"))
        previous = stamp
        for problem in line.problems:
            if problem.code == "ledger-unknown-event":
                found.append(fail("C2", problem.code, LEDGER, f"{problem.message}: {clip(line.text, 70)}"))
            else:
                found.append(fail("C2", problem.code, LEDGER,
                                  "unescaped ' | ' inside a free-text field of archive/LEDGER.md "
                                  f"(write it as '\\|'): {problem.message}"))
        source = line.value("from") or ""
        target = line.value("to") or ""
        if not contained(source, "store"):
            found.append(fail("C2", "ledger-uncontained", LEDGER, f"uncontained path in archive/LEDGER.md from: {source}"))
        if not contained(target, "store"):
            found.append(fail("C2", "ledger-uncontained", LEDGER, f"uncontained path in archive/LEDGER.md to: {target}"))
        if line.is_archive and not (contained(source, "tier") and target == archived_path(source)):
            found.append(fail("C2", "ledger-archive-shape", LEDGER,
                              f"ledger archive line must move X to archive/X: from {source} to {target}"))
        if line.is_restore and not (contained(target, "tier") and source == archived_path(target)):
            found.append(fail("C2", "ledger-restore-shape", LEDGER,
                              f"ledger restore line must move archive/X to X: from {source} to {target}"))
    return found


def _ledger_agrees_with_tree(snapshot: Snapshot, ledger: Ledger) -> list[Finding]:
    found: list[Finding] = []
    for path, line in ledger.last_event_by_path.items():
        active, archived = snapshot.exists(path), snapshot.exists(archived_path(path))
        if line.is_archive and not (archived and not active):
            found.append(fail("C2", "ledger-tree-archived", path, f"ledger says archived but tree disagrees: {path}"))
        if line.is_restore and not (active and not archived):
            found.append(fail("C2", "ledger-tree-restored", path, f"ledger says restored but tree disagrees: {path}"))
    return found


def _catalog_freshness(catalog: Catalog, ledger: Ledger) -> list[Finding]:
    rebuilt = catalog.rebuilt
    if rebuilt is None:
        return [fail("C2", "catalog-no-stamp", CATALOG, "catalog has no rebuilt: stamp")]
    newest = ledger.newest_stamp
    if newest is not None and stamp_later(newest, rebuilt):
        return [fail("C2", "catalog-stale", CATALOG,
                     f"catalog stale: rebuilt {rebuilt} but newest ledger event is {newest}")]
    return []


def check_c2(snapshot: Snapshot) -> list[Finding]:
    found = _spine_pointers(snapshot)
    catalog_raw = snapshot.catalog_raw
    ledger = snapshot.ledger
    catalog = Catalog(catalog_raw) if catalog_raw is not None else None
    if catalog is None:
        found.append(fail("C2", "catalog-missing", CATALOG, "CATALOG.md missing"))
    else:
        found += _catalog_lists_everything(snapshot, catalog)
        found += _active_rows(snapshot, catalog)
        found += _evidence_rows(snapshot, catalog)
        found += _archived_rows(snapshot, catalog)
        if ledger is not None:
            found += _ledger_syntax(ledger)
    if ledger is not None:
        found += _ledger_agrees_with_tree(snapshot, ledger)
        if catalog is not None:
            found += _catalog_freshness(catalog, ledger)
    return found + _tree_shape(snapshot)


def _tree_shape(snapshot: Snapshot) -> list[Finding]:
    found: list[Finding] = []
    for path in snapshot.tier_paths:
        if snapshot.exists(archived_path(path)):
            found.append(fail("C2", "active-and-archived", path, f"path exists both active and archived: {path}"))
    for path in snapshot.nested_archive_paths:
        found.append(fail("C2", "nested-archive", path,
                          f"legacy archive inside a tier directory: {path} "
                          f"(migration adopts it to archive/legacy/{path})"))
    for link in snapshot.symlinks:
        found.append(fail("C2", "symlink", link, f"symlink in store: {link}"))
    return found


def check_c3(snapshot: Snapshot, limits: Limits) -> list[Finding]:
    found: list[Finding] = []
    max_lines, max_bytes = limits.tier_file.max_lines, limits.tier_file.max_bytes
    for path in snapshot.tier_paths:
        file = snapshot.knowledge(path)
        if file.line_count > max_lines:
            found.append(fail("C3", "file-lines", path, f"{path} has {file.line_count} lines (max {max_lines})"))
        if file.size > max_bytes and file.oversize_reason is None:
            found.append(fail("C3", "file-bytes", path,
                              f"{path} is {file.size} bytes (max {max_bytes}; "
                              "declare oversize: <reason> to exempt)"))
        read_with = file.fm("read_with")
        if read_with is not None:
            found += _read_with(snapshot, path, read_with)
        split_from = file.split_from
        if split_from:  # an empty split_from: line names no parent
            if not contained(split_from, "tier"):
                found.append(fail("C3", "split-from-uncontained", path, f"uncontained path in {path} split_from: {split_from}"))
            elif not snapshot.exists(split_from):
                found.append(fail("C3", "split-from-missing", path, f"{path} split_from target missing: {split_from}"))
    return found


def _read_with(snapshot: Snapshot, path: str, value: str) -> list[Finding]:
    items = parse_inline_list(value)
    if items is None:
        return [fail("C3", "read-with-not-inline", path, f"{path} read_with must be an inline list [a.md, b.md]")]
    found: list[Finding] = []
    for target in items:
        if target.startswith("local/"):
            found.append(fail("C3", "read-with-local", path, f"{path} read_with into local/ overlay: {target}"))
        elif not contained(target, "store"):
            found.append(fail("C3", "read-with-uncontained", path, f"uncontained path in {path} read_with: {target}"))
        elif not snapshot.exists(target):
            found.append(fail("C3", "read-with-missing", path, f"{path} read_with target missing: {target}"))
    return found


def check_store(snapshot: Snapshot, limits: Limits) -> list[Finding]:
    """C1-C3 and the bad-input notes, in group order."""
    return check_c1(snapshot, limits) + check_c2(snapshot) + check_c3(snapshot, limits) + hygiene_findings(snapshot)


def crlf_conversion_hint(raw: bytes, want: str | None) -> str:
    """The common cause, said when it is the cause: the archived bytes match the ledger once
    CRLF is read as LF, so a tool converted the line endings after the file was archived."""
    if want and b"\r\n" in raw and sha256_hex(raw.replace(b"\r\n", b"\n")) == want:
        return ("; it matches the ledger's sha256 once CRLF is read as LF: line endings were converted "
                "after archiving (restore the file's bytes from git, or convert it back to LF)")
    return ""
