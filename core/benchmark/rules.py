"""The spec's outcome vocabulary, as the benchmark labels it (spec sections 5 and 6).

Written from the spec, not imported from the engine: the labels must be an independent
statement of what the engine should say.
"""

from __future__ import annotations

MATCHED = "MATCHED"
PENDING = "PENDING"
EXCEPTION = "EXCEPTION"

AWAITING_SETTLEMENT = "AWAITING_SETTLEMENT"
AWAITING_BANK_CREDIT = "AWAITING_BANK_CREDIT"
ON_HOLD = "ON_HOLD"

# Captured payments, in priority order (spec section 5).
PAYMENT_CODES: tuple[str, ...] = (
    "DUPLICATE_RECONCILIATION_RECORD",
    "WRONG_MAPPING",
    "AMOUNT_MISMATCH",
    "SETTLEMENT_AMOUNT_DISCREPANCY",
    "MISSING_SETTLEMENT",
    "TIMING_WINDOW_EXCEEDED",
    "MISSING_RECONCILIATION_RECORD",
)
REFUND_CODES: tuple[str, ...] = (
    "DUPLICATE_RECONCILIATION_RECORD",
    "WRONG_MAPPING",
    "REFUND_AMOUNT_MISMATCH",
    "MISSING_RECONCILIATION_RECORD",
)
SETTLEMENT_CODES: tuple[str, ...] = (
    "SETTLEMENT_SUM_MISMATCH",
    "DUPLICATE_BANK_CREDIT",
    "BANK_UTR_AMOUNT_MISMATCH",
    "MISSING_BANK_ENTRY",
)

FUZZY_UTR = "fuzzy_utr"
CONSOLIDATED = "consolidated"
NO_BANK_STATEMENT = "no_bank_statement"
FALLBACK_METHODS = frozenset({FUZZY_UTR, CONSOLIDATED, NO_BANK_STATEMENT})

EXPOSURE_CLASS: dict[str, str] = {
    "AMOUNT_MISMATCH": "amount_at_risk",
    "SETTLEMENT_AMOUNT_DISCREPANCY": "amount_at_risk",
    "REFUND_AMOUNT_MISMATCH": "amount_at_risk",
    "DUPLICATE_RECONCILIATION_RECORD": "amount_at_risk",
    "SETTLEMENT_SUM_MISMATCH": "amount_at_risk",
    "BANK_UTR_AMOUNT_MISMATCH": "amount_at_risk",
    "DUPLICATE_BANK_CREDIT": "amount_at_risk",
    "STATUS_MISMATCH": "amount_at_risk",
    "UNMATCHED_BANK_CREDIT": "amount_at_risk",
    "MISSING_RECONCILIATION_RECORD": "awaiting_settlement",
    "MISSING_SETTLEMENT": "awaiting_settlement",
    "SETTLEMENT_FAILED": "awaiting_settlement",
    "MISSING_BANK_ENTRY": "awaiting_settlement",
    "WRONG_MAPPING": "structural",
    "TIMING_WINDOW_EXCEEDED": "structural",
    "PAYMENT_ID_MISMATCH": "structural",
    "DISPUTE_DEBIT": "disputed",
}
EXPOSURE_CLASSES: tuple[str, ...] = (
    "amount_at_risk",
    "awaiting_settlement",
    "structural",
    "disputed",
)

ALL_EXCEPTION_CODES: tuple[str, ...] = tuple(EXPOSURE_CLASS)
PENDING_REASONS: tuple[str, ...] = (AWAITING_SETTLEMENT, ON_HOLD, AWAITING_BANK_CREDIT)


def exposure_class(code: str) -> str:
    """The spec's class for a code; an unknown code is amount_at_risk (never discounted)."""
    return EXPOSURE_CLASS.get(code, "amount_at_risk")
