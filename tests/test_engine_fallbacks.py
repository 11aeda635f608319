"""The bank fallbacks of spec section 5: `fuzzy_utr` (one candidate versus two, distance,
window, amount) and `consolidated` (one credit for several same-day settlements)."""

from __future__ import annotations

import copy
from typing import Any

from core.engine import EngineParams, reconcile
from tests.engine_support import (
    AS_OF,
    UTR1,
    add,
    build,
    change,
    drop,
    outcome,
    ts,
    world,
)

SETL = ("settlement", "setl_S1")


def _mistyped(utr: str, edits: int) -> str:
    """The UTR with its last `edits` characters replaced by 'X'."""
    return utr[: len(utr) - edits] + "X" * edits


def _credit(line_utr: str, amount: int = 48_000, day: str = "2026-06-03") -> dict[str, Any]:
    return {
        "txn_date": day,
        "narration": f"NEFT CR-UTIB0000123-RAZORPAY SOFTWARE PVT LTD-{line_utr}",
        "reference": line_utr,
        "credit": amount,
    }


def _run(tables: dict[str, list[dict[str, Any]]], as_of: int = AS_OF) -> Any:
    return reconcile(build(tables), EngineParams(), as_of)


def _without_s1_credit() -> dict[str, list[dict[str, Any]]]:
    tables = copy.deepcopy(world())
    drop("bank", reference=UTR1)(tables)
    return tables


def test_fuzzy_utr_links_the_one_credit_within_distance_two() -> None:
    tables = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 2)))(tables)
    outcomes = _run(tables)
    settlement = outcome(outcomes, *SETL)
    assert (settlement["status"], settlement["match_method"]) == ("MATCHED", "fuzzy_utr")
    line = outcome(outcomes, "bank_entry", "bank_statement.csv:5")
    assert (line["status"], line["match_method"], line["settlement_id"]) == (
        "MATCHED",
        "fuzzy_utr",
        "setl_S1",
    )


def test_fuzzy_utr_accepts_a_truncated_utr() -> None:
    tables = _without_s1_credit()
    add("bank", _credit(UTR1[:-1]))(tables)
    assert outcome(_run(tables), *SETL)["match_method"] == "fuzzy_utr"


def test_fuzzy_utr_with_two_candidates_links_neither() -> None:
    tables = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 1)))(tables)
    add("bank", _credit(_mistyped(UTR1, 2), day="2026-06-04"))(tables)
    outcomes = _run(tables)
    settlement = outcome(outcomes, *SETL)
    assert (settlement["status"], settlement["reason_code"]) == ("EXCEPTION", "MISSING_BANK_ENTRY")
    for line in ("bank_statement.csv:5", "bank_statement.csv:6"):
        assert outcome(outcomes, "bank_entry", line)["reason_code"] == "UNMATCHED_BANK_CREDIT"


def test_fuzzy_utr_refuses_distance_three() -> None:
    tables = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 3)))(tables)
    outcomes = _run(tables)
    assert outcome(outcomes, *SETL)["reason_code"] == "MISSING_BANK_ENTRY"
    line = outcome(outcomes, "bank_entry", "bank_statement.csv:5")
    assert line["reason_code"] == "UNMATCHED_BANK_CREDIT"


def test_fuzzy_utr_distance_is_configurable() -> None:
    tables = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 3)))(tables)
    outcomes = reconcile(build(tables), EngineParams(fuzzy_utr_max_distance=3), AS_OF)
    assert outcome(outcomes, *SETL)["match_method"] == "fuzzy_utr"


def test_fuzzy_utr_needs_the_same_amount() -> None:
    tables = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 1), amount=47_999))(tables)
    assert outcome(_run(tables), *SETL)["reason_code"] == "MISSING_BANK_ENTRY"


def test_fuzzy_utr_needs_a_date_inside_the_window() -> None:
    # S1 is created Wednesday 06-03; with one bank day the window ends Thursday 06-04.
    tables = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 1), day="2026-06-05"))(tables)
    assert outcome(_run(tables), *SETL)["reason_code"] == "MISSING_BANK_ENTRY"
    inside = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 1), day="2026-06-04"))(inside)
    assert outcome(_run(inside), *SETL)["match_method"] == "fuzzy_utr"


def test_fuzzy_utr_never_takes_a_credit_that_carries_a_known_utr() -> None:
    # The S0 credit's UTR is known, so it belongs to S0 even if S1's UTR were close to it.
    tables = _without_s1_credit()
    outcomes = _run(tables)
    assert outcome(outcomes, "settlement", "setl_S0")["match_method"] == "utr"
    assert outcome(outcomes, *SETL)["reason_code"] == "MISSING_BANK_ENTRY"


def _two_same_day_settlements(tables: dict[str, list[dict[str, Any]]]) -> None:
    """S2 (30,000) and S3 (12,000), both created Wednesday 2026-06-10, each with the recon
    row of one payment, and no bank credit carrying their UTRs."""
    for name, amount in (("2", 30_000), ("3", 12_000)):
        add(
            "payments",
            {
                "id": f"pay_P{name}",
                "amount": amount,
                "fee": 0,
                "order_id": f"order_{name}",
                "created_at": ts("2026-06-08T10:00"),
            },
        )(tables)
        add(
            "recon",
            {
                "entity_id": f"pay_P{name}",
                "type": "payment",
                "amount": amount,
                "credit": amount,
                "settled_at": ts("2026-06-10T09:00"),
                "settlement_id": f"setl_S{name}",
                "order_id": f"order_{name}",
            },
        )(tables)
        add(
            "settlements",
            {
                "id": f"setl_S{name}",
                "amount": amount,
                "utr": f"YESBN0000000000{name}",
                "created_at": ts(f"2026-06-10T0{name}:00"),
            },
        )(tables)


def _lump_credit(amount: int = 42_000, day: str = "2026-06-10") -> dict[str, Any]:
    return {
        "txn_date": day,
        "narration": "NEFT CR-YESB0000001-RAZORPAY SOFTWARE PRIVATE LIMITED",
        "reference": "NEFT",
        "credit": amount,
    }


def test_consolidated_credit_pays_two_same_day_settlements() -> None:
    tables = copy.deepcopy(world())
    _two_same_day_settlements(tables)
    add("bank", _lump_credit())(tables)
    outcomes = _run(tables)
    for settlement in ("setl_S2", "setl_S3"):
        got = outcome(outcomes, "settlement", settlement)
        assert (got["status"], got["match_method"]) == ("MATCHED", "consolidated")
    line = outcome(outcomes, "bank_entry", "bank_statement.csv:6")
    assert (line["status"], line["match_method"], line["settlement_id"]) == (
        "MATCHED",
        "consolidated",
        "setl_S2;setl_S3",
    )
    assert (line["expected_amount"], line["actual_amount"]) == (42_000, 42_000)


def test_consolidated_needs_exactly_one_credit() -> None:
    tables = copy.deepcopy(world())
    _two_same_day_settlements(tables)
    add("bank", _lump_credit())(tables)
    add("bank", _lump_credit(day="2026-06-11"))(tables)
    outcomes = _run(tables)
    for settlement in ("setl_S2", "setl_S3"):
        assert outcome(outcomes, "settlement", settlement)["reason_code"] == "MISSING_BANK_ENTRY"
    for line in ("bank_statement.csv:6", "bank_statement.csv:7"):
        assert outcome(outcomes, "bank_entry", line)["reason_code"] == "UNMATCHED_BANK_CREDIT"


def test_consolidated_needs_settlements_of_the_same_day() -> None:
    tables = copy.deepcopy(world())
    _two_same_day_settlements(tables)
    change("settlements", {"id": "setl_S3"}, created_at=ts("2026-06-09T10:00"))(tables)
    add("bank", _lump_credit())(tables)
    outcomes = _run(tables)
    assert outcome(outcomes, "settlement", "setl_S2")["reason_code"] == "MISSING_BANK_ENTRY"


def _third_settlement(tables: dict[str, list[dict[str, Any]]], amount: int) -> None:
    """S4, created the same day as S2 and S3, whose recon rows sum to `amount`."""
    add(
        "recon",
        {
            "entity_id": "adj_S4",
            "type": "adjustment",
            "amount": amount,
            "credit": amount,
            "settlement_id": "setl_S4",
        },
    )(tables)
    add(
        "settlements",
        {
            "id": "setl_S4",
            "amount": amount,
            "utr": "YESBN00000000004",
            "created_at": ts("2026-06-10T05:00"),
        },
    )(tables)


def test_consolidated_pays_the_subset_that_sums_up() -> None:
    # A third unmatched settlement the same day is missing from the bank on its own.
    tables = copy.deepcopy(world())
    _two_same_day_settlements(tables)
    _third_settlement(tables, 5_000)
    add("bank", _lump_credit())(tables)
    outcomes = _run(tables)
    assert outcome(outcomes, "settlement", "setl_S2")["match_method"] == "consolidated"
    assert outcome(outcomes, "settlement", "setl_S3")["match_method"] == "consolidated"
    assert outcome(outcomes, "settlement", "setl_S4")["reason_codes"] == "MISSING_BANK_ENTRY"


def test_consolidated_refuses_two_subsets_with_the_same_sum() -> None:
    # S2+S3 and S2+S4 both make 42,000: which settlements the credit pays is unknown.
    tables = copy.deepcopy(world())
    _two_same_day_settlements(tables)
    _third_settlement(tables, 12_000)
    add("bank", _lump_credit())(tables)
    outcomes = _run(tables)
    for settlement in ("setl_S2", "setl_S3", "setl_S4"):
        assert outcome(outcomes, "settlement", settlement)["reason_code"] == "MISSING_BANK_ENTRY"
    line = outcome(outcomes, "bank_entry", "bank_statement.csv:6")
    assert line["reason_code"] == "UNMATCHED_BANK_CREDIT"


def test_a_credit_with_a_known_utr_is_never_consolidated() -> None:
    # The lump credit names S2's UTR: it is S2's credit (with the wrong amount), not a
    # consolidated one.
    tables = copy.deepcopy(world())
    _two_same_day_settlements(tables)
    add("bank", {**_lump_credit(), "reference": "YESBN00000000002"})(tables)
    outcomes = _run(tables)
    s2 = outcome(outcomes, "settlement", "setl_S2")
    assert (s2["reason_code"], s2["match_method"]) == ("BANK_UTR_AMOUNT_MISMATCH", "utr")
    assert outcome(outcomes, "settlement", "setl_S3")["reason_code"] == "MISSING_BANK_ENTRY"


def test_fallback_matches_do_not_depend_on_row_order() -> None:
    tables = _without_s1_credit()
    add("bank", _credit(_mistyped(UTR1, 1)))(tables)
    _two_same_day_settlements(tables)
    add("bank", _lump_credit())(tables)
    forward = _run(tables)
    for table in tables.values():
        table.reverse()
    for number, line in enumerate(reversed(tables["bank"])):
        line["line_no"] = number + 2
    backward = _run(tables)
    keys = ["entity_type", "entity_id", "status", "reason_codes", "match_method"]
    settlements_forward = forward[forward["entity_type"] == "settlement"][keys]
    settlements_backward = backward[backward["entity_type"] == "settlement"][keys]
    assert settlements_forward.reset_index(drop=True).equals(
        settlements_backward.reset_index(drop=True)
    )
