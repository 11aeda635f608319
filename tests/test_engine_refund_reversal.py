"""A refund a settlement debited and that then failed (or was reversed) is owed back by
Razorpay (docs/engine.md, *Failed refunds a settlement debited*): PENDING while its return
can still come, REFUND_REVERSAL_MISSING once overdue, MATCHED when its credit came back.
A failed refund no settlement debited keeps no outcome (spec section 5: nothing moved).

Built on `engine_support.world()`: refund R1 (₹500, of P0) debited in S1 on 3 Jun 2026.
"""

from __future__ import annotations

import copy
from typing import Any

import pandas as pd
import pytest

from core.dataset import Dataset
from core.db import connect
from core.engine import EngineParams, reconcile
from core.engine import codes as C
from core.engine.incremental import merge_rows, reconcile_incremental
from core.engine.partition import reconcile_partitioned
from core.investigate import ClientConfig, investigate
from core.investigate.deterministic import RULES
from core.review.packet import RAZORPAY, _ask
from core.root_causes import CAUSES_BY_CODE
from tests import investigate_world
from tests.engine_support import AS_OF, build, change, outcome, ts, world

R1 = {"entity_id": "rfnd_R1"}
REF = ("refund", "rfnd_R1")
THE_DAY_AFTER = ts("2026-06-04T12:00")  # S1 debited R1 on 3 Jun; its return is not yet due


def failed_world(status: str = "failed", **row: Any) -> dict[str, list[dict[str, Any]]]:
    tables = copy.deepcopy(world())
    change("refunds", {"id": "rfnd_R1"}, status=status)(tables)
    if row:
        change("recon", R1, **row)(tables)
    return tables


def credit_back(tables: dict[str, list[dict[str, Any]]], amount: int, kind: str = "refund") -> None:
    """The refund's money credited back in a later settlement, under the refund's own id."""
    tables["recon"].append(
        {
            "entity_id": "rfnd_R1",
            "type": kind,
            "amount": amount,
            "credit": amount,
            "created_at": ts("2026-06-08T10:00"),
            "settled_at": ts("2026-06-10T12:00"),
            "settlement_id": "setl_S2",
            "payment_id": "pay_P0",
        }
    )


def test_a_failed_refund_a_settlement_debited_is_pending_while_its_return_can_still_come() -> None:
    got = outcome(reconcile(build(failed_world()), EngineParams(), THE_DAY_AFTER), *REF)
    assert {k: got[k] for k in ("status", "reason_code", "expected_amount", "actual_amount")} == {
        "status": "PENDING",
        "reason_code": "AWAITING_SETTLEMENT",
        "expected_amount": 50_000,
        "actual_amount": 0,
    }
    assert got["settlement_id"] == "setl_S1"


def test_a_failed_refund_whose_return_never_came_is_refund_reversal_missing_for_the_debit_incl_fee() -> (  # noqa: E501
    None
):
    tables = failed_world(fee=590, debit=50_590)
    got = outcome(reconcile(build(tables), EngineParams(), AS_OF), *REF)
    assert {
        k: got[k]
        for k in (
            "status",
            "reason_code",
            "reason_codes",
            "exposure_class",
            "expected_amount",
            "actual_amount",
            "exposure_amount",
            "settlement_id",
        )
    } == {
        "status": "EXCEPTION",
        "reason_code": "REFUND_REVERSAL_MISSING",
        "reason_codes": "REFUND_REVERSAL_MISSING",
        "exposure_class": "awaiting_settlement",
        "expected_amount": 50_590,
        "actual_amount": 0,
        "exposure_amount": 50_590,
        "settlement_id": "setl_S1",
    }


def test_a_reversed_refund_a_settlement_debited_is_owed_back_like_a_failed_one() -> None:
    got = outcome(reconcile(build(failed_world("reversed")), EngineParams(), AS_OF), *REF)
    assert (got["status"], got["reason_code"]) == ("EXCEPTION", "REFUND_REVERSAL_MISSING")


@pytest.mark.parametrize("kind", ["refund", "adjustment"])
def test_a_failed_refund_credited_back_under_its_own_id_is_matched(kind: str) -> None:
    tables = failed_world()
    credit_back(tables, 50_000, kind)
    got = outcome(reconcile(build(tables), EngineParams(), AS_OF), *REF)
    assert (got["status"], got["reason_codes"], got["expected_amount"], got["actual_amount"]) == (
        "MATCHED",
        "",
        50_000,
        50_000,
    )


def test_a_failed_refund_credited_back_in_part_is_owed_the_rest() -> None:
    tables = failed_world()
    credit_back(tables, 20_000)
    got = outcome(reconcile(build(tables), EngineParams(), AS_OF), *REF)
    assert (got["reason_code"], got["expected_amount"], got["exposure_amount"]) == (
        "REFUND_REVERSAL_MISSING",
        30_000,
        30_000,
    )


@pytest.mark.parametrize(
    "row",
    [None, {"settlement_id": None, "settlement_utr": None, "settled": False, "settled_at": None}],
    ids=["no_recon_row", "row_in_no_settlement"],
)
def test_a_failed_refund_no_settlement_debited_keeps_no_outcome(row: dict[str, Any] | None) -> None:
    tables = failed_world()
    if row is None:
        tables["recon"] = [r for r in tables["recon"] if r["entity_id"] != "rfnd_R1"]
    else:
        change("recon", R1, **row)(tables)
    outcomes = reconcile(build(tables), EngineParams(), AS_OF)
    assert "rfnd_R1" not in set(outcomes["entity_id"])


def test_a_pending_refund_a_settlement_debited_keeps_no_outcome() -> None:
    outcomes = reconcile(build(failed_world("pending")), EngineParams(), AS_OF)
    assert "rfnd_R1" not in set(outcomes["entity_id"])


def test_refund_reversal_missing_is_known_everywhere_a_code_must_be() -> None:
    assert C.REFUND_CODES[-1] == C.REFUND_REVERSAL_MISSING
    assert C.exposure_class(C.REFUND_REVERSAL_MISSING) == C.AWAITING
    assert C.REFUND_REVERSAL_MISSING in RULES
    assert CAUSES_BY_CODE[C.REFUND_REVERSAL_MISSING] == ("REFUND_REVERSAL_NOT_CREDITED",)


def test_an_incremental_run_moves_a_missing_refund_reversal_with_the_as_of() -> None:
    """The clock moves this exception (PENDING before the deadline): an incremental run at
    an earlier or later as-of decides it again and equals a full run."""
    dataset = build(failed_world())
    previous = reconcile(dataset, EngineParams(), AS_OF)
    assert outcome(previous, *REF)["reason_code"] == "REFUND_REVERSAL_MISSING"
    empty = Dataset(has_bank_statement=True)
    for moved in (THE_DAY_AFTER, AS_OF + 30 * 86_400):
        merged, replaced = merge_rows(dataset, empty)
        step = reconcile_incremental(merged, empty, replaced, previous, EngineParams(), moved)
        pd.testing.assert_frame_equal(step.outcomes, reconcile(merged, EngineParams(), moved))


@pytest.mark.parametrize("credited", [0, 20_000, 50_000], ids=["none", "part", "all"])
def test_settlement_windows_give_a_failed_refund_the_same_outcome_as_one_run(credited: int) -> None:
    """The debit (S1, 3 Jun) and the credit back (S2, 10 Jun) fall in different settlement
    windows; the partitioned run still reports the refund once, as the single run does."""
    tables = failed_world()
    tables["settlements"].append(
        {
            "id": "setl_S2",
            "amount": credited,
            "utr": "ICICN00000000004",
            "created_at": ts("2026-06-10T12:00"),
        }
    )
    if credited:
        credit_back(tables, credited)
    dataset = build(tables)
    for as_of in (THE_DAY_AFTER, AS_OF):
        pd.testing.assert_frame_equal(
            reconcile_partitioned(dataset, EngineParams(), as_of, days_per_window=1),
            reconcile(dataset, EngineParams(), as_of),
        )


def test_the_investigator_dates_a_missing_refund_reversal_from_the_debit_not_the_refund(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rfnd_FAIL01 (investigate_world) was created on 22 Jun (a refund's own due date: 24
    Jun) and debited in a settlement on 24 Jun: its money is due back by 26 Jun, the
    engine's clock (debit date + the domestic cycle)."""
    for name in ("GEMINI_API_KEY", "LLM_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    conn = connect(db_url)
    try:
        ids = investigate_world.build(conn)
        result = investigate(
            conn, ids["REFUND_REVERSAL_NOT_CREDITED"], client_config=ClientConfig()
        )
    finally:
        conn.close()
    assert result.root_cause == "REFUND_REVERSAL_NOT_CREDITED"
    assert "It was due on 2026-06-26" in result.recommendation
    assert "rfnd_FAIL01" in result.summary


def test_the_escalation_packet_asks_razorpay_to_credit_the_failed_refund_back() -> None:
    ask = _ask(C.REFUND_REVERSAL_MISSING, RAZORPAY, "HDFCN52026071012")
    assert "credit" in ask and "failed refund" in ask
    assert "fee and GST deducted" not in ask  # not the generic ask about a settled amount
