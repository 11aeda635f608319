"""Altair charts over the read models. Axes carry whole rupees (int64, from paise);
tooltips carry the exact amounts as text."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from core.views.common import Total
from core.views.overview import AgeBucket, CodeExposure
from core.views.runs import DayMatchRate
from ui.format import class_label, inr

CLASS_COLOURS = {
    "Amount at risk": "#C0392B",
    "Awaiting settlement": "#E67E22",
    "Disputed": "#8E44AD",
    "Realised loss": "#2C3E50",
    "Structural": "#7F8C8D",
}


# Axis labels in lakh and crore, computed by Vega in the browser from whole rupees.
INDIAN_SHORT = (
    "datum.value >= 1e7 ? format(datum.value / 1e7, '.2~f') + ' Cr'"
    " : datum.value >= 1e5 ? format(datum.value / 1e5, '.2~f') + ' L'"
    " : format(datum.value, ',')"
)


def _rupees(paise: int) -> int:
    return int(paise) // 100


def _class_height(rows: int) -> int:
    return 90 + 34 * rows


def _code_height(rows: int) -> int:
    return 90 + 30 * rows


def _colour(*, legend: bool) -> alt.Color:
    # A legend above or below a fixed-height chart squeezes the bars to nothing in
    # Streamlit; on the right it does not.
    return alt.Color(
        "Class:N",
        scale=alt.Scale(domain=list(CLASS_COLOURS), range=list(CLASS_COLOURS.values())),
        legend=alt.Legend(orient="right", title=None) if legend else None,
    )


# Whole-number columns: int64 even with no rows (as Altair types a tooltip by the dtype).
_COUNTS = frozenset({"Rupees", "Open", "Payments", "Matched"})


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """A chart's rows (the `_*_rows` below, also what `filled` puts in a template) as the
    frame its Altair builder draws."""
    frame = pd.DataFrame({column: [row[column] for row in rows] for column in columns})
    for column in _COUNTS.intersection(columns):
        frame[column] = frame[column].astype("int64")
    return frame


def _categories(field: str) -> alt.Y:
    return alt.Y(field, sort="-x", title=None, axis=alt.Axis(labelLimit=260))


def exposure_by_class(totals: dict[str, Total]) -> alt.Chart:
    frame = _frame(_class_rows(totals), ("Class", "Rupees", "Exposure", "Open"))
    return (
        alt.Chart(frame, title="Open exposure by class")
        .mark_bar()
        .encode(
            x=alt.X("Rupees:Q", title="₹", axis=alt.Axis(labelExpr=INDIAN_SHORT)),
            y=_categories("Class:N"),
            color=_colour(legend=False),
            tooltip=["Class", "Exposure", "Open"],
        )
        .properties(height=_class_height(len(totals)))
    )


def exposure_by_code(codes: tuple[CodeExposure, ...]) -> alt.Chart:
    frame = _frame(_code_rows(codes), ("Code", "Class", "Rupees", "Exposure", "Open"))
    return (
        alt.Chart(frame, title="Open exceptions by reason code")
        .mark_bar()
        .encode(
            x=alt.X("Open:Q", title="Open exceptions"),
            y=_categories("Code:N"),
            # Colours as in "Open exposure by class" beside it (above it on a phone): a
            # legend here would leave a phone no room for the bars.
            color=_colour(legend=False),
            tooltip=["Code", "Class", "Open", "Exposure"],
        )
        .properties(height=_code_height(len(codes)))
    )


def ageing(buckets: tuple[AgeBucket, ...]) -> alt.Chart:
    frame = _frame(_age_rows(buckets), ("Age", "Open", "Exposure"))
    return (
        alt.Chart(frame, title="Age of open exceptions at the run's as-of")
        .mark_bar(color="#2B59C3")
        .encode(
            x=alt.X(
                "Age:N",
                sort=[b.label for b in buckets],
                title=None,
                axis=alt.Axis(labelAngle=0),
            ),
            y=alt.Y("Open:Q", title="Open exceptions"),
            tooltip=["Age", "Open", "Exposure"],
        )
        .properties(height=260)
    )


def match_rate(days: tuple[DayMatchRate, ...]) -> alt.Chart:
    frame = _frame(_day_rows(days), ("Day", "Match rate", "Payments", "Matched"))
    frame["Day"] = pd.to_datetime(frame["Day"])
    return (
        alt.Chart(frame, title="Payments matched, by settlement day")
        .mark_line(point=True, color="#2B59C3")
        .encode(
            x=alt.X("Day:T", title=None),
            y=alt.Y(
                "Match rate:Q", axis=alt.Axis(format="%"), scale=alt.Scale(zero=False), title=None
            ),
            tooltip=[
                alt.Tooltip("Day:T"),
                alt.Tooltip("Match rate:Q", format=".1%"),
                "Payments",
                "Matched",
            ],
        )
        .properties(height=260)
    )


def confusion(frame: pd.DataFrame, *, actual: str, predicted: str, count: str) -> alt.Chart:
    """A heatmap of a long-format confusion matrix (one row per actual/predicted pair)."""
    axis = alt.Axis(labelOverlap=False, labelLimit=320)
    base = alt.Chart(frame, title="Confusion matrix by outcome (held-out split)").encode(
        x=alt.X(
            f"{predicted}:N",
            title="Engine said",
            axis=alt.Axis(labelOverlap=False, labelLimit=320, labelAngle=-50),
        ),
        y=alt.Y(f"{actual}:N", title="Ground truth", axis=axis),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(f"{count}:Q", scale=alt.Scale(scheme="blues", type="log"), legend=None),
        tooltip=[actual, predicted, count],
    )
    labels = base.mark_text(fontSize=11).encode(
        text=f"{count}:Q",
        color=alt.condition(alt.datum[count] > 100, alt.value("white"), alt.value("#1f2937")),
    )
    # 24 px a column: about thirty outcomes fit the main column at 1440 wide.
    return (cells + labels).properties(height=alt.Step(24), width=alt.Step(24))


BUILDERS: dict[str, Callable[[Any], alt.TopLevelMixin]] = {
    "exposure_by_class": exposure_by_class,
    "exposure_by_code": exposure_by_code,
    "ageing": ageing,
    "match_rate": match_rate,
}


# --- the same specs without Altair on every call ------------------------------------------
#
# Building a chart through Altair (a DataFrame, its sanitising, the schema objects, to_dict
# and its validation) cost 25-60 ms a chart, paid on a server's first Overview and again on
# the first one after any change to the data. A chart's spec differs from one data to the
# next only in its rows (the inline dataset and its content-hash name) and in what the
# builders above derive from the rows (a height, the ageing's sort). So each kind's spec is
# built and validated by Altair once per process (`template`, from a sample; ui.warm.charts
# does it before the first session) and a call fills in the rows and those few values:
# tests/test_app_charts.py checks the result equals Altair's own spec for varied data.


def _class_rows(totals: dict[str, Total]) -> list[dict[str, Any]]:
    return [
        {
            "Class": class_label(k),
            "Rupees": _rupees(t.paise),
            "Exposure": inr(t.paise),
            "Open": int(t.count),
        }
        for k, t in totals.items()
    ]


def _code_rows(codes: tuple[CodeExposure, ...]) -> list[dict[str, Any]]:
    return [
        {
            "Code": c.reason_code,
            "Class": class_label(c.exposure_class),
            "Rupees": _rupees(c.paise),
            "Exposure": inr(c.paise),
            "Open": int(c.count),
        }
        for c in codes
    ]


def _age_rows(buckets: tuple[AgeBucket, ...]) -> list[dict[str, Any]]:
    return [{"Age": b.label, "Open": int(b.count), "Exposure": inr(b.paise)} for b in buckets]


def _day_rows(days: tuple[DayMatchRate, ...]) -> list[dict[str, Any]]:
    # pd.to_datetime of an ISO day, as Altair writes a datetime column: ISO, no zone.
    return [
        {
            "Day": dt.datetime.fromisoformat(d.day).isoformat(),
            "Match rate": float(d.rate),
            "Payments": int(d.payments),
            "Matched": int(d.matched),
        }
        for d in days
    ]


def _class_layout(spec: dict[str, Any], totals: dict[str, Total]) -> None:
    spec["height"] = _class_height(len(totals))


def _code_layout(spec: dict[str, Any], codes: tuple[CodeExposure, ...]) -> None:
    spec["height"] = _code_height(len(codes))


def _age_layout(spec: dict[str, Any], buckets: tuple[AgeBucket, ...]) -> None:
    spec["encoding"]["x"]["sort"] = [b.label for b in buckets]


def _no_layout(spec: dict[str, Any], data: Any) -> None:
    return None


@dataclass(frozen=True)
class _Fill:
    """How a kind's spec follows its data: its rows, what else the data set, a sample."""

    rows: Callable[[Any], list[dict[str, Any]]]
    layout: Callable[[dict[str, Any], Any], None]
    sample: Callable[[], Any]


FILLS: dict[str, _Fill] = {
    "exposure_by_class": _Fill(
        _class_rows, _class_layout, lambda: {"amount_at_risk": Total(1, 100)}
    ),
    "exposure_by_code": _Fill(
        _code_rows,
        _code_layout,
        lambda: (CodeExposure("amount_at_risk", "AMOUNT_MISMATCH", 1, 100),),
    ),
    "ageing": _Fill(_age_rows, _age_layout, lambda: (AgeBucket("0–7 d", 1, 100),)),
    "match_rate": _Fill(_day_rows, _no_layout, lambda: (DayMatchRate("2026-01-01", 2, 1),)),
}

_templates: dict[str, dict[str, Any]] = {}
_templates_lock = threading.Lock()


def template(kind: str) -> dict[str, Any]:
    """Kind's spec as Altair builds and validates it, for a sample; once per process."""
    with _templates_lock:
        if kind not in _templates:
            built: dict[str, Any] = BUILDERS[kind](FILLS[kind].sample()).to_dict()
            name = built["data"]["name"]
            del built["datasets"][name]
            _templates[kind] = built
        return _templates[kind]


def dataset_name(rows: list[dict[str, Any]]) -> str:
    """The name Altair gives an inline dataset: a hash of its rows (altair.vegalite.v6.api
    `_dataset_name`)."""
    if rows == [{}]:
        return "empty"
    text = json.dumps(rows, sort_keys=True, default=str)
    return "data-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def filled(kind: str, data: Any) -> dict[str, Any]:
    """`BUILDERS[kind](data).to_dict()`, from the kind's template: the rows and the values
    the data set, filled into a copy. No rows: Altair's own build (it types the tooltips of
    an empty frame otherwise; nothing to draw, nothing to hover)."""
    fill = FILLS[kind]
    rows = fill.rows(data)
    if not rows:
        return _built(kind, data)
    spec = copy.deepcopy(template(kind))
    name = dataset_name(rows)
    spec["data"] = {"name": name}
    spec["datasets"] = {name: rows}
    fill.layout(spec, data)
    return spec


@st.cache_data(max_entries=256, show_spinner=False)
def spec(kind: str, data: Any) -> dict[str, Any]:
    """The Vega-Lite spec of a chart, cached on its data: unchanged figures cost nothing
    on a rerun, new figures a copy of the kind's template (`filled`)."""
    return filled(kind, data)


@st.cache_data(max_entries=64, show_spinner=False)
def spec_for(kind: str, key: tuple[Any, ...], _data: Any) -> dict[str, Any]:
    """`spec(kind, data)` cached on `key`, which names the data (`_data` is not hashed):
    for data that are large and fixed by the key, e.g. a run's match rate by settlement day
    (hundreds of days at 10M: hashing them cost more than the rest of a rerun's charts)."""
    return filled(kind, _data)


def _built(kind: str, data: Any) -> dict[str, Any]:
    built: dict[str, Any] = BUILDERS[kind](data).to_dict()
    return built


def warm() -> None:
    """Build every kind's template (ui.warm.charts, before a server's first session)."""
    for kind in FILLS:
        template(kind)
