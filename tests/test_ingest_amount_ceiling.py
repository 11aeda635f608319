"""Amounts above the ceiling (10^12 paise, ₹1,000 crore; a bank balance 10^15 paise) are
refused naming file:line:column, nothing written: an int64-edge amount used to be accepted,
wrap a settlement's sum negative and crash `reconcile` after the run was saved (independent
attacker F4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from core.ingest import convert, sheets

from .conftest import SPEC_EXAMPLE
from .test_ingest_hostile_input import Refused, _replace_once, refused  # noqa: F401

DATASET = SPEC_EXAMPLE / "dataset"
INT64_MAX = "9223372036854775807"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "dataset"
    shutil.copytree(DATASET, target)
    return target


def test_an_int64_max_amount_in_a_json_payments_file_is_refused_naming_line_and_column(
    folder: Path,
    refused: Refused,  # noqa: F811
) -> None:
    _replace_once(
        folder / "payments.json", b'"amount": 47126450', b'"amount": ' + INT64_MAX.encode()
    )
    [line] = refused(folder)
    assert line == (
        f"payments.json:1:amount: item 1: amount '{INT64_MAX}' is above the ceiling of"
        " 1,000,000,000,000 paise (₹1,000 crore)"
    )


def test_an_int64_max_amount_sent_as_a_json_string_is_refused(
    folder: Path,
    refused: Refused,  # noqa: F811
) -> None:
    _replace_once(
        folder / "payments.json", b'"amount": 47126450', f'"amount": "{INT64_MAX}"'.encode()
    )
    [line] = refused(folder)
    assert line.startswith(
        "payments.json:1:amount: item 1: amount '9223372036854775807' is above the ceiling"
    )


def test_an_int64_max_amount_in_a_csv_file_is_refused_naming_line_and_column(
    folder: Path,
    refused: Refused,  # noqa: F811
) -> None:
    _replace_once(folder / "refunds.csv", b",3681300,", f",{INT64_MAX},".encode())
    assert refused(folder) == [
        f"refunds.csv:2:amount: amount '{INT64_MAX}' is above the ceiling of"
        " 1,000,000,000,000 paise (₹1,000 crore)"
    ]


def test_a_bank_deposit_of_int64_max_paise_in_rupees_is_refused(
    folder: Path,
    refused: Refused,  # noqa: F811
) -> None:
    _replace_once(folder / "bank_statement.csv", b'"1,67,318.00"', b'"92,23,37,20,36,85,477.58"')
    [line] = refused(folder)
    assert "bank_statement.csv:8:Deposit Amt.: amount '92,23,37,20,36,85,477.58' is above" in line


def test_the_ceiling_itself_is_accepted_and_one_paisa_more_is_not() -> None:
    at, over = convert.MAX_PAISE, convert.MAX_PAISE + 1
    parsed = convert.parse_paise(pa.array([str(at), str(over)]))
    assert parsed.values.tolist() == [at, 0]
    assert parsed.present.tolist() == [True, False]
    assert parsed.bad.rows.tolist() == [1]
    ints = convert.parse_paise(pa.array([at, over], pa.int64()))
    assert ints.present.tolist() == [True, False]
    rupees = convert.parse_rupees(pa.array(["10,00,00,00,000.00", "10,00,00,00,000.01"]))
    assert rupees.values.tolist() == [at, 0]
    assert rupees.bad.rows.tolist() == [1]


def test_a_bank_balance_may_exceed_the_amount_ceiling_up_to_its_own() -> None:
    big = convert.parse_rupees(pa.array(["5,000,00,00,000.00"]), ceiling=convert.MAX_BALANCE_PAISE)
    assert big.present.tolist() == [True]
    huge = convert.parse_rupees(
        pa.array(["92,23,37,20,36,85,477.58"]), ceiling=convert.MAX_BALANCE_PAISE
    )
    assert huge.present.tolist() == [False]


def test_an_xlsx_number_cell_above_the_ceiling_is_refused() -> None:
    """A spreadsheet gives numbers as floats; `number_text` writes them exactly, and the
    text goes through the same parser (and ceiling) as a CSV cell."""
    cells = [sheets.number_text(v) for v in (9.223372036854776e18, 1e12, 47126450.0)]
    parsed = convert.parse_paise(pa.array(cells))
    assert parsed.present.tolist() == [False, True, True]
    assert parsed.values.tolist() == [0, 10**12, 47126450]
