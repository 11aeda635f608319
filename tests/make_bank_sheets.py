"""Writes the spreadsheet golden files tests/fixtures/bank/hdfc_netbanking.xlsx and icici_sheet.xls.

Run `.venv/bin/python -m tests.make_bank_sheets` to regenerate them; the expected outputs
beside them were checked by hand and do not change with a regeneration. The XLSX holds real
date cells and numeric amount cells (the way NetBanking's Excel download stores them), with
banner rows and empty rows above the header; the XLS holds text dates, numeric amounts and a
date cell in its banner.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import openpyxl
import xlwt

BANK = Path(__file__).resolve().parent / "fixtures" / "bank"
HDFC_HEADER = (
    "Date",
    "Narration",
    "Chq./Ref.No.",
    "Value Dt",
    "Withdrawal Amt.",
    "Deposit Amt.",
    "Closing Balance",
)
HDFC_ROWS: tuple[tuple[object, ...], ...] = (
    (dt.date(2026, 6, 1), "NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-AXISCN1153863727",
     "AXISCN1153863727", dt.date(2026, 6, 1), None, 135000, 1135000),
    (dt.date(2026, 6, 2), "ACH D- TP ACH INDIAN CLEARING-", "0000784460003881",
     dt.date(2026, 6, 2), 21581.5, None, 1113418.5),
    (dt.date(2026, 6, 2), "FT - DR - 50200012345678 - ACME DISTRIBUTORS A/C 50200012345678",
     "0000000000000000", dt.date(2026, 6, 3), 0.05, None, 1113418.45),
    (dt.date(2026, 6, 3), "RTGS CR-HDFCR52026060300012345-RAZORPAY SOFTWARE PVT LTD",
     "HDFCR52026060300012345", dt.date(2026, 6, 3), None, 4500.05, 1117918.5),
)  # fmt: skip
ICICI_HEADER = (
    "S No.",
    "Value Date",
    "Transaction Date",
    "Cheque Number",
    "Transaction Remarks",
    "Withdrawal Amount (INR )",
    "Deposit Amount (INR )",
    "Balance (INR )",
)
ICICI_ROWS: tuple[tuple[object, ...], ...] = (
    (1, "01/06/2026", "01/06/2026", "-",
     "NEFT-AXISCN1153863727-RAZORPAY SOFTWARE PVT LTD-UTIB0000123", None, 135000.0, 235000.0),
    (2, "02/06/2026", "01/06/2026", "-", "MMT/IMPS/615312345678/RAZORPAY SOFTWARE/YES BANK",
     None, 12345.67, 247345.67),
    (3, "02/06/2026", "02/06/2026", "-", "BIL/ONL/TO A/C NO 000405009999/VENDOR", 1000.0, None,
     246345.67),
    (4, "04/06/2026", "04/06/2026", "-", "RTGS/YESBR52026060400098765/RAZORPAY SOFTWARE PVT LTD",
     None, 2500000.0, 2746345.67),
)  # fmt: skip


def write_xlsx(path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Statement"
    sheet.append(["HDFC BANK Ltd."])
    sheet.append(["Statement of account"])
    sheet.append([])
    sheet.append(["Account No :", "50200012345678"])
    sheet.append([])
    sheet.append(list(HDFC_HEADER))
    sheet.append(["********"] * len(HDFC_HEADER))
    for row in HDFC_ROWS:
        sheet.append(list(row))
    for cells in sheet.iter_rows(min_row=8):
        for cell in (cells[0], cells[3]):
            cell.number_format = "dd/mm/yy"
    sheet.append([])
    sheet.append(["STATEMENT SUMMARY :-"])
    workbook.save(path)


def write_xls(path: Path) -> None:
    workbook = xlwt.Workbook()
    sheet = workbook.add_sheet("OpTransactionHistory")
    dated = xlwt.easyxf(num_format_str="dd/mm/yyyy")
    sheet.write(0, 0, "DETAILED STATEMENT")
    sheet.write(2, 0, "Transactions List - ACME RETAIL PVT LTD (INR) - 000405001234")
    sheet.write(3, 0, "Statement date")
    sheet.write(3, 1, dt.datetime(2026, 6, 5), dated)
    for column, name in enumerate(ICICI_HEADER):
        sheet.write(5, column, name)
    for r, row in enumerate(ICICI_ROWS, start=6):
        for column, value in enumerate(row):
            if value is not None:
                sheet.write(r, column, value)
    sheet.write(11, 0, "Legends Used in Account Statement")
    workbook.save(str(path))


def main() -> None:
    write_xlsx(BANK / "hdfc_netbanking.xlsx")
    write_xls(BANK / "icici_sheet.xls")


if __name__ == "__main__":
    main()
