"""Spreadsheets (XLSX, XLS, ODS) as rows of cell strings, read with python-calamine.

Only the first sheet is read. Every cell becomes a string exactly: text as written, whole numbers
without a decimal point, other numbers as their exact decimal (`Decimal(repr(x))`, so a cell
holding 5.9 reads '5.9', never '5.900000000000000355'), dates `dd/mm/YYYY` and date-times
`dd/mm/YYYY HH:MM:SS` (as the dashboard shows them; read as IST), booleans 'true'/'false'.
A row number is the row in the sheet (1-based), which problems name as the line.
"""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any

from python_calamine import CalamineWorkbook

from core.errors import Problem

SHEET_SUFFIXES = (".xlsx", ".xls", ".xlsm", ".ods")


class SheetError(Exception):
    """The workbook could not be opened; carries the problem."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def cell_text(value: Any) -> str:
    """One calamine cell value as an exact string ('' for an empty cell)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        exact = Decimal(repr(value))
        if exact == exact.to_integral_value():
            return str(int(exact))
        return format(exact, "f")
    if isinstance(value, dt.datetime):
        return value.strftime("%d/%m/%Y %H:%M:%S")
    if isinstance(value, dt.date):
        return value.strftime("%d/%m/%Y")
    if isinstance(value, dt.time):
        return value.strftime("%H:%M:%S")
    return str(value).strip()


def read_sheet(file_name: str, data: bytes) -> list[tuple[int, list[str]]]:
    """(row number, cell strings) of every non-blank row of the first sheet."""
    try:
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
        names = book.sheet_names
        if not names:
            raise SheetError(Problem(file_name, 0, "", "the workbook has no sheets"))
        sheet = book.get_sheet_by_index(0)
        # skip_empty_area=False keeps leading blank rows and columns, so row and column
        # numbers are the sheet's own.
        cells = sheet.to_python(skip_empty_area=False)
    except SheetError:
        raise
    except Exception as exc:  # calamine raises its own error types for unreadable files
        raise SheetError(Problem(file_name, 0, "", f"not a readable spreadsheet: {exc}")) from exc
    rows: list[tuple[int, list[str]]] = []
    for index, row in enumerate(cells, start=1):
        texts = [cell_text(v) for v in row]
        if any(texts):
            rows.append((index, texts))
    return rows
