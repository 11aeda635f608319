"""Outcomes, reason codes, their priority per entity type, and exposure classes (spec 5-6).

Each entity type has its own ordered tuple of exception codes: the position is the
priority (0 is checked first). The engine records the codes that apply to an entity as a
bit mask over that tuple, so the primary code is the lowest set bit and `reason_codes`
lists the set bits in priority order (primary first).
"""

from __future__ import annotations

MATCHED = "MATCHED"
PENDING = "PENDING"
EXCEPTION = "EXCEPTION"
STATUSES = (MATCHED, PENDING, EXCEPTION)

# Pending reasons (the `reason_code` of a PENDING outcome).
AWAITING_SETTLEMENT = "AWAITING_SETTLEMENT"
ON_HOLD = "ON_HOLD"
AWAITING_BANK_CREDIT = "AWAITING_BANK_CREDIT"

# Exception codes.
DUPLICATE_RECONCILIATION_RECORD = "DUPLICATE_RECONCILIATION_RECORD"
WRONG_MAPPING = "WRONG_MAPPING"
AMOUNT_MISMATCH = "AMOUNT_MISMATCH"
SETTLEMENT_AMOUNT_DISCREPANCY = "SETTLEMENT_AMOUNT_DISCREPANCY"
MISSING_SETTLEMENT = "MISSING_SETTLEMENT"
TIMING_WINDOW_EXCEEDED = "TIMING_WINDOW_EXCEEDED"
MISSING_RECONCILIATION_RECORD = "MISSING_RECONCILIATION_RECORD"
STATUS_MISMATCH = "STATUS_MISMATCH"
REFUND_AMOUNT_MISMATCH = "REFUND_AMOUNT_MISMATCH"
PAYMENT_ID_MISMATCH = "PAYMENT_ID_MISMATCH"
DISPUTE_DEBIT = "DISPUTE_DEBIT"
SETTLEMENT_FAILED = "SETTLEMENT_FAILED"
SETTLEMENT_SUM_MISMATCH = "SETTLEMENT_SUM_MISMATCH"
DUPLICATE_BANK_CREDIT = "DUPLICATE_BANK_CREDIT"
BANK_UTR_AMOUNT_MISMATCH = "BANK_UTR_AMOUNT_MISMATCH"
MISSING_BANK_ENTRY = "MISSING_BANK_ENTRY"
UNMATCHED_BANK_CREDIT = "UNMATCHED_BANK_CREDIT"
# Codes of Razorpay's wider money model (docs/engine.md; the spec is silent on them).
DISPUTE_OPEN = "DISPUTE_OPEN"
DISPUTE_LOST = "DISPUTE_LOST"
DISPUTE_REVERSAL_MISSING = "DISPUTE_REVERSAL_MISSING"
INSTANT_PAYOUT_REVERSED = "INSTANT_PAYOUT_REVERSED"
TRANSFER_AMOUNT_MISMATCH = "TRANSFER_AMOUNT_MISMATCH"
TRANSFER_REVERSAL_MISMATCH = "TRANSFER_REVERSAL_MISMATCH"
# A refund a settlement debited that then failed (or was reversed), its money not back.
REFUND_REVERSAL_MISSING = "REFUND_REVERSAL_MISSING"
# Refund statuses whose money, once a settlement took it, Razorpay owes back (docs/engine.md,
# *Failed refunds a settlement debited*).
OWED_BACK_STATUSES: tuple[str, ...] = ("failed", "reversed")

# Contracted pricing (docs/books.md): only when a run is given the merchant's pricing plan.
FEE_OVERCHARGED = "FEE_OVERCHARGED"

# Pending reasons of the wider model.
DISPUTE_UNDER_REVIEW = "DISPUTE_UNDER_REVIEW"
# A transfer of unknown status (the Transfers report has no Status) that no recon row
# debits, past its cycle: failed (no money moved) or processed and missing from the
# settlements; only its recon row or the API's status can tell (docs/engine.md).
TRANSFER_STATUS_UNKNOWN = "TRANSFER_STATUS_UNKNOWN"

# Priority order per entity type (spec section 5).
PAYMENT_CODES: tuple[str, ...] = (
    DUPLICATE_RECONCILIATION_RECORD,
    WRONG_MAPPING,
    AMOUNT_MISMATCH,
    SETTLEMENT_AMOUNT_DISCREPANCY,
    MISSING_SETTLEMENT,
    TIMING_WINDOW_EXCEEDED,
    MISSING_RECONCILIATION_RECORD,
    STATUS_MISMATCH,  # only ever alone: it is the outcome of a payment that is not captured
)
REFUND_CODES: tuple[str, ...] = (
    DUPLICATE_RECONCILIATION_RECORD,
    WRONG_MAPPING,
    REFUND_AMOUNT_MISMATCH,
    MISSING_RECONCILIATION_RECORD,
    # Beyond the spec (docs/engine.md): only ever alone, on a failed or reversed refund only.
    REFUND_REVERSAL_MISSING,
)
RECON_ROW_CODES: tuple[str, ...] = (PAYMENT_ID_MISMATCH, DISPUTE_DEBIT)
SETTLEMENT_CODES: tuple[str, ...] = (
    SETTLEMENT_FAILED,  # only ever alone: a failed settlement gets no other check
    SETTLEMENT_SUM_MISMATCH,
    DUPLICATE_BANK_CREDIT,
    BANK_UTR_AMOUNT_MISMATCH,
    MISSING_BANK_ENTRY,
)
BANK_ENTRY_CODES: tuple[str, ...] = (UNMATCHED_BANK_CREDIT,)
# A dispute (disp_...) from a disputes file; its recon adjustment rows are its evidence.
DISPUTE_CODES: tuple[str, ...] = (
    DISPUTE_LOST,  # a realised loss: only ever alone
    DISPUTE_REVERSAL_MISSING,
    DISPUTE_OPEN,
)
# An instant settlement (setlod_...): its payouts' UTRs against the bank's credits.
INSTANT_SETTLEMENT_CODES: tuple[str, ...] = (
    INSTANT_PAYOUT_REVERSED,
    DUPLICATE_BANK_CREDIT,
    BANK_UTR_AMOUNT_MISMATCH,
    MISSING_BANK_ENTRY,
)
# A Route transfer (trf_...) from a transfers file, against its recon rows.
TRANSFER_CODES: tuple[str, ...] = (
    DUPLICATE_RECONCILIATION_RECORD,
    TRANSFER_AMOUNT_MISMATCH,
    TRANSFER_REVERSAL_MISMATCH,
    MISSING_RECONCILIATION_RECORD,
)

# Codes of the pricing check, applied after the others when a run has a plan
# (core/engine/fees.py): a payment's, ranked right after SETTLEMENT_AMOUNT_DISCREPANCY.
PRICING_CODES: tuple[str, ...] = (FEE_OVERCHARGED,)

# Exposure classes (spec section 6).
AMOUNT_AT_RISK = "amount_at_risk"
AWAITING = "awaiting_settlement"
STRUCTURAL = "structural"
DISPUTED = "disputed"
REALISED_LOSS = "realised_loss"  # money gone for good (a lost dispute): book it, do not chase it

EXPOSURE_CLASS: dict[str, str] = {
    AMOUNT_MISMATCH: AMOUNT_AT_RISK,
    SETTLEMENT_AMOUNT_DISCREPANCY: AMOUNT_AT_RISK,
    REFUND_AMOUNT_MISMATCH: AMOUNT_AT_RISK,
    DUPLICATE_RECONCILIATION_RECORD: AMOUNT_AT_RISK,
    SETTLEMENT_SUM_MISMATCH: AMOUNT_AT_RISK,
    BANK_UTR_AMOUNT_MISMATCH: AMOUNT_AT_RISK,
    DUPLICATE_BANK_CREDIT: AMOUNT_AT_RISK,
    STATUS_MISMATCH: AMOUNT_AT_RISK,
    UNMATCHED_BANK_CREDIT: AMOUNT_AT_RISK,
    MISSING_RECONCILIATION_RECORD: AWAITING,
    MISSING_SETTLEMENT: AWAITING,
    SETTLEMENT_FAILED: AWAITING,
    MISSING_BANK_ENTRY: AWAITING,
    WRONG_MAPPING: STRUCTURAL,
    TIMING_WINDOW_EXCEEDED: STRUCTURAL,
    PAYMENT_ID_MISMATCH: STRUCTURAL,
    DISPUTE_DEBIT: DISPUTED,
    DISPUTE_OPEN: DISPUTED,
    DISPUTE_LOST: REALISED_LOSS,
    DISPUTE_REVERSAL_MISSING: AWAITING,
    REFUND_REVERSAL_MISSING: AWAITING,
    INSTANT_PAYOUT_REVERSED: AWAITING,
    TRANSFER_AMOUNT_MISMATCH: AMOUNT_AT_RISK,
    TRANSFER_REVERSAL_MISMATCH: AMOUNT_AT_RISK,
    FEE_OVERCHARGED: AMOUNT_AT_RISK,
}
EXPOSURE_CLASSES: tuple[str, ...] = (AMOUNT_AT_RISK, AWAITING, STRUCTURAL, DISPUTED, REALISED_LOSS)


def exposure_class(code: str) -> str:
    """The exposure class of an exception code; a code not in the table is amount at risk."""
    return EXPOSURE_CLASS.get(code, AMOUNT_AT_RISK)


def exposure_amount(code: str, expected: int, actual: int) -> int:
    """Spec section 6: |difference|, the expected amount, 0, or the debit (`actual`); a
    realised loss is the amount lost (`actual`)."""
    klass = exposure_class(code)
    if klass == AWAITING:
        return expected
    if klass == STRUCTURAL:
        return 0
    if klass in (DISPUTED, REALISED_LOSS):
        return actual
    return abs(actual - expected)


# Match methods (how a settlement and a bank credit were linked).
METHOD_UTR = "utr"
METHOD_FUZZY_UTR = "fuzzy_utr"
METHOD_CONSOLIDATED = "consolidated"
METHOD_NO_BANK_STATEMENT = "no_bank_statement"
METHOD_DIRECT = "direct"  # settled by someone other than Razorpay (`settled_by`)
