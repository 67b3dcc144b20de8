"""Settings: defaults < config file < DISTILLD_* < command line, validated strictly; a bad
configuration is one line and exit 78; the store default lives in the settings only."""

from __future__ import annotations

from pathlib import Path

import pytest
from distilld.cli import default_store, main
from distilld.errors import ConfigError
from distilld.settings import InstancePaths, config_file, instance_key, load_settings, render_toml


def write_config(dirs: dict[str, Path], text: str) -> Path:
    path = dirs["config"] / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out, out.err


def test_defaults(distilld_dirs: dict[str, Path]) -> None:
    settings = load_settings()
    assert settings.store == Path("~/.aura-distill").expanduser()
    assert settings.watch.quiet_seconds == 2.0
    assert settings.watch.max_wait_seconds == 30.0
    assert config_file() == distilld_dirs["config"] / "config.toml"


def test_precedence_file_env_overrides(distilld_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                       tmp_path: Path) -> None:
    write_config(distilld_dirs, f'store = "{tmp_path / "from-file"}"\n[watch]\nquiet_seconds = 5\n'
                               "max_wait_seconds = 40\n[schedule]\nsync_minutes = 7\n")
    settings = load_settings()
    assert settings.store == tmp_path / "from-file"
    assert (settings.watch.quiet_seconds, settings.schedule.sync_minutes) == (5, 7)
    monkeypatch.setenv("DISTILLD_WATCH__QUIET_SECONDS", "3")
    monkeypatch.setenv("DISTILLD_STORE", str(tmp_path / "from-env"))
    settings = load_settings()
    assert settings.store == tmp_path / "from-env"
    assert settings.watch.quiet_seconds == 3
    assert settings.watch.max_wait_seconds == 40  # the file still counts for what env leaves alone
    settings = load_settings(overrides={"store": str(tmp_path / "from-cli")})
    assert settings.store == tmp_path / "from-cli"


def test_store_tilde_is_expanded(distilld_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                 tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write_config(distilld_dirs, 'store = "~/notes"\n')
    assert load_settings().store == tmp_path / "home" / "notes"


@pytest.mark.parametrize("text, key", [
    ("[watch]\nquiet_seconds = 0\n", "watch.quiet_seconds"),
    ("[watch]\nquiet_seconds = 10\nmax_wait_seconds = 5\n", "watch.max_wait_seconds"),
    ("[log]\nlevl = 'debug'\n", "log.levl: unknown key"),
    ("bogus = 1\n", "bogus: unknown key"),
    ("[schedule]\nsync_minutes = 'often'\n", "schedule.sync_minutes"),
    ("[git]\nremote = 'a b'\n", "git.remote"),
])
def test_invalid_values_are_refused_with_the_key(distilld_dirs: dict[str, Path], text: str, key: str) -> None:
    write_config(distilld_dirs, text)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    message = str(raised.value)
    assert key in message
    assert "\n" not in message
    assert raised.value.exit_code == 78


def test_unknown_nested_env_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTILLD_WATCH__QUIETSECONDS", "1")
    with pytest.raises(ConfigError, match="watch.quietseconds: unknown key"):
        load_settings()


def test_malformed_toml_is_one_line(distilld_dirs: dict[str, Path]) -> None:
    path = write_config(distilld_dirs, "[watch\nquiet = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML") as raised:
        load_settings()
    assert str(path) in str(raised.value)


def test_explicit_missing_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml")


def test_default_store_comes_from_settings(distilld_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    write_config(distilld_dirs, f'store = "{tmp_path / "configured"}"\n')
    assert default_store() == str(tmp_path / "configured")
    monkeypatch.setenv("DISTILLD_STORE", str(tmp_path / "env-store"))
    assert default_store() == str(tmp_path / "env-store")


def test_instance_paths_are_per_store_and_outside_it(distilld_dirs: dict[str, Path], tmp_path: Path) -> None:
    a = InstancePaths.for_store(tmp_path / "a")
    b = InstancePaths.for_store(tmp_path / "b")
    assert a.status_file != b.status_file
    assert a.status_file.is_relative_to(distilld_dirs["state"])
    assert a.control_socket.is_relative_to(distilld_dirs["runtime"])
    assert instance_key(tmp_path / "a") == instance_key(tmp_path / "a")


def test_config_commands(distilld_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "path")
    assert code == 0 and out.strip() == str(distilld_dirs["config"] / "config.toml")
    code, out, _ = run(capsys, "config", "check")
    assert code == 0 and out.startswith("settings OK")
    code, out, _ = run(capsys, "config", "show")
    assert code == 0 and "[watch]" in out and "quiet_seconds = 2.0" in out
    write_config(distilld_dirs, "[watch]\nquiet_seconds = -1\n")
    code, out, err = run(capsys, "config", "check")
    assert code == 78
    assert len(err.strip().splitlines()) == 1 and "watch.quiet_seconds" in err


def test_run_with_invalid_settings_exits_78_in_one_line(distilld_dirs: dict[str, Path], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    write_config(distilld_dirs, "[schedule]\nsync_minutes = -5\n")
    code, _, err = run(capsys, "run", "--store", str(tmp_path), "--once")
    assert code == 78
    assert err.strip().count("\n") == 0 and "schedule.sync_minutes" in err


def test_render_toml_round_trips(tmp_path: Path) -> None:
    import tomllib

    settings = load_settings(overrides={"store": str(tmp_path)})
    data = tomllib.loads(render_toml(settings))
    assert data["store"] == str(tmp_path)
    assert data["watch"]["quiet_seconds"] == 2.0


def test_a_top_level_variable_typo_is_refused_with_the_nearest_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 27: DISTILLD_STOR=/x was accepted silently
    monkeypatch.setenv("DISTILLD_STOR", "/x")
    with pytest.raises(ConfigError, match=r"\$DISTILLD_STOR: unknown setting; did you mean \$DISTILLD_STORE\?") as raised:
        load_settings()
    assert raised.value.exit_code == 78
    monkeypatch.delenv("DISTILLD_STOR")
    monkeypatch.setenv("DISTILLD_STATE_DIR", str(Path.cwd()))  # a folder variable, not a setting: fine
    load_settings()


def test_a_json_error_names_the_config_file_at_fault(distilld_dirs: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # issue 27: --json errors carried "file": null even when a file was at fault
    import json

    from distilld.cli import main

    path = write_config(distilld_dirs, "[watch]\nquiet = 1\n")
    assert main(["status", "--json"]) == 78
    error = json.loads(capsys.readouterr().out)
    assert error["file"] == str(path) and error["exit"] == 78
