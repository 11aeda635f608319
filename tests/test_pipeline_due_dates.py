"""Exception due dates count the run's working days (its holidays as well as weekends)
from the run's as-of, the date the books are reconciled to, not the wall clock."""

from __future__ import annotations

import sqlite3

import pytest

from core.calendar import CalendarParams, WorkingCalendar, ist_date
from core.engine import EngineParams
from core.pipeline import reconcile_folder_into_db
from core.review.due import working_days_for

from .conftest import SPEC_EXAMPLE


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


AS_OF = 1_782_844_199  # 2026-06-30T23:59:59+05:30, the spec example's as-of


def test_exception_due_dates_skip_the_runs_holidays(conn: sqlite3.Connection) -> None:
    as_of_day = ist_date(AS_OF)
    holiday = WorkingCalendar().add_working_days(as_of_day, 1)  # next working day: a holiday
    calendar = WorkingCalendar([holiday])
    params = EngineParams(calendar=CalendarParams(holidays=frozenset({holiday})))
    reconcile_folder_into_db(conn, SPEC_EXAMPLE / "dataset", params=params, as_of=AS_OF)
    rows = conn.execute(
        "SELECT exposure_class, exposure_amount, due_date, opened_at FROM exceptions"
    ).fetchall()
    assert rows
    moved = 0
    for exposure_class, amount, due, opened_at in rows:
        assert opened_at > AS_OF  # opened now, due counted from the as-of
        start = as_of_day
        days = working_days_for(exposure_class, amount)
        assert due == calendar.add_working_days(start, days).isoformat()
        assert due != holiday.isoformat()
        moved += due != WorkingCalendar().add_working_days(start, days).isoformat()
    assert moved == len(rows)  # every due date is a working day later than without it
