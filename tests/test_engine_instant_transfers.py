"""Table-driven: instant settlements and Route transfers (docs/engine.md, *Razorpay's money
model beyond the spec*), each code and pending state, from `engine_support.world()` plus an
instant settlement (paid by an IMPS credit whose narration holds the payout UTR) and a
Route transfer settled in S1."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pandas as pd
import pytest

from core.dataset import (
    INSTANT_PAYOUT_COLUMNS,
    INSTANT_SETTLEMENT_COLUMNS,
    TRANSFER_COLUMNS,
    Dataset,
)
from core.engine import EngineParams, reconcile
from tests.engine_support import (
    AS_OF,
    Tables,
    add,
    both,
    build,
    change,
    drop,
    duplicate,
    find,
    outcome,
    ts,
    world,
)

PUTR = "KKBKH26161012345"  # the instant payout's UTR
INST = ("instant_settlement", "setlod_I1")
IMPS_LINE = ("bank_entry", "bank_statement.csv:6")
TRF = ("transfer", "trf_T1")
T1 = {"entity_id": "trf_T1"}
PAYOUT = {"id": "setlodp_P1"}
TRANSFER = {"id": "trf_T1"}
IMPS = {"reference": "IMPSREF77"}
INSTANT_DAY_NIGHT = ts("2026-06-10T23:00")  # the payout's credit is due the next working day
TUESDAY = ts("2026-06-02T10:00")  # trf_T1 is due Wednesday (T+2), overdue after Thursday

COLUMNS = {
    "instant_settlements": INSTANT_SETTLEMENT_COLUMNS,
    "instant_payouts": INSTANT_PAYOUT_COLUMNS,
    "transfers": TRANSFER_COLUMNS,
}


def _frame(table: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    columns = COLUMNS[table]
    data = pd.DataFrame([{c: r.get(c) for c in columns} for r in rows], columns=list(columns))
    return data.astype(columns)


def full_world() -> Tables:
    """world() + setlod_I1 (payout setlodp_P1 paid by an IMPS credit naming its UTR only in
    the narration; payment pay_P2 settled in it) + trf_T1 (a transfer row in S1)."""
    tables = copy.deepcopy(world())
    tables["payments"].append(
        {"id": "pay_P2", "amount": 50_000, "fee": 0, "created_at": ts("2026-06-08T10:00")}
    )
    tables["recon"].append(
        {
            "entity_id": "pay_P2",
            "type": "payment",
            "amount": 50_000,
            "credit": 50_000,
            "created_at": ts("2026-06-08T10:00"),
            "settled_at": ts("2026-06-10T10:00"),
            "settlement_id": "setlod_I1",
        }
    )
    tables["instant_settlements"] = [
        {
            "id": "setlod_I1",
            "amount_requested": 50_000,
            "amount_settled": 49_500,
            "amount_pending": 0,
            "amount_reversed": 0,
            "fees": 500,
            "tax": 76,
            "currency": "INR",
            "status": "processed",
            "created_at": ts("2026-06-10T10:00"),
        }
    ]
    tables["instant_payouts"] = [
        {
            "id": "setlodp_P1",
            "instant_settlement_id": "setlod_I1",
            "amount": 50_000,
            "amount_settled": 49_500,
            "fees": 500,
            "tax": 76,
            "utr": PUTR,
            "status": "processed",
            "created_at": ts("2026-06-10T10:00"),
            "processed_at": ts("2026-06-10T10:05"),
        }
    ]
    tables["bank"].append(
        {
            "txn_date": "2026-06-10",
            "narration": f"IMPS/P2A/{PUTR}/RAZORPAY/INSTANT",
            "reference": "IMPSREF77",
            "credit": 49_500,
        }
    )
    # trf_T1: ₹100 to a linked account from S1, fee ₹1.18 (GST inside); S1 nets it.
    tables["recon"].append(
        {
            "entity_id": "trf_T1",
            "type": "transfer",
            "amount": 10_000,
            "fee": 118,
            "tax": 18,
            "debit": 10_118,
            "created_at": ts("2026-06-01T12:00"),
            "settled_at": ts("2026-06-03T12:00"),
            "settlement_id": "setl_S1",
            "payment_id": "pay_P1",
        }
    )
    find(tables, "settlements", id="setl_S1")["amount"] = 48_000 - 10_118
    find(tables, "bank", reference="AXISCN0000000001")["credit"] = 48_000 - 10_118
    tables["transfers"] = [
        {
            "id": "trf_T1",
            "source": "pay_P1",
            "recipient": "acc_L1",
            "amount": 10_000,
            "currency": "INR",
            "amount_reversed": 0,
            "status": "processed",
            "on_hold": False,
            "created_at": ts("2026-06-01T12:00"),
        }
    ]
    return tables


def build_all(tables: Tables, *, bank: bool = True) -> Dataset:
    base = build(tables, bank=bank)
    return dataclasses.replace(
        base, **{name: _frame(name, tables.get(name, [])) for name in COLUMNS}
    )


REVERSAL = {
    "entity_id": "rvrsl_1",
    "type": "reversal",
    "amount": 4_000,
    "credit": 4_000,
    "transfer_id": "trf_T1",
    "created_at": ts("2026-06-02T12:00"),
    "settled_at": ts("2026-06-03T12:00"),
    "settlement_id": "setl_S1",
}

CASES: list[tuple[str, Any, int, tuple[str, str], dict[str, Any]]] = [
    # --- instant settlements -----------------------------------------------------------
    (
        "instant_matched_by_imps_narration",
        lambda t: None,
        AS_OF,
        INST,
        {
            "status": "MATCHED",
            "reason_codes": "",
            "match_method": "utr",
            "expected_amount": 49_500,
            "actual_amount": 49_500,
            "settlement_id": "setlod_I1",
            "utr": PUTR,
        },
    ),
    (
        "instant_credit_is_a_matched_bank_entry",
        lambda t: None,
        AS_OF,
        IMPS_LINE,
        {
            "status": "MATCHED",
            "settlement_id": "setlod_I1",
            "match_method": "utr",
            "expected_amount": 49_500,
            "actual_amount": 49_500,
            "utr": PUTR,
        },
    ),
    (
        "instant_payout_without_amount_settled_is_amount_minus_fees",
        change("instant_payouts", PAYOUT, amount_settled=None),
        AS_OF,
        INST,
        {"status": "MATCHED", "expected_amount": 49_500},
    ),
    (
        "instant_short_credit",
        change("bank", IMPS, credit=49_000),
        AS_OF,
        INST,
        {
            "status": "EXCEPTION",
            "reason_codes": "BANK_UTR_AMOUNT_MISMATCH",
            "exposure_class": "amount_at_risk",
            "expected_amount": 49_500,
            "actual_amount": 49_000,
            "exposure_amount": 500,
        },
    ),
    (
        "instant_duplicate_credit",
        duplicate("bank", IMPS, line_no=7, id="bank_statement.csv:7"),
        AS_OF,
        INST,
        {
            "status": "EXCEPTION",
            "reason_code": "DUPLICATE_BANK_CREDIT",
            "exposure_class": "amount_at_risk",
            "actual_amount": 99_000,
        },
    ),
    (
        "instant_missing_bank_entry",
        drop("bank", **IMPS),
        AS_OF,
        INST,
        {
            "status": "EXCEPTION",
            "reason_codes": "MISSING_BANK_ENTRY",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 49_500,
            "actual_amount": 0,
            "exposure_amount": 49_500,
        },
    ),
    (
        "instant_awaiting_bank_credit",
        drop("bank", **IMPS),
        INSTANT_DAY_NIGHT,
        INST,
        {"status": "PENDING", "reason_code": "AWAITING_BANK_CREDIT", "actual_amount": 0},
    ),
    (
        "instant_no_processed_payout",
        both(drop("bank", **IMPS), change("instant_payouts", PAYOUT, status="initiated")),
        AS_OF,
        INST,
        {"status": "PENDING", "reason_code": "AWAITING_SETTLEMENT"},
    ),
    (
        "instant_payout_reversed",
        both(
            drop("bank", **IMPS),
            change("instant_payouts", PAYOUT, status="reversed", amount_settled=None),
            change("instant_settlements", {"id": "setlod_I1"}, amount_reversed=50_000),
        ),
        AS_OF,
        INST,
        {
            "status": "EXCEPTION",
            "reason_codes": "INSTANT_PAYOUT_REVERSED",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 50_000,
            "actual_amount": 0,
            "exposure_amount": 50_000,
        },
    ),
    (
        "credit_for_a_reversed_payout_is_unmatched",
        change("instant_payouts", PAYOUT, status="reversed"),
        AS_OF,
        IMPS_LINE,
        {"status": "EXCEPTION", "reason_code": "UNMATCHED_BANK_CREDIT"},
    ),
    (
        "payment_settled_instantly_is_not_missing_settlement",
        lambda t: None,
        AS_OF,
        ("payment", "pay_P2"),
        {"status": "MATCHED", "settlement_id": "setlod_I1", "actual_amount": 50_000},
    ),
    (
        "regular_settlement_sum_leaves_out_instant_rows",
        lambda t: None,
        AS_OF,
        ("settlement", "setl_S1"),
        {"status": "MATCHED", "expected_amount": 37_882, "actual_amount": 37_882},
    ),
    (
        "regular_settlement_sum_mismatch_still_found",
        change("settlements", {"id": "setl_S1"}, amount=87_382),
        AS_OF,
        ("settlement", "setl_S1"),
        {
            "status": "EXCEPTION",
            "reason_code": "SETTLEMENT_SUM_MISMATCH",
            "expected_amount": 37_882,
            "actual_amount": 87_382,
        },
    ),
    # --- Route transfers with a transfers file --------------------------------------------
    (
        "transfer_matched",
        lambda t: None,
        AS_OF,
        TRF,
        {
            "status": "MATCHED",
            "expected_amount": 10_118,
            "actual_amount": 10_118,
            "settlement_id": "setl_S1",
            "utr": None,
        },
    ),
    (
        "transfer_amount_mismatch",
        change("recon", T1, debit=10_200),
        AS_OF,
        TRF,
        {
            "status": "EXCEPTION",
            "reason_codes": "TRANSFER_AMOUNT_MISMATCH",
            "exposure_class": "amount_at_risk",
            "expected_amount": 10_118,
            "actual_amount": 10_200,
            "exposure_amount": 82,
        },
    ),
    (
        "transfer_duplicate_row",
        duplicate("recon", T1),
        AS_OF,
        TRF,
        {
            "status": "EXCEPTION",
            "reason_codes": "DUPLICATE_RECONCILIATION_RECORD",
            "expected_amount": 10_118,
            "actual_amount": 20_236,
            "exposure_amount": 10_118,
        },
    ),
    (
        "transfer_reversal_matches",
        both(
            add("recon", REVERSAL),
            change("transfers", TRANSFER, amount_reversed=4_000, status="partially_reversed"),
        ),
        AS_OF,
        TRF,
        {"status": "MATCHED"},
    ),
    (
        "transfer_reversal_mismatch",
        both(
            add("recon", REVERSAL),
            change("transfers", TRANSFER, amount_reversed=5_000, status="partially_reversed"),
        ),
        AS_OF,
        TRF,
        {
            "status": "EXCEPTION",
            "reason_codes": "TRANSFER_REVERSAL_MISMATCH",
            "expected_amount": 5_000,
            "actual_amount": 4_000,
            "exposure_amount": 1_000,
        },
    ),
    (
        "transfer_reversed_without_reversal_rows",
        change("transfers", TRANSFER, amount_reversed=10_000, status="reversed"),
        AS_OF,
        TRF,
        {"status": "EXCEPTION", "reason_code": "TRANSFER_REVERSAL_MISMATCH"},
    ),
    (
        "reversal_row_by_type_and_entity_id",
        both(
            add("recon", {**REVERSAL, "entity_id": "trf_T1", "transfer_id": None}),
            change("transfers", TRANSFER, amount_reversed=4_000),
        ),
        AS_OF,
        TRF,
        {"status": "MATCHED"},
    ),
    (
        "transfer_missing_row",
        drop("recon", **T1),
        AS_OF,
        TRF,
        {
            "status": "EXCEPTION",
            "reason_codes": "MISSING_RECONCILIATION_RECORD",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 10_000,
            "exposure_amount": 10_000,
        },
    ),
    (
        "transfer_awaiting_settlement",
        drop("recon", **T1),
        TUESDAY,
        TRF,
        {"status": "PENDING", "reason_code": "AWAITING_SETTLEMENT"},
    ),
    (
        "transfer_row_with_unknown_id",
        add(
            "recon",
            {"entity_id": "trf_GHOST", "type": "transfer", "amount": 900, "debit": 900},
        ),
        AS_OF,
        ("recon_row", "trf_GHOST"),
        {
            "status": "EXCEPTION",
            "reason_codes": "PAYMENT_ID_MISMATCH",
            "exposure_class": "structural",
            "actual_amount": -900,
        },
    ),
]


@pytest.mark.parametrize(
    ("mutation", "as_of", "entity", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_outcome(
    mutation: Any, as_of: int, entity: tuple[str, str], expected: dict[str, Any]
) -> None:
    tables = full_world()
    mutation(tables)
    outcomes = reconcile(build_all(tables), EngineParams(), as_of)
    got = outcome(outcomes, *entity)
    assert {k: got[k] for k in expected} == expected
    assert got["difference"] == got["actual_amount"] - got["expected_amount"]


def test_full_world_is_all_matched() -> None:
    outcomes = reconcile(build_all(full_world()), EngineParams(), AS_OF)
    assert set(outcomes["status"]) == {"MATCHED"}, outcomes[outcomes["status"] != "MATCHED"]
    assert "UNMATCHED_BANK_CREDIT" not in set(outcomes["reason_code"])


def test_failed_transfer_gets_no_outcome() -> None:
    tables = full_world()
    change("transfers", TRANSFER, status="failed")(tables)
    drop("recon", **T1)(tables)
    outcomes = reconcile(build_all(tables), EngineParams(), AS_OF)
    assert "trf_T1" not in set(outcomes["entity_id"])


def test_instant_without_bank_statement_is_matched_no_bank_statement() -> None:
    outcomes = reconcile(build_all(full_world(), bank=False), EngineParams(), AS_OF)
    got = outcome(outcomes, *INST)
    assert (got["status"], got["match_method"]) == ("MATCHED", "no_bank_statement")
    assert "bank_entry" not in set(outcomes["entity_type"])


@pytest.mark.parametrize(
    ("row", "status", "reason"),
    [
        ({}, "MATCHED", ""),
        ({"on_hold": True, "settled": False, "settlement_id": None}, "PENDING", "ON_HOLD"),
        ({"settled": False, "settlement_id": None}, "PENDING", "AWAITING_SETTLEMENT"),
        ({"settlement_id": "setlod_I1"}, "MATCHED", ""),
    ],
    ids=["settled", "held", "unsettled", "in_instant_settlement"],
)
def test_transfer_rows_without_transfers_file(
    row: dict[str, Any], status: str, reason: str
) -> None:
    tables = full_world()
    tables["transfers"] = []
    change("recon", T1, **row)(tables)
    outcomes = reconcile(build_all(tables), EngineParams(), AS_OF)
    got = outcome(outcomes, *TRF)
    assert (got["status"], got["reason_code"]) == (status, reason)
    assert (got["expected_amount"], got["actual_amount"]) == (10_118, 10_118)
    assert "recon_row" not in set(outcomes["entity_type"])


def test_unknown_transfer_row_without_file_is_a_transfer_outcome_not_an_orphan() -> None:
    tables = full_world()
    tables["transfers"] = []
    add("recon", {"entity_id": "trf_GHOST", "type": "transfer", "amount": 9, "debit": 9})(tables)
    outcomes = reconcile(build_all(tables), EngineParams(), AS_OF)
    assert outcome(outcomes, "transfer", "trf_GHOST")["reason_code"] == "AWAITING_SETTLEMENT"


def test_outcomes_do_not_depend_on_row_order() -> None:
    tables = full_world()
    duplicate("recon", T1, settlement_id="setl_S0")(tables)
    first = reconcile(build_all(tables), EngineParams(), AS_OF)
    for name in ("recon", "instant_payouts"):
        tables[name].reverse()
    second = reconcile(build_all(tables), EngineParams(), AS_OF)
    pd.testing.assert_frame_equal(first, second)
