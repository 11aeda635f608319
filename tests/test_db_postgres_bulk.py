"""PostgreSQL's bulk paths (docs/benchmark.md, "PostgreSQL --db at 1M"): frames go in by
COPY in CSV that Arrow writes, and the exception sync joins by hash whatever the planner
knows about freshly loaded tables."""

from __future__ import annotations

import pandas as pd
import pytest

from core.dataset import Dataset
from core.db import connect, transaction
from core.db import review as review_sql
from core.db.raw import read_dataset
from core.ingest import load_dataset, store_dataset
from tests.conftest import ROOT

pytestmark = pytest.mark.postgres

SPEC_DATASET = ROOT / "tests" / "fixtures" / "spec_example" / "dataset"
# Text CSV must keep apart: NULL and '', quotes, the delimiter, line breaks, COPY's
# end-of-data marker, backslashes, and characters beyond ASCII.
AWKWARD = ["", None, 'say "hi", then\nleave', "\\.", "back\\slash\r\n", "₹ 1,000 – ü"]


def test_copy_keeps_null_empty_text_quotes_commas_and_line_breaks_apart(pg_url: str) -> None:
    loaded, _ = load_dataset(SPEC_DATASET)
    payments = loaded.payments.head(len(AWKWARD)).copy()
    for column in ("description", "notes", "email", "order_id"):
        payments[column] = pd.array(AWKWARD, dtype=payments[column].dtype)
    payments["fee"] = pd.array([None, 0, -5, 2**40, None, 7], dtype="Int64")
    conn = connect(pg_url)
    store_dataset(
        conn, Dataset(payments=payments), source="t", location="t", content_hash="awkward"
    )
    stored = read_dataset(conn).payments
    pd.testing.assert_frame_equal(stored, payments.reset_index(drop=True))
    nulls = conn.execute("SELECT count(*) FROM payments WHERE notes IS NULL").fetchone()[0]
    empties = conn.execute("SELECT count(*) FROM payments WHERE notes = ''").fetchone()[0]
    assert (nulls, empties) == (1, 1)
    conn.close()


def test_an_upsert_through_the_staging_table_keeps_the_awkward_text_too(pg_url: str) -> None:
    loaded, _ = load_dataset(SPEC_DATASET)
    payments = loaded.payments.head(len(AWKWARD)).copy()
    conn = connect(pg_url)
    store_dataset(
        conn, Dataset(payments=payments.head(2)), source="t", location="t", content_hash="a"
    )
    payments["notes"] = pd.array(AWKWARD, dtype=payments["notes"].dtype)
    store_dataset(conn, Dataset(payments=payments), source="t", location="t", content_hash="b")
    stored = read_dataset(conn).payments
    assert stored["notes"].tolist() == [pd.NA if v is None else v for v in AWKWARD]
    conn.close()


def _plan(conn: object, sql: str, params: tuple[object, ...]) -> str:
    rows = conn.execute("EXPLAIN " + sql, params).fetchall()  # type: ignore[attr-defined]
    return "\n".join(str(r[0]) for r in rows)


def test_the_sync_joins_unanalysed_outcomes_by_hash_and_restores_the_setting(
    pg_url: str,
) -> None:
    conn = connect(pg_url)
    query = (
        "SELECT e.id FROM exceptions e WHERE " + review_sql._NOT_IN_RUN + " ORDER BY e.id"
    )  # the auto-clear candidates: every exception against the run's outcomes
    with transaction(conn):
        # Nothing analysed (the app role may not): the planner knows no sizes.
        with review_sql.set_based_plans(conn):
            guarded = _plan(conn, query, (1,))
            inside = conn.execute("SHOW enable_nestloop").fetchone()[0]
        after = conn.execute("SHOW enable_nestloop").fetchone()[0]
    assert "Nested Loop" not in guarded and "Hash" in guarded
    assert (inside, after) == ("off", "on")
    conn.close()
