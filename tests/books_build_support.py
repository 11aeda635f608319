"""A small dataset over several IST months that exercises every branch of the Books month
products (core.books.journal, core.books.gst, core.books.pricing), built from a seed with
Python's `random` only (not the benchmark generator: the golden files under
tests/golden/books_build/ must not move when the generator does), and the pricing plans
the fee check runs under.

What it holds: payments captured, refunded, failed or with no status, in INR, another
currency (with and without a base amount) or none, with and without fee/tax, card
payments with every kind of card detail (and none), some created on a month's first IST
second or its last, a repeated payment id and a payment with no id; settlements processed
or not, two on the same second, one with no rows, one with a comma, an ampersand and a
non-ASCII letter in its id, paying their rows' sum or not (suspense), one paying a
negative amount; recon rows of payments (this month's, earlier months' settled late,
unknown payments, duplicate rows, a row with no entity), refunds (dated, undated, settled
in another month or not at all), disputes (debits and reversals), adjustments, transfers
and their reversals, rows of no known type, row keys with a comma or a quote; instant
payouts processed (with and without processed_at, with and without fees) or not.
"""

from __future__ import annotations

import datetime as dt
import random

import pandas as pd

from core.books.pricing import PricingPlan, PricingRule
from core.calendar import IST
from core.dataset import (
    INSTANT_PAYOUT_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    SETTLEMENT_COLUMNS,
    Dataset,
)

MONTHS = ("2026-03", "2026-04", "2026-05", "2026-06")


def _ist(day: str, clock: str = "00:00:00") -> int:
    when = dt.datetime.fromisoformat(f"{day}T{clock}").replace(tzinfo=IST)
    return int(when.timestamp())


def _frame(rows: list[dict[str, object]], columns: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


def _pick(rng: random.Random, options: tuple[object, ...]) -> object:
    return options[rng.randrange(len(options))]


def books_dataset(
    seed: int = 7, payments: int = 900, *, captured_without_id: bool = False
) -> Dataset:
    """captured_without_id: the payment with no id is captured (the journal cannot list it:
    its ids are sorted, and a missing id does not sort among them)."""
    rng = random.Random(seed)
    start, end = _ist("2026-03-01"), _ist("2026-07-01")
    edges = [_ist(f"{m}-01") for m in (*MONTHS[1:], "2026-07")]
    pay_rows: list[dict[str, object]] = []
    for n in range(payments):
        created = rng.randrange(start, end)
        if n % 97 == 0:  # a month's first IST second, or its last
            created = edges[n % len(edges)] - (n % 2)
        currency = _pick(rng, ("INR",) * 12 + ("USD", "usd", None))
        amount = rng.randrange(100, 5_000_000)
        fee = (amount * rng.choice((0, 160, 170, 200, 250, 300))) // 10_000 + rng.randrange(0, 3)
        tax = (fee * 18 + 59) // 118
        method = _pick(
            rng,
            (
                *("upi", "card", "card", "card", "netbanking", "wallet", "emi", "paylater"),
                *("UPI", "Card", "bank_transfer", "cheque", None),
            ),
        )
        status = _pick(rng, ("captured",) * 8 + ("refunded", "failed", "authorized", None))
        row = {
            "id": f"pay_{n:05d}",
            "amount": amount,
            "currency": currency,
            "status": status,
            "captured": status in ("captured", "refunded") or rng.random() < 0.05,
            "method": method,
            "fee": None if rng.random() < 0.04 else fee,
            "tax": None if rng.random() < 0.06 else tax,
            "amount_refunded": 0,
            "international": rng.random() < 0.05,
            "created_at": created,
            "base_amount": (
                amount * 83 if currency not in ("INR", None) and rng.random() < 0.7 else None
            ),
            "settled_by": None,
            "card_network": _pick(rng, ("Visa", "RuPay", "Rupay ", "MasterCard", None)),
            "card_type": _pick(rng, ("credit", "debit", " Debit ", "prepaid", None)),
            "card_international": _pick(rng, ("true", "false", "false", " Yes", "1", None)),
            "card_sub_type": _pick(rng, ("consumer", "business", "Business ", None)),
        }
        pay_rows.append(row)
    pay_rows[5]["id"] = pay_rows[4]["id"]  # a repeated payment id
    pay_rows[6].update(id=None, status="failed", captured=False)  # a payment with no id
    if captured_without_id:
        pay_rows[6].update(status="captured", captured=True)
    payments_frame = _frame(pay_rows, PAYMENT_COLUMNS)

    # Settlements: about every other day, a few not processed, two on the same second.
    st_rows: list[dict[str, object]] = []
    day = dt.date(2026, 3, 2)
    while day < dt.date(2026, 7, 3):
        stamp = _ist(day.isoformat(), f"{rng.randrange(8, 20):02d}:00:00")
        status = _pick(rng, ("processed",) * 8 + ("created", "failed", None))
        st_rows.append(
            {"id": f"setl_{day:%m%d}", "amount": 0, "status": status, "created_at": stamp}
        )
        if day.day == 15:  # a second settlement on the same second (ordered by id)
            st_rows.append(
                {"id": f"setl_{day:%m%d}a", "amount": 0, "status": "processed", "created_at": stamp}
            )
        day += dt.timedelta(days=rng.choice((1, 2, 3)))
    st_rows.append(
        {"id": "setl_0612,&é", "amount": 0, "status": "processed", "created_at": _ist("2026-06-12")}
    )
    st_rows.append(  # no rows
        {"id": "setl_empty", "amount": 0, "status": "processed", "created_at": _ist("2026-05-20")}
    )
    settled_on = [(r["id"], int(r["created_at"])) for r in st_rows]

    def settlement_after(stamp: int) -> str | None:
        later = [sid for sid, when in settled_on if when >= stamp + 86_400]
        if not later or rng.random() < 0.08:
            return None  # not settled yet
        return str(later[min(len(later) - 1, rng.choice((0, 0, 0, 1, 2, 12)))])  # some late

    recon: list[dict[str, object]] = []

    def add(kind: object, entity: object, **values: object) -> None:
        recon.append(
            {
                "row_key": f"{kind}:{entity}:{len(recon)}",
                "entity_id": entity,
                "type": kind,
                "debit": 0,
                "credit": 0,
                "amount": 0,
                "currency": "INR",
                "fee": 0,
                "tax": 0,
                "on_hold": False,
                "settled": True,
                **values,
            }
        )

    for row in pay_rows:
        if not row["captured"] and row["status"] not in ("captured", "refunded"):
            continue
        if rng.random() < 0.1:
            continue  # no recon row
        created = int(str(row["created_at"]))
        fee = row["fee"] if row["fee"] is not None else rng.randrange(0, 500)
        fee = int(str(fee)) + (rng.choice((1, 2, 500)) if rng.random() < 0.05 else 0)
        tax = (fee * 18 + 59) // 118
        amount = int(str(row["amount"]))
        copies = 2 if rng.random() < 0.02 else 1  # duplicate rows
        sid = settlement_after(created)
        for _ in range(copies):
            add(
                "payment",
                row["id"],
                credit=amount - fee,
                amount=amount,
                fee=fee,
                tax=tax,
                created_at=created if rng.random() > 0.02 else None,
                settlement_id=sid,
                payment_id=row["id"],
                method=row["method"],
            )
        if row["status"] == "refunded" or rng.random() < 0.05:
            when = created + rng.randrange(3_600, 40 * 86_400)
            refund = rng.randrange(100, amount + 1)
            r_fee = rng.choice((0, 0, 118, 236))
            add(
                "refund",
                f"rfnd_{row['id']}",
                debit=refund + r_fee,
                amount=refund,
                fee=r_fee,
                tax=r_fee * 18 // 118,
                created_at=None if rng.random() < 0.03 else when,
                settlement_id=settlement_after(when),
                payment_id=row["id"],
            )
        if rng.random() < 0.02:  # a dispute: debit, sometimes reversed
            when = created + rng.randrange(86_400, 30 * 86_400)
            disputed = rng.randrange(100, amount + 1)
            add(
                "adjustment",
                f"adj_{row['id']}",
                debit=disputed,
                amount=disputed,
                created_at=when,
                settlement_id=settlement_after(when),
                dispute_id=f"disp_{row['id']}",
                payment_id=row["id"],
            )
            if rng.random() < 0.5:
                add(
                    "adjustment",
                    f"adjr_{row['id']}",
                    credit=disputed,
                    amount=disputed,
                    created_at=when + 86_400,
                    settlement_id=settlement_after(when + 86_400),
                    dispute_id=f"disp_{row['id']}",
                    payment_id=row["id"],
                )
    for n in range(60):  # transfers, reversals, plain adjustments, rows of no known kind
        when = rng.randrange(start, end)
        kind = _pick(rng, ("transfer", "transfer", "reversal", "adjustment", "settlement", None))
        value = rng.randrange(100, 2_000_000)
        fee = rng.choice((0, 0, 236))
        debit = kind in ("transfer", "settlement", None) or (kind == "adjustment" and n % 2)
        add(
            kind,
            f"trf_{n:03d}" if kind != "adjustment" else f"adj_{n:03d}",
            debit=value + fee if debit else 0,
            credit=0 if debit else value,
            amount=value,
            fee=fee,
            tax=fee * 18 // 118,
            created_at=when,
            settlement_id=settlement_after(when),
            transfer_id=f"trf_{n - 1:03d}" if kind == "reversal" else None,
        )
    for n in range(12):  # payment rows for no known payment, or with no entity at all
        when = rng.randrange(start, end)
        add(
            "payment",
            None if n == 0 else f"pay_unknown_{n}",
            credit=9_000,
            amount=10_000,
            fee=1_000,
            tax=153,
            created_at=when,
            settlement_id=settlement_after(when),
        )
    processed = {r["id"] for r in st_rows if r["status"] == "processed"}
    settled = [r for r in recon if r["settlement_id"] in processed]
    settled[3]["row_key"] = 'payment:"quoted":3'  # keys the journal CSV quotes
    settled[40]["row_key"] = "payment:comma,40"
    june_twelfth = [r for r in recon if r["settlement_id"] == "setl_0612"]
    for r in june_twelfth[: len(june_twelfth) // 2]:
        r["settlement_id"] = "setl_0612,&é"
    recon_frame = _frame(recon, RECON_COLUMNS)

    # Each processed settlement pays its rows' sum, except a few (suspense), one negative.
    sums = (recon_frame["credit"] - recon_frame["debit"]).groupby(
        recon_frame["settlement_id"].astype("string").fillna("")
    )
    totals = sums.sum().to_dict()
    for n, r in enumerate(st_rows):
        r["amount"] = int(totals.get(str(r["id"]), 0)) + (
            rng.randrange(-500, 500) if n % 9 == 0 else 0
        )
    st_rows[2]["amount"] = -12_345
    settlements_frame = _frame(st_rows, SETTLEMENT_COLUMNS)

    payouts = []
    for n in range(40):
        created = rng.randrange(start, end)
        payouts.append(
            {
                "id": f"setlodp_{n:03d}",
                "instant_settlement_id": f"setlod_{n:03d}",
                "amount": rng.randrange(10_000, 5_000_000),
                "fees": None if n % 11 == 0 else rng.randrange(0, 20_000),
                "tax": None if n % 13 == 0 else rng.randrange(0, 3_000),
                "status": _pick(rng, ("processed",) * 5 + ("failed", "reversed", None)),
                "created_at": created,
                "processed_at": None if n % 4 == 0 else created + rng.randrange(0, 3 * 86_400),
            }
        )
    payouts_frame = _frame(payouts, INSTANT_PAYOUT_COLUMNS)
    return Dataset(
        payments=payments_frame,
        settlements=settlements_frame,
        recon=recon_frame,
        instant_payouts=payouts_frame,
    )


def books_plans() -> tuple[PricingPlan, ...]:
    """Three versions: none in force for March's first half; from then a plan with a
    `card` line and a fixed fee; from May 15 one pricing cards by type only (no `card`
    line: a card of unknown type cannot be classified), at 18%; from June 10 one without
    a netbanking line, at 12%."""
    first = PricingPlan(
        1,
        _ist("2026-03-15"),
        (
            PricingRule("upi", 0, 0),
            PricingRule("card", 200, 100),
            PricingRule("rupay_debit", 0, 0),
            PricingRule("netbanking", 160),
            PricingRule("wallet", 170),
            PricingRule("emi", 210),
            PricingRule("international", 300),
            PricingRule("other", 250, 500),
        ),
    )
    by_type = (
        PricingRule("upi", 0, 0),
        PricingRule("credit", 190),
        PricingRule("debit", 40),
        PricingRule("corporate", 280, 1),
        PricingRule("netbanking", 160),
        PricingRule("wallet", 170),
        PricingRule("international", 300),
    )
    second = PricingPlan(2, _ist("2026-05-15"), by_type)
    third = PricingPlan(
        3, _ist("2026-06-10"), tuple(r for r in by_type if r.method != "netbanking"), 1200
    )
    return (second, first, third)  # in no particular order
