"""Contracted pricing (core.books.pricing, core.engine.fees): each payment's fee against the
plan in force when it was captured; overcharges are FEE_OVERCHARGED only when a plan is
given, so runs without one are unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from core.audit import AuditFilter, query
from core.books.pricing import (
    PricingPlan,
    PricingRule,
    fee_check,
    overcharge_summary,
    overcharged,
)
from core.books.store import pricing_plans, save_pricing_plan
from core.dataset import PAYMENT_COLUMNS, Dataset
from core.db import connect
from core.engine import EngineParams, reconcile
from core.engine.codes import FEE_OVERCHARGED
from core.pipeline import load_folder, reconcile_database, reconcile_folder_into_db
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import ts

AS_OF = ts("2026-06-30T23:59:59+05:30")
# The benchmark's prices (core/benchmark/world.py): UPI free, cards 1.70%, netbanking
# 1.60%, wallets 1.70%, EMI 2.10%, international 2.50%, GST 18%.
BENCHMARK_RULES = (
    PricingRule("upi", 0),
    PricingRule("card", 170),
    PricingRule("netbanking", 160),
    PricingRule("wallet", 170),
    PricingRule("emi", 210),
    PricingRule("international", 250),
)


def _payments(rows: list[dict[str, object]]) -> Dataset:
    base = {
        "currency": "INR",
        "status": "captured",
        "captured": True,
        "amount_refunded": 0,
        "international": False,
        "created_at": ts("2026-06-10T10:00"),
    }
    frame = pd.DataFrame([{**base, **r} for r in rows], columns=list(PAYMENT_COLUMNS))
    return Dataset(payments=frame.astype(PAYMENT_COLUMNS))


def test_plan_fee_is_percent_plus_fixed_with_18_percent_gst_rounded_half_up() -> None:
    plan = PricingPlan(1, 0, (PricingRule("card", 199, 300),))
    # 1,234.56 at 1.99% = 2456.7744 -> 2457 paise, + 3.00 fixed = 2757; GST 496.26 -> 496
    data = _payments([{"id": "pay_A", "amount": 123456, "method": "card", "fee": 3253, "tax": 496}])
    (row,) = fee_check(data, (plan,)).to_dict("records")
    assert (row["fee_plan"], row["tax_plan"], row["overcharge"]) == (3253, 496, 0)


def test_a_paisa_of_rounding_is_not_an_overcharge_but_two_are() -> None:
    plan = PricingPlan(1, 0, (PricingRule("upi", 100),))  # 1% of 1,000.00 = 1000 + 180 GST
    data = _payments(
        [
            {"id": "pay_ok", "amount": 100000, "method": "upi", "fee": 1181, "tax": 180},
            {"id": "pay_over", "amount": 100000, "method": "upi", "fee": 1182, "tax": 180},
        ]
    )
    assert list(overcharged(fee_check(data, (plan,)))["payment_id"]) == ["pay_over"]


def test_each_payment_is_priced_by_the_plan_in_force_when_captured() -> None:
    first = PricingPlan(1, ts("2026-01-01T00:00"), (PricingRule("card", 200),))
    second = PricingPlan(2, ts("2026-06-15T00:00"), (PricingRule("card", 150),))
    data = _payments(
        [
            {
                "id": "pay_old",
                "amount": 100000,
                "method": "card",
                "fee": 2360,
                "tax": 360,
                "created_at": ts("2026-06-14T23:00"),
            },
            {
                "id": "pay_new",
                "amount": 100000,
                "method": "card",
                "fee": 2360,
                "tax": 360,
                "created_at": ts("2026-06-15T09:00"),
            },
        ]
    )
    check = fee_check(data, (second, first)).set_index("payment_id")
    assert check.loc["pay_old", "plan_version"] == 1 and check.loc["pay_old", "overcharge"] == 0
    assert check.loc["pay_new", "plan_version"] == 2
    assert check.loc["pay_new", "overcharge"] == 2360 - 1770
    summary = overcharge_summary(check.reset_index())
    assert summary.to_dict("records") == [
        {"month": "2026-06", "method_class": "card", "payments": 1, "overcharge": 590}
    ]


def test_without_a_plan_the_engine_is_unchanged_on_the_spec_example() -> None:
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    plain = reconcile(dataset, EngineParams(), AS_OF)
    assert plain.equals(reconcile(dataset, EngineParams(), AS_OF, ()))
    assert FEE_OVERCHARGED not in set(plain["reason_codes"].str.split(";").explode())


def test_with_a_plan_a_clean_payment_charged_more_becomes_fee_overcharged() -> None:
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    free = PricingPlan(
        1,
        0,
        tuple(
            PricingRule(m, 0)
            for m in ("upi", "card", "netbanking", "wallet", "emi", "international")
        ),
    )
    plain = reconcile(dataset, EngineParams(), AS_OF).set_index(["entity_type", "entity_id"])
    priced = reconcile(dataset, EngineParams(), AS_OF, (free,)).set_index(
        ["entity_type", "entity_id"]
    )
    assert plain.index.equals(priced.index)
    flagged = priced[priced["reason_codes"].str.contains(FEE_OVERCHARGED)]
    assert len(flagged) > 0
    was_matched = flagged[plain.loc[flagged.index, "status"] == "MATCHED"]
    assert (was_matched["status"] == "EXCEPTION").all()
    assert (was_matched["reason_code"] == FEE_OVERCHARGED).all()
    assert (was_matched["exposure_class"] == "amount_at_risk").all()
    assert (was_matched["exposure_amount"] == was_matched["actual_amount"]).all()  # plan fee 0
    outranked = flagged[plain.loc[flagged.index, "reason_code"] == "AMOUNT_MISMATCH"]
    assert (outranked["reason_code"] == "AMOUNT_MISMATCH").all()
    untouched = priced.index.difference(flagged.index)
    assert priced.loc[untouched].equals(plain.loc[untouched])


def test_a_payment_awaiting_its_whole_amount_keeps_that_code_over_a_fee_overcharge() -> None:
    # An independent walkthrough: a late ₹7,777 payment with no recon row showed as
    # FEE_OVERCHARGED with ₹27.52 at risk, its unsettled ₹7,777 out of the queue's exposure.
    # A code that carries the payment's whole amount (MISSING_RECONCILIATION_RECORD,
    # MISSING_SETTLEMENT) stays primary; the overcharge is listed after it.
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    free = PricingPlan(1, 0, tuple(PricingRule(m, 0) for m in ("upi", "card", "netbanking")))
    key = ["entity_type", "entity_id"]
    plain = reconcile(dataset, EngineParams(), AS_OF).set_index(key)
    priced = reconcile(dataset, EngineParams(), AS_OF, (free,)).set_index(key)
    whole = plain["reason_code"].isin(["MISSING_RECONCILIATION_RECORD", "MISSING_SETTLEMENT"])
    charged = priced["reason_codes"].str.contains(FEE_OVERCHARGED)
    both = priced[whole & charged]
    assert len(both) > 0, "the spec example holds such a payment"
    for column in ("status", "reason_code", "exposure_class", "exposure_amount"):
        assert both[column].equals(plain.loc[both.index, column])
    assert (both["exposure_amount"] > 0).all()
    for index, codes in both["reason_codes"].items():
        listed = codes.split(";")
        assert listed[0] == plain.at[index, "reason_code"]
        assert listed[1] == FEE_OVERCHARGED


def test_on_the_benchmark_the_contracted_plan_flags_exactly_the_rows_that_charge_more(
    benchmark_5k: Path,
) -> None:
    # The rows that deduct more than their payment's fee, and the payments the benchmark
    # charged above the plan on both (core.benchmark.fees, labelled fee_overcharged).
    dataset = load_folder(benchmark_5k).dataset
    plan = PricingPlan(1, 0, BENCHMARK_RULES)
    over = set(overcharged(fee_check(dataset, (plan,)))["payment_id"])
    pay = dataset.payments.set_index("id")
    rows = dataset.recon[dataset.recon["type"] == "payment"].drop_duplicates("entity_id")
    rows = rows[rows["entity_id"].isin(pay.index)]
    higher = rows[rows["fee"].to_numpy() > pay.loc[rows["entity_id"], "fee"].to_numpy() + 1]
    labels = pd.read_csv(benchmark_5k / "ground_truth.csv", dtype=str, keep_default_na=False)
    planted = set(labels.loc[labels["scenario"] == "payment/fee_overcharged", "entity_id"])
    assert len(higher) > 0 and len(planted) > 0
    assert over == set(higher["entity_id"]) | planted


def test_a_saved_plan_is_versioned_audited_idempotent_and_used_by_the_next_run(
    benchmark_5k: Path, db_url: str
) -> None:
    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, benchmark_5k, params=EngineParams(), as_of=AS_OF)
        first = save_pricing_plan(
            conn,
            effective_from=0,
            rules=BENCHMARK_RULES,
            actor="admin@example.com",
            request_id="req-1",
        )
        again = save_pricing_plan(
            conn,
            effective_from=0,
            rules=BENCHMARK_RULES,
            actor="admin@example.com",
            request_id="req-1",
        )
        dearer = tuple(PricingRule(r.method, max(r.percent_bp - 10, 0)) for r in BENCHMARK_RULES)
        second = save_pricing_plan(
            conn,
            effective_from=ts("2026-06-01T00:00"),
            rules=dearer,
            actor="admin@example.com",
            request_id="req-2",
        )
        assert (first, again, second) == (1, 1, 2)
        assert [p.version for p in pricing_plans(conn)] == [1, 2]
        audited = query(conn, AuditFilter(action="pricing_plan_saved"))
        assert len(audited) == 2
        result = reconcile_database(conn, EngineParams(), AS_OF, "files")
    finally:
        conn.close()
    flagged = result.outcomes[result.outcomes["reason_codes"].str.contains(FEE_OVERCHARGED)]
    assert len(flagged) > 0


def test_a_plan_without_rules_is_refused(db_url: str) -> None:
    conn: sqlite3.Connection = connect(db_url)
    try:
        with pytest.raises(ValueError):
            save_pricing_plan(conn, effective_from=0, rules=(), actor="a", request_id="r")
        with pytest.raises(ValueError):
            PricingRule("crypto", 100)
    finally:
        conn.close()


def test_pricing_cli_stores_a_version_once_per_request(db_url: str, tmp_path: Path) -> None:
    import json

    from core.__main__ import main

    rules = tmp_path / "plan.json"
    rules.write_text(json.dumps([{"method": "card", "percent_bp": 190}]), encoding="utf-8")
    args = ["pricing", "--db", str(db_url), "--rules", str(rules), "--from", "2026-04-01"]
    assert main([*args, "--actor", "cfo@example.com"]) == 0
    assert main([*args, "--actor", "cfo@example.com"]) == 0
    conn = connect(db_url)
    try:
        (plan,) = pricing_plans(conn)
    finally:
        conn.close()
    assert plan.effective_from == ts("2026-04-01T00:00")
    assert plan.rules == (PricingRule("card", 190, 0),)


def test_the_benchmarks_plan_prices_the_benchmark_only_never_the_merchants_own_data(
    db_url: str,
) -> None:
    """A new user's walkthrough: after replacing the benchmark with its own files, every
    UPI payment was FEE_OVERCHARGED against a plan the user never set (the benchmark's,
    stored by the first start, UPI at 0%). That plan applies while the data are the
    benchmark's; a plan a person saves applies to the merchant's data."""
    from core.books.store import BENCHMARK_PLAN_ACTOR

    conn = connect(db_url)
    try:
        reconcile_folder_into_db(conn, SPEC_EXAMPLE / "dataset", params=EngineParams(), as_of=AS_OF)
        with conn:
            conn.execute("UPDATE imports SET source = 'benchmark'")  # as the first start stores
        save_pricing_plan(
            conn,
            effective_from=0,
            rules=BENCHMARK_RULES,
            actor=BENCHMARK_PLAN_ACTOR,
            request_id="benchmark-plan",
        )

        def overcharged() -> int:
            run = reconcile_database(conn, EngineParams(), AS_OF, "files")
            return int(
                conn.execute(
                    "SELECT count(*) FROM outcomes WHERE run_id = ? AND reason_codes LIKE ?",
                    (run.run_id, f"%{FEE_OVERCHARGED}%"),
                ).fetchone()[0]
            )

        assert [p.version for p in pricing_plans(conn)] == [1]
        on_benchmark = overcharged()
        with conn:  # the merchant's own files replaced the benchmark
            conn.execute("UPDATE imports SET source = 'files'")
        assert pricing_plans(conn) == ()
        on_own_data = overcharged()
        save_pricing_plan(
            conn, effective_from=0, rules=BENCHMARK_RULES, actor="cfo@example.com", request_id="own"
        )
        assert [p.version for p in pricing_plans(conn)] == [2]
        with_own_plan = overcharged()
    finally:
        conn.close()

    assert on_benchmark > 0 and on_own_data == 0 and with_own_plan == on_benchmark
