"""Settings for talking to Razorpay, read from the environment and checked before any request.

Only test-mode keys (`rzp_test_...`) are accepted unless `RAZORPAY_ALLOW_LIVE=1`: a sync is
read-only, but live keys deserve an explicit opt-in all the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.errors import ConfigError, RefusedError

DEFAULT_BASE_URL = "https://api.razorpay.com"
TEST_KEY_PREFIX = "rzp_test_"


@dataclass(frozen=True)
class RetryPolicy:
    """How failed requests are retried.

    max_attempts: tries per request, the first included.
    budget: retries allowed in one sync run across all requests; past it the run stops.
    backoff_base: seconds before the first retry; doubled on each further retry.
    backoff_cap: the longest wait between two tries, in seconds (also caps Retry-After).
    connect_timeout / read_timeout: seconds, passed to every request.
    """

    max_attempts: int = 5
    budget: int = 30
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    connect_timeout: float = 5.0
    read_timeout: float = 30.0


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
    """RAZORPAY_MAX_ATTEMPTS, RAZORPAY_RETRY_BUDGET, RAZORPAY_BACKOFF_BASE,
    RAZORPAY_BACKOFF_CAP, RAZORPAY_CONNECT_TIMEOUT, RAZORPAY_READ_TIMEOUT; defaults otherwise.
    """
    source = os.environ if env is None else env
    default = RetryPolicy()
    return RetryPolicy(
        max_attempts=int(_number(source, "RAZORPAY_MAX_ATTEMPTS", default.max_attempts, minimum=1)),
        budget=int(_number(source, "RAZORPAY_RETRY_BUDGET", default.budget, minimum=0)),
        backoff_base=_number(source, "RAZORPAY_BACKOFF_BASE", default.backoff_base, minimum=0),
        backoff_cap=_number(source, "RAZORPAY_BACKOFF_CAP", default.backoff_cap, minimum=0),
        connect_timeout=_number(
            source, "RAZORPAY_CONNECT_TIMEOUT", default.connect_timeout, minimum=0.001
        ),
        read_timeout=_number(source, "RAZORPAY_READ_TIMEOUT", default.read_timeout, minimum=0.001),
    )


def settings_from_env(env: Mapping[str, str] | None = None) -> RazorpaySettings:
    """Read and check RAZORPAY_KEY_ID, RAZORPAY_KEY_SECRET, RAZORPAY_BASE_URL,
    RAZORPAY_ALLOW_LIVE and the retry settings. Raises ConfigError or RefusedError.
    """
    source = os.environ if env is None else env
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
