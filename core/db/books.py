"""SQL for closing the books (core.books): the exceptions of a run, read as entity keys;
pricing plans; closed months and what their close keeps (migrations 0081, 0115)."""

from __future__ import annotations

import json
import sqlite3

from core.db.backend import is_postgres


def exception_keys(conn: sqlite3.Connection, run_id: int) -> frozenset[tuple[str, str]]:
    """(entity_type, entity_id) of every EXCEPTION outcome of run `run_id`."""
    rows = conn.execute(
        "SELECT entity_type, entity_id FROM outcomes WHERE run_id = ? AND status = ?",
        (run_id, "EXCEPTION"),
    )
    return frozenset((str(r[0]), str(r[1])) for r in rows)


def bank_credit_rows(
    conn: sqlite3.Connection, run_id: int, start: int, end: int
) -> list[tuple[str, int, int, str]]:
    """(bank line id, its date, actual_amount, settlement_id) of every `bank_entry` outcome
    of run `run_id` that names a settlement, dated in [start, end) (Unix seconds)."""
    rows = conn.execute(
        "SELECT entity_id, entity_created_at, actual_amount, settlement_id FROM outcomes"
        " WHERE run_id = ? AND entity_type = 'bank_entry' AND settlement_id IS NOT NULL"
        " AND settlement_id <> '' AND entity_created_at >= ? AND entity_created_at < ?"
        " ORDER BY entity_created_at, entity_id",
        (run_id, start, end),
    )
    return [(str(r[0]), int(r[1]), int(r[2] or 0), str(r[3])) for r in rows]


def pricing_rows(
    conn: sqlite3.Connection, *, not_by: str | None = None
) -> list[tuple[int, int, int, str]]:
    """(version, effective_from, gst_bp, rules_json) of every pricing plan version (but
    those created by `not_by`)."""
    rows = conn.execute(
        "SELECT version, effective_from, gst_bp, rules_json FROM pricing_plans"
        " WHERE created_by <> ? ORDER BY version",
        ("" if not_by is None else not_by,),
    )
    return [(int(r[0]), int(r[1]), int(r[2]), str(r[3])) for r in rows]


def latest_import_source(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT source FROM imports ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else str(row[0])


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


def month_close_rows(conn: sqlite3.Connection) -> list[tuple[str, int, str, str, int | None]]:
    """(month, closed_at, closed_by, snapshot_json, through_import_id) of every closed month,
    oldest first (through_import_id None: closed before migration 0115)."""
    rows = conn.execute(
        "SELECT month, closed_at, closed_by, snapshot_json, through_import_id"
        " FROM month_closes ORDER BY month"
    )
    return [
        (str(r[0]), int(r[1]), str(r[2]), str(r[3]), None if r[4] is None else int(r[4]))
        for r in rows
    ]


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
    through_import_id: int,
) -> None:
    conn.execute(
        "INSERT INTO month_closes (month, closed_at, closed_by, run_id, closing, residual,"
        " snapshot_json, request_id, through_import_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            *(month, closed_at, closed_by, run_id, closing, residual),
            *(snapshot_json, request_id, through_import_id),
        ),
    )


def insert_close_books(
    conn: sqlite3.Connection, month: str, *, daily_json: str, journal: bytes, vouchers: int
) -> None:
    """What `month`'s close keeps besides its roll-forward (migration 0115)."""
    conn.execute(
        "INSERT INTO month_close_books (month, daily_json, journal, vouchers) VALUES (?, ?, ?, ?)",
        (month, daily_json, journal, vouchers),
    )


def close_daily_json(conn: sqlite3.Connection, month: str) -> str | None:
    """The balance by day `month`'s close kept; None when it kept none (closed before 0115)."""
    row = conn.execute(
        "SELECT daily_json FROM month_close_books WHERE month = ?", (month,)
    ).fetchone()
    return None if row is None else str(row[0])


def close_journal(conn: sqlite3.Connection, month: str) -> bytes | None:
    """The journal `month`'s close kept (compressed); None when it kept none."""
    row = conn.execute("SELECT journal FROM month_close_books WHERE month = ?", (month,)).fetchone()
    return None if row is None else bytes(row[0])


def row_imports(
    conn: sqlite3.Connection, keys: list[str], after: int = 0
) -> dict[str, tuple[int, int]]:
    """For the keys that are a payment id or a recon row key: (import id, imported_at) of the
    import that last stored the row (its `import_id`), or a recon row's dispute when that
    is later, when that import is later than `after`; keys of rows not there (or stored no
    later) are left out."""
    listed = (
        "IN (SELECT json_array_elements_text(CAST(? AS json)))"
        if is_postgres(conn)
        else "IN (SELECT value FROM json_each(?))"
    )
    found: dict[str, tuple[int, int]] = {}
    text = json.dumps(sorted(set(keys)))
    for table, key in (("payments", "id"), ("recon_rows", "row_key")):
        rows = conn.execute(
            f"SELECT t.{key}, i.id, i.imported_at FROM {table} t JOIN imports i"
            f" ON i.id = t.import_id WHERE t.{key} {listed} AND t.import_id > ?",
            (text, int(after)),
        )
        found.update({str(r[0]): (int(r[1]), int(r[2])) for r in rows})
    # A recon row whose dispute was stored again (open -> lost moves its debit from
    # "disputed amounts" to "chargebacks") changed with it, though the row did not.
    rows = conn.execute(
        "SELECT r.row_key, i.id, i.imported_at FROM recon_rows r JOIN disputes d"
        " ON d.id = r.dispute_id JOIN imports i ON i.id = d.import_id"
        f" WHERE r.row_key {listed} AND d.import_id > ?",
        (text, int(after)),
    )
    for key, number, at in rows:
        if str(key) not in found or found[str(key)][0] < int(number):
            found[str(key)] = (int(number), int(at))
    return found


def write_off_decisions(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    """Every resolve and reopen of an exception, in audit order: (exception id, action,
    payload_json, created_at, actor). A write-off's type and amount are in the resolve's
    payload (core.review: `resolution`, `write_off_amount`, and `approval_id` when approved
    under four eyes); a later reopen undoes it."""
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT entity_id, action, payload_json, created_at, actor FROM audit_log"
            " WHERE entity_type = 'exception'"
            " AND action IN ('exception.resolved', 'exception.reopened') ORDER BY seq"
        ).fetchall()
    ]


def exceptions_by_id(conn: sqlite3.Connection, ids: list[int]) -> list[tuple[object, ...]]:
    """(id, entity_type, entity_id, reason_code, status) of these exceptions, by primary
    key, a chunk of ids per statement."""
    out: list[tuple[object, ...]] = []
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        out += [
            tuple(r)
            for r in conn.execute(
                "SELECT id, entity_type, entity_id, reason_code, status FROM exceptions"
                f" WHERE id IN ({marks})",
                chunk,
            ).fetchall()
        ]
    return out
