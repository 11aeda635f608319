"""Write a dashboard CSV report as a legacy .xls (BIFF8) workbook with xlwt, the way a
dashboard download stores it: amounts as numbers, dates as Excel date-times, text as text."""

from __future__ import annotations

import csv
import datetime as dt
import re
from decimal import Decimal
from pathlib import Path

import xlwt

_DATE = re.compile(r"^\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}$")
_AMOUNT = re.compile(r"^\d+\.\d{2}$")


def csv_to_xls(source: Path, target: Path, banner: str | None = None) -> None:
    """Copy `source` (CSV) to `target` (.xls); `banner` adds a title row and a blank row."""
    book = xlwt.Workbook()
    sheet = book.add_sheet("Report")
    date_style = xlwt.easyxf(num_format_str="dd/mm/yyyy hh:mm:ss")
    offset = 0
    if banner is not None:
        sheet.write(0, 0, banner)
        offset = 2
    with source.open(newline="", encoding="utf-8") as handle:
        for r, row in enumerate(csv.reader(handle)):
            for c, cell in enumerate(row):
                if r > 0 and _DATE.match(cell):
                    sheet.write(
                        r + offset, c, dt.datetime.strptime(cell, "%d/%m/%Y %H:%M:%S"), date_style
                    )
                elif r > 0 and _AMOUNT.match(cell):
                    sheet.write(r + offset, c, float(Decimal(cell)))
                elif cell:
                    sheet.write(r + offset, c, cell)
    book.save(str(target))
