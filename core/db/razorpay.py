"""Every SQL statement of the Razorpay area: sync runs, watermarks, sync errors, the webhook
inbox and log, entity versions, re-reconciliation marks, and the reads behind export.

Raw entity rows themselves are written by the importer (`core.ingest.store_dataset`); this
module only reads them (to count what a step changed, to check a webhook against what is
stored, and to export). Table names used in f-strings come from the fixed maps below, never
from input; every value is a bound parameter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from core.dataset import (
    DISPUTE_COLUMNS,
    INSTANT_PAYOUT_COLUMNS,
    INSTANT_SETTLEMENT_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    TRANSFER_COLUMNS,
)
from core.db.backend import is_postgres


# raw table -> (key column, modelled columns: compared to decide whether a stored row changed).
# The Dataset's columns (core.dataset), so a column the importer stores is also compared and
# exported.
def _modelled(columns: dict[str, str], key: str) -> tuple[str, ...]:
    return tuple(c for c in columns if c != key)


RAW_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "payments": ("id", _modelled(PAYMENT_COLUMNS, "id")),
    "refunds": ("id", _modelled(REFUND_COLUMNS, "id")),
    "settlements": ("id", _modelled(SETTLEMENT_COLUMNS, "id")),
    "recon_rows": ("row_key", _modelled(RECON_COLUMNS, "row_key")),
    "instant_settlements": ("id", _modelled(INSTANT_SETTLEMENT_COLUMNS, "id")),
    "instant_payouts": ("id", _modelled(INSTANT_PAYOUT_COLUMNS, "id")),
    "disputes": ("id", _modelled(DISPUTE_COLUMNS, "id")),
    "transfers": ("id", _modelled(TRANSFER_COLUMNS, "id")),
}

# export: table -> (columns read, ORDER BY)
EXPORT_QUERIES: dict[str, tuple[tuple[str, ...], str]] = {
    "payments": (("id", *RAW_TABLES["payments"][1], "extra_json"), "created_at, id"),
    "refunds": (("id", *RAW_TABLES["refunds"][1], "extra_json"), "created_at, id"),
    "settlements": (("id", *RAW_TABLES["settlements"][1], "extra_json"), "created_at, id"),
    "recon_rows": (("row_key", *RAW_TABLES["recon_rows"][1], "extra_json"), "rowid"),
    **{
        table: (("id", *RAW_TABLES[table][1], "extra_json"), "created_at, id")
        for table in ("instant_settlements", "instant_payouts", "disputes", "transfers")
    },
    "bank_lines": (
        (
            "id",
            "file",
            "line_no",
            "txn_date",
            "value_date",
            "narration",
            "reference",
            "debit",
            "credit",
            "balance",
        ),
        "file, line_no",
    ),
}

_CHUNK = 500  # below SQLite's bound-parameter limit


# -- raw rows (read only) ----------------------------------------------------------------


def stored_rows(
    conn: sqlite3.Connection, table: str, keys: Iterable[str]
) -> dict[str, tuple[object, ...]]:
    """The compared columns of the stored rows with these keys (absent keys are left out)."""
    key_column, columns = RAW_TABLES[table]
    wanted = list(dict.fromkeys(keys))
    found: dict[str, tuple[object, ...]] = {}
    select = ", ".join((key_column, *columns))
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ", ".join("?" for _ in chunk)
        for row in conn.execute(
            f"SELECT {select} FROM {table} WHERE {key_column} IN ({marks})", chunk
        ):
            found[row[0]] = tuple(row[1:])
    return found


def export_rows(conn: sqlite3.Connection, table: str) -> list[sqlite3.Row]:
    """Every stored row of a raw table, in a stable order, for export."""
    columns, order = EXPORT_QUERIES[table]
    if order == "rowid" and is_postgres(conn):
        order = "row_order"  # PostgreSQL has no rowid; row_order keeps the insertion order
    return list(conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"))


def raw_table_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Row counts of the raw tables (export and status)."""
    return {
        table: int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        for table in EXPORT_QUERIES
    }


# -- sync runs -----------------------------------------------------------------------------


def running_sync_runs(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    return list(
        conn.execute(
            "SELECT id, pid, host, started_at, heartbeat_at FROM razorpay_sync_runs"
            " WHERE status = 'running' ORDER BY id"
        )
    )


def start_sync_run(
    conn: sqlite3.Connection,
    *,
    now: int,
    range_from: str,
    range_to: str,
    base_url: str,
    pid: int,
    host: str,
    resumed: bool,
) -> int:
    cursor = conn.execute(
        "INSERT INTO razorpay_sync_runs (started_at, heartbeat_at, status, range_from, range_to,"
        " base_url, pid, host, resumed) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?)"
        " RETURNING id",
        (now, now, range_from, range_to, base_url, pid, host, int(resumed)),
    )
    return int(cursor.fetchall()[0][0])


def record_sync_step(
    conn: sqlite3.Connection,
    run_id: int,
    *,
    now: int,
    requests: int,
    retries: int,
    items: int,
    inserted: int,
    updated: int,
) -> None:
    conn.execute(
        "UPDATE razorpay_sync_runs SET heartbeat_at = ?, requests = ?, retries = ?,"
        " steps = steps + 1, items = items + ?, inserted = inserted + ?, updated = updated + ?"
        " WHERE id = ?",
        (now, requests, retries, items, inserted, updated, run_id),
    )


def touch_sync_run(conn: sqlite3.Connection, run_id: int, *, now: int) -> None:
    """A running sync's heartbeat between its steps (a day can take hours when paced); a run
    another sync has retired stays as that one left it."""
    conn.execute(
        "UPDATE razorpay_sync_runs SET heartbeat_at = ? WHERE id = ? AND status = 'running'",
        (now, run_id),
    )


def finish_sync_run(
    conn: sqlite3.Connection,
    run_id: int,
    *,
    status: str,
    now: int,
    requests: int | None = None,
    retries: int | None = None,
    error: str | None = None,
) -> None:
    conn.execute(
        "UPDATE razorpay_sync_runs SET status = ?, finished_at = ?, heartbeat_at = ?,"
        " requests = COALESCE(?, requests), retries = COALESCE(?, retries), error = ?"
        " WHERE id = ?",
        (status, now, now, requests, retries, error, run_id),
    )


def record_sync_error(
    conn: sqlite3.Connection,
    run_id: int,
    *,
    now: int,
    resource: str | None,
    day: str | None,
    kind: str,
    status_code: int | None,
    message: str,
) -> None:
    conn.execute(
        "INSERT INTO razorpay_sync_errors (run_id, occurred_at, resource, day, kind,"
        " status_code, message) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (run_id, now, resource, day, kind, status_code, message),
    )


def sync_run(conn: sqlite3.Connection, run_id: int) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM razorpay_sync_runs WHERE id = ?", (run_id,)
    ).fetchone()
    return row


def latest_sync_runs(conn: sqlite3.Connection, limit: int) -> list[sqlite3.Row]:
    return list(conn.execute("SELECT * FROM razorpay_sync_runs ORDER BY id DESC LIMIT ?", (limit,)))


def last_sync_run_with_status(conn: sqlite3.Connection, status: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM razorpay_sync_runs WHERE status = ? ORDER BY id DESC LIMIT 1", (status,)
    ).fetchone()
    return row


def recent_sync_errors(conn: sqlite3.Connection, limit: int) -> list[sqlite3.Row]:
    return list(
        conn.execute("SELECT * FROM razorpay_sync_errors ORDER BY id DESC LIMIT ?", (limit,))
    )


def sync_error_count(conn: sqlite3.Connection, run_id: int) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM razorpay_sync_errors WHERE run_id = ?", (run_id,)
        ).fetchone()[0]
    )


# -- watermarks ----------------------------------------------------------------------------


def watermarks(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    return {
        row["resource"]: row
        for row in conn.execute("SELECT * FROM razorpay_sync_watermarks ORDER BY resource")
    }


def reset_watermark(
    conn: sqlite3.Connection,
    resource: str,
    *,
    range_from: str,
    range_to: str,
    run_id: int,
    now: int,
) -> None:
    conn.execute(
        "INSERT INTO razorpay_sync_watermarks (resource, range_from, range_to, done_through,"
        " complete, items, run_id, updated_at) VALUES (?, ?, ?, NULL, 0, 0, ?, ?)"
        " ON CONFLICT (resource) DO UPDATE SET range_from = excluded.range_from,"
        " range_to = excluded.range_to, done_through = NULL, complete = 0, items = 0,"
        " run_id = excluded.run_id, updated_at = excluded.updated_at",
        (resource, range_from, range_to, run_id, now),
    )


def own_watermark(conn: sqlite3.Connection, resource: str, *, run_id: int, now: int) -> None:
    """A run that resumes a resource's unfinished range takes its watermark over: from now
    on only that run may move it (`advance_watermark`, `complete_watermark`)."""
    conn.execute(
        "UPDATE razorpay_sync_watermarks SET run_id = ?, updated_at = ? WHERE resource = ?",
        (run_id, now, resource),
    )


def advance_watermark(
    conn: sqlite3.Connection,
    resource: str,
    *,
    done_through: str | None,
    items: int,
    run_id: int,
    now: int,
) -> bool:
    """Record a committed step; `done_through` None leaves the resume point where it is.
    Only the run that owns the watermark moves it: False (nothing written) for any other.
    """
    cursor = conn.execute(
        "UPDATE razorpay_sync_watermarks SET done_through = COALESCE(?, done_through),"
        " items = items + ?, updated_at = ? WHERE resource = ? AND run_id = ?",
        (done_through, items, now, resource, run_id),
    )
    return cursor.rowcount == 1


def complete_watermark(conn: sqlite3.Connection, resource: str, *, run_id: int, now: int) -> bool:
    """Mark the range done; only by the run that owns the watermark (False otherwise)."""
    cursor = conn.execute(
        "UPDATE razorpay_sync_watermarks SET complete = 1, updated_at = ?"
        " WHERE resource = ? AND run_id = ?",
        (now, resource, run_id),
    )
    return cursor.rowcount == 1


# -- webhooks ------------------------------------------------------------------------------


def inbox_event(conn: sqlite3.Connection, event_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT event_id, event, body_sha256, outcome FROM razorpay_webhook_inbox"
        " WHERE event_id = ?",
        (event_id,),
    ).fetchone()
    return row


def inbox_event_with_body(conn: sqlite3.Connection, body_sha256: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT event_id, event FROM razorpay_webhook_inbox WHERE body_sha256 = ?",
        (body_sha256,),
    ).fetchone()
    return row


def insert_inbox_event(
    conn: sqlite3.Connection,
    *,
    event_id: str,
    event: str,
    event_created_at: int,
    received_at: int,
    body_sha256: str,
    body: str,
    outcome: str,
    detail_json: str,
) -> None:
    conn.execute(
        "INSERT INTO razorpay_webhook_inbox (event_id, event, event_created_at, received_at,"
        " body_sha256, body, outcome, detail_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (event_id, event, event_created_at, received_at, body_sha256, body, outcome, detail_json),
    )


def log_webhook_delivery(
    conn: sqlite3.Connection,
    *,
    received_at: int,
    event_id: str | None,
    verdict: str,
    reason: str,
    body_sha256: str,
    body_bytes: int,
) -> None:
    conn.execute(
        "INSERT INTO razorpay_webhook_log (received_at, event_id, verdict, reason, body_sha256,"
        " body_bytes) VALUES (?, ?, ?, ?, ?, ?)",
        (received_at, event_id, verdict, reason, body_sha256, body_bytes),
    )


def count_webhook_rejection(conn: sqlite3.Connection, *, day: str, verdict: str, now: int) -> None:
    """One more unsigned delivery of this verdict on this UTC day (counted, not stored)."""
    conn.execute(
        "INSERT INTO razorpay_webhook_rejections (day, verdict, count, first_at, last_at)"
        " VALUES (?, ?, 1, ?, ?) ON CONFLICT (day, verdict)"
        " DO UPDATE SET count = razorpay_webhook_rejections.count + 1, last_at = excluded.last_at",
        (day, verdict, now, now),
    )


def webhook_rejection_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Unsigned deliveries counted so far, per verdict."""
    return {
        str(row[0]): int(row[1])
        for row in conn.execute(
            "SELECT verdict, SUM(count) FROM razorpay_webhook_rejections GROUP BY verdict"
        )
    }


def last_webhook_rejection(conn: sqlite3.Connection) -> sqlite3.Row | None:
    """(verdict, last_at) of the most recent counted unsigned delivery."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT verdict, last_at FROM razorpay_webhook_rejections ORDER BY last_at DESC LIMIT 1"
    ).fetchone()
    return row


def prune_webhook_log(conn: sqlite3.Connection, *, before: int) -> int:
    """Delete log rows received before `before` (Unix seconds); how many."""
    cursor = conn.execute("DELETE FROM razorpay_webhook_log WHERE received_at < ?", (before,))
    return int(cursor.rowcount)


def webhook_verdict_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Deliveries per verdict: the log's rows plus the counted unsigned ones."""
    counts = {
        str(row[0]): int(row[1])
        for row in conn.execute(
            "SELECT verdict, COUNT(*) FROM razorpay_webhook_log GROUP BY verdict"
        )
    }
    for verdict, number in webhook_rejection_counts(conn).items():
        counts[verdict] = counts.get(verdict, 0) + number
    return counts


def last_webhook_delivery(conn: sqlite3.Connection, verdict: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM razorpay_webhook_log WHERE verdict = ? ORDER BY id DESC LIMIT 1",
        (verdict,),
    ).fetchone()
    return row


def recent_webhook_deliveries(conn: sqlite3.Connection, limit: int) -> list[sqlite3.Row]:
    return list(
        conn.execute("SELECT * FROM razorpay_webhook_log ORDER BY id DESC LIMIT ?", (limit,))
    )


def entity_version(conn: sqlite3.Connection, entity_type: str, entity_id: str) -> int | None:
    row = conn.execute(
        "SELECT event_created_at FROM razorpay_entity_versions"
        " WHERE entity_type = ? AND entity_id = ?",
        (entity_type, entity_id),
    ).fetchone()
    return None if row is None else int(row[0])


def set_entity_version(
    conn: sqlite3.Connection,
    entity_type: str,
    entity_id: str,
    *,
    event_created_at: int,
    event_id: str,
) -> None:
    conn.execute(
        "INSERT INTO razorpay_entity_versions (entity_type, entity_id, event_created_at,"
        " event_id) VALUES (?, ?, ?, ?) ON CONFLICT (entity_type, entity_id) DO UPDATE SET"
        " event_created_at = excluded.event_created_at, event_id = excluded.event_id",
        (entity_type, entity_id, event_created_at, event_id),
    )


# -- re-reconciliation marks ---------------------------------------------------------------


def add_rereconcile_mark(
    conn: sqlite3.Connection,
    *,
    entity_type: str,
    entity_id: str,
    reason: str,
    event_id: str,
    now: int,
) -> None:
    conn.execute(
        "INSERT INTO rereconcile_marks (entity_type, entity_id, reason, event_id, marked_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (entity_type, entity_id, event_id) DO NOTHING",
        (entity_type, entity_id, reason, event_id, now),
    )


def open_rereconcile_marks(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    return list(
        conn.execute(
            "SELECT id, entity_type, entity_id, reason, event_id, marked_at"
            " FROM rereconcile_marks WHERE cleared_at IS NULL ORDER BY id"
        )
    )


def open_rereconcile_mark_count(conn: sqlite3.Connection) -> int:
    return int(
        conn.execute("SELECT COUNT(*) FROM rereconcile_marks WHERE cleared_at IS NULL").fetchone()[
            0
        ]
    )


def clear_rereconcile_marks(
    conn: sqlite3.Connection, *, through_id: int, run_id: int, now: int
) -> int:
    cursor = conn.execute(
        "UPDATE rereconcile_marks SET cleared_at = ?, cleared_by_run_id = ?"
        " WHERE cleared_at IS NULL AND id <= ?",
        (now, run_id, through_id),
    )
    return int(cursor.rowcount)


def marks_for(conn: sqlite3.Connection, entity_ids: Sequence[str]) -> list[sqlite3.Row]:
    """Open and cleared marks of these entities (tests and the investigator's context)."""
    marks = ", ".join("?" for _ in entity_ids)
    return list(
        conn.execute(
            f"SELECT * FROM rereconcile_marks WHERE entity_id IN ({marks}) ORDER BY id",
            list(entity_ids),
        )
    )
