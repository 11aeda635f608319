"""The PostgreSQL backend: a psycopg 3 connection that speaks the part of `sqlite3`'s
connection interface `core.db` uses, so the same statements serve both databases.

What differs, and where it is handled (docs/postgres.md):

- placeholders: `?` becomes `%s` (and a literal `%` becomes `%%`) outside string literals
  and quoted names, in `translate` — statements keep one spelling in `core/db`;
- rows: `PgRow` is a tuple that can also be indexed by column name and has `keys()`, like
  `sqlite3.Row`;
- transactions: autocommit between units of work; `core.db.transaction` opens `BEGIN` and,
  for a writing unit (SQLite's BEGIN IMMEDIATE), takes one transaction-scoped advisory lock
  (`pg_advisory_xact_lock(WRITE_LOCK)`): writers queue as on SQLite, readers never wait,
  and the audit chain's head is read under that lock, so concurrent appenders never fork it;
- schema: migrations of their own per dialect (`migrations_pg/`, same version numbers);
- bulk loads: `copy_csv` (COPY ... FROM STDIN, CSV that Arrow writes in large blocks) and
  `copy_rows` (row by row, small copies) instead of ADBC's SQLite ingest.

The app role named by DATABASE_URL cannot UPDATE, DELETE or TRUNCATE the audit trail (the
owner role of DATABASE_OWNER_URL runs the migrations and keeps those rights to itself),
and triggers refuse those statements for every role (migration 0090).
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

# The key of the one advisory lock every writing transaction takes (an arbitrary constant:
# "RRWRITE" in ASCII). Transaction-scoped: released by COMMIT or ROLLBACK, never leaked.
WRITE_LOCK = 0x5252_5752_4954_45
# How long a statement waits for a lock another connection holds before it gives up: SQLite's
# busy timeout ("database is locked"), PostgreSQL's lock_timeout (SQLSTATE 55P03) on every
# session `PgConnection` opens. The CLI says so in one line, exit 3 (core.__main__); the app
# in one st.error (ui.shell.describe_error).
BUSY_TIMEOUT_ENV = "RAZORRECON_BUSY_TIMEOUT_S"
BUSY_TIMEOUT_MS = 30_000  # the default
POSTGRES_SCHEMES = ("postgresql", "postgres")
# `:/+`: a URL that went through pathlib (argparse's type=Path) has lost one slash.
_SCHEME = re.compile(r"^(postgresql|postgres)(\+[a-z0-9]+)?:/+", re.IGNORECASE)


def is_postgres_url(value: str | None) -> bool:
    return value is not None and _SCHEME.match(value.strip()) is not None


def plain_url(value: str) -> str:
    """`postgresql+psycopg://...` (SQLAlchemy style), or a URL pathlib folded to
    `postgresql:/...`, as libpq accepts it."""
    value = value.strip()
    match = _SCHEME.match(value)
    if match is None:
        return value
    return "postgresql://" + value[match.end() :]


class PgRow(tuple[Any, ...]):
    """A result row: a tuple, also indexed by column name (like sqlite3.Row)."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> PgRow:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return super().__getitem__(self._names[key])
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: psycopg.Cursor[Any]) -> Any:
    description = cursor.description or []
    names = {column.name: i for i, column in enumerate(description)}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(values, names)

    return make


_TRANSLATED: dict[str, str] = {}
_DIALECT: dict[str, str] = {}
# SQLite spellings core/db uses, and PostgreSQL's: null-safe comparison, the temporary
# schema's name, the unary + SQLite reads as "do not use an index for this term".
_REWRITES = (
    (re.compile(r"\bIS NOT (?!NULL\b)"), "IS DISTINCT FROM "),
    (re.compile(r"\bIS (?!NOT\b|NULL\b|DISTINCT\b|TRUE\b|FALSE\b)"), "IS NOT DISTINCT FROM "),
    (re.compile(r"\btemp\.(?=\w)"), "pg_temp."),
    (re.compile(r"(ORDER BY|,)\s*\+(?=\w+\.)"), r"\1 "),
    # SQLite's LIKE ignores ASCII case; PostgreSQL's ILIKE does.
    (re.compile(r"\bLIKE\b"), "ILIKE"),
)
# SQLite sums a comparison as 0/1; PostgreSQL has no sum(boolean). (Literals allowed inside.)
_PART = r"(?:[^()']|'[^']*'|\([^()]*\))"
_SUM_OF_COMPARISON = re.compile(rf"\bsum\(({_PART}*?(?:=|<|>|\bIS\b){_PART}*)\)", re.IGNORECASE)


def dialect_sql(sql: str) -> str:
    """A statement of core/db in PostgreSQL's spelling (see _REWRITES); string literals
    are left alone. Keywords are matched in capitals, as core/db writes them; scripts
    (migrations) never pass through here (`PgConnection.execute_script`)."""
    done = _DIALECT.get(sql)
    if done is not None:
        return done
    summed = _SUM_OF_COMPARISON.sub(r"sum(CASE WHEN \1 THEN 1 ELSE 0 END)", sql)
    parts = re.split(r"('(?:[^']|'')*')", summed)  # odd parts are string literals
    for i in range(0, len(parts), 2):
        for pattern, replacement in _REWRITES:
            parts[i] = pattern.sub(replacement, parts[i])
    done = "".join(parts)
    if len(_DIALECT) < 4096:
        _DIALECT[sql] = done
    return done


def translate(sql: str) -> str:
    """A statement written with `?` placeholders, as psycopg's `%s` format wants it."""
    done = _TRANSLATED.get(sql)
    if done is not None:
        return done
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            out.append("%%" if ch == "%" else ch)
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    done = "".join(out)
    if len(_TRANSLATED) < 4096:
        _TRANSLATED[sql] = done
    return done


@functools.cache
def _integral_numeric_loader() -> Any:
    """A loader for numeric values: int when integral (sums of paise), else float (averages).
    Made on first use, so that commands on SQLite never import psycopg (~0.2 s)."""
    from psycopg.types.numeric import NumericLoader

    class IntegralNumericLoader(NumericLoader):
        def load(self, data: Any) -> Any:
            value = super().load(data)
            if value == value.to_integral_value():
                return int(value)
            return float(value)

    return IntegralNumericLoader


class PgCursor:
    """The result of `PgConnection.execute`: fetchone/fetchall/fetchmany, iteration,
    rowcount, description."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def lastrowid(self) -> None:
        raise NotImplementedError(
            "PostgreSQL has no lastrowid: write the statement with RETURNING id"
        )

    def fetchone(self) -> Any:
        if self._cursor.description is None:
            return None
        return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        if self._cursor.description is None:
            return []
        return list(self._cursor.fetchall())

    def fetchmany(self, size: int = 1) -> list[Any]:
        if self._cursor.description is None:
            return []
        return list(self._cursor.fetchmany(size))

    def __iter__(self) -> Iterator[Any]:
        if self._cursor.description is None:
            return iter(())
        return iter(self._cursor)

    def close(self) -> None:
        self._cursor.close()


@contextmanager
def sqlite_errors() -> Iterator[None]:
    """psycopg's errors as the sqlite3 classes callers catch (IntegrityError for a broken
    constraint or a trigger's refusal, OperationalError for a lost server or a lock
    timeout, DatabaseError for the rest, e.g. a privilege the role lacks); the psycopg
    error is kept as the cause. The message keeps PostgreSQL's first line."""
    import psycopg

    try:
        yield
    except psycopg.IntegrityError as exc:
        raise sqlite3.IntegrityError(_first_line(exc)) from exc
    except psycopg.OperationalError as exc:
        raise sqlite3.OperationalError(_first_line(exc)) from exc
    except psycopg.Error as exc:
        raise sqlite3.DatabaseError(_first_line(exc)) from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PgConnection:
    """A psycopg connection in autocommit mode with sqlite3.Connection's calling style.

    `dialect` is 'postgresql' (a sqlite3.Connection has none: `dialect_of` answers
    'sqlite' for it).
    """

    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = plain_url(url)
        wait = lock_timeout_setting()  # a bad setting is refused before connecting
        self._conn = psycopg.connect(self.url, autocommit=True, row_factory=_row_factory)
        # The session's lock waits end as SQLite's busy timeout does (lock_timeout bounds a
        # wait for a lock, never a statement's own time: a long COPY or index build runs on).
        self._conn.execute(b"SELECT set_config('lock_timeout', %s, false)", (wait,))
        # sum() of integers is numeric in PostgreSQL: an int again, as SQLite gives it.
        self._conn.adapters.register_loader("numeric", _integral_numeric_loader())
        self._depth = 0
        self.row_factory: Any = None  # accepted and ignored: rows are always PgRow

    @property
    def raw(self) -> psycopg.Connection[Any]:
        """The psycopg connection (for COPY)."""
        return self._conn

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(self._conn.info.transaction_status != TransactionStatus.IDLE)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        cursor = self._conn.cursor()
        with sqlite_errors():
            if params is None:
                cursor.execute(dialect_sql(sql).encode())
            else:
                cursor.execute(translate(dialect_sql(sql)).encode(), tuple(params))
        return PgCursor(cursor)

    def execute_script(self, sql: str) -> None:
        """A script (several statements, no parameters) exactly as written: migrations."""
        with sqlite_errors():
            self._conn.execute(sql.encode())

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        cursor = self._conn.cursor()
        with sqlite_errors():
            cursor.executemany(translate(dialect_sql(sql)).encode(), [tuple(r) for r in rows])
        return PgCursor(cursor)

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """COPY rows into `table` (columns named) in the current transaction; the count."""
        count = 0
        names = ", ".join(columns)
        statement = f"COPY {table} ({names}) FROM STDIN".encode()
        with sqlite_errors(), self._conn.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
                count += 1
        return count

    def copy_csv(self, table: str, columns: Sequence[str], blocks: Iterable[Any]) -> None:
        """COPY CSV text (`blocks`: bytes-like pieces, each whole lines; an unquoted empty
        field is NULL, a quoted one an empty string) into `table` (columns named) in the
        current transaction."""
        names = ", ".join(columns)
        statement = f"COPY {table} ({names}) FROM STDIN (FORMAT csv)".encode()
        with sqlite_errors(), self._conn.cursor() as cursor, cursor.copy(statement) as copy:
            for block in blocks:
                copy.write(block)

    def copy_csv_out(self, query: str, params: Sequence[Any] = ()) -> bytearray:
        """The rows of `query` (a SELECT written with `?` placeholders) as COPY CSV text in
        UTF-8 whatever the connection's encoding: an unquoted empty field is NULL, a quoted
        one an empty string. COPY takes no server-side parameters, so psycopg merges
        `params` into the statement as quoted literals, client-side. One buffer grows as
        the rows arrive (no second copy of the text to join pieces)."""
        sql = dialect_sql(query)
        sql = translate(sql) if params else sql  # `%s` placeholders only where psycopg merges
        statement = f"COPY ({sql}) TO STDOUT (FORMAT csv, ENCODING 'UTF8')".encode()
        text = bytearray()
        with (
            sqlite_errors(),
            self._conn.cursor() as cursor,
            cursor.copy(statement, tuple(params) or None) as copy,
        ):
            for block in copy:
                text += block
        return text

    def commit(self) -> None:
        if self.in_transaction:
            self._conn.execute(b"COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self._conn.execute(b"ROLLBACK")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PgConnection:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        """As sqlite3's `with conn:`: commit an open transaction, or roll it back when the
        block raised; the connection stays open (close() closes it)."""
        if exc_type is None:
            self.commit()
        else:
            self.rollback()


def connect_postgres(url: str) -> PgConnection:
    """A PostgreSQL connection (autocommit between units of work); refused clearly when the
    server cannot be reached."""
    import psycopg

    from core.errors import DatabaseUnreachableError

    try:
        return PgConnection(url)
    except psycopg.OperationalError as exc:
        raise DatabaseUnreachableError(
            f"cannot connect to PostgreSQL at {redacted(url)}: {exc}",
            database=redacted(url),
            reason=unreachable_reason(str(exc)),
        ) from exc


def unreachable_reason(driver_message: str) -> str:
    """A driver's message about a failed or lost connection, in a few words."""
    text = driver_message.lower()
    for marker, reason in (
        ("connection refused", "connection refused"),
        ("timeout expired", "connection timed out"),
        ("timed out", "connection timed out"),
        ("could not translate host name", "unknown host"),
        ("name or service not known", "unknown host"),
        ("no route to host", "no route to host"),
        ("the database system is starting up", "the server is starting up"),
        ("the database system is shutting down", "the server is shutting down"),
        ("terminating connection", "the server ended the connection"),
        ("server closed the connection", "the server closed the connection"),
        ("password authentication failed", "the server refused the credentials"),
        ("does not exist", "no such database or role"),
    ):
        if marker in text:
            return reason
    return "the connection failed"


def redacted(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def shown(database: str | os.PathLike[str]) -> str:
    """A database as messages name it: a PostgreSQL URL whole again (a `--db` given to
    argparse's type=Path lost a slash) and without its password; a file as given."""
    text = os.fspath(database)
    return redacted(plain_url(text)) if is_postgres_url(text) else text


def owner_url(url: str | None = None) -> str | None:
    """DATABASE_OWNER_URL when it names the same kind of database as `url`: the role that
    runs migrations on PostgreSQL. None otherwise (then `url`'s own role migrates)."""
    owner = os.environ.get("DATABASE_OWNER_URL", "").strip()
    return owner if owner and is_postgres_url(owner) else None


def dialect_of(conn: Any) -> str:
    """'postgresql' for a PgConnection, 'sqlite' for a sqlite3 connection."""
    return str(getattr(conn, "dialect", "sqlite"))


def is_postgres(conn: Any) -> bool:
    return dialect_of(conn) == "postgresql"


def busy_timeout_ms() -> int:
    """RAZORRECON_BUSY_TIMEOUT_S in milliseconds, else BUSY_TIMEOUT_MS (a bad value is
    refused, not guessed)."""
    return round(seconds_setting(BUSY_TIMEOUT_ENV, BUSY_TIMEOUT_MS / 1000, 86_400) * 1000)


def lock_timeout_setting() -> str:
    """PostgreSQL's lock_timeout for our sessions: the busy timeout, in ms. At least 1 ms:
    0 s means no wait, as SQLite reads a busy timeout of 0, where PostgreSQL would read a
    lock_timeout of 0 as no limit at all."""
    return f"{max(1, busy_timeout_ms())}ms"


@contextmanager
def lock_waits_unbounded(conn: Any) -> Iterator[None]:
    """PostgreSQL: the block's lock waits without the busy timeout (lock_timeout 0, the
    server's default), inside the caller's transaction, then the setting as it was. For
    what waits on purpose: a migrator for the one before it (MIGRATE_LOCK) and a migration's
    table locks, and a bulk load's table locks (TRUNCATE, dropping and building indexes,
    ANALYZE), which a load holding the write lock (and a run the run lock) waits for only
    while readers finish; stopping it there would throw the load away for a reader. An error
    inside leaves the setting to the caller's rollback, which undoes it too. SQLite: nothing."""
    if not is_postgres(conn):
        yield
        return
    before = str(conn.execute("SELECT current_setting('lock_timeout')").fetchone()[0])
    conn.execute("SELECT set_config('lock_timeout', '0', true)").fetchone()
    yield
    conn.execute("SELECT set_config('lock_timeout', ?, true)", (before,)).fetchone()


def seconds_setting(name: str, default: float, maximum: float | None = None) -> float:
    """The environment variable `name` as seconds (0 or more, at most `maximum`), `default`
    when unset or blank; a bad value is refused (ConfigError), not guessed."""
    from core.errors import ConfigError

    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or (maximum is not None and not value <= maximum):  # NaN fails too
        bound = "0 or more" if maximum is None else f"0 to {maximum:g}"
        raise ConfigError(f"{name}={text!r}: expected seconds, {bound}")
    return value
