"""Razorpay's money model beyond the spec, planted with `generate(..., money_model=True)`.

International payments (base_amount in INR paise, T+7) and their partial refunds, payments
settled by someone else, holds released into a later settlement, disputes (with a disputes
file), Route transfers (with a transfers file and reversal rows) and instant settlements
(setlod_ / setlodp_ with IMPS bank credits). A few of each, proportional to the payments,
at least two per scenario so that every case lands in both splits.

Everything here draws from its own random stream and its own id factory (sharing only the
set of taken UTRs), so with the option off the default dataset is byte-identical. Facts are
kept per entity; `labels.money_model_labels` turns them into outcomes with the rules of
docs/engine.md (written in `rules.py`), never with the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.benchmark.bank import BankLine
from core.benchmark.ids import IdFactory
from core.benchmark.world import (
    CALENDAR,
    DAY,
    Calendar,
    Payments,
    Settlements,
    _block,
    debit_cap,
    ist_midnight,
)
from core.calendar import ist_dates

# scenario -> (share of payments, minimum count). The minimum of 2 puts each in both splits.
SHARES: dict[str, tuple[float, int]] = {
    "international": (0.001, 4),
    "international_amount_mismatch": (0.0002, 2),
    "international_refund": (0.0002, 2),
    "settled_by_other": (0.0002, 2),
    "hold_released": (0.0002, 2),
    "dispute_won": (0.0002, 2),
    "dispute_won_not_reversed": (0.0002, 2),
    "dispute_lost": (0.0002, 2),
    "dispute_open": (0.0002, 2),
    "dispute_under_review": (0.0002, 2),
    "transfer_reversed": (0.0002, 2),
    "transfer_reversal_mismatch": (0.0002, 2),
    "transfer_amount_mismatch": (0.0002, 2),
    "transfer_missing": (0.0002, 2),
    "instant_clean": (0.0004, 2),
    "instant_short_payout": (0.0002, 2),
    "instant_missing_credit": (0.0002, 2),
    "instant_reversed": (0.0002, 2),
}
# Scenarios that are faults: left out with faults=False.
FAULTS = frozenset(
    {
        "international_amount_mismatch",
        "dispute_won_not_reversed",
        "dispute_lost",
        "dispute_open",
        "transfer_reversal_mismatch",
        "transfer_amount_mismatch",
        "transfer_missing",
        "instant_short_payout",
        "instant_missing_credit",
        "instant_reversed",
    }
)
# INR paise per minor unit (cent, yen, penny) at payment time; refunds convert at 99%.
RATES: tuple[tuple[str, float], ...] = (
    ("USD", 83.50),
    ("EUR", 90.20),
    ("GBP", 105.70),
    ("JPY", 56.0),
)
INSTANT_NARRATION = "IMPS/{utr}/RAZORPAY/INSTANT SETTLEMENT"
GROUP_BASE = 1 << 40  # debit groups of planted rows, clear of the world's own


@dataclass
class MoneyModel:
    """The extra entities (file rows), their facts for the labels, and bank lines."""

    payments: list[dict[str, Any]] = field(default_factory=list)
    refunds: list[dict[str, Any]] = field(default_factory=list)
    disputes: list[dict[str, Any]] = field(default_factory=list)
    transfers: list[dict[str, Any]] = field(default_factory=list)
    instant_settlements: list[dict[str, Any]] = field(default_factory=list)
    instant_payouts: list[dict[str, Any]] = field(default_factory=list)
    bank_lines: list[BankLine] = field(default_factory=list)
    # facts per entity: entity_type -> list of dicts (id, scenario, ... as labels.py reads)
    facts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)  # recon rows to add
    dispute_reversals_alone: list[str] = field(default_factory=list)
    n_payments: int = 0

    def fact(self, entity_type: str, **values: Any) -> None:
        self.facts.setdefault(entity_type, []).append(values)


def _count(scenario: str, payments: int, faults: bool) -> int:
    if scenario in FAULTS and not faults:
        return 0
    rate, minimum = SHARES[scenario]
    return max(minimum, round(rate * payments))


def _fee(amount: int, bp: int) -> tuple[int, int]:
    """(fee including GST, GST) for a fee of `bp` basis points before 18% GST."""
    base = (amount * bp + 5000) // 10000
    tax = (base * 18 + 50) // 100
    return base + tax, tax


class _Planter:
    def __init__(
        self,
        p: Payments,
        calendar: Calendar,
        ids: IdFactory,
        rng: np.random.Generator,
        faults: bool,
        total: int,
    ) -> None:
        self.p = p
        self.calendar = calendar
        self.ids = ids
        self.rng = rng
        self.faults = faults
        self.n = len(p.id)
        self.mm = MoneyModel(n_payments=total)
        self.group = GROUP_BASE
        keys = np.flatnonzero(calendar.available & ~np.repeat(calendar.bank_pending_day, 2))
        self.normal_keys = keys[keys >= 2 * 20]
        self.cap = debit_cap(p, calendar)
        pool = p.captured & (p.rows == 1) & (p.scenario == "") & (p.row_key >= 0)
        pool &= (p.amount <= self.cap // 2) & (p.amount >= 500_00) & (p.amount_refunded == 0)
        pool &= p.row_key <= self.normal_keys[-12]
        self.sources = list(rng.permutation(np.flatnonzero(pool)))

    def one(self, prefix: str) -> str:
        return str(self.ids.ids(prefix, 1)[0].decode())

    def count(self, scenario: str) -> int:
        return _count(scenario, self.mm.n_payments, self.faults)

    def source(self) -> int:
        return int(self.sources.pop())

    def key_on(self, day: np.datetime64) -> int:
        return int(self.calendar.key_for(np.array([day], dtype="datetime64[D]"))[0])

    def normal_key(self) -> int:
        return int(self.normal_keys[int(self.rng.integers(0, len(self.normal_keys) - 10))])

    def later_key(self, after: int) -> int:
        later = self.normal_keys[self.normal_keys > after]
        return int(later[int(self.rng.integers(0, min(5, len(later))))])

    def day_of(self, key: int) -> np.datetime64:
        day: np.datetime64 = self.calendar.days[key // 2]
        return day

    def add_row(self, **cols: Any) -> None:
        if cols.get("debit", 0):
            cols["group"] = self.group
            self.group += 1
        self.mm.rows.append(cols)

    # -- payments ------------------------------------------------------------------------

    def payment(
        self,
        *,
        created: int,
        amount: int,
        currency: str,
        base_amount: int | None,
        international: bool,
        method: str,
        settled_by: str,
        fee_bp: int,
    ) -> dict[str, Any]:
        inr = base_amount if base_amount is not None else amount
        fee, tax = _fee(inr, fee_bp)
        record = {
            "id": self.one("pay_"),
            "amount": amount,
            "currency": currency,
            "status": "captured",
            "order_id": self.one("order_"),
            "international": international,
            "method": method,
            "amount_refunded": 0,
            "fee": fee,
            "tax": tax,
            "created_at": created,
            "base_amount": base_amount,
            "settled_by": settled_by,
        }
        self.mm.payments.append(record)
        return record

    def payment_row(self, pay: dict[str, Any], key: int, amount: int, held: bool = False) -> None:
        self.add_row(
            entity_id=pay["id"].encode(),
            type=b"payment",
            credit=amount - pay["fee"],
            amount=amount,
            fee=pay["fee"],
            tax=pay["tax"],
            on_hold=held,
            settled=not held,
            created_at=pay["created_at"],
            key=key,
            order_id=pay["order_id"].encode(),
            method=pay["method"].encode(),
            settled_by=b"Razorpay",
        )

    def created_before(self, day: np.datetime64, working_days: int) -> tuple[int, np.datetime64]:
        """A creation instant `working_days` before `day` (IST business hours) and its date."""
        start = self.calendar.add(np.array([day], dtype="datetime64[D]"), -working_days)[0]
        created = int(ist_midnight(np.array([start]))[0]) + int(self.rng.integers(10, 18)) * 3600
        return created + int(self.rng.integers(0, 3600)), start

    def international(self) -> None:
        plain = self.count("international")
        wrong = self.count("international_amount_mismatch")
        refunded = self.count("international_refund")
        for i in range(plain + wrong):
            currency, rate = RATES[i % len(RATES)] if i < plain else RATES[i % 3]
            key = self.normal_key()
            while key // 2 < 30:
                key = self.normal_key()
            created, _ = self.created_before(self.day_of(key), CALENDAR.international_days)
            key = self.key_on(self.day_of(key))
            minor = int(self.rng.integers(20, 800)) * (1 if currency == "JPY" else 100)
            minor = minor * 100 if currency == "JPY" else minor + int(self.rng.integers(0, 100))
            base = round(minor * rate)
            pay = self.payment(
                created=created,
                amount=minor,
                currency=currency,
                base_amount=base,
                international=currency != "JPY",
                method="card",
                settled_by="Razorpay",
                fee_bp=250,
            )
            row_amount = base
            scenario = "international"
            if i >= plain:
                scenario = "international_amount_mismatch"
                row_amount = base - 1 - base * int(self.rng.integers(100, 2000)) // 10000
            self.payment_row(pay, key, row_amount)
            self.mm.fact(
                "payment",
                id=pay["id"],
                scenario=scenario,
                inr=base,
                fee=pay["fee"],
                rows=[{"amount": row_amount, "credit": row_amount - pay["fee"], "held": False}],
                late=False,
                overdue=True,
                settled_by="Razorpay",
                root_cause="SETTLED_AMOUNT_LOWER",
            )
            if i < refunded:
                self.international_refund(pay, rate)

    def international_refund(self, pay: dict[str, Any], rate: float) -> None:
        created = pay["created_at"] + DAY + int(self.rng.integers(0, 6 * 3600))
        due = self.calendar.add(ist_dates(np.array([created])), CALENDAR.settlement_days)[0]
        key = self.key_on(due)
        minor = pay["amount"] * int(self.rng.integers(20, 60)) // 100
        base = round(minor * rate * 0.99)
        refund = {
            "id": self.one("rfnd_"),
            "amount": minor,
            "currency": pay["currency"],
            "payment_id": pay["id"],
            "created_at": created,
            "status": "processed",
            "base_amount": base,
            "settled_by": "Razorpay",
        }
        pay["amount_refunded"] = minor
        self.mm.refunds.append(refund)
        self.add_row(
            entity_id=refund["id"].encode(),
            type=b"refund",
            debit=base,
            amount=base,
            created_at=created,
            key=key,
            payment_id=pay["id"].encode(),
            order_id=pay["order_id"].encode(),
            method=b"card",
            settled_by=b"Razorpay",
        )
        self.mm.fact(
            "refund",
            id=refund["id"],
            scenario="international_refund",
            inr=base,
            fee=0,
            debit=base,
            rows=1,
            overdue=True,
        )

    def settled_by_other(self) -> None:
        for _ in range(self.count("settled_by_other")):
            key = self.normal_key()
            created, _ = self.created_before(self.day_of(key), CALENDAR.settlement_days)
            amount = int(self.rng.integers(500, 20_000)) * 100
            pay = self.payment(
                created=created,
                amount=amount,
                currency="INR",
                base_amount=None,
                international=False,
                method="netbanking",
                settled_by="Axis Bank",
                fee_bp=160,
            )
            self.mm.fact(
                "payment",
                id=pay["id"],
                scenario="settled_by_other",
                inr=amount,
                fee=pay["fee"],
                rows=[],
                late=False,
                overdue=True,
                settled_by="Axis Bank",
                root_cause="",
            )

    def hold_released(self) -> None:
        for _ in range(self.count("hold_released")):
            key = self.normal_key()
            # Released into the cycle of due + grace: on time, in a later settlement.
            due = self.calendar.add(np.array([self.day_of(key)]), -CALENDAR.grace_days)[0]
            created, _ = self.created_before(due, CALENDAR.settlement_days)
            key = self.key_on(self.day_of(key))
            amount = int(self.rng.integers(500, 20_000)) * 100
            pay = self.payment(
                created=created,
                amount=amount,
                currency="INR",
                base_amount=None,
                international=False,
                method="upi",
                settled_by="Razorpay",
                fee_bp=0,
            )
            self.payment_row(pay, -1, amount, held=True)
            self.payment_row(pay, key, amount)
            row = {"amount": amount, "credit": amount - pay["fee"]}
            self.mm.fact(
                "payment",
                id=pay["id"],
                scenario="hold_released",
                inr=amount,
                fee=pay["fee"],
                rows=[{**row, "held": True}, {**row, "held": False}],
                late=False,
                overdue=True,
                settled_by="Razorpay",
                root_cause="",
            )

    # -- disputes ------------------------------------------------------------------------

    def disputes(self) -> None:
        plan = {
            "dispute_won": "won",
            "dispute_won_not_reversed": "won",
            "dispute_lost": "lost",
            "dispute_open": "open",
            "dispute_under_review": "under_review",
        }
        cycle_time = self.calendar.cycle_time
        for scenario, status in plan.items():
            for _ in range(self.count(scenario)):
                if not self.sources:  # a small benchmark runs out of plain payments to use
                    break
                i = self.source()
                amount = int(self.p.amount[i])
                created = int(cycle_time[self.p.row_key[i]]) + 2 * DAY
                later = self.normal_keys[cycle_time[self.normal_keys] > created]
                debit_key = int(later[0])
                dispute = {
                    "id": self.one("disp_"),
                    "payment_id": self.p.id[i].decode(),
                    "amount": amount,
                    "currency": "INR",
                    "amount_deducted": amount if status == "lost" else 0,
                    "status": status,
                    "phase": "chargeback",
                    "reason_code": "fraudulent"
                    if self.rng.random() < 0.5
                    else "product_unacceptable",
                    "respond_by": (
                        self.calendar.as_of + 3 * DAY if status == "open" else created + 7 * DAY
                    ),
                    "created_at": created,
                }
                self.mm.disputes.append(dispute)
                self.add_row(
                    entity_id=self.ids.ids("adj_", 1)[0],
                    type=b"adjustment",
                    debit=amount,
                    amount=amount,
                    key=debit_key,
                    dispute_id=dispute["id"].encode(),
                    description=b"Chargeback debit",
                )
                credit = 0
                if scenario == "dispute_won":
                    credit = amount
                    self.add_row(
                        entity_id=self.ids.ids("adj_", 1)[0],
                        type=b"adjustment",
                        credit=amount,
                        amount=amount,
                        key=self.later_key(debit_key),
                        dispute_id=dispute["id"].encode(),
                        description=b"Chargeback reversal",
                    )
                self.mm.fact(
                    "dispute",
                    id=dispute["id"],
                    scenario=scenario,
                    status=status,
                    debit=amount,
                    credit=credit,
                )

    # -- transfers -----------------------------------------------------------------------

    def transfers(self) -> None:
        for scenario in (
            "transfer_reversed",
            "transfer_reversal_mismatch",
            "transfer_amount_mismatch",
            "transfer_missing",
        ):
            for _ in range(self.count(scenario)):
                if not self.sources:  # a small benchmark runs out of plain payments to use
                    break
                i = self.source()
                amount = int(self.p.amount[i]) // 4 + 1
                fee, tax = _fee(amount, 25)
                key = self.later_key(int(self.p.row_key[i]))
                created = int(self.calendar.cycle_time[key]) - DAY
                if scenario == "transfer_missing":
                    created = self.calendar.as_of - 30 * DAY
                transfer = {
                    "id": self.one("trf_"),
                    "source": self.p.id[i].decode(),
                    "recipient": self.one("acc_"),
                    "amount": amount,
                    "currency": "INR",
                    "amount_reversed": 0,
                    "status": "processed",
                    "on_hold": False,
                    "created_at": created,
                }
                self.mm.transfers.append(transfer)
                debit = amount + fee
                rows = 0 if scenario == "transfer_missing" else 1
                if scenario == "transfer_amount_mismatch":
                    debit += 1 + amount * int(self.rng.integers(50, 1000)) // 10000
                if rows:
                    self.add_row(
                        entity_id=transfer["id"].encode(),
                        type=b"transfer",
                        debit=debit,
                        amount=amount,
                        fee=fee,
                        tax=tax,
                        key=key,
                        payment_id=self.p.id[i],
                    )
                reversed_rows = 0
                if scenario in ("transfer_reversed", "transfer_reversal_mismatch"):
                    reversed_amount = amount // 2
                    transfer["amount_reversed"] = reversed_amount
                    transfer["status"] = "partially_reversed"
                    reversed_rows = reversed_amount
                    if scenario == "transfer_reversal_mismatch":
                        reversed_rows -= (
                            1 + reversed_amount * int(self.rng.integers(50, 500)) // 10000
                        )
                    self.add_row(
                        entity_id=self.ids.ids("rvrsl_", 1)[0],
                        type=b"reversal",
                        credit=reversed_rows,
                        amount=reversed_rows,
                        key=self.later_key(key),
                        transfer_id=transfer["id"].encode(),
                    )
                self.mm.fact(
                    "transfer",
                    id=transfer["id"],
                    scenario=scenario,
                    rows=rows,
                    debit=debit if rows else 0,
                    amount=amount,
                    fee=fee,
                    reversed_rows=reversed_rows,
                    amount_reversed=transfer["amount_reversed"],
                    due=True,
                )


# The scenarios that add a payment of their own (the others work on the world's payments).
NEW_PAYMENT_SCENARIOS = (
    "international",
    "international_amount_mismatch",
    "settled_by_other",
    "hold_released",
)


def added_payments(total: int, faults: bool) -> int:
    """How many of `total` payments the money model plants itself, so that the world builds
    the rest and the benchmark holds exactly `total` payments."""
    return sum(_count(scenario, total, faults) for scenario in NEW_PAYMENT_SCENARIOS)


def plant(
    p: Payments,
    rows: dict[str, np.ndarray],
    calendar: Calendar,
    ids: IdFactory,
    rng: np.random.Generator,
    faults: bool,
    total: int,
) -> tuple[dict[str, np.ndarray], MoneyModel]:
    """Plant the entities that live in recon rows; returns the rows with theirs added.
    total: the benchmark's payments, the world's and the `added_payments` planted here."""
    planter = _Planter(p, calendar, ids, rng, faults, total)
    planter.international()
    planter.settled_by_other()
    planter.hold_released()
    planter.disputes()
    planter.transfers()
    mm = planter.mm
    n = len(rows["key"])
    rows = dict(rows)
    for name in ("transfer_id", "settled_by"):
        rows.setdefault(name, np.zeros(n, dtype="S1"))
    rows["settled_by"] = np.where(rows["settled_by"] == b"", b"Razorpay", rows["settled_by"])
    blocks = [_block(1, **{"transfer_id": b"", "settled_by": b"", **r}) for r in mm.rows]
    extra = {name: np.concatenate([b[name] for b in blocks]) for name in rows}
    rows = {name: np.concatenate([rows[name], extra[name]]) for name in rows}
    # Chargeback reversal credits of disputes not in the file (the world's own): MATCHED.
    mine = {d["id"].encode() for d in mm.disputes}
    alone = (rows["type"] == b"adjustment") & (rows["dispute_id"] != b"") & (rows["credit"] > 0)
    debited = set(rows["dispute_id"][(rows["dispute_id"] != b"") & (rows["debit"] > 0)].tolist())
    for entity, dispute in zip(
        rows["entity_id"][alone].tolist(), rows["dispute_id"][alone].tolist(), strict=True
    ):
        if dispute not in mine and dispute not in debited:
            mm.dispute_reversals_alone.append(entity.decode())
    return rows, mm


def finish(
    mm: MoneyModel,
    rows: dict[str, np.ndarray],
    s: Settlements,
    calendar: Calendar,
    ids: IdFactory,
    rng: np.random.Generator,
    faults: bool,
    bank: bool,
) -> None:
    """After settlements: the world's own transfers into the transfers file, and the
    instant settlements with their payouts and bank credits."""
    planted = {t["id"] for t in mm.transfers}
    world = np.flatnonzero(rows["type"] == b"transfer")
    for i in world:
        entity = rows["entity_id"][i].decode()
        if entity in planted:
            continue
        amount = int(rows["amount"][i])
        fee = int(rows["fee"][i])
        mm.transfers.append(
            {
                "id": entity,
                "source": rows["payment_id"][i].decode(),
                "recipient": ids.ids("acc_", 1)[0].decode(),
                "amount": amount,
                "currency": "INR",
                "amount_reversed": 0,
                "status": "processed",
                "on_hold": False,
                "created_at": int(calendar.cycle_time[rows["key"][i]]) - DAY,
            }
        )
        mm.fact(
            "transfer",
            id=entity,
            scenario="transfer_clean",
            rows=1,
            debit=int(rows["debit"][i]),
            amount=amount,
            fee=fee,
            reversed_rows=0,
            amount_reversed=0,
            due=True,
        )
    mm.transfers.sort(key=lambda t: (t["created_at"], t["id"]))

    days = np.flatnonzero(calendar.working & ~calendar.bank_pending_day)
    days = days[days >= 10]

    for scenario in (
        "instant_clean",
        "instant_short_payout",
        "instant_missing_credit",
        "instant_reversed",
    ):
        for k in range(_count(scenario, mm.n_payments, faults)):
            day = calendar.days[int(days[int(rng.integers(0, len(days)))])]
            created = int(ist_midnight(np.array([day]))[0]) + 13 * 3600 + int(rng.integers(0, 3600))
            payouts = (
                2
                if scenario == "instant_reversed" or (scenario == "instant_clean" and k % 2)
                else 1
            )
            setlod = ids.ids("setlod_", 1)[0].decode()
            requested = settled = reversed_amount = fees = tax = 0
            credits: list[int] = []
            expected = 0
            for j in range(payouts):
                amount = int(rng.integers(1_000, 50_000)) * 100
                fee, gst = _fee(amount, 25)
                requested += amount
                utr = _imps_utr(ids)
                reverse = scenario == "instant_reversed" and j == 1
                payout = {
                    "id": ids.ids("setlodp_", 1)[0].decode(),
                    "instant_settlement_id": setlod,
                    "amount": amount,
                    "amount_settled": None if reverse else amount - fee,
                    "fees": fee,
                    "tax": gst,
                    "utr": None if reverse else utr,
                    "status": "reversed" if reverse else "processed",
                    "created_at": created + j,
                    "processed_at": None if reverse else created + 120 + j,
                    "reversed_at": created + 3600 if reverse else None,
                }
                mm.instant_payouts.append(payout)
                if reverse:
                    reversed_amount += amount
                    continue
                settled += amount - fee
                fees += fee
                tax += gst
                expected += amount - fee
                if scenario == "instant_missing_credit" or not bank:
                    continue
                credit = amount - fee
                if scenario == "instant_short_payout":
                    credit -= 1 + credit * int(rng.integers(10, 500)) // 10000
                credits.append(credit)
                mm.bank_lines.append(
                    BankLine(day, INSTANT_NARRATION.format(utr=utr), utr, 0, credit, "instant")
                )
            mm.instant_settlements.append(
                {
                    "id": setlod,
                    "amount_requested": requested,
                    "amount_settled": settled,
                    "amount_pending": 0,
                    "amount_reversed": reversed_amount,
                    "fees": fees,
                    "tax": tax,
                    "currency": "INR",
                    "status": "partially_processed" if reversed_amount else "processed",
                    "created_at": created,
                }
            )
            mm.fact(
                "instant_settlement",
                id=setlod,
                scenario=scenario,
                reversed_amount=reversed_amount,
                expected=expected,
                credits=credits,
                has_processed=True,
                bank_overdue=True,
                bank=bank,
            )


def _imps_utr(ids: IdFactory) -> str:
    """A 12-digit IMPS reference (RRN), unique among the dataset's UTRs."""
    while True:
        text = str(int(ids.digits(1)) % 6 + 4) + ids.digits(11)
        if ids.take(text):
            return text
