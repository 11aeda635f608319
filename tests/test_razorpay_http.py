"""The read-only, retrying HTTP layer under the real `razorpay` SDK, against the fake server."""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from core.errors import ConfigError, RefusedError
from core.razorpay.client import RazorpayReader
from core.razorpay.config import RazorpaySettings, RetryPolicy, settings_from_env
from core.razorpay.errors import (
    RazorpayAPIError,
    RazorpayAuthError,
    RazorpayUnavailableError,
    ReadOnlyViolation,
)
from core.razorpay.http import RetryEvent, RetryingSession, backoff_delay
from tests.fake_razorpay import KEY_ID, KEY_SECRET, FakeRazorpay, Fault, make_payments
from tests.razorpay_support import FakeClock

DAY = dt.date(2026, 5, 20)
# Quick retries. The read timeout stays the default (30 s): the fake answers in milliseconds,
# but a loaded host can take longer than a short timeout, and a request it times out is
# retried, which adds a request (and a retry event) that a test counting them did not make.
FAST = RetryPolicy(max_attempts=4, budget=10, backoff_base=0.01, backoff_cap=0.05)


@pytest.fixture
def fake() -> Iterator[FakeRazorpay]:
    with FakeRazorpay() as server:
        yield server


def reader_for(
    fake: FakeRazorpay,
    policy: RetryPolicy = FAST,
    secret: str = KEY_SECRET,
    clock: FakeClock | None = None,
) -> tuple[RazorpayReader, list[float], list[RetryEvent]]:
    """`clock`: simulated time for the pacer (tests/razorpay_support.py); its sleeps are the
    list returned."""
    sleeps: list[float] = [] if clock is None else clock.sleeps
    events: list[RetryEvent] = []
    session = RetryingSession(
        policy,
        on_retry=events.append,
        sleep=sleeps.append if clock is None else clock.sleep,
        rng=random.Random(7),
        clock=time.monotonic if clock is None else clock.monotonic,
    )
    settings = RazorpaySettings(KEY_ID, secret, base_url=fake.base_url, retry=policy)
    return RazorpayReader(settings, session), sleeps, events


def test_thousands_of_payments_are_read_across_pages_of_100(fake: FakeRazorpay) -> None:
    fake.state.payments = make_payments(2_345, day=DAY) + make_payments(
        50, day=DAY + dt.timedelta(days=1), start_index=5_000
    )
    reader, _, _ = reader_for(fake)

    items = reader.fetch_day("payments", DAY)

    assert len(items) == 2_345
    assert len({i["id"] for i in items}) == 2_345
    pages = fake.requests(path="/v1/payments")
    assert len(pages) == 24
    assert {p.query["count"] for p in pages} == {"100"}
    assert [int(p.query["skip"]) for p in pages] == list(range(0, 2_400, 100))


def test_recon_report_is_read_by_day_with_pages_of_1000(fake: FakeRazorpay) -> None:
    settled = int(dt.datetime(2026, 5, 20, 12, tzinfo=dt.UTC).timestamp())
    fake.state.recon = [
        {"entity_id": f"pay_{n}", "type": "payment", "settled_at": settled, "created_at": settled}
        for n in range(1_500)
    ]
    reader, _, _ = reader_for(fake)

    items = reader.fetch_day("settlement_recon", DAY)

    assert len(items) == 1_500
    pages = fake.requests(path="/v1/settlements/recon/combined")
    assert [(p.query["day"], p.query["count"], p.query["skip"]) for p in pages] == [
        ("20", "1000", "0"),
        ("20", "1000", "1000"),
    ]
    assert reader.fetch_day("settlement_recon", DAY + dt.timedelta(days=1)) == []


def test_a_429_is_retried_when_retry_after_says_and_the_pacer_spaces_the_retry(
    fake: FakeRazorpay,
) -> None:
    fake.state.payments = make_payments(30, day=DAY)
    fake.inject(Fault(status=429, path="/v1/payments", retry_after="0"))
    clock = FakeClock()
    fake.state.on_request = lambda _: clock.advance(0.05)  # each answer takes 0.05 s
    reader, sleeps, events = reader_for(fake, clock=clock)

    items = reader.fetch_day("payments", DAY)

    assert len(items) == 30
    assert [r.status for r in fake.requests(path="/v1/payments")] == [429, 200]
    assert [(e.status_code, e.final, e.delay) for e in events] == [(429, False, 0.0)]
    # The 429 took 0.05 s: 20 requests/s unpaced, halved to 10/s, so the retry starts 0.1 s
    # after the 429's start, 0.05 s after its answer (with the wall clock, a loaded host's
    # slow 429 made the pacer's wait longer than any fixed bound; it slept 0.23-1.0 s).
    assert sleeps == [pytest.approx(0.05)]
    assert reader.session.retries_used == reader.session.rate_limit_retries == 1


def test_timeouts_dropped_connections_and_html_5xx_are_all_retried(fake: FakeRazorpay) -> None:
    fake.state.payments = make_payments(10, day=DAY)
    fake.inject(Fault(delay=2.0, path="/v1/payments", status=200))
    fake.inject(Fault(drop=True, path="/v1/payments"))
    fake.inject(Fault(status=502, html_body=True, path="/v1/payments"))
    # A read timeout well under the fault's delay, and tries to spare: on a loaded host the
    # answer after the three faults can time out too, and is then tried again.
    reader, _, events = reader_for(fake, replace(FAST, read_timeout=0.5, max_attempts=8))

    items = reader.fetch_day("payments", DAY)

    assert len(items) == 10
    reasons = [e.reason for e in events]
    assert reasons[0].startswith("timeout")
    assert reasons[1].startswith("connection error")
    assert reasons[2] == "HTTP 502"
    assert not any(e.final for e in events)


def test_a_5xx_storm_past_max_attempts_raises_unavailable(fake: FakeRazorpay) -> None:
    fake.inject(Fault(status=503, times=None))
    reader, sleeps, events = reader_for(fake)

    with pytest.raises(RazorpayUnavailableError, match="HTTP 503 after 4 tries"):
        reader.fetch_day("payments", DAY)

    assert len(fake.requests(status=503)) == 4
    assert len(sleeps) == 3
    assert events[-1].final and events[-1].status_code == 503


def test_the_retry_budget_is_shared_by_every_request_of_a_session(fake: FakeRazorpay) -> None:
    policy = RetryPolicy(max_attempts=10, budget=3, backoff_base=0.001, backoff_cap=0.002)
    fake.inject(Fault(status=500, times=2))
    reader, _, _ = reader_for(fake, policy)
    reader.fetch_day("payments", DAY)  # uses 2 of the 3 retries
    fake.inject(Fault(status=500, times=2))

    with pytest.raises(RazorpayUnavailableError, match="retry budget of 3"):
        reader.fetch_day("refunds", DAY)
    assert reader.session.retries_used == 3


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_cap=8.0)
    rng = random.Random(1)
    for retry, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 8.0), (9, 8.0)]:
        delays = {backoff_delay(policy, retry, rng) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered, not fixed
    assert backoff_delay(policy, 1, rng, retry_after=5.0) == 5.0
    assert backoff_delay(policy, 4, rng, retry_after=0.25) == 0.25  # exactly, even if shorter
    assert backoff_delay(policy, 1, rng, retry_after=600.0) == 8.0


def test_a_wrong_key_is_an_auth_error_and_is_not_retried(fake: FakeRazorpay) -> None:
    reader, sleeps, _ = reader_for(fake, secret="not-the-secret")

    with pytest.raises(RazorpayAuthError, match="401"):
        reader.fetch_day("payments", DAY)
    assert sleeps == []
    assert len(fake.requests()) == 1


def test_no_request_but_get_ever_leaves_the_client(fake: FakeRazorpay) -> None:
    reader, _, _ = reader_for(fake)
    sdk = reader._client

    with pytest.raises(ReadOnlyViolation):
        sdk.payment.capture("pay_X", 100)
    with pytest.raises(ReadOnlyViolation):
        sdk.payment.refund("pay_X", 100)
    with pytest.raises(ReadOnlyViolation):
        sdk.refund.create({"payment_id": "pay_X", "amount": 100})
    with pytest.raises(ReadOnlyViolation):
        sdk.settlement.create_ondemand_settlement({"amount": 100})
    with pytest.raises(ReadOnlyViolation):
        reader.session.post(fake.base_url + "/v1/payouts", data="{}")

    assert fake.requests() == []


def test_timeouts_are_explicit_on_every_request(fake: FakeRazorpay) -> None:
    fake.inject(Fault(delay=1.0, status=200, times=None))
    policy = RetryPolicy(max_attempts=1, budget=0, read_timeout=0.2)
    reader, _, events = reader_for(fake, policy)

    with pytest.raises(RazorpayUnavailableError, match="timeout"):
        reader.fetch_day("payments", DAY)
    assert events[-1].reason.startswith("timeout")


def env(**values: str) -> dict[str, str]:
    return {"RAZORPAY_KEY_ID": KEY_ID, "RAZORPAY_KEY_SECRET": KEY_SECRET, **values}


def test_a_live_key_is_refused_unless_live_is_allowed() -> None:
    live = env(RAZORPAY_KEY_ID="rzp_live_AbCdEf123456")
    with pytest.raises(RefusedError, match="RAZORPAY_ALLOW_LIVE=1"):
        settings_from_env(live)
    with pytest.raises(RefusedError):
        settings_from_env({**live, "RAZORPAY_KEY_ID": "some_other_key"})
    allowed = settings_from_env({**live, "RAZORPAY_ALLOW_LIVE": "1"})
    assert allowed.key_id == "rzp_live_AbCdEf123456" and not allowed.is_test_key


def test_settings_come_from_the_environment_and_hide_the_secret() -> None:
    settings = settings_from_env(
        env(RAZORPAY_BASE_URL="http://127.0.0.1:9/", RAZORPAY_MAX_ATTEMPTS="3")
    )
    assert settings.base_url == "http://127.0.0.1:9"
    assert settings.retry.max_attempts == 3
    assert KEY_SECRET not in repr(settings)
    with pytest.raises(ConfigError, match="RAZORPAY_KEY_SECRET"):
        settings_from_env({"RAZORPAY_KEY_ID": KEY_ID})
    with pytest.raises(ConfigError, match="RAZORPAY_READ_TIMEOUT"):
        settings_from_env(env(RAZORPAY_READ_TIMEOUT="soon"))


def test_a_2xx_answer_that_is_not_json_is_retried(fake: FakeRazorpay) -> None:
    fake.state.payments = make_payments(5, day=DAY)
    fake.inject(Fault(status=200, html_body=True, path="/v1/payments"))
    reader, _, events = reader_for(fake)

    assert len(reader.fetch_day("payments", DAY)) == 5
    assert [e.reason for e in events] == ["a 2xx answer that is not JSON (truncated?)"]


def test_a_4xx_other_than_auth_is_not_retried_and_names_razorpays_message(
    fake: FakeRazorpay,
) -> None:
    fake.inject(Fault(status=400, path="/v1/refunds"))
    reader, sleeps, _ = reader_for(fake)

    with pytest.raises(RazorpayAPIError, match="injected 400"):
        reader.fetch_day("refunds", DAY)
    assert sleeps == [] and len(fake.requests(path="/v1/refunds")) == 1
