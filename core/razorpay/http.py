"""The HTTP layer under the Razorpay SDK: read-only, with timeouts, pacing, retries, budgets.

The SDK (2.0.1) sends every call through `session.<method>(url, auth=..., ...)` and retries
nothing by default, so the session it is given does the resilience work:

- Only GET leaves this process: any other method raises `ReadOnlyViolation` before a socket
  is opened, so no code path can capture, refund or pay out.
- Every request carries an explicit (connect, read) timeout, and every try an overall
  deadline (`request_deadline`, connect to the body's last byte): at the deadline a watchdog
  shuts the try's socket down, so a server trickling its answer a byte at a time fails the
  try like a timeout instead of hanging the sync.
- Bodies are read here, at most `max_response_bytes` of them: a larger answer is refused
  (`RazorpayAPIError`) before the SDK parses anything.
- A `Pacer` spaces request starts: unpaced until Razorpay answers 429, then the rate halves
  (multiplicative decrease) and grows back by `rate_step` times the natural rate per answer
  (additive increase).
- Timeouts, connection errors, 429 and 5xx are retried with exponential backoff and jitter;
  a Retry-After header (seconds or an HTTP-date) is honoured exactly, up to the cap.
- Errors and 429s are counted apart. Errors: at most `max_attempts` tries per request and
  an error budget per session that grows with the answers received. 429s: at most
  `rate_limit_attempts` per request and a separate, larger allowance that grows the same
  way. Past any limit, `RazorpayUnavailableError` naming the limit.
- 401/403 raise `RazorpayAuthError`; other 4xx pass through to the SDK, which raises its
  own error for them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import math
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection

from core.razorpay.config import RetryPolicy
from core.razorpay.errors import (
    RazorpayAPIError,
    RazorpayAuthError,
    RazorpayUnavailableError,
    ReadOnlyViolation,
)

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))
RATE_LIMITED = 429
PACE_WINDOW = 8  # answers whose latency gives the natural rate
PACE_DECREASE = 0.5  # the rate is multiplied by this after a 429
PACE_FALLBACK_RATE = 10.0  # requests/s halved when no rate could be measured yet
BODY_CHUNK = 65_536  # bytes read at a time from an answer's body


class _Deadline:
    """The overall deadline of one try: at `seconds` after `start()`, the socket of the
    connection the try uses (`attach`) is shut down, which ends any read blocked on it.
    Thread-safe: the timer fires on its own thread.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.passed = False
        self._lock = threading.Lock()
        self._ended = False
        self._connection: HTTPConnection | None = None
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def attach(self, connection: HTTPConnection) -> None:
        """The try uses `connection` (called when it sends and once it is connected)."""
        with self._lock:
            self._connection = connection
            if self.passed:
                _shut(connection)

    def end(self) -> None:
        with self._lock:
            self._ended = True
            self._connection = None
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            if self._ended:
                return
            self.passed = True
            if self._connection is not None:
                _shut(self._connection)


def _shut(connection: HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            # the plain socket's shutdown, also under TLS: it wakes a blocked read at once
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


_current = threading.local()  # .deadline: the _Deadline of this thread's try in flight


def _attach_current(connection: HTTPConnection) -> None:
    deadline: _Deadline | None = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.attach(connection)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _attach_current(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _attach_current(self)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _attach_current(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _attach_current(self)
        super().request(*args, **kwargs)


class _WatchedHTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _DeadlineAdapter(HTTPAdapter):
    """An HTTPAdapter whose connections tell the try in flight which socket they use."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _WatchedHTTPPool,
            "https": _WatchedHTTPSPool,
        }


@dataclass(frozen=True)
class RetryEvent:
    """One failed try that will be retried (or, with `final`, that ended the request).

    url: the request URL without the query. attempt: 1-based try that failed.
    status_code: HTTP status, or None for a timeout or connection error. reason: short text.
    delay: seconds slept before the next try (0 when final). final: no further try.
    rate_limited: the try was answered 429. limit: with `final`, the limit that was reached.
    """

    url: str
    attempt: int
    status_code: int | None
    reason: str
    delay: float
    final: bool
    rate_limited: bool = False
    limit: str | None = None


def backoff_delay(
    policy: RetryPolicy, retry_number: int, rng: random.Random, retry_after: float | None = None
) -> float:
    """Seconds before retry number `retry_number` (1-based).

    A server's Retry-After is honoured exactly, up to `backoff_cap`. Without one: equal-jitter
    exponential backoff, the ceiling doubling from `backoff_base` up to `backoff_cap`, the
    delay drawn from [ceiling/2, ceiling] so retries never bunch at zero.
    """
    if retry_after is not None:
        return min(max(0.0, retry_after), policy.backoff_cap)
    ceiling = min(policy.backoff_cap, policy.backoff_base * float(2 ** min(retry_number - 1, 60)))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def parse_retry_after(value: str, now: float) -> float | None:
    """Seconds to wait from a Retry-After value (RFC 9110 section 10.2.3): delay-seconds, or
    an HTTP-date measured from `now` (Unix seconds). None when absent or unreadable; a date
    in the past is 0.
    """
    raw = value.strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110: HTTP-dates are GMT
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, when.timestamp() - now)


def _retry_after_seconds(
    response: requests.Response, wall_clock: Callable[[], float]
) -> float | None:
    raw = response.headers.get("Retry-After", "")
    if not raw.strip():
        return None
    # an HTTP-date is measured from the server's own Date header when it sent one, so a
    # skewed local clock cannot stretch or cut the wait
    now = _header_date(response.headers.get("Date", "")) or wall_clock()
    return parse_retry_after(raw, now)


def _header_date(value: str) -> float | None:
    if not value.strip():
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


class Pacer:
    """AIMD pacing of request starts.

    Unpaced (`rate` None) until the first 429, unless `policy.max_rate` sets a ceiling from
    the start. A 429 halves the rate (multiplicative decrease), starting from the lower of
    the current rate and the natural rate (what the last `PACE_WINDOW` answers took: the
    speed an unpaced client would reach), and never below `min_rate`. Each answer adds
    `rate_step` times the natural rate back (additive increase, in the client's own units,
    so recovery takes as many answers against a fast stand-in as against Razorpay), up to
    `max_rate` and to twice the natural rate, so an allowance the client cannot use does not
    pile up and make the next halving toothless.
    `wait()` sleeps until the next start is due. `clock` is monotonic seconds (tests pass a
    fake one).
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.sleep = sleep
        self.rate: float | None = policy.max_rate or None
        self.waited = 0.0
        self.decreases = 0
        self._last_start: float | None = None
        self._latencies: deque[float] = deque(maxlen=PACE_WINDOW)

    def natural_rate(self) -> float | None:
        """Requests per second the recent answers allow unpaced; None before any took time."""
        total = sum(self._latencies)
        return len(self._latencies) / total if total > 0 else None

    def wait(self) -> float:
        """Sleep until the next request is due and mark its start. Returns the seconds slept."""
        now = self.clock()
        slept = 0.0
        if self.rate is not None and self._last_start is not None:
            due = self._last_start + 1.0 / self.rate
            if due > now:
                slept = due - now
                self.sleep(slept)
                self.waited += slept
                now = self.clock()
        self._last_start = now
        return slept

    def took(self) -> None:
        """The request started by the last `wait()` has ended (answered or failed)."""
        if self._last_start is not None:
            self._latencies.append(max(0.0, self.clock() - self._last_start))

    def on_rate_limited(self) -> None:
        """Multiplicative decrease."""
        known = [r for r in (self.rate, self.natural_rate()) if r is not None]
        base = min(known) if known else PACE_FALLBACK_RATE
        self.rate = max(self.policy.min_rate, base * PACE_DECREASE)
        self.decreases += 1

    def on_answer(self) -> None:
        """Additive increase."""
        if self.rate is None:
            return
        ceiling = self.policy.max_rate or math.inf
        natural = self.natural_rate()
        if natural is not None:
            ceiling = min(ceiling, 2 * natural)
        unit = natural or self.policy.max_rate or PACE_FALLBACK_RATE
        step = self.policy.rate_step * unit
        self.rate = max(self.policy.min_rate, min(self.rate + step, ceiling))


class RetryingSession(requests.Session):
    """A `requests.Session` for the Razorpay SDK: GET only, timeouts, pacing, bounded retries.

    `on_retry` is called for every failed try (so the caller can log it); `on_attempt`
    before every try, once the pacer lets it go; `sleep`, `rng`,
    `clock` (monotonic, for pacing) and `wall_clock` (Unix seconds, for a Retry-After date
    when the answer has no Date header) are injectable so tests need not wait.
    Counters: `requests_sent`, `answers` (requests that ended in an answer), `retries_used`
    (all retries), `error_retries`, `rate_limit_retries`, `backoff_seconds`, and the pacer's
    `pacer.waited`.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        on_attempt: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.policy = policy
        self.on_retry = on_retry
        self.on_attempt = on_attempt
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.wall_clock = wall_clock
        self.pacer = Pacer(policy, clock=clock, sleep=sleep)
        for prefix in ("https://", "http://"):
            self.mount(prefix, _DeadlineAdapter())
        self.requests_sent = 0
        self.answers = 0
        self.error_retries = 0
        self.rate_limit_retries = 0
        self.backoff_seconds = 0.0

    @property
    def retries_used(self) -> int:
        return self.error_retries + self.rate_limit_retries

    def request(  # type: ignore[override]
        self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any
    ) -> requests.Response:
        verb = method.decode() if isinstance(method, bytes) else str(method)
        target = url.decode() if isinstance(url, bytes) else str(url)
        if verb.upper() != "GET":
            raise ReadOnlyViolation(
                f"refused {verb.upper()} {target.split('?', 1)[0]}: the Razorpay client is "
                "read-only"
            )
        kwargs["timeout"] = (self.policy.connect_timeout, self.policy.read_timeout)
        kwargs["stream"] = True  # the body is read here, under the deadline and the cap
        plain_url = target.split("?", 1)[0]
        attempt = errors = limited = 0
        while True:
            attempt += 1
            self.pacer.wait()
            if self.on_attempt is not None:  # e.g. the sync's heartbeat, on slow paced days
                self.on_attempt()
            self.requests_sent += 1
            retry_after: float | None = None
            deadline = _Deadline(self.policy.request_deadline)
            _current.deadline = deadline
            deadline.start()
            try:
                try:
                    response = super().request(verb, target, *args, **kwargs)
                    self._read_body(response, plain_url)
                    if deadline.passed:  # cut headers can look like an answer with no body
                        raise requests.Timeout(self._deadline_text())
                finally:
                    deadline.end()
                    _current.deadline = None
            except requests.RequestException as exc:
                if deadline.passed:
                    status, reason = None, self._deadline_text()
                elif isinstance(exc, requests.Timeout):
                    status, reason = None, f"timeout: {type(exc).__name__}"
                elif isinstance(
                    exc, requests.ConnectionError | requests.exceptions.ChunkedEncodingError
                ):
                    status, reason = None, f"connection error: {_short(exc)}"
                else:
                    raise
            else:
                self.pacer.took()  # answers (429 and 5xx too) measure the natural rate
                status = response.status_code
                if status in (401, 403):
                    raise RazorpayAuthError(
                        f"Razorpay refused the API key (HTTP {status}) at {plain_url}: check "
                        "RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET"
                    )
                if status not in RETRYABLE_STATUS:
                    if 200 <= status < 300 and not _is_json(response):
                        reason = "a 2xx answer that is not JSON (truncated?)"
                    else:
                        self.answers += 1
                        self.pacer.on_answer()
                        return response
                else:
                    reason = f"HTTP {status}"
                    retry_after = _retry_after_seconds(response, self.wall_clock)
                response.close()
            rate_limited = status == RATE_LIMITED
            if rate_limited:
                limited += 1
                self.pacer.on_rate_limited()
                limit = self._rate_limit_stop(limited)
            else:
                errors += 1
                limit = self._error_stop(errors)
            if limit is not None:
                self._notify(
                    RetryEvent(plain_url, attempt, status, reason, 0.0, True, rate_limited, limit)
                )
                raise RazorpayUnavailableError(
                    f"Razorpay unavailable at {plain_url}: {reason} after {limit}"
                )
            if rate_limited:
                self.rate_limit_retries += 1
            else:
                self.error_retries += 1
            delay = backoff_delay(
                self.policy, limited if rate_limited else errors, self.rng, retry_after
            )
            self._notify(RetryEvent(plain_url, attempt, status, reason, delay, False, rate_limited))
            if delay > 0:
                self.sleep(delay)
                self.backoff_seconds += delay

    def _read_body(self, response: requests.Response, plain_url: str) -> None:
        """Read the streamed body into the response (so `.json()` works as unstreamed), at
        most `max_response_bytes`; a larger body is refused and its connection closed."""
        cap = self.policy.max_response_bytes
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_content(chunk_size=BODY_CHUNK):
            size += len(chunk)
            if size > cap:
                response.close()
                raise RazorpayAPIError(
                    f"Razorpay's answer at {plain_url} is larger than "
                    f"RAZORPAY_MAX_RESPONSE_BYTES={cap:,} bytes: refused before parsing it"
                )
            chunks.append(chunk)
        response._content = b"".join(chunks)
        response.close()  # the body is read: the connection goes back to the pool

    def _deadline_text(self) -> str:
        return (
            "timeout: the try took longer than the request deadline "
            f"(RAZORPAY_REQUEST_DEADLINE={self.policy.request_deadline:g} s)"
        )

    def _error_stop(self, errors: int) -> str | None:
        """The limit an error try reached, or None when it may be retried."""
        policy = self.policy
        if errors >= policy.max_attempts:
            return f"{errors} tries (RAZORPAY_MAX_ATTEMPTS={policy.max_attempts} per request)"
        used = self.retries_used if policy.shared_budget else self.error_retries
        if used >= policy.error_allowance(self.answers):
            return self._budget_text()
        return None

    def _rate_limit_stop(self, limited: int) -> str | None:
        """The limit a 429 reached, or None when it may be retried."""
        policy = self.policy
        if limited >= policy.rate_limit_attempts:
            return (
                f"{limited} rate-limited tries of one request "
                f"(RAZORPAY_RATE_LIMIT_ATTEMPTS={policy.rate_limit_attempts})"
            )
        if policy.shared_budget:
            if self.retries_used >= policy.error_allowance(self.answers):
                return self._budget_text()
            return None
        if self.rate_limit_retries >= policy.rate_limit_allowance(self.answers):
            return (
                f"the rate-limit allowance of {policy.rate_limit_allowance(self.answers)} for "
                f"this sync (RAZORPAY_RATE_LIMIT_BUDGET={policy.rate_limit_budget}, or "
                f"RAZORPAY_RATE_LIMIT_SHARE={policy.rate_limit_share:g} per answer: "
                f"{self.answers} answers so far)"
            )
        return None

    def _budget_text(self) -> str:
        policy = self.policy
        what = "errors and 429s" if policy.shared_budget else "errors"
        return (
            f"the retry budget of {policy.error_allowance(self.answers)} for this sync "
            f"({what}; RAZORPAY_RETRY_BUDGET={policy.budget}, or "
            f"RAZORPAY_RETRY_BUDGET_SHARE={policy.budget_share:g} per answer: "
            f"{self.answers} answers so far)"
        )

    def _notify(self, event: RetryEvent) -> None:
        if self.on_retry is not None:
            self.on_retry(event)


def _is_json(response: requests.Response) -> bool:
    try:
        response.json()
    except ValueError:
        return False
    return True


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:197] + "..."
