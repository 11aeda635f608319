"""The settlement calendar (spec section 4): IST dates and Monday-to-Friday working days.

`add_working_days` counts from a calendar date: a payment made on Saturday is due two
working days later on Tuesday. The vectorised form uses numpy's business-day functions
with the same rule, so the engine works on whole columns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pandas as pd

IST = ZoneInfo("Asia/Kolkata")
IST_OFFSET_SECONDS = 5 * 3600 + 1800  # +05:30, the one definition (SQL uses its value)
WEEKMASK = "1111100"
# The most working days each calendar parameter may be: the Data page's inputs and the
# command line's options (core.reconcile_options) take these bounds, and CalendarParams
# refuses anything beyond them. A billion settlement days meant nothing was ever late; 10^20
# ended `reconcile` in an OverflowError (an independent attacker, round 3).
CALENDAR_LIMITS: dict[str, int] = {
    "settlement_days": 30,
    "international_days": 60,
    "grace_days": 30,
    "bank_days": 30,
}


@dataclass(frozen=True)
class CalendarParams:
    """Parameters of one reconciliation run's calendar.

    settlement_days: working days from a domestic payment's IST date to its due date (T+N).
    international_days: the same for international payments.
    grace_days: working days after the due date before a payment is overdue or late.
    bank_days: working days after a settlement's date within which its bank credit is due.
    holidays: dates that are not working days, besides Saturdays and Sundays.
    """

    settlement_days: int = 2
    international_days: int = 7
    grace_days: int = 1
    bank_days: int = 1
    holidays: frozenset[dt.date] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        for name, most in CALENDAR_LIMITS.items():
            problem = calendar_days_problem(getattr(self, name), most)
            if problem is not None:
                from core.errors import ConfigError

                raise ConfigError(f"{name}: {problem}")


def calendar_days_problem(value: int, most: int) -> str | None:
    """Why `value` is no number of working days for a parameter bounded by `most`."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"not a whole number of working days: {value!r}"
    if value < 0:
        return f"must be 0 or more: {value}"
    if value > most:
        return f"at most {most} working days: {value}"
    return None


def ist_date(unix_seconds: int) -> dt.date:
    """The IST calendar date of a Unix timestamp."""
    return dt.datetime.fromtimestamp(int(unix_seconds), tz=IST).date()


def ist_dates(unix_seconds: npt.NDArray[np.int64]) -> npt.NDArray[np.datetime64]:
    """Vectorised `ist_date`: an array of Unix seconds to an array of datetime64[D]."""
    shifted = np.asarray(unix_seconds, dtype=np.int64) + IST_OFFSET_SECONDS
    return (shifted // 86400).astype("datetime64[D]")


class WorkingCalendar:
    """Working days are Monday to Friday minus holidays."""

    def __init__(self, holidays: Iterable[dt.date] = ()) -> None:
        self.holidays = frozenset(holidays)
        self._busdays = np.busdaycalendar(
            weekmask=WEEKMASK,
            holidays=np.array(sorted(self.holidays), dtype="datetime64[D]"),
        )

    def is_working_day(self, day: dt.date) -> bool:
        return day.weekday() < 5 and day not in self.holidays

    def add_working_days(self, day: dt.date, n: int) -> dt.date:
        """`day` + n working days; a non-working `day` counts from the working day before it."""
        current = day
        while not self.is_working_day(current):
            current -= dt.timedelta(days=1)
        remaining = n
        while remaining > 0:
            current += dt.timedelta(days=1)
            if self.is_working_day(current):
                remaining -= 1
        return current

    def add_working_days_array(
        self, days: npt.NDArray[np.datetime64], n: int | npt.NDArray[np.int64]
    ) -> npt.NDArray[np.datetime64]:
        """Vectorised `add_working_days` over datetime64[D] values."""
        result: npt.NDArray[np.datetime64] = np.busday_offset(
            np.asarray(days, dtype="datetime64[D]"), n, roll="backward", busdaycal=self._busdays
        )
        return result


def load_holidays(path: str | Path) -> frozenset[dt.date]:
    """A holiday file: one ISO date per line (YYYY-MM-DD); '#' starts a comment.

    A CSV whose first column is the date also works (a header row is skipped).
    """
    from core.errors import InputError, Problem

    days: set[dt.date] = set()
    problems: list[Problem] = []
    name = Path(path).name
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8-sig").splitlines(), 1):
        text = raw.split("#", 1)[0].split(",", 1)[0].strip()
        if not text or (number == 1 and not text[:1].isdigit()):
            continue
        try:
            days.add(dt.date.fromisoformat(text))
        except ValueError:
            problems.append(Problem(name, number, "1", f"not an ISO date: {text!r}"))
    if problems:
        raise InputError(problems)
    return frozenset(days)


def month_bounds(month: str) -> tuple[dt.date, dt.date]:
    """'YYYY-MM' -> its first day and the first day of the next month."""
    first = dt.date.fromisoformat(f"{month}-01")
    following = (first.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    return first, following


# Asia/Kolkata has been a fixed +05:30 (IST_OFFSET_SECONDS) since its last change
# (1945-10-15): from 1946 to 9999 an IST date is integer arithmetic on Unix seconds. Outside
# that span the helpers below convert with pandas and the zone, as the code they replace did.
IST_FIXED_SINCE = -757_382_400  # 1946-01-01T00:00:00Z
_FIXED_UNTIL = 253_402_214_400  # 9999-12-31T00:00:00Z


def ist_day_numbers(unix_seconds: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Each Unix second's IST calendar date as days since 1970-01-01: what
    `pd.to_datetime(s, unit="s", utc=True).dt.tz_convert(IST).dt.date` gives, without the
    conversion from 1946 to 9999."""
    seconds = np.asarray(unix_seconds, dtype=np.int64)
    days: npt.NDArray[np.int64] = ist_dates(seconds).astype(np.int64)
    odd = _outside_fixed(seconds)
    if odd.any():
        local = _converted(seconds[odd])
        naive = local.tz_localize(None).normalize().to_numpy().astype("datetime64[D]")
        days[odd] = naive.astype(np.int64)
    return days


def _outside_fixed(seconds: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    odd: npt.NDArray[np.bool_] = (seconds < IST_FIXED_SINCE) | (seconds > _FIXED_UNTIL)
    return odd


def _converted(seconds: npt.NDArray[np.int64]) -> pd.DatetimeIndex:
    import pandas as pd

    return pd.to_datetime(seconds, unit="s", utc=True).tz_convert(IST)


def _day_number(day: dt.date) -> int:
    return (day - dt.date(1970, 1, 1)).days


def in_ist_month(unix_seconds: npt.ArrayLike, month: str) -> npt.NDArray[np.bool_]:
    """Whether each Unix second's IST date falls in `month` ('YYYY-MM', `month_bounds`)."""
    first, following = month_bounds(month)
    days = ist_day_numbers(unix_seconds)
    inside: npt.NDArray[np.bool_] = (days >= _day_number(first)) & (days < _day_number(following))
    return inside


def ist_month_labels(unix_seconds: npt.ArrayLike) -> npt.NDArray[Any]:
    """Each Unix second's IST month as 'YYYY-MM' (what strftime("%Y-%m") of the IST time
    gives)."""
    seconds = np.asarray(unix_seconds, dtype=np.int64)
    days = ist_dates(seconds)
    labels: npt.NDArray[Any] = np.datetime_as_string(days.astype("datetime64[M]"), unit="M")
    odd = _outside_fixed(seconds)
    if odd.any():
        labels = labels.astype(object)
        labels[odd] = _converted(seconds[odd]).strftime("%Y-%m").to_numpy(dtype=object)
    return labels
