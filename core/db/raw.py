"""SQL for the raw tables (payments, refunds, settlements, recon_rows, bank_lines) and imports.

Writes are bulk (`executemany`), parameterised upserts by primary key, so loading the same
rows again never duplicates them. The caller owns the transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from core.dataset import (
    BANK_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    Dataset,
)

# Dataset attribute -> (table, primary key, columns). Column names are fixed identifiers
# from core.dataset, never user input, so building the statement text from them is safe.
RAW_TABLES: dict[str, tuple[str, str, dict[str, str]]] = {
    "payments": ("payments", "id", PAYMENT_COLUMNS),
    "refunds": ("refunds", "id", REFUND_COLUMNS),
    "settlements": ("settlements", "id", SETTLEMENT_COLUMNS),
    "recon": ("recon_rows", "row_key", RECON_COLUMNS),
    "bank": ("bank_lines", "id", BANK_COLUMNS),
}
BATCH_ROWS = 50_000
# Page cache for bulk writes (KiB, negative = size): random text keys thrash the default 2 MB.
BULK_CACHE_KIB = 262_144


@dataclass(frozen=True)
class ImportRecord:
    """A row of `imports`: id, content hash, and whether the raw tables held only this import
    right after it (a replace, or the first import into empty tables)."""

    id: int
    content_hash: str
    exclusive: bool
    has_bank_statement: bool


def latest_import(conn: sqlite3.Connection) -> ImportRecord | None:
    row = conn.execute(
        "SELECT id, content_hash, report_json FROM imports ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    report = json.loads(row[2] or "{}")
    return ImportRecord(
        id=int(row[0]),
        content_hash=str(row[1]),
        exclusive=bool(report.get("exclusive", False)),
        has_bank_statement=bool(report.get("has_bank_statement", False)),
    )


def raw_tables_empty(conn: sqlite3.Connection) -> bool:
    for table, _, _ in RAW_TABLES.values():
        if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
            return False
    return True


def clear_raw_tables(conn: sqlite3.Connection) -> None:
    """Empty the five raw tables. Exceptions, runs and the audit trail are untouched."""
    for table, _, _ in RAW_TABLES.values():
        conn.execute(f"DELETE FROM {table}")


def insert_import(
    conn: sqlite3.Connection,
    *,
    source: str,
    location: str,
    content_hash: str,
    imported_at: int,
    report_json: str,
) -> int:
    cursor = conn.execute(
        "INSERT INTO imports (source, location, content_hash, imported_at, report_json)"
        " VALUES (?, ?, ?, ?, ?)",
        (source, location, content_hash, imported_at, report_json),
    )
    return int(cursor.lastrowid or 0)


def update_import_report(conn: sqlite3.Connection, import_id: int, report_json: str) -> None:
    conn.execute("UPDATE imports SET report_json = ? WHERE id = ?", (report_json, import_id))


def _python_column(series: pd.Series) -> list[Any]:
    """A column as Python values for sqlite3: NA -> None, numpy scalars -> int/bool/str."""
    dtype = str(series.dtype)
    if dtype == "int64":
        return series.to_numpy(dtype=np.int64).tolist()  # type: ignore[no-any-return]
    if dtype == "bool":
        return series.to_numpy(dtype=np.int64).tolist()  # type: ignore[no-any-return]
    if dtype == "Int64":
        values = series.to_numpy(dtype=np.int64, na_value=0).tolist()
        missing = series.isna().to_numpy()
        if missing.any():
            for i in np.flatnonzero(missing).tolist():
                values[i] = None
        return values  # type: ignore[no-any-return]
    return series.astype(object).where(series.notna(), None).tolist()  # type: ignore[no-any-return]


def _rows(frame: pd.DataFrame, columns: list[str], import_id: int) -> Iterator[tuple[Any, ...]]:
    data = [_python_column(frame[c]) for c in columns]
    ids = [import_id] * len(frame)
    return zip(*data, ids, strict=True)


@contextmanager
def bulk_writes(conn: sqlite3.Connection) -> Iterator[None]:
    """A larger page cache while loading many rows; the connection's setting is restored."""
    previous = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(previous)}")


def upsert_frame(
    conn: sqlite3.Connection, attribute: str, frame: pd.DataFrame, import_id: int
) -> int:
    """Insert or update every row of a Dataset frame into its raw table; returns the row count."""
    table, key, spec = RAW_TABLES[attribute]
    columns = list(spec)
    names = ", ".join([*columns, "import_id"])
    marks = ", ".join("?" for _ in range(len(columns) + 1))
    updates = ", ".join(f"{c} = excluded.{c}" for c in [*columns, "import_id"] if c != key)
    sql = (
        f"INSERT INTO {table} ({names}) VALUES ({marks})"
        f" ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )
    rows = _rows(frame, columns, import_id)
    while True:
        batch = [row for _, row in zip(range(BATCH_ROWS), rows, strict=False)]
        if not batch:
            break
        conn.executemany(sql, batch)
    return len(frame)


def _column(values: tuple[Any, ...] | list[Any], dtype: str) -> pd.Series:
    """A fetched column to the Dataset dtype, through Arrow (fast for strings and NULLs)."""
    if dtype == "bool":
        return pd.Series(np.asarray(values, dtype=np.int64) != 0, dtype="bool")
    if dtype == "int64":
        return pd.Series(np.asarray(values, dtype=np.int64), dtype="int64")
    if dtype == "Int64":
        ints = pa.array(values, type=pa.int64())
        return pd.Series(ints.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get))
    strings = pa.array(values, type=pa.string())
    return pd.Series(strings.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get))


def _frame(
    conn: sqlite3.Connection, table: str, columns: dict[str, str], order: str
) -> pd.DataFrame:
    names = list(columns)
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: sqlite3.Row is slow for millions of rows
    records = cursor.execute(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}").fetchall()
    cursor.close()
    transposed = list(zip(*records, strict=True)) if records else [() for _ in names]
    data = {name: _column(transposed[i], columns[name]) for i, name in enumerate(names)}
    return pd.DataFrame(data, columns=names)


def read_dataset(conn: sqlite3.Connection) -> Dataset:
    """The raw tables as a Dataset (same columns and dtypes as the importer builds).

    has_bank_statement is True when bank_lines has rows, or when the latest import carried a
    bank statement (one with no transactions still means "bank checks apply").
    """
    frames = {
        attribute: _frame(conn, table, spec, "rowid")
        for attribute, (table, _, spec) in RAW_TABLES.items()
        if attribute != "bank"
    }
    bank = _frame(conn, "bank_lines", BANK_COLUMNS, "file, line_no")
    latest = latest_import(conn)
    has_bank = len(bank) > 0 or (latest is not None and latest.has_bank_statement)
    return Dataset(
        payments=frames["payments"],
        refunds=frames["refunds"],
        settlements=frames["settlements"],
        recon=frames["recon"],
        bank=bank,
        has_bank_statement=has_bank,
    )
