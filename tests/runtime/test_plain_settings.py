"""The settings checked without pydantic (plain_settings.py) answer as the model does: its rules
are the model's, key by key, and whatever it takes as plain the model accepts, with the same
extra folders and store; anything else goes to the model, whose refusal `sync` gives unchanged."""

from __future__ import annotations

import os
import types
import typing
from pathlib import Path
from typing import Any

import distilld.settings as settings_module
import distilld.store.paths as paths_module
import pytest
from annotated_types import Ge, Gt, Le, MinLen
from distilld import plain_settings
from distilld.cli import main
from distilld.errors import ConfigError
from distilld.locations import DEFAULT_STORE
from distilld.plain_settings import SECTIONS, SETTING_NAMES, TOP_LEVEL, WATCH_DEFAULTS, Rule, plain_config
from distilld.settings import Settings, WatchSettings, load_settings
from distilld.store.paths import extra_synced_folders
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError


def _kind(annotation: Any) -> tuple[str, tuple[str, ...]]:
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        annotation = next(arg for arg in typing.get_args(annotation) if arg is not type(None))
    if typing.get_origin(annotation) is typing.Literal:
        return "choice", typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple:
        return "folders", ()
    return {bool: "bool", int: "int", float: "float", str: "text", Path: "path"}[annotation], ()


def _model_rule(field: Any) -> tuple[Any, ...]:
    kind, choices = _kind(field.annotation)
    found: dict[str, Any] = {"gt": None, "ge": None, "le": None, "min_length": 0, "pattern": None}
    for item in field.metadata:
        for name, cls in (("gt", Gt), ("ge", Ge), ("le", Le), ("min_length", MinLen)):
            if isinstance(item, cls):
                found[name] = getattr(item, name)
        found["pattern"] = getattr(item, "pattern", None) or found["pattern"]
    return kind, choices, found["gt"], found["ge"], found["le"], found["min_length"], found["pattern"]


def _plain_rule(rule: Rule) -> tuple[Any, ...]:
    pattern = f"^{rule.pattern}$" if rule.pattern is not None else None  # fullmatch: the model's anchors
    return rule.kind, rule.choices, rule.gt, rule.ge, rule.le, rule.min_length, pattern


def test_the_rules_are_the_models_key_by_key() -> None:
    assert SETTING_NAMES == set(Settings.model_fields)
    for name, field in Settings.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            assert set(SECTIONS[name]) == set(section.model_fields), name
            for key, inner in section.model_fields.items():
                assert _plain_rule(SECTIONS[name][key]) == _model_rule(inner), f"{name}.{key}"
        else:
            assert _plain_rule(TOP_LEVEL[name]) == _model_rule(field), name
    assert WATCH_DEFAULTS == {key: WatchSettings.model_fields[key].default for key in WATCH_DEFAULTS}
    # the one key the model lowers before it compares (its before-validator)
    assert {f"{s}.{k}" for s, rules in SECTIONS.items() for k, rule in rules.items() if rule.lower} == {"log.level"}


def model_verdict(data: dict[str, Any]) -> Settings | None:
    token = settings_module._config_data.set(data)
    try:
        return Settings()
    except ValidationError:
        return None
    finally:
        settings_module._config_data.reset(token)


ODD_VALUES = st.one_of(
    st.booleans(), st.integers(), st.floats(),
    st.sampled_from([0, 1, -1, 5, 100, 101, 600, 601, 3600, 3601, 9_999, 10_000, 525_600, 525_601,
                     1_000_000_000, 1_000_000_001, 10**30, 0.0, -0.0, 1e-9, 0.5, 600.0, 600.0000001,
                     float("inf"), float("nan")]),
    st.sampled_from(["", " ", "auto", "Auto", "polling", "INFO", "info", "Debug", "İNFO", "off", "json",
                     "origin", "a b", "origin\n", "-", "~", "~/notes", "~no-such-user-zz/x", "/abs", "rel/x",
                     "a\x00b", "5", "true", "topics"]),
    st.text(max_size=4),
    st.lists(st.sampled_from(["topics", "notes", "Topics", ".hidden", "a/b", "", "archive", "craft", "local"]),
             max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.sampled_from(["a", "quiet_seconds"]), st.integers(), max_size=2),
)


def likely_value(rule: Rule) -> st.SearchStrategy[Any]:
    """Values near what the rule accepts, so that many examples are plain."""
    if rule.kind == "float":
        return st.floats(min_value=rule.gt or 0.0, max_value=rule.le, allow_nan=False)
    if rule.kind == "int":
        return st.integers(min_value=int(rule.ge or 0), max_value=int(rule.le or 10))
    if rule.kind == "choice":
        return st.sampled_from([*rule.choices, *(c.upper() for c in rule.choices)])
    if rule.kind == "folders":
        return st.lists(st.sampled_from(["topics", "notes", "research", "archive"]), max_size=2)
    return {"bool": st.booleans(), "text": st.sampled_from(["origin", "git", "me@host", "x"]),
            "path": st.sampled_from(["/abs/store", "~/store", "rel", "  "])}[rule.kind]


def section(rules: dict[str, Rule], odd: bool) -> st.SearchStrategy[Any]:
    keys = {key: st.one_of(likely_value(rule), ODD_VALUES) if odd else likely_value(rule)
            for key, rule in rules.items()}
    mapping = st.fixed_dictionaries({}, optional=keys)
    return st.one_of(mapping, mapping.map(lambda d: {**d, "typo": 1}), ODD_VALUES) if odd else mapping


def configs(odd: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Config files of values near the rules (often plain), or mixed with odd values and typos."""
    top = {name: st.one_of(likely_value(rule), ODD_VALUES) if odd else likely_value(rule)
           for name, rule in TOP_LEVEL.items()}
    return st.fixed_dictionaries({}, optional={**{name: section(rules, odd) for name, rules in SECTIONS.items()},
                                               **top, **({"stor": ODD_VALUES} if odd else {})})


CONFIGS = st.one_of(configs(odd=False), configs(odd=True))


@settings(max_examples=400, deadline=None)
@given(CONFIGS)
def test_what_is_plain_the_model_accepts_as_it_is(data: dict[str, Any]) -> None:
    if not plain_config(data):
        return  # the model's to judge: load_settings is asked
    model = model_verdict(data)
    assert model is not None, data
    assert model.git.extra_folders == tuple(data.get("git", {}).get("extra_folders", ()))
    assert model.store == Path(os.path.abspath(Path(data.get("store", DEFAULT_STORE)).expanduser()))


@pytest.mark.parametrize("data", [
    {}, {"watch": {"quiet_seconds": 0.5}}, {"store": "~/notes", "git": {"extra_folders": ["topics"], "remote": "up"}},
    {"log": {"level": "DEBUG", "console": "plain"}, "schedule": {"sync_minutes": 0, "compact_on_breach": False}},
])
def test_an_ordinary_config_is_plain(data: dict[str, Any]) -> None:
    assert plain_config(data) and model_verdict(data) is not None


@pytest.mark.parametrize("variables, plain", [
    ({}, True),
    ({"DISTILLD_STORE": "/somewhere"}, True),
    ({"DISTILLD_STORE": ""}, True),  # an empty variable is ignored, by the model too
    ({"DISTILLD_POLICY": " "}, False),  # the model refuses a blank policy (it is also --policy's default)
    ({"distilld_store": "/somewhere"}, False),
    ({"DISTILLD_WATCH__QUIET_SECONDS": "1"}, False),
    ({"DISTILLD_GIT": "{}"}, False),
    ({"DISTILLD_SSH_KEY": "/k", "DISTILLD_CRASH_AT": "x"}, True),
])
def test_the_environment_is_plain_only_when_the_model_reads_nothing_odd(
        variables: dict[str, str], plain: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert plain_settings._plain_environment() is plain
    if plain:
        load_settings()


BAD_CONFIGS = ['stor = "typo"\n', "[watch]\nquiet_seconds = 0\n", "[watch]\nquiet_seconds = 10\nmax_wait_seconds = 5\n",
               "[schedule]\nsync_minutes = 'often'\n", "[git]\nremote = 'a b'\n",
               '[git]\nextra_folders = ["archive"]\n', "[log]\nlevl = 'debug'\n", "[watch\n"]


@pytest.mark.parametrize("text", BAD_CONFIGS)
@pytest.mark.parametrize("command", ["sync", "init"])
def test_sync_and_init_refuse_a_bad_config_as_the_settings_do(
        text: str, command: str, distilld_dirs: dict[str, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    distilld_dirs["config"].mkdir(parents=True, exist_ok=True)
    (distilld_dirs["config"] / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert main([command, "--store", str(tmp_path)]) == 78
    assert capsys.readouterr().err == f"distilld: {raised.value}\n"


def test_a_bad_nested_variable_is_refused_by_sync_as_the_settings_do(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DISTILLD_WATCH__QUIET_SECONDS", "-1")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert main(["sync", "--store", str(tmp_path)]) == 78
    assert capsys.readouterr().err == f"distilld: {raised.value}\n"


def test_sync_takes_the_extra_folders_of_a_plain_config(distilld_dirs: dict[str, Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths_module, "_extra_synced", ())  # set back after the test
    distilld_dirs["config"].mkdir(parents=True, exist_ok=True)
    (distilld_dirs["config"] / "config.toml").write_text('[git]\nextra_folders = ["topics", "research"]\n')
    assert plain_settings.checked_extra_folders() == load_settings().git.extra_folders == ("topics", "research")
    main(["sync", "--store", str(tmp_path)])  # not a repository: refused after the settings were read
    assert set(extra_synced_folders()) == {"topics", "research"}
