"""The Investigation page's evidence, for people: titles in words, rupees, IST days, Yes/No,
and a record's list of records (a settlement's rows by type) as a table of its own.

Rendering only: the evidence the investigator and a model receive (core.investigate) is
the same data, untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from core.views.exception import EvidenceSection
from ui import widgets
from ui.format import ISO_DAY, cell, due_text, field_label, inr, md

ARG_LABELS = {
    "amount_paise": "amount",
    "date_from": "from",
    "date_to": "to",
    "exception_id": "exception",
    "line_id": "bank line",
    "utr": "UTR",
}


def _arg(key: str, value: Any) -> str:
    if key.endswith("_paise") and isinstance(value, int) and not isinstance(value, bool):
        text = inr(value)
    elif key == "exception_id":
        text = f"#{value}"
    elif isinstance(value, str) and ISO_DAY.fullmatch(value):
        text = due_text(value)
    else:
        text = str(cell(key, value))
    label = ARG_LABELS.get(key) or field_label(key).lower()
    return f"{label} {text}"


def title(section: EvidenceSection) -> str:
    """'Bank lines · from 05 Apr 2026, to 15 Apr 2026, amount ₹1,63,679.45'."""
    if not section.tool:
        return section.title
    name = section.tool.replace("_", " ").capitalize()
    args = ", ".join(_arg(k, v) for k, v in section.args)
    return f"{name} · {args}" if args else name


def _nested(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value)


def show(section: EvidenceSection, key: str, *, details: bool, budget: int) -> None:
    """One section: its records as a table; a field holding records, as a table below."""
    if section.note:
        st.caption(md(section.note))
    flat = [{k: v for k, v in r.items() if not _nested(v)} for r in section.records]
    widgets.records_table(flat, key, "Nothing found.", details=details, budget=budget)
    for n, record in enumerate(section.records):
        for field, value in record.items():
            if not _nested(value):
                continue
            st.caption(f"**{md(field_label(field))}**")
            rows = [v if isinstance(v, Mapping) else {"value": v} for v in value]
            widgets.records_table(
                rows, f"{key}-{n}-{field}", "None.", details=details, budget=budget
            )
