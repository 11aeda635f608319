"""Linking a bank credit to its settlement by UTR (spec sections 3 and 5).

The spec normalises UTRs by upper-casing and removing spaces, dashes and slashes, and a
credit carries its settlement's UTR "in the reference column and/or inside the
narration". Applied to a whole narration that normalisation removes the separators, so
a UTR counts wherever it sits inside the text, not only as a separate word.
"""

from __future__ import annotations

import copy
from typing import Any

from core.engine import EngineParams, reconcile
from core.ingest.utr import extract_utr
from tests.engine_support import AS_OF, UTR1, build, drop, outcome, world

SETL = ("settlement", "setl_S1")
S1_LINE = ("bank_entry", "bank_statement.csv:5")  # the first line added after world()'s four


def _credit(narration: str, reference: str, amount: int = 48_000) -> dict[str, Any]:
    """A credit line as the importer hands it over (its `utr` found the importer's way)."""
    return {
        "txn_date": "2026-06-03",
        "narration": narration,
        "reference": reference,
        "utr": extract_utr(narration, reference),
        "credit": amount,
    }


def _with_credits(*credits: dict[str, Any], keep_original: bool = False) -> Any:
    tables = copy.deepcopy(world())
    if not keep_original:
        drop("bank", reference=UTR1)(tables)
    tables["bank"].extend(credits)
    return reconcile(build(tables), EngineParams(), AS_OF)


def test_a_utr_glued_to_the_following_narration_text_links_its_credit() -> None:
    outcomes = _with_credits(_credit(f"RTGS CR-{UTR1}RAZORPAY SOFTWARE PVT LTD", ""))
    settlement = outcome(outcomes, *SETL)
    assert (settlement["status"], settlement["match_method"]) == ("MATCHED", "utr")
    line = outcome(outcomes, *S1_LINE)
    assert (line["status"], line["settlement_id"]) == ("MATCHED", "setl_S1")


def test_a_utr_inside_a_zero_padded_reference_links_its_credit() -> None:
    outcomes = _with_credits(_credit("IMPS CR RAZORPAY SOFTWARE PVT LTD", f"0000{UTR1}"))
    assert outcome(outcomes, *SETL)["status"] == "MATCHED"
    assert outcome(outcomes, *S1_LINE)["settlement_id"] == "setl_S1"


def test_a_second_credit_holding_the_utr_inside_its_text_is_a_duplicate_bank_credit() -> None:
    glued = _credit(f"NEFT CR-{UTR1}RAZORPAY", "")
    outcomes = _with_credits(glued, keep_original=True)
    assert outcome(outcomes, *SETL)["reason_code"] == "DUPLICATE_BANK_CREDIT"


def test_a_utr_shorter_than_the_minimum_is_never_looked_for_inside_text() -> None:
    tables = copy.deepcopy(world())
    tables["settlements"][0]["utr"] = "5393"  # part of the ACME credit's reference
    outcomes = reconcile(build(tables), EngineParams(), AS_OF)
    assert outcome(outcomes, *SETL)["reason_code"] == "MISSING_BANK_ENTRY"
    assert ("bank_entry", "bank_statement.csv:4") not in set(
        zip(outcomes["entity_type"], outcomes["entity_id"], strict=True)
    )
