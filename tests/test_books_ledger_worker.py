"""The Books ledger of a run stored from files is derived on a worker thread while the run
is stored (core.pipeline.store_folder_run, core.books.ledger.Computed): it equals the serial
derivation from the stored tables, is recorded against the run, and a failure of the worker
leaves the run stored and the ledger stale, never wrong (docs/books.md "The stored ledger")."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pandas as pd
import pytest

from core.books.ledger import ledger_status, rebuild_ledger, stored_ledger
from core.books.rollforward import exception_entities
from core.db import connect
from core.db.books import exception_keys
from core.db.runs import latest_completed_run
from core.engine import EngineParams
from core.pipeline import reconcile_folder_into_db
from tests.engine_support import ts

AS_OF = ts("2026-06-30T23:59:59+05:30")


def _whole_ledger(conn: sqlite3.Connection) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stored day lines and every unexplained row (through the last month)."""
    ledger = stored_ledger(conn, "2099-12")
    return ledger.days, ledger.unexplained


def test_the_books_derived_beside_the_store_equal_the_serial_derivation_from_the_tables(
    benchmark_1500: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.books.ledger

    threads: list[str] = []
    real = core.books.ledger.derive_in_memory

    def recording(*args: object) -> object:
        threads.append(threading.current_thread().name)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(core.books.ledger, "derive_in_memory", recording)
    conn = connect(db_url)
    try:
        run = reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert len(threads) == 1 and threads[0].startswith("books-ledger")
        status = ledger_status(conn)
        assert status.current and status.run_id == run.run_id
        beside = _whole_ledger(conn)
        assert len(beside[0]) > 0
        # The serial derivation: the raw tables read back and the run's stored exceptions.
        again = rebuild_ledger(conn)
        assert again.current and again.run_id == run.run_id and again.events == status.events
        serial = _whole_ledger(conn)
        pd.testing.assert_frame_equal(beside[0], serial[0])
        pd.testing.assert_frame_equal(beside[1], serial[1])
    finally:
        conn.close()


def test_the_exceptions_flagged_from_the_outcomes_are_those_the_stored_run_holds(
    benchmark_1500: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        run = reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        flagged = exception_entities(run.outcomes)
        assert len(flagged) > 0
        assert flagged == exception_keys(conn, run.run_id)
    finally:
        conn.close()


def test_a_failure_of_the_ledger_worker_leaves_the_run_stored_and_the_ledger_stale(
    benchmark_1500: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.books.ledger

    conn = connect(db_url)
    try:
        first = reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert ledger_status(conn).current

        def failing(*args: object) -> object:
            raise MemoryError("the ledger worker ran out of memory")

        monkeypatch.setattr(core.books.ledger, "derive_in_memory", failing)
        with pytest.raises(MemoryError, match="ledger worker"):
            reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        latest = latest_completed_run(conn)
        assert latest is not None and latest.id > first.run_id  # the run itself was stored
        status = ledger_status(conn)
        assert not status.current and status.run_id is None
        assert status.reason == (
            "The books are being derived from the data (or a rebuild stopped half-way)."
        )
        assert rebuild_ledger(conn).current  # an admin's rebuild makes it current again
    finally:
        conn.close()


# SQLite only: staging files (core.db.staging).
def test_a_staged_run_derives_the_books_only_once_the_raw_tables_staging_writers_are_done(
    benchmark_1500: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.books.ledger
    from core.db import migrate, staging
    from core.ingest import stage as ingest_stage

    monkeypatch.setattr(staging, "STAGING_MIN_ROWS", 0)  # staged whatever the size
    ledger_started = threading.Event()
    written: list[str] = []
    overlapped: list[str] = []
    real_write = ingest_stage.write_staged_file

    def writing(path: Path, *args: object) -> object:
        result = real_write(path, *args)  # type: ignore[arg-type]
        # A ledger started now would hold its memory beside this writer's rows.
        if ledger_started.wait(timeout=3):
            overlapped.append(path.name)
        written.append(path.name)
        return result

    real_derive = core.books.ledger.derive_in_memory
    at_start: list[int] = []

    def deriving(*args: object) -> object:
        at_start.append(len(written))
        ledger_started.set()
        return real_derive(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest_stage, "write_staged_file", writing)
    monkeypatch.setattr(core.books.ledger, "derive_in_memory", deriving)
    path = tmp_path / "staged.sqlite"
    conn = connect(path)
    try:
        migrate(conn)
        run = reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert len(written) >= 2 and overlapped == []
        assert at_start == [len(written)]
        status = ledger_status(conn)
        assert status.current and status.run_id == run.run_id
    finally:
        conn.close()


# SQLite only: staging files (core.db.staging).
def test_a_failed_staging_writer_fails_the_run_and_the_ledger_worker_with_it(
    benchmark_1500: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.db import migrate, staging
    from core.errors import StorageError
    from core.ingest import stage as ingest_stage

    monkeypatch.setattr(staging, "STAGING_MIN_ROWS", 0)
    real_write = ingest_stage.write_staged_file

    def second_fails(path: Path, tables: object, *args: object) -> object:
        if path.name == "raw1.sqlite":
            return real_write(path.parent / "gone" / path.name, tables, *args)  # type: ignore[arg-type]
        return real_write(path, tables, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest_stage, "write_staged_file", second_fails)
    path = tmp_path / "failed.sqlite"
    conn = connect(path)
    try:
        migrate(conn)
        with pytest.raises(StorageError):
            reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert latest_completed_run(conn) is None
        assert conn.execute("SELECT count(*) FROM payments").fetchone()[0] == 0
        assert not ledger_status(conn).current
    finally:
        conn.close()


# SQLite only: staging files (core.db.staging).
def test_a_staged_run_writes_its_outcomes_after_the_raw_tables_and_derives_the_books_after_them(
    benchmark_1500: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.books.ledger
    import core.pipeline
    from core.db import migrate, staging
    from core.ingest import stage as ingest_stage

    monkeypatch.setattr(staging, "STAGING_MIN_ROWS", 0)  # staged whatever the size
    order: list[str] = []
    real_write = ingest_stage.write_staged_file

    def writing_raw(path: Path, *args: object) -> object:
        result = real_write(path, *args)  # type: ignore[arg-type]
        order.append("raw")
        return result

    real_outcomes = core.pipeline.write_staged_outcomes

    def writing_outcomes(*args: object) -> object:
        order.append("outcomes started")
        result = real_outcomes(*args)  # type: ignore[arg-type]
        order.append("outcomes written")
        return result

    real_derive = core.books.ledger.derive_in_memory

    def deriving(*args: object) -> object:
        order.append("ledger started")
        return real_derive(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest_stage, "write_staged_file", writing_raw)
    monkeypatch.setattr(core.pipeline, "write_staged_outcomes", writing_outcomes)
    monkeypatch.setattr(core.books.ledger, "derive_in_memory", deriving)
    path = tmp_path / "ordered.sqlite"
    conn = connect(path)
    try:
        migrate(conn)
        run = reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        raw_writers = order.count("raw")
        assert raw_writers >= 2
        assert order == [
            *["raw"] * raw_writers,
            "outcomes started",
            "outcomes written",
            "ledger started",
        ]
        stored = conn.execute("SELECT count(*) FROM outcomes WHERE run_id = ?", (run.run_id,))
        assert stored.fetchone()[0] == len(run.outcomes)
        assert ledger_status(conn).current
    finally:
        conn.close()
