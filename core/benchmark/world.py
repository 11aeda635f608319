"""The generated merchant: payments, refunds, recon rows and settlements, faults planted.

Everything is built on whole numpy columns, so a million payments take seconds. The story:
a merchant sells for `HISTORY_DAYS` days up to the `as_of` instant, mostly in IST business
hours. Captured payments settle on their due date (T+2 working days, T+7 international) in
that day's settlement; some days have two settlement cycles. Refunds are debited from the
settlement on their own due date; chargebacks, fee reversals and Route transfers ride along
as adjustment and transfer rows. Faults are planted on chosen entities, and the facts each
fault changes are kept so that `labels.py` can state the spec's outcome for every entity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd

from core.benchmark.ids import IdFactory, StrArray
from core.calendar import IST_OFFSET_SECONDS, CalendarParams, WorkingCalendar, ist_dates
from core.errors import ConfigError

HISTORY_DAYS = 90
MIN_PAYMENTS = 200
# The most payments one dataset may have (with --chunks too): 10^11 asked numpy for 744 GiB
# (an independent attacker, round 3). The largest documented dataset is 10M (--chunks).
MAX_PAYMENTS = 10_000_000
CALENDAR = CalendarParams()  # the engine's defaults: T+2, T+7, grace 1, bank 1, no holidays
DAY = 86_400

METHODS: tuple[str, ...] = ("upi", "card", "netbanking", "wallet", "emi")
METHOD_SHARE = np.array([0.45, 0.30, 0.12, 0.08, 0.05])
# Fee before GST in basis points; with 18% GST on top the fee is about 2% (UPI is free).
FEE_BP = np.array([0, 170, 160, 170, 210], dtype=np.int64)
INTERNATIONAL_FEE_BP = 250
INTERNATIONAL_CARD_SHARE = 0.04
STATUS_NAMES: tuple[str, ...] = ("captured", "refunded", "failed", "authorized")
CAPTURED, REFUNDED, FAILED, AUTHORIZED = range(4)
# IST hour of day, 00..23: quiet nights, a late-morning and an evening peak.
HOUR_WEIGHTS = np.array(
    [3, 2, 1, 1, 1, 2, 4, 8, 15, 25, 35, 40, 40, 38, 35, 35, 36, 38, 40, 42, 45, 40, 25, 10],
    dtype=np.float64,
)
TWO_CYCLE_SHARE = 0.35
CYCLE_MINUTES = (9 * 60 + 30, 15 * 60)  # first and second cycle start, IST

# Captured-payment faults: scenario -> (share of eligible captured payments, minimum count).
# The minimum keeps every outcome in both splits of a small dataset.
PAYMENT_FAULTS: dict[str, tuple[float, int]] = {
    "duplicate_record": (0.003, 3),
    "mapped_to_other_payment": (0.0015, 3),
    "mapped_to_other_order": (0.0015, 3),
    "amount_lower": (0.002, 3),
    "amount_higher": (0.001, 3),
    "fee_differs": (0.002, 3),
    "gst_differs": (0.001, 3),
    "missing_settlement_blank": (0.001, 3),
    "missing_settlement_unknown": (0.001, 3),
    "settled_late": (0.003, 3),
    "not_settled": (0.003, 3),
    "amount_mismatch_late": (0.0005, 3),
    "discrepancy_late": (0.0005, 3),
    "wrong_mapping_amount": (0.0005, 3),
    "on_hold_amount_mismatch": (0.0003, 3),
}
# Not faults but edges of the rules, planted in every dataset: held rows, and rows settled
# exactly at the end of the grace period (MATCHED) or missing but still inside it (PENDING).
PAYMENT_EDGES: dict[str, tuple[float, int]] = {
    "on_hold": (0.004, 3),
    "settled_in_grace": (0.003, 3),
}
STATUS_MISMATCH_SHARE = (0.03, 3)
AWAITING_IN_GRACE = 3
REFUND_SHARE = 0.06
MIN_REFUNDS = 60
RECENT_REFUNDS = 3
REFUND_FAULTS: dict[str, tuple[float, int]] = {
    "duplicate_record": (0.01, 3),
    "wrong_mapping": (0.01, 3),
    "amount_mismatch": (0.01, 3),
    "wrong_mapping_amount": (0.005, 3),
    "not_settled": (0.01, 3),
}
# Other recon rows, as a share of payments with a minimum count.
PHANTOM_PAYMENT_ROWS = (0.0005, 3)
PHANTOM_REFUND_ROWS = (0.0003, 3)
DISPUTE_DEBITS = (0.001, 3)
FEE_REVERSALS = (0.0005, 2)
DISPUTE_REVERSALS = (0.0002, 2)
PLATFORM_FEE_DEBITS = (0.0003, 2)
TRANSFERS = (0.0005, 2)
# Settlement faults: scenario -> count. Each sits alone on its settlement day, so that the
# bank fallbacks (fuzzy UTR, consolidated credit) can only find what was planted.
SETTLEMENT_FAULTS: dict[str, int] = {
    "failed": 2,
    "sum_mismatch": 2,
    "sum_and_bank_amount": 2,
    "duplicate_bank_credit": 2,
    "bank_short": 2,
    "bank_excess": 2,
    "missing_bank_entry": 2,
    "fuzzy_utr": 2,
}
CONSOLIDATED_DAYS = 2
SETTLEMENT_FAULTS_WITHOUT_BANK = ("failed", "sum_mismatch")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
DayArray = npt.NDArray[np.datetime64]


class GenerationError(ConfigError):
    """The requested dataset cannot be generated (e.g. too few payments)."""


def ist_midnight(days: DayArray) -> IntArray:
    """Unix seconds of 00:00 IST on each date."""
    result: IntArray = days.astype("datetime64[D]").astype(np.int64) * DAY - IST_OFFSET_SECONDS
    return result


def _share(share: tuple[float, int], pool: int) -> int:
    rate, minimum = share
    return max(minimum, round(rate * pool))


def _choose(rng: np.random.Generator, mask: BoolArray, count: int, what: str) -> IntArray:
    candidates = np.flatnonzero(mask)
    if len(candidates) < count:
        raise GenerationError(
            f"too few candidates for {what}: need {count}, have {len(candidates)}; "
            "generate more payments"
        )
    chosen: IntArray = np.sort(rng.choice(candidates, size=count, replace=False))
    return chosen


def _other_index(rng: np.random.Generator, idx: IntArray, pool: IntArray) -> IntArray:
    """For each index, a different member of `pool` (for wrong mappings)."""
    picks = pool[rng.integers(0, len(pool), size=len(idx))]
    clash = picks == idx
    while clash.any():
        picks[clash] = pool[rng.integers(0, len(pool), size=int(clash.sum()))]
        clash = picks == idx
    return picks


@dataclass
class Calendar:
    """The dataset's days and settlement cycles.

    A settlement key is `2 * day_index + cycle` (cycle 0 or 1); `cycle_time[key]` is the
    cycle's creation instant and `available[key]` says whether that cycle runs at all.
    """

    as_of: int
    last_day: np.datetime64  # IST date of as_of
    start: np.datetime64
    days: DayArray
    working: BoolArray
    two_cycles: BoolArray
    cycle_time: IntArray
    available: BoolArray
    bank_pending_day: BoolArray  # a settlement created that day is not yet overdue at the bank
    last_normal_day: np.datetime64  # the last day whose settlements are overdue at the bank
    cal: WorkingCalendar

    def add(self, days: DayArray, n: int | IntArray) -> DayArray:
        return self.cal.add_working_days_array(days, n)

    def key_for(self, days: DayArray) -> IntArray:
        """The settlement cycle each row due on `days` lands in; -1 when none runs."""
        index = (days.astype("datetime64[D]") - self.start).astype(np.int64)
        inside = (index >= 0) & (index < len(self.days))
        safe = np.clip(index, 0, len(self.days) - 1)
        # On a two-cycle day the earlier half of the rows (in the order given) goes to the
        # first cycle, the rest to the second, so both cycles carry rows when two or more do.
        order = np.argsort(safe, kind="stable")
        ranked = safe[order]
        start = np.searchsorted(ranked, ranked, side="left")
        end = np.searchsorted(ranked, ranked, side="right")
        later_half = np.empty(len(safe), dtype=bool)
        later_half[order] = np.arange(len(safe)) - start >= (end - start + 1) // 2
        second = self.two_cycles[safe] & later_half
        key = safe * 2 + second.astype(np.int64)
        first = safe * 2
        key = np.where(self.available[key], key, np.where(self.available[first], first, -1))
        result: IntArray = np.where(inside, key, -1)
        return result

    def key_day(self, key: IntArray) -> DayArray:
        result: DayArray = self.days[key // 2]
        return result


def build_calendar(as_of: int, rng: np.random.Generator) -> Calendar:
    cal = WorkingCalendar(CALENDAR.holidays)
    last_day = ist_dates(np.array([as_of], dtype=np.int64))[0]
    start = last_day - np.timedelta64(HISTORY_DAYS, "D")
    days = np.arange(start, last_day + np.timedelta64(1, "D"), dtype="datetime64[D]")
    working = np.is_busday(days, busdaycal=np.busdaycalendar(holidays=list(cal.holidays)))
    bank_due = cal.add_working_days_array(days, CALENDAR.bank_days)
    bank_pending_day = working & (bank_due >= last_day)
    two_cycles = working & ((rng.random(len(days)) < TWO_CYCLE_SHARE) | bank_pending_day)
    minutes = np.empty(2 * len(days), dtype=np.int64)
    minutes[0::2] = CYCLE_MINUTES[0] + rng.integers(0, 80, size=len(days))
    minutes[1::2] = CYCLE_MINUTES[1] + rng.integers(0, 80, size=len(days))
    cycle_time = (
        np.repeat(ist_midnight(days), 2) + minutes * 60 + rng.integers(0, 60, 2 * len(days))
    )
    cycle = np.tile(np.array([0, 1]), len(days))
    available = (
        np.repeat(working, 2) & ((cycle == 0) | np.repeat(two_cycles, 2)) & (cycle_time < as_of)
    )
    normal = np.flatnonzero(working & ~bank_pending_day)
    if len(normal) < 30:
        raise GenerationError("as_of leaves too few settlement days")
    return Calendar(
        as_of=as_of,
        last_day=last_day,
        start=start,
        days=days,
        working=working,
        two_cycles=two_cycles,
        cycle_time=cycle_time,
        available=available,
        bank_pending_day=bank_pending_day,
        last_normal_day=days[normal[-1]],
        cal=cal,
    )


@dataclass
class Payments:
    """Payment entities plus, for each, the facts of its recon payment row(s).

    `rows` is 0, 1 or 2 (a duplicate repeats the row exactly); the `row_*` columns describe
    the row; `scenario` names what was planted ("" = nothing).
    """

    id: StrArray
    order_id: StrArray  # b"" = no order
    amount: IntArray
    fee: IntArray
    tax: IntArray
    method: IntArray
    international: BoolArray
    status: IntArray
    created_at: IntArray
    amount_refunded: IntArray
    due: DayArray
    overdue: BoolArray
    rows: IntArray
    row_key: IntArray  # settlement key; -1 no settlement id; -2 an unknown settlement id
    row_unknown_settlement: StrArray
    row_settled_at: IntArray  # for rows without a key; -1 = null
    row_amount: IntArray
    row_fee: IntArray
    row_tax: IntArray
    row_payment_id: StrArray
    row_order_id: StrArray
    row_on_hold: BoolArray
    scenario: npt.NDArray[np.object_]
    root_cause: npt.NDArray[np.object_]

    @property
    def captured(self) -> BoolArray:
        result: BoolArray = self.status <= REFUNDED
        return result


LAST_SETTLEMENT_PAYMENTS = 6


def _fill_last_settlements(
    created: IntArray,
    captured: BoolArray,
    international: BoolArray,
    calendar: Calendar,
    rng: np.random.Generator,
) -> None:
    """Make sure the settlements of the last days (not yet due at the bank) carry payments:
    a small dataset could otherwise leave a day without any, and with it the PENDING
    settlement outcomes. Moves a few early payments' creation to the right day.
    """
    domestic = captured & ~international
    due = calendar.add(ist_dates(created), CALENDAR.settlement_days)
    early = domestic & (created < ist_midnight(calendar.days[30:31])[0])
    for day in calendar.days[calendar.bank_pending_day]:
        short = LAST_SETTLEMENT_PAYMENTS - int((domestic & (due == day)).sum())
        if short <= 0:
            continue
        source = calendar.add(np.array([day]), -CALENDAR.settlement_days)[0]
        movers = rng.choice(np.flatnonzero(early), size=short, replace=False)
        early[movers] = False
        created[movers] = ist_midnight(np.array([source]))[0] + rng.integers(
            10 * 3600, 18 * 3600, short
        )


def build_payments(
    n: int, calendar: Calendar, ids: IdFactory, rng: np.random.Generator
) -> Payments:
    day_weight = np.where(np.is_busday(calendar.days, weekmask="1111100"), 1.0, 0.75)
    day_index = rng.choice(len(calendar.days), size=n, p=day_weight / day_weight.sum())
    hour = rng.choice(24, size=n, p=HOUR_WEIGHTS / HOUR_WEIGHTS.sum())
    created = ist_midnight(calendar.days[day_index]) + hour * 3600 + rng.integers(0, 3600, n)
    method = rng.choice(len(METHODS), size=n, p=METHOD_SHARE).astype(np.int64)
    international = (method == 1) & (rng.random(n) < INTERNATIONAL_CARD_SHARE)
    status = rng.choice(4, size=n, p=[0.90, 0.0, 0.075, 0.025]).astype(np.int64)
    _fill_last_settlements(created, status <= REFUNDED, international, calendar, rng)
    late = created >= calendar.as_of
    created[late] = calendar.as_of - 1 - rng.integers(0, 3600, int(late.sum()))
    order = np.argsort(created, kind="stable")
    created = created[order]
    method = method[order]
    international = international[order]
    status = status[order]

    rupees = np.clip(np.round(rng.lognormal(np.log(1800.0), 1.0, n)), 1, 500_000).astype(np.int64)
    paise_part = np.where(rng.random(n) < 0.35, rng.integers(0, 100, n), 0)
    amount = rupees * 100 + paise_part
    fee_bp = np.where(international, INTERNATIONAL_FEE_BP, FEE_BP[method])
    base = (amount * fee_bp + 5000) // 10000
    tax = (base * 18 + 50) // 100
    fee = base + tax
    order_id = ids.ids("order_", n)
    order_id[rng.random(n) < 0.04] = b""

    pay_date = ist_dates(created)
    due = calendar.add(
        pay_date, np.where(international, CALENDAR.international_days, CALENDAR.settlement_days)
    )
    grace_end = calendar.add(due, CALENDAR.grace_days)
    captured = status <= REFUNDED
    key = np.full(n, -1, dtype=np.int64)
    key[captured] = calendar.key_for(due[captured])
    rows = (captured & (key >= 0)).astype(np.int64)
    empty = np.zeros(n, dtype="S1")
    return Payments(
        id=ids.ids("pay_", n),
        order_id=order_id,
        amount=amount,
        fee=fee,
        tax=tax,
        method=method,
        international=international,
        status=status,
        created_at=created,
        amount_refunded=np.zeros(n, dtype=np.int64),
        due=due,
        overdue=calendar.last_day > grace_end,
        rows=rows,
        row_key=np.where(rows > 0, key, -1),
        row_unknown_settlement=empty.copy(),
        row_settled_at=np.full(n, -1, dtype=np.int64),
        row_amount=amount.copy(),
        row_fee=fee.copy(),
        row_tax=tax.copy(),
        row_payment_id=empty.copy(),
        row_order_id=order_id.copy(),
        row_on_hold=np.zeros(n, dtype=bool),
        scenario=np.full(n, "", dtype=object),
        root_cause=np.full(n, "", dtype=object),
    )


def _delta(rng: np.random.Generator, base: IntArray, low_bp: int, high_bp: int) -> IntArray:
    """A positive whole-paise difference between low_bp and high_bp basis points of base."""
    result: IntArray = 1 + (base * rng.integers(low_bp, high_bp, size=len(base))) // 10000
    return result


def plant_payment_faults(
    p: Payments, calendar: Calendar, ids: IdFactory, rng: np.random.Generator, faults: bool
) -> None:
    """Choose the payments each scenario changes and change their recon rows."""
    grace = CALENDAR.grace_days
    # Eligible: settled in an ordinary (bank-overdue) settlement, with room to settle late.
    eligible = (
        p.captured & (p.rows == 1) & (calendar.add(p.due, grace + 3) <= calendar.last_normal_day)
    )
    free = eligible.copy()
    has_order = p.order_id != b""
    has_tax = p.tax > 0
    pool = int(eligible.sum())
    plan: dict[str, tuple[float, int]] = dict(PAYMENT_EDGES)
    if faults:
        plan = {**PAYMENT_FAULTS, **plan}
    chosen: dict[str, IntArray] = {}
    for name, share in plan.items():
        extra = np.ones(len(p.id), dtype=bool)
        if name in ("mapped_to_other_order", "wrong_mapping_amount"):
            extra = has_order
        elif name == "gst_differs":
            extra = has_tax
        idx = _choose(rng, free & extra, _share(share, pool), f"payment/{name}")
        free[idx] = False
        chosen[name] = idx
        p.scenario[idx] = name

    def change_amount(idx: IntArray) -> None:
        delta = _delta(rng, p.amount[idx], 100, 3000)
        lower = rng.random(len(idx)) < 0.6
        p.row_amount[idx] = np.where(lower, p.amount[idx] - delta, p.amount[idx] + delta)
        p.root_cause[idx] = np.where(lower, "SETTLED_AMOUNT_LOWER", "SETTLED_AMOUNT_HIGHER")

    def change_fee(idx: IntArray) -> None:
        delta = _delta(rng, p.amount[idx], 5, 200)
        lower = (rng.random(len(idx)) < 0.3) & (p.fee[idx] > delta)
        p.row_fee[idx] = np.where(lower, p.fee[idx] - delta, p.fee[idx] + delta)
        p.root_cause[idx] = "FEE_CHARGED_DIFFERENTLY"

    def settle_late(idx: IntArray) -> None:
        extra_days = rng.integers(1, 4, size=len(idx))
        target = calendar.add(p.due[idx], grace + extra_days)
        p.row_key[idx] = calendar.key_for(target)

    def map_to_other_order(idx: IntArray) -> None:
        others = _other_index(rng, idx, np.flatnonzero(has_order))
        p.row_order_id[idx] = p.order_id[others]

    for name, idx in chosen.items():
        if name == "duplicate_record":
            p.rows[idx] = 2
            p.root_cause[idx] = "SETTLED_TWICE"
        elif name == "mapped_to_other_payment":
            others = _other_index(rng, idx, np.arange(len(p.id)))
            p.row_payment_id[idx] = p.id[others]
            p.root_cause[idx] = "MAPPED_TO_OTHER_PAYMENT"
        elif name == "mapped_to_other_order":
            map_to_other_order(idx)
            p.root_cause[idx] = "MAPPED_TO_OTHER_ORDER"
        elif name == "amount_lower":
            p.row_amount[idx] = p.amount[idx] - _delta(rng, p.amount[idx], 100, 3000)
            p.root_cause[idx] = "SETTLED_AMOUNT_LOWER"
        elif name == "amount_higher":
            p.row_amount[idx] = p.amount[idx] + _delta(rng, p.amount[idx], 100, 3000)
            p.root_cause[idx] = "SETTLED_AMOUNT_HIGHER"
        elif name == "fee_differs":
            change_fee(idx)
        elif name == "gst_differs":
            delta = _delta(rng, p.tax[idx], 500, 5000)
            lower = (rng.random(len(idx)) < 0.3) & (p.tax[idx] > delta)
            signed = np.where(lower, -delta, delta)
            p.row_tax[idx] = p.tax[idx] + signed
            p.row_fee[idx] = p.fee[idx] + signed
            p.root_cause[idx] = "GST_CHARGED_DIFFERENTLY"
        elif name == "missing_settlement_blank":
            p.row_key[idx] = -1
            p.root_cause[idx] = "SETTLEMENT_NOT_FOUND"
        elif name == "missing_settlement_unknown":
            p.row_settled_at[idx] = calendar.cycle_time[p.row_key[idx]]
            p.row_key[idx] = -2
            p.row_unknown_settlement[idx] = ids.ids("setl_", len(idx))
            p.root_cause[idx] = "SETTLEMENT_NOT_FOUND"
        elif name == "settled_late":
            settle_late(idx)
            p.root_cause[idx] = "SETTLED_LATE"
        elif name == "not_settled":
            p.rows[idx] = 0
            p.row_key[idx] = -1
            p.root_cause[idx] = "NOT_SETTLED"
        elif name == "amount_mismatch_late":
            change_amount(idx)
            settle_late(idx)
        elif name == "discrepancy_late":
            change_fee(idx)
            settle_late(idx)
        elif name == "wrong_mapping_amount":
            map_to_other_order(idx)
            change_amount(idx)
            p.root_cause[idx] = "MAPPED_TO_OTHER_ORDER"
        elif name == "on_hold":
            p.row_on_hold[idx] = True
            p.row_key[idx] = -1
        elif name == "on_hold_amount_mismatch":
            p.row_on_hold[idx] = True
            p.row_key[idx] = -1
            change_amount(idx)
        elif name == "settled_in_grace":
            p.row_key[idx] = calendar.key_for(calendar.add(p.due[idx], grace))

    # Rows missing while the payment is still inside its grace period: PENDING, not missing.
    in_grace = p.captured & (p.rows == 1) & (p.scenario == "") & ~p.overdue
    in_grace &= calendar.add(p.due, grace) >= calendar.last_day
    # Only from well-filled days, so that the last days' settlements keep their rows.
    day_rows = np.bincount(
        np.maximum(p.row_key, 0) // 2, weights=None, minlength=len(calendar.days)
    )
    in_grace &= day_rows[np.maximum(p.row_key, 0) // 2] >= 12
    idx = _choose(rng, in_grace, min(AWAITING_IN_GRACE, int(in_grace.sum())), "awaiting_in_grace")
    p.rows[idx] = 0
    p.row_key[idx] = -1
    p.scenario[idx] = "awaiting_in_grace"

    if faults:
        # Money settled for payments the merchant holds as failed or authorized.
        not_captured = ~p.captured & (p.due <= calendar.last_normal_day)
        count = _share(STATUS_MISMATCH_SHARE, int((~p.captured).sum()))
        idx = _choose(rng, not_captured, count, "status_mismatch")
        p.rows[idx] = 1
        p.row_key[idx] = calendar.key_for(p.due[idx])
        p.scenario[idx] = "status_mismatch"
        p.root_cause[idx] = "CAPTURE_STATUS_OUT_OF_SYNC"


@dataclass
class Refunds:
    """Refund entities and the facts of their recon refund row(s)."""

    id: StrArray
    payment: IntArray  # index into Payments
    amount: IntArray
    fee: IntArray
    tax: IntArray
    status: npt.NDArray[np.object_]
    speed: npt.NDArray[np.object_]
    created_at: IntArray
    due: DayArray
    overdue: BoolArray
    rows: IntArray
    row_key: IntArray
    row_debit: IntArray
    row_payment_id: StrArray
    scenario: npt.NDArray[np.object_]
    root_cause: npt.NDArray[np.object_]


def debit_cap(p: Payments, calendar: Calendar) -> int:
    """The largest single debit (refund, chargeback, transfer) a small dataset can carry:
    half a working day's captured money. Binding only below a few thousand payments.
    """
    per_day = int(p.amount[p.captured].sum()) // max(1, int(calendar.working.sum()))
    return max(100_00, per_day // 2)


def build_refunds(
    p: Payments, calendar: Calendar, ids: IdFactory, rng: np.random.Generator, faults: bool
) -> Refunds:
    captured = np.flatnonzero(
        p.captured
        & (p.created_at < calendar.as_of - 2 * DAY)
        & (p.amount <= debit_cap(p, calendar))
    )
    count = min(len(captured), max(MIN_REFUNDS, round(REFUND_SHARE * len(captured))))
    parent = np.sort(rng.choice(captured, size=count, replace=False))
    room = calendar.as_of - 600 - p.created_at[parent]
    created = (
        p.created_at[parent]
        + 3600
        + (rng.random(count) * np.minimum(room - 3600, 20 * DAY)).astype(np.int64)
    )
    # A few refunds made in the last hours before as_of: not yet due, so PENDING.
    recent = rng.choice(count, size=min(RECENT_REFUNDS, count), replace=False)
    created[recent] = calendar.as_of - rng.integers(3600, 12 * 3600, size=len(recent))
    full = rng.random(count) < 0.4
    partial = np.maximum(
        100, (p.amount[parent] * rng.integers(1000, 9000, count)) // 10000 // 100 * 100
    )
    amount = np.where(full, p.amount[parent], np.minimum(partial, p.amount[parent]))
    status = rng.choice(
        np.array(["processed", "pending", "failed"], dtype=object), size=count, p=[0.92, 0.05, 0.03]
    )
    status[recent] = "processed"
    instant = rng.random(count) < 0.06
    fee_base = np.where(instant, np.maximum(500, amount // 1000), 0)
    tax = (fee_base * 18 + 50) // 100
    fee = fee_base + tax
    speed = np.where(instant, "optimum", "normal").astype(object)

    live = status != "failed"
    np.add.at(p.amount_refunded, parent[live], amount[live])
    fully = live & (amount == p.amount[parent]) & (status == "processed")
    p.status[parent[fully]] = REFUNDED

    due = calendar.add(ist_dates(created), CALENDAR.settlement_days)
    overdue = calendar.last_day > calendar.add(due, CALENDAR.grace_days)
    key = np.full(count, -1, dtype=np.int64)
    processed = status == "processed"
    key[processed] = calendar.key_for(due[processed])
    rows = (processed & (key >= 0)).astype(np.int64)
    r = Refunds(
        id=ids.ids("rfnd_", count),
        payment=parent,
        amount=amount,
        fee=fee,
        tax=tax,
        status=status,
        speed=speed,
        created_at=created,
        due=due,
        overdue=overdue,
        rows=rows,
        row_key=np.where(rows > 0, key, -1),
        row_debit=amount + fee,
        row_payment_id=p.id[parent].copy(),
        scenario=np.full(count, "", dtype=object),
        root_cause=np.full(count, "", dtype=object),
    )
    r.scenario[recent] = "awaiting_settlement"
    if not faults:
        return r
    eligible = (rows == 1) & overdue & (due <= calendar.last_normal_day) & (r.scenario == "")
    free = eligible.copy()
    pool = int(eligible.sum())
    for name, share in REFUND_FAULTS.items():
        idx = _choose(rng, free, _share(share, pool), f"refund/{name}")
        free[idx] = False
        r.scenario[idx] = name
        if name in ("wrong_mapping", "wrong_mapping_amount"):
            others = _other_index(rng, parent[idx], np.flatnonzero(p.captured))
            r.row_payment_id[idx] = p.id[others]
            r.root_cause[idx] = "MAPPED_TO_OTHER_PAYMENT"
        if name in ("amount_mismatch", "wrong_mapping_amount"):
            delta = _delta(rng, amount[idx], 10, 2000)
            lower = rng.random(len(idx)) < 0.7
            r.row_debit[idx] = np.where(lower, r.row_debit[idx] - delta, r.row_debit[idx] + delta)
            if name == "amount_mismatch":
                r.root_cause[idx] = "REFUND_AMOUNT_DIFFERS"
        if name == "duplicate_record":
            r.rows[idx] = 2
            r.root_cause[idx] = "SETTLED_TWICE"
        if name == "not_settled":
            r.rows[idx] = 0
            r.row_key[idx] = -1
            r.root_cause[idx] = "REFUND_NOT_SETTLED"
    return r


@dataclass
class ReconRows:
    """Every recon row, one numpy column each. `key` is the settlement key (see Calendar)."""

    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["entity_id"])


ROW_DEFAULTS: dict[str, object] = {
    "created_at": 0,  # 0 = derive from the settlement time when the files are written
    "debit": 0,
    "credit": 0,
    "fee": 0,
    "tax": 0,
    "on_hold": False,
    "settled": True,
    "settled_at": -1,
    "key": -1,
    "unknown_settlement": b"",
    "payment_id": b"",
    "order_id": b"",
    "method": b"",
    "dispute_id": b"",
    "description": b"",
    "group": -1,
}


def _block(n: int, **cols: object) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, default in {**ROW_DEFAULTS, **cols}.items():
        value = np.asarray(default)
        out[name] = np.repeat(value, n) if value.ndim == 0 else value
    return out


def build_recon_rows(
    p: Payments,
    r: Refunds,
    calendar: Calendar,
    ids: IdFactory,
    rng: np.random.Generator,
    faults: bool,
) -> tuple[dict[str, np.ndarray], dict[str, StrArray]]:
    """All recon rows, plus the ids of the planted unknown-entity and dispute rows."""
    n = len(p.id)
    method_names = np.array([m.encode() for m in METHODS])
    blocks: list[dict[str, np.ndarray]] = []

    has = p.rows > 0
    idx = np.flatnonzero(has)
    idx = np.concatenate([idx, np.flatnonzero(p.rows == 2)])
    credit = p.row_amount[idx] - p.row_fee[idx]
    blocks.append(
        _block(
            len(idx),
            entity_id=p.id[idx],
            type=b"payment",
            credit=credit,
            amount=p.row_amount[idx],
            fee=p.row_fee[idx],
            tax=p.row_tax[idx],
            on_hold=p.row_on_hold[idx],
            settled=~p.row_on_hold[idx],
            created_at=p.created_at[idx],
            settled_at=p.row_settled_at[idx],
            key=p.row_key[idx],
            unknown_settlement=p.row_unknown_settlement[idx],
            payment_id=p.row_payment_id[idx],
            order_id=p.row_order_id[idx],
            method=method_names[p.method[idx]],
        )
    )

    ridx = np.flatnonzero(r.rows > 0)
    ridx = np.concatenate([ridx, np.flatnonzero(r.rows == 2)])
    parent = r.payment[ridx]
    blocks.append(
        _block(
            len(ridx),
            entity_id=r.id[ridx],
            type=b"refund",
            debit=r.row_debit[ridx],
            amount=r.amount[ridx],
            fee=r.fee[ridx],
            tax=r.tax[ridx],
            created_at=r.created_at[ridx],
            key=r.row_key[ridx],
            payment_id=r.row_payment_id[ridx],
            order_id=p.order_id[parent],
            method=method_names[p.method[parent]],
            group=ridx,
        )
    )

    normal_keys = np.flatnonzero(calendar.available & ~np.repeat(calendar.bank_pending_day, 2))
    # Keep clear of the first week so every settlement has payments to carry its debits.
    normal_keys = normal_keys[normal_keys >= 2 * 10]
    settled_captured = np.flatnonzero(
        p.captured & (p.rows == 1) & (p.scenario == "") & (p.amount <= debit_cap(p, calendar))
    )
    planted: dict[str, StrArray] = {}
    group_base = len(r.id)

    def add_rows(kind: str, count: int, entity_prefix: str, **cols: object) -> StrArray:
        nonlocal group_base
        entity = ids.ids(entity_prefix, count)
        keys = normal_keys[rng.integers(0, len(normal_keys), size=count)]
        block = _block(count, entity_id=entity, key=keys, **cols)
        if kind in ("debit",):
            block["group"] = group_base + np.arange(count)
            group_base += count
        blocks.append(block)
        return entity

    def sample_amounts(count: int) -> IntArray:
        result: IntArray = p.amount[settled_captured[rng.integers(0, len(settled_captured), count)]]
        return result

    if faults:
        k = _share(PHANTOM_PAYMENT_ROWS, n)
        amounts = sample_amounts(k)
        fees = (amounts * 170 + 5000) // 10000
        taxes = (fees * 18 + 50) // 100
        planted["unknown_payment"] = add_rows(
            "credit",
            k,
            "pay_",
            type=b"payment",
            amount=amounts,
            fee=fees + taxes,
            tax=taxes,
            credit=amounts - fees - taxes,
            order_id=ids.ids("order_", k),
            method=b"card",
        )
        k = _share(PHANTOM_REFUND_ROWS, n)
        amounts = sample_amounts(k) // 2
        planted["unknown_refund"] = add_rows(
            "debit",
            k,
            "rfnd_",
            type=b"refund",
            amount=amounts,
            debit=amounts,
            payment_id=p.id[settled_captured[rng.integers(0, len(settled_captured), k)]],
        )
        k = _share(DISPUTE_DEBITS, n)
        amounts = sample_amounts(k)
        disputes = ids.ids("disp_", k)
        planted["dispute_debit"] = add_rows(
            "debit",
            k,
            "adj_",
            type=b"adjustment",
            amount=amounts,
            debit=amounts,
            dispute_id=disputes,
            description=b"Chargeback debit",
        )
    k = _share(FEE_REVERSALS, n)
    amounts = rng.integers(100, 500_000, k)
    add_rows(
        "credit",
        k,
        "adj_",
        type=b"adjustment",
        amount=amounts,
        credit=amounts,
        description=b"Fee reversal",
    )
    k = _share(DISPUTE_REVERSALS, n)
    amounts = sample_amounts(k)
    add_rows(
        "credit",
        k,
        "adj_",
        type=b"adjustment",
        amount=amounts,
        credit=amounts,
        dispute_id=ids.ids("disp_", k),
        description=b"Chargeback reversal",
    )
    k = _share(PLATFORM_FEE_DEBITS, n)
    amounts = rng.integers(10_000, 200_000, k)
    add_rows(
        "debit",
        k,
        "adj_",
        type=b"adjustment",
        amount=amounts,
        debit=amounts,
        description=b"Platform fee",
    )
    k = _share(TRANSFERS, n)
    source = settled_captured[rng.integers(0, len(settled_captured), k)]
    amounts = p.amount[source] // 4 + 1
    fees = (amounts * 25 + 5000) // 10000
    taxes = (fees * 18 + 50) // 100
    planted["transfer"] = add_rows(
        "debit",
        k,
        "trf_",
        type=b"transfer",
        amount=amounts,
        fee=fees + taxes,
        tax=taxes,
        debit=amounts + fees + taxes,
        payment_id=p.id[source],
    )

    rows = {name: np.concatenate([b[name] for b in blocks]) for name in blocks[0]}
    return rows, planted


MIN_NET = 100_00  # a settlement carries at least ₹100 net of its debits


def balance_debits(rows: dict[str, np.ndarray], calendar: Calendar) -> None:
    """Move debit rows (refunds, chargebacks, fees, transfers) to another cycle when a cycle's
    debits would swallow its credits, as Razorpay carries a debit forward rather than pay out
    a negative settlement: to the nearest later cycle that can carry it, or, at the very end
    of the period, the nearest earlier one. No reason code depends on which settlement a
    debit lands in, so the labels are unaffected.
    """
    key = rows["key"]
    n_keys = len(calendar.cycle_time)
    inside = key >= 0
    credit = np.zeros(n_keys, dtype=np.int64)
    debit = np.zeros(n_keys, dtype=np.int64)
    np.add.at(credit, key[inside], rows["credit"][inside])
    np.add.at(debit, key[inside], rows["debit"][inside])
    short = np.flatnonzero((credit - debit < MIN_NET) & (debit > 0))
    if len(short) == 0:
        return
    movable = inside & (rows["group"] >= 0) & (rows["debit"] > 0)
    movable &= np.isin(key, short)
    frame = pd.DataFrame(
        {"row": np.flatnonzero(movable), "key": key[movable], "group": rows["group"][movable]}
    )
    frame["debit"] = rows["debit"][frame["row"].to_numpy()]
    groups = frame.groupby(["key", "group"], sort=True)["debit"].sum().reset_index()
    members = frame.groupby("group")["row"].apply(np.asarray).to_dict()
    for k in (int(x) for x in short):
        mine = groups[groups["key"] == k].sort_values("debit", ascending=False, kind="stable")
        for group, amount in zip(mine["group"], mine["debit"], strict=True):
            if credit[k] - debit[k] >= MIN_NET:
                break
            headroom = credit - debit - MIN_NET >= amount
            headroom[k] = False
            later = np.flatnonzero(headroom[k + 1 :])
            earlier = np.flatnonzero(headroom[:k])
            if len(later):
                target = k + 1 + int(later[0])
            elif len(earlier):
                target = int(earlier[-1])
            else:
                raise GenerationError("debits exceed credits; generate more payments")
            key[members[group]] = target
            debit[k] -= int(amount)
            debit[target] += int(amount)


@dataclass
class Settlements:
    """Settlement entities, one per settlement key that carries recon rows."""

    key: IntArray
    id: StrArray
    utr: StrArray  # b"" while a settlement is only created
    status: npt.NDArray[np.object_]
    created_at: IntArray
    day: DayArray
    amount: IntArray  # as Razorpay states it
    row_sum: IntArray  # Σ credit − Σ debit of its recon rows
    fees: IntArray
    tax: IntArray
    bank_overdue: BoolArray
    scenario: npt.NDArray[np.object_]
    consolidated_group: IntArray  # -1, or the id of the consolidated bank credit's group
    bank_amount: IntArray  # what the bank credits for it (when a credit is written)

    def index_of_key(self, keys: IntArray) -> IntArray:
        """Index of each key in this table (keys must be present)."""
        result: IntArray = np.searchsorted(self.key, keys)
        return result


def build_settlements(
    rows: dict[str, np.ndarray],
    calendar: Calendar,
    ids: IdFactory,
    rng: np.random.Generator,
    faults: bool,
    bank: bool,
) -> Settlements:
    key = rows["key"]
    inside = key >= 0
    frame = pd.DataFrame(
        {
            "key": key[inside],
            "credit": rows["credit"][inside],
            "debit": rows["debit"][inside],
            "fee": rows["fee"][inside],
            "tax": rows["tax"][inside],
        }
    )
    sums = frame.groupby("key", sort=True).sum()
    keys = sums.index.to_numpy(dtype=np.int64)
    count = len(keys)
    row_sum = (sums["credit"] - sums["debit"]).to_numpy(dtype=np.int64)
    day = calendar.key_day(keys)
    day_index = keys // 2
    cycle = keys % 2
    pending_day = calendar.bank_pending_day[day_index]
    status = np.full(count, "processed", dtype=object)
    status[pending_day & (cycle == 1)] = "created"
    scenario = np.full(count, "clean" if bank else "no_bank_statement", dtype=object)
    scenario[status == "created"] = "awaiting_settlement"
    if bank:
        scenario[pending_day & (status == "processed")] = "awaiting_bank_credit"
    amount = row_sum.copy()
    consolidated_group = np.full(count, -1, dtype=np.int64)

    if faults:
        # Candidates: ordinary processed settlements after the first week.
        ordinary = (status == "processed") & ~pending_day & (day_index >= 7)
        used_days: set[int] = set()
        if bank:
            both = pd.Series(ordinary).groupby(day_index).transform("sum").to_numpy() == 2
            pair_days = np.unique(day_index[ordinary & both])
            if len(pair_days) < CONSOLIDATED_DAYS:
                raise GenerationError("too few two-cycle days for consolidated credits")
            for group, d in enumerate(rng.choice(pair_days, CONSOLIDATED_DAYS, replace=False)):
                members = np.flatnonzero(day_index == d)
                scenario[members] = "consolidated"
                consolidated_group[members] = group
                used_days.add(int(d))
        plan = (
            SETTLEMENT_FAULTS
            if bank
            else {k: SETTLEMENT_FAULTS[k] for k in SETTLEMENT_FAULTS_WITHOUT_BANK}
        )
        free_days = [int(d) for d in np.unique(day_index[ordinary]) if int(d) not in used_days]
        order = rng.permutation(len(free_days))
        needed = sum(plan.values())
        if len(free_days) < needed:
            raise GenerationError("too few settlement days for the settlement faults")
        picks = iter(free_days[i] for i in order[:needed])
        for name, n_faults in plan.items():
            for _ in range(n_faults):
                members = np.flatnonzero((day_index == next(picks)) & ordinary)
                chosen = int(members[rng.integers(0, len(members))])
                scenario[chosen] = name
                if name == "failed":
                    status[chosen] = "failed"
                elif name in ("sum_mismatch", "sum_and_bank_amount"):
                    delta = 1 + row_sum[chosen] * int(rng.integers(10, 500)) // 10000
                    amount[chosen] += delta if rng.random() < 0.5 else -delta

    utr = ids.utrs(count)
    utr[status == "created"] = b""
    bank_amount = amount.copy()
    for i in np.flatnonzero(
        np.isin(scenario, ["bank_short", "bank_excess", "sum_and_bank_amount"])
    ):
        delta = 1 + amount[i] * int(rng.integers(1, 200)) // 10000
        bank_amount[i] = amount[i] + (delta if scenario[i] == "bank_excess" else -delta)
    bank_due = calendar.add(day, CALENDAR.bank_days)
    return Settlements(
        key=keys,
        id=ids.ids("setl_", count),
        utr=utr,
        status=status,
        created_at=calendar.cycle_time[keys],
        day=day,
        amount=amount,
        row_sum=row_sum,
        fees=sums["fee"].to_numpy(dtype=np.int64),
        tax=sums["tax"].to_numpy(dtype=np.int64),
        bank_overdue=calendar.last_day > bank_due,
        scenario=scenario,
        consolidated_group=consolidated_group,
        bank_amount=bank_amount,
    )
