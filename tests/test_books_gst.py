"""GST on fees (core.books.gst): the month by payment and by settlement, Razorpay's invoice
against them, and the input-tax-credit split by place of supply."""

from __future__ import annotations

import pytest

from core.books.gst import Invoice, parse_invoice_csv, tie_out
from core.dataset import Dataset
from core.errors import InputError
from core.pipeline import load_folder
from tests.conftest import SPEC_EXAMPLE


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    return load_folder(SPEC_EXAMPLE / "dataset").dataset


def test_invoice_equal_to_the_payment_basis_ties_out_and_splits_cgst_sgst_within_karnataka(
    dataset: Dataset,
) -> None:
    base = tie_out(dataset, "2026-06")
    assert base.payment_fees > 0 and base.payment_gst > 0
    half = base.payment_gst // 2
    invoice = Invoice("2026-06", base.payment_fees, cgst=half, sgst=base.payment_gst - half)
    result = tie_out(dataset, "2026-06", invoice, merchant_state="karnataka")
    assert (result.invoice_fee_difference, result.invoice_gst_difference) == (0, 0)
    assert result.itc_kind == "CGST+SGST" and not result.itc_mismatch
    assert sum(a for _, a in result.itc) == base.payment_gst


def test_an_invoice_over_the_payment_basis_shows_the_difference_and_igst_outside_the_state(
    dataset: Dataset,
) -> None:
    base = tie_out(dataset, "2026-06")
    invoice = Invoice("2026-06", base.payment_fees + 10_000, cgst=900, sgst=900)
    result = tie_out(dataset, "2026-06", invoice, merchant_state="Maharashtra")
    assert result.invoice_fee_difference == 10_000
    assert result.invoice_gst_difference == 1_800 - base.payment_gst
    assert result.itc == (("IGST", 1_800),)
    assert result.itc_mismatch  # Karnataka to Maharashtra is IGST, the invoice says CGST+SGST


def test_the_two_bases_differ_by_timing_other_rows_and_row_differences_with_nothing_unexplained(
    dataset: Dataset,
) -> None:
    for month in ("2026-05", "2026-06"):
        t = tie_out(dataset, month)
        assert (t.unexplained_fees, t.unexplained_gst) == (0, 0)
        assert t.payment_fees - t.settlement_fees == (
            t.timing_fees - t.other_rows_fees - t.row_fee_differences
        )
        assert t.payment_gst - t.settlement_gst == (
            t.timing_gst - t.other_rows_gst - t.row_gst_differences
        )
    # The spec example's June settles May's late payments: a named timing line.
    assert tie_out(dataset, "2026-06").settled_from_other_months_fees > 0


def test_invoice_csv_is_read_in_exact_rupees() -> None:
    text = 'component,amount\nTaxable value,"1,23,456.78"\nIGST,22222.22\n'
    invoice = parse_invoice_csv("2026-06", text)
    assert (invoice.taxable_value, invoice.igst, invoice.gst) == (12345678, 2222222, 2222222)
    with pytest.raises(InputError, match="no taxable_value line"):
        parse_invoice_csv("2026-06", "igst,1.00\n")
