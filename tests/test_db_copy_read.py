"""Rows read back as they were stored, on both databases: PostgreSQL reads them by COPY ...
TO STDOUT in CSV parsed by Arrow (core.db.pg_bulk.csv_table), SQLite by its own CSV lines
(core.db.raw._frame). Awkward text, long values, NULL-only and empty-only columns, large
and negative integers, and statement parameters COPY merges on the client."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pyarrow as pa
import pytest

from core.dataset import Dataset
from core.db import pg_bulk
from core.db.backend import is_postgres
from core.db.raw import read_dataset
from core.ingest import load_dataset, store_dataset
from tests import conftest
from tests.test_db_postgres_bulk import SPEC_DATASET

conn = conftest.db_conn

# Each a value COPY's CSV or Arrow's reader could take for something else.
TEXT = [
    '"',
    '""',
    '"quoted at the start',
    "cr\ralone",
    "  spaces both sides  ",
    "NULL",
    "null",
    "\\N",
    "non-BMP 𝄞 😀",
    "\\.",
    ",",
    "",
]


def _payments(rows: int) -> pd.DataFrame:
    loaded, _ = load_dataset(SPEC_DATASET)
    return loaded.payments.head(rows).reset_index(drop=True).copy()


def _stored(conn: sqlite3.Connection, payments: pd.DataFrame) -> pd.DataFrame:
    store_dataset(conn, Dataset(payments=payments), source="t", location="t", content_hash="a")
    return read_dataset(conn).payments


def test_awkward_text_null_only_and_empty_only_columns_and_wide_integers_read_back_as_stored(
    conn: sqlite3.Connection,
) -> None:
    payments = _payments(len(TEXT))
    payments["description"] = pd.array(TEXT, dtype=payments["description"].dtype)
    payments["notes"] = pd.array(TEXT[::-1], dtype=payments["notes"].dtype)
    payments["email"] = pd.array([None] * len(TEXT), dtype=payments["email"].dtype)
    payments["contact"] = pd.array([""] * len(TEXT), dtype=payments["contact"].dtype)
    wide = [None, -1, 2**62, -(2**62), 0, None, 1, 2, 3, 4, 5, None]
    payments["fee"] = pd.array(wide, dtype="Int64")
    payments["amount"] = [0, 2**62, *range(1, len(TEXT) - 1)]
    pd.testing.assert_frame_equal(_stored(conn, payments), payments)


@pytest.mark.parametrize("block", [pg_bulk.CSV_BLOCK_BYTES, 2**20])
def test_a_text_value_longer_than_a_block_reads_back_whole(
    conn: sqlite3.Connection, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Arrow's CSV reader parses blocks and refuses a row longer than one (PostgreSQL's read;
    # SQLite's batches are sized to their text). A row is longer than one 1 MiB block here.
    monkeypatch.setattr(pg_bulk, "CSV_BLOCK_BYTES", block)
    payments = _payments(3)
    long_line = "x" * (3 * 2**20)
    long_lines = "line\n" * (2**20 // 2)
    payments["notes"] = pd.array([long_line, "short", long_lines], dtype=payments["notes"].dtype)
    pd.testing.assert_frame_equal(_stored(conn, payments), payments)


def test_one_row_and_no_rows_read_back_with_their_columns(conn: sqlite3.Connection) -> None:
    payments = _payments(1)
    pd.testing.assert_frame_equal(_stored(conn, payments), payments)
    empty = read_dataset(conn).refunds
    assert len(empty) == 0 and list(empty.columns) == list(Dataset().refunds.columns)


PARAMETERS = ["it's", "50%", "a?b", "back\\slash", "%s", "'; DROP TABLE payments; --"]


@pytest.mark.postgres
def test_copy_parameters_with_quotes_percents_question_marks_and_backslashes_match_exactly(
    pg_url: str,
) -> None:
    from core.db import connect

    pg = connect(pg_url)
    payments = _payments(len(PARAMETERS))
    payments["description"] = pd.array(PARAMETERS, dtype=payments["description"].dtype)
    store_dataset(pg, Dataset(payments=payments), source="t", location="t", content_hash="a")
    assert is_postgres(pg)
    columns = {"description": pa.large_string()}
    for value in PARAMETERS:
        found = pg_bulk.csv_table(pg, "payments", columns, "row_order", "description = ?", (value,))
        assert found.column("0").to_pylist() == [value]
    # A literal % in the statement, with and without parameters (translate doubles it).
    like = pg_bulk.csv_table(pg, "payments", columns, "row_order", "description LIKE '50%'")
    assert like.column("0").to_pylist() == ["50%"]
    like = pg_bulk.csv_table(
        pg, "payments", columns, "row_order", "description LIKE '50%' AND id <> ?", ("x",)
    )
    assert like.column("0").to_pylist() == ["50%"]
    pg.close()
