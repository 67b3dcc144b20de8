"""Line replay for line-oriented files (SPINE.md, evidence twins) changed on both machines: our
line edits replayed onto theirs, so an entry removed on one machine and another added on the
other both land."""

from __future__ import annotations

from difflib import SequenceMatcher

from .fs import line_ending_of
from .text import decode, encode, lines_with_endings


def _key(line: str) -> str:
    return line.rstrip("\r\n")


def replay_lines(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """Theirs with our line edits (against base) applied: the lines we removed go, the lines we
    added come in at the matching place, after what theirs added there. A line both sides
    added identically is kept once. Lines keep their own endings."""
    b, o, t = (lines_with_endings(decode(raw)) for raw in (base, ours, theirs))
    bk, ok, tk = [_key(x) for x in b], [_key(x) for x in o], [_key(x) for x in t]
    base_to_theirs: dict[int, int] = {}
    for block in SequenceMatcher(None, bk, tk, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            base_to_theirs[block.a + k] = block.b + k
    # Lines theirs added (by content), so a line both sides added is not doubled.
    their_added: dict[str, int] = {}
    for line in tk:
        their_added[line] = their_added.get(line, 0) + 1
    for line in bk:
        if their_added.get(line):
            their_added[line] -= 1
    dropped: set[int] = set()
    inserts: dict[int, list[str]] = {}
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, bk, ok, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        dropped.update(base_to_theirs[i] for i in range(i1, i2) if i in base_to_theirs)
        if j1 == j2:
            continue
        # Before the next base line theirs still has (so after whatever theirs added in the
        # same gap), or at the end.
        at = next((base_to_theirs[i] for i in range(i1, len(b)) if i in base_to_theirs), len(t))
        for line in o[j1:j2]:
            if _key(line).strip() and their_added.get(_key(line)):
                their_added[_key(line)] -= 1
                continue
            inserts.setdefault(at, []).append(line)
    out: list[str] = []
    for index, line in enumerate(t):
        out += inserts.get(index, [])
        if index not in dropped:
            out.append(line)
    out += inserts.get(len(t), [])
    ending = "\r\n" if line_ending_of(theirs or ours) == b"\r\n" else "\n"
    fixed = [line if line.endswith("\n") else line + ending for line in out[:-1]] + out[-1:]
    return encode("".join(fixed))
