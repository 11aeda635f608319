"""Closing a month (docs/books.md): its roll-forward frozen, never silently changed.

A closed month shows its snapshot. When later data changes what the books say up to the
end of a closed month, the next open month opens from the snapshot's closing and shows the
change as its own line, `prior_period_adjustments`.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from dataclasses import dataclass, replace

import pandas as pd

from core.books.rollforward import MonthRollForward, month_rollforward
from core.calendar import IST
from core.db import books as books_sql
from core.db.connection import transaction

PRIOR_PERIOD = "prior_period_adjustments"


@dataclass(frozen=True)
class ClosedMonth:
    month: str
    closed_at: int
    closed_by: str
    snapshot: MonthRollForward

    def closed_at_ist(self) -> str:
        """When it was closed, 'YYYY-MM-DD HH:MM IST'."""
        return dt.datetime.fromtimestamp(self.closed_at, IST).strftime("%Y-%m-%d %H:%M IST")


@dataclass(frozen=True)
class BooksMonth:
    """A month as the books show it (`books_view`): its roll-forward, the close it shows
    (None when open), and for an open month the closed month it opens from (its opening is
    that snapshot's closing; a `prior_period_adjustments` line carries what changed)."""

    rollforward: MonthRollForward
    closed: ClosedMonth | None
    opens_from_closed: str | None

    def as_dict(self) -> dict[str, object]:
        """The roll-forward's dict with `closed` ({by, at, at_ist} or None) and
        `opens_from_closed` (a month or None)."""
        data = self.rollforward.as_dict()
        data["closed"] = (
            None
            if self.closed is None
            else {
                "by": self.closed.closed_by,
                "at": self.closed.closed_at,
                "at_ist": self.closed.closed_at_ist(),
            }
        )
        data["opens_from_closed"] = self.opens_from_closed
        return data


def _from_dict(data: dict[str, object]) -> MonthRollForward:
    movements = data["movements"]
    open_items = data["open_items"]
    drill = data["drilldown"]
    assert isinstance(movements, dict) and isinstance(open_items, dict)
    assert isinstance(drill, list)
    return MonthRollForward(
        month=str(data["month"]),
        opening=int(str(data["opening"])),
        movements=tuple((str(k), int(v)) for k, v in movements.items()),
        closing=int(str(data["closing"])),
        open_items=tuple((str(k), int(v)) for k, v in open_items.items()),
        residual=int(str(data["residual"])),
        drilldown=tuple(
            (str(d["day"]), str(d["entity_type"]), str(d["entity_id"]), int(d["amount"]))
            for d in drill
        ),
    )


def closed_months(conn: sqlite3.Connection) -> dict[str, ClosedMonth]:
    """Every closed month by 'YYYY-MM'."""
    return {
        month: ClosedMonth(month, at, by, _from_dict(json.loads(text)))
        for month, at, by, text in books_sql.month_close_rows(conn)
    }


def close_month(
    conn: sqlite3.Connection,
    events: pd.DataFrame,
    month: str,
    *,
    actor: str,
    request_id: str,
    run_id: int | None = None,
    now: int | None = None,
) -> ClosedMonth:
    """Freeze `month`'s roll-forward (audited). Closing a closed month changes nothing and
    returns it as it was closed. The caller checks that `actor` may close months."""
    from core.audit import append

    stamp = int(time.time()) if now is None else int(now)
    with transaction(conn):
        found = closed_months(conn).get(month)
        if found is not None:
            return found
        snapshot = books_view(events, month, closed_months(conn))
        books_sql.insert_month_close(
            conn,
            month=month,
            closed_at=stamp,
            closed_by=actor,
            run_id=run_id,
            closing=snapshot.closing,
            residual=snapshot.residual,
            snapshot_json=json.dumps(snapshot.as_dict()),  # keeps the line order
            request_id=request_id,
        )
        append(
            conn,
            actor=actor,
            action="month_closed",
            entity_type="month",
            entity_id=month,
            payload={
                "closing": snapshot.closing,
                "residual": snapshot.residual,
                "run_id": run_id,
                "request_id": request_id,
            },
            now=stamp,
        )
    return ClosedMonth(month, stamp, actor, snapshot)


def books_view(
    events: pd.DataFrame, month: str, closes: dict[str, ClosedMonth]
) -> MonthRollForward:
    """What the books show for `month`: its snapshot when closed. An open month right after
    a closed one opens from the snapshot's closing; what the data say now about the same
    moment, if different, is its `prior_period_adjustments` line (so its closing is today's
    figure). Any other open month rolls forward from its open predecessor."""
    if month in closes:
        return closes[month].snapshot
    live = month_rollforward(events, month)
    before = closes.get(_previous(month))
    if before is None:
        return live
    adjustment = live.opening - before.snapshot.closing
    return replace(
        live,
        opening=before.snapshot.closing,
        movements=((PRIOR_PERIOD, adjustment), *live.movements),
    )


def books_month(events: pd.DataFrame, month: str, closes: dict[str, ClosedMonth]) -> BooksMonth:
    """`books_view` with what it rests on: the Books page, `rollforward` and the close
    report show this."""
    before = _previous(month)
    return BooksMonth(
        rollforward=books_view(events, month, closes),
        closed=closes.get(month),
        opens_from_closed=before if month not in closes and before in closes else None,
    )


def since_close(
    events: pd.DataFrame, month: str, closes: dict[str, ClosedMonth]
) -> tuple[tuple[str, str, int, int, int], ...]:
    """A closed month's snapshot against what today's data say about the same month (as the
    books would show it were it open): (section, line, closed, today, today - closed) for
    the opening, each movement, the closing, each open item and the residual. The
    closing's difference is the next month's `prior_period_adjustments`."""
    closed = closes[month].snapshot
    today = books_view(events, month, {m: c for m, c in closes.items() if m != month})

    def lines(
        section: str, was: tuple[tuple[str, int], ...], now: tuple[tuple[str, int], ...]
    ) -> list[tuple[str, str, int, int, int]]:
        a, b = dict(was), dict(now)
        names = [*a, *(n for n in b if n not in a)]
        return [(section, n, a.get(n, 0), b.get(n, 0), b.get(n, 0) - a.get(n, 0)) for n in names]

    return (
        *lines("opening", (("opening", closed.opening),), (("opening", today.opening),)),
        *lines("movement", closed.movements, today.movements),
        *lines("closing", (("closing", closed.closing),), (("closing", today.closing),)),
        *lines("open_item", closed.open_items, today.open_items),
        *lines("residual", (("residual", closed.residual),), (("residual", today.residual),)),
    )


def _previous(month: str) -> str:
    year, mon = int(month[:4]), int(month[5:7])
    return f"{year - 1}-12" if mon == 1 else f"{year:04d}-{mon - 1:02d}"
