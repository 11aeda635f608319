"""An open dispute's review due date is its `respond_by` (IST date), not the exposure rule."""

from __future__ import annotations

import sqlite3

import pytest

from core.calendar import WorkingCalendar, ist_date
from core.review import sync_exceptions, working_days_for
from tests.engine_support import ts
from tests.review_support import Finding, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


NOW = ts("2026-07-01T10:00")


def _dispute(conn: sqlite3.Connection, dispute_id: str, respond_by: int | None) -> None:
    conn.execute(
        "INSERT INTO disputes (id, payment_id, amount, status, respond_by, created_at)"
        " VALUES (?, 'pay_1', 12000, 'open', ?, ?)",
        (dispute_id, respond_by, ts("2026-06-20")),
    )


def test_open_dispute_is_due_on_its_respond_by_ist_date(conn: sqlite3.Connection) -> None:
    _dispute(conn, "disp_A", ts("2026-07-09T23:30"))  # 18:00 UTC: still the 9th in IST
    _dispute(conn, "disp_B", None)
    _dispute(conn, "disp_C", ts("2026-07-20T10:00"))
    conn.commit()
    run = write_run(
        conn,
        [
            Finding("disp_A", "DISPUTE_OPEN", 12_000, "disputed", entity_type="dispute"),
            Finding("disp_B", "DISPUTE_OPEN", 12_000, "disputed", entity_type="dispute"),
            Finding("disp_C", "DISPUTE_LOST", 12_000, "realised_loss", entity_type="dispute"),
        ],
    )
    sync_exceptions(conn, run, now=NOW)
    due = dict(conn.execute("SELECT entity_id, due_date FROM exceptions").fetchall())
    assert due["disp_A"] == "2026-07-09"
    by_rule = WorkingCalendar().add_working_days(ist_date(NOW), working_days_for("disputed", 1))
    assert due["disp_B"] == by_rule.isoformat()  # no respond_by: the exposure rule
    lost_rule = working_days_for("realised_loss", 12_000)
    assert due["disp_C"] == WorkingCalendar().add_working_days(ist_date(NOW), lost_rule).isoformat()
