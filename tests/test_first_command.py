"""The README's first command works as written on a fresh machine: a venv made by the system
Python (no `pip install` into an externally managed Python), the package installed into it, and
its `distilld` runs. HOME is a temporary folder; the repository is copied, never built in place."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def first_command() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The two commands", 1)[1]
    found = re.search(r"```sh\n(.+?)\n```", section, re.S)
    assert found is not None, "the README's first command is a ```sh block under 'The two commands'"
    return found.group(1).strip()


def test_the_first_command_uses_a_venv_and_ends_by_running_the_daemon() -> None:
    command = first_command()
    assert "python3 -m venv" in command and "pip install ." in command
    assert "python3 -m pip install" not in command  # refused by Debian's and Ubuntu's own Python
    assert command.endswith("/bin/distilld run")
    assert "Python 3.11" in (REPO / "README.md").read_text(encoding="utf-8")
    assert "python3 -m venv" in (REPO / ".ci" / "run").read_text()


def test_the_license_file_matches_the_declared_license() -> None:
    assert 'license = "MIT"' in (REPO / "pyproject.toml").read_text()
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n")


@pytest.mark.slow
def test_the_first_command_installs_a_working_distilld(tmp_path: Path) -> None:
    system_python = shutil.which("python3", path=os.defpath + ":/usr/bin:/bin")
    if system_python is None:
        pytest.skip("no python3 outside the test's own environment")
    source = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    home = tmp_path / "home"
    home.mkdir()
    # The system Python first on PATH: not the venv the tests run in.
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if not Path(p, "python").exists() or Path(p).resolve() != Path(sys.executable).parent.resolve())
    env = {**{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
           "HOME": str(home), "PATH": f"{Path(system_python).parent}{os.pathsep}{path}"}
    command = first_command().removesuffix(" run") + " --version"
    done = subprocess.run(["bash", "-c", command], cwd=source, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("distilld, version ")
    assert (home / ".local/share/distilld/venv/bin/distilld").exists()
