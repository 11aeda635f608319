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
    note: str = ""  # said instead of the difference (a settlement never credited)
    not_applicable: str = ""  # why the check does not apply (shown neutral, never failed)

    @property
    def ok(self) -> bool:
        return self.expected is not None and self.expected == self.computed

    @property
    def failed(self) -> bool:
        """Razorpay states a figure and the rows disagree (a red ✗ on the page)."""
        return self.expected is not None and not self.ok and not self.not_applicable

    @property
    def difference(self) -> int | None:
        return None if self.expected is None else self.computed - self.expected


@dataclass(frozen=True)
class SettlementView:
    """One settlement: its record, its batch decomposition, the checks, its bank lines.

    lines: gross payments, fees (GST inside), net payment credit, then one line per kind of
    recon row (refunds, transfers, reversals, dispute adjustments, other adjustments, any
    other type), whose amounts with the net payment credit add up to the computed net.
    rows: the first `row_limit` recon rows; row_count: all.
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


NORMAL_SETTLEMENT_FEES = (
    "Razorpay states fees ₹0.00 and GST ₹0.00 on a normal settlement: the fees are charged "
    "per row (Recon rows below), so a normal settlement's total is not a check"
)

# Each line: label, recon row type, whether the rows name a dispute (None: either).
# Every row lands in exactly one line (unknown types get their own), so the lines after
# the fees add up to the net: Σ (credit − debit) of the settlement's recon rows.
_LINES = (
    ("Refunds (amount + fee)", "refund", None),
    ("Transfers", "transfer", None),
    ("Transfer reversals", "reversal", None),
    ("Dispute debits and their reversals (adjustments naming a dispute)", "adjustment", True),
    ("Other adjustments (instant-settlement draws and the like)", "adjustment", False),
)


def _sum(groups: list[dict[str, Any]], field: str, kind: str, disputed: bool | None = None) -> int:
    return sum(
        int(g[field])
        for g in groups
        if g["type"] == kind and (disputed is None or bool(g["disputed"]) == disputed)
    )


def _count(groups: list[dict[str, Any]], kind: str, disputed: bool | None = None) -> int:
    return _sum(groups, "n", kind, disputed)


def _lines(groups: list[dict[str, Any]]) -> tuple[tuple[BreakdownLine, ...], int]:
    """The decomposition's lines and the net (Σ credit − Σ debit over every row)."""

    def flow(kind: str, disputed: bool | None = None) -> int:
        return _sum(groups, "credit", kind, disputed) - _sum(groups, "debit", kind, disputed)

    lines = [
        BreakdownLine(
            "Payments (gross)", _count(groups, "payment"), _sum(groups, "amount", "payment")
        ),
        BreakdownLine("Fees on payments (GST included)", None, -_sum(groups, "fee", "payment")),
        BreakdownLine(
            "Payments credited (net of fees)", _count(groups, "payment"), flow("payment")
        ),
    ]
    lines += [
        BreakdownLine(label, _count(groups, kind, disputed), flow(kind, disputed))
        for label, kind, disputed in _LINES
    ]
    known = {"payment", *(kind for _, kind, _ in _LINES)}
    lines += [
        BreakdownLine(f"Other rows (type {kind})", _count(groups, kind), flow(kind))
        for kind in sorted({str(g["type"]) for g in groups} - known)
    ]
    net = sum(int(g["credit"]) - int(g["debit"]) for g in groups)
    lines.append(BreakdownLine("Net settlement (Σ credit − Σ debit)", None, net))
    return tuple(lines), net


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
    groups = db.settlement_breakdown(conn, settlement_id)
    lines, net = _lines(groups)
    run = db.latest_completed_run(conn)
    run_id = int(run["id"]) if run else None
    bank = db.bank_lines_for_settlement(conn, record["utr"], settlement_id, run_id)
    credited = sum(int(b["credit"]) for b in bank)
    fees = None if record["fees"] is None else int(record["fees"])
    tax = None if record["tax"] is None else int(record["tax"])
    # A normal settlement states fees 0 and tax 0 (the API's settlement entity and the
    # Settlements report alike): its fees are charged per row. Comparing those zeros with
    # the rows' fees would fail every correct settlement, so the checks do not apply.
    normal = NORMAL_SETTLEMENT_FEES if fees == 0 and tax == 0 else ""
    checks = [
        Check("Settlement amount = Σ credit − Σ debit", int(record["amount"]), net),
        Check(
            "Settlement fees = Σ row fees",
            fees,
            sum(int(r["fee"]) for r in groups),
            not_applicable=normal,
        ),
        Check(
            "Settlement GST = Σ row GST",
            tax,
            sum(int(r["tax"]) for r in groups),
            not_applicable=normal,
        ),
        Check(
            "Payment rows: Σ credit = Σ amount − Σ fee",
            _sum(groups, "credit", "payment"),
            _sum(groups, "amount", "payment") - _sum(groups, "fee", "payment"),
        ),
    ]
    if instant:  # its recon rows are what it paid out early, not its amount's sum
        checks = []
    if bank:
        checks.append(Check("Bank credit = settlement amount", int(record["amount"]), credited))
    elif not instant and record["status"] == "processed":  # paid out, never credited
        checks.append(
            Check(
                "Bank credit = settlement amount",
                int(record["amount"]),
                0,
                note="not credited: no bank line carries its UTR",
            )
        )
    flt = QueueFilter(settlement_id=settlement_id)
    moment = run_as_of(conn, None)
    return SettlementView(
        settlement=record,
        lines=lines,
        gst_paise=sum(int(r["tax"]) for r in groups),
        checks=tuple(checks),
        rows=tuple(db.settlement_recon_rows(conn, settlement_id, row_limit)),
        row_count=sum(int(r["n"]) for r in groups),
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
