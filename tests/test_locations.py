"""The folders distilld keeps machine-local files in: on Linux worked out without platformdirs
(a start-up cost), and always platformdirs' answer."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest
from distilld import locations

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="the shortcut is taken on Linux only")

# "{root}" stands for a temporary folder of the test's own: no real machine's paths.
ENVIRONMENTS = [
    {"XDG_CONFIG_HOME": "{root}/xdg/config", "XDG_STATE_HOME": "{root}/xdg/state", "HOME": "{root}/user-home"},
    {"XDG_CONFIG_HOME": "{root}/xdg/config/", "XDG_STATE_HOME": "{root}/xdg//state/", "HOME": "{root}/user-home"},
    {"HOME": "{root}/user-home"},
    {"HOME": "{root}/user-home/"},
    {"HOME": "/"},
    {"XDG_CONFIG_HOME": "", "XDG_STATE_HOME": "", "HOME": "{root}/user-home"},
    {"XDG_CONFIG_HOME": "relative/config", "XDG_STATE_HOME": "relative", "HOME": "{root}/user-home"},
    {"XDG_CONFIG_HOME": "~/config", "XDG_STATE_HOME": "~/state", "HOME": "{root}/user-home"},
    {"XDG_CONFIG_HOME": "{root}/xdg/config", "XDG_STATE_HOME": "{root}/xdg/state", "HOME": "relative-home"},
    {"HOME": "relative-home"},
    {"HOME": ""},
    {},
]


@linux_only
@pytest.mark.parametrize("env", ENVIRONMENTS, ids=[str(sorted(e.items())) for e in ENVIRONMENTS])
def test_the_config_and_state_folders_are_platformdirs_own(env: dict[str, str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "HOME", "ANDROID_DATA", "ANDROID_ROOT",
                 "DISTILLD_CONFIG_DIR", "DISTILLD_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value.replace("{root}", str(tmp_path)))
    assert locations.user_config_dir() == platformdirs.user_config_dir("distilld")
    assert locations.user_state_dir() == platformdirs.user_state_dir("distilld")
    assert locations.config_dir() == Path(platformdirs.user_config_dir("distilld"))
    assert locations.state_dir() == Path(platformdirs.user_state_dir("distilld"))


@linux_only
def test_the_shortcut_leaves_what_only_platformdirs_knows_to_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "u"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert locations._xdg_user_dir("XDG_STATE_HOME", "~/.local/state") == f"{tmp_path}/u/.local/state/distilld"
    monkeypatch.setenv("ANDROID_DATA", str(tmp_path / "data"))  # perhaps an Android app: platformdirs decides
    assert locations._xdg_user_dir("XDG_STATE_HOME", "~/.local/state") is None
    monkeypatch.delenv("ANDROID_DATA")
    monkeypatch.setenv("XDG_STATE_HOME", "relative")  # versions of platformdirs differ on it
    assert locations._xdg_user_dir("XDG_STATE_HOME", "~/.local/state") is None
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", "relative")  # platformdirs asks the password database
    assert locations._xdg_user_dir("XDG_STATE_HOME", "~/.local/state") is None


def test_the_environment_moves_each_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTILLD_CONFIG_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("DISTILLD_STATE_DIR", str(tmp_path / "s"))
    assert locations.config_dir() == tmp_path / "c"
    assert locations.config_file() == tmp_path / "c" / "config.toml"
    assert locations.state_dir() == tmp_path / "s"
