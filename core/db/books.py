"""SQL for closing the books (core.books): the exceptions of a run, read as entity keys."""

from __future__ import annotations

import sqlite3


def exception_keys(conn: sqlite3.Connection, run_id: int) -> frozenset[tuple[str, str]]:
    """(entity_type, entity_id) of every EXCEPTION outcome of run `run_id`."""
    rows = conn.execute(
        "SELECT entity_type, entity_id FROM outcomes WHERE run_id = ? AND status = ?",
        (run_id, "EXCEPTION"),
    )
    return frozenset((str(r[0]), str(r[1])) for r in rows)


def pricing_rows(conn: sqlite3.Connection) -> list[tuple[int, int, int, str]]:
    """(version, effective_from, gst_bp, rules_json) of every pricing plan version."""
    rows = conn.execute(
        "SELECT version, effective_from, gst_bp, rules_json FROM pricing_plans ORDER BY version"
    )
    return [(int(r[0]), int(r[1]), int(r[2]), str(r[3])) for r in rows]


def plan_for_request(conn: sqlite3.Connection, request_id: str) -> int | None:
    row = conn.execute(
        "SELECT version FROM pricing_plans WHERE request_id = ?", (request_id,)
    ).fetchone()
    return None if row is None else int(row[0])


def insert_plan(
    conn: sqlite3.Connection,
    *,
    effective_from: int,
    gst_bp: int,
    rules_json: str,
    created_at: int,
    created_by: str,
    request_id: str,
) -> int:
    """Store a new plan version; its number."""
    cursor = conn.execute(
        "INSERT INTO pricing_plans"
        " (effective_from, gst_bp, rules_json, created_at, created_by, request_id)"
        " VALUES (?, ?, ?, ?, ?, ?) RETURNING version",
        (effective_from, gst_bp, rules_json, created_at, created_by, request_id),
    )
    return int(cursor.fetchall()[0][0])


def month_close_rows(conn: sqlite3.Connection) -> list[tuple[str, int, str, str]]:
    """(month, closed_at, closed_by, snapshot_json) of every closed month, oldest first."""
    rows = conn.execute(
        "SELECT month, closed_at, closed_by, snapshot_json FROM month_closes ORDER BY month"
    )
    return [(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]


def insert_month_close(
    conn: sqlite3.Connection,
    *,
    month: str,
    closed_at: int,
    closed_by: str,
    run_id: int | None,
    closing: int,
    residual: int,
    snapshot_json: str,
    request_id: str,
) -> None:
    conn.execute(
        "INSERT INTO month_closes (month, closed_at, closed_by, run_id, closing, residual,"
        " snapshot_json, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (month, closed_at, closed_by, run_id, closing, residual, snapshot_json, request_id),
    )
