"""Hostile input fails closed too: deep nesting, huge numbers, huge cells, NUL bytes, repeated
JSON keys, names that differ only in case and files over the size cap each exit 2 naming
file:line:column (or the file), and nothing is written."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from core.__main__ import main
from core.ingest.readers import DEPTH_SCAN_MAX_CHARS

from .conftest import FIXTURES, SPEC_EXAMPLE, database_rows, is_postgres

DATASET = SPEC_EXAMPLE / "dataset"
API_JSON = FIXTURES / "real_exports" / "api_json"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "dataset"
    shutil.copytree(DATASET, target)
    return target


Refused = Callable[[Path], list[str]]


@pytest.fixture
def refused(db_url: str, capsys: pytest.CaptureFixture[str]) -> Refused:
    """Run the importer on a folder; it must exit 2 writing nothing (SQLite: no database
    file made; PostgreSQL: every row as it was). The problem lines."""

    def run(folder: Path) -> list[str]:
        db = folder.parent / "never.sqlite"
        capsys.readouterr()
        before = database_rows(db_url)
        assert (
            main(["import", str(folder), "--db", db_url if is_postgres(db_url) else str(db)]) == 2
        )
        assert not db.exists()
        assert database_rows(db_url) == before
        err = capsys.readouterr().err
        return err.removeprefix("error: ").rstrip("\n").split("\n")

    return run


def _replace_once(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def _big_payments_json(folder: Path, copies: int = 8) -> bytes:
    """payments.json over 1 MB (the fast JSON reader's size), indented, every id distinct."""
    document = json.loads((folder / "payments.json").read_text())
    items = []
    for copy in range(copies):
        for item in document["items"]:
            items.append({**item, "id": f"{item['id']}{copy}"})
    text = json.dumps({"entity": "collection", "count": len(items), "items": items}, indent=2)
    assert len(text) > 1 << 20
    return text.encode()


def test_deeply_nested_json_is_refused_at_the_level_too_deep(
    folder: Path, refused: Refused
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    (folder / "payments.json").write_bytes(b'{"entity": "collection",\n "items": ' + deep + b"}")
    assert refused(folder) == ["payments.json:2:74: JSON nested more than 64 levels deep"]


def test_deep_nesting_inside_an_item_of_a_large_file_is_refused(
    folder: Path, refused: Refused
) -> None:
    data = _big_payments_json(folder)
    deep = b"[" * 5_000 + b"]" * 5_000
    data = data.replace(b'"notes": []', b'"notes": ' + deep, 1)
    (folder / "payments.json").write_bytes(data)
    [problem] = refused(folder)
    assert problem.endswith(": JSON nested more than 64 levels deep")
    assert problem.startswith("payments.json:")


@pytest.mark.parametrize(
    "nesting",
    [
        pytest.param(b'{"a": ' * 100 + b"1" + b"}" * 100, id="objects-between-keys"),
        pytest.param(b"[ " * 100 + b"]" * 100, id="spaced-brackets"),
    ],
)
def test_deep_nesting_that_json_can_read_is_refused_in_a_file_over_the_scan_size(
    folder: Path, refused: Refused, nesting: bytes
) -> None:
    """Over 4 MiB the bracket scan runs only on a run of brackets; nesting json.loads reads
    (under ~990 levels) must still be refused, at the level too deep."""
    data = _big_payments_json(folder, copies=40)
    assert len(data) > DEPTH_SCAN_MAX_CHARS
    data = data.replace(b'"notes": []', b'"notes": ' + nesting, 1)
    (folder / "payments.json").write_bytes(data)
    [problem] = refused(folder)
    assert problem.startswith("payments.json:")
    assert problem.endswith(": JSON nested more than 64 levels deep")
    line, column = (int(part) for part in problem.split(":")[1:3])
    lines = data.decode().split("\n")
    before = lines[line - 1][: column - 1]
    assert before.count("{") + before.count("[") > 0  # the position points into the nesting


def test_a_5000_digit_integer_in_json_is_refused_with_its_position(
    folder: Path, refused: Refused
) -> None:
    _replace_once(folder / "payments.json", b'"amount": 47126450', b'"amount": ' + b"9" * 5000)
    assert refused(folder) == [
        "payments.json:1:110: number of 5,000 digits: longer than the 4,300 allowed"
    ]


def test_a_5000_digit_integer_in_a_large_json_file_is_refused(
    folder: Path, refused: Refused
) -> None:
    data = _big_payments_json(folder)
    data = data.replace(b'"amount": 47126450', b'"amount": ' + b"9" * 5000, 1)
    (folder / "payments.json").write_bytes(data)
    assert refused(folder) == [
        "payments.json:8:17: number of 5,000 digits: longer than the 4,300 allowed"
    ]


def test_a_5000_digit_amount_in_csv_is_refused_as_too_large_and_shown_cut(
    folder: Path, refused: Refused
) -> None:
    _replace_once(folder / "refunds.csv", b",3681300,", b"," + b"9" * 5000 + b",")
    assert refused(folder) == [
        "refunds.csv:2:amount: amount '" + "9" * 60 + "'... (5,000 characters) is too large"
        " (more than 18 digits)"
    ]


def test_a_5000_digit_timestamp_is_refused_and_shown_cut(folder: Path, refused: Refused) -> None:
    _replace_once(folder / "refunds.csv", b",1779955349,", b"," + b"1" * 5000 + b",")
    assert refused(folder) == [
        "refunds.csv:2:created_at: unparsable date '" + "1" * 60 + "'... (5,000 characters)"
    ]


def test_a_csv_cell_over_the_field_limit_is_refused_naming_line_and_column(
    folder: Path, refused: Refused
) -> None:
    _replace_once(folder / "refunds.csv", b",processed,", b",processed" + b"x" * 200_000 + b",")
    assert refused(folder) == [
        "refunds.csv:2:status: cell of 200,009 characters: longer than the 131,072 allowed"
    ]


def test_a_quoted_csv_cell_of_two_megabytes_is_refused_naming_line_and_column(
    folder: Path, refused: Refused
) -> None:
    big = b'"' + b"x\n" * 1_000_000 + b'"'
    _replace_once(folder / "refunds.csv", b",processed,", b"," + big + b",")
    assert refused(folder) == [
        "refunds.csv:2:status: cell of 2,000,000 characters: longer than the 131,072 allowed"
    ]


def test_a_huge_cell_in_an_ignored_column_does_not_hide_the_real_problem(
    folder: Path, refused: Refused
) -> None:
    # The line finder reads the file with the csv module, which stopped at 128 KiB.
    _replace_once(folder / "refunds.csv", b",refund,", b"," + b"n" * 200_000 + b",")
    _replace_once(folder / "refunds.csv", b",4951600,", b",-4951600,")
    assert refused(folder) == ["refunds.csv:3:amount: negative amount '-4951600'"]


def test_a_bank_statement_cell_over_the_field_limit_is_refused(
    folder: Path, refused: Refused
) -> None:
    path = folder / "bank_statement.csv"
    lines = path.read_bytes().split(b"\n")
    lines[6] = lines[6] + b',"' + b"y" * 200_000 + b'"'
    path.write_bytes(b"\n".join(lines))
    assert refused(folder) == [
        "bank_statement.csv:7:8: cell of 200,000 characters: longer than the 131,072 allowed"
    ]


def test_a_delimited_text_statement_cell_over_the_field_limit_is_refused(
    folder: Path, refused: Refused
) -> None:
    path = folder / "bank_statement.csv"
    text = path.read_bytes().replace(b"Chq./Ref.No.", b"Chq./Ref.No." + b"z" * 140_000)
    path.unlink()
    (folder / "bank_statement.txt").write_bytes(text)
    assert refused(folder) == [
        "bank_statement.txt:5:3: cell of 140,012 characters: longer than the 131,072 allowed"
    ]


def test_a_nul_byte_in_a_csv_file_is_refused_where_it_is(folder: Path, refused: Refused) -> None:
    _replace_once(folder / "refunds.csv", b",processed,", b",proc\0essed,")
    assert refused(folder) == ["refunds.csv:2:79: NUL byte: not a text file"]


def test_nul_bytes_in_json_and_bank_statement_are_refused_where_they_are(
    folder: Path, refused: Refused
) -> None:
    _replace_once(folder / "payments.json", b'"wallet"', b'"wal\0let"')
    _replace_once(folder / "payments.json", b'"card"', b'"ca\0rd"')
    _replace_once(folder / "bank_statement.csv", b"Narration", b"Narr\0ation")
    assert refused(folder) == [
        "payments.json:1:255: NUL byte: not a text file (2 NUL bytes in the file)",
        "bank_statement.csv:5:10: NUL byte: not a text file",
    ]


def test_a_json_escaped_nul_in_a_text_cell_is_refused(folder: Path, refused: Refused) -> None:
    _replace_once(folder / "payments.json", b'"wallet"', b'"wal\\u0000let"')
    assert refused(folder) == [
        "payments.json:1:method: item 1: NUL character in the cell 'wal\\x00let'"
    ]


def test_a_key_written_twice_in_a_json_item_is_refused_naming_item_and_key(
    folder: Path, refused: Refused
) -> None:
    _replace_once(
        folder / "payments.json", b'"amount": 47126450,', b'"amount": 47126450, "amount": 999999,'
    )
    assert refused(folder) == [
        "payments.json:1:amount: item 1: key 'amount' is written twice in one object"
        " (refused rather than keep one of the values)"
    ]


def test_a_key_written_twice_in_a_large_json_file_is_refused(
    folder: Path, refused: Refused
) -> None:
    data = _big_payments_json(folder)
    data = data.replace(b'"status": "captured",', b'"status": "captured", "status": "failed",', 1)
    (folder / "payments.json").write_bytes(data)
    assert refused(folder) == [
        "payments.json:5:status: item 1: key 'status' is written twice in one object"
        " (refused rather than keep one of the values)"
    ]


def test_a_key_written_twice_in_settlements_json_with_instant_items_is_refused(
    tmp_path: Path, refused: Refused
) -> None:
    folder = tmp_path / "api"
    shutil.copytree(API_JSON, folder)
    _replace_once(folder / "settlements.json", b'"fees": 0,', b'"fees": 0, "fees": 1,')
    assert refused(folder) == [
        "settlements.json:5:fees: item 1: key 'fees' is written twice in one object"
        " (refused rather than keep one of the values)"
    ]


def test_files_whose_names_differ_only_in_case_are_refused_naming_both(
    folder: Path, refused: Refused
) -> None:
    shutil.copy(folder / "refunds.csv", folder / "REFUNDS.CSV")
    shutil.copy(folder / "bank_statement.csv", folder / "Bank_Statement.csv")
    shutil.copy(folder / "refunds.csv", folder / "NOTES.CSV")  # never read: never a problem
    shutil.copy(folder / "refunds.csv", folder / "notes.csv")
    assert refused(folder) == [
        "Bank_Statement.csv: bank_statement.csv is in the folder too (names differ only in"
        " case): keep one",
        "REFUNDS.CSV: refunds.csv is in the folder too (names differ only in case): keep one",
    ]


def test_spreadsheet_names_differing_only_in_case_are_refused(
    tmp_path: Path, refused: Refused
) -> None:
    folder = tmp_path / "xlsx"
    shutil.copytree(FIXTURES / "real_exports" / "dashboard_xlsx", folder)
    sheet = next(p for p in sorted(folder.iterdir()) if p.suffix == ".xlsx")
    shutil.copy(sheet, folder / sheet.name.upper())
    assert refused(folder) == [
        f"{sheet.name.upper()}: {sheet.name} is in the folder too (names differ only in case):"
        " keep one"
    ]


def test_a_file_over_the_size_cap_is_refused_naming_file_and_cap(
    folder: Path, refused: Refused, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_MAX_FILE_MB", "1")
    (folder / "payments.json").write_bytes(_big_payments_json(folder, copies=12))
    assert refused(folder) == [
        "payments.json: file of 2.8 MB is over the 1 MB limit (RAZORRECON_MAX_FILE_MB)"
    ]


def test_an_invalid_size_cap_is_a_configuration_error(
    folder: Path, refused: Refused, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_MAX_FILE_MB", "lots")
    assert refused(folder) == [
        "RAZORRECON_MAX_FILE_MB must be a whole number of MB above 0, not 'lots'"
    ]


def test_a_key_written_twice_in_the_json_envelope_is_refused(
    folder: Path, refused: Refused
) -> None:
    _replace_once(folder / "payments.json", b'"count": 400,', b'"count": 400, "count": 1,')
    assert refused(folder) == ["payments.json:1:: key 'count' is written twice in the envelope"]


def test_an_infinite_number_cell_in_a_workbook_becomes_text_not_a_crash() -> None:
    from core.ingest.sheets import number_text

    assert [number_text(float("inf")), number_text(float("-inf"))] == ["inf", "-inf"]
