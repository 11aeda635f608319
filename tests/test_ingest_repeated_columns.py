"""A header that names a column twice is refused (file, the header's line, both columns),
whatever reads it: `import`, `reconcile DIR`, `import-day`, the Data page's upload; CSV,
XLSX and bank statements alike, after the header normalisation each importer does. Nothing
is written. A repeated column the importer ignores is never read, so it is no ambiguity.
Also: a cell too long is named as the file writes its column, and a long cell in a column
the importer ignores is ignored however long it is (docs/ingest.md)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import openpyxl
import pytest

from core import access
from core.__main__ import main
from core.db import connect
from core.errors import InputError
from core.ingest.bank import parse_bank_statement
from core.ingest.load import load_dataset
from core.ingest.mappings import mapping_for_statement
from core.ingest.readers import ReadFailure
from ui import actions, auth

from .conftest import FIXTURES, database_rows, is_postgres
from .test_app_actions import Upload

EXPORTS = FIXTURES / "real_exports"
DASHBOARD_CSV = EXPORTS / "dashboard_csv"
AS_OF = "2026-07-31T23:59:59+05:30"
REFUSED = "refused rather than read one of the two"


def _add_column(path: Path, after: str, name: str, value: str) -> None:
    """Insert a column `name` holding `value` on every row after the header column `after`
    (a CSV without quoted commas, as the fixtures are)."""
    header, *rows = path.read_text("utf-8").splitlines()
    at = header.split(",").index(after) + 1

    def widened(line: str, cell: str) -> str:
        cells = line.split(",")
        return ",".join([*cells[:at], cell, *cells[at:]])

    lines = [widened(header, name), *(widened(row, value) for row in rows if row)]
    path.write_text("\n".join(lines) + "\n", "utf-8")


@pytest.fixture
def export(tmp_path: Path) -> Path:
    folder = tmp_path / "dashboard_csv"
    shutil.copytree(DASHBOARD_CSV, folder)
    return folder


def _import(folder: Path, db_url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    db = db_url if is_postgres(db_url) else str(folder.parent / "never.sqlite")
    capsys.readouterr()
    code = main(["import", str(folder), "--db", db])
    return code, capsys.readouterr().err


def test_a_payments_csv_naming_amount_twice_is_refused_and_nothing_is_stored(
    export: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _add_column(export / "payments.csv", "Status", "Amount", "999")
    before = database_rows(db_url)
    code, err = _import(export, db_url, capsys)
    assert code == 2
    assert err == (
        f"error: payments.csv:1:7: column 'Amount' appears twice (first at column 4): {REFUSED}\n"
    )
    assert database_rows(db_url) == before
    assert not (export.parent / "never.sqlite").exists()


def test_two_spellings_of_one_field_are_the_same_column(
    export: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The dashboard's 'Payment ID' and the API's 'id' both name the payment id; 'amount ' is
    # 'Amount' once case and spaces are set aside.
    _add_column(export / "payments.csv", "Updated At", "id", "pay_FAKE")
    _add_column(export / "payments.csv", "Currency", " amount ", "1.00")
    code, err = _import(export, db_url, capsys)
    assert code == 2
    assert err.splitlines() == [
        "error: payments.csv:1:6: column 'amount' is the same column as 'Amount' at column 4"
        f" (both read as 'amount'): {REFUSED}",
        "payments.csv:1:34: column 'id' is the same column as 'Payment ID' at column 1"
        f" (both read as 'id'): {REFUSED}",
    ]


def test_reconcile_refuses_a_recon_report_with_a_second_settlement_id_writing_no_output(
    export: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _add_column(export / "settlement_recon.csv", "settled_by", "settlement_id", "setl_FAKE")
    out = export.parent / "results.csv"
    capsys.readouterr()
    assert main(["reconcile", str(export), "--out", str(out), "--as-of", AS_OF]) == 2
    assert capsys.readouterr().err == (
        "error: settlement_recon.csv:1:28: column 'settlement_id' appears twice"
        f" (first at column 24): {REFUSED}\n"
    )
    assert not out.exists()


def test_import_day_refuses_an_hdfc_statement_with_two_deposit_columns_writing_nothing(
    export: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import-day", str(export), "--db", db_url, "--as-of", AS_OF]) == 0
    day = export.parent / "2026-08-01"
    shutil.copytree(export, day)
    _add_column(day / "bank_statement.csv", "Deposit Amt.", "Deposit Amt.", "999.00")
    before = database_rows(db_url)
    capsys.readouterr()
    assert main(["import-day", str(day), "--db", db_url, "--as-of", AS_OF]) == 2
    assert capsys.readouterr().err == (
        "error: bank_statement.csv:1:7: column 'Deposit Amt.' appears twice"
        f" (first at column 6): {REFUSED}\n"
    )
    assert database_rows(db_url) == before


def test_a_statement_with_credit_and_deposit_columns_is_refused_until_a_mapping_says_which(
    export: Path,
) -> None:
    path = export / "bank_statement.csv"
    _add_column(path, "Deposit Amt.", "Credit", "")
    data = path.read_bytes()
    with pytest.raises(ReadFailure) as refused:
        parse_bank_statement(path.name, data)
    assert [str(p) for p in refused.value.problems] == [
        "bank_statement.csv:1:7: column 'Credit' is the same column as 'Deposit Amt.' at"
        f" column 6 (both read as 'credit'): {REFUSED}; a column mapping saved for this"
        " header says which is which (`python -m core bank-mapping save`)"
    ]
    fields = {
        "Date": "txn_date",
        "Narration": "narration",
        "Chq./Ref.No.": "reference",
        "Value Dt": "value_date",
        "Withdrawal Amt.": "debit",
        "Deposit Amt.": "credit",
        "Closing Balance": "balance",
    }
    mapping = mapping_for_statement(path.name, data, fields)
    frame, _, problems = parse_bank_statement(path.name, data, [mapping])
    original = DASHBOARD_CSV / "bank_statement.csv"
    expected, _, _ = parse_bank_statement(original.name, original.read_bytes())
    assert problems == [] and frame["credit"].tolist() == expected["credit"].tolist()


def test_kotaks_second_dr_cr_column_is_the_balance_sign_not_a_repeat() -> None:
    path = FIXTURES / "bank" / "kotak.csv"
    assert "Amount,Dr / Cr,Balance,Dr / Cr" in path.read_text("utf-8")
    frame, report, problems = parse_bank_statement(path.name, path.read_bytes())
    assert problems == [] and report.bank_layout == "Kotak"
    assert (frame["balance"] < 0).any()  # the second 'Dr / Cr' still signs the balance


def test_columns_the_importer_ignores_may_repeat_and_neither_copy_is_read(export: Path) -> None:
    expected, _ = load_dataset(DASHBOARD_CSV)
    _add_column(export / "payments.csv", "Invoice ID", "Invoice ID", "inv_SECOND")
    _add_column(export / "bank_statement.csv", "Narration", "Branch", "ANDHERI")
    _add_column(export / "bank_statement.csv", "Value Dt", "Branch", "BANDRA")
    dataset, report = load_dataset(export)
    assert dataset.payments.equals(expected.payments)
    assert dataset.bank.drop(columns=["file"]).equals(expected.bank.drop(columns=["file"]))
    payments = next(f for f in report.files if f.file == "payments.csv")
    assert payments.ignored_columns.count("Invoice ID") == 2


def test_an_uploaded_xlsx_payments_report_with_payment_id_and_id_is_refused_at_its_sheet_row(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", db_url)
    local = access.local_user()
    session = auth.Session(local.actor, "admin", "local", local, local.actor)
    monkeypatch.setattr(auth, "current", lambda: session)
    folder = EXPORTS / "dashboard_xlsx"
    book = openpyxl.load_workbook(folder / "payments.xlsx")
    sheet = book.worksheets[0]
    sheet.insert_rows(1)  # a banner row: the header is on sheet row 2
    sheet.cell(1, 1, "Payments report")
    column = sheet.max_column + 1
    sheet.cell(2, column, "ID")
    for row in range(3, sheet.max_row + 1):
        sheet.cell(row, column, "pay_FAKE")
    written = io.BytesIO()
    book.save(written)
    uploads = [
        Upload(p.name, written.getvalue() if p.name == "payments.xlsx" else p.read_bytes())
        for p in sorted(folder.iterdir())
    ]
    before = database_rows(db_url)
    with pytest.raises(InputError) as refused:
        actions.import_uploads(uploads, "auto", False)
    assert [str(p) for p in refused.value.problems] == [
        "payments.xlsx:2:33: column 'ID' is the same column as 'Payment ID' at column 1"
        f" (both read as 'id'): {REFUSED}"
    ]
    assert database_rows(db_url) == before
    conn = connect(db_url)
    assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
    conn.close()


def test_a_ten_megabyte_cell_is_named_as_the_file_writes_its_column(
    export: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Longer than Arrow's 1 MB block, so found by the csv module's reading of the file."""
    path = export / "payments.csv"
    lines = path.read_text("utf-8").split("\n")
    cells = lines[5].split(",")
    assert cells[5] == "captured"
    cells[5] = "x" * 10_000_000
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines), "utf-8")
    code, err = _import(export, db_url, capsys)
    assert code == 2
    assert err == (
        "error: payments.csv:6:Status: cell of 10,000,000 characters: longer than the"
        " 131,072 allowed\n"
    )


def test_a_ten_megabyte_cell_in_a_column_the_importer_ignores_is_ignored(export: Path) -> None:
    expected, _ = load_dataset(DASHBOARD_CSV)
    path = export / "payments.csv"
    lines = path.read_text("utf-8").split("\n")
    cells = lines[5].split(",")
    cells[2] = "x" * 10_000_000  # Invoice ID: not read
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines), "utf-8")
    dataset, _ = load_dataset(export)
    assert dataset.payments.equals(expected.payments)


def test_a_long_cell_of_a_statement_is_named_by_its_header_column(export: Path) -> None:
    path = export / "bank_statement.csv"
    lines = path.read_text("utf-8").split("\n")
    cells = lines[3].split(",")
    cells[1] = "N" * 200_000
    lines[3] = ",".join(cells)
    path.write_text("\n".join(lines), "utf-8")
    with pytest.raises(ReadFailure) as refused:
        parse_bank_statement(path.name, path.read_bytes())
    assert [str(p) for p in refused.value.problems] == [
        "bank_statement.csv:4:Narration: cell of 200,000 characters: longer than the"
        " 131,072 allowed"
    ]


def test_two_direction_columns_beside_deposit_and_withdrawal_columns_are_never_read_so_allowed(
    export: Path,
) -> None:
    """A statement with separate deposit and withdrawal columns reads neither an amount nor
    a direction column: a `Transaction Type` (the payment mode) beside a `Dr/Cr` is read as
    before, not refused as one field named twice."""
    path = export / "bank_statement.csv"
    original = DASHBOARD_CSV / "bank_statement.csv"
    expected, _, _ = parse_bank_statement(original.name, original.read_bytes())
    _add_column(path, "Narration", "Transaction Type", "UPI")
    _add_column(path, "Value Dt", "Dr/Cr", "CR")
    frame, _, problems = parse_bank_statement(path.name, path.read_bytes())
    assert problems == []
    for column in ("credit", "debit", "balance", "narration", "txn_date"):
        assert frame[column].tolist() == expected[column].tolist(), column
