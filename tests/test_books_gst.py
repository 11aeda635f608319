"""GST on fees (core.books.gst): the month by payment and by settlement, Razorpay's invoice
against them, and the input-tax-credit split by place of supply."""

from __future__ import annotations

import dataclasses

import pytest

from core.books.gst import (
    GstBases,
    GstTieOut,
    Invoice,
    apply_invoice,
    gst_bases,
    parse_invoice_csv,
    tie_out,
)
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


# The spec example's figures as the whole tie_out computed them before it was split into
# gst_bases (reads the dataset) and apply_invoice (pure), at commit 0e8ba25:
# (payment, settlement, captured-not-settled, settled-from-other-months, other rows,
# row differences) as (fees, GST) pairs, then timing (fees, GST).
BEFORE_SPLIT = {
    "2026-05": (
        (48225609, 8680610),
        (29194854, 5255075),
        (19779744, 3560353),
        (296503, 53371),
        (0, 0),
        (452486, 81447),
        (19483241, 3506982),
    ),
    "2026-06": (
        (115163583, 20729448),
        (109521918, 19713947),
        (27558911, 4960603),
        (21149479, 3806904),
        (335136, 60324),
        (432631, 77874),
        (6409432, 1153699),
    ),
}


def _expected(month: str) -> GstTieOut:
    """The tie-out without an invoice, Karnataka to Karnataka, from BEFORE_SPLIT."""
    pay, setl, later, earlier, other, rows, timing = BEFORE_SPLIT[month]
    return GstTieOut(
        month=month,
        payment_fees=pay[0],
        payment_gst=pay[1],
        settlement_fees=setl[0],
        settlement_gst=setl[1],
        timing_fees=timing[0],
        timing_gst=timing[1],
        captured_not_settled_fees=later[0],
        captured_not_settled_gst=later[1],
        settled_from_other_months_fees=earlier[0],
        settled_from_other_months_gst=earlier[1],
        other_rows_fees=other[0],
        other_rows_gst=other[1],
        row_fee_differences=rows[0],
        row_gst_differences=rows[1],
        unexplained_fees=0,
        unexplained_gst=0,
        invoice=None,
        invoice_fee_difference=None,
        invoice_gst_difference=None,
        invoice_basis=None,
        invoice_timing_fees=0,
        invoice_timing_gst=0,
        invoice_real_fees=0,
        invoice_real_gst=0,
        itc=(("CGST", pay[1] // 2), ("SGST", pay[1] - pay[1] // 2)),
        itc_kind="CGST+SGST",
        itc_mismatch=False,
    )


def test_the_bases_read_once_explain_any_invoice_as_the_whole_tie_out_did(
    dataset: Dataset,
) -> None:
    for month in BEFORE_SPLIT:
        bases = gst_bases(dataset, month)
        assert isinstance(bases, GstBases) and bases.month == month
        plain = _expected(month)
        pay, setl = (
            (plain.payment_fees, plain.payment_gst),
            (
                plain.settlement_fees,
                plain.settlement_gst,
            ),
        )
        half = pay[1] // 2
        exact = Invoice(month, pay[0], cgst=half, sgst=pay[1] - half)
        by_settlement = Invoice(month, setl[0], igst=setl[1])
        over = Invoice(month, pay[0] + 12_500, igst=pay[1] + 2_250)
        cases = [
            ("Karnataka", None, plain),
            (
                "karnataka ",
                exact,
                dataclasses.replace(
                    plain,
                    invoice=exact,
                    invoice_fee_difference=0,
                    invoice_gst_difference=0,
                    invoice_basis="payment",
                ),
            ),
            (
                "Karnataka",
                by_settlement,
                dataclasses.replace(
                    plain,
                    invoice=by_settlement,
                    invoice_fee_difference=setl[0] - pay[0],
                    invoice_gst_difference=setl[1] - pay[1],
                    invoice_basis="settlement",
                    invoice_timing_fees=setl[0] - pay[0],
                    invoice_timing_gst=setl[1] - pay[1],
                    itc=(("CGST", setl[1] // 2), ("SGST", setl[1] - setl[1] // 2)),
                    itc_mismatch=True,  # IGST on an invoice within the state
                ),
            ),
            (
                "Maharashtra",
                over,
                dataclasses.replace(
                    plain,
                    invoice=over,
                    invoice_fee_difference=12_500,
                    invoice_gst_difference=2_250,
                    invoice_real_fees=12_500,
                    invoice_real_gst=2_250,
                    itc=(("IGST", pay[1] + 2_250),),
                    itc_kind="IGST",
                ),
            ),
        ]
        for state, invoice, expected in cases:
            assert apply_invoice(bases, invoice, merchant_state=state) == expected
            assert tie_out(dataset, month, invoice, merchant_state=state) == expected


def _october(**changes: int) -> GstBases:
    """An independent tester's October: 20 payments and refunds, each with its fee's 18%
    GST rounded to the paisa, adding to ₹170.41 on fees of ₹946.83 (18% of the total is
    ₹170.43); its settlements carried ₹736.25 of fees and ₹132.51 of GST over 14 rows."""
    fields = {
        "month": "2026-10",
        "payment_fees": 94_683,
        "payment_gst": 17_041,
        "settlement_fees": 73_625,
        "settlement_gst": 13_251,
        "captured_not_settled_fees": 21_058,
        "captured_not_settled_gst": 3_790,
        "settled_from_other_months_fees": 0,
        "settled_from_other_months_gst": 0,
        "other_rows_fees": 0,
        "other_rows_gst": 0,
        "row_fee_differences": 0,
        "row_gst_differences": 0,
        "payment_items": 20,
        "settlement_items": 14,
    }
    return GstBases(**{**fields, **changes})  # type: ignore[arg-type]


def test_an_invoice_with_gst_on_its_total_ties_out_with_the_rounding_named() -> None:
    result = apply_invoice(_october(), Invoice("2026-10", 94_683, igst=17_043))
    assert result.invoice_basis == "payment"
    assert result.invoice_rounding_gst == 2
    assert (result.invoice_real_fees, result.invoice_real_gst) == (0, 0)


def test_an_invoice_at_the_settlement_basis_with_gst_on_its_total_is_timing_and_rounding() -> None:
    # 18% of ₹736.25 is ₹132.525, rounded half up to ₹132.53: 2 paise over the rows' ₹132.51.
    result = apply_invoice(_october(), Invoice("2026-10", 73_625, igst=13_253))
    assert result.invoice_basis == "settlement"
    assert result.invoice_rounding_gst == 2
    assert (result.invoice_timing_fees, result.invoice_timing_gst) == (-21_058, -3_790)
    assert (result.invoice_real_fees, result.invoice_real_gst) == (0, 0)


@pytest.mark.parametrize(
    ("gst", "items"),
    [
        (17_044, 20),  # not 18% of the invoice's total: the invoice says something else
        (17_043, 2),  # 2 paise over two items is more than rounding each can give
    ],
)
def test_a_gst_gap_that_rounding_cannot_explain_stays_a_real_difference(
    gst: int, items: int
) -> None:
    result = apply_invoice(_october(payment_items=items), Invoice("2026-10", 94_683, igst=gst))
    assert result.invoice_basis is None
    assert result.invoice_rounding_gst == 0
    assert (result.invoice_real_fees, result.invoice_real_gst) == (0, gst - 17_041)


def test_the_bases_count_the_items_their_gst_adds_up(dataset: Dataset) -> None:
    bases = gst_bases(dataset, "2026-06")
    assert bases.payment_items > 0 and bases.settlement_items > 0
