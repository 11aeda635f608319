"""The roll-forward takes Route transfers and dispute deductions off the receivable when
Razorpay takes them, not when a settlement's recon row names them (docs/books.md section 1;
an independent tester's July 2026 marketplace month, REPORT finding 1): a transfer at its
created_at, a dispute's `amount_deducted` at its deduction. Their rows, once settled, close
the open item instead of moving the balance again; a reversal row typed `adjustment` that
the reversals file ties to its transfer is on the transfers line."""

from __future__ import annotations

from core.books.carry import _difference, ledger_change
from core.books.ledger import Sums, partial_sums
from core.books.rollforward import MonthRollForward, ledger_events, month_rollforward
from core.dataset import Dataset
from core.engine.incremental import merge_rows
from tests.books_money_support import (
    assert_same_sums,
    dataset,
    dispute,
    pay_row,
    payment,
    row,
    settlement,
    transfer,
)

JUL, AUG = "2026-07", "2026-08"


def _month(
    data: Dataset, month: str, flagged: frozenset[tuple[str, str]] = frozenset()
) -> MonthRollForward:
    out = month_rollforward(ledger_events(data, flagged), month)
    # The identity, exact in paise: opening + movements = closing = open items (+ residual).
    assert out.opening + sum(a for _, a in out.movements) == out.closing
    assert out.closing == sum(a for _, a in out.open_items) + out.residual
    return out


# A ₹20,000 payment of 29 Jul, settled on 31 Jul; a ₹8,000 transfer from it processed on
# 30 Jul whose recon row (fee ₹23.60) arrives in August's first settlement (the tester's
# trf_T0730B).
PAY = payment("pay_A", 2_000_000, "2026-07-29T10:00")
PAY_ROW = pay_row("ra", "pay_A", 2_000_000, "setl_J31", "2026-07-29T10:00")
TRF = transfer("trf_B", "pay_A", 800_000, "2026-07-30T12:00")
TRF_ROW = row(
    "rt",
    "trf_B",
    "transfer",
    "setl_A03",
    "2026-07-30T12:00",
    amount=800_000,
    debit=802_360,
    fee=2_360,
    tax=360,
)
JULY_ONLY = dataset(
    payments=[PAY],
    recon=[PAY_ROW],
    settlements=[settlement("setl_J31", 2_000_000, "2026-07-31T11:00")],
    transfers=[TRF],
)
WITH_AUGUST = dataset(
    payments=[PAY],
    recon=[PAY_ROW, TRF_ROW],
    settlements=[
        settlement("setl_J31", 2_000_000, "2026-07-31T11:00"),
        settlement("setl_A03", -802_360, "2026-08-03T11:00"),
    ],
    transfers=[TRF],
)


def test_a_processed_transfer_leaves_the_receivable_when_created_before_its_row_settles() -> None:
    july = _month(JULY_ONLY, JUL)
    assert dict(july.movements)["transfers"] == -800_000
    assert july.closing == -800_000
    assert dict(july.open_items)["pending_transfers"] == -800_000
    assert july.residual == 0


def test_a_transfers_settled_row_closes_it_without_taking_it_twice() -> None:
    july = _month(WITH_AUGUST, JUL)
    # The row's fee is part of what the transfer took, at the transfer's moment.
    assert dict(july.movements)["transfers"] == -802_360
    assert dict(july.open_items)["pending_transfers"] == -802_360
    august = _month(WITH_AUGUST, AUG)
    assert august.opening == july.closing
    assert dict(august.movements)["transfers"] == 0
    assert dict(august.movements)["settlements"] == 802_360
    assert august.closing == 0 and dict(august.open_items)["pending_transfers"] == 0
    assert august.residual == 0


def test_a_failed_transfer_without_a_row_never_leaves() -> None:
    failed = dataset(payments=[PAY], transfers=[{**TRF, "status": "failed"}])
    assert dict(_month(failed, JUL).movements)["transfers"] == 0


# Disputes (the tester's probe month): D5 opened and accepted (lost) on 30 Jul,
# amount_deducted ₹9,000, no debit row yet; D2 lost with its deduct-at-onset debit settled.
D2 = dispute("disp_D2", "pay_A", 800_000, 800_000, "lost", "2026-07-09T10:00")
D2_ROW = row(
    "rd2",
    "adj_D2",
    "adjustment",
    "setl_J14",
    "2026-07-09T10:10",
    amount=800_000,
    debit=800_000,
    dispute_id="disp_D2",
)
D5 = dispute("disp_D5", "pay_A", 900_000, 900_000, "lost", "2026-07-30T10:00")
D5_ROW = row(
    "rd5",
    "adj_D5",
    "adjustment",
    "setl_A03",
    "2026-07-30T10:05",
    amount=900_000,
    debit=900_000,
    dispute_id="disp_D5",
)
PAID = [
    settlement("setl_J14", -800_000, "2026-07-14T11:00"),
    settlement("setl_J31", 2_000_000, "2026-07-31T11:00"),
]
LOST_FLAGS = frozenset({("dispute", "disp_D2"), ("dispute", "disp_D5")})


def test_a_lost_disputes_deduction_is_written_off_before_its_debit_row_arrives() -> None:
    data = dataset(payments=[PAY], recon=[PAY_ROW, D2_ROW], settlements=PAID, disputes=[D2, D5])
    july = _month(data, JUL, LOST_FLAGS)
    assert dict(july.movements)["written_off"] == -1_700_000
    assert dict(july.open_items)["pending_dispute_deductions"] == -900_000
    assert july.residual == 0


def test_a_disputes_debit_row_closes_its_deduction_without_taking_it_twice() -> None:
    data = dataset(
        payments=[PAY],
        recon=[PAY_ROW, D2_ROW, D5_ROW],
        settlements=[*PAID, settlement("setl_A03", -900_000, "2026-08-03T11:00")],
        disputes=[D2, D5],
    )
    july = _month(data, JUL, LOST_FLAGS)
    assert dict(july.movements)["written_off"] == -1_700_000
    august = _month(data, AUG, LOST_FLAGS)
    assert dict(august.movements)["written_off"] == 0
    assert august.closing == 0 and dict(august.open_items)["pending_dispute_deductions"] == 0
    assert august.residual == 0


def test_a_won_dispute_deducted_at_onset_comes_back_with_its_reversal_credit() -> None:
    won = dispute("disp_D1", "pay_A", 500_000, 500_000, "won", "2026-07-08T10:00")
    debit = row(
        "rd1",
        "adj_D1",
        "adjustment",
        "setl_J14",
        "2026-07-08T10:05",
        amount=500_000,
        debit=500_000,
        dispute_id="disp_D1",
    )
    credit = row(
        "rc1",
        "adj_D1w",
        "adjustment",
        None,
        "2026-07-20T10:00",
        amount=500_000,
        credit=500_000,
        dispute_id="disp_D1",
    )
    data = dataset(
        payments=[PAY],
        recon=[PAY_ROW, debit, credit],
        settlements=[
            settlement("setl_J14", -500_000, "2026-07-14T11:00"),
            settlement("setl_J31", 2_000_000, "2026-07-31T11:00"),
        ],
        disputes=[won],
    )
    july = _month(data, JUL)
    moves = dict(july.movements)
    assert moves["dispute_debits"] == -500_000 and moves["written_off"] == 0
    assert moves["dispute_reversals"] == 500_000
    # The reversal credit, not yet in a settlement, is what Razorpay holds for us.
    assert july.closing == 500_000 and dict(july.open_items)["unsettled_other_rows"] == 500_000
    assert july.residual == 0


def test_an_open_dispute_with_nothing_deducted_moves_nothing() -> None:
    opened = dispute("disp_D4", "pay_A", 1_250_000, 0, "open", "2026-07-31T10:00")
    data = dataset(payments=[PAY], recon=[PAY_ROW], settlements=PAID[1:], disputes=[opened])
    july = _month(data, JUL)
    assert dict(july.movements)["dispute_debits"] == 0 and july.closing == 0


# A transfer reversal typed `adjustment` (the recon API has no `reversal` type) that the
# reversals file ties to its transfer (`transfer_id`).
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


def test_an_adjustment_row_tied_to_a_transfer_is_on_the_transfers_line() -> None:
    moves = dict(_month(REVERSED, JUL).movements)
    assert moves["transfers"] == 200_000 and moves["adjustments"] == 0


def _whole(data: Dataset, flags: frozenset[tuple[str, str]]) -> Sums:
    return partial_sums(ledger_events(data, flags))


def test_a_day_bringing_a_transfers_row_and_a_lost_dispute_carries_the_ledger_exactly() -> None:
    # Before: July as closed (the transfer and D5 with no rows; D3 open, its deduct-at-onset
    # debit settled). The day: August's settlement with the transfer's and D5's rows, and
    # D3 lost (amount_deducted set), as the tester's data/aug brings it.
    d3_open = dispute("disp_D3", "pay_A", 600_000, 0, "open", "2026-07-28T10:00")
    d3_row = row(
        "rd3",
        "adj_D3",
        "adjustment",
        "setl_J31",
        "2026-07-28T10:10",
        amount=600_000,
        debit=600_000,
        dispute_id="disp_D3",
    )
    before = dataset(
        payments=[PAY],
        recon=[PAY_ROW, d3_row],
        settlements=[settlement("setl_J31", 1_400_000, "2026-07-31T11:00")],
        transfers=[TRF],
        disputes=[d3_open, D5],
    )
    day = dataset(
        recon=[TRF_ROW, D5_ROW],
        settlements=[settlement("setl_A03", -1_702_360, "2026-08-03T11:00")],
        disputes=[{**d3_open, "status": "lost", "amount_deducted": 600_000}],
    )
    after, _ = merge_rows(before, day)
    flags = frozenset({("dispute", "disp_D5"), ("dispute", "disp_D3")})
    change = ledger_change(before, after, day, LOST_FLAGS, flags)
    assert change.families.transfers == {"trf_B"}
    assert change.families.disputes >= {"disp_D3", "disp_D5"}
    expected = _difference(_whole(after, flags), _whole(before, LOST_FLAGS))
    assert_same_sums(change.sums, expected)
    july = _month(after, JUL, flags)
    assert dict(july.movements)["written_off"] == -1_500_000  # D3 and D5, both in July
    assert _month(after, AUG, flags).residual == 0
