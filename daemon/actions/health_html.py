"""The health report as one self-contained HTML page: a Jinja2 template (shipped in
distilld/templates/) and SVG charts drawn by pygal, inlined, with no script or style fetched
from anywhere. Both libraries are dependencies of distilld (small, pure Python): the report is a main
feature, and the daemon writes it daily.
"""

from __future__ import annotations

from typing import Any

from ..errors import DistilldError
from ..store.health_blocks import BOUND_LABELS, BOUNDS
from ..store.health_model import HealthReport
from .health_render import show

MISSING = ("the HTML report needs Jinja2 and pygal, which distilld installs with itself: reinstall it "
           "(pip install --force-reinstall distilld, or `pip install 'distilld[report]'`)")
TEMPLATE = "report.html.j2"


class ReportExtraMissing(DistilldError):
    """--html was asked for in an install that lacks Jinja2 or pygal (a broken or partial one)."""


def available() -> bool:
    try:
        import jinja2  # noqa: F401
        import pygal  # noqa: F401
    except ImportError:
        return False
    return True


def require() -> None:
    if not available():
        raise ReportExtraMissing(MISSING)


def _style() -> Any:
    from pygal.style import Style

    return Style(background="#ffffff", plot_background="#ffffff", foreground="#333333",
                 foreground_strong="#111111", foreground_subtle="#888888",
                 colors=("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f"),
                 font_family="DejaVu Sans, Arial, sans-serif", title_font_size=16, label_font_size=11,
                 legend_font_size=12, major_label_font_size=11)


def _options(title: str) -> dict[str, Any]:
    # js=[]: pygal would otherwise add a <script src> fetched from the network.
    return {"title": title, "js": [], "disable_xml_declaration": True, "style": _style(), "width": 920,
            "height": 360, "explicit_size": True, "legend_at_bottom": True, "x_label_rotation": 30,
            "truncate_label": -1, "print_values": False,
            "include_x_axis": True, "value_formatter": _whole}


def _whole(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


LABELS_SHOWN = 10  # dates under a time chart: about this many, so that they do not overlap


def _days(series: list[dict[str, Any]]) -> dict[str, Any]:
    """Every day on the axis, about ten of them named (61 daily labels ran into one smear)."""
    return {"x_labels": [point["day"] for point in series], "show_minor_x_labels": False,
            "x_labels_major_every": max(1, -(-len(series) // LABELS_SHOWN))}


def growth_charts(series: list[dict[str, Any]], budget: int) -> tuple[str, str]:
    """SPINE.md bytes against the budget, and entries and links: two charts with one axis each
    (two axes in one chart mislead, and the right one had odd ticks)."""
    import pygal

    size = pygal.Line(**_options(f"SPINE.md bytes per day (budget {budget:,} B)"), **_days(series),
                      range=(0, budget * 1.1))
    size.add("SPINE.md bytes", [point["spine_bytes"] for point in series])
    size.add(f"budget ({budget:,} B)", [budget] * len(series), show_dots=False, stroke_style={"dasharray": "6, 4"})
    counts = pygal.Line(**_options("SPINE.md entries and links per day"), **_days(series))
    counts.add("entries", [point["entries"] for point in series])
    counts.add("links", [point["links"] for point in series])
    return str(size.render(is_unicode=True)), str(counts.render(is_unicode=True))


def entry_chart(sizes: list[dict[str, Any]], cap: int) -> str:
    import pygal

    chart = pygal.Bar(**{**_options(f"SPINE entries by size, longest first (cap {cap} B)"),
                         "show_x_labels": False})
    ordered = sorted((item["bytes"] for item in sizes), reverse=True)
    chart.add(f"over {cap} B", [b if b > cap else None for b in ordered])
    chart.add(f"within {cap} B", [b if b <= cap else None for b in ordered])
    return str(chart.render(is_unicode=True))


def debt_charts(series: list[dict[str, Any]]) -> tuple[str, str]:
    import pygal

    debt = pygal.Line(**_options("Debt per day"), **_days(series))
    debt.add("debt", [point["debt"] for point in series])
    files = pygal.Line(**_options("Tier files per day"), **_days(series))
    files.add("tier files", [point["tier_files"] for point in series])
    return str(debt.render(is_unicode=True)), str(files.render(is_unicode=True))


def bounds_chart(report: HealthReport) -> str:
    import pygal

    tiers = report.section("tier_files")
    chart = pygal.Bar(**_options("Tier files under each dated-history bound"))
    chart.x_labels = ["none moved", *[BOUND_LABELS[b].split(" (")[0] for b in BOUNDS]]
    chart.add("still over a cap", [tiers.value("over_any_cap"), *[tiers.value(f"over_cap_after_{b}") for b in BOUNDS]])
    chart.add("split files needed (estimate)",
              [tiers.value("splits_estimate_none_moved"), *[tiers.value(f"splits_estimate_{b}") for b in BOUNDS]])
    return str(chart.render(is_unicode=True))


def render_html(report: HealthReport) -> str:
    require()
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(loader=jinja2.PackageLoader("distilld", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["show"] = show
    series = report.series.get("growth", [])
    size, counts = growth_charts(series, report.limits.spine.max_bytes)
    debt, files = debt_charts(series)
    charts = [
        ("growth", "Growth: SPINE.md bytes", size),
        ("counts", "Growth: entries and links", counts),
        ("entries", "Entry sizes", entry_chart(report.series.get("entry_sizes", []), report.limits.spine.entry_max_bytes)),
        ("debt", "Debt", debt),
        ("files", "Tier files", files),
        ("bounds", "Dated history bounds", bounds_chart(report)),
    ]
    return env.get_template(TEMPLATE).render(
        report=report, charts=[(key, title, Markup(svg)) for key, title, svg in charts],
        schema=report.to_dict()["schema"])
