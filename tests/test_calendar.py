from __future__ import annotations

import datetime as dt

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from core.calendar import WorkingCalendar, ist_date, ist_dates, load_holidays

MONDAY = dt.date(2026, 6, 1)


def test_due_date_skips_weekend() -> None:
    cal = WorkingCalendar()
    friday = dt.date(2026, 6, 5)
    assert cal.add_working_days(friday, 2) == dt.date(2026, 6, 9)  # Tuesday


def test_payment_on_saturday_is_due_on_tuesday() -> None:
    cal = WorkingCalendar()
    assert cal.add_working_days(dt.date(2026, 6, 6), 2) == dt.date(2026, 6, 9)


def test_holiday_is_not_a_working_day() -> None:
    cal = WorkingCalendar([dt.date(2026, 6, 2)])
    assert cal.add_working_days(MONDAY, 2) == dt.date(2026, 6, 4)


def test_ist_date_crosses_midnight_before_utc() -> None:
    # 2026-06-01 19:00 UTC is 2026-06-02 00:30 IST.
    ts = int(dt.datetime(2026, 6, 1, 19, 0, tzinfo=dt.UTC).timestamp())
    assert ist_date(ts) == dt.date(2026, 6, 2)
    assert ist_dates(np.array([ts]))[0] == np.datetime64("2026-06-02")


@given(
    st.dates(min_value=dt.date(2024, 1, 1), max_value=dt.date(2028, 12, 31)),
    st.integers(min_value=0, max_value=10),
    st.sets(st.dates(min_value=dt.date(2024, 1, 1), max_value=dt.date(2029, 1, 31)), max_size=20),
)
def test_vectorised_working_days_agree_with_scalar(
    day: dt.date, n: int, holidays: set[dt.date]
) -> None:
    cal = WorkingCalendar(holidays)
    vector = cal.add_working_days_array(np.array([day], dtype="datetime64[D]"), n)
    assert vector[0].astype(dt.date) == cal.add_working_days(day, n)


def test_holiday_file_accepts_comments_and_csv(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "holidays.csv"
    path.write_text("date,name\n2026-08-15,Independence Day\n# note\n2026-10-02\n")
    assert load_holidays(path) == {dt.date(2026, 8, 15), dt.date(2026, 10, 2)}
