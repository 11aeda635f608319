"""Settings for talking to Razorpay, read from the environment and checked before any request.

Only test-mode keys (`rzp_test_...`) are accepted unless `RAZORPAY_ALLOW_LIVE=1`: a sync is
read-only, but live keys deserve an explicit opt-in all the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from core import demo_mode
from core.errors import ConfigError, RefusedError

DEFAULT_BASE_URL = "https://api.razorpay.com"
TEST_KEY_PREFIX = "rzp_test_"
MIN_RESPONSE_BYTES = 65_536  # RAZORPAY_MAX_RESPONSE_BYTES below this would refuse real pages


@dataclass(frozen=True)
class RetryPolicy:
    """How failed requests are retried, and how fast requests are sent (docs/razorpay.md).

    Errors (timeouts, connection errors, 5xx, a 2xx that is not JSON) and rate limiting (429)
    are counted apart: a 429 means "slow down", an error means "something is broken".

    max_attempts: tries of one request that may end in an error, the first included.
    budget: error retries allowed in one sync run whatever its size (the floor).
    budget_share: and, beyond that floor, error retries allowed per answer received so far
        (0.1: one per ten answers), so the budget grows with the work done. A dead API gives
        no answers, so its budget stays at the floor.
    rate_limit_attempts: 429s one request may get before the run stops.
    rate_limit_budget / rate_limit_share: 429 retries allowed in one run: the larger of
        `rate_limit_budget` and `rate_limit_share` per answer received so far.
    shared_budget: 429s draw from the error budget as well (the behaviour before issue 16);
        off by default.
    backoff_base: seconds before the first retry; doubled on each further retry.
    backoff_cap: the longest wait between two tries, in seconds (also caps Retry-After).
    connect_timeout / read_timeout: seconds, passed to every request (the read timeout bounds
        each wait for the next bytes, not the whole answer).
    request_deadline: seconds one try may take in all, from connecting to the last byte of
        the body; past it the try is cut and fails like a timeout (a server that trickles
        its answer a byte at a time never trips the read timeout).
    max_response_bytes: the largest answer body read; a larger one is refused unread
        (RazorpayAPIError), without being retried.
    max_rate: requests per second never exceeded (0: no ceiling until Razorpay answers 429).
    min_rate: the slowest the pacer goes after repeated 429s, in requests per second.
    rate_step: the share of the natural rate (what answers take unpaced) the pacer adds back
        after each answer (additive increase; 0.05: from half speed to full in ten answers).
    """

    max_attempts: int = 5
    budget: int = 30
    budget_share: float = 0.1
    rate_limit_attempts: int = 20
    rate_limit_budget: int = 100
    rate_limit_share: float = 1.0
    shared_budget: bool = False
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    request_deadline: float = 120.0
    max_response_bytes: int = 16 * 2**20
    max_rate: float = 0.0
    min_rate: float = 0.2
    rate_step: float = 0.05

    def error_allowance(self, answers: int) -> int:
        """Error retries (429s too, with `shared_budget`) allowed after `answers` answers."""
        return max(self.budget, int(self.budget_share * answers))

    def rate_limit_allowance(self, answers: int) -> int:
        """429 retries allowed after `answers` answers (unused with `shared_budget`)."""
        return max(self.rate_limit_budget, int(self.rate_limit_share * answers))


@dataclass(frozen=True)
class RazorpaySettings:
    """Credentials and endpoint of the Razorpay API.

    key_id / key_secret: API keys (Basic auth). base_url: scheme and host, no `/v1`.
    allow_live: whether a non-test key may be used. retry: see `RetryPolicy`.
    """

    key_id: str
    key_secret: str = field(repr=False)
    base_url: str = DEFAULT_BASE_URL
    allow_live: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    @property
    def is_test_key(self) -> bool:
        return self.key_id.startswith(TEST_KEY_PREFIX)


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def retry_policy_from_env(env: Mapping[str, str] | None = None) -> RetryPolicy:
    """RAZORPAY_MAX_ATTEMPTS, RAZORPAY_RETRY_BUDGET, RAZORPAY_RETRY_BUDGET_SHARE,
    RAZORPAY_RATE_LIMIT_ATTEMPTS, RAZORPAY_RATE_LIMIT_BUDGET, RAZORPAY_RATE_LIMIT_SHARE,
    RAZORPAY_SHARED_RETRY_BUDGET, RAZORPAY_BACKOFF_BASE, RAZORPAY_BACKOFF_CAP,
    RAZORPAY_CONNECT_TIMEOUT, RAZORPAY_READ_TIMEOUT, RAZORPAY_REQUEST_DEADLINE,
    RAZORPAY_MAX_RESPONSE_BYTES, RAZORPAY_MAX_RATE, RAZORPAY_MIN_RATE,
    RAZORPAY_RATE_STEP; defaults otherwise.
    """
    source = os.environ if env is None else env
    default = RetryPolicy()

    def count(name: str, value: int, minimum: int) -> int:
        number = _number(source, name, value, minimum=minimum)
        if number != int(number):
            raise ConfigError(f"{name} must be a whole number, got {source.get(name)!r}")
        return int(number)

    policy = RetryPolicy(
        max_attempts=count("RAZORPAY_MAX_ATTEMPTS", default.max_attempts, 1),
        budget=count("RAZORPAY_RETRY_BUDGET", default.budget, 0),
        budget_share=_number(
            source, "RAZORPAY_RETRY_BUDGET_SHARE", default.budget_share, minimum=0
        ),
        rate_limit_attempts=count("RAZORPAY_RATE_LIMIT_ATTEMPTS", default.rate_limit_attempts, 1),
        rate_limit_budget=count("RAZORPAY_RATE_LIMIT_BUDGET", default.rate_limit_budget, 0),
        rate_limit_share=_number(
            source, "RAZORPAY_RATE_LIMIT_SHARE", default.rate_limit_share, minimum=0
        ),
        shared_budget=_flag(source.get("RAZORPAY_SHARED_RETRY_BUDGET")),
        backoff_base=_number(source, "RAZORPAY_BACKOFF_BASE", default.backoff_base, minimum=0),
        backoff_cap=_number(source, "RAZORPAY_BACKOFF_CAP", default.backoff_cap, minimum=0),
        connect_timeout=_number(
            source, "RAZORPAY_CONNECT_TIMEOUT", default.connect_timeout, minimum=0.001
        ),
        read_timeout=_number(source, "RAZORPAY_READ_TIMEOUT", default.read_timeout, minimum=0.001),
        request_deadline=_number(
            source, "RAZORPAY_REQUEST_DEADLINE", default.request_deadline, minimum=0.001
        ),
        max_response_bytes=count(
            "RAZORPAY_MAX_RESPONSE_BYTES", default.max_response_bytes, MIN_RESPONSE_BYTES
        ),
        max_rate=_number(source, "RAZORPAY_MAX_RATE", default.max_rate, minimum=0),
        min_rate=_number(source, "RAZORPAY_MIN_RATE", default.min_rate, minimum=0.001),
        rate_step=_number(source, "RAZORPAY_RATE_STEP", default.rate_step, minimum=0),
    )
    if policy.max_rate and policy.max_rate < policy.min_rate:
        raise ConfigError(
            f"RAZORPAY_MAX_RATE ({policy.max_rate:g}) is below RAZORPAY_MIN_RATE "
            f"({policy.min_rate:g}); raise it or set it to 0 (no ceiling)"
        )
    return policy


def settings_from_env(env: Mapping[str, str] | None = None) -> RazorpaySettings:
    """Read and check RAZORPAY_KEY_ID, RAZORPAY_KEY_SECRET, RAZORPAY_BASE_URL,
    RAZORPAY_ALLOW_LIVE and the retry settings. Raises ConfigError or RefusedError; always
    RefusedError in the public demo (RAZORRECON_DEMO=1), whose anonymous visitors never
    use the deployment's keys (core.demo_mode).
    """
    source = os.environ if env is None else env
    demo_mode.refuse(demo_mode.RAZORPAY_SYNC, source)
    key_id = source.get("RAZORPAY_KEY_ID", "").strip()
    key_secret = source.get("RAZORPAY_KEY_SECRET", "").strip()
    missing = [
        n for n, v in (("RAZORPAY_KEY_ID", key_id), ("RAZORPAY_KEY_SECRET", key_secret)) if not v
    ]
    if missing:
        raise ConfigError(f"set {' and '.join(missing)} (Razorpay Dashboard > Account > API Keys)")
    base_url = (source.get("RAZORPAY_BASE_URL", "").strip() or DEFAULT_BASE_URL).rstrip("/")
    if not base_url.startswith(("https://", "http://")):
        raise ConfigError(f"RAZORPAY_BASE_URL must start with https:// or http://: {base_url!r}")
    settings = RazorpaySettings(
        key_id=key_id,
        key_secret=key_secret,
        base_url=base_url,
        allow_live=_flag(source.get("RAZORPAY_ALLOW_LIVE")),
        retry=retry_policy_from_env(source),
    )
    check_key_mode(settings)
    return settings


def check_key_mode(settings: RazorpaySettings) -> None:
    """Refuse a key that is not a test key unless live keys were explicitly allowed."""
    if not settings.is_test_key and not settings.allow_live:
        shown = settings.key_id[: len(TEST_KEY_PREFIX)]
        raise RefusedError(
            f"refusing Razorpay key {shown}...: only {TEST_KEY_PREFIX} keys are used unless "
            "RAZORPAY_ALLOW_LIVE=1 is set"
        )


def webhook_secret_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """RAZORPAY_WEBHOOK_SECRET, or None when unset (then every delivery is refused)."""
    source = os.environ if env is None else env
    return source.get("RAZORPAY_WEBHOOK_SECRET", "").strip() or None
