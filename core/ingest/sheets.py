"""The first worksheet of an XLSX or XLS file as rows of strings (python-calamine).

Generic on purpose: bank statements use it, and so may Razorpay dashboard reports. A caller
gets the same thing a CSV reader gives it, strings per cell, plus each row's 1-based sheet
row number, which is the "line" of a problem and of a bank line id (`<file name>:<row>`).

Cell values become strings by one exact rule (`cell_text`):

- text: as written;
- an empty cell: '';
- a date: `dd/mm/YYYY`; a date and time: `dd/mm/YYYY HH:MM:SS` (a date-time at midnight is
  written as the date alone); a time alone: `HH:MM:SS`;
- a number: its shortest exact decimal, plain notation (`1234.5` -> '1234.5', `100.0` ->
  '100', `13500000.12` -> '13500000.12'); never through `float` formatting such as '%.2f'.
  Calamine gives every numeric cell as a float; `Decimal(repr(x))` is exact for what the
  sheet holds: the file stores the double nearest to the value the bank wrote, and for any
  decimal of at most 15 significant digits (every rupee amount below 10^13 with two
  decimals) that double's shortest round-trip repr is that decimal again, since no other
  decimal that short maps to the same double. A cell that does not hold such a value (say
  12.345) keeps all its digits and is refused by the amount parser, never rounded;
- a boolean: 'TRUE' / 'FALSE'.

Rows that hold nothing are left out (their numbers are simply skipped); trailing empty cells
of a row are kept as the sheet has them.
"""

from __future__ import annotations

import datetime as dt
import io
import math
from dataclasses import dataclass
from decimal import Decimal

from python_calamine import CalamineError, CalamineWorkbook

from core.errors import Problem
from core.ingest.failure import ReadFailure
from core.ingest.sheet_guard import workbook_problem

SHEET_SUFFIXES = (".xlsx", ".xls")


@dataclass(frozen=True)
class SheetRows:
    """One worksheet: its name and its non-empty rows as (1-based row number, cells)."""

    sheet: str
    rows: tuple[tuple[int, tuple[str, ...]], ...]


def is_sheet(file_name: str) -> bool:
    return file_name.lower().endswith(SHEET_SUFFIXES)


def number_text(value: float | int) -> str:
    """The exact decimal a numeric cell holds, plain notation (see the module docstring)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'inf' / 'nan' from a crafted workbook: refused as a malformed cell
    exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if exact == exact.to_integral_value():
        return str(int(exact))
    return format(exact.normalize(), "f")


def cell_text(value: object) -> str:
    """One cell as a string, by the rule in the module docstring."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.strftime("%d/%m/%Y")
        return value.strftime("%d/%m/%Y %H:%M:%S")
    if isinstance(value, dt.date):
        return value.strftime("%d/%m/%Y")
    if isinstance(value, dt.time):
        return value.strftime("%H:%M:%S")
    if isinstance(value, int | float):
        return number_text(value)
    return str(value)


def read_sheet(file_name: str, data: bytes) -> SheetRows:
    """The first (or only) worksheet of an XLSX/XLS file. Raises ReadFailure naming the file
    when the workbook cannot be read or has no worksheet."""

    def failure(message: str) -> ReadFailure:
        return ReadFailure([Problem(file_name, 0, "", message)])

    # whatever its name: the reader chooses the format by the bytes (sheet_guard)
    if (problem := workbook_problem(file_name, data)) is not None:
        raise ReadFailure([problem])
    try:
        workbook = CalamineWorkbook.from_filelike(io.BytesIO(data))
        if not workbook.sheet_names:
            raise failure("the workbook has no worksheet")
        sheet = workbook.get_sheet_by_index(0)
        values = sheet.to_python(skip_empty_area=False)
    except (CalamineError, ValueError, TypeError, OSError) as exc:
        raise failure(f"not a readable XLSX/XLS workbook ({exc})") from exc
    rows: list[tuple[int, tuple[str, ...]]] = []
    for number, raw in enumerate(values, 1):
        cells = tuple(cell_text(v) for v in raw)
        if any(c.strip() for c in cells):
            rows.append((number, cells))
    return SheetRows(sheet=str(sheet.name), rows=tuple(rows))
