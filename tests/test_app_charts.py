"""The Overview's chart specs are filled into a template Altair built and validated once
per process (ui.charts.filled): for any data, the same spec Altair builds from scratch."""

from __future__ import annotations

from typing import Any

import pytest

from core.views.common import Total
from core.views.overview import AGE_LABELS, AgeBucket, CodeExposure
from core.views.runs import DayMatchRate
from ui import charts

CLASSES = {
    "amount_at_risk": Total(12, 1_234_567_890_12),
    "awaiting_settlement": Total(3, 99),
    "disputed": Total(0, 0),
    "realised_loss": Total(1, -5_000),
    "structural": Total(7, 0),
    "a_class_of_tomorrow": Total(2, 1),
}
CODES = tuple(
    CodeExposure(cls, f"CODE_{n}", n * 3 + 1, n * 1_000_003)
    for n, cls in enumerate([*CLASSES, "amount_at_risk", "disputed"])
)
AGES = (
    *(AgeBucket(label, n * 11, n * 10_001) for n, label in enumerate(AGE_LABELS)),
    AgeBucket("unknown", 4, 7),
)
DAYS = tuple(
    DayMatchRate(f"2026-{month:02d}-{day:02d}", payments, matched)
    for month, day, payments, matched in [(1, 1, 10, 9), (1, 2, 0, 0), (2, 28, 3, 1), (6, 30, 7, 7)]
)

CASES: list[tuple[str, Any]] = [
    ("exposure_by_class", CLASSES),
    ("exposure_by_class", {"amount_at_risk": Total(1, 100)}),
    ("exposure_by_class", {}),
    ("exposure_by_code", CODES),
    ("exposure_by_code", CODES[:1]),
    ("exposure_by_code", ()),
    ("ageing", AGES),
    ("ageing", AGES[2:4]),
    ("ageing", ()),
    ("match_rate", DAYS),
    ("match_rate", DAYS[1:2]),
    ("match_rate", ()),
]


@pytest.mark.parametrize(("kind", "data"), CASES)
def test_a_filled_chart_spec_equals_the_spec_altair_builds(kind: str, data: Any) -> None:
    expected = charts.BUILDERS[kind](data).to_dict()
    assert charts.filled(kind, data) == expected


def test_the_templates_are_built_once_and_never_changed_by_a_fill() -> None:
    charts.warm()
    templates = {kind: charts.template(kind) for kind in charts.FILLS}
    before = {kind: repr(spec) for kind, spec in templates.items()}
    for kind, data in CASES:
        filled = charts.filled(kind, data)
        assert charts.template(kind) is templates[kind]
        assert filled["datasets"] and filled["data"]["name"] in filled["datasets"]
    assert {kind: repr(spec) for kind, spec in templates.items()} == before
    assert all(spec["datasets"] == {} for spec in templates.values())
