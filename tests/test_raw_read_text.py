"""Reading the raw tables back (core.db.raw.read_dataset, read_month_dataset): SQLite renders
each row as a line of CSV that Arrow parses, so every text a column can hold must come back
as it was stored (quotes, commas, line breaks, the empty text, the word NULL) and every
NULL as NULL; on both databases."""

from __future__ import annotations

import dataclasses
import sqlite3

import pandas as pd

from core.db.raw import read_dataset, read_month_dataset
from core.ingest.load import store_dataset
from core.pipeline import load_folder
from tests.conftest import SPEC_EXAMPLE

AWKWARD = (
    "it's a 'quoted' word, with commas",
    'double "quotes" and a backslash \\ here',
    "two\nlines\r\nand a tab\t",
    "",
    "NULL",
    "null",
    "ünïcödé ₹ 😀",
    " leading and trailing spaces ",
    "''",
    "'",
    "a,b,'c'",
)


def test_stored_texts_and_nulls_come_back_exactly_from_the_whole_and_the_month_reads(
    db_conn: sqlite3.Connection,
) -> None:
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    payments = dataset.payments.copy()
    count = len(payments)
    assert count >= 4
    texts = [AWKWARD[i % len(AWKWARD)] for i in range(count)]
    payments["notes"] = pd.array(texts, dtype="string")
    payments["description"] = pd.array([None, *texts[1:]], dtype="string")
    payments["method"] = pd.array([*texts[: count - 1], None], dtype="string")
    payments["card_network"] = pd.array([None] * count, dtype="string")
    payments["fee"] = pd.array([None, *range(1, count)], dtype="Int64")
    stored = dataclasses.replace(dataset, payments=payments)
    store_dataset(db_conn, stored, source="files", location="spec", content_hash="awkward")

    whole = read_dataset(db_conn).payments
    expected = payments.sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(whole.sort_values("id", ignore_index=True), expected)
    ist = pd.to_datetime(payments["created_at"], unit="s", utc=True).dt.tz_convert("Asia/Kolkata")
    for month in sorted(set(ist.dt.strftime("%Y-%m"))):
        part = read_month_dataset(db_conn, month, "fees").payments
        assert len(part) > 0
        columns = list(part.columns)
        got = part.sort_values("id", ignore_index=True)
        want = expected[expected["id"].isin(set(part["id"]))][columns].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)
