"""Six seeds, six different datasets: the engine agrees with every label on each."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.benchmark import generate, read_ground_truth
from core.benchmark.fees import PRICING_FILE
from core.evaluation import join_outcomes, read_pricing_plan, score

SEEDS = ((1, 300), (2, 450), (3, 600), (4, 800), (5, 1000), (6, 1500))


def test_six_seeds_have_different_fingerprints_and_full_agreement(tmp_path: Path) -> None:
    engine = pytest.importorskip("core.engine")
    ingest = pytest.importorskip("core.ingest")
    prints = set()
    for seed, payments in SEEDS:
        folder = tmp_path / str(seed)
        generated = generate(folder, payments=payments, seed=seed)
        prints.add(generated.fingerprint)
        dataset, _ = ingest.load_dataset(folder)
        # With the merchant's plan the benchmark writes, as evaluation.py runs it.
        plans = read_pricing_plan(folder / PRICING_FILE)
        outcomes = engine.reconcile(dataset, engine.EngineParams(), generated.as_of, plans)
        engine.write_results_csv(outcomes, folder / "results.csv")
        results = pd.read_csv(folder / "results.csv", dtype=str, keep_default_na=False)
        joined = join_outcomes(results, read_ground_truth(generated.ground_truth))
        wrong = joined.loc[~joined["correct"]]
        assert wrong.empty, f"seed {seed}:\n{wrong.head(20).to_string()}"
        report = score(joined, throughput=0.0)
        assert report.accuracy == 1.0
        assert (report.precision, report.recall) == (1.0, 1.0)
        held = score(joined[joined["split"] == "held_out"], throughput=0.0)
        assert held.accuracy == 1.0
    assert len(prints) == len(SEEDS)
