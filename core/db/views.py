"""SQL for the app's read models (`core.views`) and its cold start (`core.bootstrap`).

Reads only, except the per-run summary cache (`app_run_summaries`), the discarding of a
dead half-finished run, and `insert_rows` (the test and benchmark data builder).
The queue query is assembled from fixed fragments; every value is a bound parameter.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.calendar import IST_OFFSET_SECONDS
from core.db.backend import is_postgres
from core.db.connection import transaction

Row = dict[str, Any]

OPEN_STATUSES: tuple[str, ...] = ("OPEN", "ASSIGNED", "INVESTIGATED", "ESCALATED")
ALL_STATUSES: tuple[str, ...] = (*OPEN_STATUSES, "RESOLVED", "AUTO_CLEARED")
SECONDS_PER_DAY = 86_400

QUEUE_SORTS: dict[str, str] = {
    "exposure_desc": "exposure_amount DESC, id",
    "exposure_asc": "exposure_amount ASC, id",
    "oldest": "entity_created_at ASC, id",
    "newest": "entity_created_at DESC, id",
    "code": "reason_code ASC, exposure_amount DESC, id",
    "updated": "updated_at DESC, id",
    "id": "id ASC",
}

QUEUE_COLUMNS = (
    "id, entity_type, entity_id, reason_code, reason_codes, exposure_class, exposure_amount, "
    "expected_amount, actual_amount, difference, settlement_id, order_id, utr, "
    "entity_created_at, status, assignee, due_date, version, updated_at, not_found_run_id"
)
# A page of the queue also says whether a write-off awaits its second pair of eyes: one
# probe of approvals_one_pending per row shown, inside the page's own statement.
WRITE_OFF_PENDING = (
    "CASE WHEN EXISTS (SELECT 1 FROM approvals a WHERE a.exception_id = exceptions.id"
    " AND a.status = 'pending') THEN 1 ELSE 0 END AS write_off_pending"
)

# Tables the data builder may fill (tests and the UI benchmark); nothing else is writable here.
BUILDER_TABLES = frozenset(
    {
        "imports",
        "payments",
        "refunds",
        "settlements",
        "recon_rows",
        "bank_lines",
        "runs",
        "outcomes",
        "exceptions",
    }
)
COUNTABLE_TABLES = BUILDER_TABLES | {"audit_log", "exception_events"}


def _one(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Row | None:
    row = conn.execute(sql, params).fetchone()
    return dict(row) if row is not None else None


def _all(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    return [dict(r) for r in conn.execute(sql, params).fetchall()]


# --- runs and data source -------------------------------------------------------------


def latest_completed_run(conn: sqlite3.Connection) -> Row | None:
    return _one(conn, "SELECT * FROM runs WHERE status = 'completed' ORDER BY id DESC LIMIT 1")


def run_by_id(conn: sqlite3.Connection, run_id: int) -> Row | None:
    return _one(conn, "SELECT * FROM runs WHERE id = ?", (run_id,))


def runs_by_status(conn: sqlite3.Connection, status: str) -> list[Row]:
    return _all(conn, "SELECT * FROM runs WHERE status = ? ORDER BY id", (status,))


def recent_runs(conn: sqlite3.Connection, limit: int = 20) -> list[Row]:
    return _all(conn, "SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))


def latest_import(conn: sqlite3.Connection) -> Row | None:
    return _one(conn, "SELECT * FROM imports ORDER BY id DESC LIMIT 1")


def import_through(conn: sqlite3.Connection, import_id: int) -> Row | None:
    """The newest import with an id up to `import_id` (a run's through_import_id)."""
    return _one(
        conn, "SELECT * FROM imports WHERE id <= ? ORDER BY id DESC LIMIT 1", (int(import_id),)
    )


def import_before(conn: sqlite3.Connection, moment: int) -> Row | None:
    """The newest import stored at or before `moment` (Unix seconds)."""
    return _one(
        conn,
        "SELECT * FROM imports WHERE imported_at <= ? ORDER BY id DESC LIMIT 1",
        (int(moment),),
    )


def imports_by_source(conn: sqlite3.Connection, source: str) -> list[Row]:
    return _all(conn, "SELECT * FROM imports WHERE source = ? ORDER BY id", (source,))


def count_rows(conn: sqlite3.Connection, table: str) -> int:
    if table not in COUNTABLE_TABLES:
        raise ValueError(f"not a countable table: {table}")
    row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0])


def data_version(conn: sqlite3.Connection) -> str:
    """Changes whenever an import is added or removed (raw data changed)."""
    row = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM imports").fetchone()
    return f"{int(row[0])}:{int(row[1])}"


def latest_data_moments(conn: sqlite3.Connection) -> Row:
    """The newest payment / settlement (Unix seconds) and bank line (ISO date) stored."""
    row = _one(
        conn,
        "SELECT (SELECT max(created_at) FROM payments) AS payment, "
        "(SELECT max(created_at) FROM settlements) AS settlement, "
        "(SELECT max(txn_date) FROM bank_lines) AS bank",
    )
    assert row is not None
    return row


def raw_data_stored(conn: sqlite3.Connection) -> bool:
    """Whether any payment, settlement, recon row or bank line is stored: an index probe per
    table (EXISTS), not a count."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM payments) OR EXISTS (SELECT 1 FROM settlements)"
        " OR EXISTS (SELECT 1 FROM recon_rows) OR EXISTS (SELECT 1 FROM bank_lines)"
    ).fetchone()
    return bool(row[0])


def raw_counts(conn: sqlite3.Connection) -> Row:
    """How many rows each raw table holds (what a Replace import removes)."""
    row = _one(
        conn,
        "SELECT (SELECT count(*) FROM payments) AS payments, "
        "(SELECT count(*) FROM refunds) AS refunds, "
        "(SELECT count(*) FROM settlements) AS settlements, "
        "(SELECT count(*) FROM recon_rows) AS recon_rows, "
        "(SELECT count(*) FROM bank_lines) AS bank_lines",
    )
    assert row is not None
    return row


# --- per-run summary (immutable outcomes) ---------------------------------------------


def captured_totals(conn: sqlite3.Connection) -> Row:
    """The captured payments: n, amount in INR paise, and `unpriced`: how many are in
    another currency with no INR amount known yet. A payment in another currency counts at
    its base_amount, else its first payment recon row's amount (in row order, as the Books
    take it, core.books.journal.captured_voucher), else 0 and unpriced; as
    core.views.summary_ahead (captured_total, then store_summary_ahead's lookup)."""
    order = "row_order" if is_postgres(conn) else "rowid"
    first_row = (
        "(SELECT r.amount FROM recon_rows r WHERE r.entity_id = payments.id "
        f"AND r.type = 'payment' ORDER BY r.{order} LIMIT 1)"
    )
    foreign = "upper(coalesce(currency, 'INR')) <> 'INR'"
    row = _one(
        conn,
        f"SELECT count(*) AS n, coalesce(sum(CASE WHEN NOT ({foreign}) THEN amount "
        f"WHEN base_amount IS NOT NULL THEN base_amount ELSE coalesce({first_row}, 0) END), 0) "
        f"AS amount, coalesce(sum(CASE WHEN {foreign} AND base_amount IS NULL "
        f"AND {first_row} IS NULL THEN 1 ELSE 0 END), 0) AS unpriced FROM payments "
        "WHERE captured = 1 OR status IN ('captured', 'refunded')",
    )
    assert row is not None
    return row


def first_payment_row_amounts(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, int]:
    """Per payment id of `ids` that a payment recon row names: the first such row's amount
    (in row order), a few hundred ids a statement."""
    order = "row_order" if is_postgres(conn) else "rowid"
    found: dict[str, int] = {}
    chunk = 500
    for start in range(0, len(ids), chunk):
        part = list(ids[start : start + chunk])
        marks = ", ".join("?" for _ in part)
        for r in _all(
            conn,
            f"SELECT entity_id, amount FROM recon_rows WHERE type = 'payment' "
            f"AND entity_id IN ({marks}) ORDER BY {order}",
            part,
        ):
            found.setdefault(str(r["entity_id"]), int(r["amount"]))
    return found


def settled_totals(conn: sqlite3.Connection) -> Row:
    row = _one(
        conn,
        "SELECT count(*) AS n, coalesce(sum(amount), 0) AS amount FROM settlements "
        "WHERE status = 'processed'",
    )
    assert row is not None
    return row


def bank_credited_totals(conn: sqlite3.Connection, run_id: int) -> Row:
    """Bank credits the run linked to a settlement (by UTR or a fallback)."""
    row = _one(
        conn,
        "SELECT count(*) AS n, coalesce(sum(b.credit), 0) AS amount "
        "FROM outcomes o JOIN bank_lines b ON b.id = o.entity_id "
        "WHERE o.run_id = ? AND o.entity_type = 'bank_entry' AND o.status = 'MATCHED'",
        (run_id,),
    )
    assert row is not None
    return row


def pending_by_reason(conn: sqlite3.Connection, run_id: int) -> list[Row]:
    """PENDING outcomes per entity type and reason, in byte order on either database (a
    PostgreSQL collation would order them by its locale's rules: the summary a command
    stores from memory, core.views.summary_ahead, sorts them by bytes)."""
    order = (
        'entity_type COLLATE "C", reason_code COLLATE "C"'
        if is_postgres(conn)
        else "entity_type, reason_code"
    )
    return _all(
        conn,
        "SELECT entity_type, reason_code, count(*) AS n, "
        "coalesce(sum(expected_amount), 0) AS amount "
        "FROM outcomes WHERE run_id = ? AND status = 'PENDING' "
        f"GROUP BY entity_type, reason_code ORDER BY {order}",
        (run_id,),
    )


def outcome_counts(conn: sqlite3.Connection, run_id: int) -> list[Row]:
    """A run's outcomes per entity type and status, sorted by both. A completed run
    stored them with its outcomes (`runs.counts_json` "by_entity_type", counted from the
    very rows it wrote: core.engine.results.counts), so they are read from there, with no
    scan of ~1M rows (migration 0104 dropped the index that scan used); another run's are
    counted from its rows."""
    stored = _one(conn, "SELECT status, counts_json FROM runs WHERE id = ?", (run_id,))
    by_type = _stored_counts(stored)
    if by_type is not None:
        return by_type
    return _all(
        conn,
        "SELECT entity_type, status, count(*) AS n FROM outcomes WHERE run_id = ? "
        "GROUP BY entity_type, status ORDER BY entity_type, status",
        (run_id,),
    )


def _stored_counts(run: Row | None) -> list[Row] | None:
    """outcome_counts' rows from a completed run's counts_json, or None when it holds
    none (as the GROUP BY gives them: no group of zero rows)."""
    if run is None or run["status"] != "completed" or not run["counts_json"]:
        return None
    counts = json.loads(run["counts_json"])
    by_type = counts.get("by_entity_type") if isinstance(counts, dict) else None
    if not isinstance(by_type, dict):
        return None
    rows = []
    for key, n in by_type.items():
        entity_type, _, status = str(key).rpartition(":")
        if not entity_type or not isinstance(n, int):
            return None
        if n > 0:
            rows.append({"entity_type": entity_type, "status": status, "n": n})
    return sorted(rows, key=lambda r: (r["entity_type"], r["status"]))


def _day(conn: sqlite3.Connection, seconds: str) -> str:
    """The UTC calendar date (YYYY-MM-DD) of Unix `seconds`, in the database's SQL."""
    if is_postgres(conn):
        return f"to_char(to_timestamp({seconds}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
    return f"date({seconds}, 'unixepoch')"


def match_rate_by_settlement_day(conn: sqlite3.Connection, run_id: int) -> list[Row]:
    """Per IST date of settlement creation: payments in those settlements, and matched."""
    return _all(
        conn,
        f"SELECT {_day(conn, 's.created_at + ?')} AS day, sum(p.n) AS payments, "
        "sum(p.matched) AS matched FROM ("
        "  SELECT settlement_id, count(*) AS n, sum(status = 'MATCHED') AS matched "
        "  FROM outcomes WHERE run_id = ? AND entity_type = 'payment' "
        "  AND settlement_id IS NOT NULL GROUP BY settlement_id"
        ") p JOIN settlements s ON s.id = p.settlement_id GROUP BY day ORDER BY day",
        (IST_OFFSET_SECONDS, run_id),
    )


def settlement_days(conn: sqlite3.Connection) -> list[Row]:
    """Every stored settlement's id and IST day of creation (as match_rate_by_settlement_day
    groups them): a few rows per day, not per payment."""
    return _all(
        conn,
        f"SELECT id, {_day(conn, 'created_at + ?')} AS day FROM settlements",
        (IST_OFFSET_SECONDS,),
    )


def get_run_summary(conn: sqlite3.Connection, run_id: int) -> Row | None:
    return _one(conn, "SELECT * FROM app_run_summaries WHERE run_id = ?", (run_id,))


def put_run_summary(
    conn: sqlite3.Connection, run_id: int, version: str, computed_at: int, summary_json: str
) -> None:
    with transaction(conn):
        conn.execute(
            "INSERT INTO app_run_summaries (run_id, data_version, computed_at, summary_json) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
            "data_version = excluded.data_version, computed_at = excluded.computed_at, "
            "summary_json = excluded.summary_json",
            (run_id, version, computed_at, summary_json),
        )


def get_evaluation(conn: sqlite3.Connection, run_id: int) -> Row | None:
    return _one(conn, "SELECT * FROM app_evaluations WHERE run_id = ?", (run_id,))


def put_evaluation(
    conn: sqlite3.Connection, run_id: int, labels_hash: str, computed_at: int, report_json: str
) -> None:
    with transaction(conn):
        conn.execute(
            "INSERT INTO app_evaluations (run_id, labels_hash, computed_at, report_json) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET "
            "labels_hash = excluded.labels_hash, computed_at = excluded.computed_at, "
            "report_json = excluded.report_json",
            (run_id, labels_hash, computed_at, report_json),
        )


def outcomes_frame(conn: sqlite3.Connection, run_id: int) -> pd.DataFrame:
    """A run's outcomes in results.csv's terms (for scoring against labels)."""
    cursor = conn.execute(
        "SELECT entity_type, entity_id, status, reason_code, reason_codes, match_method, "
        "exposure_class, exposure_amount FROM outcomes WHERE run_id = ? "
        "ORDER BY entity_type, entity_id",
        (run_id,),
    )
    columns = [d[0] for d in cursor.description]
    frame = pd.DataFrame(cursor.fetchall(), columns=columns)
    frame["exposure_amount"] = frame["exposure_amount"].astype("int64")
    return frame


def database_file(conn: sqlite3.Connection) -> str:
    """The file of the connection's main database ('' for an in-memory one, and on
    PostgreSQL)."""
    if is_postgres(conn):
        return ""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return str(row[2] or "")
    return ""


# --- live exception figures -----------------------------------------------------------


def _in(values: Sequence[str]) -> str:
    return ", ".join("?" for _ in values)


def exception_status_counts(conn: sqlite3.Connection) -> list[Row]:
    """Count and exposure per status, from the stored totals (migration 0101)."""
    return _all(
        conn,
        "SELECT status, CAST(sum(n) AS BIGINT) AS n, CAST(sum(exposure) AS BIGINT) AS exposure "
        "FROM exception_totals GROUP BY status",
    )


def exposure_by_class_and_code(
    conn: sqlite3.Connection, statuses: Sequence[str] = OPEN_STATUSES
) -> list[Row]:
    """Count and exposure per (class, code) of the exceptions in `statuses`, largest
    exposure first: a sum over the stored totals (migration 0101: a few thousand rows at
    10M payments, kept by the database's triggers), not a pass over the exceptions."""
    rows = _all(
        conn,
        "SELECT exposure_class, reason_code, CAST(sum(n) AS BIGINT) AS n, "
        "CAST(sum(exposure) AS BIGINT) AS exposure FROM exception_totals "
        f"WHERE status IN ({_in(statuses)}) GROUP BY exposure_class, reason_code",
        tuple(statuses),
    )
    return sorted(rows, key=lambda r: (-r["exposure"], r["reason_code"]))


# --- the queue ------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueFilter:
    """What the reviewer asks the queue for. Empty tuples and None mean 'any'.

    codes / classes / statuses: reason codes, exposure classes, lifecycle states.
    settlement_id: exactly this settlement. min_age_days / max_age_days: days between the
    entity's creation and `as_of` (inclusive bounds). min_exposure / max_exposure: paise,
    inclusive. assignee: exactly this reviewer; "" means unassigned. search: any part of a
    payment, refund or settlement id, order id, UTR, bank narration or note, any case.
    """

    codes: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    statuses: tuple[str, ...] = OPEN_STATUSES
    settlement_id: str | None = None
    min_age_days: int | None = None
    max_age_days: int | None = None
    min_exposure: int | None = None
    max_exposure: int | None = None
    assignee: str | None = None
    search: str | None = None
    # (what, run id): the exceptions one run's sync opened ("opened"), auto-cleared
    # ("auto_cleared") or marked no longer found ("no_longer_found"): the Overview's links.
    changed_in_run: tuple[str, int] | None = None


# What a run's sync did to an exception, as it stays in the row (core.db.review): opened
# it (first_run_id), marked it no longer found (not_found_run_id), auto-cleared it (closed
# at the sync's own time, still AUTO_CLEARED).
RUN_CHANGES = {
    "opened": "first_run_id = ?",
    "no_longer_found": "not_found_run_id = ?",
    "auto_cleared": "status = 'AUTO_CLEARED' AND closed_at = "
    "(SELECT synced_at FROM exception_syncs WHERE run_id = ?)",
}


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _search(term: str, pg: bool = False) -> tuple[str, list[Any]]:
    """Case-insensitive substring over ids, UTR, narration and notes (exception_search, an
    FTS5 trigram index); a term under 3 characters (too short for trigrams) uses LIKE."""
    compact = term.replace(" ", "").replace("-", "").replace("/", "")
    if len(compact) < 3:
        like = _like(term)
        columns = ("entity_id", "order_id", "utr", "settlement_id")
        sql = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in columns)
        return f"({sql})", [like] * len(columns)
    phrases = {term, compact} if len(term) >= 3 else {compact}
    if pg:  # the same substrings, case-insensitive, over the trigger-kept document (0075)
        sql = " OR ".join("(ids || ' ' || notes) ILIKE ? ESCAPE '\\'" for _ in phrases)
        return (
            f"id IN (SELECT id FROM exception_search WHERE {sql})",
            [_like(p) for p in sorted(phrases)],
        )
    query = " OR ".join('"' + p.replace('"', '""') + '"' for p in sorted(phrases))
    return "id IN (SELECT rowid FROM exception_search WHERE exception_search MATCH ?)", [query]


def _where(flt: QueueFilter, as_of: int, pg: bool = False) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for column, values in (
        ("reason_code", flt.codes),
        ("exposure_class", flt.classes),
        ("status", flt.statuses),
    ):
        if values:
            clauses.append(f"{column} IN ({_in(values)})")
            params.extend(values)
    if flt.settlement_id:
        clauses.append("settlement_id = ?")
        params.append(flt.settlement_id.strip())
    if flt.min_age_days is not None:
        clauses.append("entity_created_at <= ?")
        params.append(as_of - flt.min_age_days * SECONDS_PER_DAY)
    if flt.max_age_days is not None:
        clauses.append("entity_created_at > ?")
        params.append(as_of - (flt.max_age_days + 1) * SECONDS_PER_DAY)
    if flt.min_exposure is not None:
        clauses.append("exposure_amount >= ?")
        params.append(flt.min_exposure)
    if flt.max_exposure is not None:
        clauses.append("exposure_amount <= ?")
        params.append(flt.max_exposure)
    if flt.assignee is not None:
        if flt.assignee == "":
            clauses.append("assignee IS NULL")
        else:
            clauses.append("assignee = ?")
            params.append(flt.assignee)
    if flt.changed_in_run is not None:
        what, run_id = flt.changed_in_run
        clauses.append(RUN_CHANGES[what])
        params.append(int(run_id))
    term = (flt.search or "").strip()
    if term:
        clause, found = _search(term, pg)
        clauses.append(clause)
        params.extend(found)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def open_created_between(conn: sqlite3.Connection, start: int, end: int) -> Row:
    """Open exceptions (count, exposure) whose entity was created in [start, end)."""
    row = _one(
        conn,
        "SELECT count(*) AS n, coalesce(sum(exposure_amount), 0) AS exposure FROM exceptions"
        f" WHERE status IN ({_in(OPEN_STATUSES)}) AND entity_created_at >= ?"
        " AND entity_created_at < ?",
        (*OPEN_STATUSES, start, end),
    )
    assert row is not None
    return row


def queue_count(conn: sqlite3.Connection, flt: QueueFilter, as_of: int) -> Row:
    where, params = _where(flt, as_of, is_postgres(conn))
    row = _one(
        conn,
        f"SELECT count(*) AS n, coalesce(sum(exposure_amount), 0) AS exposure "
        f"FROM exceptions{where}",
        params,
    )
    assert row is not None
    return row


def _reversed(order: str) -> str:
    """The exact reverse of a QUEUE_SORTS order: each term's direction flipped (NULLs go to
    the other end with it, on SQLite and PostgreSQL alike; the final id keeps it total)."""
    terms = (term.split() for term in order.split(","))
    return ", ".join(f"{name} {'ASC' if rest == ['DESC'] else 'DESC'}" for name, *rest in terms)


def queue_page(
    conn: sqlite3.Connection,
    flt: QueueFilter,
    as_of: int,
    sort: str,
    limit: int,
    offset: int,
    total: int | None = None,
) -> list[Row]:
    """One page of the filtered queue in `sort` order: the same rows, in the same order, as
    `queue_iter` yields from `offset` on.

    The page's ids are chosen first, from an index that holds the status and the sort key
    (exceptions_status_created, exceptions_status_class, exceptions_status_updated: the
    sort then orders a few values per exception), and only those `limit` rows are read
    whole; ordering every matching row whole for `LIMIT ? OFFSET ?` took up to 1.2 s for
    the last page at 1M payments (docs/benchmark.md, "The Exceptions queue's pages"). Every
    QUEUE_SORTS order ends in the unique id, so the inner and the outer sort agree exactly,
    ties included.

    `total` (the filter's count, when the caller has it): a page in the second half is
    chosen in the reverse order from the end, so the sort keeps only the rows up to the
    page from its nearer end (SQLite and PostgreSQL keep `LIMIT + OFFSET` rows in a
    top-N sort): the last page of 479,239 open exceptions took 0.86-0.91 s at 10M
    payments, sorting all of them (docs/benchmark.md, "10M in the app, fourth round")."""
    where, params = _where(flt, as_of, is_postgres(conn))
    order = inner = QUEUE_SORTS[sort]
    if total is not None and 0 <= offset < total:
        end = min(offset + limit, total)
        if total - end < offset:  # nearer the end: the same rows, counted from it
            inner, limit, offset = _reversed(order), end - offset, total - end
    return _all(
        conn,
        f"SELECT {QUEUE_COLUMNS}, {WRITE_OFF_PENDING} FROM exceptions WHERE id IN "
        f"(SELECT id FROM exceptions{where} ORDER BY {inner} LIMIT ? OFFSET ?) "
        f"ORDER BY {order}",
        (*params, limit, offset),
    )


def queue_iter(
    conn: sqlite3.Connection, flt: QueueFilter, as_of: int, sort: str, batch: int = 5000
) -> Iterator[list[Row]]:
    """The whole filtered set, in batches (CSV export)."""
    where, params = _where(flt, as_of, is_postgres(conn))
    cursor = conn.execute(
        f"SELECT {QUEUE_COLUMNS}, {WRITE_OFF_PENDING} FROM exceptions{where}"
        f" ORDER BY {QUEUE_SORTS[sort]}",
        params,
    )
    while chunk := cursor.fetchmany(batch):
        yield [dict(r) for r in chunk]


def assigned_counts(conn: sqlite3.Connection, assignee: str, today: str) -> Row:
    """One person's open exceptions: how many, how many overdue (due before `today`, an
    ISO date), how many marked 'no longer found'."""
    row = _one(
        conn,
        "SELECT count(*) AS n, coalesce(sum(due_date < ?), 0) AS overdue, "
        "coalesce(sum(not_found_run_id IS NOT NULL), 0) AS needs_review FROM exceptions "
        f"WHERE assignee = ? AND status IN ({_in(OPEN_STATUSES)})",
        (today, assignee, *OPEN_STATUSES),
    )
    assert row is not None
    return row


def latest_syncs(conn: sqlite3.Connection, limit: int = 2) -> list[Row]:
    """The newest queue syncs (run id, when, counts as JSON), newest first."""
    return _all(
        conn,
        "SELECT run_id, synced_at, summary_json FROM exception_syncs ORDER BY run_id DESC LIMIT ?",
        (limit,),
    )


def distinct_codes(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT DISTINCT reason_code FROM exceptions ORDER BY 1")]


def distinct_assignees(conn: sqlite3.Connection) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT assignee FROM exceptions WHERE assignee IS NOT NULL ORDER BY 1"
        )
    ]


def exception_by_id(conn: sqlite3.Connection, exception_id: int) -> Row | None:
    return _one(conn, "SELECT * FROM exceptions WHERE id = ?", (exception_id,))


def exception_events(conn: sqlite3.Connection, exception_id: int) -> list[Row]:
    return _all(
        conn,
        "SELECT * FROM exception_events WHERE exception_id = ? ORDER BY id",
        (exception_id,),
    )


# --- one settlement -------------------------------------------------------------------


def settlement_by_id(conn: sqlite3.Connection, settlement_id: str) -> Row | None:
    return _one(conn, "SELECT * FROM settlements WHERE id = ?", (settlement_id,))


def instant_settlement_by_id(conn: sqlite3.Connection, settlement_id: str) -> Row | None:
    """An instant settlement (setlod_...) in a settlement's shape: amount is what was
    settled (amount_settled), utr the first processed payout's."""
    return _one(
        conn,
        "SELECT i.id, coalesce(i.amount_settled, 0) AS amount, i.status, i.fees, i.tax, "
        "(SELECT p.utr FROM instant_payouts p WHERE p.instant_settlement_id = i.id "
        "AND p.status = 'processed' ORDER BY p.id LIMIT 1) AS utr, i.created_at "
        "FROM instant_settlements i WHERE i.id = ?",
        (settlement_id,),
    )


_DISPUTED = "CASE WHEN coalesce(dispute_id, '') = '' THEN 0 ELSE 1 END"


def settlement_breakdown(conn: sqlite3.Connection, settlement_id: str) -> list[Row]:
    """A settlement's recon rows summed by type and by whether they name a dispute."""
    return _all(
        conn,
        f"SELECT type, {_DISPUTED} AS disputed, count(*) AS n, "
        "coalesce(sum(amount), 0) AS amount, "
        "coalesce(sum(credit), 0) AS credit, coalesce(sum(debit), 0) AS debit, "
        "coalesce(sum(fee), 0) AS fee, coalesce(sum(tax), 0) AS tax "
        f"FROM recon_rows WHERE settlement_id = ? GROUP BY type, {_DISPUTED} "
        "ORDER BY type, disputed",
        (settlement_id,),
    )


def settlement_recon_rows(conn: sqlite3.Connection, settlement_id: str, limit: int) -> list[Row]:
    return _all(
        conn,
        "SELECT row_key, type, entity_id, payment_id, order_id, amount, fee, tax, credit, "
        "debit, on_hold, settled, settled_at FROM recon_rows WHERE settlement_id = ? "
        "ORDER BY type, entity_id LIMIT ?",
        (settlement_id, limit),
    )


def bank_lines_for_settlement(
    conn: sqlite3.Connection, utr: str | None, settlement_id: str, run_id: int | None
) -> list[Row]:
    """Lines carrying the settlement's UTR, plus lines the run linked to it by a fallback."""
    return _all(
        conn,
        "SELECT b.*, o.status AS outcome_status, o.match_method AS match_method "
        "FROM bank_lines b LEFT JOIN outcomes o ON o.run_id = ? "
        "AND o.entity_type = 'bank_entry' AND o.entity_id = b.id "
        "WHERE b.utr = ? OR b.id IN (SELECT entity_id FROM outcomes WHERE run_id = ? "
        "AND entity_type = 'bank_entry' AND settlement_id = ?) ORDER BY b.txn_date, b.id",
        (run_id, utr, run_id, settlement_id),
    )


def outcome_for(
    conn: sqlite3.Connection, run_id: int, entity_type: str, entity_id: str
) -> Row | None:
    return _one(
        conn,
        "SELECT * FROM outcomes WHERE run_id = ? AND entity_type = ? AND entity_id = ?",
        (run_id, entity_type, entity_id),
    )


# --- raw entities (evidence when the investigator is not installed) -------------------


def payment_by_id(conn: sqlite3.Connection, payment_id: str) -> Row | None:
    return _one(conn, "SELECT * FROM payments WHERE id = ?", (payment_id,))


def refund_by_id(conn: sqlite3.Connection, refund_id: str) -> Row | None:
    return _one(conn, "SELECT * FROM refunds WHERE id = ?", (refund_id,))


def bank_line_by_id(conn: sqlite3.Connection, line_id: str) -> Row | None:
    return _one(conn, "SELECT * FROM bank_lines WHERE id = ?", (line_id,))


def recon_rows_for_entity(conn: sqlite3.Connection, entity_id: str) -> list[Row]:
    return _all(conn, "SELECT * FROM recon_rows WHERE entity_id = ? ORDER BY row_key", (entity_id,))


def recon_row_by_key(conn: sqlite3.Connection, row_key: str) -> Row | None:
    return _one(conn, "SELECT * FROM recon_rows WHERE row_key = ?", (row_key,))


# --- the data builder (tests and the UI benchmark only) -------------------------------


def insert_rows(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Bulk insert into a raw, run or exception table. Column names must be identifiers."""
    if table not in BUILDER_TABLES:
        raise ValueError(f"not a builder table: {table}")
    if not all(c.isidentifier() for c in columns):
        raise ValueError("column names must be identifiers")
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_in(columns)})"
    with transaction(conn):
        conn.executemany(sql, rows)
        if is_postgres(conn):
            from core.db.pg_bulk import advance_identities

            advance_identities(conn, table)
        _seal_built_rows(conn, table)


def _seal_built_rows(conn: sqlite3.Connection, table: str) -> None:
    """A raw table's rows given their MACs (core.rowmac), as an audited import's would be:
    the builder's tables are a database someone imported (`audit verify` checks them)."""
    from core.db import raw

    for attribute, (name, _, _) in raw.RAW_TABLES.items():
        if name == table:
            raw.reseal_rows(conn, attribute, None)


def checkpoint(conn: sqlite3.Connection) -> None:
    """Fold the WAL into the main file (before copying the database elsewhere)."""
    if is_postgres(conn):
        return
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def analyse(conn: sqlite3.Connection) -> None:
    """Refresh the planner's statistics after a bulk load."""
    conn.execute("ANALYZE")
