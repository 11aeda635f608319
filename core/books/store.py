"""The roll-forward of what the database holds: its raw tables and its latest run."""

from __future__ import annotations

import sqlite3

import pandas as pd

from core.books.rollforward import ledger_events
from core.db.books import exception_keys
from core.db.raw import read_dataset
from core.db.runs import latest_completed_run


def stored_events(conn: sqlite3.Connection) -> pd.DataFrame:
    """The receivable's events over the raw tables, with the differences that the latest
    completed run flagged as exceptions explained (none when there is no run)."""
    run = latest_completed_run(conn)
    flagged = exception_keys(conn, run.id) if run is not None else frozenset()
    return ledger_events(read_dataset(conn), flagged)


def months_of(events: pd.DataFrame) -> list[str]:
    """The IST months ('YYYY-MM') that have events, latest first."""
    if events.empty:
        return []
    return sorted({f"{d.year:04d}-{d.month:02d}" for d in events["day"]}, reverse=True)
