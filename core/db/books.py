"""SQL for closing the books (core.books): the exceptions of a run, read as entity keys."""

from __future__ import annotations

import sqlite3


def exception_keys(conn: sqlite3.Connection, run_id: int) -> frozenset[tuple[str, str]]:
    """(entity_type, entity_id) of every EXCEPTION outcome of run `run_id`."""
    rows = conn.execute(
        "SELECT entity_type, entity_id FROM outcomes WHERE run_id = ? AND status = ?",
        (run_id, "EXCEPTION"),
    )
    return frozenset((str(r[0]), str(r[1])) for r in rows)
