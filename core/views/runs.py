"""Runs as the sidebar, the Overview and the Data page show them: the latest completed run,
its once-per-run summary (cached in `app_run_summaries`), what the database holds, and what
the latest run's sync changed in the queue.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sqlite3
import time
from dataclasses import asdict, dataclass
from typing import Any

from core.calendar import IST
from core.db import views as db
from core.views.common import SYNTHETIC_SOURCES, Total, total

# 2: captured in INR (base_amount for another currency); 3: else its recon row's amount,
# and captured_unpriced.
SUMMARY_FORMAT = 3


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
    # Where the newest import came from when it was stored after the run read the data
    # (not yet reconciled: the run's figures are not its); "" otherwise.
    newer_location: str = ""

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
    # Captured payments in another currency with no INR amount yet (no base_amount, no
    # payment recon row): in `captured`'s count, at ₹0 in its paise.
    captured_unpriced: int = 0

    @property
    def overall_match_rate(self) -> float | None:
        payments = sum(d.payments for d in self.match_rate)
        return sum(d.matched for d in self.match_rate) / payments if payments else None


def _run_info(conn: sqlite3.Connection, row: dict[str, Any]) -> RunInfo:
    """The run, with the location of the import it read (the newest up to its
    through_import_id; a run without one read the newest stored before it finished) and
    that of a newer import it did not read."""
    last = db.latest_import(conn)
    through = row.get("through_import_id")
    if through is not None:
        source_import = db.import_through(conn, int(through))
        newer = last is not None and int(last["id"]) > int(through)
    else:
        finished = int(row["finished_at"] or row["started_at"])
        newer = last is not None and int(last["imported_at"]) > finished
        source_import = db.import_before(conn, finished) if newer else last
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
        newer_location=str(last["location"] or last["source"]) if newer and last else "",
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
    """Whether the database holds raw data now, and whose (source of the latest import).
    Cheap: an EXISTS per table, no counts (see `raw_counts` for what Replace removes)."""

    source: str | None
    location: str
    stored: bool

    @property
    def is_benchmark(self) -> bool:
        return self.source in SYNTHETIC_SOURCES

    @property
    def empty(self) -> bool:
        return not self.stored


@dataclass(frozen=True)
class RawCounts:
    """How many rows each raw table holds: what a Replace import empties."""

    payments: int
    refunds: int
    settlements: int
    recon_rows: int
    bank_lines: int


def holdings(conn: sqlite3.Connection) -> Holdings:
    last = db.latest_import(conn)
    return Holdings(
        source=None if last is None else str(last["source"]),
        location="" if last is None else str(last.get("location") or ""),
        stored=db.raw_data_stored(conn),
    )


def raw_counts(conn: sqlite3.Connection) -> RawCounts:
    """count(*) of the five raw tables: read only when a person is about to Replace them."""
    counts = db.raw_counts(conn)
    return RawCounts(
        payments=int(counts["payments"]),
        refunds=int(counts["refunds"]),
        settlements=int(counts["settlements"]),
        recon_rows=int(counts["recon_rows"]),
        bank_lines=int(counts["bank_lines"]),
    )


def recent_runs(conn: sqlite3.Connection, limit: int = 10) -> list[RunInfo]:
    return [_run_info(conn, r) for r in db.recent_runs(conn, limit)]


def compute_run_summary(conn: sqlite3.Connection, run_id: int) -> RunSummary:
    pending_lines = tuple(
        PendingLine(r["entity_type"], r["reason_code"], int(r["n"]), int(r["amount"]))
        for r in db.pending_by_reason(conn, run_id)
    )
    captured = db.captured_totals(conn)
    return assemble_summary(
        conn,
        run_id,
        captured=total(captured),
        captured_unpriced=int(captured["unpriced"]),
        pending_lines=pending_lines,
        match_rate=tuple(
            DayMatchRate(r["day"], int(r["payments"]), int(r["matched"]))
            for r in db.match_rate_by_settlement_day(conn, run_id)
        ),
    )


def assemble_summary(
    conn: sqlite3.Connection,
    run_id: int,
    *,
    captured: Total,
    pending_lines: tuple[PendingLine, ...],
    match_rate: tuple[DayMatchRate, ...],
    captured_unpriced: int = 0,
) -> RunSummary:
    """A run's summary from its parts that read the whole run (however they were computed:
    in SQL, or from a command's frames, core.views.summary_ahead) and the reads of a few
    rows: the settlements' and the run's bank credits' totals, its stored counts."""
    payments_pending = [p for p in pending_lines if p.entity_type == "payment"]
    counts: dict[str, dict[str, int]] = {}
    for r in db.outcome_counts(conn, run_id):
        counts.setdefault(r["entity_type"], {})[r["status"]] = int(r["n"])
    return RunSummary(
        run_id=run_id,
        captured=captured,
        settled=total(db.settled_totals(conn)),
        credited=total(db.bank_credited_totals(conn, run_id)),
        pending=Total(
            sum(p.count for p in payments_pending), sum(p.paise for p in payments_pending)
        ),
        pending_lines=pending_lines,
        outcome_counts=counts,
        match_rate=match_rate,
        captured_unpriced=captured_unpriced,
    )


def summary_json(summary: RunSummary) -> str:
    """The summary as `app_run_summaries.summary_json` holds it."""
    return json.dumps({"format": SUMMARY_FORMAT, **asdict(summary)})


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
        captured_unpriced=int(data["captured_unpriced"]),
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
    db.put_run_summary(conn, run_id, version, int(time.time()), summary_json(summary))
    return summary


@dataclass(frozen=True)
class RunChanges:
    """What the latest run's sync changed in the queue (against the run before it)."""

    run_id: int
    opened: int
    reopened: int
    auto_cleared: int
    no_longer_found: int
    first: bool  # no earlier run: everything was opened by this one
    previous_run_id: int | None = None  # the run synced before it (None: first)


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
        previous_run_id=int(syncs[1]["run_id"]) if len(syncs) > 1 else None,
    )
