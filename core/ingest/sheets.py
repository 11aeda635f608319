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
import posixpath
import re
import zipfile
from dataclasses import dataclass
from decimal import Decimal

from python_calamine import CalamineError, CalamineWorkbook

from core.errors import Problem
from core.ingest.failure import ReadFailure

SHEET_SUFFIXES = (".xlsx", ".xls")
# The most cells the first worksheet's used range may span. The reader builds the whole
# rectangle from its first to its last cell in memory (~32 bytes a cell), so two cells at
# A1 and XFD1048576 (1.7e10 cells, a 1.8 KB file) ended the process (an independent
# attacker, F1). A statement of a million lines and 30 columns spans 3e7.
MAX_SHEET_CELLS = 30_000_000
_XML_CHUNK = 1 << 20
_CELL_REF = re.compile(
    rb"<(?:\w+:)?(?:c|dimension)\b[^>]*?\br(?:ef)?=\""
    rb"([A-Z]{1,3})(\d{1,7})(?::([A-Z]{1,3})(\d{1,7}))?\""
)
_ROW_REF = re.compile(rb"<(?:\w+:)?row\b[^>]*?\br=\"(\d{1,7})\"")


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


def _column(letters: bytes) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + (letter - 64)
    return number


def _first_sheet_part(archive: zipfile.ZipFile) -> str | None:
    """The part of the workbook's first worksheet (its first <sheet> in workbook.xml, by its
    relationship), or None when the workbook does not say."""
    try:
        book = archive.read("xl/workbook.xml")[:_XML_CHUNK]
        rels = archive.read("xl/_rels/workbook.xml.rels")[:_XML_CHUNK]
    except KeyError:
        return None
    sheet = re.search(rb"<(?:\w+:)?sheet\b[^>]*?\b(?:\w+:)?id=\"([^\"]+)\"", book)
    if sheet is None:
        return None
    for rel in re.finditer(rb"<(?:\w+:)?Relationship\b[^>]*>", rels):
        tag = rel.group(0)
        found = re.search(rb"\bId=\"([^\"]+)\"", tag)
        target = re.search(rb"\bTarget=\"([^\"]+)\"", tag)
        if found and target and found.group(1) == sheet.group(1):
            path = target.group(1).decode("utf-8", "replace")
            return path.lstrip("/") if path.startswith("/") else posixpath.normpath("xl/" + path)
    return None


def sheet_extent_problem(data: bytes) -> str | None:
    """Why an XLSX's first worksheet spans more than MAX_SHEET_CELLS (its dimension, or
    the rectangle from its first to its last cell or row), read from the XML in chunks
    before the reader builds it; None when it does not, or when this is no XLSX the
    check can read (the reader then says what is wrong)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        return None
    with archive:
        part = _first_sheet_part(archive)
        if part is None or part not in archive.namelist():
            return None
        rows: list[int] = []
        cols: list[int] = []
        tail = b""
        with archive.open(part) as stream:
            while chunk := stream.read(_XML_CHUNK):
                text = tail + chunk
                for m in _CELL_REF.finditer(text):
                    cols.append(_column(m.group(1)))
                    rows.append(int(m.group(2)))
                    if m.group(3):
                        cols.append(_column(m.group(3)))
                        rows.append(int(m.group(4)))
                rows += [int(m.group(1)) for m in _ROW_REF.finditer(text)]
                tail = text[-512:]  # a tag cut by the chunk's end is read whole next time
                if rows and cols:
                    rows, cols = [min(rows), max(rows)], [min(cols), max(cols)]
                    cells = (rows[1] - rows[0] + 1) * (cols[1] - cols[0] + 1)
                    if cells > MAX_SHEET_CELLS:
                        return (
                            f"its first worksheet spans {rows[1] - rows[0] + 1:,} rows by"
                            f" {cols[1] - cols[0] + 1:,} columns ({cells:,} cells), more than"
                            f" the {MAX_SHEET_CELLS:,} a statement may span: copy the"
                            " statement's own cells into a new workbook"
                        )
    return None


def read_sheet(file_name: str, data: bytes) -> SheetRows:
    """The first (or only) worksheet of an XLSX/XLS file. Raises ReadFailure naming the file
    when the workbook cannot be read or has no worksheet."""

    def failure(message: str) -> ReadFailure:
        return ReadFailure([Problem(file_name, 0, "", message)])

    too_big = sheet_extent_problem(data) if file_name.lower().endswith(".xlsx") else None
    if too_big is not None:
        raise failure(f"not a readable XLSX/XLS workbook: {too_big}")
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
