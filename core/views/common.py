"""What every page's read model shares: totals, the exposure classes, IST text, the as-of.

Figures are integer paise; times are Unix seconds, shown in IST.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from core.calendar import IST
from core.db import page_reads
from core.db import views as db

EXPOSURE_CLASSES: tuple[str, ...] = (
    "amount_at_risk",
    "awaiting_settlement",
    "disputed",
    "realised_loss",
    "structural",
)
SYNTHETIC_SOURCES = frozenset({"benchmark"})


@dataclass(frozen=True)
class Total:
    """A count of items and their money. paise: integer paise."""

    count: int
    paise: int


def total(row: dict[str, Any]) -> Total:
    """A `Total` from a row's `n` and `amount` (either NULL: 0)."""
    return Total(count=int(row["n"] or 0), paise=int(row["amount"] or 0))


def ist_day(seconds: int) -> str:
    """Unix seconds as the IST date, ISO: '2026-03-31'."""
    return dt.datetime.fromtimestamp(int(seconds), tz=IST).date().isoformat()


def run_as_of(conn: sqlite3.Connection, as_of: int | None) -> int:
    """`as_of` when given, else the latest completed run's as-of (else now)."""
    if as_of is not None:
        return as_of
    run = db.latest_completed_run(conn)
    return int(run["as_of"]) if run else int(time.time())


def rupees_number(paise: int) -> Decimal:
    """Paise as a rupee number with two decimals (a spreadsheet sums it): 13500 -> 135.00."""
    return Decimal(int(paise)).scaleb(-2)


def ist_text(seconds: int) -> str:
    """Unix seconds as '2026-03-31 14:05 IST'."""
    return dt.datetime.fromtimestamp(int(seconds), tz=IST).strftime("%Y-%m-%d %H:%M IST")


def data_mark(conn: sqlite3.Connection) -> tuple[int, int, int, str]:
    """What live figures are current for: (the newest run, the newest completed run, the
    audit trail's head).
    Every change to the queue is audited in its own transaction, so a read cached under a
    mark is current until the mark moves (ui.shell.read_marked)."""
    return page_reads.data_mark(conn)
