"""`distilld report` from the command line: the summary, `--json` against its schema, and the
`--html` page opened in a real (headless) Chromium, which must draw every chart."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from builders import healthy_store
from distilld.cli import main
from storeb import build_store_b_with_history


@pytest.fixture(scope="module")
def store_b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store-b")
    build_store_b_with_history(root)
    return root


def run(capsysbinary: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, str, str]:
    code = main(["report", *args])
    out, err = capsysbinary.readouterr()
    return code, out.decode(), err.decode()


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((files("distilld") / "templates" / "report.schema.json").read_text())
    return loaded


def test_the_summary_names_the_sections(store_b: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = run(capsysbinary, str(store_b), "--since", "2026-08-01", "--helpers", "3")
    assert code == 0
    for title in ("Index cost", "Growth", "Tier files", "Lifecycle", "Links", "Archive and ledger",
                  "What distilld did"):
        assert f"\n{title}\n" in out
    flowing = " ".join(out.split())  # lines are wrapped within 80 columns
    assert "SPINE.md 51,203 B (3.20x the byte cap), 79 lines; 65 entries, 95 links" in flowing
    assert "with 3 helpers ~51,204" in flowing
    assert "(+65.0%); entries 65 -> 65" in flowing
    assert "older rule (any mention blocks): " in flowing  # the figures depend on today: see tests/store


@pytest.mark.parametrize("kind", ["store-b", "no-git", "empty"])
def test_json_matches_its_schema(kind: str, store_b: Path, tmp_path: Path,
                                 capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    if kind == "store-b":
        store = store_b
    elif kind == "no-git":
        store = healthy_store(tmp_path / "store").root
    else:
        store = tmp_path / "empty"
        store.mkdir()
    code, out, _ = run(capsysbinary, str(store), "--json")
    assert code == 0
    data = json.loads(out)
    jsonschema.validate(data, schema(), format_checker=jsonschema.FormatChecker())
    assert data["schema"] == "distilld.report/1"
    figures = [f for section in data["sections"] for f in section["figures"]]
    assert len({(s["key"], f["key"]) for s in data["sections"] for f in s["figures"]}) == len(figures)
    if kind == "store-b":
        assert all(f["value"] is not None for f in figures if f["key"] != "activity_lines"
                   and not f["key"].startswith("activity_"))
    else:
        assert any(f["value"] is None and f["unknown"] for f in figures)


def test_the_schema_refuses_an_unknown_shown_as_zero() -> None:
    bad = {"key": "commits", "label": "commits", "value": None, "how": "counted somehow", "unit": "",
           "estimate": False, "unknown": None}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, {**schema(), "$ref": "#/$defs/figure"})


def test_a_bad_since_is_a_usage_error(store_b: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, _, err = run(capsysbinary, str(store_b), "--since", "August")
    assert code == 2 and "--since" in err


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.mark.slow
def test_the_html_page_draws_every_chart_in_a_real_browser(store_b: Path, tmp_path: Path,
                                                           capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    page = tmp_path / "report.html"
    code, _, err = run(capsysbinary, str(store_b), "--since", "2026-08-01", "--html", str(page))
    assert code == 0 and f"wrote {page}" in err
    html = page.read_text()
    # Self-contained: nothing is fetched when it is viewed.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html and "url(http" not in html
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (.ci/run installs the distribution's chromium package; "
                    "install it with `apt-get install chromium` to run this test)")
    base = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
            "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars"]
    # Chromium writes crash reports and a settings cache under HOME whatever its profile folder.
    home = tmp_path / "browser-home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache")}
    dom = subprocess.run([*base, "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True, env=env).stdout
    charts = dict(re.findall(r'<figure class="chart" id="chart-([a-z]+)" data-drawn="(\w+)"', dom))
    assert charts == {"growth": "yes", "counts": "yes", "entries": "yes", "debt": "yes", "files": "yes",
                      "bounds": "yes"}, charts
    marks = {k: int(v) for k, v in re.findall(r'id="chart-([a-z]+)" data-drawn="yes" data-marks="(\d+)"', dom)}
    assert marks["entries"] >= 65  # one bar per SPINE entry
    assert marks["growth"] >= 2 * 10 and marks["counts"] >= 2 * 10  # two series each over ten days
    assert dom.count("<svg") >= 6
    shot = tmp_path / "report.png"
    subprocess.run([*base, "--window-size=1100,2400", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True, env=env)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_without_jinja2_and_pygal_the_summary_works_and_html_says_what_to_install(
        store_b: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    import sys

    from distilld.actions.health import build_report, write_report_files
    from distilld.policy import load_policy

    monkeypatch.setitem(sys.modules, "pygal", None)  # a partial install: both are dependencies
    monkeypatch.setitem(sys.modules, "jinja2", None)
    code, out, _ = run(capsysbinary, str(store_b))
    assert code == 0 and "Index cost" in out
    page = tmp_path / "report.html"
    code, _, err = run(capsysbinary, str(store_b), "--html", str(page))
    assert code == 2 and "reinstall" in err and not page.exists()
    written = write_report_files(build_report(store_b, load_policy(), datetime.now(UTC)), tmp_path / "state")
    assert written.html is None and written.note and "Jinja2 and pygal" in written.note
    assert written.json.exists() and written.text.exists()


@pytest.mark.parametrize("spoil", ["binary", "unreadable"])
def test_a_spine_that_cannot_be_read_is_shown_as_unknown_not_as_a_number(
        spoil: str, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 27: an unreadable SPINE showed as "0 B", a binary one as "20,000 B, 68 lines"
    import builtins

    store = healthy_store(tmp_path / "store").root
    spine = store / "SPINE.md"
    if spine_is_binary := spoil == "binary":
        spine.write_bytes(bytes(range(256)) * 80)
    else:
        real_open = builtins.open

        def refuse(file: Any, *args: Any, **kwargs: Any) -> Any:  # root reads any file: refuse this one
            if isinstance(file, str) and os.path.realpath(file) == os.path.realpath(spine):
                raise PermissionError(13, "Permission denied", file)
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", refuse)
    code, out, _ = run(capsysbinary, str(store), "--json")
    assert code == 0
    figures = next(s for s in json.loads(out)["sections"] if s["key"] == "index_cost")["figures"]
    spine_bytes = next(f for f in figures if f["key"] == "spine_bytes")
    assert spine_bytes["value"] is None, spine_bytes
    why = "not text" if spine_is_binary else "cannot read"
    assert why in json.dumps(spine_bytes)


def test_the_time_charts_name_about_ten_days_have_one_axis_and_draw_the_budget() -> None:
    # issue 27: 61 daily labels overlapped, two-axis charts misled, no budget line
    from distilld.actions.health_html import debt_charts, growth_charts

    series = [{"day": f"2026-{8 + i // 31:02d}-{i % 31 + 1:02d}", "spine_bytes": 9000 + 50 * i, "entries": 60 + i,
               "links": 70 + i, "debt": i, "tier_files": 40} for i in range(61)]
    for svg in (*growth_charts(series, 16000), *debt_charts(series)):
        assert 'class="axis y2' not in svg and '"secondary": true' not in svg  # one value axis
        shown = re.findall(r'>(2026-\d\d-\d\d)</text>', svg)
        assert 6 <= len(shown) <= 12, shown
    assert "budget (16,000 B)" in growth_charts(series, 16000)[0]


def test_the_text_summary_stays_within_80_columns_and_breaks_between_words(
        store_b: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    # issue 27: 14 of 32 lines ran past 80 columns, and the terminal broke words ("oversi/ze")
    code, out, _ = run(capsysbinary, str(store_b), "--since", "2026-08-01")
    assert code == 0
    lines = out.splitlines()
    # only one word longer than a line (a path) is left whole, on a line of its own
    assert [line for line in lines if len(line) > 80 and len(line.split()) > 1] == []
    words = out.split()
    for word in ("oversize", "cross-references", "helpers"):
        assert word in words or any(w.startswith(word) for w in words), word
    assert len(lines) <= 45
