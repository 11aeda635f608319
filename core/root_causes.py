"""The fixed list of root causes: what the benchmark labels and the investigator names.

A root cause is finer than a reason code: the code says *what* disagrees, the root cause
says *why* (a fee charged differently versus GST charged differently, a short versus an
excess bank credit). The benchmark's ground truth carries one per injected fault; the
deterministic investigator infers one from evidence; `evaluation.py` scores the two.
"""

from __future__ import annotations

ROOT_CAUSES: dict[str, str] = {
    "FEE_CHARGED_DIFFERENTLY": "The fee deducted differs from the payment fee; GST unchanged.",
    "GST_CHARGED_DIFFERENTLY": "The GST part of the fee differs from the payment's.",
    "SETTLED_AMOUNT_LOWER": "The recon row settles less than the captured amount.",
    "SETTLED_AMOUNT_HIGHER": "The recon row settles more than the captured amount.",
    "SETTLED_TWICE": "The same payment or refund appears in two or more recon rows.",
    "MAPPED_TO_OTHER_PAYMENT": "The recon row names a different payment.",
    "MAPPED_TO_OTHER_ORDER": "The recon row names a different order.",
    "SETTLEMENT_NOT_FOUND": "The recon row's settlement is missing or not in the data.",
    "SETTLED_LATE": "Settled after the due date plus grace.",
    "NOT_SETTLED": "Captured, overdue, and no recon row settles it.",
    "CAPTURE_STATUS_OUT_OF_SYNC": "Money settled for a payment the merchant holds as not captured.",
    "REFUND_AMOUNT_DIFFERS": "The refund debited differs from the refund amount plus fee.",
    "REFUND_NOT_SETTLED": "A processed refund, overdue, with no recon row.",
    "UNKNOWN_ENTITY": "A recon row for a payment or refund that is not in the data.",
    "CHARGEBACK_DEBIT": "A dispute debited the settlement.",
    "DISPUTE_LOST_FUNDS": "A lost dispute: the disputed money is gone for good; book the loss.",
    "DISPUTE_REVERSAL_NOT_CREDITED": "A dispute decided for the merchant whose debit was not "
    "(fully) reversed.",
    "DISPUTE_AWAITING_RESPONSE": "An open dispute: money at stake until the merchant responds.",
    "REFUND_REVERSAL_NOT_CREDITED": "A refund a settlement debited failed (or was reversed) "
    "and its money has not been credited back.",
    "SETTLEMENT_ARITHMETIC_BREAK": "The settlement's amount is not the sum of its recon rows.",
    "BANK_CREDITED_TWICE": "Two or more bank credits carry the settlement's UTR.",
    "BANK_SHORT_CREDIT": "The bank credited less than the settlement amount.",
    "BANK_EXCESS_CREDIT": "The bank credited more than the settlement amount.",
    "BANK_CREDIT_MISSING": "No bank credit for the settlement, and it is overdue.",
    "SETTLEMENT_PAYOUT_FAILED": "Razorpay's payout of the settlement failed.",
    "UNIDENTIFIED_BANK_CREDIT": "A gateway-looking bank credit that no settlement explains.",
    "INSTANT_PAYOUT_RETURNED": "An instant payout was reversed to the balance; a later "
    "regular settlement must carry it.",
    "TRANSFER_DEBIT_DIFFERS": "The transfer row debits other than the transfer amount plus fee.",
    "TRANSFER_REVERSAL_SHORT": "The reversal rows return less than the transfer's reversed amount.",
    "TRANSFER_REVERSAL_EXCESS": "The reversal rows return more than the transfer's reversed "
    "amount.",
    "TRANSFER_NOT_DEBITED": "A Route transfer, overdue, with no recon row debiting it.",
    "FEE_ABOVE_CONTRACT": "The fee charged is above the merchant's contracted pricing plan.",
    "GST_ABOVE_CONTRACT": "The fee is as contracted but the GST charged on it is above 18%.",
}

# The root causes each reason code can have; the first is the default when evidence is thin.
CAUSES_BY_CODE: dict[str, tuple[str, ...]] = {
    "SETTLEMENT_AMOUNT_DISCREPANCY": ("FEE_CHARGED_DIFFERENTLY", "GST_CHARGED_DIFFERENTLY"),
    "AMOUNT_MISMATCH": ("SETTLED_AMOUNT_LOWER", "SETTLED_AMOUNT_HIGHER"),
    "DUPLICATE_RECONCILIATION_RECORD": ("SETTLED_TWICE",),
    "WRONG_MAPPING": ("MAPPED_TO_OTHER_PAYMENT", "MAPPED_TO_OTHER_ORDER"),
    "MISSING_SETTLEMENT": ("SETTLEMENT_NOT_FOUND",),
    "TIMING_WINDOW_EXCEEDED": ("SETTLED_LATE",),
    "MISSING_RECONCILIATION_RECORD": ("NOT_SETTLED", "REFUND_NOT_SETTLED", "TRANSFER_NOT_DEBITED"),
    "STATUS_MISMATCH": ("CAPTURE_STATUS_OUT_OF_SYNC",),
    "REFUND_AMOUNT_MISMATCH": ("REFUND_AMOUNT_DIFFERS",),
    "PAYMENT_ID_MISMATCH": ("UNKNOWN_ENTITY",),
    "DISPUTE_DEBIT": ("CHARGEBACK_DEBIT",),
    "DISPUTE_LOST": ("DISPUTE_LOST_FUNDS",),
    "DISPUTE_REVERSAL_MISSING": ("DISPUTE_REVERSAL_NOT_CREDITED",),
    "DISPUTE_OPEN": ("DISPUTE_AWAITING_RESPONSE",),
    "REFUND_REVERSAL_MISSING": ("REFUND_REVERSAL_NOT_CREDITED",),
    "SETTLEMENT_SUM_MISMATCH": ("SETTLEMENT_ARITHMETIC_BREAK",),
    "DUPLICATE_BANK_CREDIT": ("BANK_CREDITED_TWICE",),
    "BANK_UTR_AMOUNT_MISMATCH": ("BANK_SHORT_CREDIT", "BANK_EXCESS_CREDIT"),
    "MISSING_BANK_ENTRY": ("BANK_CREDIT_MISSING",),
    "SETTLEMENT_FAILED": ("SETTLEMENT_PAYOUT_FAILED",),
    "UNMATCHED_BANK_CREDIT": ("UNIDENTIFIED_BANK_CREDIT",),
    "INSTANT_PAYOUT_REVERSED": ("INSTANT_PAYOUT_RETURNED",),
    "TRANSFER_AMOUNT_MISMATCH": ("TRANSFER_DEBIT_DIFFERS",),
    "TRANSFER_REVERSAL_MISMATCH": ("TRANSFER_REVERSAL_SHORT", "TRANSFER_REVERSAL_EXCESS"),
    "FEE_OVERCHARGED": ("FEE_ABOVE_CONTRACT", "GST_ABOVE_CONTRACT"),
}

# The sign of the exception's `difference` (actual minus expected, integer paise) each root
# cause requires: -1 less arrived than expected, +1 more. A model's root cause whose sign
# contradicts the exception's difference is discarded (SETTLED_AMOUNT_HIGHER when less was
# settled, BANK_EXCESS_CREDIT for a short credit). Causes not listed carry no sign rule.
DIFFERENCE_SIGN: dict[str, int] = {
    "SETTLED_AMOUNT_LOWER": -1,
    "SETTLED_AMOUNT_HIGHER": +1,
    "BANK_SHORT_CREDIT": -1,
    "BANK_EXCESS_CREDIT": +1,
    "BANK_CREDITED_TWICE": +1,
    "TRANSFER_REVERSAL_SHORT": -1,
    "TRANSFER_REVERSAL_EXCESS": +1,
    "FEE_ABOVE_CONTRACT": +1,
    "GST_ABOVE_CONTRACT": +1,
}


def causes_for_codes(primary: str, others: str | None = None) -> tuple[str, ...]:
    """Root causes allowed for an exception: the primary code's, then the other codes'
    (`others` is the ';'-separated `reason_codes` column)."""
    codes = [primary, *(c.strip() for c in str(others or "").split(";") if c.strip())]
    causes: list[str] = []
    for code in codes:
        for cause in CAUSES_BY_CODE.get(code, ()):
            if cause not in causes:
                causes.append(cause)
    return tuple(causes)


def sign_contradiction(root_cause: str, difference: int | None) -> str | None:
    """Why `root_cause` cannot explain a `difference` (actual - expected), or None."""
    wanted = DIFFERENCE_SIGN.get(root_cause)
    if wanted is None or difference is None:
        return None
    actual = (difference > 0) - (difference < 0)
    if actual == wanted:
        return None
    said = {-1: "less", 0: "no difference", 1: "more"}
    return (
        f"root cause {root_cause} needs {said[wanted]} than expected, but the difference "
        f"is {difference} paise ({said[actual] if actual else said[0]})"
    )
