"""Route transfers, `trf_...` (docs/engine.md, *Route transfers*), against their recon
`transfer` rows (debit = amount + fee) and reversal rows, set-based.

With a transfers file each transfer that is not `failed` gets an outcome, and a transfer
row naming no transfer in it is returned for `check_orphan_rows` (PAYMENT_ID_MISMATCH). A
transfer of `unknown` status (the Dashboard's Transfers report) without a row is PENDING
TRANSFER_STATUS_UNKNOWN past its cycle, never MISSING_RECONCILIATION_RECORD.
Without one, every recon transfer row (grouped by `entity_id`) gets an outcome of its own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.dataset import TRANSFER_STATUS_UNKNOWN
from core.engine import codes as C
from core.engine.bank import status_is
from core.engine.columns import (
    IntArray,
    any_by,
    bools,
    count_by,
    gather,
    ints,
    lookup,
    present,
    sum_by,
)
from core.engine.context import Context
from core.engine.part import (
    M_NONE,
    NO_PENDING,
    P_AWAITING_SETTLEMENT,
    P_ON_HOLD,
    P_TRANSFER_STATUS_UNKNOWN,
    Part,
    TextRef,
    nulls_ref,
    primary_index,
)

T_DUP, T_AMOUNT, T_REVERSAL, T_MISSING = (
    C.TRANSFER_CODES.index(code)
    for code in (
        C.DUPLICATE_RECONCILIATION_RECORD,
        C.TRANSFER_AMOUNT_MISMATCH,
        C.TRANSFER_REVERSAL_MISMATCH,
        C.MISSING_RECONCILIATION_RECORD,
    )
)


def _take(values: pa.Array, rows: IntArray) -> pa.Array:
    return values.take(pa.array(rows, type=pa.int64()))


def _first_row(pos: IntArray, rows: IntArray, key: pa.Array, size: int) -> IntArray:
    """For each entity, its recon row that stands for it: the first by `key` (the
    settlement id), then row number; -1 for an entity without rows."""
    first = np.full(size, -1, dtype=np.int64)
    if len(rows):
        frame = pd.DataFrame(
            {
                "pos": pos,
                "key": pd.Series(pd.arrays.ArrowStringArray(_take(key, rows))),
                "row": rows,
            }
        ).sort_values(["pos", "key", "row"], na_position="last")
        frame = frame.drop_duplicates("pos", keep="first")
        first[frame["pos"].to_numpy(dtype=np.int64)] = frame["row"].to_numpy(dtype=np.int64)
    return first


def check_transfers(ctx: Context) -> tuple[Part, IntArray]:
    """Outcomes of transfers, and the recon transfer rows whose transfer is unknown (empty
    when there is no transfers file: then the rows themselves get outcomes)."""
    if len(ctx.dataset.transfers) == 0:
        return _rows_without_file(ctx), np.zeros(0, dtype=np.int64)
    ds = ctx.dataset
    tr, rec = ds.transfers, ds.recon
    n = len(tr)
    ids = ctx.text(tr, "id")
    cal = ctx.params.calendar

    rows = ctx.recon_rows_of_type("transfer")
    pos = lookup(_take(ctx.text(rec, "entity_id"), rows), ids)
    unknown = rows[pos < 0]
    rows, pos = rows[pos >= 0], pos[pos >= 0]

    amount = ints(tr["amount"])
    r_debit = ints(rec["debit"])[rows]
    r_fee = ints(rec["fee"])[rows]
    count = count_by(pos, n)
    debit_sum = sum_by(pos, r_debit, n)
    wrong_amount = any_by(pos, r_debit != amount[pos] + r_fee, n)

    # Reversal rows naming a transfer: any row whose transfer_id is it, or a `reversal`
    # row whose entity_id is it.
    by_transfer_id = lookup(ctx.text(rec, "transfer_id"), ids)
    reversal = np.zeros(len(rec), dtype=bool)
    reversal_rows = ctx.recon_rows_of_type("reversal")
    reversal[reversal_rows] = True
    by_entity = lookup(ctx.text(rec, "entity_id"), ids)
    named = np.where(by_transfer_id >= 0, by_transfer_id, np.where(reversal, by_entity, -1))
    named[rows] = -1  # a transfer row is the transfer itself, not its reversal
    rev = np.flatnonzero(named >= 0)
    reversed_rows = sum_by(named[rev], ints(rec["amount"])[rev], n)
    amount_reversed = ints(tr["amount_reversed"])

    deadline = ctx.deadline(ints(tr["created_at"]), cal.settlement_days + cal.grace_days)
    overdue = ctx.as_of_day > deadline
    # A transfer of unknown status (a Transfers report row: no Status column) that no row
    # debits may have failed, so moved no money: past its cycle it is not missing but
    # undecided until its recon row or its API status arrives.
    unknown_status = status_is(tr, TRANSFER_STATUS_UNKNOWN)
    mask = np.zeros(n, dtype=np.int64)
    mask |= (count >= 2).astype(np.int64) << T_DUP
    mask |= wrong_amount.astype(np.int64) << T_AMOUNT
    mask |= (reversed_rows != amount_reversed).astype(np.int64) << T_REVERSAL
    mask |= ((count == 0) & overdue & ~unknown_status).astype(np.int64) << T_MISSING
    pending = np.select(
        [(count == 0) & ~overdue, (count == 0) & unknown_status],
        [P_AWAITING_SETTLEMENT, P_TRANSFER_STATUS_UNKNOWN],
        NO_PENDING,
    ).astype(np.int8)

    first = _first_row(pos, rows, ctx.text(rec, "settlement_id"), n)
    rep_debit = gather(ints(rec["debit"]), first)
    rep_fee = gather(ints(rec["fee"]), first)
    primary = primary_index(mask, len(C.TRANSFER_CODES))
    expected = amount + rep_fee
    actual = np.where(primary == T_DUP, debit_sum, rep_debit)
    expected = np.where(primary == T_REVERSAL, amount_reversed, expected)
    actual = np.where(primary == T_REVERSAL, reversed_rows, actual)

    keep = np.flatnonzero(~status_is(tr, "failed"))
    part = Part(
        entity_type="transfer",
        codes=C.TRANSFER_CODES,
        entity_id=TextRef(ids, keep),
        mask=mask[keep],
        pending=pending[keep],
        settlement_id=TextRef(ctx.text(rec, "settlement_id"), first[keep]),
        expected=expected[keep].astype(np.int64),
        actual=actual[keep].astype(np.int64),
        method=np.full(len(keep), M_NONE, dtype=np.int8),
        order_id=nulls_ref(len(keep)),
        utr=TextRef(ctx.text(rec, "settlement_utr"), first[keep]),
        created_at=ints(tr["created_at"])[keep],
        created_at_null=np.zeros(len(keep), dtype=bool),
    )
    return part, unknown


def _rows_without_file(ctx: Context) -> Part:
    """No transfers file: one outcome per recon transfer `entity_id`, from its rows alone."""
    rec = ctx.dataset.recon
    rows = ctx.recon_rows_of_type("transfer")
    rows = rows[present(_take(ctx.text(rec, "entity_id"), rows))]
    entity = _take(ctx.text(rec, "entity_id"), rows)
    unique = pc.unique(entity).cast(pa.large_string())
    unique = unique.take(pc.sort_indices(unique))
    n = len(unique)
    pos = lookup(entity, unique)
    settled = ctx.recon_settlement[rows] >= 0
    held = bools(rec["on_hold"])[rows] & ~bools(rec["settled"])[rows]
    known = any_by(pos, settled, n)
    held_any = any_by(pos, held, n)
    pending = np.where(known, NO_PENDING, np.where(held_any, P_ON_HOLD, P_AWAITING_SETTLEMENT))
    first = _first_row(pos, rows, ctx.text(rec, "settlement_id"), n)
    expected = sum_by(pos, ints(rec["amount"])[rows] + ints(rec["fee"])[rows], n)
    created = ints(rec["created_at"])
    return Part(
        entity_type="transfer",
        codes=C.TRANSFER_CODES,
        entity_id=TextRef(unique),
        mask=np.zeros(n, dtype=np.int64),
        pending=pending.astype(np.int8),
        settlement_id=TextRef(ctx.text(rec, "settlement_id"), first),
        expected=expected,
        actual=sum_by(pos, ints(rec["debit"])[rows], n),
        method=np.full(n, M_NONE, dtype=np.int8),
        order_id=TextRef(ctx.text(rec, "order_id"), first),
        utr=TextRef(ctx.text(rec, "settlement_utr"), first),
        created_at=gather(created, first),
        created_at_null=gather(rec["created_at"].isna().to_numpy(dtype=bool), first, True),
    )


__all__ = ["check_transfers"]
