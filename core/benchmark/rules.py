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


# Razorpay's money model beyond the spec (docs/engine.md, "Razorpay's money model beyond
# the spec"). Labelled only with `generate(..., money_model=True)`; kept out of the spec's
# sets above so that the default benchmark's vocabulary is unchanged.
DISPUTE_UNDER_REVIEW = "DISPUTE_UNDER_REVIEW"
DIRECT = "direct"  # settled by someone other than Razorpay
LABELLED_METHODS = FALLBACK_METHODS | {DIRECT}
RAZORPAY = "razorpay"

DISPUTE_CODES: tuple[str, ...] = ("DISPUTE_LOST", "DISPUTE_REVERSAL_MISSING", "DISPUTE_OPEN")
INSTANT_SETTLEMENT_CODES: tuple[str, ...] = (
    "INSTANT_PAYOUT_REVERSED",
    "DUPLICATE_BANK_CREDIT",
    "BANK_UTR_AMOUNT_MISMATCH",
    "MISSING_BANK_ENTRY",
)
TRANSFER_CODES: tuple[str, ...] = (
    "DUPLICATE_RECONCILIATION_RECORD",
    "TRANSFER_AMOUNT_MISMATCH",
    "TRANSFER_REVERSAL_MISMATCH",
    "MISSING_RECONCILIATION_RECORD",
)
MONEY_MODEL_CLASS: dict[str, str] = {
    "DISPUTE_LOST": "realised_loss",
    "DISPUTE_REVERSAL_MISSING": "awaiting_settlement",
    "DISPUTE_OPEN": "disputed",
    "INSTANT_PAYOUT_REVERSED": "awaiting_settlement",
    "TRANSFER_AMOUNT_MISMATCH": "amount_at_risk",
    "TRANSFER_REVERSAL_MISMATCH": "amount_at_risk",
}
EXPOSURE_CLASS.update(
    {code: klass for code, klass in MONEY_MODEL_CLASS.items() if code not in EXPOSURE_CLASS}
)
# Contracted pricing (docs/books.md): labelled where core.benchmark.fees plants fee
# overcharges against the benchmark's plan; kept out of the spec's sets like the above.
PRICING_CLASS: dict[str, str] = {"FEE_OVERCHARGED": "amount_at_risk"}
EXPOSURE_CLASS.update(PRICING_CLASS)
MONEY_MODEL_CODES: tuple[str, ...] = tuple(MONEY_MODEL_CLASS)
MONEY_MODEL_CLASSES: tuple[str, ...] = ("realised_loss",)


def settled_elsewhere(settled_by: str) -> bool:
    """A payment or refund settled by someone other than Razorpay expects no settlement."""
    return bool(settled_by) and settled_by.strip().lower() != RAZORPAY


def dispute_outcome(status: str, debit: int, credit: int) -> tuple[str, str]:
    """(status, code) of a dispute in the disputes file; D = debit, R = credit of its
    adjustment rows (docs/engine.md, Disputes)."""
    if status == "lost":
        return EXCEPTION, "DISPUTE_LOST"
    if status in ("won", "closed"):
        return (MATCHED, "") if credit >= debit else (EXCEPTION, "DISPUTE_REVERSAL_MISSING")
    if status == "open":
        return EXCEPTION, "DISPUTE_OPEN"
    return PENDING, DISPUTE_UNDER_REVIEW


def instant_settlement_codes(
    reversed_amount: int,
    expected: int,
    credits: list[int],
    has_processed: bool,
    bank_overdue: bool,
    bank: bool,
) -> tuple[str, list[str], str]:
    """(status, codes, match_method) of an instant settlement (docs/engine.md, Instant
    settlements). `credits` are the bank credits linked by its processed payouts' UTRs;
    `credits` with two or more entries for one UTR are passed as a duplicate by the caller."""
    codes: list[str] = []
    if reversed_amount > 0:
        codes.append("INSTANT_PAYOUT_REVERSED")
    if bank and has_processed:
        if len(credits) == 0:
            if bank_overdue:
                codes.append("MISSING_BANK_ENTRY")
        elif sum(credits) != expected:
            codes.append("BANK_UTR_AMOUNT_MISMATCH")
    if codes:
        return EXCEPTION, codes, ""
    if not has_processed:
        return PENDING, [AWAITING_SETTLEMENT], ""
    if not bank:
        return MATCHED, [], NO_BANK_STATEMENT
    if not credits:
        return PENDING, [AWAITING_BANK_CREDIT], ""
    return MATCHED, [], ""


def transfer_codes(
    rows: int,
    debit: int,
    amount: int,
    fee: int,
    reversed_rows: int,
    amount_reversed: int,
    due: bool,
) -> tuple[str, list[str]]:
    """(status, codes) of a transfer in the transfers file (docs/engine.md, Route
    transfers); `due` says the domestic cycle plus grace has passed."""
    codes: list[str] = []
    if rows >= 2:
        codes.append("DUPLICATE_RECONCILIATION_RECORD")
    if rows >= 1 and debit != amount + fee:
        codes.append("TRANSFER_AMOUNT_MISMATCH")
    if reversed_rows != amount_reversed:
        codes.append("TRANSFER_REVERSAL_MISMATCH")
    if rows == 0 and due:
        codes.append("MISSING_RECONCILIATION_RECORD")
    if codes:
        return EXCEPTION, codes
    if rows == 0:
        return PENDING, [AWAITING_SETTLEMENT]
    return MATCHED, []
