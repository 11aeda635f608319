"""Hand-controlled scenarios, one or more per outcome of spec section 5.

Each function adds entities to a `World` and states, from the spec text, the outcome each
must get. Dates are computed from the world's own calendar (section 4), so the same
scenario holds under other parameters and holidays.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from tests.independent.model import (
    ABSENT,
    BankLine,
    Batch,
    Expect,
    World,
    at,
    ist_date,
)

E = "EXCEPTION"
M = "MATCHED"
P = "PENDING"


def bank_expect(outcome: str, scenario: str) -> Expect:
    """A bank credit's expectation: MATCHED, or an exception code."""
    if outcome == M:
        return Expect("bank_entry", "", M, scenario=scenario)
    return Expect("bank_entry", "", E, outcome, scenario=scenario)


def _fill(w: World, bat: Batch, k: int = 2, scenario: str = "filler payment") -> None:
    """`k` well-behaved payments settled on time in `bat`."""
    for _ in range(k):
        created = w.moment(w.cal.back(ist_date(bat.created), w.settlement_days), 8, 10)
        pay = w.payment(created)
        w.pay_row(pay, bat)
        w.expect("payment", pay["id"], M, scenario=scenario)


def _past_day(w: World, low: int = 3, high: int = 16) -> date:
    return w.wd_back(w.rng.randrange(low, high))


def matched_payments(w: World, n: int, intl_share: float = 0.2, refunds: bool = True) -> None:
    """Captured, one correct recon row, settled by due(d) + G: MATCHED (with refunds)."""
    for _ in range(n):
        intl = w.rng.random() < intl_share
        settle_day = _past_day(w)
        extra = w.rng.randrange(w.grace_days + 1)
        created = w.moment(w.cal.back(settle_day, w.cycle(intl) + extra))
        pay = w.payment(created, international=intl, free=w.rng.random() < 0.15)
        bat = w.regular(settle_day)
        w.pay_row(pay, bat)
        w.expect(
            "payment",
            pay["id"],
            M,
            settlement_id=bat.id,
            scenario="captured payment settled on time",
        )
        if refunds and w.rng.random() < 0.25:
            refund_day = w.cal.add(ist_date(created), w.rng.randrange(1, 4))
            if w.cal.add(refund_day, w.settlement_days) <= w.wd_back(3):
                full = w.rng.random() < 0.3 and (pay["amount"] % 100 == 0 or not w.whole_refunds)
                ref = w.refund(pay, w.moment(refund_day), amount=pay["amount"] if full else None)
                w.refund_row(ref, w.regular(w.cal.add(refund_day, w.settlement_days)))
                w.expect("refund", ref["id"], M, scenario="processed refund, one correct recon row")


def captured_variants(w: World) -> None:
    """Section 5: captured = `captured` true, or status captured/refunded."""
    day = _past_day(w)
    created = w.moment(w.cal.back(day, w.settlement_days))
    pay = w.payment(created, captured=None)
    w.pay_row(pay, w.regular(day))
    w.expect("payment", pay["id"], M, scenario="captured empty, status captured")
    pay = w.payment(
        w.moment(w.cal.back(day, w.settlement_days)), captured=None, amount=w.amount() // 100 * 100
    )
    ref = w.refund(pay, w.moment(w.cal.back(day, 1)), amount=pay["amount"])
    assert pay["status"] == "refunded"
    w.pay_row(pay, w.regular(day))
    w.refund_row(ref, w.regular(w.cal.add(ist_date(ref["created_at"]), w.settlement_days)))
    w.expect("payment", pay["id"], M, scenario="captured empty, status refunded")
    w.expect("refund", ref["id"], M, scenario="full refund")


def duplicates(w: World) -> None:
    day = _past_day(w)
    bat = w.regular(day)
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days)))
    w.pay_row(pay, bat)
    w.pay_row(pay, bat)
    w.expect(
        "payment", pay["id"], E, "DUPLICATE_RECONCILIATION_RECORD", scenario="two identical rows"
    )
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days)))
    for other in (bat, bat, w.batch(at(day, 18, 30))):
        w.pay_row(pay, other)
    w.expect(
        "payment",
        pay["id"],
        E,
        "DUPLICATE_RECONCILIATION_RECORD",
        scenario="three rows, two settlements",
    )
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days)))
    w.pay_row(pay, bat)
    w.pay_row(pay, bat, amount=pay["amount"] + 5000)
    w.expect(
        "payment",
        pay["id"],
        E,
        "DUPLICATE_RECONCILIATION_RECORD",
        exact=False,
        scenario="two rows, one with another amount (priority 1 over 3)",
    )


def wrong_mapping(w: World, victim: dict[str, Any]) -> None:
    day = _past_day(w)
    created = lambda: w.moment(w.cal.back(day, w.settlement_days))  # noqa: E731
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), payment_id=victim["id"])
    w.expect(
        "payment",
        pay["id"],
        E,
        "WRONG_MAPPING",
        exposure_amount=0,
        scenario="row payment_id names another payment",
    )
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), order_id=w.new_id("order_"))
    w.expect(
        "payment",
        pay["id"],
        E,
        "WRONG_MAPPING",
        exposure_amount=0,
        scenario="both order_ids set and differ",
    )
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), order_id=None)
    w.expect("payment", pay["id"], M, scenario="row order_id empty: no mapping check")
    pay = w.payment(created(), order_id=None)
    w.pay_row(pay, w.regular(day), order_id=w.new_id("order_"))
    w.expect("payment", pay["id"], M, scenario="payment order_id empty: no mapping check")
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), payment_id=pay["id"])
    w.expect("payment", pay["id"], M, scenario="row payment_id set to the payment's own id")
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), order_id=w.new_id("order_"), amount=pay["amount"] + 100)
    w.expect(
        "payment",
        pay["id"],
        E,
        "WRONG_MAPPING",
        also=("AMOUNT_MISMATCH",),
        scenario="mapping and amount",
    )
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days + w.grace_days + 1)))
    w.pay_row(pay, w.regular(day), payment_id=victim["id"])
    w.expect(
        "payment",
        pay["id"],
        E,
        "WRONG_MAPPING",
        also=("TIMING_WINDOW_EXCEEDED",),
        scenario="mapping and late",
    )


def amount_mismatch(w: World) -> None:
    day = _past_day(w)
    created = lambda: w.moment(w.cal.back(day, w.settlement_days))  # noqa: E731
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), amount=pay["amount"] + 10_000)
    w.expect("payment", pay["id"], E, "AMOUNT_MISMATCH", scenario="row amount higher")
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), amount=pay["amount"] - 1)
    w.expect("payment", pay["id"], E, "AMOUNT_MISMATCH", scenario="row amount one paisa lower")
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days + w.grace_days + 2)))
    w.pay_row(pay, w.regular(day), amount=pay["amount"] // 2)
    w.expect(
        "payment",
        pay["id"],
        E,
        "AMOUNT_MISMATCH",
        also=("TIMING_WINDOW_EXCEEDED",),
        scenario="amount and late",
    )
    pay = w.payment(created())
    w.pay_row(pay, None, amount=pay["amount"] + 300, settled_at=at(day, 11))
    w.expect(
        "payment",
        pay["id"],
        E,
        "AMOUNT_MISMATCH",
        also=("MISSING_SETTLEMENT",),
        scenario="amount and no settlement",
    )


def settlement_amount_discrepancy(w: World) -> None:
    day = _past_day(w)
    created = lambda: w.moment(w.cal.back(day, w.settlement_days))  # noqa: E731
    pay = w.payment(created())
    while not pay["tax"]:
        pay = w.payment(created())
    w.pay_row(pay, w.regular(day), credit=pay["amount"] - pay["fee"] - pay["tax"])
    w.expect(
        "payment",
        pay["id"],
        E,
        "SETTLEMENT_AMOUNT_DISCREPANCY",
        exposure_amount=pay["tax"],
        scenario="GST deducted twice",
    )
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), fee=pay["fee"] + 500, credit=pay["amount"] - pay["fee"] - 500)
    w.expect(
        "payment",
        pay["id"],
        E,
        "SETTLEMENT_AMOUNT_DISCREPANCY",
        exposure_amount=500,
        scenario="fee charged differs",
    )
    pay = w.payment(created())
    w.pay_row(pay, w.regular(day), credit=pay["amount"] - pay["fee"] + 1)
    w.expect(
        "payment",
        pay["id"],
        E,
        "SETTLEMENT_AMOUNT_DISCREPANCY",
        exposure_amount=1,
        scenario="credit one paisa high",
    )
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days + w.grace_days + 1)))
    w.pay_row(pay, w.regular(day), credit=pay["amount"])
    w.expect(
        "payment",
        pay["id"],
        E,
        "SETTLEMENT_AMOUNT_DISCREPANCY",
        also=("TIMING_WINDOW_EXCEEDED",),
        scenario="no fee deducted, and late",
    )
    pay = w.payment(created(), free=True)
    w.pay_row(pay, w.regular(day))
    w.expect("payment", pay["id"], M, scenario="zero fee, credit = amount")


def missing_settlement(w: World) -> None:
    day = _past_day(w)
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days)))
    w.pay_row(pay, None, settled_at=at(day, 11))
    w.expect("payment", pay["id"], E, "MISSING_SETTLEMENT", scenario="row settlement_id empty")
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days)))
    w.pay_row(pay, None, settlement_id=w.new_id("setl_"), settled_at=at(day, 11))
    w.expect(
        "payment",
        pay["id"],
        E,
        "MISSING_SETTLEMENT",
        scenario="row names a settlement not in the dataset",
    )
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days + w.grace_days + 3)))
    w.pay_row(pay, None, settlement_id=w.new_id("setl_"), settled_at=at(day, 11))
    w.expect(
        "payment",
        pay["id"],
        E,
        "MISSING_SETTLEMENT",
        also=("TIMING_WINDOW_EXCEEDED",),
        scenario="unknown settlement, late",
    )
    pay = w.payment(w.moment(w.wd_back(12)))
    w.pay_row(pay, None, settled=False)
    w.expect(
        "payment",
        pay["id"],
        E,
        "MISSING_SETTLEMENT",
        sure=False,
        scenario="row neither settled nor held, no settlement_id",
        note="code 5 by the letter; only held rows are exempt",
    )


def timing(w: World) -> None:
    grace = w.grace_days
    for intl in (False, True):
        cycle = w.cycle(intl)
        day = _past_day(w, 3, 10)
        pay = w.payment(w.moment(w.cal.back(day, cycle + grace + 1)), international=intl)
        w.pay_row(pay, w.regular(day))
        w.expect(
            "payment",
            pay["id"],
            E,
            "TIMING_WINDOW_EXCEEDED",
            exposure_amount=0,
            scenario=f"settled one working day late, intl={intl}",
        )
        pay = w.payment(w.moment(w.cal.back(day, cycle + grace)), international=intl)
        w.pay_row(pay, w.regular(day))
        w.expect("payment", pay["id"], M, scenario=f"settled on the last day of grace, intl={intl}")
    # IST, not UTC: 00:20 IST is the previous UTC day.
    day = _past_day(w, 3, 10)
    created = w.moment(w.cal.back(day, w.settlement_days + grace + 1))
    pay = w.payment(created)
    w.pay_row(pay, w.batch(at(day, 0, 20)))
    w.expect(
        "payment",
        pay["id"],
        E,
        "TIMING_WINDOW_EXCEEDED",
        scenario="settled 00:20 IST the day after the deadline",
    )
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days + grace)))
    w.pay_row(pay, w.batch(at(day, 23, 50)))
    w.expect("payment", pay["id"], M, scenario="settled 23:50 IST on the deadline")
    created_day = w.cal.back(day, w.settlement_days + grace)
    pay = w.payment(at(created_day, 0, 30))
    w.pay_row(pay, w.regular(day))
    w.expect(
        "payment",
        pay["id"],
        M,
        scenario="created 00:30 IST (previous UTC day), settled on the deadline",
    )


def weekend(w: World) -> None:
    """Created on a Saturday: `d + N working days` counted from the Saturday itself.

    The spec can be read two ways here: count N working days forward from d (Saturday + 2
    = Tuesday), or first roll d to Monday (Monday + 2 = Wednesday). These expectations
    follow the first reading and are marked unsure.
    """
    day = w.wd_back(8)
    while day.weekday() != 5:
        day -= timedelta(days=1)
    deadline = w.cal.add(day, w.settlement_days + w.grace_days)
    settle = w.cal.add(deadline, 1)
    pay = w.payment(at(day, 11))
    w.pay_row(pay, w.regular(settle))
    w.expect(
        "payment",
        pay["id"],
        E,
        "TIMING_WINDOW_EXCEEDED",
        sure=False,
        scenario="created on a Saturday, settled the working day after d + N + G (counted from d)",
        note="rolling d to Monday first would make this on time",
    )
    pay = w.payment(at(day, 11))
    w.pay_row(pay, w.regular(deadline))
    w.expect(
        "payment",
        pay["id"],
        M,
        scenario="created on a Saturday, settled on d + N + G (both readings)",
    )


def missing_recon(w: World) -> None:
    for intl in (False, True):
        last = w.last_overdue_day(intl)
        pay = w.payment(at(last, 23, 40), international=intl)
        w.expect(
            "payment",
            pay["id"],
            E,
            "MISSING_RECONCILIATION_RECORD",
            scenario=f"no row, overdue by one day (23:40 IST), intl={intl}",
        )
        pay = w.payment(w.moment(w.cal.back(last, 6)), international=intl)
        w.expect(
            "payment",
            pay["id"],
            E,
            "MISSING_RECONCILIATION_RECORD",
            scenario=f"no row, long overdue, intl={intl}",
        )


def pending_awaiting(w: World) -> None:
    last = w.last_overdue_day()
    first = w.cal.add(last, 1)
    pay = w.payment(at(first, 0, 30))
    w.expect(
        "payment",
        pay["id"],
        P,
        "AWAITING_SETTLEMENT",
        scenario="no row, first day not overdue (00:30 IST = previous UTC day)",
    )
    pay = w.payment(at(w.today, 0, 5))
    w.expect("payment", pay["id"], P, "AWAITING_SETTLEMENT", scenario="no row, created today")
    pay = w.payment(w.moment(last), international=True)
    w.expect(
        "payment",
        pay["id"],
        P,
        "AWAITING_SETTLEMENT",
        scenario="international: overdue on the domestic cycle, not on T+7",
    )


def on_hold(w: World) -> None:
    old = w.moment(w.wd_back(20))
    pay = w.payment(old)
    w.pay_row(pay, None, on_hold=True, settled=False)
    w.expect("payment", pay["id"], P, "ON_HOLD", scenario="held row, no settlement, long past due")
    pay = w.payment(old)
    w.pay_row(pay, None, on_hold=True, settled=False, settlement_id=w.new_id("setl_"))
    w.expect(
        "payment",
        pay["id"],
        P,
        "ON_HOLD",
        scenario="held row naming an unknown settlement (code 5 does not apply)",
    )
    pay = w.payment(old)
    w.pay_row(pay, None, on_hold=True, settled=False, amount=pay["amount"] + 700)
    w.expect(
        "payment",
        pay["id"],
        E,
        "AMOUNT_MISMATCH",
        scenario="held row with another amount: codes 1-4 win, 5-6 do not apply",
    )
    pay = w.payment(old)
    w.pay_row(pay, None, on_hold=True, settled=False, credit=pay["amount"] - pay["fee"] - 1)
    w.expect(
        "payment",
        pay["id"],
        E,
        "SETTLEMENT_AMOUNT_DISCREPANCY",
        scenario="held row, credit differs",
    )
    pay = w.payment(old)
    w.pay_row(pay, None, on_hold=True, settled=False, order_id=w.new_id("order_"))
    w.expect("payment", pay["id"], E, "WRONG_MAPPING", scenario="held row, order differs")
    pay = w.payment(old)
    w.pay_row(pay, None, on_hold=True, settled=False)
    w.pay_row(pay, None, on_hold=True, settled=False)
    w.expect("payment", pay["id"], E, "DUPLICATE_RECONCILIATION_RECORD", scenario="two held rows")
    day = _past_day(w)
    pay = w.payment(w.moment(w.cal.back(day, w.settlement_days)))
    w.pay_row(pay, w.regular(day), on_hold=True, settled=True)
    w.expect(
        "payment", pay["id"], M, scenario="on_hold true but settled true: released and settled"
    )


def status_mismatch(w: World) -> None:
    day = _past_day(w)
    for status, captured in (
        ("failed", False),
        ("authorized", False),
        ("created", None),
        ("authorized", None),
    ):
        pay = w.payment(
            w.moment(w.cal.back(day, w.settlement_days)), status=status, captured=captured
        )
        fee, tax = w.fee_for(pay["amount"])
        w.pay_row(pay, w.regular(day), fee=fee, tax=tax, credit=pay["amount"] - fee)
        w.expect(
            "payment",
            pay["id"],
            E,
            "STATUS_MISMATCH",
            scenario=f"{status} payment with a settled recon row",
        )
    for status in ("failed", "authorized", "created"):
        pay = w.payment(w.moment(w.wd_back(15)), status=status, captured=False)
        w.expect(
            "payment",
            pay["id"],
            ABSENT,
            scenario=f"{status} payment without a recon row gets no outcome",
        )


def refund_cases(w: World, parents: list[dict[str, Any]], intl_parent: dict[str, Any]) -> None:
    def one(parent: dict[str, Any], **kw: Any) -> dict[str, Any]:
        return w.refund(parent, w.moment(w.cal.add(ist_date(parent["created_at"]), 1)), **kw)

    def batch_for(ref: dict[str, Any]) -> Batch:
        return w.regular(w.cal.add(ist_date(ref["created_at"]), w.settlement_days))

    it = iter(parents)
    ref = one(next(it))
    w.refund_row(ref, batch_for(ref), fee=500)
    w.expect("refund", ref["id"], M, scenario="instant refund: debit = amount + fee")
    ref = one(next(it))
    w.refund_row(ref, batch_for(ref))
    w.refund_row(ref, batch_for(ref))
    w.expect("refund", ref["id"], E, "DUPLICATE_RECONCILIATION_RECORD", scenario="two refund rows")
    victim = next(it)
    ref = one(next(it))
    w.refund_row(ref, batch_for(ref), payment_id=victim["id"])
    w.expect("refund", ref["id"], E, "WRONG_MAPPING", scenario="refund row names another payment")
    ref = one(next(it))
    w.refund_row(ref, batch_for(ref), debit=ref["amount"] - 100)
    w.expect(
        "refund",
        ref["id"],
        E,
        "REFUND_AMOUNT_MISMATCH",
        exposure_amount=100,
        scenario="debit lower than amount",
    )
    ref = one(next(it))
    w.refund_row(ref, batch_for(ref), fee=500, debit=ref["amount"])
    w.expect(
        "refund",
        ref["id"],
        E,
        "REFUND_AMOUNT_MISMATCH",
        exposure_amount=500,
        scenario="fee charged but not in debit",
    )
    ref = one(next(it))
    w.refund_row(ref, batch_for(ref), payment_id=victim["id"], debit=ref["amount"] + 2500)
    w.expect(
        "refund",
        ref["id"],
        E,
        "WRONG_MAPPING",
        also=("REFUND_AMOUNT_MISMATCH",),
        scenario="mapping and debit",
    )
    last = w.last_overdue_day()
    ref = w.refund(next(it), at(last, 23, 30))
    w.expect(
        "refund",
        ref["id"],
        E,
        "MISSING_RECONCILIATION_RECORD",
        scenario="no refund row, overdue by one day",
    )
    ref = w.refund(next(it), at(w.cal.add(last, 1), 0, 15))
    w.expect(
        "refund",
        ref["id"],
        P,
        "AWAITING_SETTLEMENT",
        scenario="no refund row, first day not overdue (00:15 IST)",
    )
    ref = w.refund(intl_parent, w.moment(last))
    w.expect(
        "refund",
        ref["id"],
        E,
        "MISSING_RECONCILIATION_RECORD",
        scenario="refund of an international payment follows the domestic cycle",
    )
    ref = one(next(it))
    w.refund_row(ref, None, settled=False)
    w.expect(
        "refund",
        ref["id"],
        M,
        scenario="refund row not yet settled: refunds have no settlement code",
    )
    ref = one(next(it), status="pending")
    w.expect("refund", ref["id"], ABSENT, scenario="pending refund gets no outcome")
    ref = one(next(it), status="failed")
    w.expect("refund", ref["id"], ABSENT, scenario="failed refund gets no outcome")
    ref = one(next(it), status="pending")
    w.refund_row(ref, batch_for(ref))
    w.expect(
        "refund",
        ref["id"],
        ABSENT,
        sure=False,
        scenario="pending refund that has a recon row",
        note="'Refunds in other states get no outcome'; the row's entity is in the dataset, "
        "so no PAYMENT_ID_MISMATCH either",
    )


def unknown_rows(w: World) -> None:
    day = _past_day(w)
    bat = w.regular(day)
    stranger = w.new_id("pay_")
    amount = w.amount()
    w.row(
        stranger,
        "payment",
        amount=amount,
        credit=amount - amount // 50,
        fee=amount // 50,
        created=w.moment(w.cal.back(day, 2)),
        batch=bat,
    )
    w.expect(
        "recon_row",
        stranger,
        E,
        "PAYMENT_ID_MISMATCH",
        exposure_amount=0,
        scenario="payment row for a payment not in the dataset",
    )
    parent = w.payments[0]
    stranger = w.new_id("rfnd_")
    w.row(
        stranger,
        "refund",
        amount=10_000,
        debit=10_000,
        created=w.moment(w.cal.back(day, 2)),
        batch=bat,
        payment_id=parent["id"],
    )
    w.expect(
        "recon_row",
        stranger,
        E,
        "PAYMENT_ID_MISMATCH",
        scenario="refund row for a refund not in the dataset",
    )
    for debit, credit, dispute in (
        (45_000, 0, True),
        (1_23_456, 0, True),
        (0, 45_000, True),
        (9_900, 0, False),
        (0, 9_900, False),
    ):
        adj = w.new_id("adj_")
        dispute_id = w.new_id("disp_") if dispute else None
        w.row(
            adj,
            "adjustment",
            amount=debit or credit,
            debit=debit,
            credit=credit,
            created=w.moment(w.cal.back(day, 1)),
            batch=bat,
            dispute_id=dispute_id,
        )
        if dispute and debit:
            w.expect(
                "recon_row",
                adj,
                E,
                "DISPUTE_DEBIT",
                exposure_amount=debit,
                scenario="dispute debit adjustment",
            )
        else:
            w.expect(
                "recon_row",
                adj,
                ABSENT,
                scenario="adjustment that is not a dispute debit gets no outcome",
            )
    trf = w.new_id("trf_")
    w.row(
        trf,
        "transfer",
        amount=20_000,
        debit=20_000,
        created=w.moment(w.cal.back(day, 1)),
        batch=bat,
        payment_id=parent["id"],
    )
    # The spec gives a transfer row no outcome; docs/engine.md (Route transfers, beyond the
    # spec) gives each recon transfer entity_id one when there is no transfers file.
    w.expect(
        "transfer",
        trf,
        M,
        scenario="transfer row without a transfers file (docs/engine.md)",
        sure=False,
        note="spec: no outcome; docs/engine.md: MATCHED when its settlement is known",
    )


class Days:
    """Distinct past working days, so unmatched settlements never share a creation day."""

    def __init__(self, w: World, low: int = 4, high: int = 40) -> None:
        self.days = [w.wd_back(k) for k in range(low, high)]
        w.rng.shuffle(self.days)

    def take(self) -> date:
        return self.days.pop()


def settlement_checks(w: World, days: Days) -> None:
    """Processed-settlement codes in priority order (section 5), and the plain states."""

    def special(created: Any, expect: Expect | None = None, **kw: Any) -> Batch:
        bat = w.batch(created, bank="custom", **kw)
        _fill(
            w,
            bat,
            2 if kw.get("status", "processed") != "created" else 0,
            "payment in a special settlement",
        )
        bat.expect = expect
        if expect is not None:
            expect.entity_id = bat.id
            w.expects.append(expect)
        return bat

    def credit(
        bat: Batch, delta: int = 0, style: int | None = None, day: date | None = None, exp: str = M
    ) -> None:
        def write() -> None:
            assert bat.amount is not None
            line = w.credit_line(bat, bat.amount + delta, day, style)
            line.expect = bank_expect(exp, f"credit for {bat.id}")
            line.expect.settlement_id = bat.id

        w.later.append(write)

    bat = special(
        w.moment(w.wd_back(1)),
        Expect(
            "settlement", "", P, "AWAITING_SETTLEMENT", scenario="created settlement, no UTR yet"
        ),
        status="created",
        sum_delta=5_00_000,
    )
    bat.utr = None
    bat = special(
        w.moment(days.take()),
        Expect("settlement", "", E, "SETTLEMENT_FAILED", scenario="failed settlement"),
        status="failed",
    )
    bat = special(
        w.moment(days.take()),
        Expect(
            "settlement",
            "",
            E,
            "SETTLEMENT_SUM_MISMATCH",
            exposure_amount=12_345,
            scenario="sum off, bank credit equals the settlement",
        ),
        sum_delta=12_345,
    )
    credit(bat)
    bat = special(
        w.moment(days.take()),
        Expect(
            "settlement",
            "",
            E,
            "SETTLEMENT_SUM_MISMATCH",
            also=("BANK_UTR_AMOUNT_MISMATCH",),
            scenario="sum off, bank credit equals the rows",
        ),
        sum_delta=5_000,
    )
    credit(bat, -5_000)
    bat = special(
        w.moment(days.take()),
        Expect(
            "settlement",
            "",
            E,
            "SETTLEMENT_SUM_MISMATCH",
            also=("MISSING_BANK_ENTRY",),
            scenario="sum off, no bank credit",
        ),
        sum_delta=-777,
    )
    bat = special(
        w.moment(days.take()),
        Expect(
            "settlement",
            "",
            E,
            "DUPLICATE_BANK_CREDIT",
            scenario="two identical credits with its UTR",
        ),
    )
    credit(bat, style=0)
    credit(bat, style=4)
    bat = special(
        w.moment(days.take()),
        Expect(
            "settlement",
            "",
            E,
            "DUPLICATE_BANK_CREDIT",
            scenario="two credits with its UTR, one of another amount (priority over amount)",
        ),
    )
    credit(bat, style=0)
    credit(bat, 100, style=2)
    bat = special(
        w.moment(days.take()),
        Expect(
            "settlement",
            "",
            E,
            "BANK_UTR_AMOUNT_MISMATCH",
            exposure_amount=100,
            scenario="credit one rupee high",
        ),
    )
    credit(bat, 100)
    bat = special(
        w.moment(days.take()),
        Expect(
            "settlement",
            "",
            E,
            "BANK_UTR_AMOUNT_MISMATCH",
            exposure_amount=1,
            scenario="credit one paisa low",
        ),
    )
    credit(bat, -1, style=1)
    bat = special(
        w.moment(days.take()),
        Expect("settlement", "", E, "MISSING_BANK_ENTRY", scenario="no credit, long overdue"),
    )
    bat = special(
        w.moment(w.wd_back(w.bank_days + 1)),
        Expect("settlement", "", E, "MISSING_BANK_ENTRY", scenario="no credit, overdue by one day"),
    )
    bat = special(
        at(w.wd_back(w.bank_days), 0, 15),
        Expect(
            "settlement",
            "",
            P,
            "AWAITING_BANK_CREDIT",
            scenario="no credit yet, last day of the window (00:15 IST)",
        ),
    )
    if w.cal.working(w.today):
        bat = special(
            at(w.today, 0, 10),
            Expect("settlement", "", P, "AWAITING_BANK_CREDIT", scenario="created today"),
        )
    bat = special(
        w.moment(days.take()),
        Expect("settlement", "", M, scenario="credit plus a debit reversal with the same UTR"),
    )
    credit(bat, style=0)

    def reversal(bat: Batch = bat) -> None:
        assert bat.amount is not None
        line = BankLine(
            w.cal.add(ist_date(bat.created), 1),
            f"NEFT RETURN-{bat.utr}-RAZORPAY SOFTWARE PVT LTD",
            bat.utr,
            debit=bat.amount,
        )
        line.expect = Expect(
            "bank_entry", "", ABSENT, scenario="debit carrying a settlement UTR gets no outcome"
        )
        w.bank.append(line)

    w.later.append(reversal)
    late_bat = special(
        w.moment(w.wd_back(12)),
        Expect("settlement", "", M, scenario="exact-UTR credit that arrived late"),
    )
    credit(late_bat, day=w.wd_back(5), style=3)


def _edit(utr: str, how: str) -> str:
    chars = list(utr)
    if how == "truncate":
        return utr[:-1]
    if how == "lead":
        return utr[1:]
    if how == "one":
        chars[5] = "7" if chars[5] != "7" else "3"
    elif how == "transpose":
        i = next(i for i in range(6, len(chars) - 1) if chars[i] != chars[i + 1])
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
    elif how == "three":
        for i in (6, 8, 10):
            chars[i] = "1" if chars[i] != "1" else "2"
    return "".join(chars)


def fallbacks(w: World, days: Days) -> None:
    """fuzzy_utr and consolidated (section 5), positive and negative."""

    def lone(exp_status: str, code: str = "", **kw: Any) -> Batch:
        bat = w.batch(w.moment(days.take(), 9, 15), bank="custom")
        _fill(w, bat, 2, "payment in a fallback settlement")
        bat.expect = w.expect("settlement", bat.id, exp_status, code, **kw)
        return bat

    def fuzzy_credit(
        bat: Batch, how: str, *, delta: int = 0, offset: int = 1, where: str = "both", exp: str = M
    ) -> None:
        def write() -> None:
            assert bat.amount is not None
            seen = _edit(bat.utr, how)
            day = w.cal.add(ist_date(bat.created), offset)
            if where == "both":
                narration, reference = f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{seen}", seen
            else:
                narration, reference = (
                    f"NEFT CR-YESB0000001-RAZORPAY SOFTWARE PRIVATE LIMITED-{seen}",
                    "NEFT",
                )
            line = BankLine(day, narration, reference, credit=bat.amount + delta)
            line.expect = bank_expect(exp, f"credit with a mangled UTR ({how})")
            if exp == M:
                line.expect.settlement_id = bat.id
            w.bank.append(line)

        w.later.append(write)

    fuzzy_credit(
        lone(M, match_method="fuzzy_utr", scenario="UTR truncated by one character"), "truncate"
    )
    fuzzy_credit(
        lone(M, match_method="fuzzy_utr", scenario="one mistyped character, UTR in narration only"),
        "one",
        where="narration",
    )
    fuzzy_credit(
        lone(M, match_method="fuzzy_utr", scenario="two adjacent characters swapped"), "transpose"
    )
    fuzzy_credit(
        lone(M, match_method="fuzzy_utr", scenario="first character lost, UTR in narration only"),
        "lead",
        where="narration",
    )
    fuzzy_credit(
        lone(M, match_method="fuzzy_utr", scenario="truncated UTR credited on the creation day"),
        "truncate",
        offset=0,
    )
    fuzzy_credit(
        lone(
            M,
            match_method="fuzzy_utr",
            scenario="truncated UTR credited on the last day of the window",
        ),
        "truncate",
        offset=w.bank_days,
    )
    fuzzy_credit(
        lone(E, "MISSING_BANK_ENTRY", scenario="UTR three edits away: no fuzzy match"),
        "three",
        exp="UNMATCHED_BANK_CREDIT",
    )
    fuzzy_credit(
        lone(E, "MISSING_BANK_ENTRY", scenario="near UTR but credit outside the window"),
        "truncate",
        offset=w.bank_days + 2,
        exp="UNMATCHED_BANK_CREDIT",
    )
    fuzzy_credit(
        lone(E, "MISSING_BANK_ENTRY", scenario="near UTR but one paisa short"),
        "one",
        delta=-1,
        exp="UNMATCHED_BANK_CREDIT",
    )
    bat = lone(E, "MISSING_BANK_ENTRY", scenario="two candidate credits: not exactly one")
    fuzzy_credit(bat, "truncate", exp="UNMATCHED_BANK_CREDIT")
    fuzzy_credit(bat, "one", exp="UNMATCHED_BANK_CREDIT")

    def group(
        day: date, k: int, status: str, hours: list[tuple[int, int]] | None = None, **kw: Any
    ) -> list[Batch]:
        out = []
        for i in range(k):
            hh, mm = hours[i] if hours else (9 + 3 * i, 5)
            bat = w.batch(at(day, hh, mm), bank="custom")
            _fill(w, bat, 2, "payment in a consolidated settlement")
            bat.expect = w.expect(
                "settlement",
                bat.id,
                status,
                kw.get("code", ""),
                match_method=kw.get("method"),
                scenario=kw["scenario"],
                sure=kw.get("sure", True),
                note=kw.get("note", ""),
            )
            out.append(bat)
        return out

    def lump(bats: list[Batch], day: date, exp: str, copies: int = 1) -> None:
        def write() -> None:
            total = sum(b.amount or 0 for b in bats)
            for _ in range(copies):
                line = BankLine(
                    day,
                    "NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-SETTLEMENT",
                    f"N{w.rng.randrange(10**15):015d}",
                    credit=total,
                )
                line.expect = bank_expect(exp, "one credit for several settlements")
                w.bank.append(line)

        w.later.append(write)

    day = days.take()
    lump(
        group(day, 2, M, method="consolidated", scenario="two settlements, one credit"),
        w.cal.add(day, 1),
        M,
    )
    day = days.take()
    lump(
        group(
            day,
            3,
            M,
            [(0, 30), (11, 0), (23, 10)],
            method="consolidated",
            scenario="three settlements of one IST day (one at 00:30 IST)",
        ),
        w.cal.add(day, 1),
        M,
    )
    one, two = days.take(), days.take()
    bats = group(
        one,
        1,
        E,
        code="MISSING_BANK_ENTRY",
        scenario="credit equals the sum of settlements of different days",
    )
    bats += group(
        two,
        1,
        E,
        code="MISSING_BANK_ENTRY",
        scenario="credit equals the sum of settlements of different days",
    )
    lump(bats, w.cal.add(max(one, two), 1), "UNMATCHED_BANK_CREDIT")
    day = days.take()
    lump(
        group(
            day,
            2,
            E,
            code="MISSING_BANK_ENTRY",
            scenario="two credits equal the sum: not exactly one",
        ),
        w.cal.add(day, 1),
        "UNMATCHED_BANK_CREDIT",
        copies=2,
    )
    day = days.take()
    lump(
        group(
            day,
            2,
            E,
            code="MISSING_BANK_ENTRY",
            scenario="lump credit equal to the day's sum, two working days after the window",
            sure=False,
            note="the spec gives consolidated no date bound (only fuzzy_utr has 'a date inside "
            "the window'); the engine applies the same window to both, so this is no match",
        ),
        w.cal.add(day, w.bank_days + 2),
        "UNMATCHED_BANK_CREDIT",
    )


def interactions(w: World, days: Days) -> None:
    """Where two rules meet: exact links before fallbacks, priorities across bank codes."""

    def lone(code: str = "", **kw: Any) -> Batch:
        bat = w.batch(
            w.moment(kw.pop("day", None) or days.take(), 9, 15),
            bank="custom",
            sum_delta=kw.pop("sum_delta", 0),
        )
        _fill(w, bat, 2, "payment in an interaction settlement")
        bat.expect = w.expect("settlement", bat.id, E if code else M, code, **kw)
        return bat

    def line(bat: Batch, text: str, exp: Expect, *, delta: int = 0, offset: int = 1) -> None:
        def write() -> None:
            assert bat.amount is not None and bat.utr is not None
            utr = {"exact": bat.utr, "truncated": bat.utr[:-1]}[text]
            credit = BankLine(
                w.cal.add(ist_date(bat.created), offset),
                f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{utr}",
                utr,
                credit=bat.amount + delta,
            )
            credit.expect = exp
            w.bank.append(credit)

        w.later.append(write)

    bat = lone(scenario="exact credit, plus a near-UTR credit of the same amount")
    line(bat, "exact", Expect("bank_entry", "", M, settlement_id=bat.id, scenario="exact credit"))
    line(
        bat,
        "truncated",
        bank_expect("UNMATCHED_BANK_CREDIT", "near-UTR credit of a settlement already matched"),
    )
    bat = lone(
        "BANK_UTR_AMOUNT_MISMATCH",
        exposure_amount=100,
        scenario="exact credit of another amount beats a fuzzy candidate",
    )
    line(
        bat,
        "exact",
        Expect("bank_entry", "", M, settlement_id=bat.id, scenario="exact credit, other amount"),
        delta=100,
    )
    line(
        bat,
        "truncated",
        bank_expect("UNMATCHED_BANK_CREDIT", "fuzzy candidate of a settlement linked by UTR"),
    )
    bat = lone(
        "SETTLEMENT_SUM_MISMATCH",
        match_method="fuzzy_utr",
        exposure_amount=999,
        sum_delta=999,
        scenario="sum off, bank credit found by fuzzy UTR",
    )
    line(
        bat,
        "truncated",
        Expect(
            "bank_entry",
            "",
            M,
            settlement_id=bat.id,
            scenario="fuzzy credit of a sum-mismatched settlement",
        ),
    )
    bat = lone(
        "MISSING_BANK_ENTRY",
        sure=False,
        scenario="near-UTR credit dated a working day before the settlement",
        note="'within B working days of created_at' read as after it; "
        "a symmetric window would match",
    )
    line(
        bat,
        "truncated",
        bank_expect("UNMATCHED_BANK_CREDIT", "near-UTR credit before its settlement"),
        offset=-1,
    )
    recent = w.wd_back(max(w.bank_days - 1, 0))
    bat = lone(
        match_method="fuzzy_utr",
        day=recent,
        sure=False,
        scenario="not yet overdue, near-UTR credit already in",
        note="fallbacks read as applying to every settlement without a UTR credit, "
        "not only overdue ones",
    )
    line(
        bat,
        "truncated",
        Expect("bank_entry", "", M, settlement_id=bat.id, scenario="early fuzzy credit"),
        offset=0,
    )

    # A lump credit that names the first settlement's UTR is linked to it by UTR.
    day = days.take()
    first = w.batch(at(day, 10, 0), bank="custom")
    second = w.batch(at(day, 15, 0), bank="custom")
    for bat in (first, second):
        _fill(w, bat, 2, "payment in a consolidated-looking settlement")
    first.expect = w.expect(
        "settlement",
        first.id,
        E,
        "BANK_UTR_AMOUNT_MISMATCH",
        scenario="lump credit naming this settlement's UTR",
    )
    second.expect = w.expect(
        "settlement",
        second.id,
        E,
        "MISSING_BANK_ENTRY",
        scenario="its lump credit was linked by UTR to the other",
    )

    def lump() -> None:
        assert first.amount is not None and second.amount is not None and first.utr is not None
        credit = BankLine(
            w.cal.add(day, 1),
            f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{first.utr}",
            first.utr,
            credit=first.amount + second.amount,
        )
        credit.expect = Expect(
            "bank_entry", "", M, settlement_id=first.id, scenario="lump credit with one known UTR"
        )
        w.bank.append(credit)

    w.later.append(lump)
    # Payments side.
    bat = w.regular(_past_day(w))
    pay = w.payment(
        w.moment(w.cal.back(ist_date(bat.created), w.settlement_days)),
        status="failed",
        captured=False,
    )
    w.pay_row(pay, bat, fee=0)
    w.pay_row(pay, bat, fee=0)
    w.expect(
        "payment",
        pay["id"],
        E,
        "STATUS_MISMATCH",
        scenario="failed payment with two recon rows: only STATUS_MISMATCH applies",
    )


def orphan_refund(w: World) -> None:
    """A refund whose payment is not in the dataset is still checked on its own rows."""
    day = _past_day(w)
    ghost = {"id": w.new_id("pay_"), "amount": 5_00_000, "amount_refunded": 0}
    ref = w.refund(ghost, w.moment(w.cal.back(day, w.settlement_days)), amount=1_00_000)
    w.refund_row(ref, w.regular(day))
    w.expect("refund", ref["id"], M, scenario="refund of a payment not in the dataset, correct row")


def bank_noise(w: World) -> None:
    """Credits that look like gateway settlements but match none; and lines with no outcome."""
    for narration, reference in (
        (f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{w.new_utr(0)}", ""),
        ("IMPS/P2A/RazorPay Payments/REFUND REVERSAL", f"{w.rng.randrange(10**12):012d}"),
        ("NEFT CR-HDFC0000001-SETTLEMENT", "RAZORPAY"),
    ):
        line = BankLine(
            w.wd_back(w.rng.randrange(2, 15)),
            narration,
            reference,
            credit=w.amount(1_00_000, 90_00_000),
        )
        line.expect = Expect(
            "bank_entry",
            "",
            E,
            "UNMATCHED_BANK_CREDIT",
            scenario="gateway-looking credit linked to nothing",
        )
        w.bank.append(line)
    for narration, reference, credit, debit in (
        ("NEFT CR-HDFC0000240-ACME DISTRIBUTORS-INV 2231", "539362802315", 1_67_318_00, None),
        ("INT.PD:01-06-2026 TO 30-06-2026", "156568577026", 2_471_95, None),
        ("ACH D- TP ACH INDIAN CLEARING-", "784460003881", None, 1_34_989_00),
        ("RAZORPAY SOFTWARE PVT LTD - SUBSCRIPTION FEE", "883920011223", None, 11_800_00),
        ("POS 4xxxx1234 AMAZON PAY", "927715150280", None, 1_70_534_00),
        (f"NEFT CR-UTIB0000123-RZP SETTLEMENTS-{w.new_utr(1)}", "", 3_21_000_00, None),
    ):
        line = BankLine(
            w.wd_back(w.rng.randrange(2, 15)), narration, reference, credit=credit, debit=debit
        )
        line.expect = Expect(
            "bank_entry", "", ABSENT, scenario="bank line that is no gateway credit"
        )
        w.bank.append(line)


def everything(w: World, matched: int = 60, refunds: bool = True) -> None:
    """Every scenario above, for one world."""
    matched_payments(w, matched, refunds=refunds)
    parents = [p for p in w.payments if not p["international"] and not p["amount_refunded"]]
    intl_parent = next(p for p in w.payments if p["international"] and not p["amount_refunded"])
    if refunds:
        captured_variants(w)
    duplicates(w)
    wrong_mapping(w, parents[-1])
    amount_mismatch(w)
    settlement_amount_discrepancy(w)
    missing_settlement(w)
    timing(w)
    missing_recon(w)
    pending_awaiting(w)
    on_hold(w)
    status_mismatch(w)
    if refunds:
        refund_cases(w, parents[:15], intl_parent)
        orphan_refund(w)
    weekend(w)
    unknown_rows(w)
    days = Days(w)
    if w.has_bank:
        settlement_checks(w, days)
        fallbacks(w, days)
        interactions(w, days)
        bank_noise(w)
