"""The held-out report carries the deterministic investigator's root-cause accuracy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.evaluation import run_evaluation
from core.investigate.evaluation import predict_root_causes

ROOT = Path(__file__).resolve().parent.parent


def test_root_cause_accuracy_is_measured_when_a_predictor_is_given() -> None:
    report = run_evaluation(payments=600, seed=7, root_cause_predictor=predict_root_causes)
    assert report.full.root_cause_accuracy is not None
    assert report.full.root_cause_accuracy >= 0.95
    assert report.held_out.root_cause_accuracy is not None


def test_root_cause_accuracy_is_not_invented_without_a_predictor() -> None:
    report = run_evaluation(payments=600, seed=7)
    assert report.full.root_cause_accuracy is None


def test_evaluation_script_reports_root_cause_accuracy_and_says_synthetic() -> None:
    text = subprocess.run(
        [sys.executable, "evaluation.py", "--payments", "600", "--seed", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "SYNTHETIC" in text
    assert "root-cause accuracy" in text and "not measured" not in text
    data = json.loads(
        subprocess.run(
            [sys.executable, "evaluation.py", "--payments", "600", "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert data["held_out"]["root_cause_accuracy"] is not None
