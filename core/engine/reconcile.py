"""`reconcile(dataset, params, as_of)`: every entity's outcome (spec sections 4-7)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.books.pricing import PricingPlan
from core.dataset import Dataset
from core.engine.bank import check_bank_lines, check_settlements, link_bank
from core.engine.context import Context
from core.engine.disputes import check_disputes
from core.engine.entities import check_orphan_rows, check_payments, check_refunds
from core.engine.fees import check_fees
from core.engine.instant import check_instant_settlements
from core.engine.params import EngineParams
from core.engine.part import Part, assemble
from core.engine.transfers import check_transfers


def reconcile(
    dataset: Dataset,
    params: EngineParams,
    as_of: int,
    pricing: tuple[PricingPlan, ...] = (),
) -> pd.DataFrame:
    """Reconcile one dataset as of `as_of` (Unix seconds).

    Returns one row per outcome with OUTCOME_COLUMNS (spec section 7's columns, then
    `order_id, utr, entity_created_at`), amounts int64 paise, sorted by entity_type then
    entity_id. Deterministic: the same dataset, parameters and as-of give the same frame,
    whatever the order of the input rows.

    pricing: the merchant's contracted pricing plans (core.books.pricing); when given, a
    payment charged more than its plan gets FEE_OVERCHARGED (core.engine.fees). Without
    them the outcomes are exactly the spec's.
    """
    ctx = Context.build(dataset, params, int(as_of))
    payments, unknown_payment_rows = check_payments(ctx)
    refunds, unknown_refund_rows = check_refunds(ctx)
    transfers, unknown_transfer_rows = check_transfers(ctx)
    orphans = check_orphan_rows(
        ctx,
        np.sort(np.concatenate([unknown_payment_rows, unknown_refund_rows, unknown_transfer_rows])),
    )
    links = link_bank(ctx) if dataset.has_bank_statement else None
    parts: list[Part] = [payments, refunds, orphans, check_settlements(ctx, links)]
    parts.append(check_disputes(ctx))
    parts += [transfers, check_instant_settlements(ctx, links)]
    if links is not None:
        parts.append(check_bank_lines(ctx, links))
    outcomes = assemble(parts)
    if pricing:
        outcomes = check_fees(outcomes, dataset, pricing)
    return outcomes
