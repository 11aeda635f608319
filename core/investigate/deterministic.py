"""The deterministic investigator: a root cause, a cited summary and a next step, from rules.

It reads only `Evidence` (the outputs of the allow-listed tools), needs no key and no
network, and is the answer whenever a model is absent, fails, or is caught inventing.
Each reason code's rule picks a root cause from `CAUSES_BY_CODE[code]` by looking at the
records (fee versus GST, short versus excess credit, other payment versus other order);
when the records it needs are missing it falls back to the code's default cause with a
low confidence, and a low confidence always asks for a human.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from core.investigate.evidence import Evidence
from core.investigate.result import UNCLASSIFIED, Answer
from core.money import format_inr, format_minor
from core.root_causes import CAUSES_BY_CODE, ROOT_CAUSES

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


def explain(evidence: Evidence) -> Answer:
    """The deterministic answer for the exception in `evidence`."""
    exception = evidence.exception
    code = str(exception.get("reason_code", ""))
    cite = _Cite()
    rule = RULES.get(code)
    if rule is None or code not in CAUSES_BY_CODE:
        cause, confidence = UNCLASSIFIED, 0.0
        summary = (
            f"Reason code {code or '(none)'} on {exception.get('entity_type')} "
            f"{cite.id(exception.get('entity_id'))} has no investigation rule."
        )
        recommendation = "Investigate by hand and tell the maintainers about this code."
    else:
        cause, confidence, summary, recommendation = rule(evidence, exception, cite)
    assert cause == UNCLASSIFIED or cause in ROOT_CAUSES
    review = cause not in ROUTINE_CAUSES or confidence < REVIEW_BELOW_CONFIDENCE
    return Answer(
        root_cause=cause,
        confidence=confidence,
        summary=summary,
        recommendation=recommendation,
        requires_human_review=review,
        citations=tuple(cite.ids),
        cited_amounts=tuple(cite.amounts),
    )


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
    if p_tax is not None and r_tax != int(p_tax):
        return (
            "GST_CHARGED_DIFFERENTLY",
            HIGH,
            f"{head}. The row's GST is {c.inr(r_tax)} against {c.inr(p_tax)} on the payment "
            f"(row fee {c.inr(r_fee)}).",
            fee_advice,
        )
    if p_fee is not None and r_fee != int(p_fee):
        gst = f"; GST is the same ({c.inr(r_tax)})" if p_tax is not None else ""
        return (
            "FEE_CHARGED_DIFFERENTLY",
            HIGH,
            f"{head}. The row deducts a fee of {c.inr(r_fee)} against {c.inr(p_fee)} on the "
            f"payment{gst}.",
            fee_advice,
        )
    return (
        "FEE_CHARGED_DIFFERENTLY",
        MEDIUM,
        f"{head}. Its fee ({c.inr(r_fee)}) matches the payment's, yet the credit implies a "
        f"deduction of {c.inr(amount - credit)}.",
        fee_advice,
    )


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
    return (
        "SETTLED_TWICE",
        HIGH,
        f"{kind.capitalize()} {c.id(eid)} appears in {len(rows)} recon rows: {listed}; "
        f"together {c.inr(total)}.",
        advice,
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
        exists = "exists" if _payment(ev, str(other)) else "is not in the data"
        return (
            "MAPPED_TO_OTHER_PAYMENT",
            HIGH,
            f"Recon row {c.id(row['row_key'])} for payment {c.id(eid)} names payment "
            f"{c.id(other)} (which {exists}).",
            advice,
        )
    row_order, own_order = row.get("order_id"), payment.get("order_id")
    if row_order and own_order and row_order != own_order:
        return (
            "MAPPED_TO_OTHER_ORDER",
            HIGH,
            f"Recon row {c.id(row['row_key'])} for payment {c.id(eid)} names order "
            f"{c.id(row_order)}, but the payment belongs to order {c.id(own_order)}.",
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
        "Book the loss against the order (write-off or recovery from the customer); the "
        "money will not come back through a settlement."
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
    return (
        "DISPUTE_LOST_FUNDS",
        HIGH,
        f"Dispute {c.id(record['id'])} on payment {c.opt(record.get('payment_id'))} "
        f"(disputed {c.inr(record.get('amount') or 0)}) was lost: {basis}. Its money: "
        f"{_dispute_money(record, c)}.",
        advice,
    )


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
    return (
        "SETTLEMENT_ARITHMETIC_BREAK",
        HIGH if arithmetic["difference"] else MEDIUM,
        f"Settlement {c.id(sid)} is for {c.inr(arithmetic['settlement_amount'])}, but its "
        f"{arithmetic['rows']} recon rows net to {c.inr(arithmetic['net_of_rows'])} (credits "
        f"{c.inr(arithmetic['sum_credit'])}, debits {c.inr(arithmetic['sum_debit'])}): "
        f"{c.inr(arithmetic['difference'])} unexplained.",
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
        f"{c.id(r['id'])} ({c.inr(r['credit'])} on {r['txn_date']})" for r in credits
    )
    return (
        "BANK_CREDITED_TWICE",
        HIGH,
        f"Settlement {c.id(sid)} ({c.inr(settlement['amount'])}, UTR "
        f"{c.id(settlement['utr'])}) has {len(credits)} bank credits: {listed}.",
        advice,
    )


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
    return (
        "SETTLEMENT_PAYOUT_FAILED",
        HIGH,
        f"Settlement {c.id(sid)} of {c.inr(settlement['amount'])} has status "
        f"'{settlement['status']}': Razorpay did not pay it out.",
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
    advice = (
        "Nothing to chase at the bank: the money went back to the Razorpay balance. Check "
        "that a later regular settlement carries it, and retry the instant settlement if "
        "it is still needed."
    )
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
    codes = [str(exception.get("reason_code", ""))]
    codes += [c for c in str(exception.get("reason_codes", "")).split(";") if c]
    causes: list[str] = []
    for code in codes:
        for cause in CAUSES_BY_CODE.get(code.strip(), ()):
            if cause not in causes:
                causes.append(cause)
    return tuple(causes)
