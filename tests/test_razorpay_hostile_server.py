"""A hostile (or man-in-the-middle) Razorpay: slow-loris answers, paging that never advances,
pages larger than asked, huge bodies. The real SDK and `requests` against the stand-in on
127.0.0.1, real SQLite."""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from core.db.raw import read_dataset
from core.errors import ConfigError
from core.razorpay.config import retry_policy_from_env
from core.razorpay.errors import RazorpayAPIError, RazorpayUnavailableError
from core.razorpay.http import RetryEvent, RetryingSession
from core.razorpay.status import sync_status
from core.razorpay.sync import SyncReport, sync
from tests.fake_razorpay import (
    KEY_ID,
    KEY_SECRET,
    SYNTHETIC_PREFIX,
    FakeRazorpay,
    Fault,
    make_payments,
)
from tests.razorpay_support import AFTER_SPEC, FAST_RETRIES, SPEC_DATASET, fake_settings

DAY = dt.date(2026, 6, 2)
BEFORE = DAY - dt.timedelta(days=1)


@pytest.fixture
def fake() -> Iterator[FakeRazorpay]:
    with FakeRazorpay() as server:
        server.load_dataset(SPEC_DATASET)
        yield server


def no_sleep(_: float) -> None:
    pass


def synthetic_count(conn: sqlite3.Connection) -> int:
    query = "SELECT COUNT(*) FROM payments WHERE substr(id, 1, ?) = ?"
    return int(conn.execute(query, (len(SYNTHETIC_PREFIX), SYNTHETIC_PREFIX)).fetchone()[0])


def done_through(conn: sqlite3.Connection) -> set[str | None]:
    return {w.done_through for w in sync_status(conn).watermarks}


@pytest.mark.parametrize("trickled", ["body", "headers"])
def test_a_trickling_answer_is_cut_at_the_request_deadline_and_the_sync_stops_cleanly(
    conn: sqlite3.Connection, fake: FakeRazorpay, trickled: str
) -> None:
    # One byte every 0.2 s: each arrives well within the 2 s read timeout.
    fake.inject(
        Fault(path="/v1/payments", trickle=0.2, trickle_headers=trickled == "headers", times=None)
    )
    policy = replace(FAST_RETRIES, read_timeout=2.0, request_deadline=1.0, max_attempts=2)
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["report"] = sync(
                conn, fake_settings(fake, policy), BEFORE, DAY, today=AFTER_SPEC, sleep=no_sleep
            )
        except Exception as error:
            outcome["error"] = error

    began = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    took = time.monotonic() - began

    assert not worker.is_alive(), "the sync still hangs on the trickling answer after 30 s"
    error = outcome.get("error")
    assert isinstance(error, RazorpayUnavailableError), outcome
    assert "RAZORPAY_REQUEST_DEADLINE=1" in str(error) and "after 2 tries" in str(error)
    assert took < 10  # two tries of at most 1 s each, and the fast backoff
    assert len(read_dataset(conn).payments) == 0  # the first day's payments were never answered
    assert done_through(conn) == {None}
    assert sync_status(conn).state == "failed"


def test_a_try_cut_at_the_deadline_is_retried_like_a_timeout(fake: FakeRazorpay) -> None:
    fake.inject(Fault(path="/v1/payments", trickle=0.2, times=1))  # then plain answers
    events: list[RetryEvent] = []
    policy = replace(FAST_RETRIES, request_deadline=2.0)
    session = RetryingSession(policy, on_retry=events.append, sleep=no_sleep)

    answer = session.get(f"{fake.base_url}/v1/payments?count=1", auth=(KEY_ID, KEY_SECRET))

    assert answer.status_code == 200 and answer.json()["entity"] == "collection"
    # The trickling try is cut at the deadline and retried like a timeout. A loaded host can
    # take past the deadline (or the read timeout) for a plain answer too: such a try is a
    # timeout retried the same way, never anything else.
    assert session.error_retries == len(events) >= 1
    assert session.requests_sent == len(events) + 1
    assert [e.status_code for e in events] == [None] * len(events)
    assert not any(e.final for e in events)
    assert "RAZORPAY_REQUEST_DEADLINE=2 s" in events[0].reason
    assert all(e.reason.startswith("timeout") for e in events), events


def test_a_server_that_ignores_skip_stops_the_sync_naming_resource_day_and_page(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    fake.state.payments += make_payments(150, day=DAY)
    fake.state.ignore_skip = True  # every page answers the first 100 payments again

    with pytest.raises(RazorpayAPIError) as caught:
        sync(conn, fake_settings(fake), BEFORE, DAY, today=AFTER_SPEC, sleep=no_sleep)

    message = str(caught.value)
    assert f"payments of {DAY}" in message and "page 2" in message
    assert "pagination is not advancing" in message
    pages = [r.query["skip"] for r in fake.requests(path="/v1/payments")]
    assert pages == ["0", "0", "100"]  # the day before (one page), then two pages of DAY
    assert synthetic_count(conn) == 0  # nothing of DAY was written
    assert done_through(conn) == {BEFORE.isoformat()}  # the day is not claimed done
    assert sync_status(conn).state == "failed"


def test_a_page_with_more_items_than_asked_for_is_refused(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    fake.state.payments += make_payments(300, day=DAY)
    fake.state.page_size = 300  # answers 300 items to count=100

    with pytest.raises(
        RazorpayAPIError, match=f"payments of {DAY}, page 1: 300 items for count=100"
    ):
        sync(conn, fake_settings(fake), BEFORE, DAY, today=AFTER_SPEC, sleep=no_sleep)

    assert synthetic_count(conn) == 0
    assert done_through(conn) == {BEFORE.isoformat()}


def test_an_answer_larger_than_the_byte_cap_is_refused_while_it_is_read(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    padded = make_payments(100, day=DAY)
    for payment in padded:
        payment["description"] = "x" * 2_000  # about 230 KB for the page
    fake.state.payments += padded
    policy = replace(FAST_RETRIES, max_response_bytes=100_000)

    with pytest.raises(RazorpayAPIError, match="RAZORPAY_MAX_RESPONSE_BYTES=100,000"):
        sync(conn, fake_settings(fake, policy), BEFORE, DAY, today=AFTER_SPEC, sleep=no_sleep)

    assert synthetic_count(conn) == 0
    assert done_through(conn) == {BEFORE.isoformat()}
    # The same day under the default cap is an ordinary day.
    report: SyncReport = sync(conn, fake_settings(fake), DAY, DAY, today=AFTER_SPEC)
    assert synthetic_count(conn) == 100 and report.retries == 0


def test_the_request_deadline_and_the_byte_cap_come_from_the_environment() -> None:
    policy = retry_policy_from_env(
        {"RAZORPAY_REQUEST_DEADLINE": "45", "RAZORPAY_MAX_RESPONSE_BYTES": "2000000"}
    )
    assert policy.request_deadline == 45.0 and policy.max_response_bytes == 2_000_000
    default = retry_policy_from_env({})
    assert default.request_deadline == 120.0 and default.max_response_bytes == 16 * 2**20
    for name, value in (
        ("RAZORPAY_REQUEST_DEADLINE", "0"),
        ("RAZORPAY_REQUEST_DEADLINE", "soon"),
        ("RAZORPAY_MAX_RESPONSE_BYTES", "1.5"),
        ("RAZORPAY_MAX_RESPONSE_BYTES", "100"),
    ):
        with pytest.raises(ConfigError, match=name):
            retry_policy_from_env({name: value})
