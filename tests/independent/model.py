"""The in-memory world a scenario builds: entities, bank lines and what the spec says of each.

Everything here is derived from `RECONCILIATION.md` alone: the calendar (section 4) is
re-implemented from its text, and every expectation names the spec rule it follows.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

IST = timezone(timedelta(hours=5, minutes=30))
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

AMOUNT_AT_RISK = "amount_at_risk"
AWAITING = "awaiting_settlement"
STRUCTURAL = "structural"
DISPUTED = "disputed"

# Spec section 6.
EXPOSURE_CLASS = {
    "AMOUNT_MISMATCH": AMOUNT_AT_RISK,
    "SETTLEMENT_AMOUNT_DISCREPANCY": AMOUNT_AT_RISK,
    "REFUND_AMOUNT_MISMATCH": AMOUNT_AT_RISK,
    "DUPLICATE_RECONCILIATION_RECORD": AMOUNT_AT_RISK,
    "SETTLEMENT_SUM_MISMATCH": AMOUNT_AT_RISK,
    "BANK_UTR_AMOUNT_MISMATCH": AMOUNT_AT_RISK,
    "DUPLICATE_BANK_CREDIT": AMOUNT_AT_RISK,
    "STATUS_MISMATCH": AMOUNT_AT_RISK,
    "UNMATCHED_BANK_CREDIT": AMOUNT_AT_RISK,
    "MISSING_RECONCILIATION_RECORD": AWAITING,
    "MISSING_SETTLEMENT": AWAITING,
    "SETTLEMENT_FAILED": AWAITING,
    "MISSING_BANK_ENTRY": AWAITING,
    "WRONG_MAPPING": STRUCTURAL,
    "TIMING_WINDOW_EXCEEDED": STRUCTURAL,
    "PAYMENT_ID_MISMATCH": STRUCTURAL,
    "DISPUTE_DEBIT": DISPUTED,
}

ABSENT = "ABSENT"  # the spec gives this entity no outcome: it must not be in results.csv


@dataclass
class Expect:
    """What the spec text says one entity's outcome is.

    `also` are further codes that must be listed; with `exact` the listed codes must be
    exactly `{reason_code, *also}`. `match_method` is checked only when given (the spec
    fixes it only for the fallbacks and `no_bank_statement`). `sure` is False where the
    spec can be read two ways (`note` says how); those still count in the score.
    """

    entity_type: str
    entity_id: str
    status: str
    reason_code: str = ""
    also: tuple[str, ...] = ()
    exact: bool = True
    match_method: str | None = None
    exposure_amount: int | None = None
    settlement_id: str | None = None  # checked when given
    scenario: str = ""
    sure: bool = True
    note: str = ""

    @property
    def label(self) -> str:
        """The outcome as one label: MATCHED, a pending reason or an exception code."""
        return self.reason_code or self.status


@dataclass(frozen=True)
class Calendar:
    """Section 4: Monday-Friday minus holidays, dates in IST."""

    holidays: frozenset[date] = frozenset()

    def working(self, day: date) -> bool:
        return day.weekday() < 5 and day not in self.holidays

    def add(self, day: date, n: int) -> date:
        """`day + n working days`, counting forward one working day at a time."""
        step = 1 if n >= 0 else -1
        left = abs(n)
        while left:
            day += timedelta(days=step)
            if self.working(day):
                left -= 1
        return day

    def back(self, day: date, n: int) -> date:
        return self.add(day, -n)


def ist_date(moment: datetime) -> date:
    return moment.astimezone(IST).date()


def at(day: date, hh: int = 12, mm: int = 0, ss: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hh, mm, ss, tzinfo=IST)


@dataclass
class BankLine:
    day: date
    narration: str
    reference: str
    credit: int | None = None  # paise
    debit: int | None = None
    value_day: date | None = None
    expect: Expect | None = None


@dataclass
class Batch:
    """An open settlement: rows join it; amount is fixed when the world is finished."""

    id: str
    utr: str | None
    created: datetime
    status: str = "processed"
    rows: list[dict[str, Any]] = field(default_factory=list)
    sum_delta: int = 0  # settlement amount = sum of rows + sum_delta
    bank: str = "exact"  # exact | none | custom (the scenario writes its own bank lines)
    expect: Expect | None = None
    amount: int | None = None


@dataclass
class World:
    """One dataset folder under construction."""

    name: str
    as_of: datetime
    seed: int
    settlement_days: int = 2
    international_days: int = 7
    grace_days: int = 1
    bank_days: int = 1
    holidays: frozenset[date] = frozenset()
    payments: list[dict[str, Any]] = field(default_factory=list)
    refunds: list[dict[str, Any]] = field(default_factory=list)
    recon: list[dict[str, Any]] = field(default_factory=list)
    batches: list[Batch] = field(default_factory=list)
    settlements: list[dict[str, Any]] = field(default_factory=list)
    bank: list[BankLine] = field(default_factory=list)
    expects: list[Expect] = field(default_factory=list)
    has_bank: bool = True
    whole_rupees: bool = False  # every amount a whole number of rupees (for integer rupee files)
    float_traps: bool = False  # prefer amounts whose rupee text a float would mis-convert
    whole_refunds: bool = False  # refund amounts in whole rupees
    later: list[Callable[[], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.cal = Calendar(self.holidays)
        self._used: set[str] = set()
        self._regular: dict[date, list[Batch]] = {}
        self._style = 0

    # ---- calendar --------------------------------------------------------------------
    @property
    def today(self) -> date:
        return ist_date(self.as_of)

    def cycle(self, international: bool) -> int:
        return self.international_days if international else self.settlement_days

    def deadline(self, created: datetime, international: bool = False) -> date:
        """`due(d) + G`: after this IST date the payment is overdue / settled late."""
        return self.cal.add(ist_date(created), self.cycle(international) + self.grace_days)

    def overdue(self, created: datetime, international: bool = False) -> bool:
        return self.today > self.deadline(created, international)

    def late(self, created: datetime, settled: datetime, international: bool = False) -> bool:
        return ist_date(settled) > self.deadline(created, international)

    def bank_overdue(self, created: datetime) -> bool:
        return self.today > self.cal.add(ist_date(created), self.bank_days)

    def wd_back(self, n: int, start: date | None = None) -> date:
        return self.cal.back(start or self.today, n)

    def last_overdue_day(self, international: bool = False) -> date:
        """The latest working day whose payments are already overdue today."""
        day = self.today
        while not self.today > self.cal.add(day, self.cycle(international) + self.grace_days):
            day -= timedelta(days=1)
        while not self.cal.working(day):
            day -= timedelta(days=1)
        return day

    # ---- ids and amounts -------------------------------------------------------------
    def new_id(self, prefix: str) -> str:
        while True:
            ident = prefix + "".join(self.rng.choice(ALPHABET) for _ in range(14))
            if ident not in self._used:
                self._used.add(ident)
                return ident

    def new_utr(self, kind: int | None = None) -> str:
        kind = self.rng.randrange(6) if kind is None else kind
        digits = lambda n: "".join(self.rng.choice("0123456789") for _ in range(n))  # noqa: E731
        utr = [
            lambda: "AXISCN" + digits(10),
            lambda: "HDFCN" + digits(11),
            lambda: "KKBKH" + digits(11),
            lambda: str(self.rng.randrange(1, 10)) + digits(11),
            lambda: "YESBN" + digits(11),
            lambda: "ICICR5" + digits(16),
        ][kind]()
        if utr in self._used:
            return self.new_utr(kind)
        self._used.add(utr)
        return utr

    def amount(self, low: int = 50_000, high: int = 50_000_000) -> int:
        """Paise; half of them whole rupees, like real order values."""
        value = self.rng.randrange(low, high)
        if self.whole_rupees:
            return value - value % 100
        if self.float_traps and self.rng.random() < 0.7:
            while int(float(f"{value // 100}.{value % 100:02d}") * 100) == value:
                value = self.rng.randrange(low, high)
            return value
        return value - value % 100 if self.rng.random() < 0.5 else value

    def fee_for(self, amount: int, free: bool = False) -> tuple[int, int]:
        """Razorpay's fee includes GST; tax is the GST part (spec section 1)."""
        if free:
            return 0, 0
        base = amount * self.rng.choice([180, 200, 236, 300]) // 10_000
        tax = base * 18 // 100
        if self.whole_rupees:
            base, tax = base - base % 100, tax - tax % 100
        return base + tax, tax

    def moment(self, day: date, earliest: int = 9, latest: int = 21) -> datetime:
        return at(day, self.rng.randrange(earliest, latest), self.rng.randrange(60))

    # ---- expectations ------------------------------------------------------------------
    def expect(
        self, entity_type: str, entity_id: str, status: str, code: str = "", **kw: Any
    ) -> Expect:
        exp = Expect(entity_type, entity_id, status, code, **kw)
        self.expects.append(exp)
        return exp

    # ---- entities ----------------------------------------------------------------------
    def payment(
        self,
        created: datetime,
        *,
        amount: int | None = None,
        status: str = "captured",
        captured: bool | None = True,
        international: bool = False,
        free: bool = False,
        order_id: str | None = "auto",
        method: str | None = None,
    ) -> dict[str, Any]:
        amount = self.amount() if amount is None else amount
        fee, tax = self.fee_for(amount, free) if status in ("captured", "refunded") else (0, 0)
        pay = {
            "id": self.new_id("pay_"),
            "entity": "payment",
            "amount": amount,
            "currency": "INR",
            "status": status,
            "order_id": self.new_id("order_") if order_id == "auto" else order_id,
            "invoice_id": None,
            "international": international,
            "method": method or self.rng.choice(["upi", "card", "netbanking", "wallet", "emi"]),
            "amount_refunded": 0,
            "refund_status": None,
            "captured": captured,
            "description": self.rng.choice(
                [
                    "Order payment",
                    'Bulk order, "urgent"',
                    "Café order ☕",
                    "Subscription renewal",
                    None,
                ]
            ),
            "email": f"customer{self.rng.randrange(1000)}@example.com",
            "contact": f"+9198{self.rng.randrange(10**8):08d}",
            "notes": self.rng.choice(
                [[], {"source": "web"}, {"source": "app", "ref": "a,b"}, "gift, wrap"]
            ),
            "fee": fee,
            "tax": tax,
            "error_code": "BAD_REQUEST_ERROR" if status == "failed" else None,
            "created_at": created,
        }
        self.payments.append(pay)
        return pay

    def refund(
        self,
        pay: dict[str, Any],
        created: datetime,
        *,
        amount: int | None = None,
        status: str = "processed",
    ) -> dict[str, Any]:
        if amount is None:
            amount = max(100, pay["amount"] * self.rng.randrange(10, 100) // 100)
            if self.whole_rupees or self.whole_refunds:
                amount -= amount % 100
        assert not self.whole_refunds or amount % 100 == 0, "refunds must be whole rupees here"
        ref = {
            "id": self.new_id("rfnd_"),
            "entity": "refund",
            "amount": amount,
            "currency": "INR",
            "payment_id": pay["id"],
            "notes": {},
            "receipt": None,
            "created_at": created,
            "batch_id": None,
            "status": status,
            "speed_requested": "normal",
            "speed_processed": "normal",
        }
        if status == "processed":
            pay["amount_refunded"] += amount
            pay["refund_status"] = "full" if pay["amount_refunded"] >= pay["amount"] else "partial"
            if pay["refund_status"] == "full":
                pay["status"] = "refunded"
        self.refunds.append(ref)
        return ref

    def row(
        self,
        entity_id: str,
        kind: str,
        *,
        amount: int,
        credit: int = 0,
        debit: int = 0,
        fee: int = 0,
        tax: int = 0,
        created: datetime,
        batch: Batch | None = None,
        settlement_id: str | None = None,
        settled_at: datetime | None = None,
        on_hold: bool = False,
        settled: bool = True,
        payment_id: str | None = None,
        order_id: str | None = None,
        method: str | None = None,
        dispute_id: str | None = None,
    ) -> dict[str, Any]:
        if batch is not None:
            settlement_id = batch.id
            settled_at = settled_at or batch.created
        row = {
            "entity_id": entity_id,
            "type": kind,
            "debit": debit,
            "credit": credit,
            "amount": amount,
            "currency": "INR",
            "fee": fee,
            "tax": tax,
            "on_hold": on_hold,
            "settled": settled,
            "created_at": created,
            "settled_at": settled_at,
            "settlement_id": settlement_id,
            "posted_at": None,
            "credit_type": "default",
            "description": None,
            "notes": [],
            "payment_id": payment_id,
            "settlement_utr": batch.utr if batch is not None else None,
            "order_id": order_id,
            "order_receipt": None,
            "method": method,
            "card_network": None,
            "card_issuer": None,
            "card_type": None,
            "dispute_id": dispute_id,
        }
        self.recon.append(row)
        if batch is not None:
            batch.rows.append(row)
        return row

    def pay_row(self, pay: dict[str, Any], batch: Batch | None, **kw: Any) -> dict[str, Any]:
        """The recon payment row Razorpay writes for `pay`: credit = amount - fee."""
        amount = kw.pop("amount", pay["amount"])
        fee = kw.pop("fee", pay["fee"])
        tax = kw.pop("tax", pay["tax"])
        credit = kw.pop("credit", amount - fee)
        kw.setdefault("order_id", pay["order_id"])
        kw.setdefault("method", pay["method"])
        return self.row(
            pay["id"],
            "payment",
            amount=amount,
            credit=credit,
            fee=fee,
            tax=tax,
            created=pay["created_at"],
            batch=batch,
            **kw,
        )

    def refund_row(self, ref: dict[str, Any], batch: Batch | None, **kw: Any) -> dict[str, Any]:
        """The recon refund row: debit = amount + fee."""
        fee = kw.pop("fee", 0)
        debit = kw.pop("debit", ref["amount"] + fee)
        kw.setdefault("payment_id", ref["payment_id"])
        return self.row(
            ref["id"],
            "refund",
            amount=ref["amount"],
            debit=debit,
            fee=fee,
            created=ref["created_at"],
            batch=batch,
            **kw,
        )

    # ---- settlements -----------------------------------------------------------------
    def batch(self, created: datetime, **kw: Any) -> Batch:
        bat = Batch(self.new_id("setl_"), kw.pop("utr", None) or self.new_utr(), created, **kw)
        self.batches.append(bat)
        return bat

    def regular(self, day: date) -> Batch:
        """A well-behaved settlement created on `day` (one or two cycles a day)."""
        cycles = self._regular.setdefault(day, [])
        if not cycles or (len(cycles) < 2 and self.rng.random() < 0.3):
            cycles.append(self.batch(at(day, 10 + 6 * len(cycles), self.rng.randrange(60))))
        return self.rng.choice(cycles)

    def settle_day_for(self, pay_created: datetime, international: bool, extra: int = 0) -> date:
        """The working day `due(d) + extra` (extra <= grace: on time)."""
        return self.cal.add(ist_date(pay_created), self.cycle(international) + extra)

    def credit_line(
        self, bat: Batch, amount: int, day: date | None = None, style: int | None = None
    ) -> BankLine:
        """A bank credit carrying `bat`'s UTR, in one of the narration styles real banks use."""
        if style is None:
            style = self._style % len(CREDIT_STYLES)
            self._style += 1
        assert bat.utr is not None
        narration, reference = CREDIT_STYLES[style](bat.utr, self)
        line = BankLine(
            day or self.cal.add(ist_date(bat.created), self.rng.randrange(2)),
            narration,
            reference,
            credit=amount,
        )
        self.bank.append(line)
        return line

    def finish(self) -> None:
        """Close every batch: fix its amount, write its bank credit and its expectation."""
        for bat in self.batches:
            net = sum(r["credit"] for r in bat.rows) - sum(r["debit"] for r in bat.rows)
            if bat.expect is None and net <= 0:  # refunds outweigh payments: top it up
                created = self.moment(
                    self.cal.back(ist_date(bat.created), self.settlement_days), 8, 10
                )
                top = self.payment(created, amount=-net + self.amount(), free=True)
                self.pay_row(top, bat)
                self.expect(
                    "payment", top["id"], "MATCHED", scenario="payment topping up a settlement"
                )
            amount = sum(r["credit"] for r in bat.rows) - sum(r["debit"] for r in bat.rows)
            bat.amount = amount + bat.sum_delta
            assert bat.amount > 0 or bat.status != "processed" or bat.sum_delta, bat
            fees = sum(r["fee"] for r in bat.rows)
            self.settlements.append(
                {
                    "id": bat.id,
                    "entity": "settlement",
                    "amount": bat.amount,
                    "status": bat.status,
                    "fees": fees,
                    "tax": sum(r["tax"] for r in bat.rows),
                    "utr": bat.utr,
                    "created_at": bat.created,
                }
            )
            if bat.expect is not None:
                if bat.expect.reason_code in ("MISSING_BANK_ENTRY", "SETTLEMENT_FAILED"):
                    bat.expect.exposure_amount = bat.amount  # awaiting: the expected amount
                continue
            assert bat.status == "processed" and bat.sum_delta == 0
            if not self.has_bank:
                bat.expect = self.expect(
                    "settlement",
                    bat.id,
                    "MATCHED",
                    match_method="no_bank_statement",
                    scenario="regular settlement, no bank statement",
                )
            elif bat.bank == "exact":
                line = self.credit_line(bat, bat.amount)
                line.expect = Expect(
                    "bank_entry",
                    "",
                    "MATCHED",
                    settlement_id=bat.id,
                    scenario="credit with its settlement's UTR",
                )
                bat.expect = self.expect(
                    "settlement", bat.id, "MATCHED", scenario="regular settlement, exact UTR credit"
                )
        for step in self.later:
            step()
        for line in self.bank:
            assert line.day <= self.today, line
            if line.expect is not None and line.expect.reason_code == "UNMATCHED_BANK_CREDIT":
                line.expect.exposure_amount = line.credit  # nothing expected, all of it at risk
            if line.expect is not None:
                self.expects.append(line.expect)


def _hdfc(utr: str, w: World) -> tuple[str, str]:
    return f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{utr}", utr


def _yes(utr: str, w: World) -> tuple[str, str]:
    return f"NEFT CR-YESB0000001-RAZORPAY SOFTWARE PRIVATE LIMITED-{utr}", "NEFT"


def _lower(utr: str, w: World) -> tuple[str, str]:
    return f"neft cr-razorpay software pvt ltd-utr: {utr.lower()}", ""


def _rtgs(utr: str, w: World) -> tuple[str, str]:
    return f"RTGS CR-{utr}-RAZORPAY SOFTWARE PVT LTD", utr


def _imps(utr: str, w: World) -> tuple[str, str]:
    return f"IMPS/{utr}/RAZORPAY/SETTLEMENT", f"{w.rng.randrange(10**12):012d}"


def _ref_label(utr: str, w: World) -> tuple[str, str]:
    return "RAZORPAY SOFTWARE PVT LTD SETTLEMENT", f"UTR-{utr}"


def _ref_lower_label(utr: str, w: World) -> tuple[str, str]:
    return "NEFT CR RAZORPAY", f"utr {utr.lower()}"


def _sbi(utr: str, w: World) -> tuple[str, str]:
    return f"BY TRANSFER-NEFT*UTIB0000123*{utr}*RAZORPAY SOFTWA", ""


def _no_marker(utr: str, w: World) -> tuple[str, str]:
    # No "RAZORPAY" anywhere: it looks like a gateway credit only because it holds a known UTR.
    return "NEFT CR-UTIB0000123-RZP SETTLEMENTS-MUMBAI", utr


def _ref_spaced(utr: str, w: World) -> tuple[str, str]:
    return "NEFT CREDIT RazorPay Software", f" {utr[:4]} {utr[4:]} "


def _slash(utr: str, w: World) -> tuple[str, str]:
    return f"NEFT/{utr}/RAZORPAY SOFTWARE PRIVATE LIMITED/UTIB0000123", f"UTR/{utr}"


def _ref_colon(utr: str, w: World) -> tuple[str, str]:
    return "RAZORPAY SOFTWARE PRIVATE LIMITED", f"UTR: {utr}"


def _quoted_commas(utr: str, w: World) -> tuple[str, str]:
    return f"NEFT CR, RAZORPAY SOFTWARE PVT LTD, {utr}, SETTLEMENT", ""


def _colon_label(utr: str, w: World) -> tuple[str, str]:
    # A label other than UTR, joined by a colon: the UTR is still inside the narration.
    return f"NEFT_IN:{utr}//RAZORPAY SOFTWARE PVT LTD", ""


def _padded_reference(utr: str, w: World) -> tuple[str, str]:
    # Reference column zero-padded to a fixed width, as some banks print UPI/IMPS refs.
    return "IMPS CR RAZORPAY SOFTWARE PVT LTD SETTLEMENT", f"0000{utr}"


def _glued(utr: str, w: World) -> tuple[str, str]:
    # Fixed-width narration fields run together: no separator after the UTR.
    return f"RTGS CR-{utr}RAZORPAY SOFTWARE PVT LTD", ""


CREDIT_STYLES = [
    _hdfc, _yes, _lower, _rtgs, _imps, _ref_label, _ref_lower_label, _sbi, _no_marker, _ref_spaced,
    _slash, _ref_colon, _quoted_commas, _colon_label, _padded_reference, _glued,
]  # fmt: skip
