"""Every SQL statement of the investigator: read-only evidence queries and its own state.

Evidence queries run on a read-only connection (`open_read_only`: a `mode=ro` URI plus
`PRAGMA query_only`), so even a bug in a tool cannot write. They return plain dicts and
never select personal columns the investigation does not need (`payments.email`,
`payments.contact`). The investigator's own state (answer cache, daily token use,
circuit breakers) is written through the caller's ordinary connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from core.db.backend import PgConnection, busy_timeout_ms, is_postgres

Record = dict[str, Any]

_PAYMENT_COLUMNS = (
    "id, amount, currency, status, captured, order_id, method, fee, tax, amount_refunded,"
    " international, created_at, description, notes, base_amount, settled_by"
)
_REFUND_COLUMNS = (
    "id, payment_id, amount, currency, status, created_at, notes, base_amount, settled_by"
)
_SETTLEMENT_COLUMNS = "id, amount, status, fees, tax, utr, created_at"
_DISPUTE_COLUMNS = (
    "id, payment_id, amount, currency, amount_deducted, status, phase, reason_code,"
    " respond_by, created_at"
)
_RECON_COLUMNS = (
    "row_key, entity_id, type, debit, credit, amount, currency, fee, tax, on_hold, settled,"
    " created_at, settled_at, settlement_id, settlement_utr, payment_id, order_id, method,"
    " dispute_id, description, notes"
)
_BANK_COLUMNS = (
    "id, file, line_no, txn_date, value_date, narration, reference, utr, debit, credit, balance"
)
_EXCEPTION_COLUMNS = (
    "id, entity_type, entity_id, reason_code, reason_codes, exposure_class, exposure_amount,"
    " expected_amount, actual_amount, difference, settlement_id, order_id, utr,"
    " entity_created_at, status, first_run_id, last_run_id, opened_at"
)
_OUTCOME_COLUMNS = (
    "run_id, entity_type, entity_id, status, reason_code, reason_codes, settlement_id,"
    " expected_amount, actual_amount, difference, exposure_class, exposure_amount,"
    " match_method, order_id, utr, entity_created_at"
)
MAX_ROWS = 50  # a tool never returns more than this many records


def _rows(cursor: sqlite3.Cursor) -> list[Record]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, tuple(row), strict=True)) for row in cursor.fetchall()]


def _one(cursor: sqlite3.Cursor) -> Record | None:
    rows = _rows(cursor)
    return rows[0] if rows else None


# --- connections -------------------------------------------------------------------------


def database_file(conn: sqlite3.Connection) -> str | None:
    """The file behind `conn`'s main database, or None for an in-memory database (and
    on PostgreSQL)."""
    if is_postgres(conn):
        return None
    for row in conn.execute("PRAGMA database_list").fetchall():
        if row[1] == "main":
            return str(row[2]) or None
    return None


def open_read_only(path: str | Path) -> sqlite3.Connection:
    """A connection that cannot write: opened `mode=ro` and with `query_only` on."""
    uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro"
    busy_ms = busy_timeout_ms()
    conn = sqlite3.connect(
        uri,
        uri=True,
        timeout=busy_ms / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
    conn.execute("PRAGMA query_only = ON")
    return conn


@contextmanager
def read_only(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the same database as `conn`, closed afterwards.

    A file database gets its own `mode=ro` connection; an in-memory one (tests, scratch)
    is switched to `query_only` for the duration and switched back. On PostgreSQL it is a
    new session whose transactions are all READ ONLY (the server refuses any write).
    """
    if is_postgres(conn):
        ro_pg = PgConnection(conn.url)  # type: ignore[attr-defined]
        try:
            ro_pg.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            yield cast(sqlite3.Connection, ro_pg)
        finally:
            ro_pg.close()
        return
    path = database_file(conn)
    if path is not None:
        ro = open_read_only(path)
        try:
            yield ro
        finally:
            ro.close()
        return
    was_on = bool(conn.execute("PRAGMA query_only").fetchone()[0])
    conn.execute("PRAGMA query_only = ON")
    try:
        yield conn
    finally:
        if not was_on:
            conn.execute("PRAGMA query_only = OFF")


# --- evidence (read-only) ----------------------------------------------------------------


def get_exception(conn: sqlite3.Connection, exception_id: int) -> Record | None:
    return _one(
        conn.execute(f"SELECT {_EXCEPTION_COLUMNS} FROM exceptions WHERE id = ?", (exception_id,))
    )


def exceptions_of_run(conn: sqlite3.Connection, run_id: int) -> list[Record]:
    """The queue's exceptions a run found (id, entity_type, entity_id), by id."""
    return _rows(
        conn.execute(
            "SELECT id, entity_type, entity_id FROM exceptions WHERE last_run_id = ? ORDER BY id",
            (run_id,),
        )
    )


def get_payment(conn: sqlite3.Connection, payment_id: str) -> Record | None:
    return _one(
        conn.execute(f"SELECT {_PAYMENT_COLUMNS} FROM payments WHERE id = ?", (payment_id,))
    )


def payments_for_order(conn: sqlite3.Connection, order_id: str) -> list[Record]:
    return _rows(
        conn.execute(
            f"SELECT {_PAYMENT_COLUMNS} FROM payments WHERE order_id = ? ORDER BY id LIMIT ?",
            (order_id, MAX_ROWS),
        )
    )


def get_refund(conn: sqlite3.Connection, refund_id: str) -> Record | None:
    return _one(conn.execute(f"SELECT {_REFUND_COLUMNS} FROM refunds WHERE id = ?", (refund_id,)))


def get_dispute(conn: sqlite3.Connection, dispute_id: str) -> Record | None:
    return _one(
        conn.execute(f"SELECT {_DISPUTE_COLUMNS} FROM disputes WHERE id = ?", (dispute_id,))
    )


def recon_rows_for_dispute(conn: sqlite3.Connection, dispute_id: str) -> list[Record]:
    """The adjustment rows that move a dispute's money (debits and reversal credits)."""
    return _rows(
        conn.execute(
            f"SELECT {_RECON_COLUMNS} FROM recon_rows WHERE dispute_id = ?"
            " ORDER BY created_at, row_key LIMIT ?",
            (dispute_id, MAX_ROWS),
        )
    )


def month_close(conn: sqlite3.Connection, month: str) -> Record | None:
    """When `month` ('YYYY-MM', IST) was closed (Books), or None while it is open."""
    return _one(conn.execute("SELECT month, closed_at FROM month_closes WHERE month = ?", (month,)))


def get_settlement(conn: sqlite3.Connection, settlement_id: str) -> Record | None:
    return _one(
        conn.execute(
            f"SELECT {_SETTLEMENT_COLUMNS} FROM settlements WHERE id = ?", (settlement_id,)
        )
    )


def settlements_by_utr(conn: sqlite3.Connection, utr: str) -> list[Record]:
    return _rows(
        conn.execute(
            f"SELECT {_SETTLEMENT_COLUMNS} FROM settlements WHERE upper(utr) = upper(?)"
            " ORDER BY id LIMIT ?",
            (utr, MAX_ROWS),
        )
    )


def settlements_by_amount(conn: sqlite3.Connection, amount: int) -> list[Record]:
    return _rows(
        conn.execute(
            f"SELECT {_SETTLEMENT_COLUMNS} FROM settlements WHERE amount = ? ORDER BY id LIMIT ?",
            (amount, MAX_ROWS),
        )
    )


def recon_rows_for_entity(conn: sqlite3.Connection, entity_id: str) -> list[Record]:
    """Rows whose entity_id is `entity_id`, or whose row_key is (recon_row exceptions)."""
    return _rows(
        conn.execute(
            f"SELECT {_RECON_COLUMNS} FROM recon_rows WHERE entity_id = ? OR row_key = ?"
            " ORDER BY row_key LIMIT ?",
            (entity_id, entity_id, MAX_ROWS),
        )
    )


def recon_rows_for_settlement(conn: sqlite3.Connection, settlement_id: str) -> list[Record]:
    return _rows(
        conn.execute(
            f"SELECT {_RECON_COLUMNS} FROM recon_rows WHERE settlement_id = ?"
            " ORDER BY row_key LIMIT ?",
            (settlement_id, MAX_ROWS),
        )
    )


def settlement_totals(conn: sqlite3.Connection, settlement_id: str) -> Record:
    """Σ credit, Σ debit and row counts by type over a settlement's recon rows (all rows)."""
    total = _one(
        conn.execute(
            "SELECT count(*) AS rows, coalesce(sum(credit), 0) AS sum_credit,"
            " coalesce(sum(debit), 0) AS sum_debit FROM recon_rows WHERE settlement_id = ?",
            (settlement_id,),
        )
    )
    by_type = _rows(
        conn.execute(
            "SELECT type, count(*) AS rows, coalesce(sum(credit), 0) AS credit,"
            " coalesce(sum(debit), 0) AS debit FROM recon_rows WHERE settlement_id = ?"
            " GROUP BY type ORDER BY type",
            (settlement_id,),
        )
    )
    result: Record = dict(total or {"rows": 0, "sum_credit": 0, "sum_debit": 0})
    result["by_type"] = by_type
    return result


def bank_line(conn: sqlite3.Connection, line_id: str) -> Record | None:
    return _one(conn.execute(f"SELECT {_BANK_COLUMNS} FROM bank_lines WHERE id = ?", (line_id,)))


def bank_lines_by_utr(conn: sqlite3.Connection, utr: str) -> list[Record]:
    return _rows(
        conn.execute(
            f"SELECT {_BANK_COLUMNS} FROM bank_lines WHERE utr = ? ORDER BY id LIMIT ?",
            (utr, MAX_ROWS),
        )
    )


def bank_lines_by_amount(
    conn: sqlite3.Connection, amount: int, date_from: str, date_to: str
) -> list[Record]:
    """Credits of exactly `amount` paise dated within [date_from, date_to] (ISO dates)."""
    return _rows(
        conn.execute(
            f"SELECT {_BANK_COLUMNS} FROM bank_lines WHERE credit = ?"
            " AND txn_date BETWEEN ? AND ? ORDER BY txn_date, id LIMIT ?",
            (amount, date_from, date_to, MAX_ROWS),
        )
    )


def bank_lines_by_date(conn: sqlite3.Connection, date_from: str, date_to: str) -> list[Record]:
    return _rows(
        conn.execute(
            f"SELECT {_BANK_COLUMNS} FROM bank_lines WHERE txn_date BETWEEN ? AND ?"
            " ORDER BY txn_date, id LIMIT ?",
            (date_from, date_to, MAX_ROWS),
        )
    )


def bank_statement_present(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM bank_lines LIMIT 1").fetchone() is not None


def get_run(conn: sqlite3.Connection, run_id: int) -> Record | None:
    return _one(
        conn.execute("SELECT id, as_of, params_json, status FROM runs WHERE id = ?", (run_id,))
    )


def latest_completed_run(conn: sqlite3.Connection) -> Record | None:
    return _one(
        conn.execute(
            "SELECT id, as_of, params_json, status FROM runs WHERE status = 'completed'"
            " ORDER BY id DESC LIMIT 1"
        )
    )


def related_exceptions(
    conn: sqlite3.Connection,
    exception_id: int,
    entity_ids: list[str],
    settlement_ids: list[str],
) -> list[Record]:
    """Other exceptions on the same entities or settlements (any status)."""
    if not entity_ids and not settlement_ids:
        return []
    ids = entity_ids or [""]
    settlements = settlement_ids or [""]
    id_marks = ", ".join("?" for _ in ids)
    settlement_marks = ", ".join("?" for _ in settlements)
    return _rows(
        conn.execute(
            f"SELECT {_EXCEPTION_COLUMNS} FROM exceptions WHERE id <> ? AND"
            f" (entity_id IN ({id_marks}) OR settlement_id IN ({settlement_marks})"
            f" OR (entity_type = 'settlement' AND entity_id IN ({settlement_marks})))"
            " ORDER BY id LIMIT ?",
            (exception_id, *ids, *settlements, *settlements, MAX_ROWS),
        )
    )


def exception_outcomes(conn: sqlite3.Connection, run_id: int) -> list[Record]:
    """The EXCEPTION outcomes of one run (the evaluation investigates these)."""
    return _rows(
        conn.execute(
            f"SELECT {_OUTCOME_COLUMNS} FROM outcomes WHERE run_id = ? AND status = 'EXCEPTION'"
            " ORDER BY entity_type, entity_id",
            (run_id,),
        )
    )


# --- the investigator's own state --------------------------------------------------------


def cache_get(conn: sqlite3.Connection, evidence_hash: str) -> Record | None:
    return _one(
        conn.execute(
            "SELECT evidence_hash, exception_id, model, answer_json, tokens, created_at"
            " FROM investigation_cache WHERE evidence_hash = ?",
            (evidence_hash,),
        )
    )


def cache_put(
    conn: sqlite3.Connection,
    *,
    evidence_hash: str,
    exception_id: int,
    model: str,
    answer_json: str,
    tokens: int,
    now: int,
) -> None:
    conn.execute(
        "INSERT INTO investigation_cache"
        " (evidence_hash, exception_id, model, answer_json, tokens, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (evidence_hash) DO UPDATE SET exception_id = excluded.exception_id,"
        " model = excluded.model, answer_json = excluded.answer_json,"
        " tokens = excluded.tokens, created_at = excluded.created_at",
        (evidence_hash, exception_id, model, answer_json, tokens, now),
    )


def tokens_used_on(conn: sqlite3.Connection, day: str) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(total_tokens), 0) FROM llm_token_usage WHERE day = ?", (day,)
    ).fetchone()
    return int(row[0])


def add_token_usage(
    conn: sqlite3.Connection,
    *,
    day: str,
    model: str,
    prompt_tokens: int,
    output_tokens: int,
    total_tokens: int,
) -> None:
    conn.execute(
        "INSERT INTO llm_token_usage (day, model, calls, prompt_tokens, output_tokens,"
        " total_tokens) VALUES (?, ?, 1, ?, ?, ?)"
        " ON CONFLICT (day, model) DO UPDATE SET calls = llm_token_usage.calls + 1,"
        " prompt_tokens = llm_token_usage.prompt_tokens + excluded.prompt_tokens,"
        " output_tokens = llm_token_usage.output_tokens + excluded.output_tokens,"
        " total_tokens = llm_token_usage.total_tokens + excluded.total_tokens",
        (day, model, prompt_tokens, output_tokens, total_tokens),
    )


def breaker_state(conn: sqlite3.Connection, model: str) -> Record | None:
    return _one(
        conn.execute(
            "SELECT model, consecutive_failures, open_until, last_error, updated_at"
            " FROM llm_circuit_breaker WHERE model = ?",
            (model,),
        )
    )


def breaker_record_failure(
    conn: sqlite3.Connection,
    *,
    model: str,
    error: str,
    now: int,
    threshold: int,
    cooldown_seconds: int,
) -> Record:
    """Count one more consecutive failure; open the breaker when the count reaches
    `threshold` (the count restarts so the model gets a fresh trial after the cool-down)."""
    conn.execute(
        "INSERT INTO llm_circuit_breaker (model, consecutive_failures, open_until, last_error,"
        " updated_at) VALUES (?, 1, 0, ?, ?)"
        " ON CONFLICT (model) DO UPDATE SET"
        " consecutive_failures = llm_circuit_breaker.consecutive_failures + 1,"
        " last_error = excluded.last_error, updated_at = excluded.updated_at",
        (model, error, now),
    )
    conn.execute(
        "UPDATE llm_circuit_breaker SET open_until = ?, consecutive_failures = 0"
        " WHERE model = ? AND consecutive_failures >= ?",
        (now + cooldown_seconds, model, threshold),
    )
    state = breaker_state(conn, model)
    assert state is not None
    return state


def breaker_record_success(conn: sqlite3.Connection, *, model: str, now: int) -> None:
    conn.execute(
        "INSERT INTO llm_circuit_breaker (model, consecutive_failures, open_until, updated_at)"
        " VALUES (?, 0, 0, ?) ON CONFLICT (model) DO UPDATE SET consecutive_failures = 0,"
        " open_until = 0, last_error = NULL, updated_at = excluded.updated_at",
        (model, now),
    )


# --- instant settlements and Route transfers (docs/engine.md, beyond the spec) -----------

_INSTANT_COLUMNS = (
    "id, amount_requested, amount_settled, amount_pending, amount_reversed, fees, tax,"
    " currency, status, created_at"
)
_PAYOUT_COLUMNS = (
    "id, instant_settlement_id, amount, amount_settled, fees, tax, utr, status, created_at,"
    " processed_at, reversed_at"
)
_TRANSFER_COLUMNS = (
    "id, source, recipient, amount, currency, amount_reversed, status, on_hold, on_hold_until,"
    " recipient_settlement_id, created_at"
)


def get_instant_settlement(conn: sqlite3.Connection, settlement_id: str) -> Record | None:
    return _one(
        conn.execute(
            f"SELECT {_INSTANT_COLUMNS} FROM instant_settlements WHERE id = ?", (settlement_id,)
        )
    )


def instant_payouts(conn: sqlite3.Connection, settlement_id: str) -> list[Record]:
    return _rows(
        conn.execute(
            f"SELECT {_PAYOUT_COLUMNS} FROM instant_payouts WHERE instant_settlement_id = ?"
            " ORDER BY id LIMIT ?",
            (settlement_id, MAX_ROWS),
        )
    )


def get_transfer(conn: sqlite3.Connection, transfer_id: str) -> Record | None:
    return _one(
        conn.execute(f"SELECT {_TRANSFER_COLUMNS} FROM transfers WHERE id = ?", (transfer_id,))
    )


def transfer_reversal_rows(conn: sqlite3.Connection, transfer_id: str) -> list[Record]:
    """Recon rows reversing a transfer: any row naming it in `transfer_id` (other than a
    transfer row), or a `reversal` row whose entity_id is the transfer."""
    return _rows(
        conn.execute(
            f"SELECT {_RECON_COLUMNS}, transfer_id FROM recon_rows"
            " WHERE (transfer_id = ? AND type <> 'transfer')"
            " OR (type = 'reversal' AND entity_id = ? AND coalesce(transfer_id, '') = '')"
            " ORDER BY row_key LIMIT ?",
            (transfer_id, transfer_id, MAX_ROWS),
        )
    )
