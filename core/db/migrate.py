"""Named, recorded migrations: every `migrations/NNNN_name.sql` file, applied once, in order.

Each migration runs in its own transaction and is recorded in `schema_migrations`, so
starting the app or a CLI command on an up-to-date database changes nothing.
Number ranges by area, so parallel work never collides: 0001-0009 base, 0010-0019 ingest,
0020 engine, 0030 benchmark, 0040 review and audit, 0050 investigator, 0060 Razorpay,
0070 app, 0090 PostgreSQL backend.

PostgreSQL has its own files, `migrations_pg/NNNN_name.sql` with the same names, so both
databases record the same `schema_migrations`; a SQLite migration without its PostgreSQL
twin is refused on PostgreSQL (fail closed) instead of leaving that schema behind.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from core.db.backend import connect_postgres, is_postgres, lock_waits_unbounded, owner_url

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
MIGRATIONS_PG_DIR = Path(__file__).with_name("migrations_pg")
# The advisory lock a PostgreSQL migrator holds ("RRMIGRA"): one migrator at a time.
MIGRATE_LOCK = 0x5252_4D49_4752_41
# Migrations followed by a Python step in their transaction (`_after_sql`). Each step is
# registered by the module above this package that owns it (`register_python_step`; 0120's
# by core.activity).
WITH_PYTHON_STEP = ("0120_raw_row_macs",)
_PYTHON_STEPS: dict[str, Callable[[Any], object]] = {}
_ALTERED = re.compile(r"^ALTER TABLE (\w+)", re.MULTILINE | re.IGNORECASE)


def register_python_step(name: str, step: Callable[[Any], object]) -> None:
    """Make `step(conn)` (its result unused) the Python step of migration `name` (one of
    WITH_PYTHON_STEP). The step needs core.audit and core.activity, which build on this
    package, so it cannot be imported from here (tests/test_architecture.py: no import
    cycle): its module registers it when imported (core.activity; `python -m core` imports
    it before any command on a database, the app through ui.shell)."""
    if name not in WITH_PYTHON_STEP:
        raise ValueError(f"migration {name} has no Python step")
    _PYTHON_STEPS[name] = step


def available_migrations(dialect: str = "sqlite") -> list[tuple[str, str]]:
    """(name, sql) for every migration file of `dialect`, sorted by name."""
    folder = MIGRATIONS_PG_DIR if dialect == "postgresql" else MIGRATIONS_DIR
    return [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.sql"))]


def missing_postgres_twins() -> list[str]:
    """SQLite migrations that have no PostgreSQL file of the same name."""
    pg = {name for name, _ in available_migrations("postgresql")}
    return [name for name, _ in available_migrations() if name not in pg]


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    if is_postgres(conn):
        row = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
        exists = row is not None and row[0] is not None
    else:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
    if not exists:
        return []
    return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply every pending migration; return the names applied now."""
    if is_postgres(conn):
        return _migrate_postgres(conn)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
    )
    done = set(applied_migrations(conn))
    applied: list[str] = []
    for name, sql in available_migrations():
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied it while we waited for the lock.
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                conn.execute("ROLLBACK")
                continue
            for statement in split_statements(sql):
                conn.execute(statement)
            _after_sql(conn, name, sql)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (name, int(time.time())),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied


def _migrate_postgres(conn: Any) -> list[str]:
    from core.errors import ConfigError

    missing = missing_postgres_twins()
    if missing:
        raise ConfigError(
            "PostgreSQL: these migrations have no version in core/db/migrations_pg/: "
            + ", ".join(missing)
        )
    pending = [m for m in available_migrations("postgresql")]
    if set(applied_migrations(conn)) >= {name for name, _ in pending}:
        return []  # up to date: no lock, no write (the app role may not hold CREATE)
    applied: list[str] = []
    # A migrator waits for the one before it, and a migration for the tables it changes,
    # as long as they take: not the busy timeout (core.db.backend.lock_waits_unbounded).
    conn.execute("BEGIN")
    try:
        with lock_waits_unbounded(conn):
            conn.execute(f"SELECT pg_advisory_xact_lock({MIGRATE_LOCK})")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)"
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    for name, sql in pending:
        conn.execute("BEGIN")
        try:
            with lock_waits_unbounded(conn):
                conn.execute(f"SELECT pg_advisory_xact_lock({MIGRATE_LOCK})")
                done = conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,))
                applied_meanwhile = done.fetchone() is not None
                if not applied_meanwhile:
                    conn.execute_script(sql)  # verbatim; PostgreSQL runs several at once
                    _after_sql(conn, name, sql)
            if applied_meanwhile:
                conn.execute("ROLLBACK")
                continue
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (name, int(time.time())),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied


def _after_sql(conn: Any, name: str, sql: str) -> None:
    """The Python step of migration `name`, after its SQL and in its transaction (so it is
    applied with it or not at all, and once): 0120 gives the raw rows stored before it their
    MACs and records the tables' counts in one audit entry, with its anchor
    (core.activity.seal_at_upgrade; docs/review.md "Raw tables changed by hand").

    A step not registered (its module not imported in this process) is needed only when
    the tables the migration's SQL alters hold rows: on tables without rows it would seal
    and record nothing. With rows, the migration is refused (rolled back, RuntimeError)
    instead of being applied without its step; nothing is left half-done."""
    if name not in WITH_PYTHON_STEP:
        return
    step = _PYTHON_STEPS.get(name)
    if step is not None:
        step(conn)
        return
    # Table names from the migration file's own ALTER TABLE statements, not user input.
    tables = sorted(set(_ALTERED.findall(sql)))
    if any(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in tables):
        raise RuntimeError(
            f"migration {name} needs its Python step, not loaded in this process"
            " (import core.activity before opening the database)"
        )


def migrate_with_owner(conn: sqlite3.Connection) -> list[str]:
    """`migrate`, run on PostgreSQL by the owner role of DATABASE_OWNER_URL when it is set
    (the app role of DATABASE_URL then needs no right to change the schema)."""
    owner = owner_url() if is_postgres(conn) else None
    if owner is None:
        return migrate(conn)
    owner_conn = connect_postgres(owner)
    try:
        applied = migrate(cast(sqlite3.Connection, owner_conn))
        grant_app_role(conn, owner_conn)
        return applied
    finally:
        owner_conn.close()


APP_ROLE = "razorrecon_app"


def grant_app_role(conn: Any, owner_conn: Any) -> None:
    """Make DATABASE_URL's login role (`conn`'s) a member of razorrecon_app, the role
    migration 0090 gives the app's rights to, when it is not one: as the owner
    (DATABASE_OWNER_URL), who created that role with CREATEROLE, so the recipe of
    docs/postgres.md needs no GRANT by hand. When the owner may not grant it (the DBA made
    the role), the refusal says which GRANT to run and as whom (ConfigError)."""
    from core.errors import ConfigError

    user, member = conn.execute(
        "SELECT current_user, pg_has_role(current_user, ?, 'MEMBER')", (APP_ROLE,)
    ).fetchone()
    conn.commit()  # the read's transaction ends: the grant is seen by its next statement
    if member:
        return
    quoted = owner_conn.execute("SELECT quote_ident(?)", (str(user),)).fetchone()[0]
    try:
        owner_conn.execute(f"GRANT {APP_ROLE} TO {quoted}")
        owner_conn.commit()
    except sqlite3.DatabaseError as exc:
        owner_conn.rollback()
        why = f"the owner could not grant it: {exc}"
        raise ConfigError(app_role_missing(str(user), why)) from None


def app_role_missing(user: str, why: str) -> str:
    """What to do when DATABASE_URL's role `user` lacks razorrecon_app's rights."""
    return (
        f"the database role {user} (DATABASE_URL) is not a member of {APP_ROLE}, which holds "
        f"the app's rights on the tables ({why}). A superuser, or the role that created "
        f"{APP_ROLE} (DATABASE_OWNER_URL's, with CREATEROLE), runs: GRANT {APP_ROLE} TO "
        f"{user}; then reload. With DATABASE_OWNER_URL set, the app does this itself on its "
        "first start (docs/postgres.md, *Setting up, step by step*)"
    )


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (triggers contain inner semicolons)."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


def permission_refusal(exc: BaseException, database: str | None) -> str | None:
    """For PostgreSQL's "permission denied" (SQLSTATE 42501) on `database` (a
    postgresql:// URL): what to grant to whom (`app_role_missing`); None for any other
    error. A tester's first page said only "permission denied for table runs"."""
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) != "42501" or not database:
        return None
    from urllib.parse import urlparse

    parsed = urlparse(database)
    if not parsed.scheme.startswith("postgres") or not parsed.username:
        return None
    return app_role_missing(parsed.username, str(exc))
