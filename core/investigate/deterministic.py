"""The deterministic investigator: a root cause, a cited summary and a next step, from rules.

It reads only `Evidence` (the outputs of the allow-listed tools), needs no key and no
network, and is the answer whenever a model is absent, fails, or is caught inventing.
Each reason code's rule picks a root cause from `CAUSES_BY_CODE[code]` by looking at the
records (fee versus GST, short versus excess credit, other payment versus other order);
when the records it needs are missing it falls back to the code's default cause with a
low confidence, and a low confidence always asks for a human.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.books.journal import Ledgers
from core.errors import ConfigError
from core.investigate.evidence import Evidence
from core.investigate.result import UNCLASSIFIED, Answer
from core.money import format_inr, format_minor
from core.root_causes import CAUSES_BY_CODE, ROOT_CAUSES, causes_for_codes

Record = Mapping[str, Any]

# Root causes whose next step is routine follow-up rather than a judgement call.
ROUTINE_CAUSES = frozenset(
    {
        "SETTLED_LATE",
        "NOT_SETTLED",
        "REFUND_NOT_SETTLED",
        "SETTLEMENT_NOT_FOUND",
        "BANK_CREDIT_MISSING",
        "INSTANT_PAYOUT_RETURNED",
        "TRANSFER_NOT_DEBITED",
    }
)
REVIEW_BELOW_CONFIDENCE = 0.8
HIGH, MEDIUM, LOW = 0.95, 0.7, 0.4


class _Cite:
    """Formats ids and amounts for a summary and remembers them as citations."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.amounts: list[int] = []
        # What a rule found that the next step depends on (a duplicate's verdict, the true
        # owner of a mis-mapped order, the fee behind a difference).
        self.facts: dict[str, str] = {}

    def id(self, value: Any) -> str:
        text = str(value)
        if text not in self.ids:
            self.ids.append(text)
        return text

    def opt(self, value: Any) -> str:
        """An id that may be absent: cited when present, '-' otherwise."""
        return self.id(value) if value not in (None, "") else "-"

    def inr(self, paise: Any) -> str:
        value = int(paise)
        if value not in self.amounts:
            self.amounts.append(value)
        return format_inr(value)


Finding = tuple[str, float, str, str]  # root cause, confidence, summary, recommendation
Rule = Callable[[Evidence, Record, _Cite], Finding]


def explain(evidence: Evidence, policy: Policy | None = None) -> Answer:
    """The deterministic answer for the exception in `evidence`.

    The code's rule names the cause; then, like a senior analyst, the answer reads across
    entities (the settlement the record sits in, the other reason codes, the timeline),
    sizes the money at stake and its direction, and turns that into a concrete next step:
    who to ask, about which ids and amounts, by when, a drafted message, a journal entry,
    or a write-off below materiality. Confidence drops with every ambiguity found.
    """
    policy = policy or Policy.from_env()
    exception = evidence.exception
    code = str(exception.get("reason_code", ""))
    cite = _Cite()
    rule = RULES.get(code)
    if rule is None or code not in CAUSES_BY_CODE:
        summary = (
            f"Reason code {code or '(none)'} on {exception.get('entity_type')} "
            f"{cite.id(exception.get('entity_id'))} has no investigation rule."
        )
        return Answer(
            root_cause=UNCLASSIFIED,
            confidence=0.0,
            summary=summary,
            recommendation="Investigate by hand and tell the maintainers about this code.",
            requires_human_review=True,
            citations=tuple(cite.ids),
            cited_amounts=tuple(cite.amounts),
        )
    cause, confidence, summary, action = rule(evidence, exception, cite)
    assert cause in ROOT_CAUSES
    context = _read_across(evidence, exception, cause, cite)
    if context.notes:
        summary = f"{summary} {' '.join(context.notes)}"
    confidence = max(0.05, round(confidence - context.penalty, 2))
    facts = _facts(evidence, exception, cause)
    plan = _next_step(cause, facts, action, cite, policy)
    review, why = _needs_review(cause, confidence, facts, plan, policy, context)
    recommendation = plan.text
    if plan.draft:
        recommendation += f' Draft to {plan.counterparty}: "{plan.draft}"'
    if plan.journal:
        recommendation += f" Suggested journal entry: {plan.journal}."
    if context.failed_settlement and cause != "SETTLEMENT_PAYOUT_FAILED":
        recommendation += (
            f" Settlement {context.failed_settlement}'s payout failed: get it retried first "
            "(its own exception); this money arrives only with it."
        )
    recommendation += f" {why}"
    return Answer(
        root_cause=cause,
        confidence=confidence,
        summary=summary,
        recommendation=recommendation,
        requires_human_review=review,
        citations=tuple(cite.ids),
        cited_amounts=tuple(cite.amounts),
        draft_message=plan.draft,
        journal_entry=plan.journal,
    )


# --- the policy: materiality and when a person must decide --------------------------------

MATERIALITY_ENV = "RAZORRECON_MATERIALITY_PAISE"
REVIEW_AMOUNT_ENV = "RAZORRECON_REVIEW_AMOUNT_PAISE"
REVIEW_OVERDUE_ENV = "RAZORRECON_REVIEW_OVERDUE_DAYS"
# ₹10.00: below this a difference costs more to chase (a support ticket, a reviewer's time)
# than it returns; the answer suggests writing it off instead of raising it.
DEFAULT_MATERIALITY_PAISE = 1_000
# ₹1,00,000 (one lakh) at stake, or more than a week past due: a person decides.
DEFAULT_REVIEW_AMOUNT_PAISE = 10_000_000
DEFAULT_REVIEW_OVERDUE_DAYS = 7


@dataclass(frozen=True)
class Policy:
    """materiality_paise: differences below this are written off, not chased.
    review_amount_paise: at or above this at stake, a person must decide.
    review_overdue_days: money missing more than this many days past its due date, likewise.
    Read from the environment (RAZORRECON_MATERIALITY_PAISE, RAZORRECON_REVIEW_AMOUNT_PAISE,
    RAZORRECON_REVIEW_OVERDUE_DAYS); a value that is not a whole number ≥ 0 is refused."""

    materiality_paise: int = DEFAULT_MATERIALITY_PAISE
    review_amount_paise: int = DEFAULT_REVIEW_AMOUNT_PAISE
    review_overdue_days: int = DEFAULT_REVIEW_OVERDUE_DAYS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Policy:
        source = os.environ if env is None else env
        return cls(
            materiality_paise=_env_int(source, MATERIALITY_ENV, DEFAULT_MATERIALITY_PAISE),
            review_amount_paise=_env_int(source, REVIEW_AMOUNT_ENV, DEFAULT_REVIEW_AMOUNT_PAISE),
            review_overdue_days=_env_int(source, REVIEW_OVERDUE_ENV, DEFAULT_REVIEW_OVERDUE_DAYS),
        )


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = str(env.get(name, "") or "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ConfigError(f"{name} must be a whole number ≥ 0, not {raw!r}")
    return int(raw)


# --- evidence look-ups -------------------------------------------------------------------


def _first(records: list[Record]) -> Record | None:
    return records[0] if records else None


def _payment(ev: Evidence, payment_id: str) -> Record | None:
    return _first(ev.records("payment", payment_id=payment_id))


def _rows(ev: Evidence, entity_id: str, kind: str | None = None) -> list[Record]:
    rows = ev.records("recon_rows", entity_id=entity_id)
    return [r for r in rows if kind is None or r.get("type") == kind]


def _settlement(ev: Evidence, settlement_id: str) -> Record | None:
    return _first(ev.records("settlement", settlement_id=settlement_id))


def _calendar(ev: Evidence, entity_id: str) -> Record | None:
    return _first(ev.records("calendar_status", entity_id=entity_id))


def _arithmetic(ev: Evidence, settlement_id: str) -> Record | None:
    return _first(ev.records("settlement_arithmetic", settlement_id=settlement_id))


def _utr_credits(ev: Evidence, settlement: Record | None) -> list[Record]:
    if not settlement or not settlement.get("utr"):
        return []
    for item in ev.items:
        if item.tool == "bank_lines" and "utr" in item.args:
            return [r for r in item.records if int(r.get("credit") or 0) > 0]
    return []


def _instant(ev: Evidence, settlement_id: str) -> Record | None:
    return _first(ev.records("instant_settlement", instant_settlement_id=settlement_id))


def _transfer(ev: Evidence, transfer_id: str) -> Record | None:
    return _first(ev.records("transfer", transfer_id=transfer_id))


def _payout_credits(ev: Evidence, instant: Record) -> list[tuple[Record, list[Record]]]:
    """Each processed payout with the bank credits carrying its UTR."""
    found = []
    for payout in instant.get("payouts") or []:
        if str(payout.get("status", "")).lower() != "processed":
            continue
        lines = ev.records("bank_lines", utr=payout.get("utr")) if payout.get("utr") else []
        found.append((payout, [r for r in lines if int(r.get("credit") or 0) > 0]))
    return found


def _payout_net(payout: Record) -> int:
    if payout.get("amount_settled") is not None:
        return int(payout["amount_settled"])
    return int(payout["amount"]) - int(payout.get("fees") or 0)


def _amounts(exc: Record) -> tuple[int | None, int | None, int | None]:
    def value(key: str) -> int | None:
        raw = exc.get(key)
        return int(raw) if raw is not None else None

    return value("expected_amount"), value("actual_amount"), value("difference")


def _exception_figures(exc: Record, c: _Cite) -> str:
    expected, actual, _ = _amounts(exc)
    if expected is None or actual is None:
        return ""
    return f" The engine expected {c.inr(expected)} and found {c.inr(actual)}."


def _missing(exc: Record, c: _Cite, what: str) -> str:
    return (
        f"{str(exc.get('entity_type', 'entity')).capitalize()} "
        f"{c.id(exc.get('entity_id'))}: {what} is not in the data, so the cause is "
        f"inferred from the reason code alone.{_exception_figures(exc, c)}"
    )


# --- rules by reason code ----------------------------------------------------------------


def _settlement_amount_discrepancy(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    pid = str(exc["entity_id"])
    payment, rows = _payment(ev, pid), _rows(ev, pid, "payment")
    fee_advice = (
        "Raise the difference with Razorpay support quoting the payment and recon row, and "
        "check the pricing agreed for this payment method."
    )
    if payment is None or not rows:
        return (
            "FEE_CHARGED_DIFFERENTLY",
            LOW,
            _missing(exc, c, "the payment or its recon row"),
            fee_advice,
        )
    row = rows[0]
    credit, amount = int(row["credit"]), int(payment["amount"])
    p_fee, p_tax = payment.get("fee"), payment.get("tax")
    r_fee, r_tax = int(row.get("fee") or 0), int(row.get("tax") or 0)
    head = f"Recon row {c.id(row['row_key'])} for payment {c.id(pid)} credits {c.inr(credit)}"
    if p_fee is not None:
        head += (
            f" where {c.inr(amount - int(p_fee))} (amount {c.inr(amount)} minus fee "
            f"{c.inr(p_fee)}) was expected"
        )
    if p_tax is None or p_fee is None:
        if p_fee is not None and r_fee != int(p_fee):
            return (
                "FEE_CHARGED_DIFFERENTLY",
                MEDIUM,
                f"{head}. The row deducts a fee of {c.inr(r_fee)} against {c.inr(p_fee)} on "
                "the payment; the payment holds no GST to compare.",
                fee_advice,
            )
        return (
            "FEE_CHARGED_DIFFERENTLY",
            LOW,
            f"{head}. The payment holds no fee to compare with the row's {c.inr(r_fee)}.",
            fee_advice,
        )
    # The fee includes GST: compare the fee before GST, then the GST on it.
    p_base, r_base = int(p_fee) - int(p_tax), r_fee - r_tax
    follows = abs(r_tax - _gst_on(r_base)) <= 1  # the row's GST is 18% of its own fee
    if r_base != p_base:
        detail = (
            f"the fee before GST is {c.inr(r_base)} against {c.inr(p_base)} on the payment"
            if p_base
            else f"a fee of {c.inr(r_base)} before GST was charged where the payment has none"
        )
        if r_tax == int(p_tax):
            gst, confidence = f"; GST is the same ({c.inr(r_tax)})", HIGH
        elif follows:
            gst, confidence = (
                f"; GST {c.inr(r_tax)} is 18% of that fee, so it merely followed the fee "
                "(a fee difference, not a GST error)",
                HIGH,
            )
        else:
            # Both the fee and the GST rate are off: two faults, either could be the cause.
            gst, confidence = (
                f"; GST {c.inr(r_tax)} is not 18% of that fee either (against "
                f"{c.inr(p_tax)} on the payment), so the GST is off too",
                MEDIUM,
            )
        c.facts["fee_detail"] = f"row fee {format_inr(r_fee)} incl. GST {format_inr(r_tax)}"
        return (
            "FEE_CHARGED_DIFFERENTLY",
            confidence,
            f"{head}. The row deducts a fee of {c.inr(r_fee)} against {c.inr(p_fee)} on the "
            f"payment: {detail}{gst}.",
            fee_advice,
        )
    if r_tax != int(p_tax):
        c.facts["fee_detail"] = f"GST {format_inr(r_tax)} against {format_inr(int(p_tax))}"
        return (
            "GST_CHARGED_DIFFERENTLY",
            HIGH,
            f"{head}. The row's GST is {c.inr(r_tax)} against {c.inr(p_tax)} on the payment "
            f"(row fee {c.inr(r_fee)}); the fee before GST is the same.",
            fee_advice,
        )
    return (
        "FEE_CHARGED_DIFFERENTLY",
        MEDIUM,
        f"{head}. Its fee ({c.inr(r_fee)}) matches the payment's, yet the credit implies a "
        f"deduction of {c.inr(amount - credit)}.",
        fee_advice,
    )


def _gst_on(fee_before_gst: int) -> int:
    """18% GST on a fee, rounded half up to the paisa."""
    return (fee_before_gst * 18 + 50) // 100


def _amount_mismatch(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    payment, rows = _payment(ev, eid), _rows(ev, eid, "payment")
    advice = (
        "Compare the captured amount with Razorpay's settlement report; raise a dispute with "
        "Razorpay support for the difference if the payment record is right."
    )
    if payment is None or not rows:
        expected, actual, _ = _amounts(exc)
        if expected is not None and actual is not None and actual != expected:
            cause = "SETTLED_AMOUNT_LOWER" if actual < expected else "SETTLED_AMOUNT_HIGHER"
            return cause, MEDIUM, _missing(exc, c, "the payment or its recon row"), advice
        return "SETTLED_AMOUNT_LOWER", LOW, _missing(exc, c, "the payment or its recon row"), advice
    row = rows[0]
    settled, captured = int(row["amount"]), int(payment["amount"])
    currency = str(payment.get("currency") or "INR").strip().upper() or "INR"
    captured_text = c.inr(captured)
    if currency != "INR" and payment.get("base_amount") is not None:
        # Compared in INR (docs/engine.md): the conversion Razorpay applied, never the cents.
        foreign = format_minor(captured, currency)
        captured = int(payment["base_amount"])
        captured_text = f"{foreign}, converted by Razorpay to {c.inr(captured)}"
    cause = "SETTLED_AMOUNT_LOWER" if settled < captured else "SETTLED_AMOUNT_HIGHER"
    word = "less" if settled < captured else "more"
    return (
        cause,
        HIGH,
        f"Recon row {c.id(row['row_key'])} settles {c.inr(settled)} for payment {c.id(eid)}, "
        f"which captured {captured_text}: {c.inr(abs(captured - settled))} {word}.",
        advice,
    )


def _duplicate_record(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    entity_type = exc.get("entity_type")
    kind = str(entity_type) if entity_type in ("refund", "transfer") else "payment"
    rows = _rows(ev, eid, kind)
    advice = (
        "Confirm with Razorpay which row is genuine and ask for the duplicate to be reversed; "
        "do not book both."
    )
    if len(rows) < 2:
        return "SETTLED_TWICE", LOW, _missing(exc, c, "the second recon row"), advice
    field = "credit" if kind == "payment" else "debit"
    listed = ", ".join(
        f"{c.id(r['row_key'])} ({c.inr(r[field])} in {c.opt(r.get('settlement_id'))})" for r in rows
    )
    total = sum(int(r[field]) for r in rows)
    c.facts["duplicate_rows"] = ", ".join(str(r["row_key"]) for r in rows)
    verdict, said, confidence = _duplicate_verdict(ev, rows, field, c)
    if verdict:
        c.facts["duplicate"] = verdict
    return (
        "SETTLED_TWICE",
        confidence,
        f"{kind.capitalize()} {c.id(eid)} appears in {len(rows)} recon rows: {listed}; "
        f"together {c.inr(total)}.{said}",
        advice,
    )


def _duplicate_verdict(
    ev: Evidence, rows: list[Record], field: str, c: _Cite
) -> tuple[str, str, float]:
    """Is the duplicate in the settlement arithmetic? If every settlement holding the rows
    adds up with all of them, the money really moved twice; if one adds up only without a
    row, the report repeats a line. (verdict, sentence, confidence)"""
    one = int(rows[0][field])
    extra = one * (len(rows) - 1)
    breaks: list[int] = []
    for sid in dict.fromkeys(str(r.get("settlement_id") or "") for r in rows):
        arithmetic = _arithmetic(ev, sid) if sid else None
        if arithmetic is None:
            return "", " The settlement arithmetic is not in the evidence.", HIGH
        breaks.append(int(arithmetic["difference"]))
    # difference = settlement amount - net of rows; a repeated credit row makes it negative,
    # a repeated debit row positive.
    echo = -extra if field == "credit" else extra
    if all(b == 0 for b in breaks):
        moved = "paid" if field == "credit" else "taken"
        return (
            f"{moved}_twice",
            f" The settlement adds up only with every one of these rows, so {c.inr(extra)} "
            f"really was {moved} twice.",
            HIGH,
        )
    if sum(breaks) == echo:
        return (
            "report_echo",
            " The settlement amount counts the record once (it is out by exactly one row), "
            "so the report repeats a line.",
            HIGH,
        )
    return (
        "",
        " The settlement does not add up either way; the duplicate is one of several faults.",
        MEDIUM,
    )


def _wrong_mapping(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    advice = (
        "Ask Razorpay to correct the mapping; check that the other payment or order is not "
        "settled twice as a result."
    )
    if exc.get("entity_type") == "refund":
        refund = _first(ev.records("refund", refund_id=eid))
        rows = _rows(ev, eid, "refund")
        if refund is None or not rows:
            return "MAPPED_TO_OTHER_PAYMENT", LOW, _missing(exc, c, "the refund or its row"), advice
        row = rows[0]
        c.facts["true_owner"] = (
            f"refund {eid} belongs to payment {refund['payment_id']}, not {row.get('payment_id')}"
        )
        return (
            "MAPPED_TO_OTHER_PAYMENT",
            HIGH,
            f"Recon row {c.id(row['row_key'])} for refund {c.id(eid)} names payment "
            f"{c.id(row.get('payment_id'))}, but the refund belongs to payment "
            f"{c.id(refund['payment_id'])}.",
            advice,
        )
    payment, rows = _payment(ev, eid), _rows(ev, eid, "payment")
    if payment is None or not rows:
        return "MAPPED_TO_OTHER_PAYMENT", LOW, _missing(exc, c, "the payment or its row"), advice
    row = rows[0]
    other = row.get("payment_id")
    if other and other != eid:
        named = _payment(ev, str(other))
        exists = (
            f"which exists: {c.inr(named['amount'])}, order {c.opt(named.get('order_id'))}"
            if named
            else "which is not in the data"
        )
        c.facts["true_owner"] = f"the row belongs to payment {eid}, not {other}"
        return (
            "MAPPED_TO_OTHER_PAYMENT",
            HIGH if named else MEDIUM,
            f"Recon row {c.id(row['row_key'])} for payment {c.id(eid)} names payment "
            f"{c.id(other)} ({exists}).",
            advice,
        )
    row_order, own_order = row.get("order_id"), payment.get("order_id")
    if row_order and own_order and row_order != own_order:
        owners = [p for p in ev.records("payment", order_id=str(row_order)) if p.get("id") != eid]
        if owners:
            owner = owners[0]
            whose = (
                f" Order {c.id(row_order)} belongs to payment {c.id(owner['id'])} "
                f"({c.inr(owner['amount'])}, {owner.get('status')}, created "
                f"{owner.get('created_date')})."
            )
            c.facts["true_owner"] = (
                f"order {row_order} belongs to payment {owner['id']}; payment {eid} belongs "
                f"to order {own_order}"
            )
        else:
            whose = f" No payment in the data belongs to order {c.id(row_order)}."
            c.facts["true_owner"] = f"payment {eid} belongs to order {own_order}"
        return (
            "MAPPED_TO_OTHER_ORDER",
            HIGH,
            f"Recon row {c.id(row['row_key'])} for payment {c.id(eid)} names order "
            f"{c.id(row_order)}, but the payment belongs to order {c.id(own_order)}.{whose}",
            advice,
        )
    return (
        "MAPPED_TO_OTHER_PAYMENT",
        LOW,
        f"Recon row {c.id(row['row_key'])} for payment {c.id(eid)} was flagged as mis-mapped, "
        "but its payment and order ids agree in the data now.",
        advice,
    )


def _missing_settlement(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    rows = _rows(ev, eid)
    advice = "Ask Razorpay for the settlement, or import the settlement report that contains it."
    if not rows:
        return "SETTLEMENT_NOT_FOUND", LOW, _missing(exc, c, "the recon row"), advice
    row = rows[0]
    sid = row.get("settlement_id")
    if not sid:
        text = f"Recon row {c.id(row['row_key'])} for {c.id(eid)} carries no settlement id."
    else:
        found = _settlement(ev, str(sid)) is not None
        text = (
            f"Recon row {c.id(row['row_key'])} for {c.id(eid)} names settlement {c.id(sid)}, "
            + ("which exists now (re-run to clear)." if found else "which is not in the data.")
        )
    return "SETTLEMENT_NOT_FOUND", HIGH, text, advice


def _timing(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    cal = _calendar(ev, eid)
    advice = "No money is at risk; note the delay and raise it if it recurs."
    if not cal or not cal.get("settled_dates"):
        return "SETTLED_LATE", MEDIUM, _missing(exc, c, "the settlement date"), advice
    return (
        "SETTLED_LATE",
        HIGH if cal.get("settled_late") else MEDIUM,
        f"{str(exc['entity_type']).capitalize()} {c.id(eid)} was created on "
        f"{cal['created_date']}, due on {cal['due_date']} (T+{cal['settlement_days']}) and "
        f"late after {cal['late_after']}; it settled on {', '.join(cal['settled_dates'])}.",
        advice,
    )


def _missing_record(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    if exc.get("entity_type") == "transfer":
        return _transfer_not_debited(ev, exc, c)
    refund = exc.get("entity_type") == "refund"
    cause = "REFUND_NOT_SETTLED" if refund else "NOT_SETTLED"
    cal = _calendar(ev, eid)
    rows = _rows(ev, eid)
    advice = (
        f"Ask Razorpay for the status of this {'refund' if refund else 'payment'}'s "
        "settlement; check that it is not held or disputed."
    )
    if cal is None:
        return cause, MEDIUM, _missing(exc, c, "the entity"), advice
    record = _first(ev.records("refund" if refund else "payment", **_id_arg(refund, eid)))
    amount = f" of {c.inr(record['amount'])}" if record else ""
    confidence = HIGH if not rows and cal.get("overdue") else MEDIUM
    return (
        cause,
        confidence,
        f"{'Refund' if refund else 'Payment'} {c.id(eid)}{amount} was created on "
        f"{cal['created_date']}, due by {cal['due_date']} and overdue after "
        f"{cal['late_after']}; as of {cal['as_of_date']} no recon row settles it.",
        advice,
    )


def _id_arg(refund: bool, eid: str) -> dict[str, str]:
    return {"refund_id": eid} if refund else {"payment_id": eid}


def _status_mismatch(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    payment, rows = _payment(ev, eid), _rows(ev, eid, "payment")
    advice = (
        "Check the payment's status in the Razorpay dashboard and update the order system; "
        "a captured payment the merchant missed may mean an unfulfilled order."
    )
    if payment is None or not rows:
        return "CAPTURE_STATUS_OUT_OF_SYNC", LOW, _missing(exc, c, "the payment or row"), advice
    row = rows[0]
    return (
        "CAPTURE_STATUS_OUT_OF_SYNC",
        HIGH,
        f"Payment {c.id(eid)} is held as '{payment['status']}' (not captured), yet recon row "
        f"{c.id(row['row_key'])} settles {c.inr(row['credit'])} for it in settlement "
        f"{c.opt(row.get('settlement_id'))}.",
        advice,
    )


def _refund_amount(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    refund = _first(ev.records("refund", refund_id=eid))
    rows = _rows(ev, eid, "refund")
    advice = "Raise the difference with Razorpay support quoting the refund and recon row."
    if refund is None or not rows:
        return "REFUND_AMOUNT_DIFFERS", LOW, _missing(exc, c, "the refund or its row"), advice
    row = rows[0]
    expected = int(refund["amount"]) + int(row.get("fee") or 0)
    return (
        "REFUND_AMOUNT_DIFFERS",
        HIGH,
        f"Recon row {c.id(row['row_key'])} debits {c.inr(row['debit'])} for refund {c.id(eid)} "
        f"of {c.inr(refund['amount'])} (row fee {c.inr(row.get('fee') or 0)}), where "
        f"{c.inr(expected)} was expected.",
        advice,
    )


def _unknown_entity(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    rows = _rows(ev, eid)
    advice = (
        "Import the missing payments or refunds (another account or date range?) or ask "
        "Razorpay what the row refers to."
    )
    if not rows:
        return "UNKNOWN_ENTITY", MEDIUM, _missing(exc, c, "the recon row"), advice
    row = rows[0]
    money = c.inr(row["credit"]) if int(row["credit"]) else c.inr(row["debit"])
    return (
        "UNKNOWN_ENTITY",
        HIGH,
        f"Recon row {c.id(row['row_key'])} ({row['type']}, {money}) names "
        f"{c.id(row['entity_id'])}, which is not among the imported "
        f"{_IMPORTED.get(str(row['type']), 'payments')}.",
        advice,
    )


_IMPORTED = {"refund": "refunds", "transfer": "transfers"}


def _dispute(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    eid = str(exc["entity_id"])
    rows = [r for r in _rows(ev, eid) if r.get("dispute_id")] or _rows(ev, eid)
    advice = "Respond to the dispute in the Razorpay dashboard before its deadline."
    if not rows:
        return "CHARGEBACK_DEBIT", MEDIUM, _missing(exc, c, "the adjustment row"), advice
    row = rows[0]
    return (
        "CHARGEBACK_DEBIT",
        HIGH,
        f"Adjustment {c.id(row['row_key'])} debits {c.inr(row['debit'])} from settlement "
        f"{c.opt(row.get('settlement_id'))} for dispute {c.id(row.get('dispute_id'))}.",
        advice,
    )


def _dispute_record(ev: Evidence, exc: Record) -> Record | None:
    return _first(ev.records("dispute", dispute_id=str(exc["entity_id"])))


def _dispute_money(record: Record, c: _Cite) -> str:
    """'debited ₹120.00 in adj_1 (setl_1), reversed ₹20.00 in adj_2 (setl_2)'."""
    parts = []
    for row in record.get("rows") or []:
        debit, credit = int(row.get("debit") or 0), int(row.get("credit") or 0)
        verb = "debited" if debit else "reversed"
        parts.append(
            f"{verb} {c.inr(debit or credit)} in {c.id(row['row_key'])} "
            f"({c.opt(row.get('settlement_id'))})"
        )
    return "; ".join(parts) if parts else "no recon adjustment row moved its money"


def _dispute_lost(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    advice = (
        "Recover the loss from the customer if you can: the money will not come back "
        "through a settlement, and the journal posts Razorpay's debit with its settlement."
    )
    record = _dispute_record(ev, exc)
    if record is None:
        return "DISPUTE_LOST_FUNDS", LOW, _missing(exc, c, "the dispute"), advice
    _, loss, _ = _amounts(exc)
    deducted = record.get("amount_deducted")
    basis = (
        f"{c.inr(record['outstanding'])} debited and not reversed"
        if loss is None or int(record["outstanding"]) >= loss or deducted is None
        else f"{c.inr(deducted)} deducted by Razorpay"
    )
    summary = (
        f"Dispute {c.id(record['id'])} on payment {c.opt(record.get('payment_id'))} "
        f"(disputed {c.inr(record.get('amount') or 0)}) was lost: {basis}. Its money: "
        f"{_dispute_money(record, c)}."
    )
    c.facts["journal"] = _where_the_journal_posts(record, loss, c)
    return "DISPUTE_LOST_FUNDS", HIGH, summary, advice


def _where_the_journal_posts(record: Record, loss: int | None, c: _Cite) -> str:
    """Where the Books journal posts a lost dispute's debits (the `dispute` tool's journal
    facts, docs/books.md section 2): the voucher that already posts each, the prior-period
    adjustment voucher that moves one kept as a disputed amount at a close, or the
    settlement whose voucher will post it. Nothing is left to book by hand: the journal
    posts every debit Razorpay makes, when the settlement carrying it is paid."""
    parts: list[str] = []
    debits = [r for r in record.get("rows") or [] if int(r.get("debit") or 0) > 0]
    for row in debits:
        amount = c.inr(row["debit"])
        key = c.id(row["row_key"])
        voucher = row.get("journal_voucher")
        sid = row.get("settlement_id")
        if not voucher:
            where = (
                f"in voucher RZP-{c.id(sid)} when settlement {c.id(sid)} is processed"
                if sid
                else "in the voucher of the settlement that carries it, once one does"
            )
            parts.append(
                f"the journal will post the debit of {amount} in {key} to "
                f"{LEDGERS.chargebacks} {where}"
            )
            continue
        adjustment = row.get("journal_adjustment_voucher")
        if row.get("journal_month_closed") and adjustment:
            kept = row.get("journal_ledger_at_close")
            held = (
                f"posted it to {kept} when its month was closed"
                if kept
                else "did not hold it when its month was closed"
            )
            parts.append(
                f"voucher {voucher} ({row.get('journal_date')}) {held}, and the prior-period "
                f"adjustment voucher {adjustment} moves the debit of {amount} in {key} to "
                f"{row.get('journal_ledger')}"
            )
        else:
            parts.append(
                f"the Books journal already posts the debit of {amount} in {key}: voucher "
                f"{voucher} ({row.get('journal_date')}) debits {row.get('journal_ledger')} "
                f"{amount}"
            )
    debited = sum(int(r.get("debit") or 0) for r in debits)
    if loss is not None and loss > debited:
        rest = c.inr(loss - debited)
        parts.append(
            f"{rest} of the loss: no settlement row debits it yet; the journal will post it "
            f"to {LEDGERS.chargebacks} with the settlement that carries Razorpay's debit"
        )
    if not parts:
        return ""
    text = "; ".join(parts)
    return f"{text[0].upper()}{text[1:]}: do not book it again by hand."


def _dispute_reversal_missing(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    advice = (
        "Ask Razorpay support for the reversal of the dispute debit, quoting the dispute and "
        "the adjustment row; it should arrive as a credit in a later settlement."
    )
    record = _dispute_record(ev, exc)
    if record is None:
        return "DISPUTE_REVERSAL_NOT_CREDITED", LOW, _missing(exc, c, "the dispute"), advice
    return (
        "DISPUTE_REVERSAL_NOT_CREDITED",
        HIGH,
        f"Dispute {c.id(record['id'])} on payment {c.opt(record.get('payment_id'))} is "
        f"'{record.get('status')}', yet of {c.inr(record['debited'])} debited only "
        f"{c.inr(record['reversed'])} was reversed: {c.inr(record['outstanding'])} is still "
        f"owed. Its money: {_dispute_money(record, c)}.",
        advice,
    )


def _refund_reversal_missing(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    """A failed or reversed refund a settlement debited whose money is not back (docs/
    engine.md, *Failed refunds a settlement debited*)."""
    eid = str(exc["entity_id"])
    advice = (
        "Ask Razorpay support to credit back the failed refund's debit, quoting the refund "
        "and the recon row that debited it; it should come back to the balance and into a "
        "later settlement. If an adjustment already paid it back, resolve this as explained "
        "naming that adjustment."
    )
    refund = _first(ev.records("refund", refund_id=eid))
    rows = _rows(ev, eid)
    debits = [r for r in rows if int(r.get("debit") or 0) > 0]
    if refund is None or not debits:
        missing = _missing(exc, c, "the refund or its row")
        return "REFUND_REVERSAL_NOT_CREDITED", LOW, missing, advice
    taken = "; ".join(
        f"{c.inr(r['debit'])} debited in {c.id(r['row_key'])} ({c.opt(r.get('settlement_id'))})"
        for r in debits
    )
    owed = int(exc.get("expected_amount") or 0)
    return (
        "REFUND_REVERSAL_NOT_CREDITED",
        HIGH,
        f"Refund {c.id(eid)} of {c.inr(refund['amount'])} is '{refund.get('status')}', yet a "
        f"settlement took its money ({taken}) and no recon row under its id credits "
        f"{c.inr(owed)} back.",
        advice,
    )


def _dispute_open(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    record = _dispute_record(ev, exc)
    deadline = record.get("respond_by_date") if record else None
    advice = (
        "Submit evidence (invoice, delivery proof) in the Razorpay dashboard "
        + (f"by {deadline}" if deadline else "before the response deadline")
        + "; accept the dispute if the claim is right."
    )
    if record is None:
        return "DISPUTE_AWAITING_RESPONSE", LOW, _missing(exc, c, "the dispute"), advice
    outstanding = int(record["outstanding"])
    stake = (
        f"{c.inr(outstanding)} has been debited and not reversed"
        if outstanding > 0
        else f"{c.inr(record.get('amount') or 0)} is disputed and nothing has been debited yet"
    )
    return (
        "DISPUTE_AWAITING_RESPONSE",
        HIGH,
        f"Dispute {c.id(record['id'])} on payment {c.opt(record.get('payment_id'))} is open "
        f"(respond by {deadline or 'an unknown date'}): {stake}."
        + (f" Its money: {_dispute_money(record, c)}." if record.get("rows") else ""),
        advice,
    )


def _sum_mismatch(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    arithmetic = _arithmetic(ev, sid)
    advice = (
        "Ask Razorpay for the settlement's full recon report; a row may be missing from the "
        "import or the settlement amount may be wrong."
    )
    if arithmetic is None:
        return "SETTLEMENT_ARITHMETIC_BREAK", LOW, _missing(exc, c, "the settlement"), advice
    difference = int(arithmetic["difference"])
    way = "less" if difference < 0 else "more"
    return (
        "SETTLEMENT_ARITHMETIC_BREAK",
        HIGH if difference else MEDIUM,
        f"Settlement {c.id(sid)} is for {c.inr(arithmetic['settlement_amount'])}, but its "
        f"{arithmetic['rows']} recon rows net to {c.inr(arithmetic['net_of_rows'])} (credits "
        f"{c.inr(arithmetic['sum_credit'])}, debits {c.inr(arithmetic['sum_debit'])}): "
        f"Razorpay paid {c.inr(abs(difference))} {way} than the rows add up to, unexplained.",
        advice,
    )


def _duplicate_bank(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    if exc.get("entity_type") == "instant_settlement":
        return _instant_duplicate_bank(ev, exc, c)
    settlement = _settlement(ev, sid)
    credits = _utr_credits(ev, settlement)
    advice = "Confirm with the bank whether both credits are real; return or book the excess."
    if settlement is None or len(credits) < 2:
        return "BANK_CREDITED_TWICE", LOW, _missing(exc, c, "the second bank credit"), advice
    listed = ", ".join(
        f"{c.id(r['id'])} ({_channel(r)}, {c.inr(r['credit'])} on {r['txn_date']}"
        + (f", balance after {c.inr(r['balance'])}" if r.get("balance") is not None else "")
        + ")"
        for r in credits
    )
    c.facts["bank_lines"] = " and ".join(f"{_channel(r)} line {r['id']}" for r in credits)
    verdict, said, confidence = _bank_twice_verdict(credits, c)
    if verdict:
        c.facts["bank_twice"] = verdict
    return (
        "BANK_CREDITED_TWICE",
        confidence,
        f"Settlement {c.id(sid)} ({c.inr(settlement['amount'])}, UTR "
        f"{c.id(settlement['utr'])}) has {len(credits)} bank credits: {listed}.{said}",
        advice,
    )


_CHANNEL = re.compile(r"\b(IMPS|NEFT|RTGS|UPI|IFT|FT)\b", re.IGNORECASE)


def _channel(line: Record) -> str:
    """The payment rail a bank line names in its narration (IMPS, NEFT, RTGS, UPI)."""
    found = _CHANNEL.search(str(line.get("narration") or ""))
    return found.group(1).upper() if found else "credit"


def _bank_twice_verdict(credits: list[Record], c: _Cite) -> tuple[str, str, float]:
    """Did each credit raise the running balance (Razorpay paid twice), or does the
    statement repeat one line with the same balance (an export echo)?"""
    ordered = sorted(credits, key=lambda r: (str(r.get("txn_date")), int(r.get("line_no") or 0)))
    if any(r.get("balance") is None for r in ordered):
        return "", " The statement has no running balance to tell a real second credit.", HIGH
    balances = [int(r["balance"]) for r in ordered]
    steps = [b - a for a, b in itertools.pairwise(balances)]
    channels = {_channel(r) for r in ordered}
    if all(step == int(r["credit"]) for step, r in zip(steps, ordered[1:], strict=False)):
        rails = " and ".join(sorted(channels)) if len(channels) > 1 else next(iter(channels))
        return (
            "paid_twice",
            f" Each credit raised the running balance by its amount (by {rails}): the money "
            "arrived twice, so Razorpay paid twice and will claw one back.",
            HIGH,
        )
    if all(step == 0 for step in steps):
        return (
            "statement_echo",
            " The running balance did not move between them: the statement repeats one credit.",
            HIGH,
        )
    return "", " The running balance moved by other amounts in between.", HIGH


def _bank_amount(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    if exc.get("entity_type") == "instant_settlement":
        return _instant_bank_amount(ev, exc, c)
    settlement = _settlement(ev, sid)
    credits = _utr_credits(ev, settlement)
    advice = "Ask the bank and Razorpay to trace the difference on this UTR."
    if settlement is not None and len(credits) == 1:
        line, amount = credits[0], int(settlement["amount"])
        credited = int(line["credit"])
        short = credited < amount
        return (
            "BANK_SHORT_CREDIT" if short else "BANK_EXCESS_CREDIT",
            HIGH,
            f"Bank line {c.id(line['id'])} credits {c.inr(credited)} under UTR "
            f"{c.id(settlement['utr'])} for settlement {c.id(sid)} of {c.inr(amount)}: "
            f"{c.inr(abs(credited - amount))} {'short' if short else 'in excess'}.",
            advice,
        )
    expected, actual, _ = _amounts(exc)
    if expected is not None and actual is not None and actual != expected:
        cause = "BANK_SHORT_CREDIT" if actual < expected else "BANK_EXCESS_CREDIT"
        return cause, MEDIUM, _missing(exc, c, "the bank line"), advice
    return "BANK_SHORT_CREDIT", LOW, _missing(exc, c, "the bank line"), advice


def _missing_bank(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    if exc.get("entity_type") == "instant_settlement":
        return _instant_missing_bank(ev, exc, c)
    settlement, cal = _settlement(ev, sid), _calendar(ev, sid)
    advice = (
        "Ask the bank for the credit with this UTR; if Razorpay's payout failed, check the "
        "settlement account details."
    )
    if settlement is None or cal is None:
        return "BANK_CREDIT_MISSING", MEDIUM, _missing(exc, c, "the settlement"), advice
    candidates = [
        r
        for item in ev.items
        if item.tool == "bank_lines" and "amount_paise" in item.args
        for r in item.records
    ]
    near = ""
    if candidates:
        near = " Credits of the same amount nearby: " + ", ".join(
            f"{c.id(r['id'])} on {r['txn_date']}" for r in candidates
        )
        near += " (check whether one of them is this settlement under another reference)."
    return (
        "BANK_CREDIT_MISSING",
        HIGH if not candidates else MEDIUM,
        f"Settlement {c.id(sid)} of {c.inr(settlement['amount'])} (UTR "
        f"{c.opt(settlement.get('utr'))}) was created on {cal['created_date']} and its "
        f"bank credit was due by {cal['bank_credit_due']}; as of {cal['as_of_date']} no bank "
        f"line carries its UTR.{near}",
        advice,
    )


def _settlement_failed(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    settlement = _settlement(ev, sid)
    advice = (
        "Check the settlement bank account in the Razorpay dashboard; Razorpay retries the "
        "payout once the account is fixed."
    )
    if settlement is None:
        return "SETTLEMENT_PAYOUT_FAILED", MEDIUM, _missing(exc, c, "the settlement"), advice
    arithmetic = _arithmetic(ev, sid)
    rows = ""
    if arithmetic is not None and arithmetic.get("rows"):
        rows = (
            f" None of its {arithmetic['rows']} recon rows (credits "
            f"{c.inr(arithmetic['sum_credit'])}, debits {c.inr(arithmetic['sum_debit'])}) "
            "has reached the bank."
        )
        c.facts["failed_rows"] = f", {arithmetic['rows']} recon rows"
    return (
        "SETTLEMENT_PAYOUT_FAILED",
        HIGH,
        f"Settlement {c.id(sid)} of {c.inr(settlement['amount'])} has status "
        f"'{settlement['status']}': Razorpay did not pay it out.{rows}",
        advice,
    )


def _unmatched_bank(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    line_id = str(exc["entity_id"])
    line = _first(ev.records("bank_lines", line_id=line_id))
    advice = (
        "Find the settlement behind this credit (Razorpay dashboard, by amount and date) and "
        "import it; if it is not a Razorpay payout, reclassify it."
    )
    if line is None:
        return "UNIDENTIFIED_BANK_CREDIT", MEDIUM, _missing(exc, c, "the bank line"), advice
    same_amount = [
        r
        for item in ev.items
        if item.tool == "settlement" and "amount_paise" in item.args
        for r in item.records
    ]
    hint = ""
    if same_amount:
        hint = " Settlements of the same amount: " + ", ".join(
            f"{c.id(r['id'])} (UTR {c.opt(r.get('utr'))})" for r in same_amount
        )
        hint += "."
    utr = f" with reference {c.id(line['utr'])}" if line.get("utr") else ""
    return (
        "UNIDENTIFIED_BANK_CREDIT",
        HIGH,
        f"Bank line {c.id(line_id)} credits {c.inr(line['credit'])} on {line['txn_date']}"
        f"{utr}; no settlement in the data explains it.{hint}",
        advice,
    )


# --- instant settlements (setlod_...) ----------------------------------------------------


def _instant_reversed(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    instant = _instant(ev, sid)
    # Razorpay: amount_reversed is "reversed to your PG current balance" (Instant Settlements
    # entity). That balance is paid in the regular cycle with no row naming the setlod_, so
    # no data can show which settlement carries it, and no run clears the exception
    # (independent tester, finding 5): the advice is what a reviewer can do.
    advice = _INSTANT_ADVICE.format(stake="the reversed amount")
    if instant is None:
        return "INSTANT_PAYOUT_RETURNED", MEDIUM, _missing(exc, c, "the instant settlement"), advice
    returned = [
        p for p in instant.get("payouts") or [] if str(p.get("status", "")).lower() == "reversed"
    ]
    listed = ", ".join(
        f"{c.id(p['id'])} ({c.inr(p['amount'])}, UTR {c.opt(p.get('utr'))})" for p in returned
    )
    reversed_amount = int(instant.get("amount_reversed") or 0)
    amount = (
        f" {c.inr(reversed_amount)} was reversed to the balance"
        if reversed_amount
        else " money was reversed to the balance"
    )
    return (
        "INSTANT_PAYOUT_RETURNED",
        HIGH,
        f"Instant settlement {c.id(sid)} (requested {c.inr(instant['amount_requested'])}, "
        f"status '{instant['status']}'):{amount}"
        + (f"; reversed payouts: {listed}." if listed else "."),
        advice,
    )


def _instant_duplicate_bank(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    instant = _instant(ev, sid)
    advice = "Confirm with the bank whether both credits are real; return or book the excess."
    twice = [(p, lines) for p, lines in _payout_credits(ev, instant or {}) if len(lines) >= 2]
    if instant is None or not twice:
        return "BANK_CREDITED_TWICE", LOW, _missing(exc, c, "the second bank credit"), advice
    payout, lines = twice[0]
    listed = ", ".join(f"{c.id(r['id'])} ({c.inr(r['credit'])} on {r['txn_date']})" for r in lines)
    return (
        "BANK_CREDITED_TWICE",
        HIGH,
        f"Payout {c.id(payout['id'])} of instant settlement {c.id(sid)} "
        f"({c.inr(_payout_net(payout))}, UTR {c.id(payout['utr'])}) has {len(lines)} bank "
        f"credits: {listed}.",
        advice,
    )


def _instant_bank_amount(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    instant = _instant(ev, sid)
    advice = "Ask the bank and Razorpay to trace the difference on this payout's UTR."
    for payout, lines in _payout_credits(ev, instant or {}):
        if len(lines) != 1 or int(lines[0]["credit"]) == _payout_net(payout):
            continue
        credited, due = int(lines[0]["credit"]), _payout_net(payout)
        short = credited < due
        return (
            "BANK_SHORT_CREDIT" if short else "BANK_EXCESS_CREDIT",
            HIGH,
            f"Bank line {c.id(lines[0]['id'])} credits {c.inr(credited)} under UTR "
            f"{c.id(payout['utr'])} for payout {c.id(payout['id'])} of instant settlement "
            f"{c.id(sid)}, which settled {c.inr(due)}: {c.inr(abs(credited - due))} "
            f"{'short' if short else 'in excess'}.",
            advice,
        )
    expected, actual, _ = _amounts(exc)
    if expected is not None and actual is not None and actual != expected:
        cause = "BANK_SHORT_CREDIT" if actual < expected else "BANK_EXCESS_CREDIT"
        return cause, MEDIUM, _missing(exc, c, "the bank line"), advice
    return "BANK_SHORT_CREDIT", LOW, _missing(exc, c, "the bank line"), advice


def _instant_missing_bank(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    sid = str(exc["entity_id"])
    instant = _instant(ev, sid)
    advice = (
        "Ask the bank for the IMPS/NEFT credit with this payout's UTR; if the payout "
        "bounced, Razorpay reverses it to the balance."
    )
    missing = [p for p, lines in _payout_credits(ev, instant or {}) if not lines]
    if instant is None or not missing:
        return "BANK_CREDIT_MISSING", MEDIUM, _missing(exc, c, "the payout"), advice
    listed = ", ".join(
        f"{c.id(p['id'])} ({c.inr(_payout_net(p))}, UTR {c.opt(p.get('utr'))}, processed "
        f"{p.get('processed_date')})"
        for p in missing
    )
    return (
        "BANK_CREDIT_MISSING",
        HIGH,
        f"Instant settlement {c.id(sid)}: no bank line carries the UTR of payout(s) {listed}.",
        advice,
    )


# --- Route transfers (trf_...) -----------------------------------------------------------


def _transfer_amount(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    tid = str(exc["entity_id"])
    transfer, rows = _transfer(ev, tid), _rows(ev, tid, "transfer")
    advice = "Raise the difference with Razorpay support quoting the transfer and recon row."
    if transfer is None or not rows:
        return "TRANSFER_DEBIT_DIFFERS", LOW, _missing(exc, c, "the transfer or its row"), advice
    amount = int(transfer["amount"])
    row = next(
        (r for r in rows if int(r["debit"]) != amount + int(r.get("fee") or 0)),
        rows[0],
    )
    expected = amount + int(row.get("fee") or 0)
    return (
        "TRANSFER_DEBIT_DIFFERS",
        HIGH,
        f"Recon row {c.id(row['row_key'])} debits {c.inr(row['debit'])} for transfer "
        f"{c.id(tid)} of {c.inr(amount)} (row fee {c.inr(row.get('fee') or 0)}), "
        f"where {c.inr(expected)} was expected.",
        advice,
    )


def _transfer_reversal(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    tid = str(exc["entity_id"])
    transfer = _transfer(ev, tid)
    advice = (
        "Ask Razorpay for the reversal's recon rows (rvrsl_...), or check the transfer's "
        "amount_reversed in the dashboard."
    )
    if transfer is None:
        expected, actual, _ = _amounts(exc)
        excess = (actual or 0) > (expected or 0)
        cause = "TRANSFER_REVERSAL_EXCESS" if excess else "TRANSFER_REVERSAL_SHORT"
        return cause, LOW, _missing(exc, c, "the transfer"), advice
    reversed_amount = int(transfer.get("amount_reversed") or 0)
    returned = int(transfer.get("reversed_by_rows") or 0)
    rows = transfer.get("reversal_rows") or []
    listed = ", ".join(f"{c.id(r['row_key'])} ({c.inr(r['amount'])})" for r in rows) or "none"
    short = returned < reversed_amount
    return (
        "TRANSFER_REVERSAL_SHORT" if short else "TRANSFER_REVERSAL_EXCESS",
        HIGH,
        f"Transfer {c.id(tid)} of {c.inr(transfer['amount'])} has {c.inr(reversed_amount)} "
        f"reversed (status '{transfer['status']}'), but its reversal rows ({listed}) return "
        f"{c.inr(returned)}: {c.inr(abs(reversed_amount - returned))} "
        f"{'not yet returned' if short else 'too much'}.",
        advice,
    )


def _transfer_not_debited(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    tid = str(exc["entity_id"])
    transfer = _transfer(ev, tid)
    advice = (
        "Ask Razorpay whether the transfer was debited from the balance; check the linked "
        "account's settlement."
    )
    if transfer is None:
        return "TRANSFER_NOT_DEBITED", MEDIUM, _missing(exc, c, "the transfer"), advice
    return (
        "TRANSFER_NOT_DEBITED",
        HIGH,
        f"Transfer {c.id(tid)} of {c.inr(transfer['amount'])} to "
        f"{c.opt(transfer.get('recipient'))} was created on {transfer.get('created_date')} "
        f"(status '{transfer['status']}'); no recon row debits it.",
        advice,
    )


def _fee_overcharged(ev: Evidence, exc: Record, c: _Cite) -> Finding:
    """FEE_OVERCHARGED (docs/books.md): the engine's expected is the plan's fee (incl. GST),
    actual the fee charged. GST above 18% of the fee before it is a GST overcharge; else
    the fee itself is above the plan."""
    pid = str(exc["entity_id"])
    expected, actual, _ = _amounts(exc)
    advice = (
        "Raise the overcharge with Razorpay quoting the payment, the fee charged and the "
        "pricing plan version in force; claim the difference and its GST."
    )
    rows = _rows(ev, pid, "payment")
    source = rows[0] if rows else _payment(ev, pid)
    if source is None or source.get("fee") is None:
        return ("FEE_ABOVE_CONTRACT", LOW, _missing(exc, c, "the payment or its recon row"), advice)
    fee, tax = int(source["fee"]), int(source.get("tax") or 0)
    what = f"recon row {c.id(source['row_key'])}" if rows else f"payment {c.id(pid)}"
    head = f"Payment {c.id(pid)} was charged a fee of {c.inr(fee)} incl. GST {c.inr(tax)} ({what})"
    if expected is not None and actual is not None:
        head += f" where the contracted plan allows {c.inr(expected)}"
    gst_fair = ((fee - tax) * 1800 + 5000) // 10000
    if tax > gst_fair + 1:
        return (
            "GST_ABOVE_CONTRACT",
            HIGH,
            f"{head}. The GST is more than 18% of the fee before GST.",
            advice,
        )
    return (
        "FEE_ABOVE_CONTRACT",
        HIGH if expected is not None else MEDIUM,
        f"{head}. The GST is 18% of the fee before it: the fee itself is above the plan.",
        advice,
    )


RULES: dict[str, Rule] = {
    "FEE_OVERCHARGED": _fee_overcharged,
    "SETTLEMENT_AMOUNT_DISCREPANCY": _settlement_amount_discrepancy,
    "AMOUNT_MISMATCH": _amount_mismatch,
    "DUPLICATE_RECONCILIATION_RECORD": _duplicate_record,
    "WRONG_MAPPING": _wrong_mapping,
    "MISSING_SETTLEMENT": _missing_settlement,
    "TIMING_WINDOW_EXCEEDED": _timing,
    "MISSING_RECONCILIATION_RECORD": _missing_record,
    "STATUS_MISMATCH": _status_mismatch,
    "REFUND_AMOUNT_MISMATCH": _refund_amount,
    "PAYMENT_ID_MISMATCH": _unknown_entity,
    "DISPUTE_DEBIT": _dispute,
    "DISPUTE_LOST": _dispute_lost,
    "DISPUTE_REVERSAL_MISSING": _dispute_reversal_missing,
    "DISPUTE_OPEN": _dispute_open,
    "REFUND_REVERSAL_MISSING": _refund_reversal_missing,
    "SETTLEMENT_SUM_MISMATCH": _sum_mismatch,
    "DUPLICATE_BANK_CREDIT": _duplicate_bank,
    "BANK_UTR_AMOUNT_MISMATCH": _bank_amount,
    "MISSING_BANK_ENTRY": _missing_bank,
    "SETTLEMENT_FAILED": _settlement_failed,
    "UNMATCHED_BANK_CREDIT": _unmatched_bank,
    "INSTANT_PAYOUT_REVERSED": _instant_reversed,
    "TRANSFER_AMOUNT_MISMATCH": _transfer_amount,
    "TRANSFER_REVERSAL_MISMATCH": _transfer_reversal,
}


def allowed_causes(exception: Mapping[str, Any]) -> tuple[str, ...]:
    """Root causes a model may name: those of the primary code, then the other codes'."""
    return causes_for_codes(
        str(exception.get("reason_code", "")).strip(), exception.get("reason_codes")
    )


# --- reading across entities -------------------------------------------------------------


@dataclass
class _Context:
    """What the evidence says beyond the primary rule: notes for the summary, how much
    confidence the ambiguities cost, and the facts the next step depends on."""

    notes: list[str] = field(default_factory=list)
    penalty: float = 0.0
    failed_settlement: str | None = None
    impossible: bool = False
    secondary: list[str] = field(default_factory=list)


_BANK_TROUBLE = {
    "SETTLEMENT_FAILED": "its payout failed",
    "MISSING_BANK_ENTRY": "no bank credit carries its UTR",
    "BANK_UTR_AMOUNT_MISMATCH": "the bank credited a different amount",
    "SETTLEMENT_SUM_MISMATCH": "its amount is not the sum of its rows",
}


def _read_across(ev: Evidence, exc: Record, cause: str, c: _Cite) -> _Context:
    ctx = _Context()
    _other_codes(ev, exc, c, ctx)
    _settlement_context(ev, exc, c, ctx)
    _timeline(ev, exc, c, ctx)
    _books_close(ev, exc, ctx)
    return ctx


def _books_close(ev: Evidence, exc: Record, ctx: _Context) -> None:
    """What closing the books means for this exception (docs/books.md section 4): in a
    closed month, a change it brings is not written back into that month; in an open one,
    settling it before the close keeps the month's figures whole."""
    record = _calendar(ev, str(exc.get("entity_id", "")))
    month = None if record is None else record.get("books_month")
    if not month:
        return
    closed_on = record.get("books_month_closed_on") if record is not None else None
    if closed_on:
        ctx.notes.append(
            f"Its month, {month}, was closed in the books on {closed_on}: the close keeps"
            f" {month}'s roll-forward and journal as they were, so whatever settling this"
            " changes (a correction, a late credit, a write-off) is not written back into"
            f" {month}; it reaches the next open month as a prior-period adjustment, and that"
            " month's journal as an adjustment voucher."
        )
    else:
        ctx.notes.append(
            f"Its month, {month}, is still open in the books: settling this before {month}"
            " is closed keeps the change inside that month's figures; after the close it"
            " would post as a prior-period adjustment of the next open month."
        )


_PRIMARY_AMOUNTS = ("expected_amount", "actual_amount", "difference", "exposure_amount")


def _other_codes(ev: Evidence, exc: Record, c: _Cite, ctx: _Context) -> None:
    """Explain every reason code of the exception, not only the primary one."""
    primary = str(exc.get("reason_code", ""))
    codes = [x.strip() for x in str(exc.get("reason_codes") or "").split(";") if x.strip()]
    for code in dict.fromkeys(codes):
        if code == primary:
            continue
        rule = RULES.get(code)
        if rule is None:
            ctx.notes.append(f"It also carries reason code {code}, which no rule explains.")
            ctx.penalty += 0.2
            continue
        # The exception's amounts are its primary code's (a settlement's net credit, say):
        # a second code's rule must not cite them as its own (a walkthrough read "the plan
        # allows ₹1,594.36" for a fee the plan put at ₹32.64).
        second = {**exc, "reason_code": code, **dict.fromkeys(_PRIMARY_AMOUNTS)}
        sub_cause, sub_confidence, sub_summary, _ = rule(ev, second, c)
        ctx.secondary.append(sub_cause)
        ctx.notes.append(f"Second reason code {code} ({sub_cause}): {sub_summary}")
        # Two faults on one record: each explanation is less certain than one alone.
        ctx.penalty += 0.05 if sub_confidence >= HIGH else 0.15


def _settlement_context(ev: Evidence, exc: Record, c: _Cite, ctx: _Context) -> None:
    """Roll the record up under its settlement: a failed payout, a short or missing bank
    credit, or other open exceptions in the same settlement."""
    entity_type = str(exc.get("entity_type", ""))
    if entity_type not in ("settlement", "instant_settlement", "bank_entry"):
        for item in ev.items:
            if item.tool != "settlement" or "settlement_id" not in item.args:
                continue
            for record in item.records:
                if str(record.get("status", "")).lower() == "failed":
                    ctx.failed_settlement = str(record["id"])
                    ctx.notes.append(
                        f"The money sits in settlement {c.id(record['id'])} of "
                        f"{c.inr(record['amount'])}, whose payout failed: none of it has "
                        "reached the bank yet, so the payout comes first."
                    )
                    ctx.penalty += 0.05
    related = ev.records("related_exceptions")
    if entity_type == "settlement":
        others = [r for r in related if r.get("entity_type") != "settlement"]
        if others:
            listed = ", ".join(
                f"{c.id(r['entity_id'])} ({r['reason_code']}"
                + (f", {c.inr(abs(int(r['difference'])))}" if r.get("difference") else "")
                + ")"
                for r in others[:5]
            )
            more = f" and {len(others) - 5} more" if len(others) > 5 else ""
            ctx.notes.append(
                f"{len(others)} other open exception(s) sit in this settlement: {listed}{more}."
            )
        return
    for r in related:
        trouble = _BANK_TROUBLE.get(str(r.get("reason_code")))
        sid = r.get("entity_id")
        if not trouble or r.get("entity_type") != "settlement" or sid == ctx.failed_settlement:
            continue
        ctx.notes.append(
            f"Its settlement {c.id(sid)} has an open exception too: {trouble} "
            f"({c.inr(abs(int(r.get('difference') or 0)))})."
        )
        ctx.penalty += 0.05


def _timeline(ev: Evidence, exc: Record, c: _Cite, ctx: _Context) -> None:
    """Notice what cannot have happened in that order (a refund before its payment, a row
    settled before its record was created)."""
    if exc.get("entity_type") == "refund":
        refund = _first(ev.records("refund", refund_id=str(exc["entity_id"])))
        payment = _payment(ev, str(refund.get("payment_id"))) if refund else None
        if refund and payment and int(refund["created_at"]) < int(payment["created_at"]):
            ctx.impossible = True
            ctx.penalty += 0.25
            ctx.notes.append(
                f"Impossible timeline: refund {c.id(refund['id'])} was created on "
                f"{refund.get('created_date')}, before its payment {c.id(payment['id'])} "
                f"({payment.get('created_date')}); one of the two records is wrong."
            )
    for row in _rows(ev, str(exc.get("entity_id"))):
        settled, created = row.get("settled_at"), row.get("created_at")
        if settled is not None and created is not None and int(settled) < int(created):
            ctx.impossible = True
            ctx.penalty += 0.25
            ctx.notes.append(
                f"Impossible timeline: recon row {c.id(row['row_key'])} was settled on "
                f"{row.get('settled_date')}, before the record it settles was created."
            )
            break


# --- the money at stake, its direction and its deadline ----------------------------------


@dataclass(frozen=True)
class _Facts:
    kind: str
    eid: str
    sid: str | None
    utr: str | None
    difference: int
    stake: int
    named: int
    due: str | None
    days_overdue: int


# Money settled under a settlement the data does not hold has not been traced to the bank.
_UNTRACED = frozenset({"SETTLEMENT_NOT_FOUND"})


def _facts(ev: Evidence, exc: Record, cause: str) -> _Facts:
    eid = str(exc.get("entity_id"))
    difference = int(exc.get("difference") or 0)
    stake = abs(difference) or abs(int(exc.get("exposure_amount") or 0))
    named = (
        stake
        or abs(int(exc.get("actual_amount") or 0))
        or abs(int(exc.get("expected_amount") or 0))
    )
    cal = _calendar(ev, eid)
    due, days = None, 0
    if cal:
        due = cal.get("due_date") or cal.get("bank_credit_due")
        unpaid = cause in _UNTRACED or not (
            cal.get("settled_dates") or cal.get("bank_credit_dates")
        )
        overdue = cal.get("overdue") or cal.get("bank_overdue")
        if due and overdue and unpaid and cal.get("as_of_date"):
            days = (dt.date.fromisoformat(cal["as_of_date"]) - dt.date.fromisoformat(due)).days
    sid = exc.get("settlement_id") or (eid if exc.get("entity_type") == "settlement" else None)
    return _Facts(
        kind=str(exc.get("entity_type", "record")),
        eid=eid,
        sid=str(sid) if sid else None,
        utr=str(exc["utr"]) if exc.get("utr") else None,
        difference=difference,
        stake=stake,
        named=named,
        due=str(due) if due else None,
        days_overdue=max(0, days),
    )


_BANK_CAUSES = frozenset(
    {"BANK_SHORT_CREDIT", "BANK_EXCESS_CREDIT", "BANK_CREDITED_TWICE", "BANK_CREDIT_MISSING"}
)
_DEBIT_CAUSES = frozenset(
    {
        "REFUND_AMOUNT_DIFFERS",
        "REFUND_NOT_SETTLED",
        "TRANSFER_DEBIT_DIFFERS",
        "TRANSFER_NOT_DEBITED",
        "CHARGEBACK_DEBIT",
        "DISPUTE_LOST_FUNDS",
        "DISPUTE_AWAITING_RESPONSE",
        "FEE_ABOVE_CONTRACT",
        "GST_ABOVE_CONTRACT",
    }
)
# Differences that are only worth chasing above the materiality threshold.
_WRITE_OFF_CAUSES = frozenset(
    {
        "FEE_CHARGED_DIFFERENTLY",
        "GST_CHARGED_DIFFERENTLY",
        "SETTLED_AMOUNT_LOWER",
        "SETTLED_AMOUNT_HIGHER",
        "REFUND_AMOUNT_DIFFERS",
        "SETTLEMENT_ARITHMETIC_BREAK",
        "BANK_SHORT_CREDIT",
        "BANK_EXCESS_CREDIT",
        "TRANSFER_DEBIT_DIFFERS",
        "TRANSFER_REVERSAL_SHORT",
        "TRANSFER_REVERSAL_EXCESS",
        "FEE_ABOVE_CONTRACT",
        "GST_ABOVE_CONTRACT",
    }
)
# Causes whose booking is a judgement call whatever the amount.
_JUDGEMENT_CAUSES = frozenset(
    {
        "SETTLED_TWICE",
        "BANK_CREDITED_TWICE",
        "CAPTURE_STATUS_OUT_OF_SYNC",
        "UNKNOWN_ENTITY",
        "UNIDENTIFIED_BANK_CREDIT",
        "CHARGEBACK_DEBIT",
        "DISPUTE_LOST_FUNDS",
        "DISPUTE_REVERSAL_NOT_CREDITED",
        "DISPUTE_AWAITING_RESPONSE",
        "TRANSFER_REVERSAL_EXCESS",
    }
)


def _direction(cause: str, f: _Facts, c: _Cite) -> str:
    """Which way the money is out, in words: 'Razorpay paid ₹X less than expected'."""
    if not f.difference:
        return ""
    amount = c.inr(abs(f.difference))
    less = f.difference < 0
    if cause == "SETTLEMENT_ARITHMETIC_BREAK":
        return (
            f"Razorpay paid {amount} {'less' if less else 'more'} than the settlement's "
            "recon rows add up to"
        )
    if cause == "UNIDENTIFIED_BANK_CREDIT":
        return f"the bank credited {amount} that no settlement explains"
    if cause == "UNKNOWN_ENTITY":
        return f"Razorpay settled {amount} for a record that is not in the data"
    if cause == "CAPTURE_STATUS_OUT_OF_SYNC":
        return f"Razorpay paid {amount} for a payment held as not captured"
    fixed = _FIXED_DIRECTION.get(cause)
    if fixed:
        return fixed.format(amount=amount)
    if cause in _BANK_CAUSES:
        return f"the bank credited {amount} {'less' if less else 'more'} than Razorpay settled"
    if cause in _DEBIT_CAUSES or (cause == "SETTLED_TWICE" and f.kind in ("refund", "transfer")):
        return f"Razorpay deducted {amount} {'less' if less else 'more'} than expected"
    return f"Razorpay paid {amount} {'less' if less else 'more'} than expected"


_FIXED_DIRECTION = {
    "NOT_SETTLED": "Razorpay has not yet paid the {amount} due",
    "SETTLEMENT_NOT_FOUND": "{amount} sits in a settlement the data does not hold, so it "
    "cannot be traced to the bank",
    "REFUND_NOT_SETTLED": "Razorpay has not yet debited the {amount} refund",
    "TRANSFER_NOT_DEBITED": "Razorpay has not yet debited the {amount} transfer",
    "BANK_CREDIT_MISSING": "the bank has not credited the {amount} Razorpay settled",
    "SETTLEMENT_PAYOUT_FAILED": "Razorpay has not paid out {amount}",
    "CHARGEBACK_DEBIT": "Razorpay debited {amount} for the dispute",
    "DISPUTE_AWAITING_RESPONSE": "{amount} is at stake in the open dispute",
    "DISPUTE_LOST_FUNDS": "{amount} is lost to the dispute",
    "DISPUTE_REVERSAL_NOT_CREDITED": "Razorpay still owes {amount} of the dispute debit",
    "REFUND_REVERSAL_NOT_CREDITED": "Razorpay still owes {amount} of the failed refund's debit",
    "INSTANT_PAYOUT_RETURNED": "{amount} went back to the Razorpay balance",
}
_ASK = {
    "NOT_SETTLED": "Please tell us when it will be settled, or why it is held.",
    "REFUND_NOT_SETTLED": "Please confirm the refund's status and settlement.",
    "SETTLEMENT_NOT_FOUND": "Please send the settlement or the report that contains it.",
    "DISPUTE_REVERSAL_NOT_CREDITED": "Please credit the reversal in the next settlement.",
    "REFUND_REVERSAL_NOT_CREDITED": "Please credit the failed refund back in the next settlement.",
    "TRANSFER_NOT_DEBITED": "Please confirm whether the transfer was debited.",
}


def _deadline(f: _Facts) -> str:
    if not f.due:
        return ""
    if f.days_overdue:
        return f" It was due on {f.due} and is {f.days_overdue} days overdue."
    return f" It was due on {f.due}."


@dataclass(frozen=True)
class _Plan:
    text: str
    counterparty: str = ""
    draft: str = ""
    journal: str = ""
    write_off: bool = False
    review: str = ""  # why a person must decide whatever the amount (empty: no such reason)


LEDGERS = Ledgers()


def _entry(debit: str, credit: str, amount: str, why: str) -> str:
    return f"Dr {debit} {amount} / Cr {credit} {amount} ({why})"


def _quote(f: _Facts, c: _Cite) -> str:
    parts = [f"{f.kind} {c.id(f.eid)}"]
    if f.sid and f.sid != f.eid:
        parts.append(f"settlement {c.id(f.sid)}")
    if f.utr:
        parts.append(f"UTR {c.id(f.utr)}")
    return ", ".join(parts)


def _next_step(cause: str, f: _Facts, action: str, c: _Cite, policy: Policy) -> _Plan:
    """A concrete next step: who to ask about which ids and amounts, by when, a drafted
    message where one is due, and the journal entry where the books must move."""
    direction = _direction(cause, f, c)
    said = f" {direction[0].upper()}{direction[1:]}." if direction else ""
    quote = _quote(f, c)
    if cause in _WRITE_OFF_CAUSES and 0 < f.stake < policy.materiality_paise:
        amount = c.inr(f.stake)
        less = f.difference < 0
        return _Plan(
            text=f"Write off {amount} on {quote}:{said[:-1] if said else ''}, below the "
            f"materiality threshold ({_threshold(policy.materiality_paise)}, "
            f"{MATERIALITY_ENV}); do not raise it with Razorpay support.",
            journal=_entry(
                LEDGERS.charges if less else LEDGERS.receivable,
                LEDGERS.receivable if less else LEDGERS.charges,
                amount,
                f"write-off of the difference on {f.eid}",
            ),
            write_off=True,
        )
    stake = c.inr(f.stake) if f.stake else c.inr(f.named)
    special = _SPECIAL_PLANS.get(cause)
    if special is not None:
        plan = special(f, c, stake, said, quote)
        if plan is not None:
            return plan
    text = f"{action} Quote {quote} ({stake}).{said}{_deadline(f)}"
    draft = ""
    if cause in _SUPPORT_CAUSES:
        ask = _ASK.get(
            cause, "Please explain the difference and correct it in the next settlement."
        )
        draft = f"Hello Razorpay support, about {quote}: {direction or stake}. {ask}"
        return _Plan(text, "Razorpay support", draft)
    return _Plan(text)


_SUPPORT_CAUSES = frozenset(
    {
        "SETTLED_AMOUNT_LOWER",
        "SETTLEMENT_NOT_FOUND",
        "NOT_SETTLED",
        "REFUND_NOT_SETTLED",
        "DISPUTE_REVERSAL_NOT_CREDITED",
        "REFUND_REVERSAL_NOT_CREDITED",
        "TRANSFER_DEBIT_DIFFERS",
        "TRANSFER_REVERSAL_SHORT",
        "TRANSFER_REVERSAL_EXCESS",
        "TRANSFER_NOT_DEBITED",
        "FEE_ABOVE_CONTRACT",
        "GST_ABOVE_CONTRACT",
    }
)


def _plan_fee(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan | None:
    detail = c.facts.get("fee_detail", "")
    if f.difference > 0:
        return _Plan(
            f"Razorpay deducted {stake} less in fees than the payment record on {quote}.{said}"
            f" Expect Razorpay to recover it in a later settlement; keep {stake} in "
            f"{LEDGERS.suspense} until it does.",
            journal=_entry(
                LEDGERS.receivable, LEDGERS.suspense, stake, f"fee under-deducted on {f.eid}"
            ),
        )
    draft = (
        f"Hello Razorpay support, payment {f.eid}"
        + (f" in settlement {f.sid}" if f.sid else "")
        + f" was settled {stake} short of its amount minus the fee on the payment record"
        + (f" ({detail})" if detail else "")
        + f". Please confirm the fee and GST charged and refund the {stake}."
    )
    return _Plan(
        f"Claim {stake} back from Razorpay support for {quote}.{said}"
        + (f" {detail[0].upper()}{detail[1:]}." if detail else ""),
        "Razorpay support",
        draft,
        _entry(LEDGERS.receivable, LEDGERS.charges, stake, f"excess fee claimed back on {f.eid}"),
    )


def _plan_higher(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Do not book the extra {stake} on {quote} as sales.{said} Razorpay will recover it "
        f"in a later settlement: hold it in {LEDGERS.suspense} and ask Razorpay support to "
        "confirm.",
        "Razorpay support",
        f"Hello Razorpay support, {quote} settled {stake} more than the captured amount. "
        "Please confirm whether and when you will recover it.",
        _entry(LEDGERS.receivable, LEDGERS.suspense, stake, f"excess settled for {f.eid}"),
    )


def _plan_twice(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan | None:
    verdict = c.facts.get("duplicate")
    rows = c.facts.get("duplicate_rows", "")
    if verdict == "taken_twice":
        return _Plan(
            f"Claim {stake} back from Razorpay: refund {f.eid} was debited twice ({rows}) and "
            f"settlement {f.sid} adds up only with both debits, so the money really left "
            "twice. Book both debits as they happened and raise the duplicate as a "
            "receivable.",
            "Razorpay support",
            f"Hello Razorpay support, refund {f.eid} was debited twice in settlement {f.sid}"
            + (f" (UTR {f.utr})" if f.utr else "")
            + f", rows {rows}, {stake} each. The customer was refunded once. Please reverse "
            f"the duplicate debit of {stake} in the next settlement.",
            _entry(LEDGERS.receivable, LEDGERS.refunds, stake, f"duplicate debit of {f.eid}"),
        )
    if verdict == "paid_twice":
        return _Plan(
            f"Razorpay paid {f.kind} {f.eid} twice ({rows}) and settlement {f.sid} adds up only "
            f"with both credits: {stake} reached you in excess and Razorpay will claw it back. "
            f"Hold {stake} in {LEDGERS.suspense}; do not book it as sales.",
            "Razorpay support",
            f"Hello Razorpay support, {f.kind} {f.eid} was settled twice in settlement "
            f"{f.sid}, rows {rows}, {stake} each. Please confirm how and when you will "
            "recover the duplicate.",
            _entry(LEDGERS.receivable, LEDGERS.suspense, stake, f"duplicate settlement of {f.eid}"),
        )
    if verdict == "report_echo":
        return _Plan(
            f"Book {f.kind} {f.eid} once: settlement {f.sid} adds up without the second row "
            f"({rows}), so the recon report repeats a line and no {stake} moved twice. Ask "
            "Razorpay support for a corrected report.",
            "Razorpay support",
            f"Hello Razorpay support, the recon report of settlement {f.sid} lists {f.kind} "
            f"{f.eid} twice ({rows}) though the settlement amount counts it once. Please send "
            "a corrected report.",
        )
    return None


def _plan_bank_twice(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan | None:
    verdict = c.facts.get("bank_twice")
    lines = c.facts.get("bank_lines", "")
    if verdict == "paid_twice":
        return _Plan(
            f"Razorpay paid settlement {f.eid} twice ({lines}; both raised the running "
            f"balance): {stake} is Razorpay's money and it will claw it back. Keep {stake} "
            f"in {LEDGERS.suspense} (do not spend it) and ask Razorpay support how they will "
            "recover it.",
            "Razorpay support",
            f"Hello Razorpay support, settlement {f.eid} (UTR {f.utr}) reached our bank twice "
            f"({lines}), {stake} each. Please confirm how and when you will recover the "
            "duplicate payout.",
            _entry(LEDGERS.bank, LEDGERS.suspense, stake, f"second credit of {f.eid}, to return"),
        )
    if verdict == "statement_echo":
        return _Plan(
            f"The statement repeats the credit of settlement {f.eid} ({lines}) with the same "
            f"running balance: only one {stake} reached the account. Ask the bank for a "
            "corrected statement and do not book the second line.",
            "the bank",
            f"Hello, our statement shows UTR {f.utr} twice ({lines}) for {stake} with the same "
            "balance. Please confirm that only one credit was received and send a corrected "
            "statement.",
        )
    return None


def _plan_missing_bank(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Ask the bank for the credit of {stake} under UTR {f.utr or '(none)'} for settlement "
        f"{f.eid}.{_deadline(f)} If the bank has nothing, ask Razorpay support for the "
        "payout's proof and status.",
        "the bank",
        f"Hello, we expected a credit of {stake} from Razorpay Software Pvt Ltd under UTR "
        f"{f.utr or '(none)'}"
        + (f", due on {f.due}" if f.due else "")
        + ". It is not on our statement. Please trace it and confirm the date it was or "
        "will be credited.",
    )


def _plan_bank_amount(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Ask the bank to trace {stake} on UTR {f.utr or '(none)'} for settlement {f.eid}.{said}",
        "the bank",
        f"Hello, the credit under UTR {f.utr or '(none)'} differs from Razorpay's settlement "
        f"{f.eid} by {stake}. Please confirm the amount received and any charges deducted.",
    )


def _plan_failed(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    rows = c.facts.get("failed_rows", "")
    return _Plan(
        f"Fix the settlement bank account in the Razorpay dashboard and ask Razorpay support "
        f"to retry the payout of settlement {f.eid} ({stake}{rows}); until it arrives keep "
        f"it in {LEDGERS.receivable}.",
        "Razorpay support",
        f"Hello Razorpay support, the payout of settlement {f.eid}"
        + (f" (UTR {f.utr})" if f.utr else "")
        + f" for {stake} failed. Please tell us why and when it will be retried.",
    )


def _plan_sum(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Ask Razorpay support for the full recon report of settlement {f.eid}"
        + (f" (UTR {f.utr})" if f.utr else "")
        + f".{said} A row may be missing from the import or the settlement amount is wrong.",
        "Razorpay support",
        f"Hello Razorpay support, settlement {f.eid} does not equal the sum of its recon "
        f"rows: {said.strip()[:-1] if said else stake}. Please send the full report "
        "or explain the difference.",
    )


def _plan_mapping(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    owner = c.facts.get("true_owner", "")
    return _Plan(
        f"Ask Razorpay support to correct the mapping on {quote} ({stake})"
        + (f"; {owner}" if owner else "")
        + ". Check that the other order is not marked paid twice in the order system.",
        "Razorpay support",
        f"Hello Razorpay support, the recon row for {f.kind} {f.eid} names the wrong record"
        + (f" ({owner})" if owner else "")
        + ". Please correct the mapping.",
    )


def _plan_status(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Mark payment {f.eid} captured in the order system and fulfil or refund its order: "
        f"Razorpay settled {stake} for it (settlement {f.sid or '-'}).",
        journal=_entry(LEDGERS.receivable, LEDGERS.sales, stake, f"sale behind {f.eid}"),
    )


def _plan_refund_amount(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    if f.difference > 0:
        return _Plan(
            f"Claim {stake} back from Razorpay support for {quote}.{said}",
            "Razorpay support",
            f"Hello Razorpay support, refund {f.eid} was debited {stake} more than its amount. "
            f"Please reverse the {stake}.",
            _entry(LEDGERS.receivable, LEDGERS.refunds, stake, f"over-debit of {f.eid}"),
        )
    return _Plan(
        f"Ask Razorpay support whether refund {f.eid} reached the customer in full ({quote})."
        f"{said} Expect a further debit of {stake} if it did.",
        "Razorpay support",
        f"Hello Razorpay support, refund {f.eid} was debited {stake} less than its amount. "
        "Did the customer receive the full refund?",
    )


def _plan_unknown(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Find {f.eid} ({stake} in settlement {f.sid or '-'}): import the missing payments or "
        "refunds (another account or date range?) or ask Razorpay support what it is; hold "
        f"{stake} in {LEDGERS.suspense} meanwhile.",
        journal=_entry(LEDGERS.receivable, LEDGERS.suspense, stake, f"unidentified row {f.eid}"),
    )


def _plan_unidentified(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Find the settlement behind bank line {f.eid} ({stake}) in the Razorpay dashboard "
        f"by amount and date and import it; hold {stake} in {LEDGERS.suspense} meanwhile, "
        "or reclassify it if it is not a Razorpay payout.",
        journal=_entry(LEDGERS.bank, LEDGERS.suspense, stake, f"unidentified credit {f.eid}"),
    )


def _plan_lost(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    # The journal posts every dispute debit Razorpay makes, with the settlement carrying it
    # (docs/books.md section 2): an entry by hand beside it would book the loss twice
    # (independent tester, finding 4), so the advice says where it is posted instead.
    journal = c.facts.get("journal") or (
        f"No recon row in the evidence debits it: the journal posts a dispute's debit to "
        f"{LEDGERS.chargebacks} in the voucher of the settlement that carries it, so check "
        "the month's journal before booking anything by hand."
    )
    return _Plan(
        f"The loss of {stake} on {quote} will not come back through a settlement; "
        f"recover it from the customer if you can. {journal}"
    )


def _plan_instant_returned(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"Quote {quote} ({stake}): {stake} went back to the Razorpay balance, so no bank "
        f"credit is due for it. {_INSTANT_ADVICE.format(stake=stake)}",
        review="only a person can resolve it: no later data will clear it",
    )


_INSTANT_ADVICE = (
    "Confirm in the Razorpay Dashboard (Settlements, Instant Settlements) that it shows "
    "{stake} reversed to the balance, and retry the instant settlement if the money is "
    "still needed early. The reversed money is ordinary Razorpay balance again, paid in the "
    "regular settlement cycle, but no recon row names the instant settlement, so no later "
    "data can show which settlement carries it: this exception stays open until a person "
    "resolves it."
)


def _plan_late(f: _Facts, c: _Cite, stake: str, said: str, quote: str) -> _Plan:
    return _Plan(
        f"No money is at risk: {quote} ({stake}) settled late. Note the delay and raise it "
        "with Razorpay support only if it recurs."
    )


PlanMaker = Callable[[_Facts, _Cite, str, str, str], "_Plan | None"]
_SPECIAL_PLANS: dict[str, PlanMaker] = {
    "FEE_CHARGED_DIFFERENTLY": _plan_fee,
    "GST_CHARGED_DIFFERENTLY": _plan_fee,
    "SETTLED_AMOUNT_HIGHER": _plan_higher,
    "SETTLED_TWICE": _plan_twice,
    "BANK_CREDITED_TWICE": _plan_bank_twice,
    "BANK_CREDIT_MISSING": _plan_missing_bank,
    "BANK_SHORT_CREDIT": _plan_bank_amount,
    "BANK_EXCESS_CREDIT": _plan_bank_amount,
    "SETTLEMENT_PAYOUT_FAILED": _plan_failed,
    "SETTLEMENT_ARITHMETIC_BREAK": _plan_sum,
    "MAPPED_TO_OTHER_PAYMENT": _plan_mapping,
    "MAPPED_TO_OTHER_ORDER": _plan_mapping,
    "CAPTURE_STATUS_OUT_OF_SYNC": _plan_status,
    "REFUND_AMOUNT_DIFFERS": _plan_refund_amount,
    "UNKNOWN_ENTITY": _plan_unknown,
    "UNIDENTIFIED_BANK_CREDIT": _plan_unidentified,
    "DISPUTE_LOST_FUNDS": _plan_lost,
    "SETTLED_LATE": _plan_late,
    "INSTANT_PAYOUT_RETURNED": _plan_instant_returned,
}


def _threshold(paise: int) -> str:
    """A policy threshold ('10 rupees', '1 lakh rupees'): it is a setting, not an amount
    from the evidence, so it is not written the way evidence amounts are cited. The
    citation check still reads it as an amount (it reads every form a reader would); the
    rules' answer is not a model's and is not held to that check."""
    if paise and paise % 10_000_000 == 0:
        return f"{paise // 10_000_000} lakh rupees"
    if paise % 100 == 0:
        return f"{paise // 100} rupees"
    return f"{paise} in paise"


def _needs_review(
    cause: str, confidence: float, f: _Facts, plan: _Plan, policy: Policy, ctx: _Context
) -> tuple[bool, str]:
    """A person decides when the evidence is ambiguous, the money large or long overdue,
    the timeline impossible, or the booking a judgement call; not for routine follow-up."""
    reasons = []
    if confidence < REVIEW_BELOW_CONFIDENCE:
        reasons.append(f"the evidence is ambiguous (confidence {confidence:.0%})")
    if f.stake >= policy.review_amount_paise:
        reasons.append(
            f"{format_inr(f.stake)} is at stake (review from "
            f"{_threshold(policy.review_amount_paise)}, {REVIEW_AMOUNT_ENV})"
        )
    if f.days_overdue > policy.review_overdue_days:
        reasons.append(
            f"the money is {f.days_overdue} days past due (review after "
            f"{policy.review_overdue_days})"
        )
    if ctx.impossible:
        reasons.append("the timeline is impossible")
    if cause in _JUDGEMENT_CAUSES and not plan.write_off:
        reasons.append("how to book it is a judgement call")
    if plan.review:
        reasons.append(plan.review)
    if reasons:
        return True, "Human review required: " + "; ".join(reasons) + "."
    if plan.write_off:
        return False, "No human review needed: a write-off below materiality is routine."
    return False, "No human review needed: routine follow-up."
