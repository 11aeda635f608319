"""The recon rows of disputes: adjustment rows carrying a `dispute_id` (docs/engine.md).

Shared by the recon-row checker (rows of disputes not in a disputes file) and the dispute
checker (`core.engine.disputes`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.engine.columns import IntArray, ints, lookup, present, sum_by
from core.engine.context import Context


def dispute_rows(ctx: Context) -> tuple[IntArray, pa.Array]:
    """Recon adjustment rows carrying a dispute id, and their dispute ids."""
    rec = ctx.dataset.recon
    adjustments = ctx.recon_rows_of_type("adjustment")
    ids = ctx.text(rec, "dispute_id").take(pa.array(adjustments, type=pa.int64()))
    has_id = present(ids)
    return adjustments[has_id], ids.filter(pa.array(has_id))


def dispute_recon_rows(ctx: Context) -> tuple[IntArray, IntArray]:
    """Rows of disputes not in the disputes file: (debit rows that are DISPUTE_DEBIT,
    debit and reversal credit rows of reversed disputes (R >= D > 0), which are MATCHED).
    A credit row of a dispute with no debit gets no outcome, as the spec has it for every
    adjustment that is not a dispute debit (docs/engine.md)."""
    rows, ids = dispute_rows(ctx)
    known = lookup(ids, ctx.text(ctx.dataset.disputes, "id")) >= 0
    rows, ids = rows[~known], ids.filter(pa.array(~known))
    if len(rows) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    debit = ints(ctx.dataset.recon["debit"])[rows]
    credit = ints(ctx.dataset.recon["credit"])[rows]
    group = lookup(ids, pc.unique(ids))
    size = int(group.max()) + 1
    total_debit = sum_by(group, debit, size)
    reversed_ = ((sum_by(group, credit, size) >= total_debit) & (total_debit > 0))[group]
    is_debit = debit > 0
    is_credit = ~is_debit & (credit > 0)
    return rows[is_debit & ~reversed_], rows[reversed_ & (is_debit | is_credit)]
