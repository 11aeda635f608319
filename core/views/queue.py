"""The exception queue: one filtered, sorted page read in SQL, the filters' options, one
reviewer's work, and the whole filtered set as CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from core.calendar import IST, month_bounds
from core.db import page_reads
from core.db import views as db
from core.db.views import ALL_STATUSES, OPEN_STATUSES, QUEUE_SORTS, QueueFilter
from core.outputs import safe_cell
from core.views.common import EXPOSURE_CLASSES, ist_day, ist_text, run_as_of, rupees_number

# The queue's vocabulary, defined beside its SQL in core.db.views, named here for pages.
__all__ = [
    "ALL_STATUSES",
    "OPEN_STATUSES",
    "QUEUE_SORTS",
    "QueueFilter",
]


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
    write_off_pending: bool = False  # a write-off awaits approval (four eyes)


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


def queue_item(row: dict[str, Any], as_of: int) -> QueueItem:
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
        write_off_pending=bool(row.get("write_off_pending")),
        overdue=bool(
            row["due_date"]
            and row["status"] in OPEN_STATUSES
            and str(row["due_date"]) < ist_day(as_of)
        ),
    )


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
    moment = run_as_of(conn, as_of)
    counted = db.queue_count(conn, flt, moment)
    total = int(counted["n"])
    pages = max(1, -(-total // page_size))
    page = min(max(1, page), pages)
    rows = db.queue_page(conn, flt, moment, sort, page_size, (page - 1) * page_size, total)
    return QueuePage(
        items=tuple(queue_item(r, moment) for r in rows),
        total=total,
        total_paise=int(counted["exposure"]),
        page=page,
        pages=pages,
        page_size=page_size,
        other_statuses=hidden_by_status(conn, flt, moment) if flt.search or not total else 0,
    )


def month_open_exceptions(conn: sqlite3.Connection, month: str) -> tuple[int, int]:
    """The exceptions still open on entities created in an IST month ('YYYY-MM'): their
    count and exposure in paise (what an admin is told before closing the month)."""
    first, following = month_bounds(month)
    start, end = (
        int(dt.datetime.combine(d, dt.time(0, 0), tzinfo=IST).timestamp())
        for d in (first, following)
    )
    row = db.open_created_between(conn, start, end)
    return int(row["n"]), int(row["exposure"])


def top_exception(conn: sqlite3.Connection) -> int | None:
    """The open exception the queue lists first by default (largest exposure, then lowest
    id): `queue(conn, QueueFilter(), page_size=1).items[0].id` without counting and sorting
    every open exception."""
    return page_reads.top_open_exception(conn, OPEN_STATUSES)


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
    row = db.assigned_counts(conn, assignee, ist_day(run_as_of(conn, as_of)))
    return MyWork(int(row["n"]), int(row["overdue"]), int(row["needs_review"]))


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
    moment = run_as_of(conn, as_of)
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
