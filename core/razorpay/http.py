"""The HTTP layer under the Razorpay SDK: read-only, with timeouts, retries and a budget.

The SDK (2.0.1) sends every call through `session.<method>(url, auth=..., ...)` and retries
nothing by default, so the session it is given does the resilience work:

- Only GET leaves this process: any other method raises `ReadOnlyViolation` before a socket
  is opened, so no code path can capture, refund or pay out.
- Every request carries an explicit (connect, read) timeout.
- Timeouts, connection errors, 429 and 5xx are retried with exponential backoff and jitter
  (Retry-After is honoured, capped), at most `max_attempts` tries per request and `budget`
  retries per session. Past either limit, `RazorpayUnavailableError`.
- 401/403 raise `RazorpayAuthError`; other 4xx pass through to the SDK, which raises its
  own error for them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from core.razorpay.config import RetryPolicy
from core.razorpay.errors import RazorpayAuthError, RazorpayUnavailableError, ReadOnlyViolation

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))


@dataclass(frozen=True)
class RetryEvent:
    """One failed try that will be retried (or, with `final`, that ended the request).

    url: the request URL without the query. attempt: 1-based try that failed.
    status_code: HTTP status, or None for a timeout or connection error. reason: short text.
    delay: seconds slept before the next try (0 when final). final: no further try.
    """

    url: str
    attempt: int
    status_code: int | None
    reason: str
    delay: float
    final: bool


def backoff_delay(
    policy: RetryPolicy, retry_number: int, rng: random.Random, retry_after: float | None = None
) -> float:
    """Seconds before retry number `retry_number` (1-based): equal-jitter exponential backoff.

    The ceiling doubles from `backoff_base` and is capped at `backoff_cap`; the delay is drawn
    from [ceiling/2, ceiling], so retries never bunch at zero. A server's Retry-After wins when
    longer, up to the cap.
    """
    ceiling = min(policy.backoff_cap, policy.backoff_base * float(2 ** (retry_number - 1)))
    delay = ceiling / 2 + rng.uniform(0, ceiling / 2)
    if retry_after is not None:
        delay = max(delay, min(retry_after, policy.backoff_cap))
    return delay


def _retry_after_seconds(response: requests.Response) -> float | None:
    raw = response.headers.get("Retry-After", "").strip()
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None  # an HTTP-date; the backoff applies instead


class RetryingSession(requests.Session):
    """A `requests.Session` for the Razorpay SDK: GET only, timeouts, bounded retries.

    `on_retry` is called for every failed try (so the caller can log it); `sleep` and `rng`
    are injectable so tests need not wait. `requests_sent` and `retries_used` count work done.
    """

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__()
        self.policy = policy
        self.on_retry = on_retry
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.requests_sent = 0
        self.retries_used = 0

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
        plain_url = target.split("?", 1)[0]
        attempt = 0
        while True:
            attempt += 1
            self.requests_sent += 1
            retry_after: float | None = None
            try:
                response = super().request(verb, target, *args, **kwargs)
            except requests.Timeout as exc:
                status, reason = None, f"timeout: {type(exc).__name__}"
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                status, reason = None, f"connection error: {_short(exc)}"
            else:
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
                        return response
                else:
                    reason = f"HTTP {status}"
                    retry_after = _retry_after_seconds(response)
                response.close()
            exhausted = attempt >= self.policy.max_attempts
            over_budget = self.retries_used >= self.policy.budget
            if exhausted or over_budget:
                self._notify(RetryEvent(plain_url, attempt, status, reason, 0.0, True))
                limit = (
                    f"{attempt} tries"
                    if exhausted
                    else f"the retry budget of {self.policy.budget} for this sync"
                )
                raise RazorpayUnavailableError(
                    f"Razorpay unavailable at {plain_url}: {reason} after {limit}"
                )
            self.retries_used += 1
            delay = backoff_delay(self.policy, attempt, self.rng, retry_after)
            self._notify(RetryEvent(plain_url, attempt, status, reason, delay, False))
            self.sleep(delay)

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
