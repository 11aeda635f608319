"""Read models for the app's pages: everything a page shows, computed here or in SQL.

Pages ask these functions and render the answer; they never query or aggregate. Figures
that depend only on a run's outcomes (captured, settled, credited, pending, match rate by
settlement day) are computed once per run and cached in `app_run_summaries`; figures that
move with review actions (open exceptions, exposure, ageing, the queue) are read live with
indexed SQL, so a page stays fast with a million payments.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import hashlib
import importlib
import io
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from core.calendar import IST
from core.db import views as db
from core.db.views import ALL_STATUSES, OPEN_STATUSES, QUEUE_SORTS, QueueFilter
from core.outputs import safe_cell

__all__ = [
    "ALL_STATUSES",
    "EXPOSURE_CLASSES",
    "OPEN_STATUSES",
    "QUEUE_SORTS",
    "QueueFilter",
]

EXPOSURE_CLASSES: tuple[str, ...] = (
    "amount_at_risk",
    "awaiting_settlement",
    "disputed",
    "realised_loss",
    "structural",
)
AGE_BOUNDS_DAYS: tuple[int, ...] = (8, 16, 31, 61, 91)
AGE_LABELS: tuple[str, ...] = ("0–7 d", "8–15 d", "16–30 d", "31–60 d", "61–90 d", "over 90 d")
SYNTHETIC_SOURCES = frozenset({"benchmark"})
LABELS_FILE = "ground_truth.csv"
LABELS_META = "benchmark.json"  # beside the labels: the as-of they were written for
SUMMARY_FORMAT = 1


@dataclass(frozen=True)
class Total:
    """A count of items and their money. paise: integer paise."""

    count: int
    paise: int


@dataclass(frozen=True)
class RunInfo:
    """One reconciliation run as the sidebar shows it.

    id, status ('running', 'completed', 'failed'), started_at / finished_at / as_of: Unix
    seconds (finished_at None while running), source ('benchmark', 'files',
    'razorpay_api'), params: the engine parameters, location: where its data came from.
    """

    id: int
    status: str
    started_at: int
    finished_at: int | None
    as_of: int
    source: str
    params: dict[str, Any]
    location: str
    error: str | None = None

    @property
    def is_synthetic(self) -> bool:
        return self.source in SYNTHETIC_SOURCES

    @property
    def duration_s(self) -> float | None:
        return None if self.finished_at is None else float(self.finished_at - self.started_at)


@dataclass(frozen=True)
class DayMatchRate:
    """Payments in the settlements created on `day` (IST, ISO), and how many matched."""

    day: str
    payments: int
    matched: int

    @property
    def rate(self) -> float:
        return self.matched / self.payments if self.payments else 0.0


@dataclass(frozen=True)
class PendingLine:
    """PENDING outcomes of one entity type and reason; paise is their expected money."""

    entity_type: str
    reason: str
    count: int
    paise: int


@dataclass(frozen=True)
class RunSummary:
    """What one run established; immutable once the run is completed.

    captured: captured payments; settled: processed settlements; credited: bank credits
    linked to a settlement; pending: PENDING payments; outcome_counts: entity_type ->
    status -> count; match_rate: per settlement day.
    """

    run_id: int
    captured: Total
    settled: Total
    credited: Total
    pending: Total
    pending_lines: tuple[PendingLine, ...]
    outcome_counts: dict[str, dict[str, int]]
    match_rate: tuple[DayMatchRate, ...]

    @property
    def overall_match_rate(self) -> float | None:
        payments = sum(d.payments for d in self.match_rate)
        return sum(d.matched for d in self.match_rate) / payments if payments else None


@dataclass(frozen=True)
class CodeExposure:
    """Open exceptions of one reason code: count and exposure in paise."""

    exposure_class: str
    reason_code: str
    count: int
    paise: int


@dataclass(frozen=True)
class AgeBucket:
    """Open exceptions whose entity is `label` old at the run's as-of."""

    label: str
    count: int
    paise: int


@dataclass(frozen=True)
class Overview:
    """The Overview page: the run, its summary and the live state of the queue."""

    run: RunInfo
    summary: RunSummary
    open_exceptions: Total
    exposure_by_class: dict[str, Total]
    exposure_by_code: tuple[CodeExposure, ...]
    ageing: tuple[AgeBucket, ...]
    status_counts: dict[str, int]


def _run_info(conn: sqlite3.Connection, row: dict[str, Any]) -> RunInfo:
    source_import = db.latest_import(conn)
    return RunInfo(
        id=int(row["id"]),
        status=str(row["status"]),
        started_at=int(row["started_at"]),
        finished_at=None if row["finished_at"] is None else int(row["finished_at"]),
        as_of=int(row["as_of"]),
        source=str(row["source"]),
        params=json.loads(row["params_json"] or "{}"),
        location=str(source_import["location"]) if source_import else "",
        error=row.get("error"),
    )


def latest_run(conn: sqlite3.Connection) -> RunInfo | None:
    """The newest completed run; a running or failed run is never shown as a result."""
    row = db.latest_completed_run(conn)
    return _run_info(conn, row) if row else None


def latest_data_date(conn: sqlite3.Connection) -> dt.date | None:
    """The IST date of the newest payment, settlement or bank line: the as-of a run of
    these data defaults to (not today: March data reconciled in May would all be old)."""
    row = db.latest_data_moments(conn)
    days = [
        dt.datetime.fromtimestamp(int(row[k]), tz=IST).date()
        for k in ("payment", "settlement")
        if row[k] is not None
    ]
    if row["bank"]:
        with contextlib.suppress(ValueError):
            days.append(dt.date.fromisoformat(str(row["bank"])[:10]))
    return max(days) if days else None


@dataclass(frozen=True)
class Holdings:
    """What the database holds now: whose data (source of the latest import), and how many
    rows each raw table has. A Replace import empties these five tables."""

    source: str | None
    location: str
    payments: int
    refunds: int
    settlements: int
    recon_rows: int
    bank_lines: int

    @property
    def is_benchmark(self) -> bool:
        return self.source in SYNTHETIC_SOURCES

    @property
    def empty(self) -> bool:
        return not (self.payments or self.settlements or self.bank_lines or self.recon_rows)


def holdings(conn: sqlite3.Connection) -> Holdings:
    last = db.latest_import(conn)
    counts = db.raw_counts(conn)
    return Holdings(
        source=None if last is None else str(last["source"]),
        location="" if last is None else str(last.get("location") or ""),
        payments=int(counts["payments"]),
        refunds=int(counts["refunds"]),
        settlements=int(counts["settlements"]),
        recon_rows=int(counts["recon_rows"]),
        bank_lines=int(counts["bank_lines"]),
    )


def recent_runs(conn: sqlite3.Connection, limit: int = 10) -> list[RunInfo]:
    return [_run_info(conn, r) for r in db.recent_runs(conn, limit)]


def _total(row: dict[str, Any]) -> Total:
    return Total(count=int(row["n"] or 0), paise=int(row["amount"] or 0))


def compute_run_summary(conn: sqlite3.Connection, run_id: int) -> RunSummary:
    pending_lines = tuple(
        PendingLine(r["entity_type"], r["reason_code"], int(r["n"]), int(r["amount"]))
        for r in db.pending_by_reason(conn, run_id)
    )
    payments_pending = [p for p in pending_lines if p.entity_type == "payment"]
    counts: dict[str, dict[str, int]] = {}
    for r in db.outcome_counts(conn, run_id):
        counts.setdefault(r["entity_type"], {})[r["status"]] = int(r["n"])
    return RunSummary(
        run_id=run_id,
        captured=_total(db.captured_totals(conn)),
        settled=_total(db.settled_totals(conn)),
        credited=_total(db.bank_credited_totals(conn, run_id)),
        pending=Total(
            sum(p.count for p in payments_pending), sum(p.paise for p in payments_pending)
        ),
        pending_lines=pending_lines,
        outcome_counts=counts,
        match_rate=tuple(
            DayMatchRate(r["day"], int(r["payments"]), int(r["matched"]))
            for r in db.match_rate_by_settlement_day(conn, run_id)
        ),
    )


def _summary_from_json(text: str) -> RunSummary | None:
    data = json.loads(text)
    if data.get("format") != SUMMARY_FORMAT:
        return None
    return RunSummary(
        run_id=data["run_id"],
        captured=Total(**data["captured"]),
        settled=Total(**data["settled"]),
        credited=Total(**data["credited"]),
        pending=Total(**data["pending"]),
        pending_lines=tuple(PendingLine(**p) for p in data["pending_lines"]),
        outcome_counts=data["outcome_counts"],
        match_rate=tuple(DayMatchRate(**d) for d in data["match_rate"]),
    )


def run_summary(conn: sqlite3.Connection, run_id: int) -> RunSummary:
    """The run's summary, from the cache when the raw data have not changed since."""
    version = db.data_version(conn)
    cached = db.get_run_summary(conn, run_id)
    if cached and cached["data_version"] == version:
        summary = _summary_from_json(cached["summary_json"])
        if summary is not None:
            return summary
    summary = compute_run_summary(conn, run_id)
    payload = {"format": SUMMARY_FORMAT, **asdict(summary)}
    db.put_run_summary(conn, run_id, version, int(time.time()), json.dumps(payload))
    return summary


def exposure_by_code(conn: sqlite3.Connection) -> tuple[CodeExposure, ...]:
    return tuple(
        CodeExposure(r["exposure_class"], r["reason_code"], int(r["n"]), int(r["exposure"]))
        for r in db.exposure_by_class_and_code(conn)
    )


def ageing(conn: sqlite3.Connection, as_of: int) -> tuple[AgeBucket, ...]:
    found = {int(r["bucket"]): r for r in db.age_distribution(conn, as_of, AGE_BOUNDS_DAYS)}
    buckets = [
        AgeBucket(label, int(found[i]["n"]), int(found[i]["exposure"]))
        if i in found
        else AgeBucket(label, 0, 0)
        for i, label in enumerate(AGE_LABELS)
    ]
    if -1 in found:
        buckets.append(AgeBucket("unknown", int(found[-1]["n"]), int(found[-1]["exposure"])))
    return tuple(buckets)


def overview(conn: sqlite3.Connection) -> Overview | None:
    """Everything the Overview page shows, or None before the first completed run."""
    run = latest_run(conn)
    if run is None:
        return None
    codes = exposure_by_code(conn)
    by_class = {
        cls: Total(
            sum(c.count for c in codes if c.exposure_class == cls),
            sum(c.paise for c in codes if c.exposure_class == cls),
        )
        for cls in (*EXPOSURE_CLASSES, *sorted({c.exposure_class for c in codes}))
    }
    return Overview(
        run=run,
        summary=run_summary(conn, run.id),
        open_exceptions=Total(sum(c.count for c in codes), sum(c.paise for c in codes)),
        exposure_by_class=by_class,
        exposure_by_code=codes,
        ageing=ageing(conn, run.as_of),
        status_counts={r["status"]: int(r["n"]) for r in db.exception_status_counts(conn)},
    )


# --- the queue ------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueItem:
    """One exception as the queue lists it. Money in paise; age in whole days at as-of."""

    id: int
    reason_code: str
    reason_codes: str
    exposure_class: str
    exposure_paise: int
    difference_paise: int | None
    entity_type: str
    entity_id: str
    settlement_id: str | None
    order_id: str | None
    utr: str | None
    age_days: int | None
    status: str
    assignee: str | None
    due_date: str | None
    version: int
    needs_review: bool = False  # no longer found by a run after a person worked on it
    overdue: bool = False  # open, and its due date is before the run's as-of (IST date)


@dataclass(frozen=True)
class QueuePage:
    """One page of the filtered queue; total / total_paise describe the whole filtered set."""

    items: tuple[QueueItem, ...]
    total: int
    total_paise: int
    page: int
    pages: int
    page_size: int
    other_statuses: int = 0  # searched items the status filter hides (0 when not asked)


@dataclass(frozen=True)
class QueueOptions:
    """Values the queue's filters offer."""

    codes: tuple[str, ...]
    classes: tuple[str, ...] = EXPOSURE_CLASSES
    statuses: tuple[str, ...] = ALL_STATUSES
    assignees: tuple[str, ...] = field(default_factory=tuple)
    sorts: tuple[str, ...] = tuple(QUEUE_SORTS)


def _age_days(created_at: int | None, as_of: int) -> int | None:
    return None if created_at is None else max(0, (as_of - int(created_at)) // 86_400)


def _item(row: dict[str, Any], as_of: int) -> QueueItem:
    return QueueItem(
        id=int(row["id"]),
        reason_code=row["reason_code"],
        reason_codes=row["reason_codes"],
        exposure_class=row["exposure_class"],
        exposure_paise=int(row["exposure_amount"]),
        difference_paise=None if row["difference"] is None else int(row["difference"]),
        entity_type=row["entity_type"],
        entity_id=row["entity_id"],
        settlement_id=row["settlement_id"],
        order_id=row["order_id"],
        utr=row["utr"],
        age_days=_age_days(row["entity_created_at"], as_of),
        status=row["status"],
        assignee=row["assignee"],
        due_date=row["due_date"],
        version=int(row["version"]),
        needs_review=row.get("not_found_run_id") is not None,
        overdue=bool(
            row["due_date"]
            and row["status"] in OPEN_STATUSES
            and str(row["due_date"]) < _ist_day(as_of)
        ),
    )


def _ist_day(seconds: int) -> str:
    return dt.datetime.fromtimestamp(int(seconds), tz=IST).date().isoformat()


def _as_of(conn: sqlite3.Connection, as_of: int | None) -> int:
    if as_of is not None:
        return as_of
    run = db.latest_completed_run(conn)
    return int(run["as_of"]) if run else int(time.time())


def queue(
    conn: sqlite3.Connection,
    flt: QueueFilter,
    *,
    sort: str = "exposure_desc",
    page: int = 1,
    page_size: int = 50,
    as_of: int | None = None,
) -> QueuePage:
    """One page of the queue, filtered, sorted and paged in SQL."""
    if sort not in QUEUE_SORTS:
        raise ValueError(f"unknown sort: {sort}")
    moment = _as_of(conn, as_of)
    counted = db.queue_count(conn, flt, moment)
    total = int(counted["n"])
    pages = max(1, -(-total // page_size))
    page = min(max(1, page), pages)
    rows = db.queue_page(conn, flt, moment, sort, page_size, (page - 1) * page_size)
    return QueuePage(
        items=tuple(_item(r, moment) for r in rows),
        total=total,
        total_paise=int(counted["exposure"]),
        page=page,
        pages=pages,
        page_size=page_size,
        other_statuses=hidden_by_status(conn, flt, moment) if flt.search or not total else 0,
    )


def hidden_by_status(conn: sqlite3.Connection, flt: QueueFilter, as_of: int) -> int:
    """How many items match every filter but the status one (in the statuses not chosen)."""
    others = tuple(s for s in ALL_STATUSES if s not in flt.statuses)
    if not flt.statuses or not others:
        return 0
    return int(db.queue_count(conn, replace(flt, statuses=others), as_of)["n"])


@dataclass(frozen=True)
class MyWork:
    """One reviewer's open exceptions at the run's as-of."""

    open: int
    overdue: int
    needs_review: int


def my_work(conn: sqlite3.Connection, assignee: str, as_of: int | None = None) -> MyWork:
    row = db.assigned_counts(conn, assignee, _ist_day(_as_of(conn, as_of)))
    return MyWork(int(row["n"]), int(row["overdue"]), int(row["needs_review"]))


@dataclass(frozen=True)
class RunChanges:
    """What the latest run's sync changed in the queue (against the run before it)."""

    run_id: int
    opened: int
    reopened: int
    auto_cleared: int
    no_longer_found: int
    first: bool  # no earlier run: everything was opened by this one


def changes_since_previous_run(conn: sqlite3.Connection) -> RunChanges | None:
    syncs = db.latest_syncs(conn, 2)
    if not syncs:
        return None
    counts = json.loads(syncs[0]["summary_json"] or "{}")
    return RunChanges(
        run_id=int(syncs[0]["run_id"]),
        opened=int(counts.get("opened", 0)),
        reopened=int(counts.get("reopened", 0)),
        auto_cleared=int(counts.get("auto_cleared", 0)),
        no_longer_found=int(counts.get("no_longer_found", 0)),
        first=len(syncs) < 2,
    )


def queue_options(conn: sqlite3.Connection) -> QueueOptions:
    return QueueOptions(
        codes=tuple(db.distinct_codes(conn)), assignees=tuple(db.distinct_assignees(conn))
    )


CSV_COLUMNS = (
    "id",
    "status",
    "reason_code",
    "reason_codes",
    "exposure_class",
    "exposure_amount",
    "expected_amount",
    "actual_amount",
    "difference",
    "entity_type",
    "entity_id",
    "settlement_id",
    "order_id",
    "utr",
    "entity_created_at",
    "assignee",
    "due_date",
    "version",
)
# Read first: amounts in rupees (numbers, two decimals), times in IST; the raw columns
# (paise, Unix seconds) follow under their own names for anyone who recomputes.
CSV_READABLE = (
    ("Exception", "id", None),
    ("Status", "status", None),
    ("Reason", "reason_code", None),
    ("Exposure (₹)", "exposure_amount", "rupees"),
    ("Expected (₹)", "expected_amount", "rupees"),
    ("Received (₹)", "actual_amount", "rupees"),
    ("Difference (₹)", "difference", "rupees"),
    ("Entity", "entity_id", None),
    ("Settlement", "settlement_id", None),
    ("Order", "order_id", None),
    ("UTR", "utr", None),
    ("Created (IST)", "entity_created_at", "ist"),
    ("Assignee", "assignee", None),
    ("Due (IST date)", "due_date", None),
)


def rupees_number(paise: int) -> Decimal:
    """Paise as a rupee number with two decimals (a spreadsheet sums it): 13500 -> 135.00."""
    return Decimal(int(paise)).scaleb(-2)


def ist_text(seconds: int) -> str:
    """Unix seconds as '2026-03-31 14:05 IST'."""
    return dt.datetime.fromtimestamp(int(seconds), tz=IST).strftime("%Y-%m-%d %H:%M IST")


def _readable(row: dict[str, Any], column: str, kind: str | None) -> Any:
    value = row.get(column)
    if value is None:
        return ""
    if kind == "rupees":
        return rupees_number(int(value))
    if kind == "ist":
        return ist_text(int(value))
    return safe_cell(value)


def queue_csv_chunks(
    conn: sqlite3.Connection,
    flt: QueueFilter,
    *,
    sort: str = "exposure_desc",
    as_of: int | None = None,
) -> Iterator[str]:
    """The whole filtered set as CSV text, chunk by chunk: readable columns first (rupees,
    IST), then the raw ones (integer paise, Unix seconds, never prefixed); a text cell a
    spreadsheet would run as a formula starts with `'`."""
    moment = _as_of(conn, as_of)
    buffer = io.StringIO()
    # CRLF (RFC 4180): the writer then quotes a cell holding a carriage return too.
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([label for label, _, _ in CSV_READABLE] + list(CSV_COLUMNS))
    for batch in db.queue_iter(conn, flt, moment, sort):
        for row in batch:
            writer.writerow(
                [_readable(row, c, kind) for _, c, kind in CSV_READABLE]
                + ["" if row.get(c) is None else safe_cell(row[c]) for c in CSV_COLUMNS]
            )
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def queue_csv(
    conn: sqlite3.Connection,
    flt: QueueFilter,
    *,
    sort: str = "exposure_desc",
    as_of: int | None = None,
) -> bytes:
    return "".join(queue_csv_chunks(conn, flt, sort=sort, as_of=as_of)).encode("utf-8")


def exception(conn: sqlite3.Connection, exception_id: int) -> dict[str, Any] | None:
    return db.exception_by_id(conn, exception_id)


def exception_history(conn: sqlite3.Connection, exception_id: int) -> list[dict[str, Any]]:
    return db.exception_events(conn, exception_id)


# --- one settlement -------------------------------------------------------------------


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
    """Settlements to pick from: id or UTR prefix match, largest open exposure first."""
    return db.settlement_choices(conn, search, limit)


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
    moment = _as_of(conn, None)
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
            _item(r, moment) for r in db.queue_page(conn, flt, moment, "exposure_desc", 100, 0)
        ),
    )


# --- evidence for one exception (read only) -------------------------------------------


@dataclass(frozen=True)
class EvidenceSection:
    """A titled group of records (each a dict of column -> value) behind an exception;
    note: what the group means when it is not self-evident (e.g. 'not found')."""

    title: str
    records: tuple[dict[str, Any], ...]
    note: str = ""


def basic_evidence(conn: sqlite3.Connection, exception_id: int) -> tuple[EvidenceSection, ...]:
    """The records an exception stands on, read straight from the tables."""
    item = db.exception_by_id(conn, exception_id)
    if item is None:
        return ()
    sections: list[EvidenceSection] = []
    entity_type, entity_id = item["entity_type"], item["entity_id"]
    run = db.latest_completed_run(conn)
    if run is not None:
        outcome = db.outcome_for(conn, int(run["id"]), entity_type, entity_id)
        if outcome:
            sections.append(EvidenceSection(f"Outcome in run {run['id']}", (outcome,)))
    fetch = {
        "payment": db.payment_by_id,
        "refund": db.refund_by_id,
        "settlement": db.settlement_by_id,
        "bank_entry": db.bank_line_by_id,
        "recon_row": db.recon_row_by_key,
    }.get(entity_type)
    record = fetch(conn, entity_id) if fetch else None
    if record:
        sections.append(EvidenceSection(entity_type.replace("_", " ").capitalize(), (record,)))
    if entity_type in ("payment", "refund"):
        rows = db.recon_rows_for_entity(conn, entity_id)
        sections.append(EvidenceSection("Settlement recon rows", tuple(rows)))
    settlement_id = item["settlement_id"] or (record or {}).get("settlement_id")
    if settlement_id and entity_type != "settlement":
        settlement = db.settlement_by_id(conn, settlement_id)
        if settlement:
            sections.append(EvidenceSection("Settlement", (settlement,)))
    if settlement_id:
        utr = (db.settlement_by_id(conn, settlement_id) or {}).get("utr")
        run_id = int(run["id"]) if run else None
        bank = db.bank_lines_for_settlement(conn, utr, settlement_id, run_id)
        sections.append(EvidenceSection("Bank lines", tuple(bank)))
    return tuple(sections)


def evidence(conn: sqlite3.Connection, exception_id: int) -> tuple[EvidenceSection, ...]:
    """The investigator's evidence (its allow-listed tools) when installed, else the rows."""
    try:
        investigate = importlib.import_module("core.investigate")
    except ModuleNotFoundError:
        return basic_evidence(conn, exception_id)
    gathered = investigate.gather_evidence(conn, exception_id)
    sections = [EvidenceSection("Exception", (dict(gathered.exception),))]
    for item in gathered.items:
        args = ", ".join(f"{k} {v}" for k, v in dict(item.args).items())
        title = item.tool.replace("_", " ").capitalize() + (f" · {args}" if args else "")
        sections.append(EvidenceSection(title, tuple(dict(r) for r in item.records), item.note))
    return tuple(sections)


# --- held-out evaluation (benchmark only) ---------------------------------------------

EVALUATION_FORMAT = 2


@dataclass(frozen=True)
class Accuracy:
    """Headline held-out figures for the Overview: name -> formatted value, and a caption."""

    metrics: dict[str, str]
    caption: str


@dataclass(frozen=True)
class EvaluationReport:
    """The Evaluation page, for one run of the benchmark scored against its labels.

    headline: name -> formatted held-out figure. caption: what was scored. by_code:
    per-reason-code table of the held-out split (display strings). confusion: long format,
    columns 'Ground truth', 'Engine', 'Count' (held-out split, non-zero cells). notes:
    what a reader should know (e.g. disagreements). full: the same headline over every label.
    """

    headline: dict[str, str]
    caption: str
    by_code: pd.DataFrame
    confusion: pd.DataFrame
    full: dict[str, str]
    notes: tuple[str, ...] = ()


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def labels_path(conn: sqlite3.Connection) -> Path | None:
    """Where the cold start kept the benchmark's labels for this database, if anywhere."""
    from core.bootstrap import dataset_folder

    file = db.database_file(conn)
    return dataset_folder(file) / LABELS_FILE if file else None


def compute_evaluation(
    conn: sqlite3.Connection, run_id: int, labels: Path
) -> dict[str, Any] | None:
    """Score the run's stored outcomes against the labels; the JSON-ready report."""
    run = db.run_by_id(conn, run_id)
    if run is None or run["source"] not in SYNTHETIC_SOURCES or not labels.exists():
        return None
    meta = labels.with_name(LABELS_META)
    if meta.exists() and json.loads(meta.read_text(encoding="utf-8"))["as_of"] != run["as_of"]:
        return None  # the labels describe the benchmark at its own as-of, not this run's
    evaluation = importlib.import_module("core.evaluation")
    benchmark = importlib.import_module("core.benchmark")
    truth = benchmark.read_ground_truth(labels)
    joined = evaluation.join_outcomes(db.outcomes_frame(conn, run_id), truth)
    held = joined[joined["split"] == benchmark.HELD_OUT]
    reports = {
        "held_out": evaluation.score(held, throughput=0.0),
        "full": evaluation.score(joined, throughput=0.0),
    }
    confusion = evaluation.confusion_by_code(held)
    cells = [
        {"Ground truth": _short(label), "Engine": _short(engine), "Count": int(count)}
        for (label, engine), count in confusion.stack().items()
        if int(count)
    ]
    codes = [
        {
            "Reason code": code,
            "Labelled": s.expected,
            "Reported": s.reported,
            "Correct": s.correct,
            "Precision": _percent(s.precision),
            "Recall": _percent(s.recall),
        }
        for code, s in reports["held_out"].by_code.items()
        if s.expected or s.reported
    ]
    wrong = held[~held["correct"]]
    return {
        "format": EVALUATION_FORMAT,
        "run_id": run_id,
        "split": {name: _headline(r) for name, r in reports.items()},
        "records": {name: int(r.records) for name, r in reports.items()},
        "by_code": codes,
        "confusion": cells,
        "wrong": [
            f"{r.entity_type} {r.entity_id}: labelled {r.label_key}, engine said {r.engine_key}"
            for r in wrong.head(20).itertuples()
        ],
    }


def _short(key: object) -> str:
    """'EXCEPTION:AMOUNT_MISMATCH' -> 'AMOUNT_MISMATCH'; 'PENDING:ON_HOLD' -> 'pending ON_HOLD'."""
    text = str(key)
    if text.startswith("EXCEPTION:"):
        return text.removeprefix("EXCEPTION:")
    return "pending " + text.removeprefix("PENDING:") if text.startswith("PENDING:") else text


def _headline(report: Any) -> dict[str, str]:
    return {
        "Accuracy": _percent(report.accuracy),
        "Precision": _percent(report.precision),
        "Recall": _percent(report.recall),
        "Records": f"{report.records:,}",
    }


def store_evaluation(conn: sqlite3.Connection, run_id: int, labels: Path) -> bool:
    """Compute and keep the run's evaluation; False when there is nothing to score."""
    report = compute_evaluation(conn, run_id, labels)
    if report is None:
        return False
    digest = hashlib.sha256(labels.read_bytes()).hexdigest()
    db.put_evaluation(conn, run_id, digest, int(time.time()), json.dumps(report))
    return True


def _evaluation_json(conn: sqlite3.Connection, run_id: int) -> dict[str, Any] | None:
    cached = db.get_evaluation(conn, run_id)
    if cached is None:
        labels = labels_path(conn)
        if labels is None or not store_evaluation(conn, run_id, labels):
            return None
        cached = db.get_evaluation(conn, run_id)
        assert cached is not None
    data: dict[str, Any] = json.loads(cached["report_json"])
    return data if data.get("format") == EVALUATION_FORMAT else None


def evaluation_report(conn: sqlite3.Connection, run_id: int) -> EvaluationReport | None:
    """None when there are no held-out labels (data other than the benchmark)."""
    data = _evaluation_json(conn, run_id)
    if data is None:
        return None
    held, total = data["records"]["held_out"], data["records"]["full"]
    return EvaluationReport(
        headline=data["split"]["held_out"],
        caption=(
            f"Run #{run_id} scored against the benchmark's labels: the held-out split "
            f"({held:,} of {total:,} labelled entities). An outcome is right when its status, "
            "reason code, every listed code and any fallback match method equal the label."
        ),
        by_code=pd.DataFrame(data["by_code"]),
        confusion=pd.DataFrame(data["confusion"], columns=["Ground truth", "Engine", "Count"]),
        full=data["split"]["full"],
        notes=tuple(data["wrong"]),
    )


def heldout_accuracy(conn: sqlite3.Connection, run_id: int) -> Accuracy | None:
    data = _evaluation_json(conn, run_id)
    if data is None:
        return None
    held = data["records"]["held_out"]
    return Accuracy(
        metrics=data["split"]["held_out"],
        caption=(
            f"Held-out split of the synthetic benchmark ({held:,} labelled entities), run "
            f"#{run_id}. Benchmark accuracy, not production accuracy."
        ),
    )
