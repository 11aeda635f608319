"""The Books month products (the journal's CSV and Tally XML, the GST bases, the fee check's
frames) are exactly what the original row-by-row implementation wrote, byte for byte and
dtype for dtype, on data over several months that exercises every branch
(tests/books_build_support.py; golden files written at 85552bc by tests/books_golden.py)."""

from __future__ import annotations

import json

import pytest

from tests.books_golden import GOLDEN, products


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    return products()


def test_every_books_product_equals_its_golden_file_written_by_the_original_code(
    built: dict[str, str],
) -> None:
    names = sorted(p.name for p in GOLDEN.iterdir())
    assert sorted(built) == names
    for name in names:
        golden = (GOLDEN / name).read_text(encoding="utf-8")
        if name.endswith(".json"):
            assert json.loads(built[name]) == json.loads(golden), name
        assert built[name] == golden, name


def test_the_golden_data_reaches_the_branches_the_products_take(built: dict[str, str]) -> None:
    journals = "".join(text for name, text in built.items() if name.startswith("journal-"))
    assert '""quoted""' in journals and "payment:comma,40" in journals
    assert sum("Razorpay suspense" in text for text in built.values()) >= 4
    assert "RZP-setl_0612,&amp;é" in built["tally-2026-06.xml"]
    bases = json.loads(built["gst_bases.json"])
    june_bases = bases["2026-06"]
    for key in ("other_rows_fees", "row_fee_differences", "settled_from_other_months_fees"):
        assert june_bases[key] != 0, key
    fees = json.loads(built["fee_check.json"])
    versions = {row[3] for row in fees["fee_check"]["rows"]}
    assert versions == {1, 2, 3}
    assert len(fees["unclassified_cards"]["rows"]) > 0
    assert len(fees["overcharge_summary"]["rows"]) > 0
