"""Two syncs of one database in one process (two admins, or two tabs, of one app): the real
SDK against the stand-in Razorpay on 127.0.0.1, real SQLite files, real threads."""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from core.db import connect
from core.db.raw import read_dataset
from core.errors import RefusedError
from core.ingest import load_dataset
from core.razorpay.client import RESOURCES
from core.razorpay.status import sync_status
from core.razorpay.sync import SyncReport, sync
from tests.fake_razorpay import FakeRazorpay
from tests.razorpay_support import (
    AFTER_SPEC,
    SPEC_DATASET,
    SPEC_FROM,
    SPEC_TO,
    assert_same_entities,
    day_bounds,
    fake_settings,
)

JUNE = (dt.date(2026, 6, 1), dt.date(2026, 6, 3))


@pytest.fixture
def fake() -> Iterator[FakeRazorpay]:
    with FakeRazorpay() as server:
        server.load_dataset(SPEC_DATASET)
        yield server


@pytest.fixture
def database(db_path: Path) -> Path:
    """A migrated SQLite file (tests/conftest.py), each sync on a connection of its own."""
    return db_path


def no_sleep(_: float) -> None:
    pass


def payments_between(conn: sqlite3.Connection, first: dt.date, last: dt.date) -> int:
    query = "SELECT COUNT(*) FROM payments WHERE created_at BETWEEN ? AND ?"
    return int(conn.execute(query, (day_bounds(first)[0], day_bounds(last)[1])).fetchone()[0])


def test_a_second_sync_in_the_same_process_is_refused_while_the_first_runs(
    database: Path, fake: FakeRazorpay
) -> None:
    committed = threading.Event()
    second_tried = threading.Event()
    first: dict[str, object] = {}
    second: dict[str, object] = {}

    def first_day_stored(*_step: object) -> None:
        # The first sync has committed a day and goes on only once the second was tried:
        # it is mid-run then however slowly either thread is scheduled on a loaded host.
        committed.set()
        second_tried.wait()

    def run(
        into: dict[str, object],
        actor: str,
        dates: tuple[dt.date, dt.date],
        on_step: Callable[..., None] | None = None,
    ) -> None:
        conn = connect(database)
        try:
            into["report"] = sync(
                conn,
                fake_settings(fake),
                *dates,
                today=AFTER_SPEC,
                sleep=no_sleep,
                actor=actor,
                on_step=on_step,
            )
        except Exception as error:
            into["error"] = error
        finally:
            conn.close()

    one = threading.Thread(
        target=run,
        args=(first, "first@corp.example", (SPEC_FROM, SPEC_TO), first_day_stored),
    )
    one.start()
    try:
        assert committed.wait(timeout=120), "the first sync never committed a day"
        run(second, "second@corp.example", (SPEC_FROM, dt.date(2026, 5, 31)))
        assert one.is_alive(), "the first sync ended before the second was tried"
        watcher = connect(database)
        try:
            assert sync_status(watcher).state == "running"  # not taken for a leftover
        finally:
            watcher.close()
    finally:
        second_tried.set()
        one.join()  # pytest-timeout bounds a hang

    error = second.get("error")
    assert isinstance(error, RefusedError), second
    message = str(error)
    assert "sync run 1" in message and "first@corp.example" in message
    assert re.search(
        r"started by first@corp\.example at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", message
    )
    assert "still running" in message
    assert "report" in first, first.get("error")
    conn = connect(database)
    try:
        runs = conn.execute("SELECT id, status FROM razorpay_sync_runs ORDER BY id").fetchall()
        assert [tuple(r) for r in runs] == [(1, "completed")]  # the refused one left no run
        original, _ = load_dataset(SPEC_DATASET)
        assert_same_entities(read_dataset(conn), original)
        marks = conn.execute(
            "SELECT DISTINCT range_from, range_to, done_through, complete, run_id"
            " FROM razorpay_sync_watermarks"
        ).fetchall()
        assert [tuple(m) for m in marks] == [(str(SPEC_FROM), str(SPEC_TO), str(SPEC_TO), 1, 1)]
    finally:
        conn.close()


def test_a_sync_whose_run_another_took_over_writes_nothing_more_and_fails(
    database: Path, fake: FakeRazorpay
) -> None:
    taken: list[SyncReport] = []

    def take_over(resource: str, day: dt.date, items: int) -> None:
        if taken or resource != RESOURCES[-1]:
            return
        # The first run now looks dead to other syncs (no heartbeat for hours), so the next
        # one retires it and syncs its own range, resetting the watermarks to it.
        other = connect(database)
        try:
            other.execute("UPDATE razorpay_sync_runs SET heartbeat_at = 0 WHERE id = 1")
            taken.append(sync(other, fake_settings(fake), *JUNE, today=AFTER_SPEC, sleep=no_sleep))
        finally:
            other.close()

    conn = connect(database)
    try:
        with pytest.raises(RefusedError, match="sync run 2 took over"):
            sync(
                conn,
                fake_settings(fake),
                SPEC_FROM,
                SPEC_TO,
                today=AFTER_SPEC,
                sleep=no_sleep,
                on_step=take_over,
            )

        assert taken and taken[0].run_id == 2
        marks = conn.execute(
            "SELECT DISTINCT range_from, range_to, done_through, complete, run_id"
            " FROM razorpay_sync_watermarks"
        ).fetchall()
        assert [tuple(m) for m in marks] == [(str(JUNE[0]), str(JUNE[1]), str(JUNE[1]), 1, 2)]
        # Only the first run's first day and the second run's range were stored.
        after_first_day = SPEC_FROM + dt.timedelta(days=1)
        assert payments_between(conn, after_first_day, JUNE[0] - dt.timedelta(days=1)) == 0
        assert payments_between(conn, JUNE[1] + dt.timedelta(days=1), SPEC_TO) == 0
        runs = conn.execute("SELECT id, status, steps, error FROM razorpay_sync_runs ORDER BY id")
        (one, two) = [tuple(r) for r in runs]
        assert one[:3] == (1, "failed", 1) and "sync run 2 took over" in str(one[3])
        assert two[:3] == (2, "completed", 3)
        # Resuming the second's range finds it done; the first's range is synced afresh.
        again = sync(
            conn, fake_settings(fake), SPEC_FROM, SPEC_TO, today=AFTER_SPEC, sleep=no_sleep
        )
        assert not again.resumed
        original, _ = load_dataset(SPEC_DATASET)
        assert_same_entities(read_dataset(conn), original)
    finally:
        conn.close()
