"""The Books on two months an independent tester wrote by hand from Razorpay's documentation
(tests/fixtures/books/tester_months, their arithmetic in expected.md there): the
roll-forward closes to what they computed with residual 0 and no instant advance left, the
journal balances voucher by voucher, books the instant settlements, leaves the payment
settled by a bank out and takes the foreign payment at its INR amount, and its receivable
is the tester's figure on the journal's own (gross) basis."""

from __future__ import annotations

import sqlite3

import pytest

from core.books.close import month_bank_credits, month_journal
from core.books.gst import gst_bases
from core.books.journal import bank_credits, month_vouchers
from core.books.rollforward import exception_entities, ledger_events, month_rollforward
from core.engine import EngineParams
from core.engine.reconcile import reconcile
from core.pipeline import load_folder, reconcile_folder_into_db
from tests.books_money_support import NOV, balances
from tests.conftest import FIXTURES
from tests.engine_support import ts

MONTHS = FIXTURES / "books" / "tester_months"
AS_OF = ts("2026-12-02T23:59:59")

# variant -> (roll-forward closing, journal receivable, Sales, Bank, in transit), paise.
# Month 1: closing = pay_NOV13Pend0013 unsettled, net ₹1,464.60 (gross ₹1,500.00 in the
# journal); captured ₹1,32,147.20 without the payment settled by HDFC Bank; Bank = the bank
# lines matched to the settlements and to the instant settlement's IMPS credit: the ten
# settlements (₹1,10,824.18) and ₹9,964.60, less setl_NOV25Batch09 (₹4,296.16, never
# credited) and setl_NOV13Batch05's 3 paise short, which stay in transit (₹4,296.19).
# Month 2: closing = −₹1,000.00 (pay_L10, paid for a payment held as authorized, under
# review); captured ₹79,000.00 with the EUR payment's ₹9,000.00; Bank = the settlements
# (₹58,405.80) and the instant payout's ₹4,982.30, every one credited: nothing in transit.
FIGURES = {
    "api": (146_460, 150_000, 13_214_720, 11_082_418 + 996_460 - 429_616 - 3, 429_619),
    "dashboard": (146_460, 150_000, 13_214_720, 11_082_418 + 996_460 - 429_616 - 3, 429_619),
    "life_api": (-100_000, -100_000, 7_900_000, 5_840_580 + 498_230, 0),
    "life_dashboard": (-100_000, -100_000, 7_900_000, 5_840_580 + 498_230, 0),
}


@pytest.mark.parametrize("variant", sorted(FIGURES))
def test_the_testers_months_close_and_journal_to_their_hand_figures(variant: str) -> None:
    closing, receivable, sales, bank, transit = FIGURES[variant]
    dataset = load_folder(MONTHS / variant).dataset
    outcomes = reconcile(dataset, EngineParams(), AS_OF)
    events = ledger_events(dataset, exception_entities(outcomes))
    for month in (NOV, "2026-12"):
        books = month_rollforward(events, month)
        assert books.closing == closing
        assert books.residual == 0
        assert dict(books.open_items)["instant_advances"] == 0
    ledgers = balances(month_vouchers(dataset, NOV, credits=bank_credits(outcomes)))
    assert ledgers["Razorpay receivable"] == receivable
    assert ledgers["Sales (Razorpay collections)"] == -sales
    assert ledgers["Bank"] == bank
    assert ledgers.get("Razorpay settlements in transit", 0) == transit
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


def test_the_journal_command_posts_the_bank_lines_the_stored_run_matched(
    db_conn: sqlite3.Connection,
) -> None:
    # Month 1 stored and reconciled: the journal the command, the Journal tab and the close
    # report show (month_journal) debits Bank with the matched lines only.
    reconcile_folder_into_db(db_conn, MONTHS / "api", params=EngineParams(), as_of=AS_OF)
    journal = month_journal(db_conn, NOV)
    bank = [v for v in journal.vouchers if v.kind == "bank"]
    assert len(bank) == 11  # 12 lines have an outcome; the unmatched NEFT credit is no one's
    ledgers = balances(list(journal.vouchers))
    assert ledgers["Bank"] == FIGURES["api"][3]
    assert ledgers["Razorpay settlements in transit"] == 429_619
    # Before a run, nothing counts as received.
    assert month_bank_credits(db_conn, "2026-12") == ()
