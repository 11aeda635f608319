"""Connections: WAL, a busy timeout, foreign keys on, one connection per thread of work.

DATABASE_URL (or `--db`) may also name a PostgreSQL database (`postgresql://...`): then
`connect` returns a `core.db.backend.PgConnection`, which speaks the same calling style,
and `transaction` takes the write lock as an advisory lock (docs/postgres.md).

A `sqlite3.Connection` is not shared between threads here: Streamlit runs each session's
script in its own thread, so callers open a connection for a unit of work (cheap in
SQLite) and close it. Writes go through `transaction`, which takes the write lock up
front (BEGIN IMMEDIATE) so two writers queue instead of failing half-way.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import cast

from core.db.backend import (
    BUSY_TIMEOUT_ENV,
    WRITE_LOCK,
    busy_timeout_ms,
    connect_postgres,
    is_postgres,
    is_postgres_url,
    plain_url,
    redacted,
    unreachable_reason,
)
from core.errors import ConfigError, DatabaseBusyError, DatabaseUnreachableError

DEFAULT_DATABASE = "razorrecon.sqlite"
# The page size of a new database file (SQLite's default is 4096; a file keeps the size it was
# made with: the pragma is a no-op on an existing one, https://www.sqlite.org/pragma.html#pragma_page_size).
# Half the pages to allocate, write and link in a bulk store: 1M wide payments' raw tables
# copied in 1.7 instead of 2.1-2.3 CPU s, `reconcile --db` 0.3-0.7 s less wall, a day's
# upsert 0.1-0.2 s less; page renders and single review writes the same. 16 KiB copied no
# faster and slowed the exception sync (docs/benchmark.md, "The house database's page size").
HOUSE_PAGE_SIZE = 8_192
SERVED_SCHEMES = ("sqlite", "file", "postgresql", "postgres")
# `scheme:/...` (a URL; pathlib folds `//` into `/`) or a well-known database scheme.
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(?=/)")
_DATABASE_SCHEMES = re.compile(
    r"^(postgres|postgresql|mysql|mariadb|mssql|oracle|redis|mongodb)(\+[a-z0-9]+)?:",
    re.IGNORECASE,
)


def database_path(url: str | None = None) -> str:
    """The SQLite file named by `url`, else by DATABASE_URL, else the default.

    Accepts a plain path, `sqlite:///relative.db`, `sqlite:////abs/path.db`, a SQLite
    `file:` URI, or `:memory:`; a PostgreSQL URL (postgresql://...) is returned as it is.
    A URL with any other scheme (mysql://...) is refused (ConfigError, exit 2) instead of
    becoming a SQLite file under a folder named after it.
    """
    value = url if url is not None else os.environ.get("DATABASE_URL", DEFAULT_DATABASE)
    value = value.strip() or DEFAULT_DATABASE
    scheme = _URL_SCHEME.match(value) or _DATABASE_SCHEMES.match(value)
    if is_postgres_url(value):
        return plain_url(value)
    if scheme is not None and scheme.group(1).lower() not in SERVED_SCHEMES:
        from core.errors import ConfigError

        where = "--db" if url is not None else "DATABASE_URL"
        raise ConfigError(
            f"{where}: {value!r} uses the scheme {scheme.group(1)!r}, which RazorRecon does "
            "not serve; it serves SQLite (a file path, sqlite:///relative.db, "
            "sqlite:////absolute.db or a file: URI) and PostgreSQL (postgresql://...)"
        )
    if value.startswith("sqlite:///"):
        value = value[len("sqlite:///") :]
    elif value.startswith("sqlite://"):
        value = value[len("sqlite://") :]
    return value


def connect(path: str | Path | None = None, *, page_size: int | None = None) -> sqlite3.Connection:
    """A new connection with the house settings. The caller closes it.

    page_size: a new SQLite file's (default HOUSE_PAGE_SIZE; an existing file keeps its
    own). A file that SQLite's backup API copies a database into must have the source's:
    in WAL mode the copy is refused otherwise (`page_size_of`).

    For a PostgreSQL URL this is a `PgConnection` (typed as sqlite3.Connection for the
    callers: it implements the part of that interface core uses; docs/postgres.md).
    """
    target = database_path(str(path)) if path is not None else database_path()
    if is_postgres_url(target):
        return cast(sqlite3.Connection, connect_postgres(target))
    if target != ":memory:" and not target.startswith("file:"):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    busy_ms = busy_timeout_ms()
    conn = sqlite3.connect(
        target,
        timeout=busy_ms / 1000,
        isolation_level=None,  # autocommit; `transaction` opens explicit transactions
        check_same_thread=False,
        uri=target.startswith("file:"),
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
    conn.execute("PRAGMA foreign_keys = ON")
    if target != ":memory:":
        size = HOUSE_PAGE_SIZE if page_size is None else int(page_size)
        conn.execute(f"PRAGMA page_size = {size}")  # before WAL writes the header
        _into_wal(conn, busy_ms)
        conn.execute("PRAGMA synchronous = NORMAL")
    return conn


# The first pause between tries of the WAL switch, and the longest.
_WAL_RETRY_FIRST_S = 0.002
_WAL_RETRY_MOST_S = 0.1


def _into_wal(conn: sqlite3.Connection, busy_ms: int) -> None:
    """Switch `conn`'s file to WAL, trying again for up to the busy timeout while another
    connection holds it.

    The switch reads the file (a shared lock) and then needs it alone. When another
    connection is upgrading its own lock at that moment, SQLite returns SQLITE_BUSY at
    once instead of calling the busy handler, since waiting could deadlock
    ([sqlite3_busy_handler](https://www.sqlite.org/c3ref/busy_handler.html)). Eight
    sessions opening a new file together met it (CI stop 37); the pragma holds no lock
    after failing, so trying it again is safe."""
    deadline = time.monotonic() + busy_ms / 1000
    pause = _WAL_RETRY_FIRST_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if not _is_sqlite_busy(error) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, _WAL_RETRY_MOST_S)


# SQLite's result code for "database is locked" (extended codes keep it in the low byte)
# and PostgreSQL's SQLSTATE lock_not_available (lock_timeout ran out).
_SQLITE_BUSY = 5
_PG_LOCK_NOT_AVAILABLE = "55P03"


_SQLITE_CANTOPEN = 14
# PostgreSQL's connection exceptions (class 08) and the server going away (57P01 admin
# shutdown, 57P02 crash shutdown, 57P03 cannot connect now).
_PG_GONE = ("08", "57P01", "57P02", "57P03")


def unreachable_error(
    error: BaseException, database: object = None
) -> DatabaseUnreachableError | None:
    """`error` as a DatabaseUnreachableError naming `database` (None: the one DATABASE_URL
    names) when the database could not be reached or the connection to it broke, else
    None: connect's own refusal (PostgreSQL), a lost server mid-way (a psycopg connection
    error or shutdown under the sqlite3.OperationalError core.db.backend raises), a SQLite
    file that cannot be opened."""
    if isinstance(error, DatabaseUnreachableError):
        return error
    if not isinstance(error, sqlite3.OperationalError):
        return None
    cause = error.__cause__
    if cause is not None and type(cause).__module__.startswith("psycopg"):
        state = getattr(cause, "sqlstate", None)
        if not (state is None or str(state).startswith(_PG_GONE)):
            return None
        if state is None and not isinstance(cause, _psycopg_operational()):
            return None
        name = redacted(_named(database))
        return DatabaseUnreachableError(
            f"the connection to PostgreSQL at {name} broke: {error}",
            database=name,
            reason=unreachable_reason(str(cause)),
            midway=True,
        )
    code = getattr(error, "sqlite_errorcode", None)
    if not (isinstance(code, int) and code & 0xFF == _SQLITE_CANTOPEN):
        return None
    name = _named(database)
    return DatabaseUnreachableError(
        f"cannot open the SQLite database {name}: {error}",
        database=name,
        reason="the file cannot be opened",
    )


def _named(database: object) -> str:
    """The database an error names: `database` (None: the one DATABASE_URL names) as
    database_path resolves it, or as given when it cannot be resolved."""
    try:
        return database_path(None if database is None else str(database))
    except ConfigError:
        return str(database)


def reachable(database: str) -> bool:
    """Whether `database` answers now: a connection opens and runs one query, or fails
    with something other than being unreachable (it answered, with an error of its own)."""
    try:
        conn = connect(database)
        try:
            conn.execute("SELECT 1").fetchone()
        finally:
            conn.close()
    except Exception as exc:
        return unreachable_error(exc, database) is None
    return True


def _psycopg_operational() -> type[BaseException]:
    import psycopg

    return psycopg.OperationalError


def _is_sqlite_busy(error: sqlite3.OperationalError) -> bool:
    """SQLite's "database is locked" (SQLITE_BUSY and its extended codes)."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF == _SQLITE_BUSY
    return "database is locked" in str(error)


def lock_timeout_error(error: BaseException, database: object = None) -> DatabaseBusyError | None:
    """`error` as a DatabaseBusyError naming `database` (the command's --db; None: the one
    DATABASE_URL names) when it is a lock wait that ran out, else None."""
    if not isinstance(error, sqlite3.OperationalError):
        return None
    cause = error.__cause__
    postgres = getattr(cause, "sqlstate", None) == _PG_LOCK_NOT_AVAILABLE
    if not (postgres or _is_sqlite_busy(error)):
        return None
    name = _named(database)
    try:
        waited = f"{busy_timeout_ms() / 1000:g} s"
    except ConfigError:
        waited = "the busy timeout"
    if postgres:
        name = redacted(name)
        return DatabaseBusyError(
            f"database {name} is busy: another session held a lock this command needed for "
            f"longer than the busy timeout; this command waited {waited} (PostgreSQL's "
            "lock_timeout), stopped and rolled back its unfinished transaction. Run it again "
            f"when that session has finished ({BUSY_TIMEOUT_ENV} sets the wait)",
            database=name,
            waited=waited,
            postgres=True,
        )
    return DatabaseBusyError(
        f"database {name} is busy: another process held its write lock for longer than the "
        f"busy timeout; this command waited {waited}, stopped and rolled back its unfinished "
        f"transaction. Run it again when that process has finished ({BUSY_TIMEOUT_ENV} sets "
        "the wait)",
        database=name,
        waited=waited,
    )


def page_size_of(conn: sqlite3.Connection) -> int:
    """The page size of the SQLite database `conn` opened."""
    return int(conn.execute("PRAGMA page_size").fetchone()[0])


@contextmanager
def transaction(
    conn: sqlite3.Connection, *, immediate: bool = True
) -> Iterator[sqlite3.Connection]:
    """One atomic unit: commit on success, roll back on any exception.

    Nested use joins the outer transaction (a SAVEPOINT), so a function that writes can be
    called alone or as part of a larger atomic step.
    """
    if is_postgres(conn) and not conn.in_transaction:
        # A reading unit sees one snapshot, as SQLite's deferred BEGIN does.
        conn.execute("BEGIN" if immediate else "BEGIN ISOLATION LEVEL REPEATABLE READ")
        try:
            if immediate:
                # The write lock: writers queue, as behind SQLite's BEGIN IMMEDIATE.
                conn.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return
    if conn.in_transaction:
        if immediate and is_postgres(conn):
            conn.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")  # re-entrant
        conn.execute("SAVEPOINT nested")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK TO SAVEPOINT nested")
            conn.execute("RELEASE SAVEPOINT nested")
            raise
        conn.execute("RELEASE SAVEPOINT nested")
        return
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextmanager
def open_database(path: str | Path | None = None) -> Iterator[sqlite3.Connection]:
    """Connect, bring the schema up to date, yield, close."""
    from core.db.migrate import migrate_with_owner

    conn = connect(path)
    try:
        migrate_with_owner(conn)
        yield conn
    finally:
        conn.close()


# How often the background checkpointer looks for committed pages to move (seconds).
CHECKPOINT_INTERVAL_S = 0.05


@contextmanager
def background_checkpoints(conn: sqlite3.Connection) -> Iterator[None]:
    """Move committed WAL pages into the database file on a second connection and thread
    while `conn` goes on working.

    In WAL mode the connection that commits normally copies the WAL into the database itself
    (an automatic checkpoint, about 1 s per 500 MB), stalling its next step. For large
    writes `conn`'s automatic checkpoints are switched off and a passive checkpoint runs
    every CHECKPOINT_INTERVAL_S on another connection instead; SQLite releases the GIL while
    it copies, and a passive checkpoint never blocks writers or readers. On exit the thread
    stops and `conn`'s setting is restored. A database not in WAL mode (`:memory:`) is left
    as it is.
    """
    row = conn.execute("PRAGMA database_list").fetchone()
    path = str(row[2] or "") if row is not None else ""
    mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    if not path or mode != "wal":
        yield
        return
    previous = int(conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    stop = threading.Event()
    busy_ms = busy_timeout_ms()

    def checkpoint() -> None:
        helper = sqlite3.connect(path, timeout=busy_ms / 1000, isolation_level=None)
        try:
            while not stop.wait(CHECKPOINT_INTERVAL_S):
                helper.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            helper.close()

    worker = threading.Thread(target=checkpoint, name="wal-checkpoint", daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join()
        conn.execute(f"PRAGMA wal_autocheckpoint = {previous}")


@contextmanager
def rollback_journal_while_new(conn: sqlite3.Connection) -> Iterator[bool]:
    """A brand-new SQLite database (no import, no run) in the rollback journal instead of
    WAL for the duration, WAL again afterwards; yields whether it switched.

    In WAL mode every page of a bulk load is written twice: into the WAL at commit, then by
    a checkpoint into the database file. A rollback journal keeps only the pages that
    held data when the transaction began; pages the file grows by are written once, in
    place, and journaled not at all ([Atomic commit](https://www.sqlite.org/atomiccommit.html)
    3.x, [journal_mode](https://www.sqlite.org/pragma.html#pragma_journal_mode)). The first
    store of 1M wide payments (about 800 MB of pages) into a new file: 3.7 instead of
    6.5-7.4 CPU s for the copy alone (docs/benchmark.md, "`--db` at 1M, fifth round").
    A crash meanwhile leaves a hot journal that the next connection rolls back, as in any
    rollback-journal database; synchronous stays as `connect` set it.

    Only outside a transaction, only for a file with nothing stored yet, and only when no
    other connection has it open: leaving WAL needs the only connection, which SQLite
    checks without waiting here (busy timeout 0; another process holding the file open
    keeps it in WAL and the load goes through the WAL as before). PostgreSQL: nothing."""
    if is_postgres(conn) or conn.in_transaction or not _nothing_stored(conn):
        yield False
        return
    row = conn.execute("PRAGMA database_list").fetchone()
    mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    if row is None or not row[2] or mode != "wal":
        yield False
        return
    busy = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        switched = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
    except sqlite3.OperationalError:  # another connection has the file open
        switched = "wal"
    finally:
        conn.execute(f"PRAGMA busy_timeout = {busy}")
    if switched != "delete":
        yield False
        return
    try:
        yield True
    finally:
        # Refused inside a caller's transaction or beside another connection: the next
        # `connect` switches the file to WAL then.
        if not conn.in_transaction:
            with suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA journal_mode = WAL")


def _nothing_stored(conn: sqlite3.Connection) -> bool:
    """No import and no run recorded: a database just created (and migrated)."""
    return (
        conn.execute("SELECT 1 FROM imports LIMIT 1").fetchone() is None
        and conn.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is None
    )
