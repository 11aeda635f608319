"""Hand edits behind the triggers of migration 0113 (a completed run, its outcomes and an
exception's identity are refused by the database), for tests that simulate what only the
database's owner could still do."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from core.db import connect
from core.db.audit import GUARD_TRIGGERS
from core.db.backend import is_postgres


@contextmanager
def guards_off(conn: sqlite3.Connection, table: str) -> Iterator[sqlite3.Connection]:
    """A connection that may change `table` past its guarding triggers meanwhile: on SQLite
    anyone with the file drops them (created again after, from their own text); on
    PostgreSQL only the owner role can, by disabling them."""
    names = GUARD_TRIGGERS[table]
    if not is_postgres(conn):
        marks = ", ".join("?" for _ in names)
        texts = [
            str(r[0])
            for r in conn.execute(
                f"SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})",
                names,
            )
        ]
        for name in names:
            conn.execute(f"DROP TRIGGER {name}")
        try:
            yield conn
        finally:
            for text in texts:
                conn.execute(text)
        return
    owner = connect(os.environ["DATABASE_OWNER_URL"])
    try:
        for name in names:
            owner.execute(f"ALTER TABLE {table} DISABLE TRIGGER {name}")
        try:
            yield owner
        finally:
            for name in names:
                owner.execute(f"ALTER TABLE {table} ENABLE TRIGGER {name}")
    finally:
        owner.close()
