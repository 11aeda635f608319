"""Evidence: the exception plus the outputs of the tools run for it, as frozen plain data.

`gather(tools, exception)` runs a fixed plan of allow-listed tool calls chosen by the
exception's entity type and reason code. The same `Evidence` feeds the deterministic
investigator, the reviewer's display and (redacted) a model. Its digest over the redacted
form is the cache key; its ids and amounts are what a citation may name.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from core.investigate.tools import (
    ID_FIELDS,
    MONEY_FIELDS,
    EvidenceTools,
    ToolRefused,
    ToolResult,
)

# Tokens in free text that look like record ids (the evidence must hold each one cited).
PREFIXED_ID = re.compile(
    r"\b(?:pay|rfnd|setl|setlod|setlodp|order|disp|trf|rvrsl|acc|adj|txn|cust|inv|plink|rcpt)_[A-Za-z0-9]{4,}\b"
)
BANK_LINE_ID = re.compile(r"\b[\w.-]+\.(?:csv|CSV|txt|TXT|xls|xlsx):\d+\b")
UTR_LIKE = re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{12,22}\b|\b\d{12,22}\b")


@dataclass(frozen=True)
class Evidence:
    """What an investigation is based on.

    exception: the exception record (or, in evaluation, the outcome record) being
    explained: ids, reason codes and integer-paise amounts. items: the outputs of the
    allow-listed tools, in the order they ran. redacted: True for the copy a model sees.
    """

    exception: Mapping[str, Any]
    items: tuple[ToolResult, ...]
    redacted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "exception": dict(self.exception),
            "items": [item.to_dict() for item in self.items],
            "redacted": self.redacted,
        }

    def digest(self, salt: str = "") -> str:
        """sha256 of the canonical JSON of the evidence (with a salt: the prompt version)."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256((salt + "\n" + canonical).encode("utf-8")).hexdigest()

    def find(self, tool: str, **args: Any) -> ToolResult | None:
        """The first result of `tool` whose args include `args`."""
        for item in self.items:
            if item.tool == tool and all(item.args.get(k) == v for k, v in args.items()):
                return item
        return None

    def records(self, tool: str, **args: Any) -> list[Mapping[str, Any]]:
        """Every record of every `tool` result whose args include `args`."""
        return [
            r
            for item in self.items
            if item.tool == tool and all(item.args.get(k) == v for k, v in args.items())
            for r in item.records
        ]

    def with_items(self, extra: tuple[ToolResult, ...]) -> Evidence:
        return replace(self, items=self.items + extra)

    # --- what a citation may name -------------------------------------------------------

    def record_ids(self) -> frozenset[str]:
        """Every id held in an id field of the exception or of any record."""
        ids: set[str] = set()
        for record in self._all_records():
            for key, value in _walk(record):
                if key in ID_FIELDS and value not in (None, ""):
                    ids.add(str(value))
        return frozenset(ids)

    def amounts(self) -> frozenset[int]:
        """Every integer-paise value in a money field, with its absolute value."""
        found: set[int] = set()
        for record in self._all_records():
            for key, value in _walk(record):
                if key in MONEY_FIELDS and isinstance(value, int) and not isinstance(value, bool):
                    found.update((value, abs(value)))
        return frozenset(found)

    def text(self) -> str:
        """All evidence as one JSON string (for free-text token checks)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def _all_records(self) -> Iterator[Mapping[str, Any]]:
        yield self.exception
        for item in self.items:
            yield from item.records


_ARG_ID_KEYS = frozenset({"refund_id", "line_id", "exception_id", "entity_type", "date"})


def _walk(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _walk(v, str(k))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _walk(v, key)
    else:
        yield key, value


def gather(tools: EvidenceTools, exception: Mapping[str, Any]) -> Evidence:
    """Run the evidence plan for one exception (or outcome) record."""
    plan = _Plan(tools)
    entity_type = str(exception["entity_type"])
    entity_id = str(exception["entity_id"])
    code = str(exception["reason_code"])
    # A duplicate row is judged by its settlement's arithmetic: does the settlement add up
    # only with both rows (the money really moved twice) or without one (a report echo)?
    duplicate = code == "DUPLICATE_RECONCILIATION_RECORD"

    if entity_type == "payment":
        payment = plan.one("payment", payment_id=entity_id)
        rows = plan.many("recon_rows", entity_id=entity_id)
        plan.settlements_of(rows)
        if duplicate:
            plan.arithmetic_of(rows)
        if code == "WRONG_MAPPING" or "WRONG_MAPPING" in str(exception.get("reason_codes", "")):
            for row in rows:
                other = row.get("payment_id")
                if other and other != entity_id:
                    plan.one("payment", payment_id=str(other))
                order = row.get("order_id")
                if order and payment and order != payment.get("order_id"):
                    plan.many("payment", order_id=str(order))
        plan.one("calendar_status", entity_type="payment", entity_id=entity_id)
    elif entity_type == "refund":
        refund = plan.one("refund", refund_id=entity_id)
        if refund and refund.get("payment_id"):
            plan.one("payment", payment_id=str(refund["payment_id"]))
        rows = plan.many("recon_rows", entity_id=entity_id)
        plan.settlements_of(rows)
        if duplicate:
            plan.arithmetic_of(rows)
        plan.one("calendar_status", entity_type="refund", entity_id=entity_id)
    elif entity_type == "settlement":
        settlement = plan.one("settlement", settlement_id=entity_id)
        # The arithmetic tool carries the totals; a model may ask for the rows themselves.
        plan.one("settlement_arithmetic", settlement_id=entity_id)
        lines = []
        if settlement and settlement.get("utr"):
            lines = plan.many("bank_lines", utr=str(settlement["utr"]))
        if settlement and not lines and settlement.get("created_date"):
            plan.many(
                "bank_lines",
                amount_paise=int(settlement["amount"]),
                date=str(settlement["created_date"]),
                window_days=5,
            )
        plan.one("calendar_status", entity_type="settlement", entity_id=entity_id)
    elif entity_type == "recon_row":
        rows = plan.many("recon_rows", entity_id=entity_id)
        for row in rows[:3]:
            target = str(row.get("entity_id") or "")
            if row.get("type") == "refund" and target:
                plan.one("refund", refund_id=target)
            elif target:
                plan.one("payment", payment_id=target)
            if row.get("payment_id") and row.get("payment_id") != target:
                plan.one("payment", payment_id=str(row["payment_id"]))
        plan.settlements_of(rows)
    elif entity_type == "dispute":
        record = plan.one("dispute", dispute_id=entity_id)
        if record and record.get("payment_id"):
            plan.one("payment", payment_id=str(record["payment_id"]))
        if record:
            plan.settlements_of(list(record.get("rows") or []))
    elif entity_type == "instant_settlement":
        instant = plan.one("instant_settlement", instant_settlement_id=entity_id)
        for payout in list((instant or {}).get("payouts") or [])[:5]:
            if payout.get("utr"):
                plan.many("bank_lines", utr=str(payout["utr"]))
        plan.many("recon_rows", settlement_id=entity_id)
    elif entity_type == "transfer":
        transfer = plan.one("transfer", transfer_id=entity_id)
        rows = plan.many("recon_rows", entity_id=entity_id)
        source = (transfer or {}).get("source") or next(
            (r.get("payment_id") for r in rows if r.get("payment_id")), None
        )
        if source and str(source).startswith("pay_"):
            plan.one("payment", payment_id=str(source))
        plan.settlements_of(rows)
        if duplicate:
            plan.arithmetic_of(rows)
    elif entity_type == "bank_entry":
        line = plan.one("bank_lines", line_id=entity_id)
        if line and line.get("utr"):
            plan.many("settlement", utr=str(line["utr"]))
            plan.many("bank_lines", utr=str(line["utr"]))
        if line and int(line.get("credit") or 0) > 0:
            plan.many("settlement", amount_paise=int(line["credit"]))

    exception_id = exception.get("id")
    if isinstance(exception_id, int):
        plan.many("related_exceptions", exception_id=exception_id)
    return Evidence(exception=dict(exception), items=tuple(plan.results))


class _Plan:
    """Runs tool calls once each, remembering results in order."""

    def __init__(self, tools: EvidenceTools) -> None:
        self._tools = tools
        self.results: list[ToolResult] = []
        self._seen: set[str] = set()

    def run(self, tool: str, **args: Any) -> ToolResult | None:
        key = json.dumps([tool, args], sort_keys=True)
        if key in self._seen:
            return None
        self._seen.add(key)
        try:
            result = self._tools.call(tool, args)
        except ToolRefused:  # pragma: no cover - the plan only names allow-listed tools
            return None
        self.results.append(result)
        return result

    def one(self, tool: str, **args: Any) -> Mapping[str, Any] | None:
        result = self.run(tool, **args)
        return result.records[0] if result and result.records else None

    def many(self, tool: str, **args: Any) -> list[Mapping[str, Any]]:
        result = self.run(tool, **args)
        return list(result.records) if result else []

    def settlements_of(self, rows: list[Mapping[str, Any]]) -> None:
        ids = [str(r["settlement_id"]) for r in rows if r.get("settlement_id")]
        for settlement_id in dict.fromkeys(ids):
            self.one("settlement", settlement_id=settlement_id)

    def arithmetic_of(self, rows: list[Mapping[str, Any]]) -> None:
        ids = [str(r["settlement_id"]) for r in rows if r.get("settlement_id")]
        for settlement_id in dict.fromkeys(ids):
            self.one("settlement_arithmetic", settlement_id=settlement_id)
