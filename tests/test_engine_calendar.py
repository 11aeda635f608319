"""The settlement calendar of spec section 4 as the engine applies it: IST dates, weekends,
holidays, domestic T+2 and international T+7, grace, and the bank-credit window."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from core.calendar import CalendarParams
from core.engine import EngineParams, reconcile
from tests.engine_support import dataset, outcome, ts

MONDAY = "2026-06-01"
FRIDAY = "2026-06-05"


def _payment(created: str, *, international: bool = False) -> dict[str, Any]:
    return {
        "id": "pay_X",
        "amount": 10_000,
        "fee": 200,
        "order_id": "order_X",
        "created_at": ts(created),
        "international": international,
    }


def _unsettled(created: str, as_of: str, params: EngineParams | None = None, **kw: Any) -> str:
    """The outcome code of a captured payment without a recon row."""
    data = dataset(payments=[_payment(created, **kw)])
    got = outcome(reconcile(data, params or EngineParams(), ts(as_of)), "payment", "pay_X")
    return str(got["reason_code"])


def _settled(created: str, settled: str, params: EngineParams | None = None) -> str:
    """The reason codes of a payment settled at `settled` (as of much later)."""
    row = {
        "entity_id": "pay_X",
        "type": "payment",
        "amount": 10_000,
        "credit": 9_800,
        "fee": 200,
        "settled_at": ts(settled),
        "settlement_id": "setl_X",
        "order_id": "order_X",
    }
    settlement = {"id": "setl_X", "amount": 9_800, "utr": "UTIBN0000000001", "created_at": 0}
    data = dataset(payments=[_payment(created)], recon=[row], settlements=[settlement])
    got = outcome(reconcile(data, params or EngineParams(), ts("2026-12-31")), "payment", "pay_X")
    return str(got["reason_codes"])


@pytest.mark.parametrize(
    ("created", "as_of", "code"),
    [
        # Monday: due Wednesday, grace Thursday, overdue from Friday.
        (f"{MONDAY}T10:00", "2026-06-04T23:59:59", "AWAITING_SETTLEMENT"),
        (f"{MONDAY}T10:00", "2026-06-05T00:00:00", "MISSING_RECONCILIATION_RECORD"),
        # Friday: due Tuesday (the weekend is skipped), overdue from Thursday.
        (f"{FRIDAY}T10:00", "2026-06-10T23:59:59", "AWAITING_SETTLEMENT"),
        (f"{FRIDAY}T10:00", "2026-06-11T00:00:01", "MISSING_RECONCILIATION_RECORD"),
        # Saturday counts from Friday: due Tuesday too.
        ("2026-06-06T10:00", "2026-06-10T23:59:59", "AWAITING_SETTLEMENT"),
        ("2026-06-06T10:00", "2026-06-11T00:00:01", "MISSING_RECONCILIATION_RECORD"),
        # Sunday as well.
        ("2026-06-07T22:00", "2026-06-11T00:00:01", "MISSING_RECONCILIATION_RECORD"),
    ],
    ids=[
        "monday_last_grace_day",
        "monday_overdue",
        "friday_skips_weekend",
        "friday_overdue",
        "saturday_counts_from_friday",
        "saturday_overdue",
        "sunday_overdue",
    ],
)
def test_due_dates_skip_weekends(created: str, as_of: str, code: str) -> None:
    assert _unsettled(created, as_of) == code


def test_dates_are_ist_not_utc() -> None:
    # 18:40 UTC on Thursday 06-04 is 00:10 IST on Friday 06-05: due Tuesday, not Monday.
    created = dt.datetime(2026, 6, 4, 18, 40, tzinfo=dt.UTC).isoformat()
    assert _unsettled(created, "2026-06-10T12:00") == "AWAITING_SETTLEMENT"
    thursday = dt.datetime(2026, 6, 4, 18, 20, tzinfo=dt.UTC).isoformat()  # 23:50 IST Thursday
    assert _unsettled(thursday, "2026-06-10T12:00") == "MISSING_RECONCILIATION_RECORD"


def test_holidays_are_not_working_days() -> None:
    # With Tuesday 06-09 a holiday, Friday's payment is due Wednesday, overdue from Friday.
    params = EngineParams(calendar=CalendarParams(holidays=frozenset({dt.date(2026, 6, 9)})))
    assert _unsettled(f"{FRIDAY}T10:00", "2026-06-11T12:00", params) == "AWAITING_SETTLEMENT"
    assert _unsettled(f"{FRIDAY}T10:00", "2026-06-12T00:00:01", params) == (
        "MISSING_RECONCILIATION_RECORD"
    )


def test_international_payments_are_due_after_seven_working_days() -> None:
    # Monday + 7 working days = Wednesday 06-10; grace Thursday; overdue from Friday 06-12.
    assert _unsettled(f"{MONDAY}T10:00", "2026-06-11T23:00", international=True) == (
        "AWAITING_SETTLEMENT"
    )
    assert _unsettled(f"{MONDAY}T10:00", "2026-06-12T00:00:01", international=True) == (
        "MISSING_RECONCILIATION_RECORD"
    )


def test_settlement_and_international_days_are_configurable() -> None:
    params = EngineParams(calendar=CalendarParams(settlement_days=1, international_days=3))
    assert _unsettled(f"{MONDAY}T10:00", "2026-06-04T00:00:01", params) == (
        "MISSING_RECONCILIATION_RECORD"
    )
    assert _unsettled(f"{MONDAY}T10:00", "2026-06-05T23:00", params, international=True) == (
        "AWAITING_SETTLEMENT"
    )


@pytest.mark.parametrize(
    ("grace", "code"),
    [(0, "MISSING_RECONCILIATION_RECORD"), (1, "AWAITING_SETTLEMENT")],
)
def test_grace_days_delay_overdue(grace: int, code: str) -> None:
    params = EngineParams(calendar=CalendarParams(grace_days=grace))
    assert _unsettled(f"{MONDAY}T10:00", "2026-06-04T12:00", params) == code


@pytest.mark.parametrize(
    ("settled", "grace", "codes"),
    [
        ("2026-06-04T23:59", 1, ""),  # Monday's payment, last day of grace
        ("2026-06-05T00:01", 1, "TIMING_WINDOW_EXCEEDED"),
        ("2026-06-05T10:00", 2, ""),
        ("2026-06-04T10:00", 0, "TIMING_WINDOW_EXCEEDED"),
    ],
    ids=["on_last_grace_day", "a_day_late", "late_within_two_grace_days", "no_grace"],
)
def test_settled_late_uses_the_ist_date_of_settled_at(settled: str, grace: int, codes: str) -> None:
    params = EngineParams(calendar=CalendarParams(grace_days=grace))
    assert _settled(f"{MONDAY}T10:00", settled, params) == codes


def _bank_outcome(settlement_created: str, as_of: str, params: EngineParams | None = None) -> str:
    settlement = {
        "id": "setl_B",
        "amount": 0,
        "utr": "UTIBN0000000009",
        "created_at": ts(settlement_created),
    }
    data = dataset(settlements=[settlement], bank=[])
    got = outcome(reconcile(data, params or EngineParams(), ts(as_of)), "settlement", "setl_B")
    return str(got["reason_code"])


def test_bank_credit_window_counts_working_days() -> None:
    # Created Friday: the credit is due Monday (one bank day), missing from Tuesday.
    assert _bank_outcome(f"{FRIDAY}T12:00", "2026-06-08T23:00") == "AWAITING_BANK_CREDIT"
    assert _bank_outcome(f"{FRIDAY}T12:00", "2026-06-09T00:00:01") == "MISSING_BANK_ENTRY"


def test_bank_credit_window_skips_holidays_and_is_configurable() -> None:
    holiday = EngineParams(calendar=CalendarParams(holidays=frozenset({dt.date(2026, 6, 8)})))
    assert _bank_outcome(f"{FRIDAY}T12:00", "2026-06-09T12:00", holiday) == ("AWAITING_BANK_CREDIT")
    two_days = EngineParams(calendar=CalendarParams(bank_days=2))
    assert _bank_outcome(f"{FRIDAY}T12:00", "2026-06-09T12:00", two_days) == (
        "AWAITING_BANK_CREDIT"
    )


def test_refunds_follow_the_domestic_cycle() -> None:
    refund = {"id": "rfnd_X", "payment_id": "pay_X", "amount": 100, "created_at": ts(MONDAY)}
    params = EngineParams(calendar=CalendarParams(settlement_days=2, international_days=7))
    data = dataset(payments=[_payment(f"{MONDAY}T10:00", international=True)], refunds=[refund])
    got = outcome(reconcile(data, params, ts("2026-06-05T00:00:01")), "refund", "rfnd_X")
    assert got["reason_code"] == "MISSING_RECONCILIATION_RECORD"
