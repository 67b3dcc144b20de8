"""Policy files: the shipped default holds the design's numbers; every bad file is refused in one line."""

from __future__ import annotations

import tomllib
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
from builders import healthy_store

from distilld.cli import main
from distilld.errors import PolicyError
from distilld.policy import LockTimings, load_policy, parse_policy
from distilld.store.limits import LifecycleLimits, Limits, SpineLimits, TierFileLimits

DEFAULT_TOML = Path(__file__).resolve().parents[1] / "policies" / "default.toml"


def test_default_policy_has_the_design_numbers() -> None:
    limits = load_policy().limits
    spine, tier_file, lifecycle = limits.spine, limits.tier_file, limits.lifecycle
    assert (
        spine.max_lines, spine.max_bytes, spine.entry_max_bytes,
        spine.compact_at_lines, spine.compact_at_bytes, spine.entry_target_bytes,
        tier_file.max_lines, tier_file.max_bytes,
        tier_file.compact_at_lines, tier_file.compact_at_bytes,
        lifecycle.staleness_threshold_days, load_policy().lock.stale_seconds,
    ) == (80, 16000, 400, 60, 12000, 200, 60, 6000, 45, 4500, 90, 300)
    assert lifecycle.candidate_dirs == ("projects",)
    assert (spine.migrate_max_lines, spine.migrate_max_bytes) == (75, 15000)
    assert spine.hook_floors == (80, 60, 45, 30, 15, 0) and spine.hook_floor == 80


def test_default_file_equals_the_built_in_defaults() -> None:
    assert load_policy() == parse_policy("", "empty.toml")


def test_default_toml_is_the_one_place_the_default_numbers_live() -> None:
    # The limits have no defaults of their own: every number comes from a policy.
    for model in (Limits, SpineLimits, TierFileLimits, LifecycleLimits):
        assert all(f.default is MISSING and f.default_factory is MISSING for f in fields(model)), model
    # default.toml names every key of every table, so nothing falls back to code.
    data = tomllib.loads(DEFAULT_TOML.read_text("utf-8"))
    tables: dict[str, type[object]] = {"spine": SpineLimits, "tier_file": TierFileLimits,
                                       "lifecycle": LifecycleLimits, "lock": LockTimings}
    for table, of in tables.items():
        assert set(data[table]) == {f.name for f in fields(of)}, table  # type: ignore[arg-type]
    # The lock table's defaults are also written in LockTimings: they must agree with the file.
    assert LockTimings() == load_policy().lock


def test_a_partial_file_keeps_the_other_defaults(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[spine]\nmax_lines = 70\ncompact_at_lines = 50\n", "utf-8")
    spine = load_policy(path).limits.spine
    assert (spine.max_lines, spine.compact_at_lines, spine.max_bytes) == (70, 50, 16000)
    assert load_policy(path).limits.tier_file == load_policy().limits.tier_file


BAD_FILES = [
    pytest.param("[spine\nmax_lines = 80\n", ["not valid TOML"], id="bad-toml"),
    pytest.param("max_lines = 80 = 3\n", ["not valid TOML"], id="bad-toml-value"),
    pytest.param("[spine]\nmax_line = 80\n", ["spine.max_line", "unknown key"], id="unknown-key"),
    pytest.param("[spin]\nmax_lines = 80\n", ["spin", "unknown key"], id="unknown-table"),
    pytest.param("[spine]\nmax_lines = \"80\"\n", ["spine.max_lines"], id="string-for-int"),
    pytest.param("[spine]\nmax_lines = 8.5\n", ["spine.max_lines"], id="float-for-int"),
    pytest.param("[spine]\nmax_lines = true\n", ["spine.max_lines"], id="bool-for-int"),
    pytest.param("[tier_file]\nmax_bytes = 0\n", ["tier_file.max_bytes"], id="zero"),
    pytest.param("[lifecycle]\nstaleness_threshold_days = -5\n", ["lifecycle.staleness_threshold_days"],
                 id="negative"),
    pytest.param("[lock]\npoll_seconds = 0\n", ["lock.poll_seconds"], id="zero-float"),
    pytest.param("[spine]\ncompact_at_lines = 90\n", ["compact_at_lines"], id="spine-target-above-cap"),
    pytest.param("[spine]\ncompact_at_bytes = 20000\n", ["compact_at_bytes"], id="spine-bytes-target-above-cap"),
    pytest.param("[spine]\nentry_target_bytes = 500\n", ["entry_target_bytes"], id="entry-target-above-cap"),
    pytest.param("[tier_file]\ncompact_at_lines = 61\n", ["compact_at_lines"], id="file-target-above-cap"),
    pytest.param("[lifecycle]\ncandidate_dirs = [\"projects\", \"archive\"]\n", ["candidate_dirs", "archive"],
                 id="unknown-tier"),
    pytest.param("[lifecycle]\ncandidate_dirs = \"projects\"\n", ["candidate_dirs"], id="candidate-dirs-not-a-list"),
    pytest.param("[spine]\nhook_floors = [60, 80, 0]\n", ["spine.hook_floors", "each below"], id="floors-rising"),
    pytest.param("[spine]\nhook_floors = [80, -1]\n", ["spine.hook_floors"], id="floor-negative"),
    pytest.param("[spine]\nhook_floors = []\n", ["spine.hook_floors"], id="no-floor"),
    pytest.param("[spine]\nhook_floors = 80\n", ["spine.hook_floors", "list of whole numbers"], id="floors-not-a-list"),
    pytest.param("[spine]\nhook_floors = [80.5]\n", ["spine.hook_floors"], id="floor-not-whole"),
    pytest.param("[lock]\nwaiting_recheck_seconds = 0\n", ["lock.waiting_recheck_seconds"], id="recheck-zero"),
    pytest.param("spine = 3\n", ["spine", "must be a table"], id="table-not-a-table"),
]


@pytest.mark.parametrize(("content", "named"), BAD_FILES)
def test_bad_policy_file_is_refused_in_one_line_naming_the_key(tmp_path: Path, content: str,
                                                                named: list[str]) -> None:
    path = tmp_path / "bad-policy.toml"
    path.write_text(content, "utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message
    assert str(path) in message
    for word in named:
        assert word in message


def test_missing_policy_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.toml"
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path) in message and "not found" in message


def test_cli_reports_a_bad_policy_on_one_stderr_line_with_exit_78(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    healthy_store(tmp_path / "store")
    path = tmp_path / "bad.toml"
    path.write_text("[spine]\nmax_lines = 0\n", "utf-8")
    code = main(["--policy", str(path), "budget", str(tmp_path / "store")])
    captured = capsys.readouterr()
    assert code == 78  # bad settings: a service is not restarted with it
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("distilld: policy file ") and "spine.max_lines" in lines[0]


def test_the_shipped_default_is_read_from_the_package_folder_or_else_through_importlib_resources(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import copy
    import importlib

    from distilld import policy

    assert policy._shipped_text("default.toml") == DEFAULT_TOML.read_text("utf-8")
    package = importlib.import_module("distilld.policies")
    spec = copy.copy(package.__spec__)
    spec.has_location = False  # as an install that is not plain files would say
    monkeypatch.setattr(package, "__spec__", spec)
    assert policy._shipped_text("default.toml") == DEFAULT_TOML.read_text("utf-8")
