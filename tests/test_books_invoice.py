"""Razorpay's monthly tax invoice (core.books.gst): read from CSV fail-closed with the file,
line and column of every problem, and explained against the two bases as timing (fees
captured in one month and settled in the next) or a real difference."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.books.gst import Invoice, parse_invoice_bytes, parse_invoice_file, tie_out
from core.dataset import PAYMENT_COLUMNS, RECON_COLUMNS, SETTLEMENT_COLUMNS, Dataset
from core.errors import InputError
from tests.engine_support import ts

GOLDEN = Path(__file__).parent / "fixtures" / "books" / "tax_invoice_2026-06.csv"


def test_the_golden_invoice_csv_is_read_in_exact_paise() -> None:
    invoice = parse_invoice_file(GOLDEN, "2026-06")
    assert invoice == Invoice("2026-06", 12_345_678, igst=0, cgst=1_111_111, sgst=1_111_111)
    assert invoice.gst == 2_222_222


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("component,amount\ntaxable_value,12.345\n", "tax_invoice.csv:2:2:"),
        ("taxable_value,10.00\nservice_fee,1.00\n", "tax_invoice.csv:2:1:"),
        ("taxable_value,10.00\ncgst,1.00,extra\n", "tax_invoice.csv:2:3:"),
        ("taxable_value,10.00\n\nTaxable Value,11.00\n", "tax_invoice.csv:3:1:"),
        ("month,2026-05\ntaxable_value,10.00\n", "tax_invoice.csv:1:2:"),
        ("cgst,-1.00\ntaxable_value,10.00\n", "tax_invoice.csv:1:2:"),
    ],
)
def test_a_bad_invoice_csv_is_refused_naming_file_line_and_column(text: str, where: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_invoice_bytes("tax_invoice.csv", text.encode(), "2026-06")
    assert str(caught.value).startswith(where), str(caught.value)


def test_an_invoice_without_a_taxable_value_or_not_utf8_is_refused() -> None:
    with pytest.raises(InputError, match="no taxable_value line"):
        parse_invoice_bytes("inv.csv", b"cgst,1.00\n", "2026-06")
    with pytest.raises(InputError, match=r"inv\.csv:2:6: not UTF-8"):
        parse_invoice_bytes("inv.csv", b"taxable_value,1.00\ncgst,\xff\n", "2026-06")


def _month_end_dataset() -> Dataset:
    """Two payments captured in May: one settled in May, one on 1 June with a June
    payment; a June refund settled in June; and a June payment not yet settled."""
    payments = pd.DataFrame(
        [
            ("pay_may_a", 100_000, ts("2026-05-10T10:00"), 2_006, 306),
            ("pay_may_b", 200_000, ts("2026-05-31T22:00"), 4_012, 612),
            ("pay_jun_a", 300_000, ts("2026-06-02T10:00"), 6_018, 918),
            ("pay_jun_b", 50_000, ts("2026-06-20T10:00"), 1_003, 153),
        ],
        columns=["id", "amount", "created_at", "fee", "tax"],
    )
    payments = payments.assign(
        currency="INR",
        status="captured",
        captured=True,
        method="card",
        amount_refunded=0,
        international=False,
    ).reindex(columns=list(PAYMENT_COLUMNS))
    settlements = pd.DataFrame(
        [
            ("setl_may", 100_000 - 2_006, "processed", ts("2026-05-12T10:00")),
            ("setl_jun", 200_000 - 4_012 + 300_000 - 6_018, "processed", ts("2026-06-04T10:00")),
        ],
        columns=["id", "amount", "status", "created_at"],
    ).reindex(columns=list(SETTLEMENT_COLUMNS))
    recon = pd.DataFrame(
        [
            ("r1", "pay_may_a", "payment", 100_000, 2_006, 306, ts("2026-05-10T10:00"), "setl_may"),
            ("r2", "pay_may_b", "payment", 200_000, 4_012, 612, ts("2026-05-31T22:00"), "setl_jun"),
            ("r3", "pay_jun_a", "payment", 300_000, 6_018, 918, ts("2026-06-02T10:00"), "setl_jun"),
        ],
        columns=[
            "row_key",
            "entity_id",
            "type",
            "amount",
            "fee",
            "tax",
            "created_at",
            "settlement_id",
        ],
    )
    recon = recon.assign(
        debit=0,
        credit=recon["amount"] - recon["fee"],
        currency="INR",
        on_hold=False,
        settled=True,
    ).reindex(columns=list(RECON_COLUMNS))
    return Dataset(
        payments=payments.astype(PAYMENT_COLUMNS),
        settlements=settlements.astype(SETTLEMENT_COLUMNS),
        recon=recon.astype(RECON_COLUMNS),
    )


def test_fees_captured_in_may_and_settled_in_june_are_a_named_timing_line() -> None:
    data = _month_end_dataset()
    may = tie_out(data, "2026-05")
    # By payment: both May payments; by settlement: only pay_may_a's row (setl_may).
    assert (may.payment_fees, may.settlement_fees) == (1_700 + 3_400, 1_700)
    assert (may.captured_not_settled_fees, may.captured_not_settled_gst) == (3_400, 612)
    assert may.settled_from_other_months_fees == 0
    assert (may.timing_fees, may.unexplained_fees, may.unexplained_gst) == (3_400, 0, 0)
    june = tie_out(data, "2026-06")
    # June settles pay_may_b (earlier month) and pay_jun_a; pay_jun_b is not settled yet.
    assert (june.settled_from_other_months_fees, june.settled_from_other_months_gst) == (
        3_400,
        612,
    )
    assert june.captured_not_settled_fees == 850
    assert june.timing_fees == 850 - 3_400
    assert june.payment_fees - june.settlement_fees == june.timing_fees
    assert (june.unexplained_fees, june.unexplained_gst) == (0, 0)


def test_an_invoice_is_explained_as_timing_or_as_a_real_difference() -> None:
    data = _month_end_dataset()
    may = tie_out(data, "2026-05")
    by_settlement = Invoice("2026-05", may.settlement_fees, cgst=153, sgst=153)
    timing = tie_out(data, "2026-05", by_settlement)
    assert timing.invoice_basis == "settlement"
    assert (timing.invoice_timing_fees, timing.invoice_timing_gst) == (-3_400, -612)
    assert (timing.invoice_real_fees, timing.invoice_real_gst) == (0, 0)
    over = Invoice("2026-05", may.payment_fees + 12_500, cgst=459 + 1_125, sgst=459 + 1_125)
    real = tie_out(data, "2026-05", over)
    assert real.invoice_basis is None
    assert (real.invoice_real_fees, real.invoice_real_gst) == (12_500, 2_250)
    assert real.invoice_timing_fees == 0
    exact = tie_out(data, "2026-05", Invoice("2026-05", may.payment_fees, cgst=459, sgst=459))
    assert exact.invoice_basis == "payment"
    assert (exact.invoice_real_fees, exact.invoice_timing_fees) == (0, 0)
