"""Properties of the money-model rules (docs/engine.md, beyond the spec): a payment in
another currency is judged in INR only, and a payment settled by someone else never waits
for a Razorpay settlement."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from core.engine import EngineParams, reconcile
from tests.engine_support import AS_OF, build, change, drop, outcome, ts, world

SETTLEMENT_CODES = {"MISSING_SETTLEMENT", "TIMING_WINDOW_EXCEEDED", "MISSING_RECONCILIATION_RECORD"}


@settings(max_examples=30, deadline=None)
@given(
    minor=st.integers(min_value=1, max_value=10**9),
    base=st.integers(min_value=1_000, max_value=10**10),
    fee=st.integers(min_value=0, max_value=999),
    currency=st.sampled_from(["USD", "JPY", "KWD", "EUR", "bhd"]),
)
def test_foreign_payment_is_judged_in_inr_whatever_its_own_amount(
    minor: int, base: int, fee: int, currency: str
) -> None:
    tables = copy.deepcopy(world())
    change(
        "payments",
        {"id": "pay_P1"},
        amount=minor,
        currency=currency,
        base_amount=base,
        fee=fee,
        tax=0,
    )(tables)
    change("recon", {"entity_id": "pay_P1"}, amount=base, credit=base - fee, fee=fee, tax=0)(tables)
    got = outcome(reconcile(build(tables), EngineParams(), AS_OF), "payment", "pay_P1")
    assert (got["status"], got["expected_amount"], got["actual_amount"]) == (
        "MATCHED",
        base - fee,
        base - fee,
    )


@settings(max_examples=30, deadline=None)
@given(
    who=st.text(min_size=1, max_size=12).filter(
        lambda s: s.strip().lower() not in ("", "razorpay")
    ),
    on_row=st.booleans(),
    fault=st.sampled_from(["none", "no_row", "unknown_settlement", "late"]),
)
def test_settled_by_someone_else_never_waits_for_razorpay(
    who: str, on_row: bool, fault: str
) -> None:
    tables = copy.deepcopy(world())
    p1 = {"entity_id": "pay_P1"}
    if not on_row or fault == "no_row":  # no row: only the payment can say it
        change("payments", {"id": "pay_P1"}, settled_by=who)(tables)
    else:
        change("recon", p1, settled_by=who)(tables)
    if fault == "no_row":
        drop("recon", **p1)(tables)
    elif fault == "unknown_settlement":
        change("recon", p1, settlement_id="setl_GONE")(tables)
    elif fault == "late":
        change("recon", p1, settled_at=ts("2026-06-20"))(tables)
    got = outcome(reconcile(build(tables), EngineParams(), AS_OF), "payment", "pay_P1")
    assert not SETTLEMENT_CODES & set((got["reason_codes"] or "").split(";"))
    assert (got["status"], got["match_method"]) == ("MATCHED", "direct")
