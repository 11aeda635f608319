"""`reconcile(dataset, params, as_of)`: every entity's outcome (spec sections 4-7)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor

import numpy as np
import pandas as pd

from core.books.pricing import PricingPlan
from core.dataset import Dataset
from core.engine.bank import check_bank_lines, check_settlements, link_bank
from core.engine.columns import IntArray, sort_text
from core.engine.context import Context
from core.engine.disputes import check_disputes
from core.engine.entities import (
    KnownRows,
    check_orphan_rows,
    check_payments,
    check_refunds,
    payment_rows,
    prepare_payment_rows,
)
from core.engine.fees import check_fees
from core.engine.instant import check_instant_settlements
from core.engine.params import EngineParams
from core.engine.part import Part, assemble
from core.engine.transfers import check_transfers

# Threads of one reconcile: the Arrow and numpy calls the engine spends its time in release
# the GIL, so two threads keep both cores busy (docs/benchmark.md, fourth round).
ENGINE_THREADS = 2


def reconcile(
    dataset: Dataset,
    params: EngineParams,
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
    *,
    threads: int = ENGINE_THREADS,
) -> pd.DataFrame:
    """Reconcile one dataset as of `as_of` (Unix seconds).

    Returns one row per outcome with OUTCOME_COLUMNS (spec section 7's columns, then
    `order_id, utr, entity_created_at`), amounts int64 paise, sorted by entity_type then
    entity_id. Deterministic: the same dataset, parameters and as-of give the same frame,
    whatever the order of the input rows, and whatever `threads` is.

    pricing: the merchant's contracted pricing plans (core.books.pricing); when given, a
    payment charged more than its plan gets FEE_OVERCHARGED (core.engine.fees). Without
    them the outcomes are exactly the spec's.

    threads: 1 runs everything on the calling thread; 2 (the default) also uses one
    worker thread for the payments' key lookup, the payment ids' sort and the outcome
    columns' text takes, while the calling thread runs the checkers.
    """
    ctx = Context.build(dataset, params, int(as_of))
    if threads <= 1:
        return _reconcile(ctx, pricing, None)
    with ThreadPoolExecutor(threads - 1, thread_name_prefix="engine") as pool:
        return _reconcile(ctx, pricing, pool)


def _reconcile(
    ctx: Context, pricing: tuple[PricingPlan, ...], pool: Executor | None
) -> pd.DataFrame:
    dataset = ctx.dataset
    known: Callable[[], KnownRows] | None = None
    source_orders: dict[int, Callable[[], IntArray]] = {}
    if pool is not None:
        # Started first: the two biggest Arrow calls that need nothing the checkers make.
        prepare_payment_rows(ctx)
        known = pool.submit(payment_rows, ctx).result
        ids = ctx.text(dataset.payments, "id")
        source_orders[id(ids)] = pool.submit(sort_text, ids).result
    refunds, unknown_refund_rows = check_refunds(ctx)
    transfers, unknown_transfer_rows = check_transfers(ctx)
    links = link_bank(ctx) if dataset.has_bank_statement else None
    settlements = check_settlements(ctx, links)
    disputes = check_disputes(ctx)
    instant = check_instant_settlements(ctx, links)
    bank_lines = check_bank_lines(ctx, links) if links is not None else None
    payments, unknown_payment_rows = check_payments(ctx, known, pool)
    orphans = check_orphan_rows(
        ctx,
        np.sort(np.concatenate([unknown_payment_rows, unknown_refund_rows, unknown_transfer_rows])),
    )
    parts: list[Part] = [payments, refunds, orphans, settlements, disputes, transfers, instant]
    if bank_lines is not None:
        parts.append(bank_lines)
    outcomes = assemble(parts, pool, source_orders)
    if pricing:
        outcomes = check_fees(outcomes, dataset, pricing)
    return outcomes
