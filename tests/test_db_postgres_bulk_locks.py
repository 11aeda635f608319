"""What a large load's dropped indexes (migrations 0098, 0111, 0112) do to the other
sessions: a reader of `runs` neither waits for a run that stores its outcomes with the
outcome indexes dropped, nor deadlocks with it, and a reader of `imports` does not wait for
a large import (docs/postgres.md, "Statistics and index builds after bulk loads"). Under
0111 a dropped foreign key locked the table it points at against every reader."""

from __future__ import annotations

import threading
import time

import pytest

from core.db import connect, pg_bulk, transaction
from core.db.books import exception_keys
from core.db.runs import latest_completed_run, list_runs
from core.db.views import data_version, latest_import

pytestmark = pytest.mark.postgres


def _waiting_or_done(watch: object, pid: int, thread: threading.Thread) -> None:
    """Until the session `pid` waits for a lock, or `thread` (which runs it) has ended."""
    deadline = time.monotonic() + 60  # only a bound on a hang, never an assertion
    while thread.is_alive() and time.monotonic() < deadline:
        row = watch.execute(  # type: ignore[attr-defined]
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", (pid,)
        ).fetchone()
        if row is not None and row[0] == "Lock":
            return
        time.sleep(0.01)


def test_a_reading_unit_of_runs_then_outcomes_is_not_deadlocked_by_a_large_run_store(
    pg_url: str,
) -> None:
    # core.books.ledger._flagged reads the latest completed run, then its EXCEPTION outcomes,
    # in one snapshot; a large run's outcomes go in with the outcome indexes dropped.
    writer, reader, watch = connect(pg_url), connect(pg_url), connect(pg_url)
    writer_pid = int(writer.execute("SELECT pg_backend_pid()").fetchone()[0])
    errors: list[BaseException] = []

    def store() -> None:
        try:
            with transaction(writer), pg_bulk.indexes_built_after(writer, "outcomes", rebuild=True):
                pass
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    with transaction(reader, immediate=False):
        assert latest_completed_run(reader) is None  # the reading unit has read runs
        thread = threading.Thread(target=store)
        thread.start()
        _waiting_or_done(watch, writer_pid, thread)
        assert exception_keys(reader, 1) == frozenset()
    thread.join()
    assert errors == []
    for conn in (writer, reader, watch):
        conn.close()


def test_runs_can_be_read_while_a_large_run_stores_its_outcomes(pg_url: str) -> None:
    writer, reader = connect(pg_url), connect(pg_url)
    reader.execute("SET lock_timeout = '5s'")  # a wait fails the read instead of hanging
    with transaction(writer), pg_bulk.indexes_built_after(writer, "outcomes", rebuild=True):
        assert list_runs(reader) == [] and latest_completed_run(reader) is None
    writer.close()
    reader.close()


def test_imports_can_be_read_while_a_large_import_stores_its_raw_tables(pg_url: str) -> None:
    writer, reader = connect(pg_url), connect(pg_url)
    reader.execute("SET lock_timeout = '5s'")  # a wait fails the read instead of hanging
    with transaction(writer):
        for table in ("payments", "recon_rows"):
            with pg_bulk.indexes_built_after(writer, table, rebuild=True):
                # What the Overview and the Data page read (core.views.runs).
                assert data_version(reader) == "0:0" and latest_import(reader) is None
    writer.close()
    reader.close()
