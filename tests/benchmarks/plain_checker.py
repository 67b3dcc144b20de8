"""A plain checker of C1-C3, written from STORE-FORMAT.md section 3: the speed baseline for `check`.

Standard library only, and deliberately unoptimised: it reads every file whole, splits it into
lines and applies each rule the way the section words it. It is what "a straightforward Python
program" costs; `distilld check` should not cost more. Not part of distilld, and not a test
oracle (tests/oracle/ is that): bench_check.py only compares its PASS/FAIL per group with
distilld's before it uses its time.

    python tests/benchmarks/plain_checker.py STORE     # prints C1..C3 PASS|FAIL, exits 0 iff all pass
"""

from __future__ import annotations

import hashlib
import os
import re
import sys

TIERS = ("craft", "ops", "profile", "projects", "feedback")
SPINE_MAX_LINES, SPINE_MAX_BYTES, ENTRY_MAX_BYTES = 80, 16000, 400
FILE_MAX_LINES, FILE_MAX_BYTES = 60, 6000
STAMP = r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}(?::[0-9]{2})?Z)?"
EVENT_RE = re.compile(r"^- (" + STAMP + r") ")
REBUILT_RE = re.compile(r"rebuilt: (" + STAMP + r")")
FILE_STAMP_RE = re.compile(r"last_(?:validated|updated): *([0-9]{4}-[0-9]{2}-[0-9]{2})")
POINTER_RE = re.compile(r"\]\(([^)]*\.md)\)")
CATALOG_LINE_RE = re.compile(r"^- \[[^]]*\]\(CATALOG\.md\)")
LEADING_GROUP_RE = re.compile(r"^- \[[^]]*\]\([^)]*\)( *\+ *\[[^]]*\]\([^)]*\))*")
KNOWN_SEGMENT_RE = re.compile(
    r"^(validated |archived |reason: |from |hook: |pinned$|legacy$|oversize(: |$)|[0-9]+ entries$)")
LEDGER_KEYS = ("from", "to", "sha256", "sha256-norm", "reason", "spine-entry")
EVENTS = ("archive", "restore", "restore (modified)")


def read(root: str, path: str) -> bytes:
    with open(os.path.join(root, path), "rb") as handle:
        return handle.read()


def text_lines(raw: bytes) -> list[str]:
    text = raw.decode("utf-8", "surrogateescape").replace("\r", "")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def markdown_under(root: str, top: str) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(os.path.join(root, top)):
        dirs.sort()
        for name in files:
            full = os.path.join(folder, name)
            if name.endswith(".md") and not os.path.islink(full):
                found.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return sorted(found, key=os.fsencode)


def symlinks(root: str) -> list[str]:
    found = [name for name in ("SPINE.md", "CATALOG.md") if os.path.islink(os.path.join(root, name))]
    for top in (*TIERS, "archive", "evidence", "local"):
        if os.path.islink(os.path.join(root, top)):
            found.append(top)
            continue
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            for name in dirs + files:
                full = os.path.join(folder, name)
                if os.path.islink(full):
                    found.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return found


def contained(path: str, kind: str) -> bool:
    if not path or path[0] in "/~" or "\\" in path or ":" in path:
        return False
    wrapped = "/" + path + "/"
    if "/../" in wrapped or "/./" in wrapped or "//" in wrapped:
        return False
    first = path.split("/")[0]
    tier = "/" in path and first in TIERS
    if kind == "tier":
        return tier
    if kind == "spine":
        return path == "CATALOG.md" or tier
    if kind == "local":
        return first == "local" and "/" in path
    return (first in ("archive", "evidence") and len(path) > len(first) + 1) or tier


def fm_value(lines: list[str], key: str) -> str | None:
    if not lines or lines[0] != "---":
        return None
    for line in lines[1:]:
        if line == "---":
            return None
        if line.startswith(key + ":"):
            return line[len(key) + 1:].lstrip(" \t")
    return None


def field(line: str, key: str) -> str | None:
    for segment in line.split(" | "):
        if segment.startswith(key + ": "):
            return segment[len(key) + 2:].rstrip()
    return None


def later(a: str, b: str) -> bool:
    """Is stamp ``a`` later than ``b``? Full stamps only when both have a time, else dates."""
    if "T" in a and "T" in b:
        return a > b
    return a[:10] > b[:10]


def hook_of(entry: str) -> str:
    rest = LEADING_GROUP_RE.sub("", entry, count=1)
    rest = re.sub(r"^ *\u2014 *", "", rest, count=1)
    return re.sub(r"^ *-- *", "", rest, count=1)


def sha_norm(raw: bytes) -> str:
    out = []
    in_fm = False
    records = raw.split(b"\n")
    if records[-1] == b"":
        records.pop()
    for number, record in enumerate(records, start=1):
        fence = record in (b"---", b"---\r")
        if number == 1 and fence:
            in_fm = True
        elif in_fm and fence:
            in_fm = False
        elif in_fm and record.startswith(b"recall_count:"):
            continue
        out.append(record + b"\n")
    return hashlib.sha256(b"".join(out)).hexdigest()


def check_c1(root: str) -> list[str]:
    if not os.path.isfile(os.path.join(root, "SPINE.md")):
        return ["SPINE.md missing"]
    raw = read(root, "SPINE.md")
    lines = text_lines(raw)
    problems = []
    if len(lines) > SPINE_MAX_LINES:
        problems.append(f"SPINE has {len(lines)} lines (max {SPINE_MAX_LINES})")
    if len(raw) > SPINE_MAX_BYTES:
        problems.append(f"SPINE is {len(raw)} bytes (max {SPINE_MAX_BYTES})")
    for index, line in enumerate(lines):
        if not line.startswith("- ["):
            continue
        entry = line
        for follower in lines[index + 1:]:
            if (not follower.strip() or follower.startswith("#") or follower.startswith("- ")
                    or follower.startswith("<!--")):
                break
            entry += " " + follower.lstrip()
        size = len(entry.encode("utf-8", "surrogateescape"))
        if size > ENTRY_MAX_BYTES:
            problems.append(f"entry over {ENTRY_MAX_BYTES} bytes ({size})")
    if not any(CATALOG_LINE_RE.match(line) for line in lines):
        problems.append("SPINE has no catalog line")
    return problems


def spine_pointers(root: str, name: str) -> list[str]:
    pointers: list[str] = []
    for line in text_lines(read(root, name)):
        if line.startswith("- ["):
            for pointer in POINTER_RE.findall(line):
                if pointer not in pointers:
                    pointers.append(pointer)
    return pointers


def check_c2(root: str, tier: list[str], nested: list[str], archived: list[str], evidence: list[str]) -> list[str]:
    exists = lambda p: os.path.isfile(os.path.join(root, p))  # noqa: E731  (test -f)
    problems = []
    if os.path.isfile(os.path.join(root, "SPINE.md")):
        pointers = spine_pointers(root, "SPINE.md")
        for p in pointers:
            if not contained(p, "spine"):
                problems.append(f"uncontained path in SPINE.md: {p}")
            elif not exists(p):
                problems.append(f"SPINE pointer to missing file: {p}")
        for p in tier:
            if p not in pointers:
                problems.append(f"active file has no SPINE pointer: {p}")
    if os.path.isfile(os.path.join(root, "local/SPINE.md")):
        for p in spine_pointers(root, "local/SPINE.md"):
            if not contained(p, "local"):
                problems.append(f"local/SPINE.md may point only inside local/: {p}")
            elif not exists(p):
                problems.append(f"local/SPINE.md pointer to missing file: {p}")
    has_ledger = os.path.isfile(os.path.join(root, "archive/LEDGER.md"))
    ledger = [line for line in text_lines(read(root, "archive/LEDGER.md")) if line.startswith("- ")] \
        if has_ledger else []
    has_catalog = os.path.isfile(os.path.join(root, "CATALOG.md"))
    catalog = text_lines(read(root, "CATALOG.md")) if has_catalog else []
    if not has_catalog:
        problems.append("CATALOG.md missing")
    else:
        # The first row per path: the checker's "first line containing `- <p> |`".
        rows: dict[str, str] = {}
        for line in catalog:
            match = re.match(r"^- ([^|]*) \|", line)
            if match:
                rows.setdefault(match.group(1), line)
                p = match.group(1)
                if not contained(p, "store"):
                    problems.append(f"uncontained path in CATALOG.md: {p}")
                elif not exists(p):
                    problems.append(f"catalog line points at missing file: {p}")
            if line.startswith("- "):
                for segment in line.split(" | ")[2:]:
                    if not KNOWN_SEGMENT_RE.match(segment):
                        problems.append(f"unescaped ' | ' inside a free-text field of CATALOG.md: {segment}")
        for p in tier + archived + evidence:
            if p not in rows:
                problems.append(f"file not in catalog: {p}")
        for p in tier:
            if p not in rows:
                continue
            row, lines = rows[p], text_lines(read(root, p))
            stamps = FILE_STAMP_RE.findall("\n".join(lines))
            if stamps and f"| validated {max(stamps)}" not in row:
                problems.append(f"catalog validated date wrong for {p}")
            if not stamps and "| validated " in row:
                problems.append(f"catalog claims a validated date for undated file {p}")
            pinned = fm_value(lines, "lifecycle") == "pinned"
            if pinned != ("| pinned" in row):
                problems.append(f"catalog pinned disagrees for {p}")
        for e in evidence:
            lines = text_lines(read(root, e))
            count = sum(1 for line in lines if line.startswith("- "))
            if e in rows and f"| {count} entries" not in rows[e]:
                problems.append(f"catalog count wrong for {e} (file has {count} entries)")
            target = fm_value(lines, "evidence_for") or ""
            if not target:
                problems.append(f"{e} has no evidence_for")
            elif target != e[len("evidence/"):]:
                problems.append(f"evidence_for disagrees with the twin's path: {e} says {target}")
            elif not exists(target) and not exists("archive/" + target):
                if not exists("archive/legacy/archive/" + target):
                    problems.append(f"orphan evidence: {e}")
        last_archive: dict[str, str] = {}
        for line in ledger:
            match = EVENT_RE.match(line)
            if match and line[match.end():].startswith("archive "):
                target = field(line, "to")
                if target is not None:
                    last_archive[target] = line
        for a in archived:
            row = rows.get(a, "")
            rest = a[len("archive/"):]
            if rest.startswith("legacy/") or "/" not in rest:
                if "| legacy" not in row:
                    problems.append(f"flat archive file must be labelled legacy in the catalog: {a}")
                continue
            if "| legacy" in row:
                problems.append(f"nested archive file labelled legacy: {a}")
            if "| from " not in row:
                problems.append(f"archived row lacks 'from': {a}")
            if "| hook: " not in row:
                problems.append(f"archived row lacks 'hook': {a}")
            if not has_ledger:
                problems.append(f"archive/LEDGER.md missing but {a} is not legacy")
                continue
            event = last_archive.get(a)
            if event is None:
                problems.append(f"no ledger archive event for: {a}")
                continue
            raw = read(root, a)
            if hashlib.sha256(raw).hexdigest() != field(event, "sha256"):
                norm = field(event, "sha256-norm")
                if norm is None or norm != sha_norm(raw):
                    problems.append(f"ledger sha256 does not match archived file: {a}")
            if hook_of(field(event, "spine-entry") or "").rstrip() != (field(row, "hook") or ""):
                problems.append(f"catalog hook differs from ledger spine-entry hook: {a}")
    previous = None
    state: dict[str, tuple[str, str]] = {}
    for line in ledger if has_catalog else []:
        match = EVENT_RE.match(line)
        if not match:
            problems.append(f"malformed ledger line (no leading date): {line[:70]}")
            continue
        stamp = match.group(1)
        if previous is not None and later(previous, stamp):
            problems.append(f"ledger events out of order: {stamp} appended after {previous}")
        previous = stamp
        event = line[match.end():].split(" |")[0]
        if event not in EVENTS:
            problems.append(f"unknown ledger event '{event}'")
        seen: list[str] = []
        for segment in line.split(" | ")[1:]:
            key = segment.split(": ")[0] if ": " in segment else None
            if key not in LEDGER_KEYS or key in seen:
                problems.append(f"unescaped ' | ' inside a free-text field of archive/LEDGER.md: {segment}")
            else:
                seen.append(key)
        source, target = field(line, "from") or "", field(line, "to") or ""
        if not contained(source, "store"):
            problems.append(f"uncontained path in archive/LEDGER.md from: {source}")
        if not contained(target, "store"):
            problems.append(f"uncontained path in archive/LEDGER.md to: {target}")
        if event == "archive" and not (contained(source, "tier") and target == "archive/" + source):
            problems.append(f"ledger archive line must move X to archive/X: from {source} to {target}")
        if event in EVENTS[1:] and not (contained(target, "tier") and source == "archive/" + target):
            problems.append(f"ledger restore line must move archive/X to X: from {source} to {target}")
    for line in ledger:
        match = EVENT_RE.match(line)
        event = line[match.end():].split(" |")[0] if match else ""
        target = field(line, "to")
        if not match or event not in EVENTS or target is None:
            continue
        key = target[len("archive/"):] if event == "archive" and target.startswith("archive/") else target
        if contained(key, "tier"):
            state[key] = (event, line)
    for x, (event, _) in state.items():
        active, gone = exists(x), exists("archive/" + x)
        if event == "archive" and not (gone and not active):
            problems.append(f"ledger says archived but tree disagrees: {x}")
        if event != "archive" and not (active and not gone):
            problems.append(f"ledger says restored but tree disagrees: {x}")
    if has_ledger and has_catalog:
        rebuilt = next((m.group(1) for m in map(REBUILT_RE.search, catalog) if m), None)
        stamps = [m.group(1) for m in map(EVENT_RE.match, ledger) if m]
        if rebuilt is None:
            problems.append("catalog has no rebuilt: stamp")
        elif stamps:
            newest = stamps[0]
            for stamp in stamps[1:]:
                if later(stamp, newest):
                    newest = stamp
            if later(newest, rebuilt):
                problems.append(f"catalog stale: rebuilt {rebuilt} but newest ledger event is {newest}")
    for p in tier:
        if exists("archive/" + p):
            problems.append(f"path exists both active and archived: {p}")
    for n in nested:
        problems.append(f"legacy archive inside a tier directory: {n}")
    for link in symlinks(root):
        problems.append(f"symlink in store: {link}")
    return problems


def check_c3(root: str, tier: list[str]) -> list[str]:
    exists = lambda p: os.path.isfile(os.path.join(root, p))  # noqa: E731
    problems = []
    for p in tier:
        raw = read(root, p)
        lines = text_lines(raw)
        if len(lines) > FILE_MAX_LINES:
            problems.append(f"{p} has {len(lines)} lines (max {FILE_MAX_LINES})")
        if fm_value(lines, "oversize") is None and len(raw) > FILE_MAX_BYTES:
            problems.append(f"{p} is {len(raw)} bytes (max {FILE_MAX_BYTES})")
        read_with = fm_value(lines, "read_with")
        if read_with is not None:
            if not (len(read_with) >= 2 and read_with.startswith("[") and read_with.endswith("]")):
                problems.append(f"{p} read_with must be an inline list [a.md, b.md]")
            else:
                for t in (item.strip(" \t") for item in read_with[1:-1].split(",")):
                    if not t:
                        continue
                    if t.startswith("local/"):
                        problems.append(f"{p} read_with into local/ overlay: {t}")
                    elif not contained(t, "store"):
                        problems.append(f"uncontained path in {p} read_with: {t}")
                    elif not exists(t):
                        problems.append(f"{p} read_with target missing: {t}")
        split_from = fm_value(lines, "split_from")
        if split_from:
            if not contained(split_from, "tier"):
                problems.append(f"uncontained path in {p} split_from: {split_from}")
            elif not exists(split_from):
                problems.append(f"{p} split_from target missing: {split_from}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: plain_checker.py STORE", file=sys.stderr)
        return 2
    root = os.path.realpath(argv[0])
    in_tiers = [p for top in TIERS for p in markdown_under(root, top)]
    tier = sorted((p for p in in_tiers if "/archive/" not in p), key=os.fsencode)
    nested = sorted((p for p in in_tiers if "/archive/" in p), key=os.fsencode)
    archived = [p for p in markdown_under(root, "archive") if os.path.basename(p) != "LEDGER.md"]
    evidence = markdown_under(root, "evidence")
    ok = True
    for group, problems in (("C1", check_c1(root)), ("C2", check_c2(root, tier, nested, archived, evidence)),
                            ("C3", check_c3(root, tier))):
        print(f"{group} {'FAIL' if problems else 'PASS'}")
        for problem in problems:
            print(f"    - {problem}")
        ok = ok and not problems
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
