"""The benchmark's contracted pricing (core.benchmark.fees): a plan file beside the data,
planted fee overcharges labelled FEE_OVERCHARGED and scored 100/100 by the evaluation, a
tax invoice with one planted difference found by the GST tie-out, and the cold start that
stores the plan so the app shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from core.benchmark import generate
from core.benchmark.fees import (
    INVOICE_EXTRA_PAISE,
    INVOICE_FILE,
    INVOICE_TRUTH_FILE,
    PRICING_FILE,
    invoice_month,
)
from core.books.gst import parse_invoice_file, tie_out
from core.books.pricing import fee_check, overcharged
from core.evaluation import read_pricing_plan, run_evaluation
from core.pipeline import load_folder


def test_planted_overcharges_are_scored_100_percent_full_and_held_out(tmp_path: Path) -> None:
    report = run_evaluation(payments=2000, seed=7, work_dir=tmp_path)
    for split in (report.full, report.held_out):
        score = split.by_code["FEE_OVERCHARGED"]
        assert score.expected >= 1 and score.correct == score.expected == score.reported
        assert (score.precision, score.recall) == (1.0, 1.0)
        assert split.accuracy == 1.0 and split.precision == 1.0 and split.recall == 1.0
    labels = pd.read_csv(tmp_path / "ground_truth.csv", dtype=str, keep_default_na=False)
    planted = labels[labels["scenario"] == "payment/fee_overcharged"]
    assert len(planted) >= 3
    assert set(planted["reason_code"]) == {"FEE_OVERCHARGED"}
    assert set(planted["root_cause"]) == {"FEE_ABOVE_CONTRACT"}
    # The invoice's planted difference is found, and its label left the dataset folder.
    assert report.invoice is not None and report.invoice.found
    assert report.invoice.planted_fee == INVOICE_EXTRA_PAISE
    assert not (tmp_path / "dataset" / INVOICE_TRUTH_FILE).exists()


def test_the_planted_overcharges_charge_fee_and_gst_consistently_above_the_plan(
    tmp_path: Path,
) -> None:
    generated = generate(tmp_path, payments=1000, seed=3)
    plans = read_pricing_plan(tmp_path / PRICING_FILE)
    dataset = load_folder(tmp_path).dataset
    over = overcharged(fee_check(dataset, plans)).set_index("payment_id")
    labels = pd.read_csv(generated.ground_truth, dtype=str, keep_default_na=False)
    planted = set(labels.loc[labels["scenario"] == "payment/fee_overcharged", "entity_id"])
    listed = labels["reason_codes"].str.split(";").map(lambda c: "FEE_OVERCHARGED" in c)
    assert planted <= set(over.index)
    assert set(over.index) == set(labels.loc[listed, "entity_id"])
    pay = dataset.payments.set_index("id").loc[sorted(planted)]
    base = pay["fee"] - pay["tax"]
    assert ((base * 18 + 50) // 100 == pay["tax"]).all()  # GST is 18% of the higher fee


def test_without_faults_the_plan_finds_no_overcharge_and_the_invoice_ties_out(
    tmp_path: Path,
) -> None:
    generated = generate(tmp_path, payments=600, seed=5, faults=False)
    plans = read_pricing_plan(tmp_path / PRICING_FILE)
    dataset = load_folder(tmp_path).dataset
    assert overcharged(fee_check(dataset, plans)).empty
    month = invoice_month(generated.as_of)
    invoice = parse_invoice_file(tmp_path / INVOICE_FILE, month)
    result = tie_out(dataset, month, invoice)
    assert (result.invoice_fee_difference, result.invoice_gst_difference) == (0, 0)
    assert result.invoice_basis == "payment"
    truth = json.loads((tmp_path / INVOICE_TRUTH_FILE).read_text())
    assert truth["fee_difference"] == 0
