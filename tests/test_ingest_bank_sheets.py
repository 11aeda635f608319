"""Bank statements as XLSX/XLS sheets and Kotak/HDFC Delimited text; the sheet reader."""

from __future__ import annotations

import datetime as dt
import io
import shutil
from pathlib import Path

import openpyxl
import pytest

from core.errors import InputError
from core.ingest import load_dataset
from core.ingest.bank import parse_bank_statement, unwrap_cell
from core.ingest.readers import ReadFailure
from core.ingest.sheets import cell_text, number_text, read_sheet

from .conftest import FIXTURES, SPEC_EXAMPLE

BANK = FIXTURES / "bank"


def _xlsx(rows: list[list[object]]) -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_numeric_cells_become_their_exact_decimal_never_a_rounded_float() -> None:
    assert [number_text(x) for x in (1234.5, 100.0, 13500000.12, 0.05, 99999999999.99)] == [
        "1234.5",
        "100",
        "13500000.12",
        "0.05",
        "99999999999.99",
    ]
    assert number_text(12.345) == "12.345"  # kept, so the amount parser refuses it


def test_date_cells_become_day_month_year() -> None:
    assert cell_text(dt.date(2026, 6, 1)) == "01/06/2026"
    assert cell_text(dt.datetime(2026, 6, 1, 0, 0)) == "01/06/2026"
    assert cell_text(dt.datetime(2026, 6, 1, 10, 30, 5)) == "01/06/2026 10:30:05"
    assert cell_text(None) == "" and cell_text(True) == "TRUE"


def test_sheet_rows_keep_their_sheet_row_numbers() -> None:
    data = _xlsx([["banner"], [], ["Date", "Amount"], [dt.date(2026, 6, 1), 1234.5]])
    sheet = read_sheet("s.xlsx", data)
    assert sheet.rows == (
        (1, ("banner", "")),
        (3, ("Date", "Amount")),
        (4, ("01/06/2026", "1234.5")),
    )


def test_an_unreadable_workbook_is_refused_naming_the_file() -> None:
    with pytest.raises(ReadFailure) as caught:
        read_sheet("bank_statement.xlsx", b"PK\x03\x04 not a workbook")
    assert str(caught.value.problems[0]).startswith("bank_statement.xlsx: not a readable")


def test_bad_cells_in_a_sheet_name_file_row_and_column() -> None:
    data = _xlsx(
        [
            ["Date", "Narration", "Chq./Ref.No.", "Value Dt", "Withdrawal Amt.", "Deposit Amt."],
            [dt.date(2026, 6, 1), "A", "1", dt.date(2026, 6, 1), None, 100.5],
            [dt.date(2026, 6, 2), "B", "2", dt.date(2026, 6, 2), None, 12.345],
            [dt.date(2026, 6, 3), "C", "3", "31/02/2026", None, "1O0"],
        ]
    )
    frame, report, problems = parse_bank_statement("bank_statement.xlsx", data)
    assert report.fmt == "xlsx" and report.bank_layout == "HDFC"
    assert [str(p) for p in problems] == [
        "bank_statement.xlsx:3:Deposit Amt.: amount '12.345' has more than two decimal places: "
        "not an exact paise amount",
        "bank_statement.xlsx:4:Value Dt: impossible date '31/02/2026'",
        "bank_statement.xlsx:4:Deposit Amt.: malformed amount '1O0'",
    ]
    assert frame.loc[0, "credit"] == 10050


def test_kotak_formula_cells_are_unwrapped_everywhere() -> None:
    assert unwrap_cell('="00123"') == "00123"
    assert unwrap_cell('="say ""hi"""') == 'say "hi"'
    assert unwrap_cell("plain") == "plain"
    frame, report, _ = parse_bank_statement("k.csv", (BANK / "kotak.csv").read_bytes())
    assert report.bank_layout == "Kotak"
    for column in ("narration", "reference", "utr"):
        assert not frame[column].dropna().str.contains('="', regex=False).any()


def test_kotak_balance_takes_its_sign_from_the_dr_cr_column_beside_it() -> None:
    frame, _, _ = parse_bank_statement("k.csv", (BANK / "kotak.csv").read_bytes())
    assert frame["balance"].tolist()[1:3] == [25_900_050, -4_099_950]


def test_hdfc_delimited_text_reads_space_padded_cells() -> None:
    frame, report, problems = parse_bank_statement(
        "bank_statement.txt", (BANK / "hdfc_delimited.txt").read_bytes()
    )
    assert problems == [] and report.bank_layout == "HDFC" and report.fmt == "txt"
    assert frame.loc[0, "reference"] == "AXISCN1153863727"


@pytest.mark.parametrize("fixture", ["hdfc_netbanking.xlsx", "icici_sheet.xls", "kotak.csv"])
def test_a_dataset_folder_takes_its_statement_in_any_supported_format(
    tmp_path: Path, fixture: str
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    (folder / "bank_statement.csv").unlink()
    suffix = Path(fixture).suffix
    shutil.copy(BANK / fixture, folder / f"bank_statement{suffix}")
    dataset, report = load_dataset(folder)
    assert dataset.has_bank_statement and len(dataset.bank) == 4 + (fixture == "kotak.csv")
    assert report.files[-1].file == f"bank_statement{suffix}"
    assert dataset.bank["id"].iloc[0].startswith(f"bank_statement{suffix}:")


def test_two_bank_statements_in_one_folder_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    shutil.copy(BANK / "hdfc_netbanking.xlsx", folder / "bank_statement.xlsx")
    with pytest.raises(InputError) as caught:
        load_dataset(folder)
    assert [str(p) for p in caught.value.problems] == [
        "bank_statement.csv: bank_statement.xlsx is in the folder too: keep only one"
    ]


def _sparse_workbook(last: str) -> bytes:
    """A workbook whose first worksheet holds two cells, A1 and `last`: its used range is
    the rectangle between them (openpyxl writes the cells and the dimension as given)."""
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet["A1"] = "Date"
    sheet[last] = 1
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_a_worksheet_spanning_billions_of_cells_is_refused_before_it_is_read(
    tmp_path: Path,
) -> None:
    """An independent attacker (F1): two cells at A1 and XFD1048576, a file of a few KB,
    made the reader build 1.7e10 cells and abort the whole process (the app server on an
    upload, the command line with a Rust backtrace). Run in a process of its own, so that
    on the old code the abort fails this test instead of ending the test run."""
    import subprocess
    import sys

    folder = tmp_path / "dataset"
    shutil.copytree(
        SPEC_EXAMPLE / "dataset", folder, ignore=shutil.ignore_patterns("bank_statement*")
    )
    (folder / "bank_statement.xlsx").write_bytes(_sparse_workbook("XFD1048576"))
    database = tmp_path / "x.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "core", "import", str(folder), "--db", str(database)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert (
        "bank_statement.xlsx:1048576:XFD: not a readable XLSX/XLS workbook: the cell"
        " XFD1048576 at xl/worksheets/sheet1.xml:"
    ) in done.stderr
    assert "1,048,576 rows by 16,384 columns (17,179,869,184 cells from A1)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_worksheet_within_the_cell_limit_is_read() -> None:
    sheet = read_sheet("bank_statement.xlsx", _sparse_workbook("J1000"))
    assert [number for number, _ in sheet.rows] == [1, 1000]
