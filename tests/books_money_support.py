"""Small hand-built datasets for the Books' reading of Razorpay's money model beyond the
spec (instant settlements and their draw, payments settled by a bank, payments in another
currency, deduct-at-onset disputes): each frame written out row by row, amounts in paise."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.books.journal import Ledgers, Voucher
from core.books.rollforward import MonthRollForward, ledger_events, month_rollforward
from core.dataset import (
    DISPUTE_COLUMNS,
    INSTANT_PAYOUT_COLUMNS,
    INSTANT_SETTLEMENT_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    TRANSFER_COLUMNS,
    Dataset,
)
from tests.engine_support import ts

NOV = "2026-11"


def frame(rows: list[dict[str, object]], spec: dict[str, str], **base: object) -> pd.DataFrame:
    """A frame of `spec`'s columns and dtypes, each row `base` overridden by its own cells."""
    return pd.DataFrame([{**base, **r} for r in rows], columns=list(spec)).astype(spec)


def payment(
    pid: str, amount: int, when: str, fee: int = 0, tax: int = 0, **cells: object
) -> dict[str, object]:
    return {
        "id": pid,
        "amount": amount,
        "currency": "INR",
        "status": "captured",
        "captured": True,
        "fee": fee,
        "tax": tax,
        "amount_refunded": 0,
        "international": False,
        "created_at": ts(when),
        **cells,
    }


def row(
    key: str, entity: str, kind: str, sid: str | None, when: str, **cells: object
) -> dict[str, object]:
    return {
        "row_key": key,
        "entity_id": entity,
        "type": kind,
        "currency": "INR",
        "on_hold": False,
        "settled": sid is not None,
        "created_at": ts(when),
        "settled_at": ts(when) if sid else None,
        "settlement_id": sid,
        "debit": 0,
        "credit": 0,
        "amount": 0,
        "fee": 0,
        "tax": 0,
        **cells,
    }


def pay_row(
    key: str, pid: str, amount: int, sid: str | None, when: str, fee: int = 0, tax: int = 0
) -> dict[str, object]:
    return row(key, pid, "payment", sid, when, amount=amount, credit=amount - fee, fee=fee, tax=tax)


def refund(
    rid: str, pid: str, amount: int, when: str, status: str = "processed"
) -> dict[str, object]:
    return {
        "id": rid,
        "payment_id": pid,
        "amount": amount,
        "currency": "INR",
        "status": status,
        "created_at": ts(when),
    }


def transfer(
    tid: str, pid: str, amount: int, when: str, status: str = "processed"
) -> dict[str, object]:
    return {
        "id": tid,
        "source": pid,
        "recipient": "acc_Vendor",
        "amount": amount,
        "currency": "INR",
        "amount_reversed": 0,
        "status": status,
        "on_hold": False,
        "created_at": ts(when),
    }


def dispute(
    did: str, pid: str, amount: int, deducted: int, status: str, when: str
) -> dict[str, object]:
    return {
        "id": did,
        "payment_id": pid,
        "amount": amount,
        "currency": "INR",
        "amount_deducted": deducted,
        "status": status,
        "phase": "chargeback",
        "created_at": ts(when),
    }


def settlement(sid: str, amount: int, when: str) -> dict[str, object]:
    return {"id": sid, "amount": amount, "status": "processed", "created_at": ts(when)}


def dataset(
    payments: list[dict[str, object]] = (),  # type: ignore[assignment]
    recon: list[dict[str, object]] = (),  # type: ignore[assignment]
    settlements: list[dict[str, object]] = (),  # type: ignore[assignment]
    instant: list[dict[str, object]] = (),  # type: ignore[assignment]
    payouts: list[dict[str, object]] = (),  # type: ignore[assignment]
    disputes: list[dict[str, object]] = (),  # type: ignore[assignment]
    refunds: list[dict[str, object]] = (),  # type: ignore[assignment]
    transfers: list[dict[str, object]] = (),  # type: ignore[assignment]
) -> Dataset:
    return Dataset(
        payments=frame(list(payments), PAYMENT_COLUMNS),
        refunds=frame(list(refunds), REFUND_COLUMNS),
        recon=frame(list(recon), RECON_COLUMNS),
        settlements=frame(list(settlements), SETTLEMENT_COLUMNS),
        instant_settlements=frame(list(instant), INSTANT_SETTLEMENT_COLUMNS),
        instant_payouts=frame(list(payouts), INSTANT_PAYOUT_COLUMNS),
        disputes=frame(list(disputes), DISPUTE_COLUMNS),
        transfers=frame(list(transfers), TRANSFER_COLUMNS),
    )


def instant(iid: str, requested: int, when: str, status: str = "processed") -> dict[str, object]:
    return {
        "id": iid,
        "amount_requested": requested,
        "currency": "INR",
        "status": status,
        "created_at": ts(when),
    }


def payout(
    po: str, iid: str, amount: int, fees: int, tax: int, when: str, status: str = "processed"
) -> dict[str, object]:
    done = status == "processed"
    return {
        "id": po,
        "instant_settlement_id": iid,
        "amount": amount,
        "amount_settled": amount - fees if done else 0,
        "fees": fees if done else 0,
        "tax": tax if done else 0,
        "status": status,
        "created_at": ts(when),
        "processed_at": ts(when) if done else None,
        "reversed_at": None if done else ts(when),
    }


def november(data: Dataset, flagged: frozenset[tuple[str, str]] = frozenset()) -> MonthRollForward:
    return month_rollforward(ledger_events(data, flagged), NOV)


def balances(vouchers: list[Voucher]) -> dict[str, int]:
    """Each ledger's debit − credit over the vouchers, after checking each balances."""
    out: dict[str, int] = {}
    for v in vouchers:
        assert v.debits == v.credits, v.number
        for line in v.lines:
            out[line.ledger] = out.get(line.ledger, 0) + line.debit - line.credit
    return {k: v for k, v in out.items() if v}


LEDGERS = Ledgers()


def assert_same_sums(carried: Any, whole: Any) -> None:
    """A day's carried ledger change (`ledger_change(...).sums`) equals the difference of
    the whole ledgers after and before it, frame by frame (days, unexplained), in any
    row order."""
    for name in ("days", "unexplained"):
        mine, theirs = getattr(carried, name), getattr(whole, name)
        keys = [c for c in theirs.columns if c not in ("amount", "events")]
        pd.testing.assert_frame_equal(
            mine.sort_values(keys, ignore_index=True),
            theirs.sort_values(keys, ignore_index=True),
            check_dtype=False,
            check_categorical=False,
        )
