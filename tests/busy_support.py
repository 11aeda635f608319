"""Another connection holding a database's write lock, for the busy-database tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.db import connect
from core.db.backend import WRITE_LOCK, is_postgres_url


@contextmanager
def write_lock_held(database: str | Path) -> Iterator[sqlite3.Connection]:
    """Another connection holding the database's write lock for the block, then rolling
    back: on SQLite a second sqlite3 connection's BEGIN IMMEDIATE, on PostgreSQL another
    session's transaction holding the lock every writing unit takes (core.db.backend.
    WRITE_LOCK). Yields that connection: what it writes meanwhile is never committed."""
    if is_postgres_url(str(database)):
        other = connect(str(database))
        try:
            other.execute("BEGIN")
            other.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,)).fetchone()
            yield other
            other.execute("ROLLBACK")
        finally:
            other.close()
        return
    plain = sqlite3.connect(database, isolation_level=None)
    try:
        plain.execute("BEGIN IMMEDIATE")
        yield plain
        plain.execute("ROLLBACK")
    finally:
        plain.close()
