"""The stored ledger (core.books.ledger, docs/books.md "The stored ledger"): derived when a
run completes, it gives every month of a benchmark database exactly today's books (month
list, balance by day, roll-forward, opening, residual drill-down, close and close report),
and a raw change after the run makes it stale, never silently used."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from core.books.close import books_view, close_month, closed_months
from core.books.ledger import (
    FullEvents,
    ledger_for,
    ledger_status,
    rebuild_ledger,
    stored_ledger,
    stored_months,
)
from core.books.report import build_report
from core.books.rollforward import daily_balances, month_rollforward
from core.books.store import months_of, stored_events
from core.dataset import Dataset
from core.db import connect
from core.engine import EngineParams
from core.pipeline import reconcile_database, reconcile_day_into_db, reconcile_folder_into_db
from tests.engine_support import ts
from tests.review_support import record_raw_rows

AS_OF = ts("2026-06-30T23:59:59+05:30")


def _assert_same_books(conn: sqlite3.Connection) -> int:
    """The stored ledger against today's computation, month by month; the number of
    drill-down rows seen (so a caller knows the residual path was exercised)."""
    assert ledger_status(conn).current
    events = stored_events(conn)
    months = months_of(events)
    assert months and stored_months(conn) == months
    closes = closed_months(conn)
    drilled = 0
    for month in months:
        ledger = stored_ledger(conn, month)
        assert ledger.months() == months
        pd.testing.assert_frame_equal(ledger.daily(), daily_balances(events))
        mine = ledger.events_for(month)
        today = month_rollforward(events, month)
        assert month_rollforward(mine, month) == today
        assert books_view(mine, month, closes) == books_view(events, month, closes)
        stored_report = build_report(conn, month)
        todays_report = build_report(conn, month, FullEvents(events))
        assert stored_report == todays_report
        drilled += len(today.drilldown)
    return drilled


def _remove_behind_the_engines_back(conn: sqlite3.Connection) -> None:
    """Two settled recon rows and a refund leave the store without a run: residuals. The
    removal is recorded as an audited write would (tests/review_support.record_raw_rows):
    a run over the store and a close refuse counts no audited write left."""
    keys = conn.execute(
        "SELECT row_key FROM recon_rows WHERE type = 'payment' AND settlement_id IS NOT NULL"
        " ORDER BY row_key LIMIT 2"
    ).fetchall()
    refund = conn.execute(
        "SELECT f.id FROM refunds f JOIN recon_rows r ON r.entity_id = f.id ORDER BY f.id LIMIT 1"
    ).fetchone()
    with conn:
        for (key,) in keys:
            conn.execute("DELETE FROM recon_rows WHERE row_key = ?", (key,))
        conn.execute("DELETE FROM refunds WHERE id = ?", (refund[0],))
    record_raw_rows(conn, "test setup: two recon rows and a refund removed")


def test_the_stored_ledger_gives_todays_books_and_close_report_for_every_month(
    benchmark_5k: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_5k, params=EngineParams(), as_of=AS_OF)
        assert _assert_same_books(conn) == 0  # the benchmark ties out: no residual
        _remove_behind_the_engines_back(conn)
        assert not ledger_status(conn).current
        rebuild_ledger(conn)
        assert _assert_same_books(conn) > 0  # the residual's drill-down, month by month
    finally:
        conn.close()


def test_closing_a_month_from_the_stored_ledger_freezes_todays_figures(
    benchmark_1500: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        _remove_behind_the_engines_back(conn)
        rebuild_ledger(conn)
        events = stored_events(conn)
        may = stored_ledger(conn, "2026-05").events_for("2026-05")
        closed = close_month(conn, may, "2026-05", actor="admin", request_id="close-may")
        assert closed.snapshot == month_rollforward(events, "2026-05")
        closes = closed_months(conn)
        june = stored_ledger(conn, "2026-06").events_for("2026-06")
        assert books_view(june, "2026-06", closes) == books_view(events, "2026-06", closes)
    finally:
        conn.close()


def _todays(conn: sqlite3.Connection, month: str) -> object:
    return month_rollforward(stored_events(conn), month)


def _payment(conn: sqlite3.Connection) -> tuple[str, int]:
    row = conn.execute(
        "SELECT id, created_at FROM payments WHERE status = 'captured' ORDER BY id LIMIT 1"
    ).fetchone()
    return str(row[0]), int(row[1])


def test_a_row_changed_behind_the_engines_back_is_reported_stale_and_never_used(
    benchmark_1500: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert ledger_status(conn).current
        stored_june = month_rollforward(
            stored_ledger(conn, "2026-06").events_for("2026-06"), "2026-06"
        )
        pay_id, created = _payment(conn)
        with conn:  # an edit no import recorded
            conn.execute("UPDATE payments SET amount = amount + 100 WHERE id = ?", (pay_id,))
        status = ledger_status(conn)
        assert not status.current and "changed" in status.reason
        # what the books read now is today's computation, not the stored ledger
        month = months_of(stored_events(conn))[0]
        assert month_rollforward(ledger_for(conn, month).events_for(month), month) == _todays(
            conn, month
        )
        assert _todays(conn, "2026-06") != stored_june
        assert rebuild_ledger(conn).current

        with conn:  # a row inserted behind the engine's back
            conn.execute(
                "INSERT INTO payments (id, amount, currency, status, captured, created_at)"
                " VALUES ('pay_behind_the_back', 12345, 'INR', 'captured', 1, ?)",
                (created,),
            )
        assert not ledger_status(conn).current
        assert rebuild_ledger(conn).current

        with conn:
            conn.execute("DELETE FROM payments WHERE id = 'pay_behind_the_back'")
        assert not ledger_status(conn).current
        assert rebuild_ledger(conn).current

        with conn:  # an old database: no stored ledger at all
            conn.execute("DELETE FROM books_ledger")
        status = ledger_status(conn)
        assert not status.current and "not been derived" in status.reason
    finally:
        conn.close()


def test_an_import_after_the_run_makes_the_ledger_stale(benchmark_1500: Path, db_url: str) -> None:
    from core.ingest import store_dataset

    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert ledger_status(conn).current
        store_dataset(conn, Dataset(), source="razorpay_api", location="sync", content_hash="x1")
        status = ledger_status(conn)
        assert not status.current and "imported" in status.reason
    finally:
        conn.close()


def test_a_run_completed_without_deriving_the_books_leaves_them_stale(
    benchmark_1500: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.books.ledger

    conn = connect(db_url)
    try:
        first = reconcile_folder_into_db(
            conn, benchmark_1500, params=EngineParams(), as_of=AS_OF
        ).run_id
        monkeypatch.setattr(core.books.ledger, "rebuild_after_run", lambda conn, **_: 0.0)
        second = reconcile_database(conn, EngineParams(), AS_OF, "files").run_id
        status = ledger_status(conn)
        # The run marked the ledger as being derived when it read the raw tables
        # (`mark_building`): a run whose derivation never came is named as such.
        assert second != first
        assert not status.current and status.run_id is None
        assert status.reason == (
            "The books are being derived from the data (or a rebuild stopped half-way)."
        )
    finally:
        conn.close()


def test_an_incremental_day_carries_the_ledger_forward_to_its_run(
    benchmark_1500: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        day = reconcile_day_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert day.kind == "incremental"
        # docs/engine.md "The Books ledger after import-day": the day's change applied.
        status = ledger_status(conn)
        assert status.current and status.run_id == day.run.run_id
        _assert_same_books(conn)
    finally:
        conn.close()


def test_a_streamed_run_into_the_database_derives_the_ledger_it_shows(
    benchmark_1500: Path, db_url: str
) -> None:
    from core.streamed import stream_folder_into_db

    conn = connect(db_url)
    try:
        seen: list[str] = []
        run = stream_folder_into_db(
            conn,
            benchmark_1500,
            EngineParams(),
            AS_OF,
            days_per_window=3,
            progress=lambda f, m: seen.append(m),
        )
        status = ledger_status(conn)
        assert status.current and status.run_id == run.run_id
        assert any(m.startswith("Books: ") for m in seen)
        assert "books_ledger_s" in run.timings
        _assert_same_books(conn)
    finally:
        conn.close()
