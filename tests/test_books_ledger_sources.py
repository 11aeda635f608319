"""The stored ledger derived without reading the raw tables again (docs/books.md "The
stored ledger", "Derived from memory, window by window"): a full run derives it from the
dataset it holds, a streamed run window by window from its window store, and both equal
the derivation from the database frame for frame (days and unexplained), with and without
unexplained differences."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import tests.test_books_ledger as stored_ledger_tests
from core.books.ledger import (
    Ledger,
    compact,
    derive_ledger,
    ledger_by_windows,
    ledger_of,
    ledger_status,
)
from core.books.rollforward import ledger_events
from core.db import connect
from core.db.books import exception_keys
from core.db.raw import read_dataset
from core.engine import EngineParams
from core.pipeline import load_folder, reconcile_database, reconcile_folder_into_db

AS_OF = stored_ledger_tests.AS_OF


def _assert_same(mine: Ledger, theirs: Ledger) -> None:
    pd.testing.assert_frame_equal(mine.days, theirs.days)
    pd.testing.assert_frame_equal(mine.unexplained, theirs.unexplained)


def test_a_folder_run_derives_the_books_from_the_dataset_it_stored_as_a_read_would(
    benchmark_5k: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        run = reconcile_folder_into_db(conn, benchmark_5k, params=EngineParams(), as_of=AS_OF)
        status = ledger_status(conn)
        assert status.current and status.run_id == run.run_id
        from_db = derive_ledger(conn)
        assert status.events == from_db.events
        stored_ledger_tests._assert_same_books(conn)
        in_memory = load_folder(benchmark_5k).dataset
        stored = read_dataset(conn)
        flagged = exception_keys(conn, run.run_id)
        mine, count = ledger_of(in_memory, flagged)
        _assert_same(mine, from_db.ledger)
        assert count == from_db.events
        # With no exception every difference is unexplained: the drill-down path.
        mine, _ = ledger_of(in_memory, frozenset())
        theirs, _ = ledger_of(stored, frozenset())
        assert len(mine.unexplained) > 0
        _assert_same(mine, theirs)
        _assert_same(mine, compact(ledger_events(stored, frozenset())))
    finally:
        conn.close()


def test_a_run_over_the_database_derives_the_books_from_what_it_read(
    benchmark_5k: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_5k, params=EngineParams(), as_of=AS_OF)
        stored_ledger_tests._remove_behind_the_engines_back(conn)
        assert not ledger_status(conn).current
        run = reconcile_database(conn, EngineParams(), AS_OF, "test")
        status = ledger_status(conn)
        assert status.current and status.run_id == run.run_id
        stored_ledger_tests._assert_same_books(conn)
        _assert_same(
            derive_ledger(conn).ledger,
            compact(ledger_events(read_dataset(conn), exception_keys(conn, run.run_id))),
        )
    finally:
        conn.close()


def test_the_books_derived_window_by_window_equal_those_read_from_the_database(
    benchmark_1500: Path, db_url: str, tmp_path: Path
) -> None:
    from core.streamed import stream_folder_into_db

    conn = connect(db_url)
    try:
        store = tmp_path / "store"
        run = stream_folder_into_db(
            conn, benchmark_1500, EngineParams(), AS_OF, store=store, days_per_window=3
        )
        assert run.windows > 2
        status = ledger_status(conn)
        assert status.current and status.run_id == run.run_id
        stored_ledger_tests._assert_same_books(conn)
        dataset = read_dataset(conn)
        unexplained = 0
        for flagged in (exception_keys(conn, run.run_id), frozenset()):
            by_windows, count = ledger_by_windows(store, run.windows, flagged)
            whole, total = ledger_of(dataset, flagged)
            _assert_same(by_windows, whole)
            _assert_same(by_windows, compact(ledger_events(dataset, flagged)))
            assert count == total
            unexplained += len(by_windows.unexplained)
        assert unexplained > 0
    finally:
        conn.close()
