"""The evaluation reports the money model's cases per entity type and per code, in the full
and the held-out report (scored against whatever engine is in the tree)."""

from __future__ import annotations

import pandas as pd

from core.benchmark import rules
from core.evaluation import format_report, join_outcomes, run_evaluation, score


def test_new_cases_show_in_both_reports() -> None:
    report = run_evaluation(payments=400, seed=4, money_model=True)
    for part in (report.full, report.held_out):
        for entity_type in ("dispute", "transfer", "instant_settlement"):
            assert part.by_entity_type[entity_type].records >= 1, entity_type
        for code in rules.MONEY_MODEL_CODES:
            assert part.by_code[code].expected >= 1, code
        assert part.by_pending[rules.DISPUTE_UNDER_REVIEW].expected >= 1
        assert part.by_class["realised_loss"].expected >= 1
    text = format_report(report)
    assert "entity type" in text and "DISPUTE_LOST" in text
    assert "SYNTHETIC" in text and "not accuracy on production data" in text
    assert "by_entity_type" in report.to_dict()["held_out"]


def test_direct_is_compared_when_labelled() -> None:
    truth = pd.DataFrame(
        {
            "entity_type": ["payment", "payment"],
            "entity_id": ["pay_a", "pay_b"],
            "status": ["MATCHED", "MATCHED"],
            "reason_code": ["", ""],
            "reason_codes": ["", ""],
            "match_method": ["direct", ""],
            "exposure_class": ["", ""],
            "root_cause": ["", ""],
            "split": ["development", "held_out"],
            "scenario": ["payment/settled_by_other", "payment/clean"],
        }
    )
    results = truth[["entity_type", "entity_id", "status", "reason_code", "reason_codes"]].assign(
        match_method=["utr", "utr"], exposure_class="", exposure_amount="0"
    )
    joined = join_outcomes(results, truth)
    assert list(joined["correct"]) == [False, True]
    report = score(joined, throughput=0.0)
    assert report.by_entity_type["payment"].records == 2
    assert report.by_entity_type["payment"].correct == 1
