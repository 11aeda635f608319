from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from core.calendar import (
    IST,
    WorkingCalendar,
    in_ist_month,
    ist_date,
    ist_dates,
    ist_day_numbers,
    ist_month_labels,
    load_holidays,
)

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


def test_ist_dates_and_months_by_arithmetic_equal_the_zones_conversion_in_every_era() -> None:
    rng = np.random.default_rng(5)
    edges = np.array(
        [pd.Timestamp(f"{m}-01", tz=IST).value // 10**9 for m in ("2026-06", "2026-07")]
    )
    seconds = np.concatenate(
        [
            rng.integers(-3_000_000_000, 10_000_000_000, 20_000),
            rng.integers(-900_000_000, -700_000_000, 20_000),  # 1941-1945: +06:30 at times
            np.add.outer(edges, np.arange(-2, 2)).ravel(),  # a month's first and last second
            np.array([0, -757_382_401, -757_382_400, 253_402_214_400, 253_402_214_401]),
        ]
    )
    local = pd.to_datetime(seconds, unit="s", utc=True).tz_convert(IST)
    days = (local.tz_localize(None).normalize() - pd.Timestamp("1970-01-01")).days
    assert (ist_day_numbers(seconds) == days.to_numpy()).all()
    labels = local.strftime("%Y-%m").to_numpy()
    assert (ist_month_labels(seconds) == labels).all()
    assert (in_ist_month(seconds, "2026-06") == (labels == "2026-06")).all()
    assert in_ist_month(seconds, "2026-06").sum() >= 2  # the month's edges are in it
