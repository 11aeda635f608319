"""The golden files of the Books month products (tests/golden/books_build/): the journal
CSV and Tally XML of every month, the GST bases of every month and the fee check's three
frames, over `tests.books_build_support.books_dataset()`. Written by the original
(row-by-row) implementation at commit 85552bc:

    .venv/bin/python -m tests.books_golden   # rewrites them: only when the products change

Rewritten on 2026-12-04 only to drop the empty captured vouchers of 2026-02 and 2026-07
(a month with no captures has none: an independent tester, finding 7).

`frame_document` is how a frame is compared: its columns, dtypes and values."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd

from core.books.gst import gst_bases
from core.books.journal import journal_csv, month_vouchers, tally_xml
from core.books.pricing import fee_check, overcharge_summary, unclassified_cards
from core.dataset import Dataset
from tests.books_build_support import MONTHS, books_dataset, books_plans

GOLDEN = Path(__file__).parent / "golden" / "books_build"
# The months with data, one before and one after.
GOLDEN_MONTHS = ("2026-02", *MONTHS, "2026-07")


# Fields added after the golden files were written (the item counts an invoice's GST
# rounding is bounded by, 2026-12-04; tests/test_books_gst.py checks them).
_NEWER_BASES_FIELDS = ("payment_items", "settlement_items")


def _bases(bases: Any) -> dict[str, Any]:
    """A month's GST bases as the golden files hold them."""
    return {k: v for k, v in dataclasses.asdict(bases).items() if k not in _NEWER_BASES_FIELDS}


def _cell(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def frame_document(frame: pd.DataFrame) -> dict[str, Any]:
    return {
        "columns": [str(c) for c in frame.columns],
        "dtypes": [str(t) for t in frame.dtypes],
        "index": [_cell(v) for v in frame.index],
        "rows": [[_cell(v) for v in row] for row in frame.itertuples(index=False, name=None)],
    }


def _fees(dataset: Dataset) -> str:
    plans = books_plans()
    check = fee_check(dataset, plans)
    frames = {
        "fee_check": frame_document(check),
        "overcharge_summary": frame_document(overcharge_summary(check)),
        "unclassified_cards": frame_document(unclassified_cards(dataset, plans)),
        "no_plan": frame_document(fee_check(dataset, ())),
        "no_plan_unclassified": frame_document(unclassified_cards(dataset, ())),
    }
    return json.dumps(frames, indent=0, sort_keys=True) + "\n"


def products() -> dict[str, str]:
    """File name -> text: what the golden files hold."""
    dataset = books_dataset()
    files: dict[str, str] = {}
    bases = {}
    for month in GOLDEN_MONTHS:
        vouchers = month_vouchers(dataset, month)
        files[f"journal-{month}.csv"] = journal_csv(vouchers)
        files[f"tally-{month}.xml"] = tally_xml(vouchers, company="Acme & Sons <India>")
        bases[month] = _bases(gst_bases(dataset, month))
    files["gst_bases.json"] = json.dumps(bases, indent=1, sort_keys=True) + "\n"
    files["fee_check.json"] = _fees(dataset)
    # A captured payment with no id (the GST bases and the fee check only: see books_dataset).
    odd = books_dataset(captured_without_id=True)
    bases = {month: _bases(gst_bases(odd, month)) for month in GOLDEN_MONTHS}
    files["gst_bases-captured_without_id.json"] = json.dumps(bases, indent=1, sort_keys=True) + "\n"
    files["fee_check-captured_without_id.json"] = _fees(odd)
    return files


if __name__ == "__main__":
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, text in products().items():
        (GOLDEN / name).write_text(text, encoding="utf-8", newline="")
        print(name, len(text))
