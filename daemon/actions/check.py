"""`distilld check`: the invariants C1-C4 over a store, rendered for people or as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..engine.guard import lost_ledger_lines
from ..store.cross_refs import references
from ..store.findings import GROUPS, Finding, Group, note
from ..store.invariants import check_store
from ..store.limits import Limits
from ..store.lossless import check_c4
from ..store.paths import CATALOG, LEDGER, Layout, extra_synced_folders
from ..store.snapshot import Snapshot, take_snapshot
from ..store.text import shown
from ..store.unmanaged import unmanaged_folders

NEEDS_MIGRATE = "this store needs `distilld migrate` (a pre-1.2 store: no CATALOG.md); `distilld migrate` previews it"


@dataclass
class CheckResult:
    store: Path
    layout: Layout
    groups: tuple[Group, ...]
    findings: list[Finding]
    unmanaged: list[str] = field(default_factory=list)  # folders distilld does not manage
    causes: list[str] = field(default_factory=list)  # said first: what explains most findings

    def passed(self, group: Group) -> bool:
        return not any(f.group == group and f.severity == "fail" for f in self.findings)

    @property
    def ok(self) -> bool:
        return all(self.passed(group) for group in self.groups)


def run_check(store: Path, limits: Limits, before: Path | None = None) -> CheckResult:
    # A check at scale makes some 100,000 objects and frees few before it ends: the cyclic
    # collector would scan them again and again (5% of a check at x100) and find nothing to
    # free, so it waits until the check is done.
    import gc  # built in: nothing to load

    enabled = gc.isenabled()
    gc.disable()
    try:
        return _checked(store, limits, before)
    finally:
        if enabled:
            gc.enable()


def _checked(store: Path, limits: Limits, before: Path | None) -> CheckResult:
    snapshot = take_snapshot(store)
    findings = check_store(snapshot, limits)
    if snapshot.layout is Layout.UNMIGRATED:
        findings.append(note("C2", "unmigrated", CATALOG,
                             "pre-1.2 store (no CATALOG.md): budgets are reported, not enforced; "
                             "migrate it to the 1.2 layout before gc or restore"))
    # From the snapshot's bytes: a linked or unreadable ledger is C2's to report, never read here.
    lost = lost_ledger_lines(snapshot.root, snapshot.ledger.raw) if snapshot.ledger is not None else None
    if lost is not None:  # a note, as the format's checker cannot see it; every write pass refuses
        findings.append(note("C2", "ledger-lost-lines", LEDGER, str(lost)))
    findings += broken_reference_notes(snapshot)
    groups: tuple[Group, ...] = GROUPS[:3]
    if before is not None:
        findings += check_c4(take_snapshot(before), snapshot)
        groups = GROUPS
    result = CheckResult(snapshot.root, snapshot.layout, groups, findings)
    result.causes = leading_causes(snapshot)
    result.unmanaged = [folder.describe() for folder in unmanaged_folders(snapshot.root, extra_synced_folders())]
    return result


def broken_reference_notes(snapshot: Snapshot) -> list[Finding]:
    """A path named in a tier file's text that resolves nowhere (not active, not archived, not
    adopted): a note, as the format's checker does not look at prose (issue 27: only `report`
    noticed the links a migration broke)."""
    return [note("C2", "broken-cross-reference", ref.source,
                 f"broken cross-reference: {ref.source} names {ref.target}, which is neither active, "
                 "archived nor adopted")
            for ref in references(snapshot) if ref.kind == "broken"]


def leading_causes(snapshot: Snapshot) -> list[str]:
    """The one line that matters, before the findings it explains (issue 27: a migration left
    PENDING by Ctrl-C behind 375 failures, an empty SPINE behind 55 "no SPINE pointer" lines)."""
    from ..store.local import pending_migrations

    causes = [f"a migration is PENDING ({marker}): the store is half migrated; `distilld migrate --finish` "
              "goes on, `distilld migrate --revert` puts the backup back" for marker in pending_migrations(snapshot.root)]
    if snapshot.layout is Layout.UNMIGRATED:
        causes.append(NEEDS_MIGRATE)
    if snapshot.spine is not None and not snapshot.spine.pointer_list and snapshot.tier_paths:
        causes.append(f"SPINE.md points at no file (empty or unreadable): each of the {len(snapshot.tier_paths)} "
                      "tier files fails C2 for want of a pointer")
    return causes


GROUP_AFTER = 3  # this many findings of one kind are shown; the rest are counted (--json lists all)


def _group_lines(findings: list[Finding]) -> list[str]:
    seen: dict[tuple[str, str], int] = {}
    totals: dict[tuple[str, str], int] = {}
    for finding in findings:
        key = (finding.code, finding.severity)
        totals[key] = totals.get(key, 0) + 1
    lines = []
    for finding in findings:
        key = (finding.code, finding.severity)
        seen[key] = seen.get(key, 0) + 1
        marker = "-" if finding.severity == "fail" else "note:"
        if seen[key] <= GROUP_AFTER or totals[key] <= GROUP_AFTER + 1:
            lines.append(f"    {marker} {shown(finding.message)}")
        elif seen[key] == GROUP_AFTER + 1:
            lines.append(f"    {marker} … and {totals[key] - GROUP_AFTER} more like these ({finding.code}; "
                         "`distilld check --json` lists every one)")
    return lines


def render_text(result: CheckResult) -> str:
    """The reference checker's shape: ``C1 PASS``; reasons and notes indented under each group,
    repeated ones counted after the first few; what explains them comes first."""
    lines: list[str] = list(result.causes)
    for group in result.groups:
        lines.append(f"{group} {'PASS' if result.passed(group) else 'FAIL'}")
        lines += _group_lines([f for f in result.findings if f.group == group])
    lines += [f"note: {line}" for line in result.unmanaged]
    if not result.ok:
        lines.append(count_line(result))
    return "\n".join(lines) + "\n"


def count_line(result: CheckResult) -> str:
    """One line at the end of a failing check: how many failures each group has."""
    counts = []
    for group in result.groups:
        failing = sum(1 for f in result.findings if f.group == group and f.severity == "fail")
        counts.append(f"{group} {failing} failing" if failing else f"{group} pass")
    return "summary: " + ", ".join(counts)


def render_json(result: CheckResult) -> str:
    import json  # only --json pays for it

    payload = {
        "store": str(result.store),
        "layout": result.layout.value,
        "ok": result.ok,
        "groups": {group: "PASS" if result.passed(group) else "FAIL" for group in result.groups},
        "findings": [finding.to_dict() for finding in result.findings],
        "unmanaged": result.unmanaged,
        "causes": result.causes,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
