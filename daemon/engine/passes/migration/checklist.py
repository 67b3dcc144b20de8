"""The files of one migration: ``data/migration/<UTC-compact>/`` (STORE-FORMAT.md 1.11, 4.6).

``PLAN.md`` is for people and is the journal: a checklist ``- [ ] N. …`` marked ``- [x]`` as
items finish, and a final ``## Writes`` section with one ``- wrote <path> sha256 <checksum>``
line per file written or moved. ``plan.json`` holds what the checklist items do, planned bytes
included, so a finish needs nothing but this folder. ``backup/`` is the byte-exact copy of the
knowledge tree; ``PENDING`` (holding the plan's path), ``DONE`` and ``REVERTED`` say where the
migration stands; ``kept-after-backup/`` keeps files a revert found changed after the backup.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ....store import fs
from ....store.local import MIGRATION_DIR
from ....store.text import clip, decode
from .plan import MigrationPlan
from ..gc.model import Move
from ...executor import FileMove, FileWrite, Step
from ...step_json import step_from_json, step_to_json

CHECK_RE = re.compile(r"^- \[( |x)\] ([0-9]+)\. ", re.MULTILINE)
WROTE_RE = re.compile(r"^- wrote (.+) sha256 ([0-9a-f]{64})$")
WRITES_HEADING = "## Writes"
ITEM_BACKUP, ITEM_OPS, ITEM_ARCHIVE, ITEM_CATALOG, ITEM_CHECK = "backup", "ops", "archive", "catalog", "check"


@dataclass
class Item:
    number: int
    kind: str
    title: str
    step: Step | None = None
    move: Move | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"number": self.number, "kind": self.kind, "title": self.title}
        if self.step is not None:
            data["step"] = step_to_json(self.step)
        if self.move is not None:
            data["move"] = asdict(self.move)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Item:
        move = data.get("move")
        return cls(int(data["number"]), str(data["kind"]), str(data["title"]),
                   step_from_json(data["step"]) if "step" in data else None,
                   Move(**{**move, "referrers": tuple(move["referrers"]), "family": tuple(move["family"])})
                   if move else None)


@dataclass
class MigrationJournal:
    """What plan.json holds: the plan's facts and its checklist items."""

    ts: str
    now: str
    today: str
    kind: str
    items: list[Item] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    budget_before: dict[str, int] = field(default_factory=dict)
    budget_after: dict[str, int] = field(default_factory=dict)


def items_of(plan: MigrationPlan) -> list[Item]:
    """The checklist, in apply order."""
    items = [Item(1, ITEM_BACKUP, "back up the knowledge tree to backup/ and verify the copy byte for byte")]
    for step in plan.steps:
        items.append(Item(len(items) + 1, ITEM_OPS, step.title, step=step))
    for move in plan.lifecycle:
        items.append(Item(len(items) + 1, ITEM_ARCHIVE, f"lifecycle: archive {move.source} -> {move.target} "
                          "(ledger line first)", move=move))
    if plan.lifecycle:
        items.append(Item(len(items) + 1, ITEM_OPS, "remove the archived files' pointers from SPINE.md",
                          step=Step("lifecycle SPINE edit", [FileWrite("SPINE.md", plan.lifecycle_spine_before,
                                                                       plan.lifecycle_spine)])))
    items.append(Item(len(items) + 1, ITEM_CATALOG, "rebuild CATALOG.md"))
    items.append(Item(len(items) + 1, ITEM_CHECK, "self-check: C1-C3, and C4 against backup/"))
    return items


class MigrationDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._ticks: dict[int, int] | None = None  # checklist number -> offset of its "[ ]"
        self.plan_md = path / "PLAN.md"
        self.plan_json = path / "plan.json"
        self.backup = path / "backup"
        self.pending = path / "PENDING"
        self.done = path / "DONE"
        self.reverted = path / "REVERTED"
        self.kept = path / "kept-after-backup"

    @property
    def ts(self) -> str:
        return self.path.name

    def relative_plan(self, root: Path) -> str:
        return self.plan_md.relative_to(root).as_posix()

    # -- plan.json ----------------------------------------------------------------------------
    def save_journal(self, record: MigrationJournal) -> None:
        data = {**{k: v for k, v in asdict(record).items() if k != "items"},
                "items": [item.to_json() for item in record.items]}
        fs.atomic_write(self.plan_json, (json.dumps(data, ensure_ascii=True) + "\n").encode())

    def load_journal(self) -> MigrationJournal:
        data = json.loads(self.plan_json.read_text("utf-8"))
        return MigrationJournal(str(data["ts"]), str(data["now"]), str(data["today"]), str(data["kind"]),
                               [Item.from_json(i) for i in data["items"]], list(data["created"]),
                               [(str(a), str(b)) for a, b in data["moved"]],
                               dict(data["budget_before"]), dict(data["budget_after"]))

    # -- PLAN.md ------------------------------------------------------------------------------
    def marks(self) -> dict[int, bool]:
        text = self.plan_md.read_text("utf-8", "surrogateescape")
        section = text.split("\n## Checklist\n", 1)[-1].split("\n" + WRITES_HEADING + "\n", 1)[0]
        return {int(m.group(2)): m.group(1) == "x" for m in CHECK_RE.finditer(section)}

    def mark(self, number: int) -> None:
        """Tick item ``number`` in place: the one byte between the brackets. Ticks and appended
        lines never move an item, so the offsets found once stay right."""
        if self._ticks is None:
            raw = self.plan_md.read_bytes()
            start = raw.find(b"\n## Checklist\n")
            end = raw.find(b"\n" + WRITES_HEADING.encode() + b"\n", start)
            self._ticks = {int(m.group(1)): m.start() + 3
                           for m in re.finditer(rb"^- \[ \] ([0-9]+)\. ", raw[:end], re.MULTILINE) if m.start() > start}
        offset = self._ticks.pop(number, None)
        if offset is None:
            return  # already ticked
        fs.patch_in_place(self.plan_md, offset, b" ", b"x", durable=False)  # a lost tick: redone

    def journal_write(self, path: str, checksum: str) -> None:
        """One ``## Writes`` line (PLAN.md is LF and ends with a line break: it is ours)."""
        fs.append_bytes(self.plan_md, f"- wrote {path} sha256 {checksum}\n".encode("utf-8", "surrogateescape"),
                        durable=False)

    def writes(self) -> dict[str, str]:
        """The last recorded checksum per path."""
        text = decode(self.plan_md.read_bytes())
        section = text.split("\n" + WRITES_HEADING + "\n", 1)[-1]
        last: dict[str, str] = {}
        for line in section.split("\n"):
            match = WROTE_RE.match(line.rstrip("\r"))
            if match:
                last[match.group(1)] = match.group(2)
        return last


def migration_dirs(root: Path) -> list[MigrationDir]:
    base = root / MIGRATION_DIR
    if not base.is_dir():
        return []
    return [MigrationDir(p) for p in sorted(base.iterdir()) if p.is_dir() and not p.name.startswith(".")]


def new_dir(root: Path, ts: str) -> MigrationDir:
    base = root / MIGRATION_DIR
    path = base / ts
    counter = 2
    while path.exists():
        path = base / f"{ts}-{counter}"
        counter += 1
    return MigrationDir(path)


# -- rendering PLAN.md --------------------------------------------------------------------------

def render_plan_md(plan: MigrationPlan, root: Path, items: list[Item], status: str) -> str:
    out = [f"# distilld migration plan {plan.ts}", "",
           "<!-- Written by distilld migrate. Local to this machine: data/ is never synced. -->", "",
           f"- store: {root}", f"- made: {plan.now}", f"- kind: {plan.kind}",
           f"- lifecycle: {'enabled' if plan.lifecycle_enabled else 'disabled (.lifecycle): no file is archived'}",
           f"- status: {status}", ""]
    if plan.refusal:
        out += ["## Refused: nothing will be changed", ""] + [f"- {r}" for r in plan.refusal] + [""]
    if plan.suggestions:
        out += ["## What could be done by hand", ""] + [f"- {s}" for s in plan.suggestions] + [""]
    before, after = plan.budget_before, plan.budget_after
    out += ["## Budgets", ""]
    if before:
        out.append(f"- SPINE.md: {before['spine_lines']} lines, {before['spine_bytes']} bytes -> "
                   f"{after.get('spine_lines')} lines, {after.get('spine_bytes')} bytes")
        out.append(f"- SPINE entries over the entry cap: {before['entries_over_cap']} -> {after.get('entries_over_cap')}")
        out.append(f"- tier files: {before['tier_files']} ({before['tier_files_over_cap']} over a cap) -> "
                   f"{after.get('tier_files')} ({after.get('tier_files_over_cap')} over a cap)")
    compact = plan.compact
    if compact is not None:
        out.append(f"- entries shortened: {len(compact.cut)}; merged: {len(compact.merged)}; files split: "
                   f"{len(compact.splits)} ({compact.children} new files)")
        out += [f"- debt left: {d}" for d in compact.debt]
    out += ["", "## Legacy adoptions", ""]
    out += [f"- {a} -> {b}" for a, b in plan.adoptions] or ["- none"]
    out += ["", "## References whose file moves (the prose is kept as written: C4)", ""]
    out += [f"- {line}" for line in plan.moved_references] or ["- none"]
    out += ["", "## Evidence (dated observation lines to twins)", ""]
    out += [f"- {path}: {n} line{'s' if n > 1 else ''} -> evidence/{path}" for path, n in plan.evidence] or ["- none"]
    if plan.added_entries:
        out += ["", "## SPINE entries added for files it did not point at", ""]
        out += [f"- {e}" for e in plan.added_entries]
    if compact is not None:
        out += ["", "## Splits", ""]
        for split in compact.splits:
            why = " (over its caps after Index detail)" if split.after_index_detail else ""
            out.append(f"- {split.path} -> {', '.join(split.children)}{why}")
        if not compact.splits:
            out.append("- none")
        out += ["", "## SPINE entries cut or merged (each whole hook goes to its target's Index detail)", ""]
        for change in compact.changes:
            out.append(f"- {change.kind} {', '.join(change.paths[:4])}{' …' if len(change.paths) > 4 else ''} "
                       f"({len(change.before.encode())} -> {len(change.after.encode())} bytes) -> {change.target}")
        if not compact.changes:
            out.append("- none")
        out += ["", "## Proposed SPINE", "", "~~~~markdown"]
        out += decode(compact.spine_text).replace("\r", "").rstrip("\n").split("\n")
        out += ["~~~~"]
    out += ["", "## Lifecycle moves", ""]
    if plan.lifecycle:
        out += [f"- {m.source} -> {m.target} ({m.reason})" for m in plan.lifecycle]
    else:
        out.append("- none" + ("" if plan.lifecycle_enabled else " (lifecycle disabled)"))
    if plan.lifecycle_candidates:
        out += ["", "Enabled, the lifecycle would archive:", ""]
        out += [f"- {c}" for c in plan.lifecycle_candidates]
    out += ["", "## Paths created or moved", ""]
    out += [f"- create {p}" for p in plan.created]
    out += [f"- move {a} -> {b}" for a, b in plan.moved]
    if not plan.created and not plan.moved:
        out.append("- none")
    out += ["", "## Checklist", ""]
    out += [f"- [ ] {item.number}. {clip(item.title, 300)}" for item in items]
    out += ["", WRITES_HEADING, ""]
    return "\n".join(out) + "\n"


def moved_by(items: list[Item]) -> list[tuple[str, str]]:
    """Every (source, target) move the checklist makes, in order."""
    found: list[tuple[str, str]] = []
    for item in items:
        if item.step is not None:
            found += [(op.source, op.target) for op in item.step.ops if isinstance(op, FileMove)]
        if item.move is not None:
            found.append((item.move.source, item.move.target))
    return found
