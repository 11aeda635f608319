"""SQL of the Books page's stored ledger (migration 0099, docs/books.md "The stored ledger"):
its state row, its per-day lines and its unexplained events by day, and the version of the
raw tables it is checked against."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from core.db.backend import is_postgres

# The raw tables the ledger reads (core.books.rollforward.ledger_events). Fixed names.
WATCHED_TABLES: tuple[str, ...] = (
    "payments",
    "refunds",
    "settlements",
    "recon_rows",
    "instant_settlements",
    "instant_payouts",
    "disputes",
    "transfers",  # migration 0119 (ledger FORMAT 5)
)
DAY_COLUMNS = ("day", "line", "amount", "events")
UNEXPLAINED_COLUMNS = ("day", "entity_type", "entity_id", "amount")
_ROWS_PER_BATCH = 10_000


def source_version(conn: sqlite3.Connection) -> str:
    """What the raw data stand at: the imports (count and newest id) and, on SQLite, each
    watched table's max(rowid) (an insert moves it; one B-tree seek each). On PostgreSQL
    the statement triggers of migration 0099 see inserts instead."""
    row = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM imports").fetchone()
    parts = [f"imports {int(row[0])}:{int(row[1])}"]
    if not is_postgres(conn):
        for table in WATCHED_TABLES:
            top = conn.execute(f"SELECT coalesce(max(rowid), 0) FROM {table}").fetchone()
            parts.append(f"{table} {int(top[0])}")
    return "; ".join(parts)


def ledger_state(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The state row (run_id, source_version, changed, built_at, events, format), or None."""
    row = conn.execute(
        "SELECT run_id, source_version, changed, built_at, events, format"
        " FROM books_ledger WHERE id = 1"
    ).fetchone()
    if row is None:
        return None
    return {
        "run_id": None if row[0] is None else int(row[0]),
        "source_version": str(row[1]),
        "changed": int(row[2]),
        "built_at": int(row[3]),
        "events": int(row[4]),
        "format": int(row[5]),
    }


def begin_build(conn: sqlite3.Connection, *, now: int, format_version: int) -> None:
    """Mark the ledger as being rebuilt: no version (so it is stale until `finish_build`)
    and `changed` cleared, so a raw change from here on marks it again."""
    conn.execute(
        "INSERT INTO books_ledger (id, run_id, source_version, changed, built_at, events, format)"
        " VALUES (1, NULL, '', 0, ?, 0, ?) ON CONFLICT (id) DO UPDATE SET run_id = NULL,"
        " source_version = '', changed = 0, built_at = excluded.built_at, events = 0,"
        " format = excluded.format",
        (now, format_version),
    )


def _batches(rows: Iterable[Sequence[Any]]) -> Iterable[list[Sequence[Any]]]:
    batch: list[Sequence[Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _ROWS_PER_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _insert(
    conn: sqlite3.Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    if is_postgres(conn):
        conn.copy_rows(table, columns, rows)  # type: ignore[attr-defined]
        return
    marks = ", ".join("?" for _ in columns)
    statement = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
    for batch in _batches(rows):
        conn.executemany(statement, batch)


def finish_build(
    conn: sqlite3.Connection,
    *,
    run_id: int | None,
    version: str,
    events: int,
    days: Iterable[tuple[str, str, int, int]],
    unexplained: Iterable[tuple[str, str, str, int]],
) -> None:
    """Replace the stored lines and record what they were derived from, inside the caller's
    transaction. `changed` is left as it is: a raw change since `begin_build` keeps the
    ledger stale."""
    conn.execute("DELETE FROM books_ledger_days")
    conn.execute("DELETE FROM books_ledger_unexplained")
    _insert(conn, "books_ledger_days", DAY_COLUMNS, days)
    _insert(conn, "books_ledger_unexplained", UNEXPLAINED_COLUMNS, unexplained)
    conn.execute(
        "UPDATE books_ledger SET run_id = ?, source_version = ?, events = ? WHERE id = 1",
        (run_id, version, events),
    )


def read_days(conn: sqlite3.Connection) -> pd.DataFrame:
    """Every stored (day, line, amount, events), day as ISO text."""
    rows = conn.execute("SELECT day, line, amount, events FROM books_ledger_days").fetchall()
    return pd.DataFrame([tuple(r) for r in rows], columns=list(DAY_COLUMNS))


def read_unexplained(conn: sqlite3.Connection, before: str | None) -> pd.DataFrame:
    """The stored unexplained (day, entity_type, entity_id, amount) with day < `before`
    (ISO date; None: all), a range on the day index."""
    if before is None:
        rows = conn.execute(
            "SELECT day, entity_type, entity_id, amount FROM books_ledger_unexplained"
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT day, entity_type, entity_id, amount FROM books_ledger_unexplained"
            " WHERE day < ?",
            (before,),
        ).fetchall()
    return pd.DataFrame([tuple(r) for r in rows], columns=list(UNEXPLAINED_COLUMNS))


def payment_span(conn: sqlite3.Connection) -> tuple[int | None, int | None]:
    """The first and the last payment's created_at (index seeks on payments_created)."""
    row = conn.execute(
        "SELECT (SELECT min(created_at) FROM payments), (SELECT max(created_at) FROM payments)"
    ).fetchone()
    return (
        None if row[0] is None else int(row[0]),
        None if row[1] is None else int(row[1]),
    )


def imports_after(conn: sqlite3.Connection, import_id: int) -> list[int]:
    """The ids of the imports after `import_id`, in order (a range on the primary key)."""
    rows = conn.execute("SELECT id FROM imports WHERE id > ? ORDER BY id", (import_id,))
    return [int(r[0]) for r in rows]


def has_rowids(conn: sqlite3.Connection) -> bool:
    """Whether `source_version` holds each watched table's max(rowid) (SQLite)."""
    return not is_postgres(conn)


def rows_after(conn: sqlite3.Connection, table: str, rowid: int) -> int:
    """How many rows of watched `table` have a rowid above `rowid` (SQLite: a range on
    the rowid, the rows inserted since `source_version` read it)."""
    if table not in WATCHED_TABLES:
        raise ValueError(f"not a watched table: {table}")
    return int(
        conn.execute(f"SELECT count(*) FROM {table} WHERE rowid > ?", (rowid,)).fetchone()[0]
    )


def apply_change(
    conn: sqlite3.Connection,
    *,
    days: Iterable[tuple[str, str, int, int]],
    unexplained: Sequence[tuple[str, str, str, int]],
    run_id: int,
    version: str,
    events: int,
    now: int,
) -> None:
    """Add a change to the stored lines (migration 0100), inside the caller's transaction:
    each (day, line, amount, events) added to its line (a line left with no event
    deleted), each (day, entity_type, entity_id, amount) added to its sum (a sum left at
    zero deleted); then record the ledger as derived from `run_id` and `version`, with
    `events` more events, and clear `changed`."""
    conn.executemany(
        "INSERT INTO books_ledger_days (day, line, amount, events) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (day, line) DO UPDATE SET"
        " amount = books_ledger_days.amount + excluded.amount,"
        " events = books_ledger_days.events + excluded.events",
        list(days),
    )
    conn.execute("DELETE FROM books_ledger_days WHERE events <= 0")
    conn.executemany(
        "INSERT INTO books_ledger_unexplained (day, entity_type, entity_id, amount)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (day, entity_type, entity_id) DO UPDATE SET"
        " amount = books_ledger_unexplained.amount + excluded.amount",
        unexplained,
    )
    conn.executemany(
        "DELETE FROM books_ledger_unexplained"
        " WHERE day = ? AND entity_type = ? AND entity_id = ? AND amount = 0",
        [row[:3] for row in unexplained],
    )
    conn.execute(
        "UPDATE books_ledger SET run_id = ?, source_version = ?, events = events + ?,"
        " changed = 0, built_at = ? WHERE id = 1",
        (run_id, version, events, now),
    )
