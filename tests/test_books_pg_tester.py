"""The Books on an independent tester's July 2026 month on PostgreSQL (pgteam REPORT,
findings 2, 3, 8 and 11), each as a small hand-made month: a payment a bank settled
directly whose recon row names no settlement stays out of the receivable; an instant
settlement's fee is booked once in the journal, not again through its draw row."""

from __future__ import annotations

import pandas as pd

from core.books.carry import _difference, ledger_change
from core.books.journal import captured_voucher, fee_timing, month_vouchers, receivable_tie
from core.books.ledger import partial_sums
from core.books.rollforward import MonthRollForward, ledger_events, month_rollforward
from core.dataset import Dataset
from core.engine.incremental import merge_rows
from tests.books_money_support import (
    balances,
    dataset,
    instant,
    pay_row,
    payment,
    payout,
    row,
    settlement,
)
from tests.engine_support import ts

JUL = "2026-07"


def _month(
    data: Dataset, month: str = JUL, flagged: frozenset[tuple[str, str]] = frozenset()
) -> MonthRollForward:
    out = month_rollforward(ledger_events(data, flagged), month)
    assert out.opening + sum(a for _, a in out.movements) == out.closing
    assert out.closing == sum(a for _, a in out.open_items) + out.residual
    return out


# Finding 2. P23 (₹3,400, netbanking) is "Settled By: Axis Bank": the bank paid it to the
# merchant directly; its combined-recon row has no `setl_` id (settled_by Axis Bank). Beside
# it P16 (₹2,685.10 + fee ₹63.37), settled by Razorpay and not settled yet.
DIRECT = payment("pay_P23", 340_000, "2026-07-27T10:00", 8_024, 1_224, settled_by="Axis Bank")
DIRECT_ROW = {
    **row("r23", "pay_P23", "payment", None, "2026-07-27T10:00", amount=340_000, credit=340_000),
    "settled_by": "Axis Bank",
}
OWED = payment("pay_P16", 268_510, "2026-07-20T10:00", 6_337, 967)
BY_BANK = dataset(payments=[DIRECT, OWED], recon=[DIRECT_ROW])


def test_a_payment_a_bank_settled_with_a_row_naming_no_settlement_is_not_owed_by_razorpay() -> None:
    july = _month(BY_BANK)
    assert dict(july.movements)["captured"] == 268_510
    assert dict(july.open_items)["unsettled_payments"] == 268_510 - 6_337
    assert july.closing == 268_510 - 6_337 and july.residual == 0


def test_the_captured_voucher_leaves_out_a_payment_a_bank_settled_with_an_unsettled_row() -> None:
    voucher = captured_voucher(BY_BANK, JUL)
    assert voucher.lines[0].debit == 268_510
    assert voucher.lines[0].source_rows == ("pay_P16",)
    assert "(1 payments)" in voucher.narration
    assert balances(month_vouchers(BY_BANK, JUL))["Razorpay receivable"] == 268_510


def test_a_payment_marked_settled_by_a_bank_that_a_razorpay_settlement_carried_stays_in() -> None:
    # A recon row naming a settlement of Razorpay's: Razorpay did settle it, whatever the
    # payment's Settled By says, so it passes through the balance (and closes by its row).
    carried = pay_row("r23", "pay_P23", 340_000, "setl_J28", "2026-07-27T10:00", 8_024, 1_224)
    data = dataset(
        payments=[DIRECT],
        recon=[carried],
        settlements=[settlement("setl_J28", 340_000 - 8_024, "2026-07-28T11:00")],
    )
    july = _month(data)
    assert dict(july.movements)["captured"] == 340_000
    assert july.closing == 0 and july.residual == 0
    assert captured_voucher(data, JUL).lines[0].debit == 340_000


def test_a_refund_a_bank_settled_with_a_recon_row_naming_no_settlement_is_not_taken() -> None:
    direct_refund = {
        "id": "rfnd_R23",
        "payment_id": "pay_P23",
        "amount": 40_000,
        "currency": "INR",
        "status": "processed",
        "created_at": ts("2026-07-29T10:00"),
        "settled_by": "Axis Bank",
    }
    refund_row = row("rr23", "rfnd_R23", "refund", None, "2026-07-29T10:00", amount=40_000)
    data = dataset(
        payments=[DIRECT, OWED],
        recon=[DIRECT_ROW, {**refund_row, "debit": 40_000}],
        refunds=[direct_refund],
    )
    july = _month(data)
    assert dict(july.movements)["refunds"] == 0
    assert july.closing == 268_510 - 6_337 and july.residual == 0


def test_a_day_carrying_a_bank_settled_payments_row_then_its_razorpay_settlement_is_exact() -> None:
    # import-day's carry derives the same set: the day bringing P23's row without a
    # settlement changes nothing; a later day whose row names a settlement brings it in.
    no_flags: frozenset[tuple[str, str]] = frozenset()
    before = dataset(payments=[DIRECT, OWED])
    for day in (
        dataset(recon=[DIRECT_ROW]),
        dataset(
            recon=[pay_row("r23b", "pay_P23", 340_000, "setl_J29", "2026-07-29T10:00", 8_024)],
            settlements=[settlement("setl_J29", 340_000 - 8_024, "2026-07-29T11:00")],
        ),
    ):
        after, _ = merge_rows(before, day)
        change = ledger_change(before, after, day, no_flags, no_flags)
        whole = _difference(partial_sums(ledger_events(after)), partial_sums(ledger_events(before)))
        for name in ("days", "unexplained"):
            mine, theirs = getattr(change.sums, name), getattr(whole, name)
            keys = [c for c in theirs.columns if c not in ("amount", "events")]
            pd.testing.assert_frame_equal(
                mine.sort_values(keys, ignore_index=True),
                theirs.sort_values(keys, ignore_index=True),
                check_dtype=False,
                check_categorical=False,
            )
        before = after
    assert dict(_month(before).movements)["captured"] == 268_510 + 340_000


# Finding 3 (SC3 of tests/fixtures/real_exports/SCENARIOS.md, a layout marked a guess): an
# instant settlement of ₹2,000 on 13 Jul (fees ₹5.90 incl. ₹0.90 GST, ₹1,994.10 by IMPS);
# the regular settlement S05 of 15 Jul carries P13 and P14 and the `settlement.ondemand`
# draw row (debit ₹2,000.00, its fee field ₹5.90 with tax ₹0.90: the instant settlement's
# fee, already inside the debit), and pays ₹11,181.40.
P13 = payment("pay_P13", 900_000, "2026-07-13T09:10", 21_240, 3_240)
P14 = payment("pay_P14", 450_000, "2026-07-13T10:25", 10_620, 1_620)
DRAW_ROW = row(
    "r_draw",
    "setlod_N1",
    "adjustment",
    "setl_S05",
    "2026-07-13T15:00",
    amount=200_000,
    debit=200_000,
    fee=590,
    tax=90,
)
INSTANT_DRAWN = dataset(
    payments=[P13, P14],
    recon=[
        pay_row("r13", "pay_P13", 900_000, "setl_S05", "2026-07-13T09:10", 21_240, 3_240),
        pay_row("r14", "pay_P14", 450_000, "setl_S05", "2026-07-13T10:25", 10_620, 1_620),
        DRAW_ROW,
    ],
    settlements=[settlement("setl_S05", 878_760 + 439_380 - 200_000, "2026-07-15T10:00")],
    instant=[instant("setlod_N1", 200_000, "2026-07-13T15:00")],
    payouts=[payout("setlodp_N1", "setlod_N1", 200_000, 590, 90, "2026-07-13T15:00")],
)


def test_the_instant_settlement_fee_on_its_draw_row_is_not_booked_a_second_time() -> None:
    vouchers = {v.number: v for v in month_vouchers(INSTANT_DRAWN, JUL)}
    own = {(x.ledger, x.debit, x.credit) for x in vouchers["RZP-setlod_N1"].lines}
    assert ("Payment gateway charges", 500, 0) in own and ("GST input credit", 90, 0) in own
    regular = {(x.ledger, x.debit, x.credit) for x in vouchers["RZP-setl_S05"].lines}
    # P13 and P14's charges alone (₹270.00 + ₹48.60); the draw recovers the advance.
    assert ("Payment gateway charges", 27_000, 0) in regular
    assert ("GST input credit", 4_860, 0) in regular
    assert ("Razorpay receivable", 200_000, 0) in regular
    assert not any(x.ledger == "Razorpay suspense" for x in vouchers["RZP-setl_S05"].lines)
    ledgers = balances(list(vouchers.values()))
    # Charges + GST are what was charged (₹318.60 + ₹5.90), as the roll-forward's fees.
    assert ledgers["Payment gateway charges"] + ledgers["GST input credit"] == 31_860 + 590
    assert "Razorpay suspense" not in ledgers and "Razorpay receivable" not in ledgers
    july = _month(INSTANT_DRAWN)
    assert dict(july.movements)["fees"] == -(31_860 + 590)
    assert july.closing == 0 and july.residual == 0


# Finding 11 (second bullet): the journal's receivable holds payments gross until their
# settlement charges the fee; the roll-forward takes the fee off at capture. July: P13 and
# P14 settled (S05, with the instant settlement's draw), P16 captured and not settled.
WITH_OPEN = dataset(
    payments=[P13, P14, OWED],
    recon=list(INSTANT_DRAWN.recon.to_dict("records")),
    settlements=list(INSTANT_DRAWN.settlements.to_dict("records")),
    instant=list(INSTANT_DRAWN.instant_settlements.to_dict("records")),
    payouts=list(INSTANT_DRAWN.instant_payouts.to_dict("records")),
)


def test_the_close_report_names_the_fees_between_the_journal_and_the_rollforward() -> None:
    july = _month(WITH_OPEN)
    assert july.closing == 268_510 - 6_337
    vouchers = month_vouchers(WITH_OPEN, JUL)
    assert balances(vouchers)["Razorpay receivable"] == 268_510
    tie = dict(receivable_tie(vouchers, july.closing - july.opening, fee_timing(WITH_OPEN, JUL)))
    assert tie["difference"] == 6_337
    assert tie["fees_of_payments_not_yet_settled"] == 6_337
    assert tie["fees_charged_for_earlier_payments"] == 0
    assert tie["other_timing"] == 0
    # August: P16 settles; its fee, taken off in July by the roll-forward, is charged now.
    august = dataset(
        payments=[],
        recon=[pay_row("r16", "pay_P16", 268_510, "setl_A02", "2026-07-20T10:00", 6_337, 967)],
        settlements=[settlement("setl_A02", 268_510 - 6_337, "2026-08-02T10:00")],
    )
    vouchers = month_vouchers(august, "2026-08")
    tie = dict(receivable_tie(vouchers, -(268_510 - 6_337), fee_timing(august, "2026-08")))
    assert tie["difference"] == -6_337
    assert tie["fees_charged_for_earlier_payments"] == -6_337
    assert tie["other_timing"] == 0
