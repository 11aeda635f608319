"""Instant (on-demand) settlements, `setlod_...` (docs/engine.md, *Instant settlements*).

Each processed payout is paid to the bank under its own UTR; `link_bank` links those
credits exactly as it links a settlement's (`BankLinks.line_payout`). One outcome per
instant settlement, set-based over its payouts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from core.engine import codes as C
from core.engine.bank import BankLinks, payout_net, status_is
from core.engine.columns import IntArray, any_by, ints, lookup, nulls, sum_by, take_text
from core.engine.context import Context
from core.engine.part import (
    M_NO_BANK,
    M_NONE,
    M_UTR,
    NO_PENDING,
    P_AWAITING_BANK_CREDIT,
    P_AWAITING_SETTLEMENT,
    Part,
    TextRef,
    nulls_ref,
    primary_index,
)

I_REVERSED, I_DUP_BANK, I_BANK_AMOUNT, I_MISSING_BANK = (
    C.INSTANT_SETTLEMENT_CODES.index(code)
    for code in (
        C.INSTANT_PAYOUT_REVERSED,
        C.DUPLICATE_BANK_CREDIT,
        C.BANK_UTR_AMOUNT_MISMATCH,
        C.MISSING_BANK_ENTRY,
    )
)


def check_instant_settlements(ctx: Context, links: BankLinks | None) -> Part:
    """Outcomes of instant settlements. `links` is None without a bank statement."""
    ds = ctx.dataset
    inst, payouts = ds.instant_settlements, ds.instant_payouts
    n = len(inst)
    ids = ctx.text(inst, "id")
    owner = lookup(payouts["instant_settlement_id"], ids)
    mine = owner >= 0
    processed = status_is(payouts, "processed") & mine
    reversed_payout = status_is(payouts, "reversed") & mine
    net = payout_net(payouts)

    expected = sum_by(owner[processed], net[processed], n)
    n_processed = sum_by(owner[processed], np.ones(int(processed.sum()), dtype=np.int64), n)
    reversed_sum = sum_by(owner[reversed_payout], ints(payouts["amount"])[reversed_payout], n)
    amount_reversed = ints(inst["amount_reversed"])
    reversed_amount = np.where(amount_reversed > 0, amount_reversed, reversed_sum)
    is_reversed = (amount_reversed > 0) | any_by(owner[mine], reversed_payout[mine], n)

    mask = (is_reversed.astype(np.int64)) << I_REVERSED
    pending = np.where(n_processed == 0, P_AWAITING_SETTLEMENT, NO_PENDING).astype(np.int8)
    actual = np.zeros(n, dtype=np.int64)
    method = np.where(n_processed > 0, M_NO_BANK, M_NONE).astype(np.int8)
    if links is not None and links.payout_credits is not None:
        credits = links.payout_credits
        credit_sum = links.payout_credit_sum
        assert credit_sum is not None
        # Per processed payout: its credits, and whether its bank day has passed.
        day = np.where(
            nulls(payouts["processed_at"]),
            ints(payouts["created_at"]),
            ints(payouts["processed_at"]),
        )
        overdue = ctx.as_of_day > ctx.deadline(day, ctx.params.calendar.bank_days)
        once = processed & (credits == 1)
        dup = any_by(owner[processed], credits[processed] >= 2, n)
        # Short payout: the single credits against what those payouts settled.
        short = sum_by(owner[once], credit_sum[once], n) != sum_by(owner[once], net[once], n)
        uncredited = processed & (credits == 0)
        missing = any_by(owner[processed], (uncredited & overdue)[processed], n)
        waiting = any_by(owner[processed], (uncredited & ~overdue)[processed], n)
        mask |= dup.astype(np.int64) << I_DUP_BANK
        mask |= short.astype(np.int64) << I_BANK_AMOUNT
        mask |= missing.astype(np.int64) << I_MISSING_BANK
        pending = np.where(
            (mask == 0) & (n_processed > 0) & waiting, P_AWAITING_BANK_CREDIT, pending
        ).astype(np.int8)
        actual = sum_by(owner[processed], credit_sum[processed], n)
        credited = any_by(owner[processed], (credits > 0)[processed], n)
        method = np.where(credited, M_UTR, M_NONE).astype(np.int8)

    primary = primary_index(mask, len(C.INSTANT_SETTLEMENT_CODES))
    is_reversal = primary == I_REVERSED
    expected = np.where(is_reversal, reversed_amount, expected)
    actual = np.where(is_reversal | (pending > 0), 0, actual)

    # The UTR shown: the first processed payout's, by payout id.
    first = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(processed)
    if len(rows):
        order = pd.DataFrame(
            {"owner": owner[rows], "id": _ids_of(ctx, rows), "row": rows}
        ).sort_values(["owner", "id"])
        order = order.drop_duplicates("owner", keep="first")
        first[order["owner"].to_numpy(dtype=np.int64)] = order["row"].to_numpy(dtype=np.int64)
    utr = take_text(ctx.text(payouts, "utr"), first)
    return Part(
        entity_type="instant_settlement",
        codes=C.INSTANT_SETTLEMENT_CODES,
        entity_id=TextRef(ids),
        mask=mask.astype(np.int64),
        pending=pending,
        settlement_id=TextRef(ids),
        expected=expected.astype(np.int64),
        actual=actual.astype(np.int64),
        method=method,
        order_id=nulls_ref(n),
        utr=TextRef(utr),
        created_at=ints(inst["created_at"]),
        created_at_null=np.zeros(n, dtype=bool),
    )


def _ids_of(ctx: Context, rows: IntArray) -> pd.Series:
    payout_ids = ctx.text(ctx.dataset.instant_payouts, "id").take(pa.array(rows))
    return pd.Series(pd.arrays.ArrowStringArray(payout_ids.cast(pa.large_string())))


__all__ = ["check_instant_settlements"]
