"""A big split family's continuation lines cost little and say what their own children hold
(issue 24: `- [2](craft/x-2.md) — Pitfalls; continues `craft/x.md`.` cost a line plus the bytes of
a repeated path).

Such a line has no hook and names no path twice: each child's pointer is titled with words of its
own piece (its own lead heading, or its rarest names). The format's checker still parses every
line, and nothing is lost.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from builders import EM, StoreBuilder
from distilld.actions.compaction import run_compaction
from distilld.engine.passes.compaction.continuation import (
    child_summary,
    child_title,
    continued_family,
    continued_parent,
)
from distilld.policy import load_policy
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


def parent_in(root: Path):  # type: ignore[no-untyped-def]
    def parent_of(path: str) -> str | None:
        file = root / path
        return KnowledgeFile(path, file.read_bytes()).split_from if file.is_file() else None
    return parent_of


def continuation_entries(root: Path) -> list[tuple[list[tuple[str, str]], str, str]]:
    """(pointers as (title, path), hook, the joined line) of every continuation line."""
    spine = Spine((root / "SPINE.md").read_bytes())
    parent_of = parent_in(root)
    return [([(p.title, p.path) for p in e.leading_group], e.hook, e.joined) for e in spine.entries
            if continued_family(e.hook, [p.path for p in e.leading_group], parent_of)]


@pytest.fixture
def compacted(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    big_family_store(root)
    shutil.copytree(root, tmp_path / "before")
    assert run_compaction(root, POLICY, clock).ok
    oracle_passes(root, tmp_path / "before")  # the format's own checker parses every line; C4 holds
    return root


def test_each_continuation_line_titles_its_children_by_their_own_pieces(compacted: Path) -> None:
    lines = continuation_entries(compacted)
    assert lines
    family = {p.relative_to(compacted).as_posix(): p.read_text() for p in (compacted / "craft").glob("configuration-*")}
    titled = 0
    for pointers, _, _ in lines:
        for title, path in pointers:
            if title.isdigit():
                continue
            titled += 1
            assert all(name in family[path] for name in title.split(", ")), (title, path)  # its own piece's words ...
            assert not any(f"## {title}\n" in family[p] for p in family if p != path), (title, path)  # ... no other's
    assert titled >= len([p for ps, _, _ in lines for p in ps]) // 2


def test_a_continuation_line_repeats_no_path_and_has_no_hook(compacted: Path) -> None:
    for pointers, hook, joined in continuation_entries(compacted):
        assert hook == "" and EM not in joined
        for _, path in pointers:
            assert joined.count(path) == 1
        assert PARENT not in joined
    for entry in Spine((compacted / "SPINE.md").read_bytes()).entries:
        assert entry.byte_len <= POLICY.limits.spine.entry_max_bytes


def test_a_second_compaction_leaves_the_continuation_lines_as_they_are(compacted: Path) -> None:
    before = continuation_entries(compacted)
    report = run_compaction(compacted, POLICY, clock)
    assert report.ok and continuation_entries(compacted) == before


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


def test_a_childs_title_is_its_own_heading_else_its_first_names_else_nothing() -> None:
    own = child("craft/x-2.md", "## Rollouts (continued)\n- a\n\n## Kill switches\n- `kill_all` stops it\n")
    names = child("craft/x-3.md", "## Rollouts (continued)\n- the `ramp_pct` knob, and `Rollout`\n- `Rollout` twice\n")
    unsafe = child("craft/x-5.md", "## Flags [beta] (x)\n- a\n")
    family = [KnowledgeFile(PARENT, b"# X\n\n## Rollouts\n- `Rollout` is the word\n"), own, names, unsafe]
    assert child_title(own, child_summary(own, family)) == "Kill switches"
    assert child_title(names, child_summary(names, family)) == "`ramp_pct`, `Rollout`"
    assert child_title(unsafe, child_summary(unsafe, family)) == ""  # brackets would break the link


def test_a_continuation_line_is_known_by_its_pointers_or_by_the_older_hook() -> None:
    parents = {"craft/x-2.md": "craft/x.md", "craft/x-3.md": "craft/x.md", "craft/y.md": None}
    parent_of = parents.get
    assert continued_family("", ["craft/x-2.md", "craft/x-3.md"], parent_of) == "craft/x.md"
    assert continued_family("", ["craft/x.md", "craft/x-2.md"], parent_of) is None  # the family's own line
    assert continued_family("", ["craft/y.md"], parent_of) is None
    assert continued_family("more rules of x.", ["craft/x-2.md"], parent_of) is None  # an entry of its own
    assert continued_family("Kill switches; continues `craft/x.md`.", ["craft/y.md"], parent_of) == "craft/x.md"
    assert continued_parent("a hook that mentions continues `x.md`. in passing") is None
