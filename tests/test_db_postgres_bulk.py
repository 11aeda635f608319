"""PostgreSQL's bulk paths (docs/benchmark.md, "PostgreSQL --db at 1M"): frames go in by
COPY in CSV that Arrow writes, and the exception sync joins by hash whatever the planner
knows about freshly loaded tables."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from core.dataset import Dataset
from core.db import connect, pg_bulk, transaction
from core.db import review as review_sql
from core.db.raw import read_dataset
from core.engine import EngineParams
from core.engine.cli import parse_as_of
from core.ingest import load_dataset, store_dataset
from core.pipeline import load_folder, reconcile_loaded, store_folder_run
from tests.conftest import ROOT

pytestmark = pytest.mark.postgres

SPEC_DATASET = ROOT / "tests" / "fixtures" / "spec_example" / "dataset"
AS_OF = parse_as_of("2026-06-30T23:59:59+05:30")
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


# Migration 0098: statistics and index builds after bulk loads, through owner-defined
# SECURITY DEFINER functions (docs/postgres.md, "Statistics and index builds after bulk loads").

AUDIT_TABLES = ("audit_log", "exception_events", "action_requests", "review_comments")
REFUSED_NAMES = (
    *AUDIT_TABLES,
    "review_attachments",
    "schema_migrations",
    "razorrecon_index_rebuilds",
    "payments; DROP TABLE audit_log",
    "public.payments",
)


_CATALOG = {
    "indexes": "SELECT c.relname, c.oid, pg_get_indexdef(c.oid) FROM pg_index i"
    " JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(?)",
    "foreign keys": "SELECT conname, oid, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = to_regclass(?) AND contype = 'f'",
}


def _catalog(conn: object, kind: str, table: str) -> dict[str, tuple[int, str]]:
    """Each of `table`'s indexes or the foreign keys it holds: (its oid, its definition)."""
    rows = conn.execute(_CATALOG[kind], (table,)).fetchall()  # type: ignore[attr-defined]
    return {str(r[0]): (int(r[1]), str(r[2])) for r in rows}


def _indexes(conn: object, table: str) -> dict[str, tuple[int, str]]:
    return _catalog(conn, "indexes", table)


def _foreign_keys(conn: object, table: str) -> dict[str, tuple[int, str]]:
    return _catalog(conn, "foreign keys", table)


def _estimated_rows(conn: object, table: str) -> float:
    row = conn.execute(  # type: ignore[attr-defined]
        "SELECT reltuples FROM pg_class WHERE oid = to_regclass(?)", (table,)
    ).fetchone()
    return float(row[0])


def _owner() -> object:
    return connect(os.environ["DATABASE_OWNER_URL"])


def test_a_large_replacing_load_builds_the_same_indexes_again_and_analyses_every_table(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_bulk, "REBUILD_MIN_ROWS", 2)
    loaded, _ = load_dataset(SPEC_DATASET)
    conn = connect(pg_url)
    before = {t: _indexes(conn, t) for t in ("payments", "recon_rows", "refunds")}
    fk_before = {t: _foreign_keys(conn, t) for t in ("payments", "recon_rows")}
    store_dataset(conn, loaded, source="t", location="t", content_hash="a", replace=True)
    after = {t: _indexes(conn, t) for t in ("payments", "recon_rows", "refunds")}
    for table in ("payments", "recon_rows"):  # dropped and built again: new oids, same text
        assert {n: d for n, (_, d) in after[table].items()} == {
            n: d for n, (_, d) in before[table].items()
        }
        assert all(after[table][n][0] != before[table][n][0] for n in before[table])
    assert after["refunds"] == before["refunds"]  # not a table whose indexes are rebuilt
    for table in ("payments", "recon_rows"):  # kept through the load: same oids (0112)
        assert _foreign_keys(conn, table) == fk_before[table]
        assert list(fk_before[table]) == [f"{table}_import_id_fkey"]
    assert _estimated_rows(conn, "payments") == len(loaded.payments)  # analysed
    assert _estimated_rows(conn, "recon_rows") == len(loaded.recon)
    assert _estimated_rows(conn, "refunds") == len(loaded.refunds)
    pd.testing.assert_frame_equal(read_dataset(conn).payments, loaded.payments)
    owner = _owner()
    assert owner.execute("SELECT count(*) FROM razorrecon_index_rebuilds").fetchone()[0] == 0  # type: ignore[attr-defined]
    owner.close()  # type: ignore[attr-defined]
    conn.close()


def test_a_failed_replacing_load_leaves_the_old_rows_and_the_indexes(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded, _ = load_dataset(SPEC_DATASET)
    conn = connect(pg_url)
    store_dataset(conn, loaded, source="t", location="t", content_hash="a", replace=True)
    rows = read_dataset(conn).payments
    indexes = {t: _indexes(conn, t) for t in ("payments", "recon_rows")}
    keys = {t: _foreign_keys(conn, t) for t in ("payments", "recon_rows")}
    monkeypatch.setattr(pg_bulk, "REBUILD_MIN_ROWS", 2)
    copy = pg_bulk.copy_frame

    def copy_then_fail(*args: Any, **kwargs: Any) -> None:
        copy(*args, **kwargs)  # the rows are in, the indexes dropped
        raise RuntimeError("the load fails half-way")

    monkeypatch.setattr(pg_bulk, "copy_frame", copy_then_fail)
    changed = Dataset(payments=loaded.payments.head(2), recon=loaded.recon)
    with pytest.raises(RuntimeError, match="half-way"):
        store_dataset(conn, changed, source="t", location="t", content_hash="b", replace=True)
    pd.testing.assert_frame_equal(read_dataset(conn).payments, rows)
    assert {t: _indexes(conn, t) for t in ("payments", "recon_rows")} == indexes  # same oids
    assert {t: _foreign_keys(conn, t) for t in ("payments", "recon_rows")} == keys
    conn.close()


def test_a_bulk_load_keeps_the_foreign_keys_so_a_row_naming_no_import_is_refused_at_once(
    pg_url: str,
) -> None:
    conn = connect(pg_url)
    keys, indexes = _foreign_keys(conn, "payments"), _indexes(conn, "payments")
    reached = False
    with pytest.raises(sqlite3.IntegrityError, match="payments_import_id_fkey"), transaction(conn):
        dropped = conn.execute("SELECT razorrecon_drop_indexes('payments')").fetchone()[0]
        assert dropped == len(indexes) > 0 and _indexes(conn, "payments") == {}
        assert _foreign_keys(conn, "payments") == keys  # the key stays (0112)
        reached = True
        conn.execute(
            "INSERT INTO payments (id, amount, status, created_at, import_id)"
            " VALUES ('pay_orphan', 100, 'captured', 1, 424242)"
        )
    assert reached and _foreign_keys(conn, "payments") == keys
    assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 0
    conn.close()


@pytest.mark.parametrize("name", REFUSED_NAMES)
def test_the_maintenance_functions_refuse_the_audit_trail_and_any_other_name(
    pg_url: str, name: str
) -> None:
    conn = connect(pg_url)
    for function in ("razorrecon_analyze", "razorrecon_drop_indexes", "razorrecon_build_indexes"):
        with pytest.raises(sqlite3.DatabaseError, match="is not a table"), transaction(conn):
            conn.execute(f"SELECT {function}(?)", (name,))
    assert _indexes(conn, "audit_log")  # untouched
    conn.close()


def test_dropping_indexes_outside_a_writing_unit_is_refused(pg_url: str) -> None:
    conn = connect(pg_url)
    before = _indexes(conn, "payments")
    reading = transaction(conn, immediate=False)  # a reading unit holds no write lock
    with pytest.raises(sqlite3.DatabaseError, match="writing unit"), reading:
        conn.execute("SELECT razorrecon_drop_indexes('payments')")
    assert _indexes(conn, "payments") == before
    conn.close()


def test_a_writing_unit_that_drops_indexes_and_does_not_build_them_cannot_commit(
    pg_url: str,
) -> None:
    conn = connect(pg_url)
    before = _indexes(conn, "outcomes")
    keys = _foreign_keys(conn, "outcomes")
    with pytest.raises(sqlite3.DatabaseError, match="not built again"), transaction(conn):
        dropped = conn.execute("SELECT razorrecon_drop_indexes('outcomes')").fetchone()[0]
        assert dropped == len(before) - 1  # all but the primary key's
        assert _foreign_keys(conn, "outcomes") == keys  # its key to runs stays (0112)
    assert _indexes(conn, "outcomes") == before and _foreign_keys(conn, "outcomes") == keys
    assert list(keys) == ["outcomes_run_id_fkey"]
    conn.close()


def test_the_app_role_cannot_touch_the_remembered_index_definitions(pg_url: str) -> None:
    conn = connect(pg_url)
    with pytest.raises(sqlite3.DatabaseError, match="permission denied"), transaction(conn):
        conn.execute(
            "INSERT INTO razorrecon_index_rebuilds VALUES ('payments', 'x', 'DROP TABLE audit_log')"
        )
    with pytest.raises(sqlite3.DatabaseError, match="permission denied"):
        conn.execute("SELECT * FROM razorrecon_index_rebuilds").fetchall()
    conn.close()


def test_a_large_run_builds_the_outcome_indexes_after_and_analyses_outcomes_and_exceptions(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_bulk, "REBUILD_MIN_ROWS", 2)
    monkeypatch.setattr(review_sql, "ANALYZE_MIN_OPENED", 1)
    conn = connect(pg_url)
    # The test server hands an emptied database on to the next test: its planner estimate
    # may still count an earlier test's outcomes, which would (rightly) keep the indexes.
    pg_bulk.analyze(conn, "outcomes")
    before = _indexes(conn, "outcomes")
    (key_before,) = _foreign_keys(conn, "outcomes").values()
    run = reconcile_loaded(load_folder(SPEC_DATASET), EngineParams(), AS_OF)
    stored = store_folder_run(conn, run)
    after = _indexes(conn, "outcomes")
    rebuilt = {n for n in before if after[n][0] != before[n][0]}
    assert rebuilt == set(before) - {"outcomes_pkey"}
    (key,) = _foreign_keys(conn, "outcomes").values()  # kept: dropping it locks runs (0112)
    assert key == key_before
    assert key[1] == "FOREIGN KEY (run_id) REFERENCES runs(id) ON DELETE CASCADE"
    assert {n: d for n, (_, d) in after.items()} == {n: d for n, (_, d) in before.items()}
    outcomes = conn.execute("SELECT count(*) FROM outcomes").fetchone()[0]
    assert outcomes == len(run.outcomes) and _estimated_rows(conn, "outcomes") == outcomes
    exceptions = conn.execute("SELECT count(*) FROM exceptions").fetchone()[0]
    assert exceptions > 0 and _estimated_rows(conn, "exceptions") == exceptions
    assert stored.run_id == 1
    conn.close()


def test_rows_read_by_copy_keep_a_row_of_one_null_and_an_empty_read_keeps_its_columns(
    pg_url: str,
) -> None:
    conn = connect(pg_url)
    loaded, _ = load_dataset(SPEC_DATASET)
    store_dataset(conn, loaded, source="t", location="t", content_hash="a", replace=True)
    fees = pg_bulk.csv_table(conn, "payments", {"fee": pa.int64()}, "row_order")
    expected = [None if pd.isna(v) else int(v) for v in loaded.payments["fee"]]
    assert fees.column("0").to_pylist() == expected and None in expected  # empty lines kept
    none = pg_bulk.csv_table(
        conn, "payments", {"id": pa.large_string(), "fee": pa.int64()}, "id", "id = ?", ("x'; --",)
    )
    assert none.num_rows == 0 and none.schema.types == [pa.large_string(), pa.int64()]
    conn.close()
