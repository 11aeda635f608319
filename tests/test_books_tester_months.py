"""The Books on two months an independent tester wrote by hand from Razorpay's documentation
(tests/fixtures/books/tester_months, their arithmetic in expected.md there): the
roll-forward closes to what they computed with residual 0 and no instant advance left, the
journal balances voucher by voucher, books the instant settlements, leaves the payment
settled by a bank out and takes the foreign payment at its INR amount, and its receivable
is the tester's figure on the journal's own (gross) basis."""

from __future__ import annotations

import pytest

from core.books.gst import gst_bases
from core.books.journal import month_vouchers
from core.books.rollforward import exception_entities, ledger_events, month_rollforward
from core.engine import EngineParams
from core.engine.reconcile import reconcile
from core.pipeline import load_folder
from tests.books_money_support import NOV, balances
from tests.conftest import FIXTURES
from tests.engine_support import ts

MONTHS = FIXTURES / "books" / "tester_months"
AS_OF = ts("2026-12-02T23:59:59")

# variant -> (roll-forward closing, journal receivable, Sales, Bank), paise.
# Month 1: closing = pay_NOV13Pend0013 unsettled, net ₹1,464.60 (gross ₹1,500.00 in the
# journal); captured ₹1,32,147.20 without the payment settled by HDFC Bank; Bank = the ten
# settlements (₹1,10,824.18) and the instant settlement's IMPS credit ₹9,964.60.
# Month 2: closing = −₹1,000.00 (pay_L10, paid for a payment held as authorized, under
# review); captured ₹79,000.00 with the EUR payment's ₹9,000.00; Bank = the settlements
# (₹58,405.80) and the instant payout's ₹4,982.30.
FIGURES = {
    "api": (146_460, 150_000, 13_214_720, 11_082_418 + 996_460),
    "dashboard": (146_460, 150_000, 13_214_720, 11_082_418 + 996_460),
    "life_api": (-100_000, -100_000, 7_900_000, 5_840_580 + 498_230),
    "life_dashboard": (-100_000, -100_000, 7_900_000, 5_840_580 + 498_230),
}


@pytest.mark.parametrize("variant", sorted(FIGURES))
def test_the_testers_months_close_and_journal_to_their_hand_figures(variant: str) -> None:
    closing, receivable, sales, bank = FIGURES[variant]
    dataset = load_folder(MONTHS / variant).dataset
    outcomes = reconcile(dataset, EngineParams(), AS_OF)
    events = ledger_events(dataset, exception_entities(outcomes))
    for month in (NOV, "2026-12"):
        books = month_rollforward(events, month)
        assert books.closing == closing
        assert books.residual == 0
        assert dict(books.open_items)["instant_advances"] == 0
    ledgers = balances(month_vouchers(dataset, NOV))
    assert ledgers["Razorpay receivable"] == receivable
    assert ledgers["Sales (Razorpay collections)"] == -sales
    assert ledgers["Bank"] == bank
    assert "Razorpay adjustments" not in ledgers or variant in ("api", "dashboard")
    # Only lost disputes are an expense: month 1 disp_NOV07Lost001 ₹4,000 (the won one was
    # debited and reversed); month 2 disp_L03Lost00001 ₹2,000, while the open (₹5,000), under
    # review (₹3,000) and won-but-not-reversed (₹4,000) debits are owed back.
    lost, pending = (400_000, 0) if variant in ("api", "dashboard") else (200_000, 1_200_000)
    assert ledgers["Chargebacks"] == lost
    assert ledgers.get("Disputed amounts (pending outcome)", 0) == pending
    if variant in ("api", "dashboard"):
        # ₹150.00 of adjustments +₹150.00 −₹75.00 are the tester's own (S7), not a draw.
        assert ledgers["Razorpay adjustments"] == -7_500
        bases = gst_bases(dataset, NOV)
        # pay_NOV13Pend0013 alone is captured and not settled yet: ₹30.00 + ₹5.40 GST.
        assert (bases.captured_not_settled_fees, bases.captured_not_settled_gst) == (3_000, 540)
        # pay_NOV10Direct10, settled by HDFC Bank: ₹160.00 + ₹28.80 on a line of its own.
        assert (bases.settled_elsewhere_fees, bases.settled_elsewhere_gst) == (16_000, 2_880)
        assert (bases.unexplained_fees, bases.unexplained_gst) == (0, 0)
