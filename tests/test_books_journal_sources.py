"""A journal line's source rows never overflow a spreadsheet cell (32,767 characters in
Excel and LibreOffice): a month's captured voucher names every payment, so a merchant with
~2,000 payments a month passes it, and a spreadsheet cuts the cell (and with it the
reviewer's trail from the ledger back to the payments). Such a line counts its rows in the
CSV and the journal sources file lists them, one per row."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from pathlib import Path

import pytest

from core.__main__ import main
from core.books import journal
from core.books.journal import Line, Voucher, journal_csv, journal_sources_csv
from tests.conftest import SPEC_EXAMPLE

LIMIT = journal.SPREADSHEET_CELL_LIMIT


def _ids(count: int, width: int = 18) -> tuple[str, ...]:
    return tuple(f"pay_{i:0{width - 4}d}" for i in range(count))


def _voucher(rows: tuple[str, ...], small: tuple[str, ...] = ("setl_A",)) -> Voucher:
    return Voucher(
        "RZP-CAPTURED-2026-06",
        dt.date(2026, 6, 30),
        "captured",
        "2026-06",
        "June's captures",
        (
            Line("Razorpay receivable", 100, 0, rows),
            Line("Sales", 0, 90, rows),
            Line("Payment gateway charges", 0, 10, small),
        ),
    )


def _cells(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_line_with_more_rows_than_a_cell_holds_counts_them_and_the_sources_file_lists_them() -> (
    None
):
    rows = _ids(2_000)  # 2,000 x 19 characters, joined: 37,999
    voucher = _voucher(rows)

    lines = _cells(journal_csv([voucher]))
    sources = _cells(journal_sources_csv([voucher]))

    assert max(len(cell) for line in lines for cell in line.values()) <= LIMIT
    assert [line["source_rows"] for line in lines] == [
        "2000 rows: see the journal sources file",
        "2000 rows: see the journal sources file",
        "setl_A",
    ]
    assert [(s["voucher"], s["lines"]) for s in sources] == [("RZP-CAPTURED-2026-06", "1;2")] * 2000
    assert tuple(s["source_row"] for s in sources) == rows


def test_rows_that_fit_exactly_stay_in_the_cell_and_one_character_more_moves_them() -> None:
    fits = (*_ids(LIMIT // 19), "x" * (LIMIT - LIMIT // 19 * 19))
    assert len(";".join(fits)) == LIMIT
    over = (*fits[:-1], fits[-1] + "y")

    inline = _cells(journal_csv([_voucher(fits)]))
    moved = _cells(journal_csv([_voucher(over)]))

    assert inline[0]["source_rows"] == ";".join(fits)
    assert _cells(journal_sources_csv([_voucher(fits)])) == []
    assert moved[0]["source_rows"] == f"{len(over)} rows: see the journal sources file"
    assert len(_cells(journal_sources_csv([_voucher(over)]))) == len(over)


def test_the_formula_guard_counts_towards_the_cell() -> None:
    # A leading '-' gets a "'" (core.outputs.safe_cell): one more character in the cell.
    rows = ("-" + "a" * (LIMIT - 1),)
    assert len(rows[0]) == LIMIT

    line = _cells(journal_csv([_voucher(rows)]))[0]
    sources = _cells(journal_sources_csv([_voucher(rows)]))

    assert line["source_rows"] == "1 rows: see the journal sources file"
    assert [s["source_row"] for s in sources] == ["'" + rows[0]]


@pytest.fixture
def spec_db(tmp_path: Path) -> Path:
    db = tmp_path / "books.sqlite"
    out = tmp_path / "results.csv"
    argv = ["reconcile", str(SPEC_EXAMPLE / "dataset"), "--out", str(out), "--db", str(db)]
    assert main([*argv, "--as-of", "2026-06-30T23:59:59+05:30"]) == 0
    return db


def test_the_journal_command_and_the_close_report_write_the_sources_file(
    spec_db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(journal, "SPREADSHEET_CELL_LIMIT", 40)  # the example's few rows pass it
    base = ["journal", "--db", str(spec_db), "--month", "2026-06"]

    assert main(base) == 0
    lines = _cells(capsys.readouterr().out)
    assert main([*base, "--format", "sources"]) == 0
    sources = _cells(capsys.readouterr().out)

    counted = [line for line in lines if line["source_rows"].endswith("journal sources file")]
    assert counted and sources
    for line in counted:
        number = [x for x in lines if x["voucher"] == line["voucher"]].index(line) + 1
        named = [
            s["source_row"]
            for s in sources
            if s["voucher"] == line["voucher"] and str(number) in s["lines"].split(";")
        ]
        assert line["source_rows"] == f"{len(named)} rows: see the journal sources file"
    out = tmp_path / "close.zip"
    assert (
        main(["close-report", "--db", str(spec_db), "--month", "2026-06", "--out", str(out)]) == 0
    )
    with zipfile.ZipFile(out) as archive:
        kept = archive.read("close-2026-06/journal_sources.csv").decode()
        manifest = archive.read("close-2026-06/manifest.csv").decode()
    assert _cells(kept) == sources
    assert "journal_sources.csv," in manifest
