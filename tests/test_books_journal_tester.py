"""The journal on an independent tester's July 2026 marketplace month (REPORT finding 7): a
transfer reversal row typed `adjustment` that the reversals file ties to its transfer posts
to Route transfers, and a month with no captures has no (empty) captured voucher."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from core.books.journal import month_vouchers, tally_xml
from tests.books_money_support import balances, dataset, row, settlement
from tests.test_books_transfers_disputes import PAY, PAY_ROW, TRF, TRF_ROW

# The tester's July: payment, transfer, rows (tests/test_books_transfers_disputes.py).
JUL, AUG = "2026-07", "2026-08"


# Finding 7: a transfer reversal typed `adjustment` (the recon API has no `reversal` type)
# that the reversals file ties to its transfer (`transfer_id`).
REVERSED = dataset(
    payments=[PAY],
    recon=[
        PAY_ROW,
        row(
            "rv",
            "rvrsl_V",
            "adjustment",
            "setl_J31",
            "2026-07-30T12:00",
            amount=200_000,
            credit=200_000,
            transfer_id="trf_B",
        ),
    ],
    settlements=[settlement("setl_J31", 2_200_000, "2026-07-31T11:00")],
)


def test_an_adjustment_row_tied_to_a_transfer_posts_to_route_transfers() -> None:
    ledgers = balances(month_vouchers(REVERSED, JUL))
    assert ledgers.get("Route transfers") == -200_000
    assert "Razorpay adjustments" not in ledgers


def test_a_month_with_no_captures_has_no_empty_captured_voucher() -> None:
    august = dataset(
        recon=[TRF_ROW],
        settlements=[settlement("setl_A03", -802_360, "2026-08-03T11:00")],
        transfers=[TRF],
    )
    vouchers = month_vouchers(august, AUG)
    assert [v.number for v in vouchers] == ["RZP-setl_A03"]
    amounts = [a.text for a in ET.fromstring(tally_xml(vouchers)).iter("AMOUNT")]
    assert "0.00" not in amounts and "-0.00" not in amounts
