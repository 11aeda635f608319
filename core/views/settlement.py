"""One settlement on the Settlement page: its batch decomposition, the arithmetic checks,
its bank lines and its open exceptions."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from core.db import page_reads
from core.db import views as db
from core.db.views import OPEN_STATUSES, QueueFilter
from core.views.common import run_as_of
from core.views.queue import QueueItem, queue_item


@dataclass(frozen=True)
class BreakdownLine:
    """One line of a settlement's decomposition; paise is signed (debits negative)."""

    label: str
    count: int | None
    paise: int


@dataclass(frozen=True)
class Check:
    """One arithmetic check: `expected` (what Razorpay states) against `computed`."""

    name: str
    expected: int | None
    computed: int

    @property
    def ok(self) -> bool:
        return self.expected is not None and self.expected == self.computed

    @property
    def difference(self) -> int | None:
        return None if self.expected is None else self.computed - self.expected


@dataclass(frozen=True)
class SettlementView:
    """One settlement: its record, its batch decomposition, the checks, its bank lines.

    lines: gross payments, fees (GST inside), net payment credit, refunds, transfers,
    adjustments, computed net. rows: the first `row_limit` recon rows; row_count: all.
    """

    settlement: dict[str, Any]
    lines: tuple[BreakdownLine, ...]
    gst_paise: int
    checks: tuple[Check, ...]
    rows: tuple[dict[str, Any], ...]
    row_count: int
    bank_lines: tuple[dict[str, Any], ...]
    outcome: dict[str, Any] | None
    open_exceptions: tuple[QueueItem, ...]


def settlement_choices(
    conn: sqlite3.Connection, search: str = "", limit: int = 200
) -> list[dict[str, Any]]:
    """Settlements to pick from: id or UTR match, largest open exposure first."""
    return page_reads.settlement_choices(conn, search, limit, OPEN_STATUSES)


def settlement_view(
    conn: sqlite3.Connection, settlement_id: str, *, row_limit: int = 500
) -> SettlementView | None:
    record = db.settlement_by_id(conn, settlement_id)
    instant = record is None
    if instant:  # an instant settlement (setlod_...): shown in a settlement's shape
        record = db.instant_settlement_by_id(conn, settlement_id)
    if record is None:
        return None
    by_type = {r["type"]: r for r in db.settlement_breakdown(conn, settlement_id)}
    empty = {"n": 0, "amount": 0, "credit": 0, "debit": 0, "fee": 0, "tax": 0}

    def part(kind: str) -> dict[str, int]:
        return {k: int(v) for k, v in by_type.get(kind, empty).items() if k != "type"}

    payments, refunds = part("payment"), part("refund")
    transfers, adjustments = part("transfer"), part("adjustment")
    credit = sum(int(r["credit"]) for r in by_type.values())
    debit = sum(int(r["debit"]) for r in by_type.values())
    net = credit - debit
    lines = (
        BreakdownLine("Payments (gross)", payments["n"], payments["amount"]),
        BreakdownLine("Fees on payments (GST included)", None, -payments["fee"]),
        BreakdownLine("Payments credited (net of fees)", payments["n"], payments["credit"]),
        BreakdownLine("Refunds (amount + fee)", refunds["n"], -refunds["debit"]),
        BreakdownLine("Transfers", transfers["n"], -transfers["debit"]),
        BreakdownLine(
            "Adjustments (credit − debit)",
            adjustments["n"],
            adjustments["credit"] - adjustments["debit"],
        ),
        BreakdownLine("Net settlement (Σ credit − Σ debit)", None, net),
    )
    run = db.latest_completed_run(conn)
    run_id = int(run["id"]) if run else None
    bank = db.bank_lines_for_settlement(conn, record["utr"], settlement_id, run_id)
    credited = sum(int(b["credit"]) for b in bank)
    checks = [
        Check("Settlement amount = Σ credit − Σ debit", int(record["amount"]), net),
        Check(
            "Settlement fees = Σ row fees",
            None if record["fees"] is None else int(record["fees"]),
            sum(int(r["fee"]) for r in by_type.values()),
        ),
        Check(
            "Settlement GST = Σ row GST",
            None if record["tax"] is None else int(record["tax"]),
            sum(int(r["tax"]) for r in by_type.values()),
        ),
        Check(
            "Payment rows: Σ credit = Σ amount − Σ fee",
            payments["credit"],
            payments["amount"] - payments["fee"],
        ),
    ]
    if instant:  # its recon rows are what it paid out early, not its amount's sum
        checks = []
    if bank:
        checks.append(Check("Bank credit = settlement amount", int(record["amount"]), credited))
    flt = QueueFilter(settlement_id=settlement_id)
    moment = run_as_of(conn, None)
    return SettlementView(
        settlement=record,
        lines=lines,
        gst_paise=sum(int(r["tax"]) for r in by_type.values()),
        checks=tuple(checks),
        rows=tuple(db.settlement_recon_rows(conn, settlement_id, row_limit)),
        row_count=sum(int(r["n"]) for r in by_type.values()),
        bank_lines=tuple(bank),
        outcome=(
            db.outcome_for(
                conn, run_id, "instant_settlement" if instant else "settlement", settlement_id
            )
            if run_id
            else None
        ),
        open_exceptions=tuple(
            queue_item(r, moment) for r in db.queue_page(conn, flt, moment, "exposure_desc", 100, 0)
        ),
    )
