"""The four-eyes limit: paise above which a write-off needs an approver's approval.

A leaf module: core.access (which decides who may act) and core.audit (whose verify
replays the rule) both read it, and core.access imports core.audit."""

from __future__ import annotations

import os

from core.errors import ConfigError

FOUR_EYES_ENV = "RAZORRECON_FOUR_EYES_PAISE"
DEFAULT_FOUR_EYES_PAISE = 1_000_000  # ₹10,000


def four_eyes_threshold(value: str | None = None) -> int:
    """Paise above which a write-off needs an approver: RAZORRECON_FOUR_EYES_PAISE."""
    raw = os.environ.get(FOUR_EYES_ENV, "") if value is None else value
    if not raw.strip():
        return DEFAULT_FOUR_EYES_PAISE
    try:
        amount = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{FOUR_EYES_ENV}: {raw!r} is not a whole number of paise") from None
    if amount < 0:
        raise ConfigError(f"{FOUR_EYES_ENV}: must not be negative")
    return amount
