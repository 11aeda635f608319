"""PostgreSQL bulk paths of the raw tables and outcomes: COPY in, COPY out.

SQLite's fast paths (multi-row INSERTs with NULL sentinels, dropped and rebuilt indexes,
ADBC staging files, rows read as CSV text) are SQLite's own. On PostgreSQL a frame goes
in by COPY ... FROM STDIN in CSV that Arrow writes a block of rows at a time (no Python
object per value; NULLs as NULLs): straight into an empty table, or into a temporary table
and from there by one INSERT ... ON CONFLICT DO UPDATE (the last row for a key wins, as on
SQLite). Rows come back by COPY ... TO STDOUT in CSV, parsed by Arrow. Raw tables carry
`row_order` (migration 0090), an identity that an upsert keeps, so rows read back in the
order they were first stored, like SQLite's rowid.

After a bulk load the loaded table is analysed, and a large load into an empty (or much
smaller) payments, recon_rows or outcomes table goes in with that table's indexes dropped
and built again afterwards, all in the caller's transaction, through migration 0098's
owner-defined functions (the app role owns no table; docs/postgres.md, "Statistics and
index builds after bulk loads"). Foreign keys stay (migration 0112): dropping one locks the
table it points at (imports, runs) against every reader until the commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from core.db.backend import lock_waits_unbounded
from core.db.staging import arrow_column

BATCH_ROWS = 50_000


# Arrow's CSV writer quotes every text value and leaves a null field empty: what COPY's CSV
# format reads back as the same text, '' and NULL (an unquoted empty field is NULL).
_CSV = pacsv.WriteOptions(include_header=False, batch_size=BATCH_ROWS)


def csv_blocks(columns: Sequence[pa.Array | pa.ChunkedArray]) -> Iterator[pa.Buffer]:
    """Equal-length Arrow columns as COPY CSV text, BATCH_ROWS lines a block."""
    names = [str(i) for i in range(len(columns))]
    table = pa.Table.from_arrays(list(columns), names=names)
    for start in range(0, table.num_rows, BATCH_ROWS):
        sink = pa.BufferOutputStream()
        pacsv.write_csv(table.slice(start, BATCH_ROWS), sink, _CSV)
        yield sink.getvalue()


def frame_csv(
    frame: pd.DataFrame,
    columns: dict[str, str],
    extra: Sequence[int] = (),
    texts: Sequence[Sequence[str]] = (),
) -> Iterator[pa.Buffer]:
    """The frame's `columns` (name -> Dataset dtype), each `extra` integer appended as a
    constant column, then each of `texts` (one value per row: the rows' MACs) as a text
    column, as COPY CSV blocks; converted a batch of rows at a time."""
    for start in range(0, len(frame), BATCH_ROWS):
        part = frame.iloc[start : start + BATCH_ROWS]
        arrays = [arrow_column(part[name], dtype) for name, dtype in columns.items()]
        constants = [pa.array(np.full(len(part), value, dtype=np.int64)) for value in extra]
        values = [pa.array(t[start : start + BATCH_ROWS], pa.large_string()) for t in texts]
        yield from csv_blocks([*arrays, *constants, *values])


def copy_frame(
    conn: Any,
    table: str,
    key: str,
    columns: Sequence[str],
    blocks: Iterator[pa.Buffer],
    *,
    upsert: bool,
    absent: Sequence[str] = (),
) -> None:
    """COPY CSV blocks (values for `columns`) into `table`; with `upsert`, through a
    temporary table and INSERT ... ON CONFLICT (key) DO UPDATE, the last row of a key
    winning; a stored row keeps its values of the `absent` columns (not carried by the
    rows' files: core.db.raw._upsert_clause)."""
    if not upsert:
        conn.copy_csv(table, columns, blocks)
        return
    stage = f"stage_{table}"
    conn.execute(
        f"CREATE TEMPORARY TABLE {stage} AS SELECT {', '.join(columns)} FROM {table} LIMIT 0"
    )
    try:
        conn.execute(f"ALTER TABLE {stage} ADD COLUMN stage_order BIGSERIAL")
        conn.copy_csv(stage, columns, blocks)
        names = ", ".join(columns)
        kept = {key, *absent}
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in kept)
        # Only rows whose content differs are rewritten (core.db.raw.changed_content).
        # The row's MAC (core.rowmac) covers import_id: neither is content.
        content = [c for c in columns if c not in kept and c not in ("import_id", "row_mac")]
        stored = ", ".join(f"{table}.{c}" for c in content)
        sent = ", ".join(f"excluded.{c}" for c in content)
        conn.execute(
            f"INSERT INTO {table} ({names})"
            f" SELECT {names} FROM (SELECT DISTINCT ON ({key}) * FROM {stage}"
            f" ORDER BY {key}, stage_order DESC) AS last ORDER BY stage_order"
            f" ON CONFLICT ({key}) DO UPDATE SET {updates}"
            f" WHERE ({stored}) IS DISTINCT FROM ({sent})"
        )
    finally:
        conn.execute(f"DROP TABLE {stage}")


# A load of at least this many rows into payments, recon_rows or outcomes holding fewer rows
# than it brings goes in with the table's indexes dropped, then built by one sort each:
# 1M wide payments cost 19.3 s of server CPU with three indexes kept row by row, 6.7 s with
# them built after (docs/benchmark.md, "PostgreSQL --db at 1M"). Below it, or into a
# larger table, the indexes stay.
REBUILD_MIN_ROWS = 100_000
REBUILD_TABLES = frozenset({"payments", "recon_rows", "outcomes"})


def analyze(conn: Any, table: str) -> None:
    """Fresh planner statistics for `table` (a raw table, outcomes or exceptions), inside
    the caller's transaction; migration 0098's razorrecon_analyze, as its owner. Its lock
    (SHARE UPDATE EXCLUSIVE: another ANALYZE or a VACUUM of the table) is waited for without
    the busy timeout: the load before it is not thrown away for a vacuum."""
    with lock_waits_unbounded(conn):
        conn.execute("SELECT razorrecon_analyze(?)", (table,))


def drop_indexes(conn: Any, table: str) -> None:
    """Drop `table`'s indexes that back no constraint, in the caller's writing unit
    (migration 0098's razorrecon_drop_indexes). Its ACCESS EXCLUSIVE lock waits for the
    readers of `table` to finish, without the busy timeout (core.db.backend.
    lock_waits_unbounded): a load is not thrown away for a reader."""
    with lock_waits_unbounded(conn):
        conn.execute("SELECT razorrecon_drop_indexes(?)", (table,))


def build_indexes(conn: Any, table: str) -> None:
    """Build again the indexes `drop_indexes` dropped (razorrecon_build_indexes), waiting for
    its lock as `drop_indexes` does."""
    with lock_waits_unbounded(conn):
        conn.execute("SELECT razorrecon_build_indexes(?)", (table,))


def rebuild_worth(conn: Any, table: str, rows: int, *, empty: bool = False) -> bool:
    """Whether loading `rows` rows into `table` should drop and rebuild its indexes: a big
    table, a large load, and a table known `empty` or holding fewer rows than the load
    brings (the estimate kept by `analyze`; a table never analysed counts when empty)."""
    if table not in REBUILD_TABLES or rows < REBUILD_MIN_ROWS:
        return False
    if empty:
        return True
    row = conn.execute(
        "SELECT reltuples FROM pg_class WHERE oid = to_regclass(?)", (table,)
    ).fetchone()
    held = float(row[0]) if row is not None else -1.0
    if held < 0:  # never analysed or vacuumed: no estimate
        return conn.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {table})").fetchone()[0] is True
    return held < rows


@contextmanager
def indexes_built_after(conn: Any, table: str, *, rebuild: bool) -> Iterator[None]:
    """With `rebuild`, `table`'s indexes that back no constraint are dropped for the block
    and built again after it (its foreign keys stay: migration 0112), in the caller's
    writing unit (razorrecon_drop_indexes needs its write lock). An error inside leaves
    them dropped until the caller's rollback restores them; a commit without the build is
    refused by the database."""
    if not rebuild:
        yield
        return
    drop_indexes(conn, table)
    yield
    build_indexes(conn, table)


def bulk_outcome_chunks(conn: Any, chunks: Iterable[Any], rows: int) -> Iterator[Any]:
    """`chunks` passed through, for a caller that COPYs them into outcomes in one
    transaction: on the first chunk the indexes are dropped when `rebuild_worth`, after the
    last they are built again and outcomes analysed (in that transaction)."""
    with indexes_built_after(conn, "outcomes", rebuild=rebuild_worth(conn, "outcomes", rows)):
        yield from chunks
    analyze(conn, "outcomes")


# Arrow parses the text in blocks of this size, in parallel; each block is a chunk of every
# column, which the frames combine into one. 1M wide payments: 216 chunks at Arrow's default
# 1 MiB, 14 at 16 MiB; their first combine in a process 1.50-1.95 s against 0.89-1.25 s, the
# parse the same (docs/benchmark.md, "PostgreSQL reads by COPY").
CSV_BLOCK_BYTES = 16 << 20


def csv_table(
    conn: Any,
    table: str,
    columns: dict[str, pa.DataType],
    order: str,
    where: str = "",
    params: Sequence[Any] = (),
) -> pa.Table:
    """`table`'s `columns` (name -> Arrow type; the result's columns are named "0", "1",
    ...) in `order`, only the rows matching `where` (parameterised by `params`) when
    given: COPY ... TO STDOUT in CSV, parsed by Arrow in C. Rows as json_build_object text
    took 6.7 s for a month's 656,299 rows at 1M payments, a Python object per row and the
    server's JSON the slow parts (docs/benchmark.md, "PostgreSQL reads by COPY")."""
    condition = f" WHERE {where}" if where else ""
    text = conn.copy_csv_out(
        f"SELECT {', '.join(columns)} FROM {table}{condition} ORDER BY {order}", params
    )
    types = {str(i): kind for i, kind in enumerate(columns.values())}
    if not text:
        return pa.schema(list(types.items())).empty_table()
    try:
        return _read_csv(text, types, block_size=CSV_BLOCK_BYTES)
    except pa.ArrowInvalid:
        # Arrow refuses a row longer than a block ("straddling object"): such text is read
        # again as one block, so a row of any length parses, as SQLite's batches do
        # (core.db.raw._csv_batch).
        return _read_csv(text, types, block_size=len(text) + 1)


def _read_csv(text: bytes, types: dict[str, pa.DataType], *, block_size: int) -> pa.Table:
    """COPY's CSV text as an Arrow table of `types`: an unquoted empty field is NULL, a
    quoted one the empty text."""
    read_options = pacsv.ReadOptions(column_names=list(types), block_size=block_size)
    return pacsv.read_csv(
        pa.py_buffer(text),
        read_options=read_options,
        # A value may hold a line break; a row of one NULL is an empty line, never skipped.
        parse_options=pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
        convert_options=pacsv.ConvertOptions(
            column_types=types,
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )


def copy_outcome_chunk(
    conn: Any, run_id: int, fields: Sequence[str], columns: Sequence[Any]
) -> int:
    """One piece of a run's outcomes (a value sequence per field, None for NULL: Arrow
    arrays, numpy arrays or lists) by COPY, as CSV that Arrow writes."""
    count = len(columns[0]) if len(columns) else 0
    if any(len(column) != count for column in columns):
        raise ValueError("outcome columns differ in length")
    arrays = [_arrow(column) for column in columns]
    run = pa.array(np.full(count, run_id, dtype=np.int64))
    conn.copy_csv("outcomes", ["run_id", *fields], csv_blocks([run, *arrays]))
    return count


def _arrow(values: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values
    return pa.array(values, from_pandas=True)


# Tables that migrations own, and tables that PostgreSQL's triggers fill from the rows
# published (migrations_pg: 0075's exception_search and 0101's exception_totals, from
# exceptions and exception_events; exception_totals_deferred is a writer's flag row, never
# committed). Copying a trigger-filled table as well counted every row twice: a first start
# showed twice the exceptions the database held (tester report of 2026-12-04, finding 1).
_NOT_PUBLISHED = frozenset(
    {"schema_migrations", "exception_search", "exception_totals", "exception_totals_deferred"}
)


def _tables_in_key_order(target: Any) -> list[str]:
    """The public tables, each after every table its foreign keys point at."""
    tables = [
        str(r[0])
        for r in target.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename"
        )
    ]
    parents: dict[str, set[str]] = {t: set() for t in tables}
    for child, parent in target.execute(
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint"
        " WHERE contype = 'f' AND connamespace = current_schema()::regnamespace"
    ):
        if child in parents and parent != child:
            parents[child].add(str(parent))
    ordered: list[str] = []
    while parents:
        ready = sorted(t for t, p in parents.items() if not (p - set(ordered)))
        if not ready:
            raise ValueError("foreign keys form a cycle: " + ", ".join(sorted(parents)))
        ordered.extend(ready)
        for t in ready:
            del parents[t]
    return [t for t in ordered if t not in _NOT_PUBLISHED]


def _insertable_columns(target: Any, table: str) -> list[str]:
    return [
        str(r[0])
        for r in target.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ?"
            " AND is_generated = 'NEVER' AND coalesce(identity_generation, '') <> 'ALWAYS'"
            " ORDER BY ordinal_position",
            (table,),
        )
    ]


def publish_sqlite(source: Any, target: Any) -> dict[str, int]:
    """Copy every table of a SQLite database (`source`, the bootstrap's scratch build)
    into an empty PostgreSQL database (`target`) in the caller's transaction, by COPY, in
    foreign-key order; identities then continue after the largest copied id. Rows per
    table."""
    copied: dict[str, int] = {}
    for table in _tables_in_key_order(target):
        known = {str(r[1]) for r in source.execute(f"PRAGMA table_info({table})")}
        columns = [c for c in _insertable_columns(target, table) if c in known]
        if not columns:
            continue
        cursor = source.execute(f"SELECT {', '.join(columns)} FROM {table}")
        copied[table] = int(target.copy_rows(table, columns, (tuple(r) for r in cursor)))
    advance_identities(target)
    return copied


def advance_identities(target: Any, table: str | None = None) -> None:
    """Make each BY DEFAULT identity (of `table`, or of every table) continue after the
    largest id stored, after rows were written with explicit ids (SQLite's INTEGER PRIMARY
    KEY always continues after the largest)."""
    rows = target.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_identity = 'YES'"
        " AND identity_generation = 'BY DEFAULT' AND (CAST(? AS TEXT) IS NULL OR table_name = ?)",
        (table, table),
    ).fetchall()
    for name, column in rows:
        target.execute(
            f"SELECT setval(pg_get_serial_sequence('{name}', '{column}'),"
            f" coalesce((SELECT max({column}) FROM {name}), 0) + 1, false)"
        )


# "RRBOOTS": the session lock one bootstrap holds across every app process.
BOOTSTRAP_LOCK = 0x5252_424F_4F54_53


def try_bootstrap_lock(conn: Any) -> bool:
    """Take the bootstrap's session-level advisory lock if free (released when `conn`
    closes, or the process dies)."""
    row = conn.execute(f"SELECT pg_try_advisory_lock({BOOTSTRAP_LOCK})").fetchone()
    return bool(row[0])
