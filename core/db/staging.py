"""Bulk loads through a private staging file.

Python's sqlite3 binds every value of every row from a Python object while holding the GIL:
about 4 us a row for the raw tables, 15-20 s for the 1M-payment benchmark. The ADBC SQLite
driver (Apache Arrow) binds Arrow columns in C with the GIL released, 3-4x faster, and can
run on the second core while this thread reconciles.

ADBC links its own copy of SQLite. Two SQLite libraries in one process must never have the
same file open at once (POSIX locks belong to the process, so one library closing its file
silently drops the other's locks), so ADBC never opens the house database: it writes a new
private file that nothing else opens until ADBC has closed it. The house connection then
ATTACHes that file and copies each table with `INSERT INTO main.t SELECT * FROM staged.t`.
Into an empty table of the same shape, with foreign keys off, SQLite performs that copy as
a transfer of whole records and index entries (its "xfer optimisation") instead of
re-inserting row by row; in any other case the same statement still copies correctly.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from core.db.backend import is_postgres
from core.errors import StorageError
from core.leftovers import STAGING_PREFIX, owned_folder, remove_dead_leftovers
from core.memory import return_freed_memory

# Below this many rows a staging file costs more than binding the rows directly.
STAGING_MIN_ROWS = 20_000
# Page cache of a bulk-loading connection (a staging file's while it loads and sorts, the
# house database's while it copies or upserts): CREATE INDEX sorts in memory up to this size
# instead of spilling to temporary files, and upserts look keys up in it; the default 2 MB
# is far too small for either. A quarter of the rows' size, between these bounds: a fixed
# 256 MiB on each of three connections took import memory to 5.7x a 103 MB input; sized
# from the rows it is 3.9x, with no measurable loss of speed (docs/benchmark.md).
BULK_CACHE_MIN_KIB = 16_384
# The staging writers' cache when memory counts more than speed (`import`: issue 12 holds
# its peak to 4x the input; both writers run at once beside the loaded dataset). Measured
# at 300k payments (103 MB): peak 425 MB with the default, 367 MB with this, CPU the same.
LEAN_STAGING_CACHE_KIB = 4_096
BULK_CACHE_MAX_KIB = 262_144
# A staging file's page size (SQLite's largest). The house copy moves records, not pages, so
# the two files need not match; a quarter of the pages to allocate, spill and read back
# while loading and indexing: 1M wide payments staged in 2.4 instead of 2.65 CPU s.
STAGING_PAGE_SIZE = 65_536


def bulk_cache_kib(row_bytes: int) -> int:
    """The page cache (KiB) for bulk-loading rows of `row_bytes` bytes (Arrow's size)."""
    return max(BULK_CACHE_MIN_KIB, min(BULK_CACHE_MAX_KIB, row_bytes // 4 // 1024))


@dataclass(frozen=True)
class StagedTable:
    """One table to stage.

    name: the table's name, the same in the staging file and the house database.
    schema: the statements that create it, CREATE TABLE first, then its indexes, exactly as
    the house database's schema holds them (so both tables have the same shape).
    rows: the rows as Arrow columns, in the table's column order.
    """

    name: str
    schema: tuple[str, ...]
    rows: pa.Table


@dataclass(frozen=True)
class StagedFile:
    """A staging file ADBC has written and closed.

    path: the file. tables: the tables staged completely, indexes included. refused: table
    -> why it could not be staged (a unique index that its rows break, say); the caller
    writes those another way.
    """

    path: Path
    tables: frozenset[str]
    refused: Mapping[str, str] = field(default_factory=dict)


def arrow_column(series: pd.Series, dtype: str) -> pa.Array:
    """A column of Dataset dtype `dtype` as Arrow values of its SQLite storage class:
    integers (bools as 0/1) or text, missing values as nulls."""
    if dtype in ("int64", "bool"):
        return pa.array(series.to_numpy(dtype=np.int64))
    if dtype == "Int64":
        return pa.array(series.astype("Int64"), type=pa.int64())
    return pa.array(series.astype("string"), type=pa.large_string())


def worth_staging(conn: sqlite3.Connection, rows: int) -> bool:
    """Whether `rows` rows should go through a staging file: enough of them, and `conn` not
    inside a transaction (SQLite attaches files outside one only)."""
    if is_postgres(conn):  # staging files are SQLite's; PostgreSQL loads by COPY
        return False
    return rows >= STAGING_MIN_ROWS and not conn.in_transaction


def table_schema(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    """CREATE TABLE and CREATE INDEX statements of `table`, as its schema holds them.
    (Indexes behind PRIMARY KEY / UNIQUE constraints have no SQL: CREATE TABLE makes them.)"""
    rows = conn.execute(
        "SELECT type, sql FROM sqlite_master"
        " WHERE tbl_name = ? AND type IN ('table', 'index') AND sql IS NOT NULL ORDER BY rowid",
        (table,),
    ).fetchall()
    tables = [str(r[1]) for r in rows if r[0] == "table"]
    indexes = [str(r[1]) for r in rows if r[0] == "index"]
    return (*tables, *indexes)


def write_staged_file(
    path: Path, tables: Sequence[StagedTable], cache_kib: int | None = None
) -> StagedFile:
    """Create `path` (it must not exist) holding `tables`, through ADBC, and close it.

    Unjournaled and unsynced: the file is private and thrown away on any failure. Each
    table's indexes are built after its rows, by one sort each. Safe to run on another
    thread: ADBC releases the GIL while it binds and sorts. `cache_kib`: the connection's
    page cache (which also bounds the index sorts' memory); default `bulk_cache_kib` of the
    rows' size.
    """
    import adbc_driver_sqlite.dbapi as adbc  # only bulk paths need it

    if path.exists():
        raise FileExistsError(f"staging file {path} exists")
    try:
        return _write(adbc, path, tables, cache_kib)
    except (OSError, adbc.OperationalError, adbc.InternalError) as error:
        raise StorageError(f"could not write the staging file {path}: {error}{_ROOM}") from error
    finally:
        return_freed_memory()  # the connection's cache and sorter, freed on this thread


def write_staged_parts(
    path: Path,
    schemas: Mapping[str, Sequence[str]],
    parts: Iterable[Mapping[str, pa.Table]],
    cache_kib: int = BULK_CACHE_MAX_KIB,
) -> StagedFile:
    """`write_staged_file` for rows that arrive in parts (a streamed build's windows): each
    table of `schemas` (name -> `table_schema`) created, each part's tables appended as it
    comes (one part in memory at a time), every index built after the last part by one sort.
    A table whose rows break one of its unique indexes is not in `tables` (`refused`)."""
    import adbc_driver_sqlite.dbapi as adbc  # only bulk paths need it

    if path.exists():
        raise FileExistsError(f"staging file {path} exists")
    staged: set[str] = set()
    refused: dict[str, str] = {}
    try:
        with adbc.connect(str(path), autocommit=True) as conn, conn.cursor() as cursor:
            _scratch_pragmas(cursor, cache_kib)
            for schema in schemas.values():
                cursor.execute(schema[0])
            for part in parts:
                for name, rows in part.items():
                    if rows.num_rows:
                        cursor.adbc_ingest(name, rows, mode="append")
            for name, schema in schemas.items():
                try:
                    for index in schema[1:]:
                        cursor.execute(index)
                except adbc.IntegrityError as error:
                    refused[name] = str(error)
                    continue
                staged.add(name)
    except (OSError, adbc.OperationalError, adbc.InternalError) as error:
        raise StorageError(f"could not write the staging file {path}: {error}{_ROOM}") from error
    finally:
        return_freed_memory()
    return StagedFile(path=path, tables=frozenset(staged), refused=refused)


def _scratch_pragmas(cursor: Any, cache_kib: int) -> None:
    """A staging file is scratch: no journal, no syncs, a page cache of `cache_kib`, large
    pages (set before its first table: the file is new)."""
    for pragma in (
        f"PRAGMA page_size = {STAGING_PAGE_SIZE}",
        "PRAGMA journal_mode = OFF",
        "PRAGMA synchronous = OFF",
        f"PRAGMA cache_size = {-cache_kib}",
    ):
        cursor.execute(pragma)
        cursor.fetchall()


# Where staging files go, for the messages that say they could not be written.
_ROOM = " (staging files go to the system temporary folder: set TMPDIR to one with room)"


def _write(
    adbc: Any, path: Path, tables: Sequence[StagedTable], cache_kib: int | None
) -> StagedFile:
    staged: set[str] = set()
    refused: dict[str, str] = {}
    cache = cache_kib or bulk_cache_kib(sum(t.rows.nbytes for t in tables))
    with adbc.connect(str(path), autocommit=True) as conn, conn.cursor() as cursor:
        _scratch_pragmas(cursor, cache)
        for table in tables:
            create, *indexes = table.schema
            cursor.execute(create)
            if table.rows.num_rows:
                cursor.adbc_ingest(table.name, table.rows, mode="append")
            try:
                for index in indexes:
                    cursor.execute(index)
            except adbc.IntegrityError as error:
                refused[table.name] = str(error)
                continue
            staged.add(table.name)
    return StagedFile(path=path, tables=frozenset(staged), refused=refused)


@contextmanager
def staging_directory() -> Iterator[Path]:
    """A private temporary folder for staging files, removed with everything in it.

    Named `razorrecon-staging-<pid>-*` and locked by its owner (core.leftovers), so the
    folders of a process that was killed are removed here, at the next start of a run."""
    remove_dead_leftovers()
    with ExitStack() as stack:
        try:
            folder = stack.enter_context(owned_folder(STAGING_PREFIX))
        except OSError as error:
            raise StorageError(f"could not create a staging folder: {error}{_ROOM}") from error
        yield folder


@contextmanager
def attached(conn: sqlite3.Connection, files: Mapping[str, Path]) -> Iterator[None]:
    """ATTACH each staging file under its alias for the duration (outside any transaction:
    SQLite refuses ATTACH inside one), DETACH afterwards. A staging file is read once: after
    a body that returns, the files are deleted at once, not with their folder, so the writes
    that follow (the run's store, the sync, the Books ledger) take the memory their pages
    held (on a virtual machine that hands freed memory back to its host, fresh pages cost
    ~1.5 s a GB to fault in; docs/benchmark.md). After a failed body the folder's cleanup
    removes them."""
    if conn.in_transaction:
        raise RuntimeError("staging files are attached outside a transaction")
    done: list[str] = []
    try:
        for alias, path in files.items():
            if not alias.isidentifier():
                raise ValueError(f"bad alias {alias!r}")
            conn.execute(f"ATTACH DATABASE ? AS {alias}", (str(path),))
            done.append(alias)
        yield
    finally:
        for alias in reversed(done):
            conn.execute(f"DETACH DATABASE {alias}")
    for path in files.values():
        path.unlink(missing_ok=True)


@contextmanager
def foreign_keys_off(conn: sqlite3.Connection) -> Iterator[None]:
    """Foreign keys off for the duration (outside a transaction: inside one the pragma is a
    no-op), restored afterwards. The caller makes its writes satisfy them by construction."""
    if conn.in_transaction:
        raise RuntimeError("foreign keys are switched outside a transaction")
    previous = int(conn.execute("PRAGMA foreign_keys").fetchone()[0])
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA foreign_keys = {previous}")


def copy_table(conn: sqlite3.Connection, alias: str, table: str) -> int:
    """Every row of `alias.table` into the house table of the same name and shape; returns
    the rows copied. A transfer of whole records when SQLite can (see the module text)."""
    cursor = conn.execute(f"INSERT INTO main.{table} SELECT * FROM {alias}.{table}")
    return int(cursor.rowcount)
