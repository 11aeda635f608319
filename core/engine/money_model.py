"""Whole-column readings of Razorpay's money model beyond the spec (docs/engine.md):
payments in another currency and entities settled by someone other than Razorpay."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.engine.columns import BoolArray, IntArray

RAZORPAY = "razorpay"
INR = "INR"


def _flag(values: pa.ChunkedArray | pa.Array) -> BoolArray:
    result: BoolArray = np.asarray(
        values.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool
    )
    return result


def settled_elsewhere(settled_by: pa.Array) -> BoolArray:
    """True where `settled_by` names someone other than Razorpay: non-empty and not
    'Razorpay' in any case. Null, blank and 'Razorpay' expect a Razorpay settlement."""
    name = pc.utf8_lower(pc.utf8_trim_whitespace(settled_by))
    return _flag(pc.and_(pc.not_equal(name, ""), pc.not_equal(name, RAZORPAY)))


def foreign_currency(currency: pa.Array) -> BoolArray:
    """True where the currency is given and is not INR (any case, spaces ignored)."""
    code = pc.utf8_upper(pc.utf8_trim_whitespace(currency))
    return _flag(pc.and_(pc.not_equal(code, ""), pc.not_equal(code, INR)))


def inr_amounts(
    amount: IntArray, foreign: BoolArray, base: IntArray, base_null: BoolArray, row_amount: IntArray
) -> IntArray:
    """The INR paise an entity is compared in: its own `amount` when INR; in another
    currency its `base_amount` when given, else the recon row's (INR) `amount`."""
    result: IntArray = np.where(foreign, np.where(base_null, row_amount, base), amount).astype(
        np.int64
    )
    return result
