"""The Books (roll-forward, journal, GST tie-out) on Razorpay's money model beyond the spec:
instant settlements and the regular settlement's draw of one, payments settled by a bank,
payments in another currency without `base_amount`, deduct-at-onset disputes. Each case is
a small hand-built month (tests/books_money_support.py); the journal balances to the paisa
and the roll-forward closes to its open items with residual 0 in every one."""

from __future__ import annotations

import pandas as pd

from core.books.gst import gst_bases
from core.books.journal import bank_credits, month_vouchers
from core.books.rollforward import ledger_events, month_rollforward
from tests.books_money_support import (
    NOV,
    balances,
    dataset,
    instant,
    november,
    pay_row,
    payment,
    payout,
    refund,
    row,
    settlement,
)
from tests.engine_support import ts

# An instant settlement of ₹10,000 requested on 19 Nov against a ₹10,000 UPI payment of
# 18 Nov: one payout of ₹5,000 processed (fees ₹17.70 incl. ₹2.70 GST, ₹4,982.30 to the
# bank), the other reversed; the regular settlement of 20 Nov carries the payment and a
# ₹5,000 debit drawing the instant settlement back, and pays ₹5,000 (the tester's month 2).
DRAWN = dataset(
    payments=[payment("pay_L09", 1_000_000, "2026-11-18T10:00")],
    recon=[
        pay_row("r1", "pay_L09", 1_000_000, "setl_T4b", "2026-11-18T10:00"),
        row(
            "r2",
            "setlod_I1",
            "adjustment",
            "setl_T4b",
            "2026-11-19T10:00",
            amount=500_000,
            debit=500_000,
        ),
    ],
    settlements=[settlement("setl_T4b", 500_000, "2026-11-20T11:00")],
    instant=[instant("setlod_I1", 1_000_000, "2026-11-19T10:00")],
    payouts=[
        payout("setlodp_1", "setlod_I1", 500_000, 1_770, 270, "2026-11-19T10:01"),
        payout("setlodp_2", "setlod_I1", 500_000, 0, 0, "2026-11-19T12:00", status="reversed"),
    ],
)


def test_an_instant_settlement_drawn_by_the_next_settlement_leaves_the_balance_once() -> None:
    month = november(DRAWN)
    moves = dict(month.movements)
    # ₹10,000 captured; ₹4,982.30 to the bank early and ₹17.70 fees; ₹5,000 settled.
    assert moves["captured"] == 1_000_000
    assert moves["instant_settlements"] == -498_230
    assert moves["fees"] == -1_770
    assert moves["settlements"] == -500_000
    assert moves["adjustments"] == 0  # the draw is not an adjustment
    assert month.closing == 0
    assert dict(month.open_items)["instant_advances"] == 0  # drawn: no residue
    assert month.residual == 0


def test_the_journal_books_the_instant_payout_and_the_draw_recovers_it_not_an_expense() -> None:
    vouchers = month_vouchers(DRAWN, NOV)
    by_number = {v.number: v for v in vouchers}
    payout_voucher = by_number["RZP-setlod_I1"]
    assert payout_voucher.kind == "instant_settlement"
    lines = {(x.ledger, x.debit, x.credit) for x in payout_voucher.lines}
    assert lines == {
        ("Razorpay settlements in transit", 498_230, 0),
        ("Payment gateway charges", 1_500, 0),
        ("GST input credit", 270, 0),
        ("Razorpay receivable", 0, 500_000),
    }
    regular = {(x.ledger, x.debit, x.credit) for x in by_number["RZP-setl_T4b"].lines}
    assert ("Razorpay receivable", 500_000, 0) in regular  # the draw, recovered
    assert not any(x.ledger == "Razorpay adjustments" for x in by_number["RZP-setl_T4b"].lines)
    # Paid out ₹4,982.30 + ₹5,000 (in transit: no bank line here); the receivable cleared.
    assert balances(vouchers) == {
        "Sales (Razorpay collections)": -1_000_000,
        "Razorpay settlements in transit": 998_230,
        "Payment gateway charges": 1_500,
        "GST input credit": 270,
    }


# An instant settlement that settles a payment itself (its recon row names the setlod_…):
# ₹10,000 UPI payment, fees ₹35.40 (₹5.40 GST), ₹9,964.60 to the bank (tester's month 1).
SETTLED_BY_INSTANT = dataset(
    payments=[payment("pay_P11", 1_000_000, "2026-11-18T10:00")],
    recon=[pay_row("r11", "pay_P11", 1_000_000, "setlod_I2", "2026-11-18T10:00")],
    instant=[instant("setlod_I2", 1_000_000, "2026-11-19T10:00")],
    payouts=[payout("setlodp_3", "setlod_I2", 1_000_000, 3_540, 540, "2026-11-19T10:01")],
)


def test_an_instant_settlement_credits_the_receivable_with_the_payment_it_settled() -> None:
    vouchers = month_vouchers(SETTLED_BY_INSTANT, NOV)
    assert [v.number for v in vouchers] == ["RZP-CAPTURED-2026-11", "RZP-setlod_I2"]
    lines = {(x.ledger, x.debit, x.credit) for x in vouchers[1].lines}
    assert lines == {
        ("Razorpay settlements in transit", 996_460, 0),
        ("Payment gateway charges", 3_000, 0),
        ("GST input credit", 540, 0),
        ("Razorpay receivable", 0, 1_000_000),
    }
    assert "Razorpay receivable" not in balances(vouchers)
    month = november(SETTLED_BY_INSTANT)
    assert month.closing == 0 and month.residual == 0


# A netbanking payment settled by the merchant's bank, not Razorpay (Settled By "HDFC
# Bank"), beside one settled by Razorpay that is not settled yet.
BY_BANK = dataset(
    payments=[
        payment("pay_P10", 800_000, "2026-11-10T10:00", 18_880, 2_880, settled_by="HDFC Bank"),
        payment("pay_P13", 150_000, "2026-11-30T10:00", 3_540, 540),
    ],
)


def test_a_payment_settled_by_a_bank_is_not_booked_to_the_razorpay_receivable() -> None:
    (captured,) = month_vouchers(BY_BANK, NOV)
    assert captured.lines[0].debit == 150_000
    assert captured.lines[0].source_rows == ("pay_P13",)
    month = november(BY_BANK)
    assert dict(month.movements)["captured"] == captured.lines[0].debit


# A USD payment whose Payments report has no Base Amount: its recon row (in December's
# settlement) gives its INR amount, ₹4,200, as the roll-forward reads it.
NO_BASE = dataset(
    payments=[payment("pay_P4", 5_000, "2026-11-02T10:00", 14_868, 2_268, currency="USD")],
    recon=[pay_row("r4", "pay_P4", 420_000, "setl_S4", "2026-11-02T10:00", 14_868, 2_268)],
    settlements=[settlement("setl_S4", 405_132, "2026-11-11T10:00")],
)


def test_a_payment_in_another_currency_without_base_amount_is_booked_at_its_recon_rows_inr() -> (
    None
):
    vouchers = month_vouchers(NO_BASE, NOV)
    assert vouchers[0].lines[0].debit == 420_000
    assert dict(november(NO_BASE).movements)["captured"] == 420_000
    assert "Razorpay receivable" not in balances(vouchers)


def test_the_gst_tie_out_files_a_payment_settled_by_a_bank_apart_from_timing() -> None:
    bases = gst_bases(BY_BANK, NOV)
    # Both payments were charged a fee (the payment basis: ₹190.00 + ₹34.20). Only pay_P13's
    # ₹30.00 + ₹5.40 is timing (captured, settled later); pay_P10's ₹160.00 + ₹28.80 never
    # reach a Razorpay settlement: their own line, not a timing item that never clears.
    assert (bases.payment_fees, bases.payment_gst) == (19_000, 3_420)
    assert (bases.captured_not_settled_fees, bases.captured_not_settled_gst) == (3_000, 540)
    assert (bases.settled_elsewhere_fees, bases.settled_elsewhere_gst) == (16_000, 2_880)
    assert (bases.unexplained_fees, bases.unexplained_gst) == (0, 0)


def _dispute(did: str, status: str) -> dict[str, object]:
    return {"id": did, "amount": 100_000, "status": status, "created_at": ts("2026-11-05T10:00")}


# Four deduct-at-onset debits of ₹1,000 in one settlement (open, under review, won and lost;
# the won one reversed in the same settlement) and one of a dispute no disputes file names.
DISPUTED = dataset(
    payments=[payment("pay_D", 1_000_000, "2026-11-02T10:00")],
    recon=[
        pay_row("d0", "pay_D", 1_000_000, "setl_D", "2026-11-02T10:00"),
        *(
            row(
                f"d{i}",
                f"adj_{i}",
                "adjustment",
                "setl_D",
                "2026-11-05T10:00",
                amount=100_000,
                debit=100_000,
                dispute_id=f"disp_{i}",
            )
            for i in range(1, 6)
        ),
        row(
            "d6",
            "adj_6",
            "adjustment",
            "setl_D",
            "2026-11-06T10:00",
            amount=100_000,
            credit=100_000,
            dispute_id="disp_3",
        ),
    ],
    settlements=[settlement("setl_D", 600_000, "2026-11-07T10:00")],
    disputes=[
        _dispute("disp_1", "open"),
        _dispute("disp_2", "under_review"),
        _dispute("disp_3", "won"),
        _dispute("disp_4", "lost"),
    ],
)


def test_only_a_lost_or_unknown_disputes_debit_is_a_chargeback_expense() -> None:
    vouchers = month_vouchers(DISPUTED, NOV)
    ledgers = balances(vouchers)
    # Lost (disp_4) and not in the disputes file (disp_5): expense.
    assert ledgers["Chargebacks"] == 200_000
    # Open and under review: owed back pending the outcome; won: debited and reversed.
    assert ledgers["Disputed amounts (pending outcome)"] == 200_000
    lines = {(x.ledger, x.debit, x.credit, x.source_rows) for x in vouchers[1].lines}
    assert ("Disputed amounts (pending outcome)", 300_000, 0, ("d1", "d2", "d3")) in lines
    assert ("Disputed amounts (pending outcome)", 0, 100_000, ("d6",)) in lines
    assert ("Chargebacks", 200_000, 0, ("d4", "d5")) in lines
    month = november(DISPUTED)
    moves = dict(month.movements)
    assert moves["written_off"] == -100_000 and moves["dispute_debits"] == -400_000
    assert month.residual == 0


# Three settlements: one credited in full, one credited 3 paise short, one never credited;
# and the instant payout's IMPS credit (the tester's month 1, setl_NOV13Batch05 and
# setl_NOV25Batch09).
CREDITED = dataset(
    payments=[
        payment("pay_A", 200_000, "2026-11-02T10:00"),
        payment("pay_B", 300_000, "2026-11-03T10:00"),
        payment("pay_C", 400_000, "2026-11-04T10:00"),
    ],
    recon=[
        pay_row("ra", "pay_A", 200_000, "setl_A", "2026-11-02T10:00"),
        pay_row("rb", "pay_B", 300_000, "setl_B", "2026-11-03T10:00"),
        pay_row("rc", "pay_C", 400_000, "setl_C", "2026-11-04T10:00"),
    ],
    settlements=[
        settlement("setl_A", 200_000, "2026-11-04T10:00"),
        settlement("setl_B", 300_000, "2026-11-05T10:00"),
        settlement("setl_C", 400_000, "2026-11-25T10:00"),
    ],
)
OUTCOMES = pd.DataFrame(
    {
        "entity_type": ["bank_entry", "bank_entry", "bank_entry", "settlement"],
        "entity_id": ["stmt.csv:9", "stmt.csv:10", "stmt.csv:11", "setl_C"],
        "settlement_id": ["setl_A", "setl_B", None, "setl_C"],
        "actual_amount": [200_000, 299_997, 123_400, 0],
        "entity_created_at": [ts("2026-11-04"), ts("2026-11-05"), ts("2026-11-06"), None],
    }
)


def test_bank_is_debited_only_with_what_matched_bank_lines_show() -> None:
    credits = bank_credits(OUTCOMES)
    # The unmatched credit (no settlement) and the settlement's own outcome are no bank line.
    assert [(c.line, c.amount, c.settlements) for c in credits] == [
        ("stmt.csv:9", 200_000, ("setl_A",)),
        ("stmt.csv:10", 299_997, ("setl_B",)),
    ]
    vouchers = month_vouchers(CREDITED, NOV, credits=credits)
    bank = [v for v in vouchers if v.kind == "bank"]
    assert [v.number for v in bank] == ["RZP-BANK-stmt.csv:9", "RZP-BANK-stmt.csv:10"]
    ledgers = balances(vouchers)
    assert ledgers["Bank"] == 499_997  # ties to the statement
    # setl_C never credited (₹4,000) and setl_B's 3 paise stay visible in transit.
    assert ledgers["Razorpay settlements in transit"] == 400_003
    assert "Razorpay receivable" not in ledgers


def test_a_refund_that_fails_after_a_settlement_took_it_still_left_the_balance_that_month() -> None:
    """An independent tester's October (rfnd_R6revd): a ₹456.78 refund of 26 Oct is taken
    by the 31 Oct settlement, fails in November and comes back as a ₹456.78 adjustment of
    the 10 Nov settlement. Refunds leave the balance when made (docs/books.md section 1);
    the status it ends in does not give back what the settlement took. Before, October's
    refunds line dropped it once it read `failed`, and November carried ₹456.78 residual."""
    data = dataset(
        payments=[payment("pay_R6", 1_000_000, "2026-10-20T10:00")],
        refunds=[refund("rfnd_R6", "pay_R6", 45_678, "2026-10-26T10:00", status="failed")],
        recon=[
            pay_row("r1", "pay_R6", 1_000_000, "setl_OCT31", "2026-10-20T10:00"),
            row(
                "r2",
                "rfnd_R6",
                "refund",
                "setl_OCT31",
                "2026-10-26T10:00",
                amount=45_678,
                debit=45_678,
            ),
            row(
                "r3",
                "adj_R6back",
                "adjustment",
                "setl_NOV10",
                "2026-11-09T10:00",
                amount=45_678,
                credit=45_678,
            ),
        ],
        settlements=[
            settlement("setl_OCT31", 954_322, "2026-10-31T11:00"),
            settlement("setl_NOV10", 45_678, "2026-11-10T11:00"),
        ],
    )
    events = ledger_events(data)
    october, nov = month_rollforward(events, "2026-10"), november(data)

    assert dict(october.movements)["refunds"] == -45_678
    assert dict(october.movements)["settlements"] == -954_322
    assert (october.closing, october.residual) == (0, 0)
    assert dict(nov.movements)["adjustments"] == 45_678
    assert dict(nov.movements)["settlements"] == -45_678
    assert (nov.opening, nov.closing, nov.residual) == (0, 0, 0)


def test_a_refund_that_failed_before_any_settlement_took_it_never_leaves_the_balance() -> None:
    data = dataset(
        payments=[payment("pay_F", 200_000, "2026-11-02T10:00")],
        refunds=[refund("rfnd_F", "pay_F", 50_000, "2026-11-03T10:00", status="failed")],
        recon=[pay_row("r1", "pay_F", 200_000, "setl_F", "2026-11-02T10:00")],
        settlements=[settlement("setl_F", 200_000, "2026-11-05T11:00")],
    )
    month = november(data)
    assert dict(month.movements)["refunds"] == 0
    assert (month.closing, month.residual) == (0, 0)
