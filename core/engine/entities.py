"""Payments, refunds and recon rows without a known entity (spec section 5), set-based.

Every recon row is checked on its own (vectorised over all rows), then its findings are
OR-ed into its entity's bit mask with `np.bitwise_or.at`; counts and sums go the same way.
No loop runs per row or per entity.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.calendar import ist_dates
from core.dataset import CAPTURED_STATUSES
from core.engine import codes as C
from core.engine.columns import (
    BoolArray,
    IntArray,
    any_by,
    bools,
    count_by,
    differs,
    gather,
    ints,
    later,
    lookup,
    nulls,
    present,
    sum_by,
)
from core.engine.context import Context
from core.engine.dispute_rows import dispute_recon_rows
from core.engine.money_model import foreign_currency, inr_amounts, settled_elsewhere
from core.engine.part import (
    M_DIRECT,
    M_NONE,
    NO_PENDING,
    P_AWAITING_SETTLEMENT,
    P_ON_HOLD,
    Part,
    TextRef,
    bit,
    primary_index,
)

PAY_DUP, PAY_WRONG, PAY_AMOUNT, PAY_FEE, PAY_NO_SETTLEMENT, PAY_LATE, PAY_MISSING, PAY_STATUS = (
    C.PAYMENT_CODES.index(code)
    for code in (
        C.DUPLICATE_RECONCILIATION_RECORD,
        C.WRONG_MAPPING,
        C.AMOUNT_MISMATCH,
        C.SETTLEMENT_AMOUNT_DISCREPANCY,
        C.MISSING_SETTLEMENT,
        C.TIMING_WINDOW_EXCEEDED,
        C.MISSING_RECONCILIATION_RECORD,
        C.STATUS_MISMATCH,
    )
)
REF_DUP, REF_WRONG, REF_AMOUNT, REF_MISSING, REF_REVERSAL = (
    C.REFUND_CODES.index(code)
    for code in (
        C.DUPLICATE_RECONCILIATION_RECORD,
        C.WRONG_MAPPING,
        C.REFUND_AMOUNT_MISMATCH,
        C.MISSING_RECONCILIATION_RECORD,
        C.REFUND_REVERSAL_MISSING,
    )
)

ROW_UNKNOWN, ROW_DISPUTE = (
    C.RECON_ROW_CODES.index(C.PAYMENT_ID_MISMATCH),
    C.RECON_ROW_CODES.index(C.DISPUTE_DEBIT),
)


def _representative(
    pos: IntArray,
    count: IntArray,
    rows: IntArray,
    tie_break: dict[str, pa.Array | IntArray],
    size: int,
) -> IntArray:
    """For each entity, the index (into the row arrays) of the row that stands for it.

    With one row that row; with duplicates the first in a content order (the tie-break
    columns: full recon columns as Arrow arrays, or per-row int arrays), so the choice
    never depends on the order of the file.
    """
    rep = np.full(size, -1, dtype=np.int64)
    rep[pos] = np.arange(len(pos), dtype=np.int64)
    duplicated = np.flatnonzero(count[pos] >= 2)
    if len(duplicated):
        frame = pd.DataFrame({"pos": pos[duplicated], "idx": duplicated})
        for name, values in tie_break.items():
            if isinstance(values, pa.Array):
                frame[name] = _select_rows(values, rows[duplicated]).to_pandas()
            else:
                frame[name] = values[duplicated]
        frame = frame.sort_values([*tie_break, "idx"], na_position="last", kind="stable")
        first = frame.drop_duplicates("pos", keep="first")
        rep[first["pos"].to_numpy(dtype=np.int64)] = first["idx"].to_numpy(dtype=np.int64)
    return rep


def _or_bits(pos: IntArray, row_bits: IntArray, size: int) -> IntArray:
    mask = np.zeros(size, dtype=np.int64)
    np.bitwise_or.at(mask, pos, row_bits)
    return mask


def _select_rows(values: pa.Array, rows: IntArray) -> pa.Array:
    return values.take(pa.array(rows, type=pa.int64()))


def _rows_of_known_entities(
    ctx: Context, row_type: str, ids: pa.Array
) -> tuple[IntArray, IntArray, pa.Array, IntArray]:
    """The recon rows of `row_type` whose entity_id is in `ids`: their row indexes, the
    position of their entity in `ids`, their entity ids; and the rows with no known entity."""
    rows = ctx.recon_rows_of_type(row_type)
    entity = _select_rows(ctx.text(ctx.dataset.recon, "entity_id"), rows)
    pos = lookup(entity, ids)
    known = pos >= 0
    return rows[known], pos[known], entity.filter(pa.array(known)), rows[~known]


KnownRows = tuple[IntArray, IntArray, pa.Array, IntArray]


def payment_rows(ctx: Context) -> KnownRows:
    """The recon payment rows whose payment is known (`_rows_of_known_entities` over the
    payment ids): rows, payment positions, entity ids; and the rows of unknown payments.
    Arrow and numpy only (no pandas), so `reconcile` runs it on a worker thread while the
    calling thread computes the payment-side columns; the text columns it reads are taken
    from the context's cache, filled by the caller first (`prepare_payment_rows`)."""
    return _rows_of_known_entities(ctx, "payment", ctx.text(ctx.dataset.payments, "id"))


def prepare_payment_rows(ctx: Context) -> None:
    """Fill the context's text cache with what `payment_rows` reads (on the caller's
    thread, so the worker touches no pandas object)."""
    ctx.text(ctx.dataset.payments, "id")
    ctx.text(ctx.dataset.recon, "entity_id")


def _payment_text_checks(
    rows: IntArray,
    pos: IntArray,
    entity: pa.Array,
    r_payment_ids: pa.Array,
    r_orders: pa.Array,
    p_orders: pa.Array,
) -> BoolArray:
    """WRONG_MAPPING per recon row: it names another payment, or another order."""
    r_payment_id = _select_rows(r_payment_ids, rows)
    wrong = present(r_payment_id) & differs(r_payment_id, entity)
    r_order = _select_rows(r_orders, rows)
    p_order = _select_rows(p_orders, pos)
    wrong |= present(r_order) & present(p_order) & differs(r_order, p_order)
    return wrong


def check_payments(
    ctx: Context,
    known: Callable[[], KnownRows] | None = None,
    pool: Executor | None = None,
) -> tuple[Part, IntArray]:
    """Outcomes of payments, and the recon payment rows whose payment is unknown.

    known: returns `payment_rows(ctx)` (a future's `result`, when `reconcile` computes it
    on another thread); called after the payment-side columns are made. None computes it
    here. pool: an executor to run the rows' text comparisons (Arrow only) on, beside this
    thread. The outcomes are the same either way."""
    ds = ctx.dataset
    pay, rec = ds.payments, ds.recon
    cal = ctx.params.calendar
    n = len(pay)
    ids = ctx.text(pay, "id")

    # The payment-side columns first (they do not need the recon rows' lookup).
    amount = ints(pay["amount"])
    # Another currency is compared in INR (base_amount, else the row's INR amount).
    foreign = foreign_currency(ctx.text(pay, "currency"))
    base = ints(pay["base_amount"])
    base_null = nulls(pay["base_amount"])
    fee = ints(pay["fee"])
    fee_null = nulls(pay["fee"])
    created = ints(pay["created_at"])
    international = bools(pay["international"])
    status = pc.utf8_lower(ctx.text(pay, "status"))
    in_captured_status = pc.is_in(status, value_set=pa.array(CAPTURED_STATUSES))
    captured = bools(pay["captured"]) | np.asarray(
        in_captured_status.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool
    )
    settle_days = np.where(international | foreign, cal.international_days, cal.settlement_days)
    deadline = ctx.deadline(created, (settle_days + cal.grace_days).astype(np.int64))
    overdue = ctx.as_of_day > deadline
    pay_elsewhere = settled_elsewhere(ctx.text(pay, "settled_by"))
    p_order_all = ctx.text(pay, "order_id")
    r_settled_by = ctx.text(rec, "settled_by")
    r_settlement_ids = ctx.text(rec, "settlement_id")
    r_payment_ids = ctx.text(rec, "payment_id")
    r_orders = ctx.text(rec, "order_id")
    rec_amount, rec_credit, rec_fee = ints(rec["amount"]), ints(rec["credit"]), ints(rec["fee"])
    rec_settled, rec_on_hold = bools(rec["settled"]), bools(rec["on_hold"])
    rec_settled_at, rec_settled_at_null = ints(rec["settled_at"]), nulls(rec["settled_at"])

    rows, pos, entity, unknown_rows = payment_rows(ctx) if known is None else known()
    rows, pos, entity = _without_released_holds(ctx, rows, pos, entity, n)

    r_amount = rec_amount[rows]
    r_credit = rec_credit[rows]
    r_fee = rec_fee[rows]
    r_settled = rec_settled[rows]
    r_held = rec_on_hold[rows] & ~r_settled
    r_settled_at = rec_settled_at[rows]
    r_settled_at_null = rec_settled_at_null[rows]
    r_settlement = ctx.recon_settlement[rows]

    # 2 WRONG_MAPPING: the row names another payment, or another order (Arrow only: on
    # the pool when there is one, while this thread does the numbers).
    text_checks = later(
        pool, _payment_text_checks, rows, pos, entity, r_payment_ids, r_orders, p_order_all
    )
    # 3 AMOUNT_MISMATCH / 4 SETTLEMENT_AMOUNT_DISCREPANCY (fee includes GST: net = amount - fee).
    row_inr = inr_amounts(amount[pos], foreign[pos], base[pos], base_null[pos], r_amount)
    amount_differs = r_amount != row_inr
    fee_used = np.where(fee_null[pos], r_fee, fee[pos])
    fee_differs = ~amount_differs & (r_credit != row_inr - fee_used)
    # 5 MISSING_SETTLEMENT / 6 TIMING_WINDOW_EXCEEDED never apply to a row the gateway holds.
    no_settlement = ~r_held & (r_settlement < 0)
    late = (
        ~r_held
        & ~r_settled_at_null
        & (ist_dates(np.where(r_settled_at_null, 0, r_settled_at)) > deadline[pos])
    )

    wrong = text_checks()
    row_bits = (
        (wrong.astype(np.int64) << PAY_WRONG)
        | (amount_differs.astype(np.int64) << PAY_AMOUNT)
        | (fee_differs.astype(np.int64) << PAY_FEE)
        | (no_settlement.astype(np.int64) << PAY_NO_SETTLEMENT)
        | (late.astype(np.int64) << PAY_LATE)
    )
    mask = _or_bits(pos, row_bits, n)
    count = count_by(pos, n)
    mask |= (count >= 2).astype(np.int64) << PAY_DUP
    mask |= ((count == 0) & overdue).astype(np.int64) << PAY_MISSING
    # Settled by someone other than Razorpay: no Razorpay settlement is expected.
    elsewhere = pay_elsewhere | any_by(pos, settled_elsewhere(_select_rows(r_settled_by, rows)), n)
    mask &= ~np.where(elsewhere, bit(PAY_NO_SETTLEMENT) | bit(PAY_LATE) | bit(PAY_MISSING), 0)
    # A payment that is not captured has an outcome only when money was settled for it.
    mask = np.where(captured, mask, np.where(count > 0, bit(PAY_STATUS), 0)).astype(np.int64)
    held_any = any_by(pos, r_held, n)
    pending = np.where(
        captured & (count == 0) & ~overdue,
        P_AWAITING_SETTLEMENT,
        np.where(captured & held_any & (mask == 0), P_ON_HOLD, NO_PENDING),
    )
    pending = np.where(elsewhere, NO_PENDING, pending).astype(np.int8)
    direct = elsewhere & captured & (mask == 0)

    rep = _representative(
        pos,
        count,
        rows,
        {
            "settlement_id": r_settlement_ids,
            "settled_at": np.where(r_settled_at_null, np.iinfo(np.int64).max, r_settled_at),
            "amount": r_amount,
            "credit": r_credit,
        },
        n,
    )
    rep_credit = gather(r_credit, rep)
    rep_amount = gather(r_amount, rep)
    rep_fee = gather(r_fee, rep)
    rep_settled = gather(~r_held & (r_settlement >= 0), rep, False)
    credit_sum = sum_by(pos, r_credit, n)

    primary = primary_index(mask, len(C.PAYMENT_CODES))
    inr = inr_amounts(amount, foreign, base, base_null, rep_amount)
    # A foreign payment with no base_amount and no recon row has no known INR amount.
    inr_known = ~foreign | ~base_null | (count > 0)
    expected = np.where(inr_known, inr - np.where(fee_null, rep_fee, fee), 0)
    actual = np.where(rep_settled | (direct & (count > 0)), rep_credit, 0)
    expected = np.where(primary == PAY_AMOUNT, inr, expected)
    actual = np.where(primary == PAY_AMOUNT, rep_amount, actual)
    actual = np.where(primary == PAY_FEE, rep_credit, actual)
    actual = np.where((primary == PAY_DUP) | (primary == PAY_STATUS), credit_sum, actual)
    expected = np.where(primary == PAY_STATUS, 0, expected)

    rep_row = gather(rows, rep, -1)
    keep = np.flatnonzero(captured | (count > 0))
    part = Part(
        entity_type="payment",
        codes=C.PAYMENT_CODES,
        entity_id=TextRef(ids, keep),
        mask=mask[keep],
        pending=pending[keep],
        settlement_id=TextRef(ctx.text(rec, "settlement_id"), rep_row[keep]),
        expected=expected[keep],
        actual=actual[keep],
        method=np.where(direct, M_DIRECT, M_NONE).astype(np.int8)[keep],
        order_id=TextRef(ctx.text(pay, "order_id"), keep),
        utr=_settlement_utr(ctx, rep_row[keep]),
        created_at=created[keep],
        created_at_null=np.zeros(len(keep), dtype=bool),
    )
    return part, unknown_rows


def _without_released_holds(
    ctx: Context, rows: IntArray, pos: IntArray, entity: pa.Array, size: int
) -> tuple[IntArray, IntArray, pa.Array]:
    """Drop a held row (on_hold, not settled, no settlement) of an entity that also has
    a settled row: the hold was released into that settlement (docs/engine.md)."""
    rec = ctx.dataset.recon
    has_settlement = present(_select_rows(ctx.text(rec, "settlement_id"), rows))
    settled = bools(rec["settled"])[rows]
    held = bools(rec["on_hold"])[rows] & ~settled & ~has_settlement
    released = any_by(pos, ~held & (settled | has_settlement), size)
    keep = ~(held & released[pos])
    if keep.all():
        return rows, pos, entity
    return rows[keep], pos[keep], entity.filter(pa.array(keep))


def _as_series(values: pa.Array) -> pd.Series:
    return pd.Series(pd.arrays.ArrowStringArray(values.cast(pa.large_string())))


def _settlement_utr(ctx: Context, recon_rows: IntArray) -> TextRef:
    """The UTR of the settlement a recon row names (the settlement's own when it is in the
    dataset and has one, else the row's `settlement_utr`); null for row -1."""
    settlements_utr = ctx.text(ctx.dataset.settlements, "utr")
    rows_utr = ctx.text(ctx.dataset.recon, "settlement_utr")
    has_utr = ~np.asarray(pc.is_null(settlements_utr).to_numpy(zero_copy_only=False), dtype=bool)
    settlement = gather(ctx.recon_settlement, recon_rows, -1)
    use_settlement = gather(has_utr, settlement, False)
    rows = np.where(
        use_settlement, settlement, np.where(recon_rows >= 0, len(settlements_utr) + recon_rows, -1)
    )
    key = (id(ctx.dataset.settlements), "utr+settlement_utr")
    if key not in ctx._texts:
        ctx._texts[key] = pa.concat_arrays([settlements_utr, rows_utr])
    return TextRef(ctx._texts[key], rows.astype(np.int64))


def check_refunds(ctx: Context) -> tuple[Part, IntArray]:
    """Outcomes of processed refunds, and the recon refund rows whose refund is unknown."""
    ds = ctx.dataset
    ref, rec = ds.refunds, ds.recon
    cal = ctx.params.calendar
    n = len(ref)
    ids = ctx.text(ref, "id")

    rows, pos, _, unknown_rows = _rows_of_known_entities(ctx, "refund", ids)

    amount = ints(ref["amount"])
    foreign = foreign_currency(ctx.text(ref, "currency"))
    base = ints(ref["base_amount"])
    base_null = nulls(ref["base_amount"])
    created = ints(ref["created_at"])
    processed = np.asarray(
        pc.equal(pc.utf8_lower(ctx.text(ref, "status")), "processed")
        .fill_null(False)
        .to_numpy(zero_copy_only=False),
        dtype=bool,
    )
    r_debit = ints(rec["debit"])[rows]
    r_fee = ints(rec["fee"])[rows]
    r_amount = ints(rec["amount"])[rows]

    r_payment_id = _select_rows(ctx.text(rec, "payment_id"), rows)
    f_payment_id = _select_rows(ctx.text(ref, "payment_id"), pos)
    wrong = present(r_payment_id) & differs(r_payment_id, f_payment_id)
    row_inr = inr_amounts(amount[pos], foreign[pos], base[pos], base_null[pos], r_amount)
    amount_differs = r_debit != row_inr + r_fee
    row_bits = (wrong.astype(np.int64) << REF_WRONG) | (
        amount_differs.astype(np.int64) << REF_AMOUNT
    )
    mask = _or_bits(pos, row_bits, n)
    count = count_by(pos, n)
    # Refunds follow the domestic cycle.
    deadline = ctx.deadline(created, cal.settlement_days + cal.grace_days)
    overdue = ctx.as_of_day > deadline
    mask |= (count >= 2).astype(np.int64) << REF_DUP
    mask |= ((count == 0) & overdue).astype(np.int64) << REF_MISSING
    elsewhere = settled_elsewhere(ctx.text(ref, "settled_by")) | any_by(
        pos, settled_elsewhere(_select_rows(ctx.text(rec, "settled_by"), rows)), n
    )
    mask &= ~np.where(elsewhere, bit(REF_MISSING), 0)
    pending = np.where(
        (count == 0) & ~overdue & ~elsewhere, P_AWAITING_SETTLEMENT, NO_PENDING
    ).astype(np.int8)
    direct = elsewhere & (mask == 0)

    rep = _representative(
        pos,
        count,
        rows,
        {
            "settlement_id": ctx.text(rec, "settlement_id"),
            "debit": r_debit,
            "fee": r_fee,
        },
        n,
    )
    rep_debit = gather(r_debit, rep)
    rep_fee = gather(r_fee, rep)
    rep_amount = gather(r_amount, rep)
    debit_sum = sum_by(pos, r_debit, n)

    primary = primary_index(mask, len(C.REFUND_CODES))
    inr = inr_amounts(amount, foreign, base, base_null, rep_amount)
    inr_known = ~foreign | ~base_null | (count > 0)
    expected = np.where(inr_known, inr + rep_fee, 0)
    actual = np.where(primary == REF_DUP, debit_sum, rep_debit)

    rep_row = gather(rows, rep, -1)
    back = _owed_back(ctx, rows, pos, r_debit)
    mask = np.where(back.owed, back.mask, mask)
    pending = np.where(back.owed, back.pending, pending).astype(np.int8)
    expected = np.where(back.owed, back.expected, expected)
    actual = np.where(back.owed, back.actual, actual)
    rep_row = np.where(back.owed, back.row, rep_row)
    keep = np.flatnonzero(processed | back.owed)
    part = Part(
        entity_type="refund",
        codes=C.REFUND_CODES,
        entity_id=TextRef(ids, keep),
        mask=mask[keep],
        pending=pending[keep],
        settlement_id=TextRef(ctx.text(rec, "settlement_id"), rep_row[keep]),
        expected=expected[keep],
        actual=actual[keep],
        method=np.where(direct, M_DIRECT, M_NONE).astype(np.int8)[keep],
        order_id=TextRef(ctx.text(rec, "order_id"), rep_row[keep]),
        utr=_settlement_utr(ctx, rep_row[keep]),
        created_at=created[keep],
        created_at_null=np.zeros(len(keep), dtype=bool),
    )
    return part, unknown_rows


@dataclass(frozen=True)
class _OwedBack:
    """Per refund: whether it is a failed or reversed refund a settlement debited (`owed`),
    and its outcome if so (mask, pending reason, amounts, the debit row shown)."""

    owed: BoolArray
    mask: IntArray
    pending: npt.NDArray[np.int8]
    expected: IntArray
    actual: IntArray
    row: IntArray


def _owed_back(ctx: Context, rows: IntArray, pos: IntArray, r_debit: IntArray) -> _OwedBack:
    """Failed or reversed refunds whose money a settlement took (docs/engine.md, *Failed
    refunds a settlement debited*). D = Σ debit of the refund's recon rows that name a
    known settlement (regular or instant), R = Σ credit of its recon rows of type refund
    or adjustment carrying the refund id as `entity_id`. D > 0 gives an outcome: MATCHED
    when R >= D; else PENDING AWAITING_SETTLEMENT until the IST date of the latest such
    debit (`settled_at`, else the refund's `created_at`) + the domestic cycle + grace, and
    REFUND_REVERSAL_MISSING (D - R awaited) after it."""
    ds = ctx.dataset
    ref, rec = ds.refunds, ds.recon
    cal = ctx.params.calendar
    n = len(ref)
    ids = ctx.text(ref, "id")
    status = pc.utf8_lower(pc.utf8_trim_whitespace(ctx.text(ref, "status")))
    final = np.asarray(
        pc.is_in(status, value_set=pa.array(C.OWED_BACK_STATUSES, type=pa.large_string()))
        .fill_null(False)
        .to_numpy(zero_copy_only=False),
        dtype=bool,
    )
    created = ints(ref["created_at"])
    debited = (r_debit > 0) & (ctx.recon_settlement[rows] >= 0) & final[pos]
    taken = sum_by(pos[debited], r_debit[debited], n)
    # Credits under the refund's own id: its refund rows, and adjustment rows naming it.
    adjustments = ctx.recon_rows_of_type("adjustment")
    adj_pos = lookup(_select_rows(ctx.text(rec, "entity_id"), adjustments), ids)
    credit_rows = np.concatenate([rows, adjustments[adj_pos >= 0]])
    credit_pos = np.concatenate([pos, adj_pos[adj_pos >= 0]])
    returned = sum_by(credit_pos, ints(rec["credit"])[credit_rows], n)

    settled_at = ints(rec["settled_at"], fill=-1)[rows[debited]]
    moment = np.where(settled_at >= 0, settled_at, created[pos[debited]])
    anchor = created.copy()
    np.maximum.at(anchor, pos[debited], moment)
    deadline = ctx.deadline(anchor, cal.settlement_days + cal.grace_days)
    overdue = ctx.as_of_day > deadline

    owed = final & (taken > 0)
    short = owed & (taken > returned)
    mask = np.where(short & overdue, bit(REF_REVERSAL), 0).astype(np.int64)
    pending = np.where(short & ~overdue, P_AWAITING_SETTLEMENT, NO_PENDING).astype(np.int8)
    expected = np.where(short, taken - returned, taken).astype(np.int64)
    actual = np.where(short, 0, returned).astype(np.int64)

    # The row shown: the first debit row by settlement id, debit, then row (by content).
    d_rows, d_pos = rows[debited], pos[debited]
    rep = _representative(
        d_pos,
        count_by(d_pos, n),
        d_rows,
        {"settlement_id": ctx.text(rec, "settlement_id"), "debit": r_debit[debited]},
        n,
    )
    return _OwedBack(owed, mask, pending, expected, actual, gather(d_rows, rep, -1))


def check_orphan_rows(ctx: Context, unknown_rows: IntArray) -> Part:
    """Recon rows without a known entity (PAYMENT_ID_MISMATCH), dispute debits
    (DISPUTE_DEBIT) and reversed dispute rows (MATCHED) of disputes not in a disputes file,
    one outcome per recon `entity_id`."""
    rec = ctx.dataset.recon
    debit_all = ints(rec["debit"])
    disputes, reversed_rows = dispute_recon_rows(ctx)
    rows = np.concatenate([unknown_rows, disputes, reversed_rows]).astype(np.int64)
    bits = np.concatenate(
        [
            np.full(len(unknown_rows), bit(ROW_UNKNOWN), dtype=np.int64),
            np.full(len(disputes), bit(ROW_DISPUTE), dtype=np.int64),
            np.zeros(len(reversed_rows), dtype=np.int64),
        ]
    )
    if len(rows) == 0:
        return _empty_part("recon_row", C.RECON_ROW_CODES)
    frame = pd.DataFrame(
        {
            "entity_id": _as_series(_select_rows(ctx.text(rec, "entity_id"), rows)),
            "settlement_id": _as_series(_select_rows(ctx.text(rec, "settlement_id"), rows)),
            "row": rows,
            "bits": bits,
            "debit": debit_all[rows],
            "net": ints(rec["credit"])[rows] - debit_all[rows],
            "gross": ints(rec["credit"])[rows] + debit_all[rows],
            "created_at": ints(rec["created_at"], fill=np.iinfo(np.int64).max)[rows],
        }
    )
    # The row that stands for an entity id is chosen by content, never by file order.
    order = ["entity_id", "settlement_id", "created_at", "debit", "net", "row"]
    frame = frame.sort_values(order, na_position="last")
    grouped = frame.groupby("entity_id", sort=True)
    first = grouped["row"].first().to_numpy(dtype=np.int64)
    # OR of each group's bits, vectorised (an .agg(np.bitwise_or.reduce) runs Python per
    # group); group numbers follow the sorted keys like first() and sum() below.
    group = grouped.ngroup().to_numpy(dtype=np.float64, na_value=np.nan)
    named = ~np.isnan(group)
    mask = np.zeros(grouped.ngroups, dtype=np.int64)
    np.bitwise_or.at(mask, group[named].astype(np.int64), frame["bits"].to_numpy()[named])
    debit = grouped["debit"].sum().to_numpy(dtype=np.int64)
    net = grouped["net"].sum().to_numpy(dtype=np.int64)
    gross = grouped["gross"].sum().to_numpy(dtype=np.int64)
    entity_ids = pa.array(grouped["row"].first().index.to_numpy(dtype=object), pa.large_string())
    primary = primary_index(mask, len(C.RECON_ROW_CODES))
    return Part(
        entity_type="recon_row",
        codes=C.RECON_ROW_CODES,
        entity_id=TextRef(entity_ids),
        mask=mask,
        pending=np.zeros(len(mask), dtype=np.int8),
        settlement_id=TextRef(ctx.text(rec, "settlement_id"), first),
        # A reversed dispute's rows (MATCHED): the money moved, both ways.
        expected=np.where(mask == 0, gross, 0).astype(np.int64),
        actual=np.where(primary == ROW_DISPUTE, debit, np.where(mask == 0, gross, net)).astype(
            np.int64
        ),
        method=np.full(len(mask), M_NONE, dtype=np.int8),
        order_id=TextRef(ctx.text(rec, "order_id"), first),
        utr=_settlement_utr(ctx, first),
        created_at=ints(rec["created_at"])[first],
        created_at_null=nulls(rec["created_at"])[first],
    )


def _empty_part(entity_type: str, codes: tuple[str, ...]) -> Part:
    empty_text = TextRef(pa.array([], type=pa.large_string()))
    return Part(
        entity_type=entity_type,
        codes=codes,
        entity_id=empty_text,
        mask=np.zeros(0, dtype=np.int64),
        pending=np.zeros(0, dtype=np.int8),
        settlement_id=empty_text,
        expected=np.zeros(0, dtype=np.int64),
        actual=np.zeros(0, dtype=np.int64),
        method=np.zeros(0, dtype=np.int8),
        order_id=empty_text,
        utr=empty_text,
        created_at=np.zeros(0, dtype=np.int64),
        created_at_null=np.zeros(0, dtype=bool),
    )
