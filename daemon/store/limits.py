"""The numbers every check, budget and planner works to: the caps, the compaction targets, the
migration's headroom, the hook floors and the lifecycle's default (STORE-FORMAT.md 1.3, 1.4,
4.2, 4.4).

One frozen family, built in one place: the Policy (policy.py) builds it once from the policy
file over the shipped default.toml, which holds every default number, and checks it there.
Nothing here has a default, so no number can drift from the policy; each group has the fields
of one table of the policy file, named as its keys are. A planner may derive a variant with
``dataclasses.replace`` (a migration's roomier SPINE caps, split pieces at the caps).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpineLimits:
    """SPINE.md: the hard caps, the compaction targets and what a migration aims at."""

    max_lines: int
    max_bytes: int
    entry_max_bytes: int
    compact_at_lines: int
    compact_at_bytes: int
    entry_target_bytes: int  # entries are shortened toward this, never below it
    # The hook bytes a shortened entry keeps at least, however long its pointer group: the first
    # is the floor (split children that would leave their parent's hook less get a line of their
    # own); the next ones are tried, in order, only while the SPINE would stay over a cap.
    hook_floors: tuple[int, ...]
    migrate_max_lines: int  # a migration aims at or under these (and the caps): room to grow
    migrate_max_bytes: int

    @property
    def hook_floor(self) -> int:
        """The hook bytes an entry keeps when nothing forces less."""
        return self.hook_floors[0]


@dataclass(frozen=True)
class TierFileLimits:
    max_lines: int
    max_bytes: int  # unless the file declares oversize: <reason>
    compact_at_lines: int
    compact_at_bytes: int


@dataclass(frozen=True)
class LifecycleLimits:
    staleness_threshold_days: int  # for a file without a staleness_threshold of its own
    candidate_dirs: tuple[str, ...]  # only files directly under these are gc candidates
    # the flat thresholds the health report compares the files' own thresholds with (days)
    report_flat_days: tuple[int, ...]


@dataclass(frozen=True)
class Limits:
    spine: SpineLimits
    tier_file: TierFileLimits
    lifecycle: LifecycleLimits
