"""FEE_OVERCHARGED: a payment charged a fee above the merchant's contracted plan.

Applied after the spec's checks, only when a run is given pricing plans (the seam in
`reconcile`): a payment whose fee charged exceeds its plan's fee beyond rounding
(core.books.pricing) gets the code. It ranks after the codes that say the payment's amount
is wrong or unsettled, MISSING_SETTLEMENT and MISSING_RECONCILIATION_RECORD included (their
exposure is the payment's whole amount; an overcharge of a few rupees must not hide it: an
independent walkthrough found a ₹7,777 payment with no recon row shown as ₹27.52 at risk),
and before TIMING_WINDOW_EXCEEDED (structural, no exposure; it never comes with
MISSING_RECONCILIATION_RECORD, which has no row to be late). A payment that already has one
of the codes before it keeps its primary code and lists FEE_OVERCHARGED after them in its
`reason_codes`; otherwise FEE_OVERCHARGED becomes the primary code (status EXCEPTION,
expected = the plan's fee, actual = the fee charged, exposure amount_at_risk = the
overcharge).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.books.pricing import PricingPlan, fee_check, overcharged
from core.dataset import Dataset
from core.engine import codes as C

# Payment codes that outrank FEE_OVERCHARGED (docs/books.md).
BEFORE: tuple[str, ...] = (
    C.DUPLICATE_RECONCILIATION_RECORD,
    C.WRONG_MAPPING,
    C.AMOUNT_MISMATCH,
    C.SETTLEMENT_AMOUNT_DISCREPANCY,
    C.MISSING_SETTLEMENT,
    C.MISSING_RECONCILIATION_RECORD,
)


def _insert(codes: str) -> str:
    listed = [c for c in codes.split(";") if c]
    at = 0
    for i, code in enumerate(listed):
        if code in BEFORE:
            at = i + 1
    return ";".join([*listed[:at], C.FEE_OVERCHARGED, *listed[at:]])


def check_fees(
    outcomes: pd.DataFrame, dataset: Dataset, plans: tuple[PricingPlan, ...]
) -> pd.DataFrame:
    """The outcomes with FEE_OVERCHARGED added where the plan says so."""
    over = overcharged(fee_check(dataset, plans)).set_index("payment_id")
    if over.empty:
        return outcomes
    out = outcomes.copy()
    hit = (out["entity_type"] == "payment") & out["entity_id"].isin(over.index)
    if not hit.any():
        return out
    idx = out.index[hit.to_numpy()]
    ids = out.loc[idx, "entity_id"].astype(str)
    is_exception = out.loc[idx, "status"] == C.EXCEPTION
    outranked = is_exception & out.loc[idx, "reason_code"].isin(BEFORE)
    previous = out.loc[idx, "reason_codes"].astype("string").fillna("")
    listed = [
        _insert(str(codes) if exc else "")
        for codes, exc in zip(previous, is_exception, strict=True)
    ]
    out["reason_codes"] = out["reason_codes"].astype(object)
    out.loc[idx, "reason_codes"] = listed
    lead = idx[~outranked.to_numpy()]
    if len(lead):
        lead_ids = out.loc[lead, "entity_id"].astype(str)
        plan_fee = lead_ids.map(over["fee_plan"]).astype(np.int64).to_numpy()
        charged = lead_ids.map(over["fee_charged"]).astype(np.int64).to_numpy()
        for column in ("status", "reason_code", "exposure_class"):
            out[column] = out[column].astype(object)
        out.loc[lead, "status"] = C.EXCEPTION
        out.loc[lead, "reason_code"] = C.FEE_OVERCHARGED
        out.loc[lead, "expected_amount"] = plan_fee
        out.loc[lead, "actual_amount"] = charged
        out.loc[lead, "difference"] = charged - plan_fee
        out.loc[lead, "exposure_class"] = C.exposure_class(C.FEE_OVERCHARGED)
        out.loc[lead, "exposure_amount"] = charged - plan_fee
    del ids
    return out.astype({c: outcomes[c].dtype for c in outcomes.columns})
