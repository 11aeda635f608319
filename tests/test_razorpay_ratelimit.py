"""Issue 16 item 4: rate limiting slows a sync down but never stops it; a dead API still does.

The real `razorpay` SDK against the stand-in on 127.0.0.1; simulated time (`FakeClock`), so
no test sleeps for real: the pacer's and the backoff's waits are recorded instead.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import itertools
import random
import shutil
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from core.__main__ import main
from core.benchmark import GROUND_TRUTH_FILE, generate, read_ground_truth
from core.calendar import IST
from core.db import connect
from core.db.raw import read_dataset
from core.errors import ConfigError
from core.razorpay.client import RazorpayReader
from core.razorpay.config import RazorpaySettings, RetryPolicy, retry_policy_from_env
from core.razorpay.errors import RazorpayUnavailableError
from core.razorpay.export import export_dataset
from core.razorpay.http import RetryEvent, RetryingSession, parse_retry_after
from core.razorpay.status import sync_status
from core.razorpay.sync import SyncReport, sync
from tests import conftest
from tests.fake_razorpay import (
    KEY_ID,
    KEY_SECRET,
    FakeRazorpay,
    Fault,
    TokenBucket,
    make_payments,
)
from tests.razorpay_support import SPEC_DATASET, SPEC_FROM, SPEC_TO, FakeClock

# This module's `conn` tests run on SQLite and on PostgreSQL (tests/conftest.py): the reader
# in the heartbeat test opens `db_url`, the database `conn` is connected to.
conn = conftest.db_conn

AS_OF = "2026-06-30T23:59:59+05:30"  # the benchmark's default as-of
QUARTER_FROM, QUARTER_TO = dt.date(2026, 4, 1), dt.date(2026, 6, 30)  # the benchmark's days
AFTER = dt.date(2026, 7, 15)
DAY = dt.date(2026, 5, 20)
# the policy before issue 16: one fixed budget of 30 retries shared by 429s and 5xx, no
# pacing (the pacer recovers at once)
FIXED_BUDGET_OF_30 = RetryPolicy(budget=30, budget_share=0.0, shared_budget=True, rate_step=1e9)


@pytest.fixture(scope="module")
def merchant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,500 payments of a generated merchant's quarter, with its bank statement and labels
    (no planted faults: every entity is MATCHED or PENDING).
    """
    folder = tmp_path_factory.mktemp("merchant")
    generate(folder, payments=2_500, seed=16, faults=False, money_model=False)
    return folder


@pytest.fixture
def fake() -> Iterator[FakeRazorpay]:
    with FakeRazorpay() as server:
        yield server


def settings(fake: FakeRazorpay, policy: RetryPolicy) -> RazorpaySettings:
    return RazorpaySettings(KEY_ID, KEY_SECRET, base_url=fake.base_url, retry=policy)


def run_sync(
    conn: sqlite3.Connection,
    fake: FakeRazorpay,
    policy: RetryPolicy,
    clock: FakeClock,
    date_from: dt.date = QUARTER_FROM,
    date_to: dt.date = QUARTER_TO,
) -> SyncReport:
    return sync(
        conn,
        settings(fake, policy),
        date_from,
        date_to,
        today=AFTER,
        sleep=clock.sleep,
        rng=random.Random(16),
        clock=clock.monotonic,
        wall_clock=clock.time,
    )


def session_for(
    fake: FakeRazorpay, policy: RetryPolicy, clock: FakeClock
) -> tuple[RazorpayReader, list[RetryEvent]]:
    events: list[RetryEvent] = []
    session = RetryingSession(
        policy,
        on_retry=events.append,
        sleep=clock.sleep,
        rng=random.Random(16),
        clock=clock.monotonic,
        wall_clock=clock.time,
    )
    return RazorpayReader(settings(fake, policy), session), events


def reconcile(folder: Path, results: Path) -> pd.DataFrame:
    assert main(["reconcile", str(folder), "--out", str(results), "--as-of", AS_OF]) == 0
    return pd.read_csv(results, dtype=str, keep_default_na=False)


def serve_the_issue_scenario(fake: FakeRazorpay, merchant: Path) -> None:
    """429 to one request in 7 and 502 to one in 23, by the stand-in's request counter."""
    fake.load_dataset(merchant)
    fake.state.rate_limit_every = 7
    fake.state.error_every = 23


def assert_nothing_stored_from(conn: sqlite3.Connection, day: dt.date) -> None:
    """The run failed on `day`: every earlier day is stored whole, nothing of `day` or later."""
    status = sync_status(conn)
    assert status.state == "failed"
    assert {w.done_through for w in status.watermarks} == {
        (day - dt.timedelta(days=1)).isoformat() if day > QUARTER_FROM else None
    }
    start = int(dt.datetime.combine(day, dt.time(0), tzinfo=IST).timestamp())
    later = conn.execute("SELECT COUNT(*) FROM payments WHERE created_at >= ?", (start,))
    assert later.fetchone()[0] == 0


def test_a_fixed_retry_budget_of_30_stops_the_merchants_sync_on_a_429(
    conn: sqlite3.Connection, fake: FakeRazorpay, merchant: Path
) -> None:
    serve_the_issue_scenario(fake, merchant)

    with pytest.raises(RazorpayUnavailableError) as stopped:
        run_sync(conn, fake, FIXED_BUDGET_OF_30, FakeClock())

    assert "HTTP 429 after the retry budget of 30 for this sync" in str(stopped.value)
    statuses = [r.status for r in fake.requests()]
    assert statuses.count(429) + statuses.count(502) == 31  # 30 retried, the 31st fatal
    failed_day = sync_status(conn).recent_errors[0].day
    assert failed_day is not None
    assert_nothing_stored_from(conn, dt.date.fromisoformat(failed_day))


def test_with_budgets_that_scale_the_same_sync_completes_exports_and_reconciles_to_100_percent(
    conn: sqlite3.Connection, fake: FakeRazorpay, merchant: Path, tmp_path: Path
) -> None:
    serve_the_issue_scenario(fake, merchant)
    clock = FakeClock()

    report = run_sync(conn, fake, RetryPolicy(), clock)  # the default policy

    statuses = [r.status for r in fake.requests()]
    assert report.requests == len(statuses) > 300
    assert report.rate_limited == statuses.count(429) > 30
    assert report.retries == statuses.count(429) + statuses.count(502)
    assert report.paced_seconds > 0  # it did slow down
    assert sync_status(conn).state == "completed"
    stored = read_dataset(conn)
    assert len(stored.payments) == 2_500

    out = tmp_path / "exported"
    export_dataset(conn, out)
    shutil.copyfile(merchant / "bank_statement.csv", out / "bank_statement.csv")
    exported = reconcile(out, tmp_path / "exported.csv")
    original = reconcile(merchant, tmp_path / "original.csv")
    pd.testing.assert_frame_equal(exported, original)
    truth = read_ground_truth(merchant / GROUND_TRUTH_FILE)
    got = exported.set_index(["entity_type", "entity_id"])[["status", "reason_code"]]
    want = truth.set_index(["entity_type", "entity_id"])[["status", "reason_code"]]
    assert len(got) == len(want) > 2_500
    right = (got.loc[want.index] == want).all(axis=1)
    assert right.mean() == 1.0, want[~right.to_numpy()].head()


def test_a_sync_of_thousands_of_requests_with_one_in_five_rate_limited_completes(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    first, last = dt.date(2025, 6, 1), dt.date(2026, 6, 30)  # 13 months: 395 days
    days = [first + dt.timedelta(days=n) for n in range(0, (last - first).days + 1, 9)]
    for n, day in enumerate(days):
        fake.state.payments += make_payments(2, day=day, start_index=2 * n)
    fake.state.rate_limit_every = 5
    clock = FakeClock()
    latency = 0.05
    fake.state.on_request = lambda _: clock.advance(latency)

    report = run_sync(conn, fake, RetryPolicy(), clock, first, last)

    statuses = [r.status for r in fake.requests()]
    assert report.requests == len(statuses) > 1_950
    assert report.rate_limited == statuses.count(429) == len(statuses) // 5
    assert report.retries == report.rate_limited  # nothing else failed
    assert sync_status(conn).state == "completed"
    assert len(read_dataset(conn).payments) == 2 * len(days)
    # slowed to well below the stand-in's natural 20 requests/s, and never to a halt
    elapsed = len(statuses) * latency + clock.slept
    assert len(statuses) / elapsed < 10
    assert max(clock.sleeps) <= 1 / RetryPolicy().min_rate


def test_a_dead_api_answering_502_stops_at_the_first_request_with_nothing_written(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    fake.load_dataset(SPEC_DATASET)
    fake.state.error_every = 1
    clock = FakeClock()

    with pytest.raises(RazorpayUnavailableError) as stopped:
        run_sync(conn, fake, RetryPolicy(), clock, SPEC_FROM, SPEC_TO)

    assert "HTTP 502 after 5 tries (RAZORPAY_MAX_ATTEMPTS=5 per request)" in str(stopped.value)
    assert len(fake.requests()) == 5
    assert clock.slept <= 0.5 + 1 + 2 + 4  # four backoffs, each at most its ceiling
    assert len(read_dataset(conn).payments) == 0
    status = sync_status(conn)
    assert status.state == "failed" and "RAZORPAY_MAX_ATTEMPTS" in (status.last_run.error or "")
    assert {w.done_through for w in status.watermarks} == {None}


def test_a_refused_connection_stops_the_sync_cleanly_after_the_tries_of_one_request(
    conn: sqlite3.Connection,
) -> None:
    with socket.socket() as probe:  # a port with nothing listening on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = RazorpaySettings(KEY_ID, KEY_SECRET, base_url=f"http://127.0.0.1:{port}")
    clock = FakeClock()

    with pytest.raises(RazorpayUnavailableError, match=r"connection error.* after 5 tries"):
        sync(conn, dead, SPEC_FROM, SPEC_TO, today=AFTER, sleep=clock.sleep,
             clock=clock.monotonic, wall_clock=clock.time)  # fmt: skip

    assert len(clock.sleeps) == 4
    assert len(read_dataset(conn).payments) == 0
    assert sync_status(conn).state == "failed"


def test_an_api_answering_only_429_stops_after_the_rate_limited_tries_of_one_request(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    fake.state.rate_limit_every = 1
    fake.state.rate_limit_retry_after = None  # and no hint: exponential backoff
    clock = FakeClock()
    policy = RetryPolicy()

    with pytest.raises(RazorpayUnavailableError, match="20 rate-limited tries of one request"):
        run_sync(conn, fake, policy, clock, SPEC_FROM, SPEC_TO)

    assert len(fake.requests()) == policy.rate_limit_attempts == 20
    assert clock.slept <= 19 * policy.backoff_cap  # bounded in time too
    assert sync_status(conn).state == "failed"


def test_an_api_failing_every_other_request_exhausts_the_error_budget_that_grows_with_answers(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    fake.load_dataset(SPEC_DATASET)
    fake.state.error_every = 2  # half the requests fail: far past one error per ten answers

    with pytest.raises(RazorpayUnavailableError) as stopped:
        run_sync(conn, fake, RetryPolicy(), FakeClock(), SPEC_FROM, SPEC_TO)

    message = str(stopped.value)
    assert "HTTP 502 after the retry budget of 30 for this sync" in message
    assert "RAZORPAY_RETRY_BUDGET_SHARE=0.1 per answer: 31 answers so far" in message
    status = sync_status(conn)
    assert status.state == "failed"
    assert status.recent_errors[0].kind == "fatal"
    assert "gave up: the retry budget" in status.recent_errors[0].message


def test_the_error_budget_grows_with_the_answers_received() -> None:
    policy = RetryPolicy(budget=30, budget_share=0.1, rate_limit_budget=100, rate_limit_share=1)
    assert [policy.error_allowance(n) for n in (0, 299, 300, 5_000)] == [30, 30, 30, 500]
    assert [policy.rate_limit_allowance(n) for n in (0, 100, 2_500)] == [100, 100, 2_500]


def test_the_pacer_slows_down_after_a_429_and_speeds_up_again(fake: FakeRazorpay) -> None:
    fake.state.payments = make_payments(4_000, day=DAY)
    fake.inject(Fault(status=429, path="/v1/payments", after=5, retry_after="0"))
    fake.inject(Fault(status=429, path="/v1/payments", after=25, retry_after="0"))
    clock = FakeClock()
    fake.state.on_request = lambda _: clock.advance(0.1)  # 10 requests/s unpaced
    reader, events = session_for(fake, RetryPolicy(), clock)

    assert len(reader.fetch_day("payments", DAY)) == 4_000

    assert [e.status_code for e in events] == [429, 429]
    assert all(e.delay == 0 for e in events)  # Retry-After: 0, so every sleep is pacing
    waits = clock.sleeps
    # after each 429 the rate halves to 5/s: 0.2 s between starts, 0.1 s of it waited; then
    # each answer adds 5% of the natural 10/s until 10/s (0.1 s between starts) needs no wait
    first, second = waits[: len(waits) // 2], waits[len(waits) // 2 :]
    for run in (first, second):
        assert run[0] == pytest.approx(0.1)
        assert all(a > b for a, b in itertools.pairwise(run))  # speeding up
        assert run[-1] < 0.01
    assert len(first) == len(second) == 10  # 5.0 -> 9.5 requests/s in ten answers
    assert reader.session.pacer.decreases == 2
    assert reader.session.pacer.waited == pytest.approx(clock.slept)


def test_against_a_token_bucket_the_pacer_runs_near_the_limit_with_few_429s(
    fake: FakeRazorpay,
) -> None:
    clock = FakeClock()
    fake.state.on_request = lambda _: clock.advance(0.1)  # 10 requests/s unpaced
    limit = 5.0
    found: dict[str, tuple[int, float]] = {}  # 429s, answers per simulated second
    for label, policy in (
        ("backoff alone", RetryPolicy(rate_step=1e9)),  # the pacer recovers at once
        ("paced", RetryPolicy()),
    ):
        fake.state.log.clear()
        fake.state.admit = TokenBucket(limit, 2 * limit, clock.monotonic)
        reader, _ = session_for(fake, policy, clock)
        started = clock.now
        for n in range(300):  # 300 one-page days
            assert reader.fetch_day("refunds", DAY + dt.timedelta(days=n)) == []
        statuses = [r.status for r in fake.requests()]
        assert statuses.count(200) == 300
        found[label] = (statuses.count(429), 300 / (clock.now - started))

    (alone, _), (paced, rate) = found["backoff alone"], found["paced"]
    assert paced * 1.5 < alone  # pacing spares Razorpay a good part of the 429s
    assert 0.9 * limit < rate < 1.1 * limit  # answers/s: as close to the limit as without


def test_retry_after_in_seconds_is_honoured_exactly_and_capped(fake: FakeRazorpay) -> None:
    fake.state.payments = make_payments(5, day=DAY)
    fake.inject(Fault(status=429, path="/v1/payments", retry_after="7"))
    fake.inject(Fault(status=503, path="/v1/payments", retry_after="600"))
    clock = FakeClock()
    reader, events = session_for(fake, RetryPolicy(backoff_cap=30.0), clock)

    assert len(reader.fetch_day("payments", DAY)) == 5

    assert [e.delay for e in events] == [7.0, 30.0]
    assert clock.sleeps == [7.0, 30.0]  # the pacer had nothing left to wait


def test_retry_after_as_an_http_date_is_honoured_against_the_servers_date(
    fake: FakeRazorpay,
) -> None:
    fake.state.payments = make_payments(5, day=DAY)
    server_now = 1_790_000_000.0  # the stand-in's clock, 115 days ahead of ours
    fake.state.date_clock = lambda: server_now
    date = email.utils.formatdate(server_now + 12, usegmt=True)
    fake.inject(Fault(status=429, path="/v1/payments", retry_after=date))
    clock = FakeClock()
    reader, events = session_for(fake, RetryPolicy(), clock)

    assert len(reader.fetch_day("payments", DAY)) == 5

    assert [e.delay for e in events] == [12.0]
    assert clock.sleeps == [12.0]


def test_retry_after_values_are_read_as_rfc_9110_says() -> None:
    now = 1_780_000_000.0
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after(" 0 ", now) == 0.0
    assert parse_retry_after(email.utils.formatdate(now + 90, usegmt=True), now) == 90.0
    assert parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now) == 0.0  # past: no wait
    assert parse_retry_after(email.utils.formatdate(now + 5), now) == 5.0  # "-0000" zone
    assert parse_retry_after("", now) is None
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after("nan", now) is None


def test_pacing_and_budgets_come_from_the_environment() -> None:
    policy = retry_policy_from_env(
        {
            "RAZORPAY_RETRY_BUDGET": "40",
            "RAZORPAY_RETRY_BUDGET_SHARE": "0.2",
            "RAZORPAY_RATE_LIMIT_ATTEMPTS": "8",
            "RAZORPAY_RATE_LIMIT_BUDGET": "300",
            "RAZORPAY_RATE_LIMIT_SHARE": "2",
            "RAZORPAY_SHARED_RETRY_BUDGET": "1",
            "RAZORPAY_MAX_RATE": "5",
            "RAZORPAY_MIN_RATE": "0.5",
            "RAZORPAY_RATE_STEP": "0.25",
        }
    )
    assert (policy.budget, policy.budget_share, policy.shared_budget) == (40, 0.2, True)
    assert (policy.rate_limit_attempts, policy.rate_limit_budget) == (8, 300)
    assert (policy.rate_limit_share, policy.max_rate, policy.min_rate) == (2.0, 5.0, 0.5)
    assert policy.rate_step == 0.25
    assert retry_policy_from_env({}) == RetryPolicy()
    with pytest.raises(ConfigError, match="RAZORPAY_RATE_LIMIT_BUDGET must be a whole number"):
        retry_policy_from_env({"RAZORPAY_RATE_LIMIT_BUDGET": "2.5"})
    with pytest.raises(ConfigError, match=r"RAZORPAY_MAX_RATE \(0.1\) is below RAZORPAY_MIN_RATE"):
        retry_policy_from_env({"RAZORPAY_MAX_RATE": "0.1"})


def test_a_rate_ceiling_paces_from_the_first_request(fake: FakeRazorpay) -> None:
    fake.state.payments = make_payments(450, day=DAY)
    clock = FakeClock()
    reader, events = session_for(fake, RetryPolicy(max_rate=4.0), clock)

    assert len(reader.fetch_day("payments", DAY)) == 450

    assert events == []
    assert clock.sleeps == [0.25] * 4  # five pages, a quarter of a second apart


def test_a_slow_paced_day_keeps_the_runs_heartbeat_fresh_between_its_requests(
    conn: sqlite3.Connection, db_url: str, fake: FakeRazorpay
) -> None:
    from core.razorpay.status import STALE_AFTER_SECONDS
    from core.razorpay.sync import HEARTBEAT_EVERY_SECONDS

    fake.state.payments = make_payments(4_000, day=DAY)  # one day: 40 pages of 100
    clock = FakeClock()
    seen: list[tuple[float, int]] = []  # (the clock when a request arrives, the heartbeat)

    def slow_answer(_: object) -> None:
        clock.advance(120)  # two minutes per answer: the day takes over an hour
        reader = connect(db_url)  # another connection: sees only what the sync committed
        try:
            row = reader.execute("SELECT max(heartbeat_at) FROM razorpay_sync_runs").fetchone()
        finally:
            reader.close()
        seen.append((clock.now, int(row[0])))

    fake.state.on_request = slow_answer

    run_sync(conn, fake, RetryPolicy(), clock, DAY, DAY)

    assert clock.now - seen[0][0] > STALE_AFTER_SECONDS  # one day outlasted the stale limit
    lags = [now - beat for now, beat in seen]
    assert max(lags) <= HEARTBEAT_EVERY_SECONDS + 2 * 120  # never near STALE_AFTER_SECONDS
    assert len({beat for _, beat in seen}) > len(seen) // 2  # refreshed while the day ran
