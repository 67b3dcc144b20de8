"""A big split family's continuation lines say what their own children hold (issue 9, the
continuation lines that read `- [7](craft/x-7.md) — continues `craft/x.md`.`).

Each line's hook takes the words of the children on it (a child's own lead heading, or its
rarest names), within the room the hook floor gives every entry, and ends with the bare form;
the format's checker still parses every line, and nothing is lost.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, StoreBuilder
from distilld.actions.compaction import run_compaction
from distilld.engine.passes.compaction.continuation import (
    bare_hook,
    child_summary,
    continuation_hook,
    continued_parent,
)
from distilld.policy import load_policy, parse_policy
from distilld.store.spine import Spine
from distilld.store.tierfile import KnowledgeFile
from maintenance_fixtures import have_bash, oracle_passes

POLICY = load_policy()
PARENT = "craft/configuration-patterns.md"
TOPICS = ["Feature flags", "Rollout percentages", "Kill switches", "Config reload", "Secrets rotation",
          "Schema versions", "Env overrides", "Default values", "Validation rules", "Audit trail", "Flag cleanup",
          "Remote config", "Canary cohorts", "Per-tenant config"]
pytestmark = pytest.mark.skipif(not have_bash(), reason="the reference checker needs bash")


def clock() -> datetime:
    return datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def big_family_store(root: Path) -> None:
    """One file of 14 sections, 600 lines: split at the target it has 17 pieces, whose pointers
    (long names) outgrow its entry."""
    b = StoreBuilder(root)
    body = "# Configuration patterns\n\n"
    for topic in TOPICS:
        ident = topic.lower().replace(" ", "_").replace("-", "_")
        body += f"## {topic}\n\n" + "".join(
            f"- Rule {k} of {topic.lower()}: keep `{ident}_{k}` in the `{ident}` table.\n  Why: reviewers read it.\n"
            for k in range(20)) + "\n"
    b.tier(PARENT, body, domain="craft", scope="Configuration patterns", last_updated="2026-09-01")
    b.tier("craft/other.md", "# Other\n\n- one\n", domain="craft", scope="Other", last_updated="2026-09-01")
    b.spine(["## Craft", f"- [Configuration patterns]({PARENT}) {EM} how we configure services: flags, rollouts, "
             "reloads and secrets. Read before adding a config key.", f"- [Other](craft/other.md) {EM} other things."])
    b.rebuild_catalog()


def continuation_entries(root: Path) -> list[tuple[list[str], str]]:
    spine = Spine((root / "SPINE.md").read_bytes())
    return [([p.path for p in e.leading_group], e.hook) for e in spine.entries if continued_parent(e.hook)]


@pytest.fixture
def compacted(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    big_family_store(root)
    shutil.copytree(root, tmp_path / "before")
    assert run_compaction(root, POLICY, clock).ok
    oracle_passes(root, tmp_path / "before")  # the format's own checker parses every line; C4 holds
    return root


def test_each_continuation_line_names_what_its_own_children_hold(compacted: Path) -> None:
    lines = continuation_entries(compacted)
    assert len(lines) >= 2
    family = {p.relative_to(compacted).as_posix(): p.read_text() for p in (compacted / "craft").glob("configuration-*")}
    for paths, hook in lines:
        assert hook.endswith("; " + bare_hook(PARENT)), hook
        words = hook.removesuffix("; " + bare_hook(PARENT))
        assert words and not words.isdigit()
        for clause in words.split("; "):
            clause = clause.removeprefix("keywords: ").rstrip("\u2026")
            heading_or_name = clause.split(", ")[0]
            # ... from one of its own children, not from another member of the family
            assert any(heading_or_name in family[p] for p in paths), (clause, paths)
            assert not any(heading_or_name in family[p] for p in family if p not in paths and p != PARENT
                           and f"## {heading_or_name}\n" in family[p]), (clause, paths)


def test_the_words_take_no_more_than_the_hook_floor(compacted: Path) -> None:
    floor = POLICY.limits.spine.hook_floor
    for _, hook in continuation_entries(compacted):
        assert len(hook.encode()) <= max(floor, len(bare_hook(PARENT).encode()))
    for entry in Spine((compacted / "SPINE.md").read_bytes()).entries:
        assert entry.byte_len <= POLICY.limits.spine.entry_max_bytes


def test_a_second_compaction_leaves_the_continuation_lines_as_they_are(compacted: Path) -> None:
    before = continuation_entries(compacted)
    report = run_compaction(compacted, POLICY, clock)
    assert report.ok and continuation_entries(compacted) == before


def test_where_the_floor_leaves_no_room_for_words_the_line_is_bare(tmp_path: Path) -> None:
    root = tmp_path / "store"
    big_family_store(root)
    tight = parse_policy("[spine]\nhook_floors = [40, 0]\n", "tight.toml")
    assert run_compaction(root, tight, clock).ok
    lines = continuation_entries(root)
    assert lines and all(hook == bare_hook(PARENT) for _, hook in lines)


# -- the summary of one child, and the hook of a line ------------------------------------------------

FRONT = f"---\nsplit_from: {PARENT}\n---\n"


def child(path: str, body: str) -> KnowledgeFile:
    return KnowledgeFile(path, (FRONT + body).encode())


def test_a_child_is_summed_up_by_its_own_heading_then_its_rarest_names_then_the_section_it_continues() -> None:
    own = child("craft/x-2.md", "## Rollouts (continued)\n- a\n\n## Kill switches\n- `kill_all` stops it\n")
    names = child("craft/x-3.md", "## Rollouts (continued)\n- the `ramp_pct` knob, and `Rollout`\n- `Rollout` twice\n")
    plain = child("craft/x-4.md", "## Rollouts (continued)\n- nothing here names anything\n")
    family = [KnowledgeFile(PARENT, b"# X\n\n## Rollouts\n- `Rollout` is the word\n"), own, names, plain]
    assert child_summary(own, family) == "Kill switches"
    assert child_summary(names, family) == "keywords: `ramp_pct`, `Rollout`"  # rarest in the family first
    assert child_summary(plain, family) == "Rollouts"


def test_a_continuation_hook_keeps_its_childrens_words_in_order_within_the_room() -> None:
    bare = bare_hook("craft/x.md")
    assert continuation_hook("craft/x.md", ["Kill switches", "Config reload"], 80) == \
        f"Kill switches; Config reload; {bare}"
    squeezed = continuation_hook("craft/x.md", ["Kill switches", "Config reload", "Secrets rotation"], 50)
    assert squeezed.endswith("; " + bare) and len(squeezed.encode()) <= 50 and squeezed.startswith("Kill switches")
    assert continuation_hook("craft/x.md", ["Kill switches"], len(bare.encode()) + 3) == bare
    assert continuation_hook("craft/x.md", ["", ""], 200) == bare
    assert continued_parent(f"Kill switches; {bare}") == continued_parent(bare) == "craft/x.md"
    assert continued_parent("a hook that mentions continues `x.md`. in passing") is None
