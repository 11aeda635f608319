"""Scoring outcomes against labels: what counts as right, and the metrics built on it."""

from __future__ import annotations

import pandas as pd
import pytest

from core.evaluation import confusion_by_code, join_outcomes, root_cause_accuracy, score

LABELS = pd.DataFrame(
    [
        # type, id, status, reason_code, reason_codes, match_method, class, root cause, split
        ("payment", "pay_a", "MATCHED", "", "", "", "", "", "development"),
        ("payment", "pay_b", "EXCEPTION", "AMOUNT_MISMATCH",
         "AMOUNT_MISMATCH;TIMING_WINDOW_EXCEEDED", "", "amount_at_risk", "SETTLED_AMOUNT_LOWER",
         "held_out"),
        ("payment", "pay_c", "PENDING", "ON_HOLD", "ON_HOLD", "", "", "", "development"),
        ("settlement", "setl_a", "MATCHED", "", "", "fuzzy_utr", "", "", "held_out"),
        ("refund", "rfnd_a", "EXCEPTION", "WRONG_MAPPING", "WRONG_MAPPING", "", "structural",
         "MAPPED_TO_OTHER_PAYMENT", "development"),
    ],
    columns=["entity_type", "entity_id", "status", "reason_code", "reason_codes", "match_method",
             "exposure_class", "root_cause", "split"],
)  # fmt: skip
LABELS["scenario"] = LABELS["entity_type"] + "/x"


def _outcomes(rows: list[tuple[str, ...]]) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows,
        columns=["entity_type", "entity_id", "status", "reason_code", "reason_codes",
                 "match_method", "exposure_class", "exposure_amount"],
    )  # fmt: skip
    return frame


PERFECT = [
    ("payment", "pay_a", "MATCHED", "", "", "", "", "0"),
    ("payment", "pay_b", "EXCEPTION", "AMOUNT_MISMATCH", "TIMING_WINDOW_EXCEEDED;AMOUNT_MISMATCH",
     "", "amount_at_risk", "1500"),
    ("payment", "pay_c", "PENDING", "ON_HOLD", "ON_HOLD", "", "", "0"),
    ("settlement", "setl_a", "MATCHED", "", "", "fuzzy_utr", "", "0"),
    ("refund", "rfnd_a", "EXCEPTION", "WRONG_MAPPING", "WRONG_MAPPING", "", "structural", "0"),
]  # fmt: skip


def test_perfect_outcomes_score_one_hundred_percent() -> None:
    report = score(join_outcomes(_outcomes(PERFECT), LABELS), throughput=10.0)
    assert report.records == 5
    assert (report.matched, report.pending, report.exceptions) == (2, 1, 2)
    assert report.accuracy == 1.0
    assert (report.precision, report.recall) == (1.0, 1.0)
    assert (report.false_positives, report.false_negatives) == (0, 0)
    assert report.by_code["AMOUNT_MISMATCH"].exposure == 1500
    assert report.by_class["amount_at_risk"].exposure == 1500
    assert report.by_class["structural"].correct == 1
    assert report.throughput == 10.0
    assert report.root_cause_accuracy is None


def test_a_wrong_primary_code_is_a_false_positive_and_a_false_negative() -> None:
    rows = list(PERFECT)
    rows[1] = ("payment", "pay_b", "EXCEPTION", "TIMING_WINDOW_EXCEEDED",
               "AMOUNT_MISMATCH;TIMING_WINDOW_EXCEEDED", "", "structural", "0")  # fmt: skip
    report = score(join_outcomes(_outcomes(rows), LABELS), throughput=1.0)
    assert report.accuracy == 0.8
    assert (report.true_positives, report.false_positives, report.false_negatives) == (1, 1, 1)
    assert report.precision == 0.5 and report.recall == 0.5
    assert report.by_code["AMOUNT_MISMATCH"].recall == 0.0
    assert report.by_code["TIMING_WINDOW_EXCEEDED"].precision == 0.0


def test_missing_secondary_code_or_fallback_makes_an_outcome_wrong() -> None:
    rows = list(PERFECT)
    rows[1] = ("payment", "pay_b", "EXCEPTION", "AMOUNT_MISMATCH", "AMOUNT_MISMATCH", "",
               "amount_at_risk", "1500")  # fmt: skip
    rows[3] = ("settlement", "setl_a", "MATCHED", "", "", "utr", "", "0")
    joined = join_outcomes(_outcomes(rows), LABELS)
    report = score(joined, throughput=1.0)
    assert report.correct == 3
    assert report.precision == 1.0  # detection is by primary code
    wrong = set(joined.loc[~joined["correct"], "entity_id"])
    assert wrong == {"pay_b", "setl_a"}


def test_exact_match_method_names_are_not_compared_but_fallbacks_are() -> None:
    rows = list(PERFECT)
    rows[0] = ("payment", "pay_a", "MATCHED", "", "", "utr", "", "0")
    assert score(join_outcomes(_outcomes(rows), LABELS), throughput=1.0).accuracy == 1.0
    rows[0] = ("payment", "pay_a", "MATCHED", "", "", "consolidated", "", "0")
    assert score(join_outcomes(_outcomes(rows), LABELS), throughput=1.0).accuracy == 0.8


def test_a_missing_outcome_and_an_unexpected_one_both_count_as_wrong() -> None:
    rows = [r for r in PERFECT if r[1] != "rfnd_a"]
    rows.append(("payment", "pay_failed", "EXCEPTION", "STATUS_MISMATCH", "STATUS_MISMATCH", "",
                 "amount_at_risk", "700"))  # fmt: skip
    joined = join_outcomes(_outcomes(rows), LABELS)
    report = score(joined, throughput=1.0)
    assert report.records == 6
    assert report.correct == 4
    assert report.false_negatives == 1  # rfnd_a never reported
    assert report.false_positives == 1  # pay_failed should have had no outcome
    assert not joined.loc[joined["entity_id"] == "pay_failed", "labelled"].item()


def test_confusion_matrix_counts_labels_against_outcomes() -> None:
    rows = list(PERFECT)
    rows[2] = ("payment", "pay_c", "MATCHED", "", "", "", "", "0")
    table = confusion_by_code(join_outcomes(_outcomes(rows), LABELS))
    assert table.loc["PENDING:ON_HOLD", "MATCHED"] == 1
    assert table.loc["MATCHED", "MATCHED"] == 2
    assert table.loc["EXCEPTION:AMOUNT_MISMATCH", "EXCEPTION:AMOUNT_MISMATCH"] == 1
    assert int(table.to_numpy().sum()) == 5


@pytest.mark.parametrize(
    ("predicted", "expected"),
    [
        ({"pay_b": "SETTLED_AMOUNT_LOWER", "rfnd_a": "MAPPED_TO_OTHER_PAYMENT"}, 1.0),
        ({"pay_b": "SETTLED_AMOUNT_HIGHER", "rfnd_a": "MAPPED_TO_OTHER_PAYMENT"}, 0.5),
        ({"pay_b": "SETTLED_AMOUNT_LOWER"}, 0.5),
    ],
)
def test_root_cause_accuracy_scores_predictions_against_labels(
    predicted: dict[str, str], expected: float
) -> None:
    joined = join_outcomes(_outcomes(PERFECT), LABELS)
    predictions = pd.DataFrame(
        {
            "entity_type": ["payment" if k.startswith("pay") else "refund" for k in predicted],
            "entity_id": list(predicted),
            "root_cause": list(predicted.values()),
        }
    )
    assert root_cause_accuracy(joined, predictions) == expected
    assert score(joined, throughput=1.0, root_causes=predictions).root_cause_accuracy == expected
