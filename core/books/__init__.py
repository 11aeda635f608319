"""Closing the books: the Razorpay receivable's roll-forward and its journal entries.

Pure functions over a `core.dataset.Dataset` (integer paise, set-based pandas); SQL lives in
core/db/books.py. See docs/books.md for the identity and the Razorpay pages it rests on.
"""

from core.books.rollforward import (
    FLOW_LINES,
    OPEN_LINES,
    MonthRollForward,
    daily_balances,
    exception_entities,
    ledger_events,
    month_rollforward,
)

__all__ = [
    "FLOW_LINES",
    "OPEN_LINES",
    "MonthRollForward",
    "daily_balances",
    "exception_entities",
    "ledger_events",
    "month_rollforward",
]
