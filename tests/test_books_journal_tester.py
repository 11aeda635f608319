"""The journal on an independent tester's July 2026 marketplace month (REPORT finding 7): a
transfer reversal row typed `adjustment` that the reversals file ties to its transfer posts
to Route transfers, and a month with no captures has no (empty) captured voucher."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from core.books.journal import month_vouchers, tally_xml
from tests.books_money_support import balances, dataset, settlement
from tests.test_books_transfers_disputes import REVERSED, TRF, TRF_ROW

# The tester's July and its reversal typed `adjustment` that the reversals file ties to its
# transfer (finding 7), as tests/test_books_transfers_disputes.py has them.
JUL, AUG = "2026-07", "2026-08"


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
