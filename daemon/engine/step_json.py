"""The JSON form of a pass's steps and operations, as its journal keeps them.

The journal holds every planned byte (a write's data, and the bytes it replaces where the pass
can undo it), so a resume after a crash rebuilds the steps from this form alone and needs
nothing else from the planner.
"""

from __future__ import annotations

from typing import Any

from ..store.text import decode, encode
from .executor import FileMove, FileRemove, FileWrite, FrontmatterEdit, LedgerAppend, Op, SpineEdit, Step, TwinAppend


def op_to_json(op: Op) -> dict[str, Any]:
    if isinstance(op, FileWrite):
        found = {"write": op.path, "before": op.before, "data": decode(op.data)}
        return found if op.previous is None else {**found, "previous": decode(op.previous)}
    if isinstance(op, FileRemove):
        return {"remove": op.path, "before": op.before}
    if isinstance(op, FileMove):
        return {"move": op.source, "to": op.target, "sha256": op.sha256}
    if isinstance(op, LedgerAppend):
        return {"ledger": op.tier_path, "event": op.event, "sha256": op.sha256, "reason": op.reason,
                "sha256_norm": op.sha256_norm, "spine_entry": op.spine_entry, "modified": op.modified}
    if isinstance(op, SpineEdit):
        return {"spine": op.path, "entry": op.entry, "entry_cap": op.entry_cap}
    if isinstance(op, FrontmatterEdit):
        return {"stamp": op.path, "fields": op.fields, "drop": op.drop, "index_detail": op.index_detail,
                "today": op.today}
    return {"twin": op.path, "header": op.header, "lines": op.lines, "base": op.base, "ending": op.ending,
            "planned": op.planned}


def op_from_json(data: dict[str, Any]) -> Op:
    if "write" in data:
        previous = data.get("previous")
        return FileWrite(str(data["write"]), data.get("before"), encode(str(data["data"])),
                         None if previous is None else encode(str(previous)))
    if "remove" in data:
        return FileRemove(str(data["remove"]), str(data["before"]))
    if "move" in data:
        return FileMove(str(data["move"]), str(data["to"]), str(data["sha256"]))
    if "ledger" in data:
        sha = data.get("sha256")
        return LedgerAppend(str(data["ledger"]), str(data["event"]), None if sha is None else str(sha),
                            str(data["reason"]), str(data.get("sha256_norm", "")), str(data.get("spine_entry", "")),
                            bool(data.get("modified", False)))
    if "stamp" in data:
        return FrontmatterEdit(str(data["stamp"]), {str(k): str(v) for k, v in dict(data["fields"]).items()},
                               [str(x) for x in data["drop"]], str(data.get("index_detail", "")),
                               str(data.get("today", "")))
    if "spine" in data:
        cap = data.get("entry_cap")
        return SpineEdit(str(data["spine"]), str(data.get("entry", "")), None if cap is None else int(cap))
    return TwinAppend(str(data["twin"]), str(data["header"]), [str(x) for x in data["lines"]],
                      {str(k): int(v) for k, v in dict(data["base"]).items()}, str(data["ending"]),
                      str(data.get("planned", "")))


def step_to_json(step: Step) -> dict[str, Any]:
    return {"title": step.title, "done": step.done, "ops": [op_to_json(op) for op in step.ops]}


def step_from_json(data: dict[str, Any]) -> Step:
    return Step(str(data["title"]), [op_from_json(o) for o in data["ops"]], bool(data.get("done", False)))
