"""Named, recorded migrations: every `migrations/NNNN_name.sql` file, applied once, in order.

Each migration runs in its own transaction and is recorded in `schema_migrations`, so
starting the app or a CLI command on an up-to-date database changes nothing.
Number ranges by area, so parallel work never collides: 0001-0009 base, 0010-0019 ingest,
0020 engine, 0030 benchmark, 0040 review and audit, 0050 investigator, 0060 Razorpay,
0070 app.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def available_migrations() -> list[tuple[str, str]]:
    """(name, sql) for every migration file, sorted by name."""
    return [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(MIGRATIONS_DIR.glob("*.sql"))]


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return []
    return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply every pending migration; return the names applied now."""
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
            for statement in _split_statements(sql):
                conn.execute(statement)
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


def _split_statements(sql: str) -> list[str]:
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
