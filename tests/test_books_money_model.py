"""The Books (roll-forward, journal, GST tie-out) on Razorpay's money model beyond the spec:
instant settlements and the regular settlement's draw of one, payments settled by a bank,
payments in another currency without `base_amount`, deduct-at-onset disputes. Each case is
a small hand-built month (tests/books_money_support.py); the journal balances to the paisa
and the roll-forward closes to its open items with residual 0 in every one."""

from __future__ import annotations

from tests.books_money_support import (
    dataset,
    instant,
    november,
    pay_row,
    payment,
    payout,
    row,
    settlement,
)

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
