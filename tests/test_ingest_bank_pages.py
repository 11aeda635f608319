"""Multi-page bank exports: the header printed again on every page is skipped, nothing else.

Each `*_pages.csv` statement repeats its header line once per printed page, with blank
lines, `Page 2 of 3` / `Page No .: 2` lines and page banners around it, as netbanking
exports do. The `*_pages.expected.csv` beside it was written by hand from the statement
(amounts in paise, the UTR each narration carries, the physical line of each transaction).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from core.__main__ import main
from core.dataset import BANK_COLUMNS, empty_frame
from core.db import connect
from core.ingest.bank import parse_bank_statement

from .conftest import FIXTURES, SPEC_EXAMPLE, database_rows, is_postgres

BANK = FIXTURES / "bank"

MULTI_PAGE = {
    "hdfc_pages.csv": (
        "HDFC",
        (
            "skipped 2 repeated header lines: 18, 25",
            "skipped 2 page-number lines: 15, 24",
            "skipped 2 text lines inside the table (no amount, and not a narration "
            "continuation): 16, 17",
            "skipped 5 non-transaction line(s) around the table (lines 30, 31, 32, 33, 34)",
        ),
    ),
    "icici_pages.csv": (
        "ICICI",
        (
            "skipped 2 repeated header lines: 11, 18",
            "skipped 3 page-number lines: 10, 16, 22",
            "skipped 2 non-transaction line(s) around the table (lines 23, 24)",
        ),
    ),
    "sbi_pages.csv": (
        "SBI",
        (
            "skipped 1 repeated header line: 13",
            "skipped 2 page-number lines: 12, 16",
            "skipped 1 non-transaction line(s) around the table (lines 17)",
        ),
    ),
}


def _text_lines(name: str) -> list[str]:
    return (BANK / name).read_text(encoding="utf-8").split("\n")


def _replace_line(name: str, line_no: int, old: str, new: str) -> bytes:
    lines = _text_lines(name)
    assert old in lines[line_no - 1], lines[line_no - 1]
    lines[line_no - 1] = lines[line_no - 1].replace(old, new, 1)
    return "\n".join(lines).encode()


@pytest.mark.parametrize("name", sorted(MULTI_PAGE))
def test_multi_page_statement_matches_its_golden_file(name: str) -> None:
    frame, report, problems = parse_bank_statement(name, (BANK / name).read_bytes())
    layout, warnings = MULTI_PAGE[name]
    assert problems == []
    assert report.bank_layout == layout
    assert report.warnings == warnings
    expected = pd.read_csv(
        BANK / name.replace(".csv", ".expected.csv"), dtype=str, keep_default_na=False
    )
    actual = frame.drop(columns=["file"]).astype(object).where(frame.notna(), "").astype(str)
    pd.testing.assert_frame_equal(actual.reset_index(drop=True), expected, check_dtype=False)
    assert report.rows == len(expected)
    assert frame.dtypes.equals(empty_frame(BANK_COLUMNS).dtypes)


@pytest.mark.parametrize("name", sorted(MULTI_PAGE))
def test_every_transaction_keeps_its_physical_line_across_page_breaks(name: str) -> None:
    frame, _, _ = parse_bank_statement(name, (BANK / name).read_bytes())
    lines = _text_lines(name)
    for line_id, line_no, narration in zip(
        frame["id"], frame["line_no"], frame["narration"], strict=True
    ):
        assert line_id == f"{name}:{line_no}"
        # The narration starts on the transaction's own physical line.
        assert narration.split()[0] in lines[line_no - 1]


@pytest.mark.parametrize(
    ("name", "line_no", "old", "new", "expected"),
    [
        (
            "icici_pages.csv",
            11,
            "Transaction Date",
            "Txn Date",
            "icici_pages.csv:11:Transaction Date: not a transaction: repeats the header of "
            "line 5 but has 'Txn Date' where the header has 'Transaction Date'; only an exact "
            "repeat of the header is skipped",
        ),
        (
            "icici_pages.csv",
            18,
            "Deposit Amount (INR )",
            "Credit Amount (INR )",
            "icici_pages.csv:18:Deposit Amount (INR ): not a transaction: repeats the header "
            "of line 5 but has 'Credit Amount (INR )' where the header has 'Deposit Amount "
            "(INR )'; only an exact repeat of the header is skipped",
        ),
        (
            "hdfc_pages.csv",
            18,
            "Closing Balance",
            "Closing Bal",
            "hdfc_pages.csv:18:Closing Balance: not a transaction: repeats the header of "
            "line 8 but has 'Closing Bal' where the header has 'Closing Balance'; only an "
            "exact repeat of the header is skipped",
        ),
        (
            "hdfc_pages.csv",
            25,
            "CLOSING BALANCE,",
            "CLOSING BALANCE,SOL",
            "hdfc_pages.csv:25:8: not a transaction: repeats the header of line 8 but has an "
            "extra cell 'SOL'; only an exact repeat of the header is skipped",
        ),
    ],
)
def test_a_line_that_repeats_the_header_but_one_cell_is_refused_at_that_cell(
    name: str, line_no: int, old: str, new: str, expected: str
) -> None:
    data = _replace_line(name, line_no, old, new)
    _, _, problems = parse_bank_statement(name, data)
    assert [str(p) for p in problems] == [expected]


def test_a_page_total_between_pages_is_still_refused() -> None:
    data = _replace_line(
        "icici_pages.csv", 16, "Page 2 of 3,,,,,,,", ',,,,PAGE TOTAL,,"3,60,250.40",'
    )
    _, _, problems = parse_bank_statement("icici_pages.csv", data)
    assert [str(p) for p in problems] == [
        "icici_pages.csv:16:Transaction Date: amount without a date"
    ]


def test_a_header_shifted_by_one_column_is_not_a_repeat() -> None:
    data = _replace_line("hdfc_pages.csv", 18, "Date,", ",Date,")
    _, _, problems = parse_bank_statement("hdfc_pages.csv", data)
    assert [str(p) for p in problems] == ["hdfc_pages.csv:18:Date: amount without a date"]


def test_page_furniture_never_joins_a_narration() -> None:
    data = (
        b"Date,Narration,Chq./Ref.No.,Value Dt,Withdrawal Amt.,Deposit Amt.,Closing Balance\n"
        b"01/06/26,CASH DEPOSIT,,01/06/26,,100.00,100.00\n"
        b",Page 2 of 5,,,,,\n"
        b"Account No :,50200012345678,,,,,\n"
        b"date,narration,chq./ref.no.,value dt,withdrawal amt.,deposit amt.,closing balance\n"
        b",SELF,,,,,\n"
        b"02/06/26,C,3,02/06/26,,100.00,200.00\n"
    )
    frame, report, problems = parse_bank_statement("bank_statement.csv", data)
    assert problems == []
    # A narration-only line continues the narration above, across the page break.
    assert frame["narration"].tolist() == ["CASH DEPOSIT SELF", "C"]
    assert frame["utr"].isna().all()
    assert frame["id"].tolist() == ["bank_statement.csv:2", "bank_statement.csv:7"]
    assert report.warnings == (
        "skipped 1 repeated header line: 5",
        "skipped 1 page-number line: 3",
        "skipped 1 text line inside the table (no amount, and not a narration continuation): 4",
    )


def test_importing_a_multi_page_statement_reports_the_skipped_headers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db_url: str
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    shutil.copyfile(BANK / "icici_pages.csv", folder / "bank_statement.csv")
    db = db_url
    assert main(["import", str(folder), "--db", db]) == 0
    out = capsys.readouterr().out
    assert "bank_statement.csv: 8 rows, csv, layout ICICI" in out
    assert "    warning: skipped 2 repeated header lines: 11, 18" in out
    conn = connect(db)
    ids = [row[0] for row in conn.execute("SELECT id FROM bank_lines ORDER BY line_no")]
    conn.close()
    assert ids == [f"bank_statement.csv:{n}" for n in (6, 7, 8, 12, 13, 14, 19, 20)]


def test_a_near_header_line_refuses_the_import_with_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db_url: str
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    data = _replace_line("hdfc_pages.csv", 18, "Withdrawal Amt.", "Withdrawals")
    (folder / "bank_statement.csv").write_bytes(data)
    db = tmp_path / "new.sqlite"  # SQLite: must not appear; PostgreSQL: rows stay as they were
    before = database_rows(db_url)
    assert main(["import", str(folder), "--db", db_url if is_postgres(db_url) else str(db)]) == 2
    assert capsys.readouterr().err == (
        "error: bank_statement.csv:18:Withdrawal Amt.: not a transaction: repeats the header "
        "of line 8 but has 'Withdrawals' where the header has 'Withdrawal Amt.'; only an "
        "exact repeat of the header is skipped\n"
    )
    assert not db.exists()
    assert database_rows(db_url) == before
