"""The health report's shape: figures that say how they are counted, grouped in sections.

A figure whose value cannot be known carries ``None`` and the reason (``unknown``); it is
never shown as 0. An estimate says so (``estimate``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any

from .limits import Limits

SCHEMA = "distilld.report/1"

Value = int | float | str | None


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    value: Value
    how: str  # how it is counted, in a sentence
    unit: str = ""
    estimate: bool = False
    unknown: str | None = None  # why the value cannot be known (then value is None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def known(key: str, label: str, value: float | str, how: str, unit: str = "",
          estimate: bool = False) -> Figure:
    return Figure(key, label, value, how, unit, estimate)


def unknown(key: str, label: str, why: str, how: str, unit: str = "", estimate: bool = False) -> Figure:
    return Figure(key, label, None, how, unit, estimate, unknown=why)


def maybe(key: str, label: str, value: float | str | None, how: str, why: str, unit: str = "",
          estimate: bool = False) -> Figure:
    """A known figure, or an unknown one with ``why`` when there is no value."""
    if value is None:
        return unknown(key, label, why, how, unit, estimate)
    return known(key, label, value, how, unit, estimate)


@dataclass
class Section:
    key: str
    title: str
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        return figure

    def figure(self, key: str) -> Figure:
        for found in self.figures:
            if found.key == key:
                return found
        raise KeyError(f"section {self.key} has no figure {key!r}")

    def value(self, key: str) -> Value:
        return self.figure(key).value

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "figures": [f.to_dict() for f in self.figures],
                "notes": list(self.notes), "items": self.items}


@dataclass
class HealthReport:
    store: str
    generated_at: str
    today: str
    layout: str
    helpers: int
    since: str | None
    limits: Limits  # what the figures were measured against (not in the JSON: the figures name them)
    sections: list[Section] = field(default_factory=list)
    series: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def section(self, key: str) -> Section:
        for found in self.sections:
            if found.key == key:
                return found
        raise KeyError(f"the report has no section {key!r}")

    def value(self, section: str, key: str) -> Value:
        return self.section(section).value(key)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "store": self.store, "generated_at": self.generated_at,
                "today": self.today, "layout": self.layout, "helpers": self.helpers, "since": self.since,
                "sections": [s.to_dict() for s in self.sections], "series": self.series}


def median_of(values: list[int]) -> int | float | None:
    """The median, or None for no values (unknown, not 0); a whole number stays an int."""
    if not values:
        return None
    middle = median(values)
    return int(middle) if float(middle).is_integer() else float(middle)


def percent(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 1) if whole else None
