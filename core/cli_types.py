"""Argument types for the command line's numbers and months: a value out of range is an
argparse error (one line, exit 2) instead of a traceback from deep inside (an independent
attacker, round 3: `--month 9999-12` ended in OverflowError, an exception id of 10^20 in
SQLite's OverflowError, `generate --payments 10^11` in a 744 GiB allocation)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

# SQLite and PostgreSQL ids are signed 64-bit integers.
MAX_ID = 2**63 - 1
# 9999-12-31T23:59:59 IST, the last second a Python datetime holds in IST.
MAX_UNIX_SECONDS = 253_402_280_999
# Months a book command takes: from the Unix epoch (no timestamp is older) to 9998-12 (the
# commands reach into the month after, and a calendar beyond it: 9999-12 had no next month).
FIRST_MONTH = "1970-01"
LAST_MONTH = "9998-12"
_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


def bounded_int(low: int, high: int | None, unit: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high` (None: no upper bound)."""
    said = f" {unit}" if unit else ""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}") from exc
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low:,}{said} or more: {text[:40]}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"at most {high:,}{said}: {text[:40]}")
        return value

    return parse


record_id = bounded_int(1, MAX_ID)
unix_seconds = bounded_int(0, MAX_UNIX_SECONDS, "(Unix seconds, up to 9999-12-31 IST)")


def month(text: str) -> str:
    """An argparse type: a month YYYY-MM from FIRST_MONTH to LAST_MONTH."""
    if not _MONTH.fullmatch(text):
        raise argparse.ArgumentTypeError(f"not a month YYYY-MM: {text[:40]!r}")
    if not FIRST_MONTH <= text <= LAST_MONTH:
        raise argparse.ArgumentTypeError(f"a month from {FIRST_MONTH} to {LAST_MONTH}, not {text}")
    return text
