"""The investigator's honest evaluation: ambiguous cases labelled by construction, a
reliability table (confidence against accuracy) and usefulness checks, all said to be
measured on the synthetic benchmark."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd

from core.benchmark import ambiguous
from core.benchmark.generator import generate, read_ground_truth
from core.evaluation import format_ambiguous, run_evaluation
from core.investigate.evaluation import predict_root_causes

ROOT = Path(__file__).resolve().parent.parent


def test_ambiguous_cases_are_planted_only_when_asked_and_labelled_by_construction(
    tmp_path: Path,
) -> None:
    plain = generate(tmp_path / "plain", payments=600, seed=7)
    again = generate(tmp_path / "again", payments=600, seed=7, ambiguous=False)
    hard = generate(tmp_path / "hard", payments=600, seed=7, ambiguous=True)
    assert plain.fingerprint == again.fingerprint != hard.fingerprint
    assert not read_ground_truth(plain.ground_truth)["scenario"].str.contains("ambiguous").any()
    truth = read_ground_truth(hard.ground_truth)
    cases = truth[truth["scenario"].str.startswith("payment/ambiguous_")]
    by_scenario = cases.groupby("scenario")["root_cause"].agg(set).to_dict()
    assert by_scenario == {f"payment/{name}": {cause} for name, cause in ambiguous.CASES.items()}
    assert (cases.groupby("scenario").size() == ambiguous.PER_CASE).all()
    late = cases[cases["scenario"] == "payment/ambiguous_late_gst_followed_fee"]
    # A fee raised above the benchmark's contracted plan is also an overcharge against it.
    assert (
        late["reason_codes"]
        == "SETTLEMENT_AMOUNT_DISCREPANCY;FEE_OVERCHARGED;TIMING_WINDOW_EXCEEDED"
    ).all()


def test_the_ambiguous_cases_are_scored_with_reliability_and_usefulness() -> None:
    report = run_evaluation(
        payments=600, seed=7, root_cause_predictor=predict_root_causes, ambiguous=True
    )
    score = report.ambiguous
    assert score is not None
    assert score.labelled == len(ambiguous.CASES) * ambiguous.PER_CASE
    assert sum(b.answers for b in score.reliability) == score.labelled
    assert set(score.by_scenario) == {f"payment/{name}" for name in ambiguous.CASES}
    assert score.cites_entity == score.cites_amount == score.cites_counterparty == 1.0
    assert score.accuracy == 1.0
    # Combined faults cost confidence: not every answer sits in the top bin.
    assert score.reliability[-1].answers < score.labelled
    text = format_ambiguous(report)
    assert "labelled by construction" in text and "SYNTHETIC" in text
    assert "confidence reliability, measured on the ambiguous cases" in text
    assert report.held_out.investigator is not None
    assert report.held_out.investigator.labelled == report.held_out.expected["exception"]


def test_an_overconfident_investigator_shows_up_in_the_reliability_table() -> None:
    def always_gst(conn: sqlite3.Connection, run_id: int) -> pd.DataFrame:
        frame = predict_root_causes(conn, run_id)
        fees = frame["root_cause"] == "FEE_CHARGED_DIFFERENTLY"
        frame.loc[fees, "root_cause"] = "GST_CHARGED_DIFFERENTLY"
        frame["confidence"] = 0.95
        return frame

    score = run_evaluation(
        payments=600, seed=7, root_cause_predictor=always_gst, ambiguous=True
    ).ambiguous
    assert score is not None
    top = score.reliability[-1]
    assert top.answers == score.labelled and top.mean_confidence == 0.95
    assert top.accuracy is not None and top.accuracy < 0.5  # 0.95 said, under half right
    assert score.by_scenario["payment/ambiguous_gst_followed_fee"][1] == 0


def test_evaluation_script_prints_the_reliability_table_and_the_ambiguous_cases() -> None:
    text = subprocess.run(
        [sys.executable, "evaluation.py", "--payments", "600", "--seed", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "confidence reliability, measured on this split of the SYNTHETIC benchmark" in text
    assert "AMBIGUOUS CASES (combined faults, labelled by construction" in text
    assert "usefulness: names the entity" in text
