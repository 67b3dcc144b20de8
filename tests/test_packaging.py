"""The package list in pyproject.toml names every package under daemon/: `pip install .` (the
README's install command, not editable) ships only the packages it names."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_for_installation() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"distilld" + "".join(f".{part}" for part in init.parent.relative_to(ROOT / "daemon").parts)
             for init in (ROOT / "daemon").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_the_readme_install_brings_the_html_report_libraries() -> None:
    # issue 27: the HTML report (a main feature, written daily by the daemon) needed an extra
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {dependency.split(">")[0].split("<")[0].split("=")[0].strip() for dependency in project["dependencies"]}
    assert {"jinja2", "pygal"} <= names
