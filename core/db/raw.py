"""SQL for the raw tables (payments, refunds, settlements, recon_rows, bank_lines) and imports.

Writes are bulk (`executemany`) and parameterised, with upsert-by-primary-key semantics, so
loading the same rows again never duplicates them. The caller owns the transaction.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from core.calendar import IST, month_bounds
from core.columns import arrow
from core.dataset import (
    BANK_COLUMNS,
    DISPUTE_COLUMNS,
    INSTANT_PAYOUT_COLUMNS,
    INSTANT_SETTLEMENT_COLUMNS,
    PAYMENT_COLUMNS,
    RECON_COLUMNS,
    REFUND_COLUMNS,
    SETTLEMENT_COLUMNS,
    TRANSFER_COLUMNS,
    Dataset,
)
from core.db import pg_bulk
from core.db.backend import is_postgres, lock_waits_unbounded
from core.db.connection import transaction
from core.db.staging import (
    StagedTable,
    arrow_column,
    bulk_cache_kib,
    copy_table,
    table_schema,
)
from core.rowmac import MAC_COLUMN, macs_of_arrays, row_macs

# Dataset attribute -> (table, primary key, columns). Column names are fixed identifiers
# from core.dataset, never user input, so building the statement text from them is safe.
RAW_TABLES: dict[str, tuple[str, str, dict[str, str]]] = {
    "payments": ("payments", "id", PAYMENT_COLUMNS),
    "refunds": ("refunds", "id", REFUND_COLUMNS),
    "settlements": ("settlements", "id", SETTLEMENT_COLUMNS),
    "recon": ("recon_rows", "row_key", RECON_COLUMNS),
    "bank": ("bank_lines", "id", BANK_COLUMNS),
    "instant_settlements": ("instant_settlements", "id", INSTANT_SETTLEMENT_COLUMNS),
    "instant_payouts": ("instant_payouts", "id", INSTANT_PAYOUT_COLUMNS),
    "disputes": ("disputes", "id", DISPUTE_COLUMNS),
    "transfers": ("transfers", "id", TRANSFER_COLUMNS),
}
BATCH_ROWS = 50_000
# Rows per INSERT statement: one statement step from Python per 64 rows instead of per row
# (measured with callgrind on 100k rows: 11-13% fewer instructions than one row each).
ROWS_PER_STATEMENT = 64


@dataclass(frozen=True)
class ImportRecord:
    """A row of `imports`: id, content hash, and whether the raw tables held only this import
    right after it (a replace, or the first import into empty tables)."""

    id: int
    content_hash: str
    exclusive: bool


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
    )


def holds_import(conn: sqlite3.Connection, content_hash: str, *, replace: bool) -> bool:
    """Whether storing content `content_hash` again would change nothing: the latest import
    has that content, and (for a replace) the raw tables held only it right after."""
    latest = latest_import(conn)
    return (
        latest is not None
        and latest.content_hash == content_hash
        and (latest.exclusive or not replace)
    )


def latest_import_id(conn: sqlite3.Connection) -> int:
    """The id of the newest `imports` row, 0 when there is none (ids start at 1). A run
    records it, never NULL: NULL on a run means one stored before migration 0106, which
    the next day does not carry forward (core.pipeline._base_run_reason)."""
    row = conn.execute("SELECT max(id) FROM imports").fetchone()
    return 0 if row[0] is None else int(row[0])


def reconciled_through(conn: sqlite3.Connection, read_at: int, stored: int | None) -> int:
    """The last import a run's data included, every import before it too (runs.
    through_import_id): `stored`, the import the run stored itself, when no other import
    came between `read_at` (`latest_import_id` taken before the run read the stored state;
    0: none) and it; else `read_at`, so the next day's run sees the one between as not
    reconciled."""
    if stored is None or stored <= read_at:
        return read_at  # nothing stored by the run (or its content was the latest import's)
    row = conn.execute(
        "SELECT count(*) FROM imports WHERE id > ? AND id < ?", (read_at, stored)
    ).fetchone()
    return stored if int(row[0]) == 0 else read_at


def raw_tables_empty(conn: sqlite3.Connection) -> bool:
    return all(_table_empty(conn, table) for table, _, _ in RAW_TABLES.values())


def _table_empty(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is None


@dataclass(frozen=True)
class SchemaObject:
    """One entry of sqlite_master that belongs to a table: its type ('table', 'index' or
    'trigger'), name, and the CREATE statement exactly as the schema keeps it."""

    type: str
    name: str
    sql: str


_CREATE_ORDER = {"table": 0, "index": 1, "trigger": 2}


def next_import_id(conn: sqlite3.Connection) -> int:
    """The id the next `imports` row will get (INTEGER PRIMARY KEY: one above the largest)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) + 1 FROM imports").fetchone()[0])


def _schema_objects(conn: sqlite3.Connection, table: str) -> list[SchemaObject]:
    """The table and its explicitly created indexes and triggers, in creation order.
    (Indexes behind PRIMARY KEY / UNIQUE have no SQL: CREATE TABLE makes them.)"""
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master"
        " WHERE tbl_name = ? AND sql IS NOT NULL ORDER BY rowid",
        (table,),
    ).fetchall()
    objects = [SchemaObject(str(r[0]), str(r[1]), str(r[2])) for r in rows]
    return sorted(objects, key=lambda o: _CREATE_ORDER.get(o.type, 3))


def clear_raw_tables(conn: sqlite3.Connection) -> None:
    """Empty the raw tables. Exceptions, runs and the audit trail are untouched.

    Each table is dropped and created again from its own schema text (indexes and triggers
    included), inside the caller's transaction. With foreign keys on, `DELETE FROM` would
    remove a raw table (a child of `imports`) row by row through every index; dropping frees
    its pages at once, and the schema afterwards is the same as before.
    """
    if is_postgres(conn):  # one statement; the raw tables' schema is untouched
        tables = ", ".join(table for table, _, _ in RAW_TABLES.values())
        with lock_waits_unbounded(conn):  # its lock waits for readers, not the busy timeout
            conn.execute(f"TRUNCATE {tables}")
        return
    for table, _, _ in RAW_TABLES.values():
        objects = _schema_objects(conn, table)
        conn.execute(f"DROP TABLE {table}")
        for obj in objects:
            conn.execute(obj.sql)


def insert_import(
    conn: sqlite3.Connection,
    *,
    source: str,
    location: str,
    content_hash: str,
    imported_at: int,
    report_json: str,
    import_id: int | None = None,
) -> int:
    """Record an import; returns its id. With `import_id` (rows were staged under the id
    `next_import_id` promised) that id is taken, or sqlite3.IntegrityError raised when
    another import took it meanwhile."""
    if is_postgres(conn):  # the identity's next value (no staging files on PostgreSQL)
        row = conn.execute(
            "INSERT INTO imports (id, source, location, content_hash, imported_at, report_json)"
            " VALUES (coalesce(?, nextval(pg_get_serial_sequence('imports', 'id'))),"
            " ?, ?, ?, ?, ?) RETURNING id",
            (import_id, source, location, content_hash, imported_at, report_json),
        ).fetchone()
        return int(row[0])
    cursor = conn.execute(
        "INSERT INTO imports (id, source, location, content_hash, imported_at, report_json)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (import_id, source, location, content_hash, imported_at, report_json),
    )
    return int(cursor.lastrowid or 0)


def update_import_report(conn: sqlite3.Connection, import_id: int, report_json: str) -> None:
    conn.execute("UPDATE imports SET report_json = ? WHERE id = ?", (report_json, import_id))


# sqlite3 binds None through its adapter lookup, several times slower than an int or a str,
# and raw tables are full of NULLs (recon rows: about four per row). So a missing value is
# bound as a sentinel of the other type, which the statement's nullif() turns into NULL:
# 0 in a text column, '' in an integer column. SQLite never finds an integer equal to a text,
# so no real value can be mistaken for the sentinel.
TEXT_NULL = 0
INTEGER_NULL = ""


def _values(series: pd.Series, dtype: str) -> np.ndarray[Any, np.dtype[np.object_]]:
    """A column as an object array of Python int / str values for a column of Dataset dtype
    `dtype`, missing values as that column's sentinel. A Series of another dtype is cast
    first, so a sentinel is never confused with a value of the wrong type."""
    if dtype in ("int64", "bool"):
        return series.to_numpy(dtype=np.int64).astype(object)
    if dtype == "Int64":
        if str(series.dtype) != "Int64":
            series = series.astype("Int64")
        values = series.to_numpy(dtype=np.int64, na_value=0).astype(object)
        sentinel: int | str = INTEGER_NULL
    else:
        if not isinstance(series.dtype, pd.StringDtype):
            series = series.astype("string")
        values = series.to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
        sentinel = TEXT_NULL
    missing = series.isna().to_numpy()
    if missing.any():
        values[missing] = sentinel
    return values  # type: ignore[no-any-return]


def _bound_value(dtype: str) -> str:
    """The VALUES expression of one column: its parameter, sentinel turned back into NULL."""
    if dtype == "Int64":
        return f"nullif(?, '{INTEGER_NULL}')"
    if dtype in ("int64", "bool"):
        return "?"
    return f"nullif(?, {TEXT_NULL})"


def _parameters(
    frame: pd.DataFrame,
    columns: dict[str, str],
    import_id: int,
    macs: np.ndarray[Any, np.dtype[np.object_]],
    rows: range,
    rows_per_statement: int,
) -> Iterator[list[Any]]:
    """Flat parameter lists of `rows_per_statement` rows each (every column, then import_id,
    then the row's MAC), for the frame rows in `rows`. Converted a batch at a time, so only
    one batch of Python objects is alive while sqlite3 consumes them."""
    series = [(frame[name], dtype) for name, dtype in columns.items()]
    width = len(columns) + 2
    step = BATCH_ROWS - BATCH_ROWS % rows_per_statement
    for start in range(rows.start, rows.stop, step):
        stop = min(start + step, rows.stop)
        block = np.empty((stop - start, width), dtype=object)
        for j, (column, dtype) in enumerate(series):
            block[:, j] = _values(column.iloc[start:stop], dtype)
        block[:, -2] = import_id
        block[:, -1] = macs[start:stop]
        yield from block.reshape(-1, rows_per_statement * width).tolist()


@contextmanager
def bulk_writes(conn: sqlite3.Connection, row_bytes: int) -> Iterator[None]:
    """A page cache sized for loading `row_bytes` of rows (core.db.staging.bulk_cache_kib);
    the connection's setting is restored. (PostgreSQL: nothing to tune per connection.)"""
    if is_postgres(conn):
        yield
        return
    previous = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute(f"PRAGMA cache_size = {-bulk_cache_kib(row_bytes)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(previous)}")


# An upsert into tables that hold rows already (a day's load into 1M-row tables) probes and
# inserts at random places of every key index (ids are random): with a cache sized from the
# day's rows (16 MiB) SQLite spills and re-reads index pages over and over. Sized from the
# database, up to this, every page it touches stays in memory and is written once at
# commit (118,000 rows into 1M-row tables: 5.2 instead of 7.6 CPU s, 500 instead of 300 MB).
UPSERT_CACHE_MAX_KIB = 1_048_576


@contextmanager
def upsert_writes(conn: sqlite3.Connection) -> Iterator[None]:
    """`bulk_writes` for upserts into tables that hold rows: a page cache as large as the
    database (at most UPSERT_CACHE_MAX_KIB); the connection's setting is restored."""
    if is_postgres(conn):
        yield
        return
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    previous = conn.execute("PRAGMA cache_size").fetchone()[0]
    kib = max(bulk_cache_kib(0), min(UPSERT_CACHE_MAX_KIB, pages * size // 1024))
    conn.execute(f"PRAGMA cache_size = {-kib}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(previous)}")


def _statement(attribute: str, rows: int, *, upsert: bool, absent: Sequence[str] = ()) -> str:
    """INSERT of `rows` rows (every column plus import_id) into a raw table; with `upsert`,
    a row whose key is stored already updates that row instead (`absent`: columns it
    keeps, `_upsert_clause`)."""
    table, _, spec = RAW_TABLES[attribute]
    columns = [*spec, "import_id", MAC_COLUMN]
    row = "(" + ", ".join([*(_bound_value(d) for d in spec.values()), "?", "?"]) + ")"
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * rows)}"
    return sql + _upsert_clause(attribute, absent) if upsert else sql


def _upsert_clause(attribute: str, absent: Sequence[str] = ()) -> str:
    """The ON CONFLICT clause of an upsert into a raw table: a row whose key is stored
    already updates that row (every column, import_id included) when its content changed.

    `absent`: columns the rows' files did not carry (core.dataset.Dataset.absent): left out
    of the SET and of the comparison, so the stored row keeps its values of them and a row
    that differs only there is left as it is. Empty (the common case: a file of every
    column), the clause is the one of always."""
    table, key, spec = RAW_TABLES[attribute]
    kept = {key, *absent}
    updates = ", ".join(
        f"{c} = excluded.{c}" for c in [*spec, "import_id", MAC_COLUMN] if c not in kept
    )
    content = [c for c in spec if c not in kept]
    return f" ON CONFLICT ({key}) DO UPDATE SET {updates} WHERE {changed_content(table, content)}"


def changed_content(table: str, content: list[str]) -> str:
    """The condition under which an upsert rewrites a stored row: a column of its content
    differs (NULLs compared as values). A row sent again unchanged (exports overlap from
    day to day) is left as it is: none of its index entries are rewritten, no update
    trigger fires (the Books ledger's `changed` mark, migration 0099), and its `import_id`
    stays the import that last changed it."""
    stored = ", ".join(f"{table}.{c}" for c in content)
    sent = ", ".join(f"excluded.{c}" for c in content)
    return f"({stored}) IS NOT ({sent})"


def _insert_rows(
    conn: sqlite3.Connection,
    attribute: str,
    frame: pd.DataFrame,
    import_id: int,
    *,
    upsert: bool,
    absent: Sequence[str] = (),
) -> None:
    """Every row of the frame, ROWS_PER_STATEMENT rows per statement (fewer statements to step
    through from Python), the remainder one row at a time; rows keep the frame's order."""
    table, _, columns = RAW_TABLES[attribute]
    macs = np.array(row_macs(table, frame, columns, import_id), dtype=object)
    whole = len(frame) - len(frame) % ROWS_PER_STATEMENT
    if whole:
        conn.executemany(
            _statement(attribute, ROWS_PER_STATEMENT, upsert=upsert, absent=absent),
            _parameters(frame, columns, import_id, macs, range(0, whole), ROWS_PER_STATEMENT),
        )
    if whole < len(frame):
        conn.executemany(
            _statement(attribute, 1, upsert=upsert, absent=absent),
            _parameters(frame, columns, import_id, macs, range(whole, len(frame)), 1),
        )
    if upsert and absent:
        reseal_rows(conn, attribute, import_id)


# What sqlite3 reports when a row repeats a key (Python 3.11+: IntegrityError.sqlite_errorname).
_KEY_CONFLICTS = frozenset({"SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE"})


def _unique_index_names(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA index_list({table})") if r[2]}


def write_frame(
    conn: sqlite3.Connection,
    attribute: str,
    frame: pd.DataFrame,
    import_id: int,
    *,
    absent: Sequence[str] = (),
) -> int:
    """Store every row of a Dataset frame in its raw table; returns the row count.

    Rows are upserted by key, so loading a row again updates it in place and never
    duplicates it; a stored row keeps its values of the `absent` columns (those the
    frame's files did not carry, Dataset.absent: `_upsert_clause`). Into an empty table (a
    first import, or after `clear_raw_tables`) the same result is reached faster: the
    table's indexes (its unique key included, migration 0010) are dropped, the rows are
    plain INSERTs, and each index is built again by one sort instead of a B-tree insert
    per row. Should the frame itself repeat a key (the importers
    never build such a frame), building the unique index fails and the table is filled
    again by upserts, so the last row for a key wins on either path.
    """
    if frame.empty:
        return 0
    table = RAW_TABLES[attribute][0]
    if is_postgres(conn):  # COPY (core.db.pg_bulk)
        key, spec = RAW_TABLES[attribute][1], RAW_TABLES[attribute][2]
        macs = row_macs(table, frame, spec, import_id)
        blocks = pg_bulk.frame_csv(frame, spec, (import_id,), (macs,))
        # Into an empty table a plain COPY, unless the frame repeats a key (the last wins).
        upsert = bool(frame[key].duplicated().any()) or not _table_empty(conn, table)
        # A large plain COPY: indexes dropped and built after (an upsert needs its key index).
        rebuild = not upsert and pg_bulk.rebuild_worth(conn, table, len(frame), empty=True)
        with pg_bulk.indexes_built_after(conn, table, rebuild=rebuild):
            pg_bulk.copy_frame(
                conn,
                table,
                key,
                [*spec, "import_id", MAC_COLUMN],
                blocks,
                upsert=upsert,
                absent=absent,
            )
        if upsert and absent:
            reseal_rows(conn, attribute, import_id)
        pg_bulk.analyze(conn, table)  # the app role may not ANALYZE itself
        return len(frame)
    if not _table_empty(conn, table):
        _insert_rows(conn, attribute, frame, import_id, upsert=True, absent=absent)
        return len(frame)
    indexes = [o for o in _schema_objects(conn, table) if o.type == "index"]
    unique_names = _unique_index_names(conn, table)
    keys = [i for i in indexes if i.name in unique_names]
    for index in indexes:
        conn.execute(f"DROP INDEX {index.name}")
    try:
        _insert_rows(conn, attribute, frame, import_id, upsert=False)
        for index in keys:
            conn.execute(index.sql)
    except sqlite3.IntegrityError as error:
        if getattr(error, "sqlite_errorname", "") not in _KEY_CONFLICTS:
            raise
        conn.execute(f"DELETE FROM {table}")  # only this frame's rows: the table was empty
        for index in keys:
            if index.name not in _unique_index_names(conn, table):  # not built before the error
                conn.execute(index.sql)
        _insert_rows(conn, attribute, frame, import_id, upsert=True)
    for index in indexes:
        if index not in keys:
            conn.execute(index.sql)
    return len(frame)


# A streamed replace (core.streamed) writes the raw tables window by window: every window
# after the first would be an upsert into indexed tables, a B-tree probe and insert at a
# random place of every index per row (1M payments: the largest step of the build).
# Instead every raw index is dropped once, every window appended by plain INSERTs (rowid
# order, no index touched), and each index built once at the end by one sort.


@dataclass(frozen=True)
class BulkFill:
    """The raw tables being filled by `append_frame` inside `raw_tables_filled_in_bulk`:
    the indexes dropped for it (SQLite schema objects, or the PostgreSQL tables whose
    indexes razorrecon_drop_indexes holds), the tables written to, and those in which a key
    met twice was resolved (the last row kept): they hold fewer rows than were appended."""

    indexes: tuple[SchemaObject, ...]
    rebuilt_pg_tables: tuple[str, ...]
    written: set[str]
    resolved: set[str] = field(default_factory=set)


@contextmanager
def raw_tables_filled_in_bulk(conn: sqlite3.Connection) -> Iterator[BulkFill]:
    """A block that fills the raw tables by `append_frame` with their indexes built once at
    its end, with the same rows as `write_frame` upserts would leave (a key met twice: the
    last row's values, at the first row's place).

    Only inside the caller's transaction (ValueError otherwise), and never committed
    without the indexes. SQLite: every raw index (unique keys included) is dropped here
    and created again at the end; DDL is transactional there, so an error or a kill before
    the commit leaves the database as it was, indexes included (the rollback, or the
    recovery that ignores an uncommitted WAL tail, restores them). PostgreSQL: payments'
    and recon_rows' indexes that back no constraint go through migration 0098's functions,
    whose deferred check refuses a commit without them (their unique keys are such
    indexes: repeated keys are resolved before the build, as on SQLite); the other tables
    keep their primary keys, so an append that repeats a key is redone as an upsert. An
    error inside the block skips the build: the caller's rollback restores the indexes.

    Meant for a replace (right after `clear_raw_tables`): into tables that hold many rows
    the indexes would be built again over all of them."""
    if not conn.in_transaction:
        raise ValueError("raw_tables_filled_in_bulk needs the caller's transaction")
    if is_postgres(conn):
        tables = tuple(t for t, _, _ in RAW_TABLES.values() if t in pg_bulk.REBUILD_TABLES)
        for table in tables:
            pg_bulk.drop_indexes(conn, table)
        fill = BulkFill((), tables, set())
        yield fill
        keys = {t: (k, [*spec, "import_id", MAC_COLUMN]) for t, k, spec in RAW_TABLES.values()}
        for table in tables:
            try:
                with transaction(conn):  # a savepoint: a failed build leaves nothing
                    pg_bulk.build_indexes(conn, table)
            except sqlite3.IntegrityError as error:
                if getattr(error.__cause__, "sqlstate", "") != "23505":  # unique_violation
                    raise
                _keep_last_of_each_key_postgres(conn, table, *keys[table])
                fill.resolved.add(table)
                pg_bulk.build_indexes(conn, table)
        for table in sorted(fill.written):
            pg_bulk.analyze(conn, table)
        return
    by_table = {
        table: [o for o in _schema_objects(conn, table) if o.type == "index"]
        for table, _, _ in RAW_TABLES.values()
    }
    for index in (i for own in by_table.values() for i in own):
        conn.execute(f"DROP INDEX {index.name}")
    fill = BulkFill(tuple(i for own in by_table.values() for i in own), (), set())
    yield fill
    for table, key, spec in RAW_TABLES.values():
        unique = [o for o in by_table[table] if o.sql.upper().startswith("CREATE UNIQUE")]
        for index in unique:
            try:
                with transaction(conn):  # a savepoint: a failed build leaves nothing
                    conn.execute(index.sql)
            except sqlite3.IntegrityError as error:
                if getattr(error, "sqlite_errorname", "") not in _KEY_CONFLICTS:
                    raise
                _keep_last_of_each_key(conn, table, key, [*spec, "import_id", MAC_COLUMN])
                fill.resolved.add(table)
                conn.execute(index.sql)
        for index in by_table[table]:
            if index not in unique:
                conn.execute(index.sql)


def _keep_last_of_each_key(
    conn: sqlite3.Connection, table: str, key: str, columns: list[str]
) -> None:
    """A table (no index on `key`) whose rows repeat a key made like upserts would leave
    it: one row per key, at the first row's place (rowid), with the last row's values."""
    conn.execute("DROP TABLE IF EXISTS temp.raw_repeated_keys")
    conn.execute(
        f"CREATE TEMP TABLE raw_repeated_keys AS SELECT {key} AS k, min(rowid) AS first,"
        f" max(rowid) AS last FROM {table} GROUP BY {key} HAVING count(*) > 1"
    )
    conn.execute("CREATE UNIQUE INDEX temp.raw_repeated_keys_first ON raw_repeated_keys (first)")
    conn.execute("CREATE UNIQUE INDEX temp.raw_repeated_keys_k ON raw_repeated_keys (k)")
    names = ", ".join(c for c in columns if c != key)
    conn.execute(
        f"UPDATE {table} SET ({names}) = (SELECT {names} FROM {table} AS later"
        f" WHERE later.rowid = (SELECT last FROM raw_repeated_keys WHERE k = {table}.{key}))"
        f" WHERE rowid IN (SELECT first FROM raw_repeated_keys)"
    )
    conn.execute(
        f"DELETE FROM {table} WHERE {key} IN (SELECT k FROM raw_repeated_keys)"
        f" AND rowid NOT IN (SELECT first FROM raw_repeated_keys)"
    )
    conn.execute("DROP TABLE temp.raw_repeated_keys")


def _keep_last_of_each_key_postgres(
    conn: sqlite3.Connection, table: str, key: str, columns: list[str]
) -> None:
    """`_keep_last_of_each_key` on PostgreSQL, where `row_order` (migration 0090) is the
    place a row was stored at."""
    names = ", ".join(c for c in columns if c != key)
    repeated = (
        f"SELECT {key} AS k, min(row_order) AS first, max(row_order) AS last FROM {table}"
        f" GROUP BY {key} HAVING count(*) > 1"
    )
    conn.execute(
        f"UPDATE {table} SET ({names}) = (SELECT {names} FROM {table} AS later"
        f" WHERE later.row_order = repeated.last) FROM ({repeated}) AS repeated"
        f" WHERE {table}.row_order = repeated.first"
    )
    conn.execute(
        f"DELETE FROM {table} USING ({repeated}) AS repeated"
        f" WHERE {table}.{key} = repeated.k AND {table}.row_order <> repeated.first"
    )


def append_frame(
    conn: sqlite3.Connection, fill: BulkFill, attribute: str, frame: pd.DataFrame, import_id: int
) -> int:
    """Store every row of a Dataset frame in its raw table inside
    `raw_tables_filled_in_bulk`; returns the row count. SQLite: plain multi-row INSERTs
    (the indexes are dropped; repeated keys are resolved when the block ends). PostgreSQL:
    a plain COPY, or the upsert COPY when the frame repeats a key or meets a stored one
    (the COPY is tried in a savepoint)."""
    if frame.empty:
        return 0
    table, key, spec = RAW_TABLES[attribute]
    fill.written.add(table)
    if not is_postgres(conn):
        _insert_rows(conn, attribute, frame, import_id, upsert=False)
        return len(frame)
    columns = [*spec, "import_id", MAC_COLUMN]
    macs = row_macs(table, frame, spec, import_id)
    if table in fill.rebuilt_pg_tables:  # its key index is dropped: repeats resolved at the end
        pg_bulk.copy_frame(
            conn,
            table,
            key,
            columns,
            pg_bulk.frame_csv(frame, spec, (import_id,), (macs,)),
            upsert=False,
        )
        return len(frame)
    if not bool(frame[key].duplicated().any()):
        try:
            with transaction(conn):  # a savepoint: a key conflict undoes this COPY only
                pg_bulk.copy_frame(
                    conn,
                    table,
                    key,
                    columns,
                    pg_bulk.frame_csv(frame, spec, (import_id,), (macs,)),
                    upsert=False,
                )
            return len(frame)
        except sqlite3.IntegrityError as error:
            if getattr(error.__cause__, "sqlstate", "") != "23505":  # unique_violation
                raise
    fill.resolved.add(table)  # a key repeated or met again: the upsert keeps the last row
    pg_bulk.copy_frame(
        conn,
        table,
        key,
        columns,
        pg_bulk.frame_csv(frame, spec, (import_id,), (macs,)),
        upsert=True,
    )
    return len(frame)


_INTEGER_DTYPES = frozenset({"int64", "bool", "Int64"})

# Raw tables are staged (core.db.staging) in two files written at once, on two threads:
# payments in one, the rest (recon rows above all) in the other, about equal work each.
STAGING_GROUPS: tuple[tuple[str, ...], ...] = (
    ("payments",),
    (
        "recon",
        "refunds",
        "settlements",
        "bank",
        "instant_settlements",
        "instant_payouts",
        "disputes",
        "transfers",
    ),
)


def arrow_rows(attribute: str, frame: pd.DataFrame, import_id: int) -> pa.Table:
    """A Dataset frame as its raw table's rows (table column order: `import_id`, then the
    row's MAC, core.rowmac)."""
    table, _, columns = RAW_TABLES[attribute]
    arrays = [arrow_column(frame[name], dtype) for name, dtype in columns.items()]
    arrays.append(pa.array(np.full(len(frame), import_id, dtype=np.int64)))
    arrays.append(pa.array(macs_of_arrays(table, arrays), pa.large_string()))
    return pa.Table.from_arrays(arrays, names=[*columns, "import_id", MAC_COLUMN])


def staged_raw_tables(
    conn: sqlite3.Connection, dataset: Dataset, import_id: int, *, indexes: bool = True
) -> list[list[StagedTable]]:
    """The dataset's raw tables as StagedTable groups (STAGING_GROUPS), each table with its
    house schema and its rows in table column order, `import_id` on every row. Without
    `indexes` the schema is the CREATE TABLE alone (rows staged for `upsert_staged_table`,
    which reads them in order and never looks a key up in the staged file)."""
    groups: list[list[StagedTable]] = []
    for group in STAGING_GROUPS:
        tables: list[StagedTable] = []
        for attribute in group:
            table = RAW_TABLES[attribute][0]
            rows = arrow_rows(attribute, getattr(dataset, attribute), import_id)
            schema = table_schema(conn, table)
            tables.append(StagedTable(table, schema if indexes else schema[:1], rows))
        groups.append(tables)
    return groups


def copy_staged_table(conn: sqlite3.Connection, alias: str, attribute: str) -> int:
    """A staged raw table into its (empty) house table; returns the row count."""
    return copy_table(conn, alias, RAW_TABLES[attribute][0])


def upsert_staged_table(
    conn: sqlite3.Connection,
    alias: str,
    attribute: str,
    import_id: int,
    *,
    absent: Sequence[str] = (),
) -> int:
    """A staged raw table upserted into its house table (one that holds rows already): one
    `INSERT ... SELECT` in the staged rows' order, each row carrying `import_id`; returns the
    staged row count.

    The same statement as `write_frame`'s upserts with the values read from the staged file
    instead of bound from Python: the same rows at the same places (new rows get their row
    ids in the frame's order, a key the staged rows repeat ends with the last row's values
    at the first row's place), the same import ids, and the same update triggers fired (a row
    sent again unchanged is left alone, `changed_content`; the `absent` columns kept). The
    staged table needs no index: the key is looked up in the house table's."""
    table, _, spec = RAW_TABLES[attribute]
    columns = ", ".join(spec)
    # `WHERE true`: SQLite's grammar needs it between a SELECT and ON CONFLICT. The staged
    # rows' MACs cover the id they were staged under: the caller stores them under it.
    conn.execute(
        f"INSERT INTO main.{table} ({columns}, import_id, {MAC_COLUMN})"
        f" SELECT {columns}, ?, {MAC_COLUMN}"
        f" FROM {alias}.{table} WHERE true ORDER BY rowid" + _upsert_clause(attribute, absent),
        (import_id,),
    )
    if absent:
        reseal_rows(conn, attribute, import_id)
    return int(conn.execute(f"SELECT count(*) FROM {alias}.{table}").fetchone()[0])


def _series(values: pa.ChunkedArray, dtype: str) -> pd.Series:
    """An Arrow column as a Series of the Dataset dtype."""
    if dtype in ("int64", "bool"):
        if values.null_count:  # NOT NULL columns: a NULL here is a damaged database
            raise ValueError(f"unexpected NULL in a {dtype} column")
        ints = values.to_numpy().astype(np.int64, copy=False)
        return pd.Series(ints != 0 if dtype == "bool" else ints, dtype=dtype)
    pandas_dtype = pd.Int64Dtype() if dtype == "Int64" else pd.StringDtype()
    return pd.Series(values.to_pandas(types_mapper={values.type: pandas_dtype}.get))


def _frame(
    conn: sqlite3.Connection,
    table: str,
    columns: dict[str, str],
    order: str,
    where: str = "",
    params: Sequence[Any] = (),
    *,
    keep: str = "",
    ordinal: bool = False,
) -> pd.DataFrame:
    """A raw table as a frame, in `order` (only its rows matching `where`, parameterised by
    `params`, when given). `keep`: a further condition (no parameters) on the rows found,
    tested on the rows read rather than in the search (SQLite: a column the search's index
    does not hold is then not looked up for every row it finds). `ordinal`: the frame
    starts with column ORDINAL, the rows' place in the table (rowid; PostgreSQL:
    row_order), to merge frames read apart in table order.

    sqlite3 builds a Python object per cell (about 20 million for the 1M benchmark), the
    slow part of reading a table. Instead SQLite renders each row as one line of CSV text
    (`_csv_row`), and Arrow parses the batches in C, on a second thread while the next
    batch is fetched. (Rendering JSON objects instead costs SQLite about as much and Arrow
    three times as much to parse: docs/benchmark.md, "The Books month read: its columns
    only".) PostgreSQL sends the rows by COPY in CSV (core.db.pg_bulk.csv_table).
    """
    if ordinal:
        place = "row_order" if is_postgres(conn) else "rowid"
        frame = _frame(conn, table, {place: "int64", **columns}, order, where, params, keep=keep)
        return frame.rename(columns={place: ORDINAL})
    names = list(columns)
    if is_postgres(conn):
        both = f"({where}) AND {keep}" if where and keep else where or keep
        types = {n: _arrow_type(dtype) for n, dtype in columns.items()}
        place = "row_order" if order == "rowid" else order
        return _frame_of(pg_bulk.csv_table(conn, table, types, place, both, params), columns)
    types = {str(i): _arrow_type(columns[n]) for i, n in enumerate(names)}
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: sqlite3.Row is slow for millions of rows
    condition = f" WHERE {where}" if where else ""
    if where and order == "rowid":
        # The matching rows' rowids first (from the index that finds them), then the rows in
        # rowid order: SQLite walks the sorted rowid list, so nothing is sorted after the
        # rows are read (ORDER BY rowid over an index search sorts every selected row).
        condition = f" WHERE rowid IN (SELECT rowid FROM {table}{condition})"
    if keep:
        condition = f"{condition} AND {keep}" if condition else f" WHERE {keep}"
    cursor.execute(
        f"SELECT CAST({_csv_row(columns)} AS BLOB) FROM {table}{condition} ORDER BY {order}",
        params,
    )
    with ThreadPoolExecutor(max_workers=1) as parser:
        parsed = []
        while batch := cursor.fetchmany(BATCH_ROWS):
            lines = b"\n".join([r[0] for r in batch])
            parsed.append(parser.submit(_csv_batch, lines, types))
        tables = [future.result() for future in parsed]
    cursor.close()
    schema = pa.schema(list(types.items()))
    return _frame_of(pa.concat_tables(tables) if tables else schema.empty_table(), columns)


def _frame_of(data: pa.Table, columns: dict[str, str]) -> pd.DataFrame:
    """`data`'s columns, in `columns`' order, as a frame of their Dataset dtypes: one chunk
    per column, like the frames load_dataset builds (large_string: pandas' own)."""
    data = data.combine_chunks()
    return pd.DataFrame(
        {name: _series(data.column(i), dtype) for i, (name, dtype) in enumerate(columns.items())},
        columns=list(columns),
    )


ORDINAL = "_ordinal"


def _arrow_type(dtype: str) -> pa.DataType:
    """The Arrow type a column of Dataset dtype `dtype` is read as (large_string: the
    storage of pandas' string dtype, so no cast follows)."""
    return pa.int64() if dtype in _INTEGER_DTYPES else pa.large_string()


def _csv_row(columns: dict[str, str]) -> str:
    """The SQL expression of one row as a line of CSV (no newline), for `_csv_batch`: an
    integer column as its digits (NULL: empty), a text column quoted by format's %Q (in
    single quotes, a quote inside doubled; NULL: the bare word NULL). A value of text is
    always quoted, so the empty text and the text 'NULL' stay text."""
    spec = ",".join("%s" if dtype in _INTEGER_DTYPES else "%Q" for dtype in columns.values())
    return f"format('{spec}', {', '.join(columns)})"


# `_csv_row`'s lines: single quotes, doubled inside; a value may hold a line break; a line
# is never skipped (a row of one NULL integer is an empty line).
_CSV_PARSE = pa_csv.ParseOptions(
    quote_char="'", double_quote=True, newlines_in_values=True, ignore_empty_lines=False
)


def _csv_batch(lines: bytes, types: dict[str, pa.DataType]) -> pa.Table:
    """`_csv_row` lines (newline-separated) to an Arrow table with columns `types` (named
    "0", "1", ...). One block per batch, so a row of any length parses. Unquoted NULL (text)
    and an empty field (integer) are NULL; a quoted value never is."""
    return pa_csv.read_csv(
        pa.BufferReader(lines),
        read_options=pa_csv.ReadOptions(
            column_names=list(types), use_threads=False, block_size=len(lines) + 1
        ),
        parse_options=_CSV_PARSE,
        convert_options=pa_csv.ConvertOptions(
            column_types=types,
            null_values=["", "NULL"],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )


def bank_statement_in_raw_tables(conn: sqlite3.Connection) -> bool:
    """Whether an import whose data the raw tables still hold included a bank statement.

    Those imports are the latest one that replaced the raw tables (a replace empties them
    first, so nothing older survives it) and every import after it; all imports when none
    replaced. A statement with no transactions counts: it still means "bank checks apply",
    and a later Razorpay sync or webhook import (which never carries one) does not undo it.
    """
    if is_postgres(conn):
        row = conn.execute(
            "SELECT 1 FROM imports"
            " WHERE id >= coalesce((SELECT max(id) FROM imports"
            "                       WHERE (report_json::jsonb ->> 'replaced') IN ('true', '1')),"
            "                      0)"
            " AND (report_json::jsonb ->> 'has_bank_statement') IN ('true', '1') LIMIT 1"
        ).fetchone()
        return row is not None
    row = conn.execute(
        "SELECT 1 FROM imports"
        " WHERE id >= coalesce((SELECT max(id) FROM imports"
        "                       WHERE json_extract(report_json, '$.replaced')), 0)"
        " AND json_extract(report_json, '$.has_bank_statement') LIMIT 1"
    ).fetchone()
    return row is not None


def read_bank_lines(conn: sqlite3.Connection) -> pd.DataFrame:
    """The stored bank lines (every column), in file and line order: what a new statement's
    lines are placed among (core.ingest.statements)."""
    return _frame(conn, "bank_lines", BANK_COLUMNS, "file, line_no")


def read_rows_by_key(conn: sqlite3.Connection, attribute: str, keys: Sequence[str]) -> pd.DataFrame:
    """The stored rows of raw table `attribute` (a Dataset field) whose key is one of `keys`,
    every column, in table order: one query joining the key index with the keys sent as one
    JSON array (what an import's rows are compared with: core.ingest.lifecycle)."""
    table, key, spec = RAW_TABLES[attribute]
    if not keys:
        return _frame(conn, table, spec, "rowid", "0 = 1")
    wanted = (
        "(SELECT jsonb_array_elements_text(CAST(? AS jsonb)))"
        if is_postgres(conn)
        else "(SELECT value FROM json_each(?))"
    )
    return _frame(conn, table, spec, "rowid", f"{key} IN {wanted}", (json.dumps(list(keys)),))


def read_dataset(conn: sqlite3.Connection) -> Dataset:
    """The raw tables as a Dataset (same columns and dtypes as the importer builds), read in
    one transaction so that every table comes from the same snapshot.

    has_bank_statement is True when bank_lines has rows, or when an import the raw tables
    still hold included a bank statement (`bank_statement_in_raw_tables`).
    """
    with transaction(conn, immediate=False):
        frames: dict[str, Any] = {
            attribute: _frame(conn, table, spec, "rowid")
            for attribute, (table, _, spec) in RAW_TABLES.items()
            if attribute != "bank"
        }
        bank = read_bank_lines(conn)
        has_bank = len(bank) > 0 or bank_statement_in_raw_tables(conn)
    return Dataset(**frames, bank=bank, has_bank_statement=has_bank)


MonthProduct = Literal["journal", "gst", "fees"]
MONTH_PRODUCTS: tuple[MonthProduct, ...] = ("journal", "gst", "fees")

# The columns each month product reads, per frame: worked out from its code and everything
# it calls (journal: month_vouchers -> captured_voucher, settlement_vouchers,
# _settlement_lines; gst: gst_bases -> _in_month, _net; fees: fee_check and
# unclassified_cards -> payment_class, _card_international, _card_frame). A month read
# holds these columns only (read_dataset's dtypes, in its column order) and no others: the
# wide text columns (notes, descriptions, emails, ...) are never read. Frames a product
# does not read are empty. Note that pricing only looks at the card columns when they are
# all present (`_card_frame`, `_card_international`): leaving one out would change the
# check without any error. tests/test_books_month_read.py runs each product on frames
# holding only its columns and fails when a product reads another one (or stops reading
# one: the list then says more than the product needs).
MONTH_COLUMNS: dict[MonthProduct, dict[str, tuple[str, ...]]] = {
    "journal": {
        "payments": (
            *("id", "amount", "currency", "status", "captured", "created_at", "base_amount"),
            "settled_by",
        ),
        "settlements": ("id", "amount", "status", "created_at"),
        "recon": (
            *("row_key", "entity_id", "type", "debit", "credit", "amount", "fee", "tax"),
            *("settlement_id", "dispute_id", "transfer_id"),
        ),
        "instant_settlements": ("id", "created_at"),
        "disputes": ("id", "status"),
        "instant_payouts": (
            *("id", "instant_settlement_id", "amount", "amount_settled", "fees", "tax"),
            *("status", "created_at", "processed_at"),
        ),
    },
    "gst": {
        "payments": ("id", "status", "captured", "fee", "tax", "created_at", "settled_by"),
        "settlements": ("id", "status", "created_at"),
        "recon": ("entity_id", "type", "fee", "tax", "created_at", "settlement_id"),
        "instant_payouts": ("fees", "tax", "status", "created_at", "processed_at"),
    },
    "fees": {
        "payments": (
            *("id", "amount", "currency", "status", "captured", "method", "fee", "tax"),
            *("international", "created_at", "base_amount", "card_network", "card_type"),
            *("card_international", "card_sub_type"),
        ),
        "recon": ("entity_id", "type", "amount", "fee", "tax"),
    },
}


def month_columns(product: MonthProduct, attribute: str) -> dict[str, str]:
    """The columns (name -> Dataset dtype) of frame `attribute` that `product` reads, in the
    table's column order; none for a frame it does not read."""
    wanted = set(MONTH_COLUMNS[product].get(attribute, ()))
    return {name: dtype for name, dtype in RAW_TABLES[attribute][2].items() if name in wanted}


# The month's processed settlements (a scan of `settlements`: one row a day or so).
_MONTH_SETTLEMENTS = (
    "SELECT id FROM settlements WHERE status = 'processed' AND created_at >= ? AND created_at < ?"
)


def _with_named_payments(conn: sqlite3.Connection, frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The GST read's payments: the month's (frames["payments"], read with its ORDINAL) and
    those of other months that the payment rows of the month's settlements name, in table
    order. Only the ids that no payment of the month has are looked up: asking SQLite for
    `id IN (SELECT entity_id FROM recon_rows ...)` looked every such row's payment up by id
    (~300,000 seeks at 1M, 1.2-1.5 CPU s), when those of other months are ~40,000."""
    recon, month = frames["recon"], frames["payments"]
    # In Arrow (pandas' isin on its Arrow strings goes through a Python object per value).
    settled = pc.is_in(arrow(recon["settlement_id"]), value_set=arrow(frames["settlements"]["id"]))
    chosen = pc.fill_null(pc.and_(pc.equal(arrow(recon["type"]), "payment"), settled), False)
    named = pc.drop_null(pc.filter(arrow(recon["entity_id"]), chosen))
    other = pc.invert(pc.is_in(named, value_set=arrow(month["id"])))
    missing = sorted(str(i) for i in pc.unique(pc.filter(named, other)).to_pylist())
    ids = (
        "id IN (SELECT json_array_elements_text(CAST(? AS json)))"
        if is_postgres(conn)
        else "id IN (SELECT value FROM json_each(?))"
    )
    spec = RAW_TABLES["payments"][2]
    columns = {name: spec[name] for name in month.columns if name != ORDINAL}
    found = _frame(conn, "payments", columns, "rowid", ids, (json.dumps(missing),), ordinal=True)
    both = pd.concat([month, found], ignore_index=True)
    return both.sort_values(ORDINAL, kind="stable", ignore_index=True).drop(columns=ORDINAL)


def month_seconds(month: str) -> tuple[int, int]:
    """'YYYY-MM' -> the Unix seconds of its first IST midnight and of the next month's."""
    start, end = (dt.datetime.combine(d, dt.time(0, 0), tzinfo=IST) for d in month_bounds(month))
    return int(start.timestamp()), int(end.timestamp())


def read_month_dataset(conn: sqlite3.Connection, month: str, product: MonthProduct) -> Dataset:
    """The raw rows one of the Books page's month products reads, as a Dataset (the frames'
    columns and dtypes and their rows' order are read_dataset's; frames the product does
    not read are empty), in one snapshot: the cost grows with the month, not the history.
    Month bounds are IST midnights (`month_seconds`).

    - "journal" (core.books.journal.month_vouchers: captured_voucher, settlement_vouchers,
      instant_settlement_vouchers): payments created in the month (the voucher keeps the
      captured ones); the settlements created in the month with status processed (the
      vouchers dated in it); the instant settlements created in the month and their
      processed payouts, and the processed payouts of an instant settlement not in the data
      processed (else created) in the month; the recon rows of those settlements and
      instant settlements (by settlement_id), and the payment rows naming a payment of the
      month in another currency without base_amount or settled by someone other than
      Razorpay (by entity_id: the captured voucher reads its first row); the disputes
      those rows name.
    - "gst" (core.books.gst.gst_bases): the journal's rows, plus the refund recon rows
      created in the month (the NULL-dated ones too when the month holds the epoch:
      gst_bases counts a missing date as 0) wherever they were settled, the payments named
      by the payment rows of the month's settlements, whatever their month (gst_bases only
      asks whether such a payment is known), and the processed instant payouts whose
      processed_at (else created_at) is in the month.
    - "fees" (core.books.pricing.fee_check, unclassified_cards, for the month): payments
      created in the month, and every `payment` recon row naming one of them (by entity_id,
      in row order: fee_check takes each payment's first row), whatever its month or
      settlement. The check of the month is the whole check's rows for those payments.
      SQLite is given the month's payment ids in id order (`ORDER BY id`: see below).

    Indexes: payments_created, payments_id, recon_rows_settlement, recon_rows_entity and
    recon_rows_refund_created (migration 0110); `settlements` and `instant_payouts` (a few
    rows a day) are scanned.
    """
    if product not in MONTH_PRODUCTS:
        raise ValueError(f"unknown month product {product!r}")
    start, end = month_seconds(month)
    in_month = "created_at >= ? AND created_at < ?"
    settled = f"settlement_id IN ({_MONTH_SETTLEMENTS})"
    # (frame attribute -> WHERE, parameters)
    wanted: dict[str, tuple[str, tuple[Any, ...]]] = {
        "payments": (in_month, (start, end)),
        "settlements": ("status = 'processed' AND " + in_month, (start, end)),
        "recon": (settled, (start, end)),
    }
    if product == "journal":
        instant = "SELECT id FROM instant_settlements WHERE " + in_month
        # The payment rows the captured voucher reads besides the month's settlements': those
        # naming a payment of the month in another currency without base_amount (its INR
        # amount) or settled by someone other than Razorpay (whether Razorpay settled it).
        named = (
            f"SELECT id FROM payments WHERE {in_month} AND ((base_amount IS NULL AND "
            "upper(coalesce(currency, 'INR')) <> 'INR') OR NOT (settled_by IS NULL OR "
            "lower(trim(settled_by)) IN ('', 'razorpay')))"
        )
        wanted["recon"] = (
            f"{settled} OR settlement_id IN ({instant}) OR "
            f"(type = 'payment' AND entity_id IN ({named}))",
            (start, end, start, end, start, end),
        )
        wanted["instant_settlements"] = (in_month, (start, end))
        # The disputes those rows name (their status: lost, or pending / won).
        wanted["disputes"] = (
            f"id IN (SELECT dispute_id FROM recon_rows WHERE {wanted['recon'][0]})",
            wanted["recon"][1],
        )
        # The processed payouts of those instant settlements, and those of an instant
        # settlement not in the data processed in the month (dated by their payout).
        done = "coalesce(processed_at, created_at)"
        wanted["instant_payouts"] = (
            f"status = 'processed' AND (instant_settlement_id IN ({instant}) OR "
            "((instant_settlement_id IS NULL OR instant_settlement_id NOT IN "
            f"(SELECT id FROM instant_settlements)) AND {done} >= ? AND {done} < ?))",
            (start, end, start, end),
        )
    if product == "gst":
        refunds = "type = 'refund' AND (created_at >= ? AND created_at < ?"
        refunds += " OR created_at IS NULL)" if start <= 0 < end else ")"
        wanted["recon"] = (f"{settled} OR ({refunds})", (start, end, start, end))
        done = "coalesce(processed_at, created_at)"
        wanted["instant_payouts"] = (
            f"status = 'processed' AND {done} >= ? AND {done} < ?",
            (start, end),
        )
    elif product == "fees":
        del wanted["settlements"]
        months = f"SELECT id FROM payments WHERE {in_month}"
        if not is_postgres(conn):
            # SQLite puts an IN list's values into a temporary B-tree before searching
            # recon_rows_entity with them. In creation order (random in id order) a month's
            # ids outgrew that B-tree's page cache and went to and from a temporary file a
            # page at a time (1M: ~167,000 writes and ~187,000 reads, 0.45-0.86 s of system
            # time); sorted first, the B-tree is built by appending (8,000 and 28,000). The
            # plan keeps this ORDER BY (tests/test_books_month_read.py checks it).
            months += " ORDER BY id"
        wanted["recon"] = (f"entity_id IN ({months})", (start, end))
    with transaction(conn, immediate=False):
        frames: dict[str, Any] = {
            attribute: _frame(
                conn,
                RAW_TABLES[attribute][0],
                month_columns(product, attribute),
                "rowid",
                where,
                params,
                # The row's type is tested on the rows read: recon_rows_entity then finds
                # them without reading each row it finds (fees at 1M: 1.5 instead of 2.4 s).
                keep="type = 'payment'" if product == "fees" and attribute == "recon" else "",
                ordinal=product == "gst" and attribute == "payments",
            )
            for attribute, (where, params) in wanted.items()
        }
        if product == "gst":
            frames["payments"] = _with_named_payments(conn, frames)
    return Dataset(**frames, has_bank_statement=False)  # no product reads the bank


# -- the rows' MACs (core.rowmac, migration 0120) ------------------------------------------


def _sealed_columns(attribute: str) -> dict[str, str]:
    """Every column a raw row's MAC covers (its Dataset columns, key included, then
    import_id), and the stored MAC."""
    return {**RAW_TABLES[attribute][2], "import_id": "Int64", MAC_COLUMN: "string"}


def read_sealed_rows(
    conn: sqlite3.Connection, attribute: str, import_id: int | None = None
) -> pd.DataFrame:
    """Raw table `attribute`'s rows as its MAC covers them, with the stored MAC (column
    MAC_COLUMN), in table order; only those of import `import_id` when given."""
    table = RAW_TABLES[attribute][0]
    columns = _sealed_columns(attribute)
    if import_id is None:
        return _frame(conn, table, columns, "rowid")
    return _frame(conn, table, columns, "rowid", "import_id = ?", (import_id,))


def expected_macs(attribute: str, rows: pd.DataFrame) -> list[str]:
    """The MAC each row of `read_sealed_rows` should carry."""
    table, _, spec = RAW_TABLES[attribute]
    return row_macs(table, rows, spec, rows["import_id"])


def reseal_rows(conn: sqlite3.Connection, attribute: str, import_id: int | None) -> int:
    """Store the MAC of each row of import `import_id` (None: every row) as it is stored:
    after an upsert that kept stored values of columns its files lacked (`absent`), whose
    MACs the writer could not know; and for rows a test or a maintenance step wrote by
    SQL. Returns the rows resealed."""
    return _store_macs(conn, attribute, read_sealed_rows(conn, attribute, import_id))


def seal_unsealed_rows(conn: sqlite3.Connection, attribute: str) -> int:
    """Store the MAC of each row of raw table `attribute` that has none (row_mac NULL: stored
    before migration 0120), as its values are now; the rows sealed (core.audit.rawcheck,
    seal_at_upgrade)."""
    table = RAW_TABLES[attribute][0]
    unsealed = f"{MAC_COLUMN} IS NULL"
    rows = _frame(conn, table, _sealed_columns(attribute), "rowid", unsealed, ())
    return _store_macs(conn, attribute, rows)


def _store_macs(conn: sqlite3.Connection, attribute: str, rows: pd.DataFrame) -> int:
    """Store each of `rows`' MAC (of its values as read) by its key; the rows stored."""
    if rows.empty:
        return 0
    table, key, _ = RAW_TABLES[attribute]
    pairs = list(
        zip(expected_macs(attribute, rows), rows[key].astype(object).tolist(), strict=True)
    )
    conn.executemany(f"UPDATE {table} SET {MAC_COLUMN} = ? WHERE {key} = ?", pairs)
    return len(pairs)


def raw_row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Each raw table's row count (a scan of its smallest index)."""
    return {
        table: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        for table, _, _ in RAW_TABLES.values()
    }
