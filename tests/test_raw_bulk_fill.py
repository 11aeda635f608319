"""`core.db.raw.raw_tables_filled_in_bulk` / `append_frame`: the streamed build's raw
tables filled with their indexes dropped and built once at the end, leaving the rows that
upserts leave, and never a database without its indexes (an error, a kill), on SQLite
and PostgreSQL."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core.benchmark import generate
from core.db import connect, migrate, transaction
from core.db.backend import is_postgres
from core.db.raw import (
    RAW_TABLES,
    append_frame,
    clear_raw_tables,
    insert_import,
    raw_tables_filled_in_bulk,
    read_dataset,
    write_frame,
)
from core.ingest import load_dataset

ROOT = Path(__file__).resolve().parent.parent


def _indexes(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(table, index) of every index on a raw table, unique keys and PostgreSQL's included."""
    tables = [t for t, _, _ in RAW_TABLES.values()]
    if is_postgres(conn):
        rows = conn.execute(
            "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = current_schema()"
        ).fetchall()
    else:
        rows = conn.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'index'")
    return sorted((str(r[0]), str(r[1])) for r in rows if str(r[0]) in tables)


def _import(conn: sqlite3.Connection, content_hash: str) -> int:
    return insert_import(
        conn,
        source="test",
        location="test",
        content_hash=content_hash,
        imported_at=1,
        report_json="{}",
    )


def _rows(conn: sqlite3.Connection, table: str, key: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY {key}")]


def _sorted(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    return frame.sort_values(key, kind="stable").reset_index(drop=True)


def test_bulk_fill_leaves_the_rows_upserts_leave_when_a_key_comes_twice(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    generate(tmp_path / "ds", payments=600, seed=7)
    dataset, _ = load_dataset(tmp_path / "ds")
    payments = dataset.payments
    first, second = payments.iloc[:400], payments.iloc[300:].copy()
    second["amount"] = second["amount"] + 1  # the repeated ids change: the last must win
    again = payments.iloc[[310]].copy()
    again["amount"] = again["amount"] + 2  # a key repeated inside one frame: the last wins
    second = pd.concat([second, again], ignore_index=True)
    refunds = dataset.refunds  # PostgreSQL keeps their key (a constraint) while filling
    later_refunds = refunds.iloc[: len(refunds) // 2].copy()
    later_refunds["amount"] = later_refunds["amount"] + 1
    parts = {"payments": (first, second), "refunds": (refunds, later_refunds)}
    indexes = _indexes(db_conn)
    with transaction(db_conn):
        import_id = _import(db_conn, "upserted")
        for attribute, frames in parts.items():
            for frame in frames:
                write_frame(db_conn, attribute, frame, import_id)
        write_frame(db_conn, "recon", dataset.recon, import_id)
    upserted = read_dataset(db_conn)
    with transaction(db_conn):
        clear_raw_tables(db_conn)
        import_id = _import(db_conn, "bulk")
        with raw_tables_filled_in_bulk(db_conn) as fill:
            assert is_postgres(db_conn) or _indexes(db_conn) == []
            for attribute, frames in parts.items():
                for frame in frames:
                    append_frame(db_conn, fill, attribute, frame, import_id)
            append_frame(db_conn, fill, "recon", dataset.recon, import_id)
    assert _indexes(db_conn) == indexes
    bulk = read_dataset(db_conn)
    assert len(bulk.payments) == len(payments)
    assert len(bulk.refunds) == len(refunds) > 0
    for table, key in (("payments", "id"), ("refunds", "id"), ("recon", "row_key")):
        pd.testing.assert_frame_equal(
            _sorted(getattr(bulk, table), key), _sorted(getattr(upserted, table), key)
        )
    stored = bulk.payments.set_index("id")
    last = second.drop_duplicates("id", keep="last")
    assert (stored.loc[last["id"], "amount"].to_numpy() == last["amount"].to_numpy()).all()


def test_bulk_fill_keeps_a_repeated_key_at_its_first_place_like_an_upsert(
    tmp_path: Path,
) -> None:
    generate(tmp_path / "ds", payments=300, seed=3)
    payments = load_dataset(tmp_path / "ds")[0].payments
    later = payments.iloc[[5, 0]].copy()
    later["amount"] = [1, 2]
    frames = (payments, later)
    orders: list[pd.DataFrame] = []
    for bulk in (False, True):
        with connect(tmp_path / f"{bulk}.sqlite") as conn:
            migrate(conn)
            with transaction(conn):
                import_id = _import(conn, "x")
                if bulk:
                    with raw_tables_filled_in_bulk(conn) as fill:
                        for frame in frames:
                            append_frame(conn, fill, "payments", frame, import_id)
                else:
                    for frame in frames:
                        write_frame(conn, "payments", frame, import_id)
            orders.append(read_dataset(conn).payments)  # in rowid order
    pd.testing.assert_frame_equal(orders[1], orders[0])
    assert orders[1]["amount"].iloc[[0, 5]].tolist() == [2, 1]


def test_bulk_fill_that_fails_leaves_the_indexes_and_rows_as_they_were(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    generate(tmp_path / "ds", payments=300, seed=11)
    payments = load_dataset(tmp_path / "ds")[0].payments
    with transaction(db_conn):
        write_frame(db_conn, "payments", payments, _import(db_conn, "kept"))
    before, indexes = _rows(db_conn, "payments", "id"), _indexes(db_conn)
    with pytest.raises(RuntimeError, match="window 2 broke"), transaction(db_conn):
        clear_raw_tables(db_conn)
        import_id = _import(db_conn, "broken")
        with raw_tables_filled_in_bulk(db_conn) as fill:
            append_frame(db_conn, fill, "payments", payments.iloc[:100], import_id)
            raise RuntimeError("window 2 broke")
    assert _indexes(db_conn) == indexes
    assert _rows(db_conn, "payments", "id") == before


def test_bulk_fill_outside_a_transaction_is_refused(db_conn: sqlite3.Connection) -> None:
    with pytest.raises(ValueError, match="transaction"), raw_tables_filled_in_bulk(db_conn):
        pass
    assert _indexes(db_conn)  # nothing dropped


# A streamed build that kills itself (SIGKILL: no handler, no rollback in the process)
# while it stores the raw tables of its second window (staging them, on SQLite).
_KILLED_BUILD = """
import os, signal, sys
from core.db import connect
from core.engine import EngineParams
from core.streamed import stream_folder_into_db

def progress(fraction, message):
    if "window 2 of" in message and "Storing the raw tables" in message:
        os.kill(os.getpid(), signal.SIGKILL)

conn = connect(sys.argv[1])
stream_folder_into_db(conn, sys.argv[2], EngineParams(), int(sys.argv[3]),
                      days_per_window=3, progress=progress)
"""


@pytest.mark.sqlite_only
def test_a_streamed_build_killed_with_its_indexes_dropped_leaves_the_database_whole(
    tmp_path: Path,
) -> None:
    from core.engine import EngineParams
    from core.streamed import stream_folder_into_db

    kept = generate(tmp_path / "kept", payments=800, seed=2)
    generate(tmp_path / "new", payments=1500, seed=4)
    db = tmp_path / "db.sqlite"
    with connect(db) as conn:
        migrate(conn)
        stream_folder_into_db(conn, tmp_path / "kept", EngineParams(), kept.as_of)
        indexes, payments = _indexes(conn), _rows(conn, "payments", "id")
    assert indexes and payments
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_BUILD, str(db), str(tmp_path / "new"), str(kept.as_of)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert _indexes(conn) == indexes
        assert _rows(conn, "payments", "id") == payments


# A bulk fill that kills itself after its first append: the indexes dropped, rows written
# into the house database, nothing committed.
_KILLED_FILL = """
import os, signal, sys
from core.db import connect, transaction
from core.db.raw import append_frame, clear_raw_tables, insert_import, raw_tables_filled_in_bulk
from core.ingest import load_dataset

dataset, _ = load_dataset(sys.argv[2])
conn = connect(sys.argv[1])
conn.execute("PRAGMA cache_size = 20")  # a tiny cache: uncommitted pages spill into the WAL
with transaction(conn):
    clear_raw_tables(conn)
    import_id = insert_import(conn, source="t", location="t", content_hash="killed",
                              imported_at=2, report_json="{}")
    with raw_tables_filled_in_bulk(conn) as fill:
        append_frame(conn, fill, "payments", dataset.payments, import_id)
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.sqlite_only
def test_a_bulk_fill_killed_with_its_indexes_dropped_leaves_them_and_the_rows(
    tmp_path: Path,
) -> None:
    generate(tmp_path / "kept", payments=500, seed=8)
    generate(tmp_path / "new", payments=700, seed=9)
    db = tmp_path / "db.sqlite"
    with connect(db) as conn:
        migrate(conn)
        with transaction(conn):
            write_frame(
                conn, "payments", load_dataset(tmp_path / "kept")[0].payments, _import(conn, "k")
            )
        indexes, payments = _indexes(conn), _rows(conn, "payments", "id")
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_FILL, str(db), str(tmp_path / "new")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert _indexes(conn) == indexes
        assert _rows(conn, "payments", "id") == payments


def test_staged_parts_append_every_part_and_refuse_a_table_whose_key_repeats(
    tmp_path: Path,
) -> None:
    import pyarrow as pa

    from core.db.raw import arrow_rows
    from core.db.staging import table_schema, write_staged_parts

    generate(tmp_path / "ds", payments=400, seed=12)
    dataset, _ = load_dataset(tmp_path / "ds")
    with connect(tmp_path / "house.sqlite") as conn:
        migrate(conn)
        schemas = {t: table_schema(conn, t) for t in ("payments", "refunds")}
    payments, refunds = dataset.payments, dataset.refunds
    parts = [
        {"payments": arrow_rows("payments", payments.iloc[:150], 1)},
        {"payments": arrow_rows("payments", payments.iloc[150:], 1)},
        {"refunds": arrow_rows("refunds", refunds, 1)},
        {"refunds": arrow_rows("refunds", refunds.iloc[:1], 1)},  # a key again
    ]
    staged = write_staged_parts(tmp_path / "staged.sqlite", schemas, iter(parts))
    assert staged.tables == frozenset({"payments"})
    assert set(staged.refused) == {"refunds"}
    with sqlite3.connect(tmp_path / "staged.sqlite") as stage:
        ids = [r[0] for r in stage.execute("SELECT id FROM payments ORDER BY rowid")]
        indexes = {
            r[0] for r in stage.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
    assert ids == payments["id"].tolist()
    assert {"payments_id", "payments_order", "payments_created"} <= indexes
    assert isinstance(parts[0]["payments"], pa.Table)


@pytest.mark.sqlite_only
def test_a_second_streamed_build_into_the_same_database_equals_the_in_memory_run(
    tmp_path: Path,
) -> None:
    from core.db.runs import read_outcome_frame
    from core.engine import EngineParams
    from core.pipeline import reconcile_folder_into_db
    from core.streamed import stream_folder_into_db

    first = generate(tmp_path / "first", payments=700, seed=21)
    second = generate(tmp_path / "second", payments=900, seed=22)
    params = EngineParams()
    with connect(tmp_path / "db.sqlite") as conn, connect(tmp_path / "memory.sqlite") as memory:
        migrate(conn)
        migrate(memory)
        stream_folder_into_db(conn, tmp_path / "first", params, first.as_of, days_per_window=3)
        stored = stream_folder_into_db(
            conn, tmp_path / "second", params, second.as_of, days_per_window=3
        )
        expected = reconcile_folder_into_db(
            memory, tmp_path / "second", params=params, as_of=second.as_of
        )
        assert stored.run_id == 2
        pd.testing.assert_frame_equal(
            read_outcome_frame(conn, stored.run_id), read_outcome_frame(memory, expected.run_id)
        )
        assert len(read_dataset(conn).payments) == len(read_dataset(memory).payments)
