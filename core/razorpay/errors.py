"""Errors of the Razorpay area, all under the one domain base class."""

from __future__ import annotations

from core.errors import EXIT_FAILED_CHECK, ConfigError, RazorReconError, RefusedError


class RazorpayUnavailableError(RazorReconError):
    """Razorpay kept failing (timeouts, connection errors, 429, 5xx) past the retry limits.

    The sync stops; every step committed before stays, the failing step wrote nothing.
    """

    exit_code = EXIT_FAILED_CHECK


class RazorpayAPIError(RazorReconError):
    """Razorpay answered a request with an error that retrying cannot fix (a 4xx)."""

    exit_code = EXIT_FAILED_CHECK


class RazorpayAuthError(ConfigError):
    """Razorpay rejected the API key (401/403)."""


class ReadOnlyViolation(RefusedError):
    """Something tried a request other than GET: this client never moves money."""


class SyncTakenOverError(RefusedError):
    """Another sync retired this run (it took it for dead) or took over its watermarks: the
    run stops before writing anything more; the days it committed before stay."""
