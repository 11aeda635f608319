"""Disputes (docs/engine.md, *Razorpay's money model beyond the spec*), set-based.

Dispute money moves as recon `adjustment` rows carrying a `dispute_id`: a debit when the
disputed amount is deducted, a credit of the same amount when a won dispute is reversed.
Per dispute id, D = Σ debit and R = Σ credit of those rows.

- A dispute in the disputes file gets an outcome of entity type `dispute` (its rows are its
  evidence and get none of their own): lost -> DISPUTE_LOST (the loss), won/closed ->
  MATCHED when R >= D else DISPUTE_REVERSAL_MISSING (D - R awaited), open -> DISPUTE_OPEN
  (money at stake), under_review -> PENDING DISPUTE_UNDER_REVIEW.
- Rows of a dispute id not in the file stay recon rows (`dispute_rows.dispute_recon_rows`):
  a debit is DISPUTE_DEBIT unless R >= D (reversed), and reversal credits are MATCHED.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.engine import codes as C
from core.engine.columns import ints, lookup, sum_by, take_text
from core.engine.context import Context
from core.engine.dispute_rows import dispute_rows
from core.engine.entities import _settlement_utr
from core.engine.part import (
    M_NONE,
    NO_PENDING,
    P_DISPUTE_UNDER_REVIEW,
    Part,
    TextRef,
    bit,
    nulls_ref,
)

D_LOST, D_REVERSAL_MISSING, D_OPEN = (
    C.DISPUTE_CODES.index(code)
    for code in (C.DISPUTE_LOST, C.DISPUTE_REVERSAL_MISSING, C.DISPUTE_OPEN)
)


def check_disputes(ctx: Context) -> Part:
    """One outcome per dispute in the disputes file."""
    ds = ctx.dataset
    disputes, rec = ds.disputes, ds.recon
    n = len(disputes)
    ids = ctx.text(disputes, "id")
    rows, row_ids = dispute_rows(ctx)
    pos = lookup(row_ids, ids)
    rows, pos = rows[pos >= 0], pos[pos >= 0]
    debit = ints(rec["debit"])[rows]
    total_debit = sum_by(pos, debit, n)
    total_credit = sum_by(pos, ints(rec["credit"])[rows], n)
    outstanding = total_debit - total_credit

    status = pc.utf8_lower(pc.utf8_trim_whitespace(ctx.text(disputes, "status")))

    def is_status(*names: str) -> np.ndarray:
        found = pc.is_in(status, value_set=pa.array(names, type=pa.large_string()))
        return np.asarray(found.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)

    lost, settled_for_us = is_status("lost"), is_status("won", "closed")
    under_review = is_status("under_review")
    still_open = ~lost & ~settled_for_us & ~under_review  # open, or a status not known
    short = settled_for_us & (outstanding > 0)
    mask = (
        np.where(lost, bit(D_LOST), 0)
        | np.where(short, bit(D_REVERSAL_MISSING), 0)
        | np.where(still_open, bit(D_OPEN), 0)
    ).astype(np.int64)
    pending = np.where(under_review, P_DISPUTE_UNDER_REVIEW, NO_PENDING).astype(np.int8)

    amount = ints(disputes["amount"])
    at_stake = np.where(outstanding > 0, outstanding, amount)
    loss = np.maximum(outstanding, ints(disputes["amount_deducted"]))
    expected = np.select(
        [settled_for_us & ~short, short], [total_debit, outstanding], default=0
    ).astype(np.int64)
    actual = np.select(
        [lost, settled_for_us & ~short, short, under_review | still_open],
        [loss, total_credit, 0, at_stake],
        default=0,
    ).astype(np.int64)

    # The settlement shown: the one of the dispute's first debit row (by content).
    first = np.full(n, -1, dtype=np.int64)
    debits = np.flatnonzero(debit > 0)
    if len(debits):
        frame = pd.DataFrame(
            {
                "pos": pos[debits],
                "created_at": ints(rec["created_at"], fill=np.iinfo(np.int64).max)[rows[debits]],
                "settlement_id": take_text(ctx.text(rec, "settlement_id"), rows[debits])
                .to_pandas()
                .fillna("\uffff"),
                "row": rows[debits],
            }
        )
        frame = frame.sort_values(["pos", "created_at", "settlement_id", "row"], kind="stable")
        head = frame.drop_duplicates("pos", keep="first")
        first[head["pos"].to_numpy(dtype=np.int64)] = head["row"].to_numpy(dtype=np.int64)

    payment = lookup(ctx.text(disputes, "payment_id"), ctx.text(ds.payments, "id"))
    return Part(
        entity_type="dispute",
        codes=C.DISPUTE_CODES,
        entity_id=TextRef(ids),
        mask=mask,
        pending=pending,
        settlement_id=TextRef(ctx.text(rec, "settlement_id"), first),
        expected=expected,
        actual=actual,
        method=np.full(n, M_NONE, dtype=np.int8),
        order_id=TextRef(ctx.text(ds.payments, "order_id"), payment) if n else nulls_ref(0),
        utr=_settlement_utr(ctx, first),
        created_at=ints(disputes["created_at"]),
        created_at_null=np.zeros(n, dtype=bool),
    )
