"""Table-driven: each reason code (spec section 5), each priority conflict, and the exposure
class and amount (spec section 6) each code produces.

Every case starts from `engine_support.world()` (all MATCHED), applies one mutation and
checks the outcome of one entity.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from core.engine import EngineParams, reconcile
from tests.engine_support import (
    AS_OF,
    UTR1,
    add,
    both,
    build,
    change,
    drop,
    duplicate,
    outcome,
    ts,
    world,
)

P1 = {"entity_id": "pay_P1"}
R1 = {"entity_id": "rfnd_R1"}
PAY = ("payment", "pay_P1")
REF = ("refund", "rfnd_R1")
SETL = ("settlement", "setl_S1")
LINE = ("bank_entry", "bank_statement.csv:2")
THURSDAY_NOON = ts("2026-06-04T12:00")  # P1 and R1 due Wednesday, overdue after Thursday
WEDNESDAY_NIGHT = ts("2026-06-03T23:00")  # S1's bank credit is due Thursday

CASES: list[tuple[str, Any, int, tuple[str, str], dict[str, Any]]] = [
    # --- captured payments --------------------------------------------------------------
    (
        "payment_matched",
        lambda t: None,
        AS_OF,
        PAY,
        {
            "status": "MATCHED",
            "reason_code": "",
            "reason_codes": "",
            "exposure_class": "",
            "exposure_amount": 0,
            "expected_amount": 98_000,
            "actual_amount": 98_000,
            "settlement_id": "setl_S1",
            "utr": UTR1,
            "order_id": "order_1",
        },
    ),
    (
        "duplicate_reconciliation_record",
        duplicate("recon", P1),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "DUPLICATE_RECONCILIATION_RECORD",
            "reason_codes": "DUPLICATE_RECONCILIATION_RECORD",
            "exposure_class": "amount_at_risk",
            "expected_amount": 98_000,
            "actual_amount": 196_000,
            "exposure_amount": 98_000,
        },
    ),
    (
        "wrong_mapping_other_payment",
        change("recon", P1, payment_id="pay_OTHER"),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "WRONG_MAPPING",
            "reason_codes": "WRONG_MAPPING",
            "exposure_class": "structural",
            "exposure_amount": 0,
        },
    ),
    (
        "wrong_mapping_other_order",
        change("recon", P1, order_id="order_OTHER"),
        AS_OF,
        PAY,
        {"status": "EXCEPTION", "reason_code": "WRONG_MAPPING", "exposure_class": "structural"},
    ),
    (
        "no_order_on_row_is_not_wrong_mapping",
        change("recon", P1, order_id=None),
        AS_OF,
        PAY,
        {"status": "MATCHED"},
    ),
    (
        "amount_mismatch",
        change("recon", P1, amount=99_000),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "AMOUNT_MISMATCH",
            "reason_codes": "AMOUNT_MISMATCH",
            "exposure_class": "amount_at_risk",
            "expected_amount": 100_000,
            "actual_amount": 99_000,
            "difference": -1_000,
            "exposure_amount": 1_000,
        },
    ),
    (
        "settlement_amount_discrepancy",
        change("recon", P1, credit=97_500),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "SETTLEMENT_AMOUNT_DISCREPANCY",
            "reason_codes": "SETTLEMENT_AMOUNT_DISCREPANCY",
            "exposure_class": "amount_at_risk",
            "expected_amount": 98_000,
            "actual_amount": 97_500,
            "exposure_amount": 500,
        },
    ),
    (
        "fee_includes_gst_so_tax_is_not_deducted_again",
        change("recon", P1, credit=100_000 - 2_000 - 305),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "SETTLEMENT_AMOUNT_DISCREPANCY",
            "exposure_amount": 305,
        },
    ),
    (
        "payment_without_fee_is_checked_against_the_row_fee",
        change("payments", {"id": "pay_P1"}, fee=None, tax=None),
        AS_OF,
        PAY,
        {"status": "MATCHED", "expected_amount": 98_000},
    ),
    (
        "missing_settlement_unknown_id",
        change("recon", P1, settlement_id="setl_GONE"),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "MISSING_SETTLEMENT",
            "reason_codes": "MISSING_SETTLEMENT",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 98_000,
            "actual_amount": 0,
            "exposure_amount": 98_000,
        },
    ),
    (
        "missing_settlement_empty_id",
        change("recon", P1, settlement_id=None),
        AS_OF,
        PAY,
        {"status": "EXCEPTION", "reason_code": "MISSING_SETTLEMENT", "exposure_amount": 98_000},
    ),
    (
        "timing_window_exceeded",
        change("recon", P1, settled_at=ts("2026-06-05T10:00")),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "TIMING_WINDOW_EXCEEDED",
            "reason_codes": "TIMING_WINDOW_EXCEEDED",
            "exposure_class": "structural",
            "exposure_amount": 0,
        },
    ),
    (
        "settled_on_the_last_day_of_grace_is_not_late",
        change("recon", P1, settled_at=ts("2026-06-04T23:30")),
        AS_OF,
        PAY,
        {"status": "MATCHED"},
    ),
    (
        "missing_reconciliation_record",
        drop("recon", **P1),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "MISSING_RECONCILIATION_RECORD",
            "reason_codes": "MISSING_RECONCILIATION_RECORD",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 98_000,
            "actual_amount": 0,
            "exposure_amount": 98_000,
            "settlement_id": None,
        },
    ),
    (
        "pending_awaiting_settlement",
        drop("recon", **P1),
        THURSDAY_NOON,
        PAY,
        {
            "status": "PENDING",
            "reason_code": "AWAITING_SETTLEMENT",
            "reason_codes": "AWAITING_SETTLEMENT",
            "exposure_class": "",
            "exposure_amount": 0,
        },
    ),
    (
        "pending_on_hold",
        change("recon", P1, on_hold=True, settled=False, settlement_id=None, settled_at=None),
        AS_OF,
        PAY,
        {
            "status": "PENDING",
            "reason_code": "ON_HOLD",
            "reason_codes": "ON_HOLD",
            "exposure_class": "",
            "exposure_amount": 0,
            "actual_amount": 0,
        },
    ),
    (
        "on_hold_row_gets_no_missing_settlement_or_timing",
        change(
            "recon",
            P1,
            on_hold=True,
            settled=False,
            settlement_id="setl_GONE",
            settled_at=ts("2026-06-20"),
        ),
        AS_OF,
        PAY,
        {"status": "PENDING", "reason_code": "ON_HOLD"},
    ),
    (
        "on_hold_row_with_amount_mismatch_is_an_exception",
        change("recon", P1, on_hold=True, settled=False, settlement_id=None, amount=99_000),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "AMOUNT_MISMATCH",
            "reason_codes": "AMOUNT_MISMATCH",
        },
    ),
    (
        "released_hold_is_checked_normally",
        change("recon", P1, on_hold=True, settled=True, settlement_id=None),
        AS_OF,
        PAY,
        {"status": "EXCEPTION", "reason_code": "MISSING_SETTLEMENT"},
    ),
    (
        "status_mismatch",
        change("payments", {"id": "pay_P1"}, status="failed", captured=False),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "STATUS_MISMATCH",
            "reason_codes": "STATUS_MISMATCH",
            "exposure_class": "amount_at_risk",
            "expected_amount": 0,
            "actual_amount": 98_000,
            "exposure_amount": 98_000,
        },
    ),
    (
        "status_mismatch_authorized",
        change("payments", {"id": "pay_P1"}, status="authorized", captured=False),
        AS_OF,
        PAY,
        {"status": "EXCEPTION", "reason_code": "STATUS_MISMATCH"},
    ),
    (
        "refunded_status_counts_as_captured",
        change("payments", {"id": "pay_P1"}, status="refunded", captured=False),
        AS_OF,
        PAY,
        {"status": "MATCHED"},
    ),
    # --- priority conflicts: the primary is the first in priority, all are listed --------
    (
        "priority_duplicate_over_amount_mismatch",
        duplicate("recon", P1, amount=99_000),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "DUPLICATE_RECONCILIATION_RECORD",
            "reason_codes": "DUPLICATE_RECONCILIATION_RECORD;AMOUNT_MISMATCH",
            "exposure_class": "amount_at_risk",
        },
    ),
    (
        "priority_wrong_mapping_over_amount_mismatch",
        change("recon", P1, payment_id="pay_OTHER", amount=99_000),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "WRONG_MAPPING",
            "reason_codes": "WRONG_MAPPING;AMOUNT_MISMATCH",
            "exposure_class": "structural",
            "exposure_amount": 0,
        },
    ),
    (
        "priority_amount_mismatch_over_timing",
        change("recon", P1, amount=99_000, settled_at=ts("2026-06-08T10:00")),
        AS_OF,
        PAY,
        {
            "status": "EXCEPTION",
            "reason_code": "AMOUNT_MISMATCH",
            "reason_codes": "AMOUNT_MISMATCH;TIMING_WINDOW_EXCEEDED",
            "exposure_amount": 1_000,
        },
    ),
    (
        "amount_mismatch_excludes_settlement_amount_discrepancy",
        change("recon", P1, amount=99_000, credit=90_000),
        AS_OF,
        PAY,
        {"reason_code": "AMOUNT_MISMATCH", "reason_codes": "AMOUNT_MISMATCH"},
    ),
    (
        "priority_discrepancy_over_missing_settlement",
        change("recon", P1, credit=97_000, settlement_id="setl_GONE"),
        AS_OF,
        PAY,
        {
            "reason_code": "SETTLEMENT_AMOUNT_DISCREPANCY",
            "reason_codes": "SETTLEMENT_AMOUNT_DISCREPANCY;MISSING_SETTLEMENT",
            "exposure_class": "amount_at_risk",
            "exposure_amount": 1_000,
        },
    ),
    (
        "priority_missing_settlement_over_timing",
        change("recon", P1, settlement_id="setl_GONE", settled_at=ts("2026-06-08T10:00")),
        AS_OF,
        PAY,
        {
            "reason_code": "MISSING_SETTLEMENT",
            "reason_codes": "MISSING_SETTLEMENT;TIMING_WINDOW_EXCEEDED",
            "exposure_class": "awaiting_settlement",
            "exposure_amount": 98_000,
        },
    ),
    # --- refunds -----------------------------------------------------------------------
    (
        "refund_matched",
        lambda t: None,
        AS_OF,
        REF,
        {
            "status": "MATCHED",
            "expected_amount": 50_000,
            "actual_amount": 50_000,
            "settlement_id": "setl_S1",
            "order_id": "order_0",
        },
    ),
    (
        "refund_fee_is_part_of_the_debit",
        change("recon", R1, fee=100, debit=50_100),
        AS_OF,
        REF,
        {"status": "MATCHED", "expected_amount": 50_100},
    ),
    (
        "refund_duplicate_reconciliation_record",
        duplicate("recon", R1),
        AS_OF,
        REF,
        {
            "status": "EXCEPTION",
            "reason_code": "DUPLICATE_RECONCILIATION_RECORD",
            "exposure_class": "amount_at_risk",
            "expected_amount": 50_000,
            "actual_amount": 100_000,
            "exposure_amount": 50_000,
        },
    ),
    (
        "refund_wrong_mapping",
        change("recon", R1, payment_id="pay_P1"),
        AS_OF,
        REF,
        {
            "status": "EXCEPTION",
            "reason_code": "WRONG_MAPPING",
            "exposure_class": "structural",
            "exposure_amount": 0,
        },
    ),
    (
        "refund_row_without_payment_id_is_not_wrong_mapping",
        change("recon", R1, payment_id=None),
        AS_OF,
        REF,
        {"status": "MATCHED"},
    ),
    (
        "refund_amount_mismatch",
        change("recon", R1, debit=49_000),
        AS_OF,
        REF,
        {
            "status": "EXCEPTION",
            "reason_code": "REFUND_AMOUNT_MISMATCH",
            "reason_codes": "REFUND_AMOUNT_MISMATCH",
            "exposure_class": "amount_at_risk",
            "expected_amount": 50_000,
            "actual_amount": 49_000,
            "exposure_amount": 1_000,
        },
    ),
    (
        "refund_missing_reconciliation_record",
        drop("recon", **R1),
        AS_OF,
        REF,
        {
            "status": "EXCEPTION",
            "reason_code": "MISSING_RECONCILIATION_RECORD",
            "exposure_class": "awaiting_settlement",
            "exposure_amount": 50_000,
        },
    ),
    (
        "refund_pending_awaiting_settlement",
        drop("recon", **R1),
        THURSDAY_NOON,
        REF,
        {"status": "PENDING", "reason_code": "AWAITING_SETTLEMENT"},
    ),
    (
        "priority_refund_duplicate_over_wrong_mapping",
        both(duplicate("recon", R1, payment_id="pay_P1")),
        AS_OF,
        REF,
        {
            "reason_code": "DUPLICATE_RECONCILIATION_RECORD",
            "reason_codes": "DUPLICATE_RECONCILIATION_RECORD;WRONG_MAPPING",
        },
    ),
    (
        "priority_refund_wrong_mapping_over_amount",
        change("recon", R1, payment_id="pay_P1", debit=49_000),
        AS_OF,
        REF,
        {"reason_code": "WRONG_MAPPING", "reason_codes": "WRONG_MAPPING;REFUND_AMOUNT_MISMATCH"},
    ),
    # --- recon rows without a known entity, dispute debits ------------------------------
    (
        "payment_id_mismatch_payment_row",
        add(
            "recon",
            {
                "entity_id": "pay_GHOST",
                "type": "payment",
                "amount": 5_000,
                "credit": 5_000,
                "settlement_id": "setl_S1",
            },
        ),
        AS_OF,
        ("recon_row", "pay_GHOST"),
        {
            "status": "EXCEPTION",
            "reason_code": "PAYMENT_ID_MISMATCH",
            "reason_codes": "PAYMENT_ID_MISMATCH",
            "exposure_class": "structural",
            "exposure_amount": 0,
            "settlement_id": "setl_S1",
        },
    ),
    (
        "payment_id_mismatch_refund_row",
        add(
            "recon",
            {
                "entity_id": "rfnd_GHOST",
                "type": "refund",
                "amount": 3_000,
                "debit": 3_000,
                "payment_id": "pay_P1",
                "settlement_id": "setl_S1",
            },
        ),
        AS_OF,
        ("recon_row", "rfnd_GHOST"),
        {"status": "EXCEPTION", "reason_code": "PAYMENT_ID_MISMATCH"},
    ),
    (
        "dispute_debit",
        add(
            "recon",
            {
                "entity_id": "adj_D1",
                "type": "adjustment",
                "amount": 12_000,
                "debit": 12_000,
                "dispute_id": "disp_1",
                "settlement_id": "setl_S1",
            },
        ),
        AS_OF,
        ("recon_row", "adj_D1"),
        {
            "status": "EXCEPTION",
            "reason_code": "DISPUTE_DEBIT",
            "reason_codes": "DISPUTE_DEBIT",
            "exposure_class": "disputed",
            "actual_amount": 12_000,
            "exposure_amount": 12_000,
        },
    ),
    # --- settlements ---------------------------------------------------------------------
    (
        "settlement_matched_by_utr",
        lambda t: None,
        AS_OF,
        SETL,
        {
            "status": "MATCHED",
            "match_method": "utr",
            "expected_amount": 48_000,
            "actual_amount": 48_000,
        },
    ),
    (
        "settlement_created_is_pending",
        change("settlements", {"id": "setl_S1"}, status="created"),
        AS_OF,
        SETL,
        {"status": "PENDING", "reason_code": "AWAITING_SETTLEMENT"},
    ),
    (
        "settlement_failed",
        change("settlements", {"id": "setl_S1"}, status="failed"),
        AS_OF,
        SETL,
        {
            "status": "EXCEPTION",
            "reason_code": "SETTLEMENT_FAILED",
            "reason_codes": "SETTLEMENT_FAILED",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 48_000,
            "exposure_amount": 48_000,
        },
    ),
    (
        "settlement_sum_mismatch",
        both(
            change("settlements", {"id": "setl_S1"}, amount=48_001),
            change("bank", {"reference": UTR1}, credit=48_001),
        ),
        AS_OF,
        SETL,
        {
            "status": "EXCEPTION",
            "reason_code": "SETTLEMENT_SUM_MISMATCH",
            "reason_codes": "SETTLEMENT_SUM_MISMATCH",
            "exposure_class": "amount_at_risk",
            "expected_amount": 48_000,
            "actual_amount": 48_001,
            "exposure_amount": 1,
        },
    ),
    (
        "sum_counts_credits_minus_debits_of_every_row_type",
        both(
            add(
                "recon",
                {
                    "entity_id": "adj_F1",
                    "type": "adjustment",
                    "amount": 700,
                    "credit": 700,
                    "settlement_id": "setl_S1",
                },
            ),
            add(
                "recon",
                {
                    "entity_id": "trf_T1",
                    "type": "transfer",
                    "amount": 200,
                    "debit": 200,
                    "settlement_id": "setl_S1",
                },
            ),
            change("settlements", {"id": "setl_S1"}, amount=48_500),
            change("bank", {"reference": UTR1}, credit=48_500),
        ),
        AS_OF,
        SETL,
        {"status": "MATCHED"},
    ),
    (
        "duplicate_bank_credit",
        duplicate("bank", {"reference": UTR1}, txn_date="2026-06-04"),
        AS_OF,
        SETL,
        {
            "status": "EXCEPTION",
            "reason_code": "DUPLICATE_BANK_CREDIT",
            "reason_codes": "DUPLICATE_BANK_CREDIT",
            "exposure_class": "amount_at_risk",
            "expected_amount": 48_000,
            "actual_amount": 96_000,
            "exposure_amount": 48_000,
        },
    ),
    (
        "bank_utr_amount_mismatch",
        change("bank", {"reference": UTR1}, credit=47_000),
        AS_OF,
        SETL,
        {
            "status": "EXCEPTION",
            "reason_code": "BANK_UTR_AMOUNT_MISMATCH",
            "exposure_class": "amount_at_risk",
            "actual_amount": 47_000,
            "exposure_amount": 1_000,
        },
    ),
    (
        "missing_bank_entry",
        drop("bank", reference=UTR1),
        AS_OF,
        SETL,
        {
            "status": "EXCEPTION",
            "reason_code": "MISSING_BANK_ENTRY",
            "reason_codes": "MISSING_BANK_ENTRY",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 48_000,
            "actual_amount": 0,
            "exposure_amount": 48_000,
        },
    ),
    (
        "pending_awaiting_bank_credit",
        drop("bank", reference=UTR1),
        WEDNESDAY_NIGHT,
        SETL,
        {"status": "PENDING", "reason_code": "AWAITING_BANK_CREDIT", "exposure_amount": 0},
    ),
    (
        "priority_sum_mismatch_over_bank_amount",
        both(
            change("settlements", {"id": "setl_S1"}, amount=48_001),
            change("bank", {"reference": UTR1}, credit=47_000),
        ),
        AS_OF,
        SETL,
        {
            "reason_code": "SETTLEMENT_SUM_MISMATCH",
            "reason_codes": "SETTLEMENT_SUM_MISMATCH;BANK_UTR_AMOUNT_MISMATCH",
            "exposure_amount": 1,
        },
    ),
    (
        "priority_sum_mismatch_over_missing_bank_entry",
        both(change("settlements", {"id": "setl_S1"}, amount=48_001), drop("bank", reference=UTR1)),
        AS_OF,
        SETL,
        {
            "reason_code": "SETTLEMENT_SUM_MISMATCH",
            "reason_codes": "SETTLEMENT_SUM_MISMATCH;MISSING_BANK_ENTRY",
        },
    ),
    (
        "priority_duplicate_bank_credit_with_sum_mismatch",
        both(
            change("settlements", {"id": "setl_S1"}, amount=48_001),
            duplicate("bank", {"reference": UTR1}),
        ),
        AS_OF,
        SETL,
        {
            "reason_code": "SETTLEMENT_SUM_MISMATCH",
            "reason_codes": "SETTLEMENT_SUM_MISMATCH;DUPLICATE_BANK_CREDIT",
        },
    ),
    # --- bank lines ---------------------------------------------------------------------
    (
        "bank_line_matched_by_utr",
        lambda t: None,
        AS_OF,
        LINE,
        {"status": "MATCHED", "match_method": "utr", "settlement_id": "setl_S1", "utr": UTR1},
    ),
    (
        "bank_line_of_a_settlement_with_an_exception_is_matched",
        change("bank", {"reference": UTR1}, credit=47_000),
        AS_OF,
        LINE,
        {
            "status": "MATCHED",
            "settlement_id": "setl_S1",
            "expected_amount": 48_000,
            "actual_amount": 47_000,
        },
    ),
    (
        "bank_line_utr_in_lower_case_narration",
        change(
            "bank",
            {"reference": UTR1},
            reference=None,
            narration="neft cr-razorpay software pvt ltd-utr: axiscn0000000001",
        ),
        AS_OF,
        LINE,
        {"status": "MATCHED", "match_method": "utr", "settlement_id": "setl_S1"},
    ),
    (
        "bank_line_utr_inside_narration_with_other_reference",
        change(
            "bank",
            {"reference": UTR1},
            reference="000032027838",
            utr="000032027838",
            narration=f"IMPS/{UTR1}/RAZORPAY/SETTLEMENT",
        ),
        AS_OF,
        LINE,
        {"status": "MATCHED", "match_method": "utr", "settlement_id": "setl_S1"},
    ),
    (
        "unmatched_bank_credit",
        add(
            "bank",
            {
                "txn_date": "2026-06-05",
                "reference": "NEFT",
                "credit": 77_700,
                "narration": "NEFT CR-YESB0000001-RAZORPAY SOFTWARE-ZZZZ99999999999",
            },
        ),
        AS_OF,
        ("bank_entry", "bank_statement.csv:6"),
        {
            "status": "EXCEPTION",
            "reason_code": "UNMATCHED_BANK_CREDIT",
            "reason_codes": "UNMATCHED_BANK_CREDIT",
            "exposure_class": "amount_at_risk",
            "expected_amount": 0,
            "actual_amount": 77_700,
            "exposure_amount": 77_700,
            "settlement_id": None,
        },
    ),
]


# --- Razorpay's money model beyond the spec (docs/engine.md) ------------------------------


def foreign_payment(pid: str, currency: str, amount: int, base: int | None, /, **row: Any) -> Any:
    """A payment in another currency settled in S1: `base` INR paise, fee 10,000 paise; the
    recon row's amounts are INR (`row` overrides them)."""
    inr = base if base is not None else 501_000
    return both(
        add(
            "payments",
            {
                "id": pid,
                "amount": amount,
                "currency": currency,
                "base_amount": base,
                "fee": 10_000,
                "tax": 1_525,
                "international": True,
                "created_at": ts("2026-06-01T10:00"),
            },
        ),
        add(
            "recon",
            {
                "entity_id": pid,
                "type": "payment",
                "amount": inr,
                "credit": inr - 10_000,
                "fee": 10_000,
                "tax": 1_525,
                "currency": "INR",
                "created_at": ts("2026-06-01T10:00"),
                "settled_at": ts("2026-06-03T12:00"),
                "settlement_id": "setl_S1",
                **row,
            },
        ),
    )


def foreign_refund(currency: str, amount: int, base: int | None, /, **row: Any) -> Any:
    return both(
        add(
            "refunds",
            {
                "id": "rfnd_RU",
                "payment_id": "pay_P0",
                "amount": amount,
                "currency": currency,
                "base_amount": base,
                "created_at": ts("2026-06-01T11:00"),
            },
        ),
        add(
            "recon",
            {
                "entity_id": "rfnd_RU",
                "type": "refund",
                "amount": 83_500,
                "debit": 83_500,
                "currency": "INR",
                "settled_at": ts("2026-06-03T12:00"),
                "settlement_id": "setl_S1",
                "payment_id": "pay_P0",
                **row,
            },
        ),
    )


def dispute_row(entity_id: str, *, debit: int = 0, credit: int = 0, **row: Any) -> Any:
    return add(
        "recon",
        {
            "entity_id": entity_id,
            "type": "adjustment",
            "amount": debit or credit,
            "debit": debit,
            "credit": credit,
            "dispute_id": "disp_1",
            "settlement_id": "setl_S1",
            "created_at": ts("2026-06-02T10:00"),
            **row,
        },
    )


def dispute(status: str, **fields: Any) -> Any:
    """disp_1 (₹150 disputed on P1) in a disputes file."""

    def apply(tables: Any) -> None:
        tables.setdefault("disputes", []).append(
            {
                "id": "disp_1",
                "payment_id": "pay_P1",
                "amount": 15_000,
                "amount_deducted": 0,
                "status": status,
                "respond_by": ts("2026-06-09T23:59"),
                "created_at": ts("2026-06-02T09:00"),
                **fields,
            }
        )

    return apply


DEBIT = dispute_row("adj_D1", debit=12_000)
REVERSAL = dispute_row("adj_R1", credit=12_000, created_at=ts("2026-06-20T10:00"))
USD = ("payment", "pay_USD")
DISP = ("dispute", "disp_1")
RU = ("refund", "rfnd_RU")

CASES += [
    # --- international payments: compared in INR ----------------------------------------
    (
        "international_usd_matches_in_inr",
        foreign_payment("pay_USD", "USD", 6_000, 501_000),
        AS_OF,
        USD,
        {
            "status": "MATCHED",
            "reason_codes": "",
            "expected_amount": 491_000,
            "actual_amount": 491_000,
        },
    ),
    (
        "international_usd_real_inr_amount_mismatch",
        foreign_payment("pay_USD", "USD", 6_000, 501_000, amount=500_000, credit=490_000),
        AS_OF,
        USD,
        {
            "status": "EXCEPTION",
            "reason_codes": "AMOUNT_MISMATCH",
            "expected_amount": 501_000,
            "actual_amount": 500_000,
            "exposure_amount": 1_000,
        },
    ),
    (
        "international_usd_credit_discrepancy_in_inr",
        foreign_payment("pay_USD", "USD", 6_000, 501_000, credit=490_000),
        AS_OF,
        USD,
        {
            "reason_codes": "SETTLEMENT_AMOUNT_DISCREPANCY",
            "expected_amount": 491_000,
            "actual_amount": 490_000,
        },
    ),
    (
        "international_without_base_amount_uses_the_row_inr_amount",
        foreign_payment("pay_USD", "USD", 6_000, None),
        AS_OF,
        USD,
        {"status": "MATCHED", "expected_amount": 491_000, "actual_amount": 491_000},
    ),
    (
        "international_without_base_amount_or_row_has_no_inr_amount",
        both(foreign_payment("pay_USD", "USD", 6_000, None), drop("recon", entity_id="pay_USD")),
        AS_OF,
        USD,
        {"reason_code": "MISSING_RECONCILIATION_RECORD", "expected_amount": 0},
    ),
    (
        "foreign_currency_follows_the_international_cycle_without_the_flag",
        both(
            foreign_payment("pay_USD", "USD", 6_000, 501_000, settled_at=ts("2026-06-10T12:00")),
            change("payments", {"id": "pay_USD"}, international=False),
        ),
        AS_OF,
        USD,
        {"status": "MATCHED"},
    ),
    (
        "foreign_currency_late_after_the_international_cycle",
        foreign_payment("pay_USD", "USD", 6_000, 501_000, settled_at=ts("2026-06-12T12:00")),
        AS_OF,
        USD,
        {"reason_codes": "TIMING_WINDOW_EXCEEDED"},
    ),
    (
        "jpy_zero_decimal_payment_matches_in_inr",
        foreign_payment("pay_JPY", "JPY", 6_000, 334_000, amount=334_000, credit=324_000),
        AS_OF,
        ("payment", "pay_JPY"),
        {"status": "MATCHED", "expected_amount": 324_000},
    ),
    (
        "kwd_three_decimal_payment_matches_in_inr",
        foreign_payment("pay_KWD", "kwd", 1_234, 33_500, amount=33_500, credit=23_500),
        AS_OF,
        ("payment", "pay_KWD"),
        {"status": "MATCHED", "expected_amount": 23_500},
    ),
    (
        "kwd_three_decimal_payment_inr_mismatch",
        foreign_payment("pay_KWD", "KWD", 1_234, 33_500, amount=33_000, credit=23_000),
        AS_OF,
        ("payment", "pay_KWD"),
        {"reason_codes": "AMOUNT_MISMATCH", "expected_amount": 33_500, "actual_amount": 33_000},
    ),
    (
        "foreign_refund_compared_in_inr",
        foreign_refund("USD", 1_000, 83_500),
        AS_OF,
        RU,
        {"status": "MATCHED", "expected_amount": 83_500, "actual_amount": 83_500},
    ),
    (
        "foreign_refund_without_base_amount_uses_the_row_amount",
        foreign_refund("USD", 1_000, None, fee=100, debit=83_600),
        AS_OF,
        RU,
        {"status": "MATCHED", "expected_amount": 83_600},
    ),
    (
        "foreign_refund_inr_mismatch",
        foreign_refund("USD", 1_000, 83_500, debit=83_000),
        AS_OF,
        RU,
        {
            "reason_codes": "REFUND_AMOUNT_MISMATCH",
            "expected_amount": 83_500,
            "actual_amount": 83_000,
        },
    ),
    # --- settled by someone other than Razorpay -----------------------------------------
    (
        "settled_by_other_without_row_is_matched_direct",
        both(
            drop("recon", **P1),
            change("payments", {"id": "pay_P1"}, settled_by="HDFC Bank"),
        ),
        AS_OF,
        PAY,
        {"status": "MATCHED", "match_method": "direct", "reason_codes": "", "actual_amount": 0},
    ),
    (
        "settled_by_other_on_the_row_skips_missing_settlement_and_timing",
        change("recon", P1, settled_by="ICICI", settlement_id=None, settled_at=ts("2026-06-20")),
        AS_OF,
        PAY,
        {"status": "MATCHED", "match_method": "direct", "actual_amount": 98_000},
    ),
    (
        "settled_by_razorpay_any_case_is_razorpay",
        both(drop("recon", **P1), change("payments", {"id": "pay_P1"}, settled_by=" RAZORPAY")),
        AS_OF,
        PAY,
        {"reason_code": "MISSING_RECONCILIATION_RECORD", "match_method": ""},
    ),
    (
        "settled_by_other_still_gets_codes_1_to_4",
        both(
            change("recon", P1, amount=99_000),
            change("payments", {"id": "pay_P1"}, settled_by="Acme Bank"),
        ),
        AS_OF,
        PAY,
        {"reason_codes": "AMOUNT_MISMATCH", "match_method": ""},
    ),
    (
        "refund_settled_by_other_without_row_is_matched_direct",
        both(drop("recon", **R1), change("refunds", {"id": "rfnd_R1"}, settled_by="Bank")),
        AS_OF,
        REF,
        {"status": "MATCHED", "match_method": "direct", "reason_codes": ""},
    ),
    # --- holds released into a later settlement ----------------------------------------
    (
        "released_hold_row_is_not_a_duplicate",
        duplicate(
            "recon",
            P1,
            on_hold=True,
            settled=False,
            settlement_id=None,
            settled_at=None,
            credit=0,
        ),
        AS_OF,
        PAY,
        {"status": "MATCHED", "reason_codes": "", "actual_amount": 98_000},
    ),
    # --- disputes without a disputes file ------------------------------------------------
    (
        "dispute_debit_reversed_is_matched",
        both(DEBIT, REVERSAL),
        AS_OF,
        ("recon_row", "adj_D1"),
        {"status": "MATCHED", "reason_codes": "", "expected_amount": 12_000},
    ),
    (
        "dispute_reversal_credit_is_matched",
        both(DEBIT, REVERSAL),
        AS_OF,
        ("recon_row", "adj_R1"),
        {"status": "MATCHED", "actual_amount": 12_000},
    ),
    (
        "dispute_partly_reversed_stays_dispute_debit",
        both(DEBIT, dispute_row("adj_R1", credit=2_000)),
        AS_OF,
        ("recon_row", "adj_D1"),
        {"reason_codes": "DISPUTE_DEBIT", "actual_amount": 12_000},
    ),
    (
        "dispute_not_in_the_disputes_file_stays_a_recon_row",
        both(DEBIT, dispute("lost", id="disp_OTHER")),
        AS_OF,
        ("recon_row", "adj_D1"),
        {"reason_codes": "DISPUTE_DEBIT"},
    ),
    # --- disputes in a disputes file ------------------------------------------------------
    (
        "dispute_lost",
        both(DEBIT, dispute("lost", amount_deducted=12_000)),
        AS_OF,
        DISP,
        {
            "status": "EXCEPTION",
            "reason_code": "DISPUTE_LOST",
            "reason_codes": "DISPUTE_LOST",
            "exposure_class": "realised_loss",
            "expected_amount": 0,
            "actual_amount": 12_000,
            "exposure_amount": 12_000,
            "settlement_id": "setl_S1",
            "order_id": "order_1",
            "utr": UTR1,
        },
    ),
    (
        "dispute_lost_loss_is_what_was_not_reversed",
        both(DEBIT, dispute_row("adj_R1", credit=2_000), dispute("lost")),
        AS_OF,
        DISP,
        {"reason_code": "DISPUTE_LOST", "actual_amount": 10_000, "exposure_amount": 10_000},
    ),
    (
        "dispute_lost_loss_is_at_least_amount_deducted",
        dispute("lost", amount_deducted=15_000),
        AS_OF,
        DISP,
        {"reason_code": "DISPUTE_LOST", "actual_amount": 15_000, "settlement_id": None},
    ),
    (
        "dispute_won_and_reversed_is_matched",
        both(DEBIT, REVERSAL, dispute("won")),
        AS_OF,
        DISP,
        {
            "status": "MATCHED",
            "reason_codes": "",
            "expected_amount": 12_000,
            "actual_amount": 12_000,
        },
    ),
    (
        "dispute_won_without_reversal",
        both(DEBIT, dispute("won")),
        AS_OF,
        DISP,
        {
            "status": "EXCEPTION",
            "reason_code": "DISPUTE_REVERSAL_MISSING",
            "exposure_class": "awaiting_settlement",
            "expected_amount": 12_000,
            "actual_amount": 0,
            "exposure_amount": 12_000,
        },
    ),
    (
        "dispute_closed_partly_reversed",
        both(DEBIT, dispute_row("adj_R1", credit=2_000), dispute("closed")),
        AS_OF,
        DISP,
        {"reason_code": "DISPUTE_REVERSAL_MISSING", "expected_amount": 10_000},
    ),
    (
        "dispute_closed_without_money_taken_is_matched",
        dispute("closed"),
        AS_OF,
        DISP,
        {"status": "MATCHED", "expected_amount": 0, "actual_amount": 0},
    ),
    (
        "dispute_open_with_money_taken",
        both(DEBIT, dispute("open")),
        AS_OF,
        DISP,
        {
            "status": "EXCEPTION",
            "reason_code": "DISPUTE_OPEN",
            "exposure_class": "disputed",
            "actual_amount": 12_000,
            "exposure_amount": 12_000,
        },
    ),
    (
        "dispute_open_without_money_taken_is_the_disputed_amount",
        dispute("open"),
        AS_OF,
        DISP,
        {"reason_code": "DISPUTE_OPEN", "actual_amount": 15_000, "settlement_id": None},
    ),
    (
        "dispute_under_review_is_pending",
        both(DEBIT, dispute("under_review")),
        AS_OF,
        DISP,
        {
            "status": "PENDING",
            "reason_code": "DISPUTE_UNDER_REVIEW",
            "reason_codes": "DISPUTE_UNDER_REVIEW",
            "exposure_class": "",
            "exposure_amount": 0,
        },
    ),
]


@pytest.mark.parametrize(
    ("mutation", "as_of", "entity", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_engine_outcome_per_code(
    mutation: Any, as_of: int, entity: tuple[str, str], expected: dict[str, Any]
) -> None:
    tables = copy.deepcopy(world())
    mutation(tables)
    outcomes = reconcile(build(tables), EngineParams(), as_of)
    got = outcome(outcomes, *entity)
    assert {k: got[k] for k in expected} == expected
    assert got["difference"] == got["actual_amount"] - got["expected_amount"]


def test_clean_world_is_all_matched() -> None:
    outcomes = reconcile(build(world()), EngineParams(), AS_OF)
    assert set(outcomes["status"]) == {"MATCHED"}
    assert len(outcomes) == 7  # 2 payments, 1 refund, 2 settlements, 2 gateway credits


@pytest.mark.parametrize(
    ("mutation", "entity"),
    [
        (change("payments", {"id": "pay_P1"}, status="failed", captured=False), "pay_P1"),
        (change("refunds", {"id": "rfnd_R1"}, status="pending"), "rfnd_R1"),
        (dispute_row("adj_F2", credit=500, dispute_id="disp_2"), "adj_F2"),
        (
            both(dispute_row("adj_F4", debit=900), dispute_row("adj_F5", credit=400)),
            "adj_F5",
        ),
        (
            add(
                "recon", {"entity_id": "adj_F3", "type": "adjustment", "amount": 500, "debit": 500}
            ),
            "adj_F3",
        ),
    ],
    ids=[
        "not_captured_without_row",
        "refund_not_processed",
        "dispute_credit_without_debit",
        "dispute_credit_of_a_partial_reversal",
        "adjustment_without_dispute",
    ],
)
def test_entities_that_get_no_outcome(mutation: Any, entity: str) -> None:
    tables = copy.deepcopy(world())
    if entity == "pay_P1":
        drop("recon", **P1)(tables)
    mutation(tables)
    outcomes = reconcile(build(tables), EngineParams(), AS_OF)
    assert entity not in set(outcomes["entity_id"])


def test_bank_lines_that_are_not_gateway_credits_get_no_outcome() -> None:
    outcomes = reconcile(build(world()), EngineParams(), AS_OF)
    lines = set(outcomes.loc[outcomes["entity_type"] == "bank_entry", "entity_id"])
    # line 4: a customer's NEFT credit; line 5: a card debit.
    assert lines == {"bank_statement.csv:2", "bank_statement.csv:3"}


def test_without_bank_statement_settlements_match_without_bank_checks() -> None:
    tables = copy.deepcopy(world())
    drop("bank", reference=UTR1)(tables)
    outcomes = reconcile(build(tables, bank=False), EngineParams(), AS_OF)
    settlement = outcome(outcomes, *SETL)
    assert (settlement["status"], settlement["match_method"]) == ("MATCHED", "no_bank_statement")
    assert "bank_entry" not in set(outcomes["entity_type"])


def test_without_bank_statement_the_sum_is_still_checked() -> None:
    tables = copy.deepcopy(world())
    change("settlements", {"id": "setl_S1"}, amount=47_000)(tables)
    outcomes = reconcile(build(tables, bank=False), EngineParams(), AS_OF)
    settlement = outcome(outcomes, *SETL)
    assert (settlement["status"], settlement["reason_codes"]) == (
        "EXCEPTION",
        "SETTLEMENT_SUM_MISMATCH",
    )


def test_duplicate_unknown_rows_make_one_recon_row_outcome() -> None:
    tables = copy.deepcopy(world())
    row = {"entity_id": "pay_GHOST", "type": "payment", "amount": 5_000, "credit": 5_000}
    add("recon", row)(tables)
    add("recon", row)(tables)
    outcomes = reconcile(build(tables), EngineParams(), AS_OF)
    ghost = outcome(outcomes, "recon_row", "pay_GHOST")
    assert (ghost["reason_code"], ghost["actual_amount"]) == ("PAYMENT_ID_MISMATCH", 10_000)


def test_recon_rows_of_a_dispute_in_the_disputes_file_get_no_outcome() -> None:
    tables = copy.deepcopy(world())
    both(DEBIT, dispute_row("adj_R1", credit=2_000), dispute("open"))(tables)
    outcomes = reconcile(build(tables), EngineParams(), AS_OF)
    assert not {"adj_D1", "adj_R1"} & set(outcomes["entity_id"])
    assert outcome(outcomes, *DISP)["actual_amount"] == 10_000
