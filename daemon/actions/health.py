"""`distilld report`: the store's health report, and the daemon's daily copy of it.

Orchestration only: read the store, its git history and the activity log; the figures come
from store/health*.py, the history from gitstore/history.py; rendering is health_render.py
(text, JSON) and health_html.py (the page with charts, behind the `report` extra).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from ..policy import Policy
from ..store import fs
from ..store.health import archive_and_ledger, index_cost, lifecycle, links, tier_files
from ..store.health_history import (
    WORK_TREE,
    GitFacts,
    HistoryPoint,
    growth,
    measure_point,
    what_distilld_did,
)
from ..store.health_model import HealthReport
from ..store.snapshot import take_snapshot
from ..store.stamps import format_utc

REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
REPORT_TEXT = "report.txt"


def read_activity(path: Path | None) -> tuple[list[str] | None, str]:
    """The activity log's lines, or None and why there are none."""
    if path is None:
        return None, "no activity log was given"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, f"no activity log at {path} (the daemon has not run for this store on this machine)"
    except OSError as error:
        return None, f"{path}: cannot read the activity log ({error.strerror or error})"
    return raw.decode("utf-8", "replace").splitlines(), ""


def build_report(store: Path, policy: Policy, now: datetime, since: date | None = None, helpers: int = 0,
                 activity_log: Path | None = None) -> HealthReport:
    """Measure the store at ``store``; reads only, writes nothing."""
    from ..gitstore.history import read_history  # pygit2 loads only for commands that need it

    snapshot = take_snapshot(store)
    limits = policy.limits
    today = now.date()
    root = snapshot.root

    def measure(day: date, commit: str, files: Mapping[str, bytes]) -> HistoryPoint:
        return measure_point(day, commit, files, limits, root)

    facts: GitFacts = read_history(root, measure, since)
    current = measure_point(today, WORK_TREE, snapshot.file_contents(), limits, root)
    lines, why = read_activity(activity_log)
    cost = index_cost(snapshot, limits, helpers)
    grown, series = growth(facts, current, since)
    report = HealthReport(store=str(root), generated_at=format_utc(now), today=today.isoformat(),
                          layout=snapshot.layout.value, helpers=helpers,
                          since=since.isoformat() if since else None, limits=limits)
    report.sections = [
        cost, grown, tier_files(snapshot, limits),
        lifecycle(snapshot, limits, today, facts.first_commit if facts.available else None),
        links(snapshot), archive_and_ledger(snapshot), what_distilld_did(facts, lines, why),
    ]
    report.series = {"growth": series, "entry_sizes": cost.items.get("entry_sizes", [])}
    return report


@dataclass(frozen=True)
class WrittenReport:
    json: Path
    text: Path
    html: Path | None  # None when the `report` extra is not installed
    note: str | None = None


def write_report_files(report: HealthReport, folder: Path) -> WrittenReport:
    """The report as JSON, text and (with the extra) HTML in ``folder`` (the daemon's state
    folder: machine-local, never the store), each written atomically."""
    from . import health_html, health_render

    folder.mkdir(parents=True, exist_ok=True)
    json_path, text_path = folder / REPORT_JSON, folder / REPORT_TEXT
    fs.atomic_write(json_path, health_render.render_json(report).encode("utf-8"), durable=False)
    fs.atomic_write(text_path, health_render.render_text(report).encode("utf-8", "surrogateescape"), durable=False)
    if not health_html.available():
        return WrittenReport(json_path, text_path, None, health_html.MISSING)
    html_path = folder / REPORT_HTML
    fs.atomic_write(html_path, health_html.render_html(report).encode("utf-8", "surrogateescape"), durable=False)
    return WrittenReport(json_path, text_path, html_path)


def write_daily_report(store: Path, policy: Policy, now: datetime, folder: Path,
                       activity_log: Path | None) -> WrittenReport:
    """What the daemon runs once a day: measure the store and write the report files."""
    return write_report_files(build_report(store, policy, now, activity_log=activity_log), folder)
