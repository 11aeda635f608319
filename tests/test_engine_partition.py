"""The engine run by settlement windows (core.engine.partition) gives exactly the outcomes
of the single-process engine: on seeded benchmarks, the spec's worked example and every
independent dataset, with windows of one and of several settlement days."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.benchmark import generate
from core.engine import EngineParams, reconcile
from core.engine.cli import params_from_args, parse_as_of, register
from core.engine.partition import (
    assign,
    components,
    reconcile_partitioned,
    settlement_windows,
    window_dataset,
)
from core.ingest import load_dataset
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import load_example, ts
from tests.independent.writer import write_suite


def _same(dataset, params: EngineParams, as_of: int, days: int) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    single = reconcile(dataset, params, as_of)
    parted = reconcile_partitioned(dataset, params, as_of, days_per_window=days)
    pd.testing.assert_frame_equal(parted, single)
    return single


@pytest.mark.parametrize(("seed", "payments", "days"), [(3, 3000, 1), (11, 4000, 3), (29, 5000, 2)])
def test_partitioned_outcomes_equal_single_process_on_seeded_benchmarks(
    tmp_path: Path, seed: int, payments: int, days: int
) -> None:
    generated = generate(tmp_path / "ds", payments=payments, seed=seed)
    dataset, _ = load_dataset(tmp_path / "ds")
    params = EngineParams()
    assignment = assign(dataset, params, generated.as_of, 1)
    assert assignment.windows > 10  # a window per settlement day: every boundary is crossed
    single = _same(dataset, params, generated.as_of, days)
    # The links that cross days are there to be kept: fallbacks, instant payouts, disputes.
    methods = set(single["match_method"].dropna().astype(str))
    assert {"utr", "fuzzy_utr", "consolidated"} <= methods
    assert {"dispute", "instant_settlement", "transfer"} <= set(single["entity_type"].astype(str))


def test_partitioned_outcomes_equal_single_process_without_money_model_or_bank(
    tmp_path: Path,
) -> None:
    for name, options in (("spec", {"money_model": False}), ("nobank", {"bank_statement": False})):
        generated = generate(tmp_path / name, payments=3000, seed=5, **options)  # type: ignore[arg-type]
        dataset, _ = load_dataset(tmp_path / name)
        _same(dataset, EngineParams(), generated.as_of, 1)


def test_partitioned_outcomes_equal_single_process_on_the_spec_example() -> None:
    dataset = load_example(SPEC_EXAMPLE / "dataset")
    as_of = ts("2026-06-30T23:59:59+05:30")
    for days in (1, 2, 3):
        _same(dataset, EngineParams(), as_of, days)


def _cli_args(folder: Path, options: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["reconcile", str(folder), "--out", "-", *options])


def test_partitioned_outcomes_equal_single_process_on_every_independent_dataset(
    tmp_path: Path,
) -> None:
    specs = write_suite(tmp_path)
    assert len(specs) >= 8
    for spec in specs:
        args = _cli_args(spec.folder, spec.options)
        dataset, _ = load_dataset(spec.folder, args.amount_unit)
        _same(dataset, params_from_args(args), parse_as_of(args.as_of), 1)


def test_every_outcome_is_reported_by_exactly_one_window_and_windows_stay_small(
    tmp_path: Path,
) -> None:
    generated = generate(tmp_path / "ds", payments=3000, seed=8)
    dataset, _ = load_dataset(tmp_path / "ds")
    assignment = assign(dataset, EngineParams(), generated.as_of, 2)
    reported: dict[str, list[str]] = {"payment": [], "recon_row": [], "settlement": []}
    largest = 0
    for window in range(assignment.windows):
        sub, owned = window_dataset(dataset, assignment, window)
        largest = max(largest, len(sub.recon))
        for kind in reported:
            reported[kind] += owned.ids[kind].to_pylist()
        # The halo: a window reconciles more settlements than it reports.
        assert set(owned.ids["settlement"].to_pylist()) <= set(sub.settlements["id"].astype(str))
    for kind, ids in reported.items():
        assert len(ids) == len(set(ids)), kind  # never by two windows
    assert sorted(reported["payment"]) == sorted(dataset.payments["id"].astype(str))
    assert sorted(reported["settlement"]) == sorted(dataset.settlements["id"].astype(str))
    # Links across settlements (duplicates, disputes, reversals) do not chain the windows
    # together: no window holds more than a few windows' share of the recon rows.
    assert largest < 4 * len(dataset.recon) / assignment.windows


def test_settlement_windows_take_settlement_days_a_few_at_a_time(tmp_path: Path) -> None:
    generate(tmp_path / "ds", payments=3000, seed=8)
    dataset, _ = load_dataset(tmp_path / "ds")
    days = np.unique((dataset.settlements["created_at"].to_numpy(np.int64) + 19800) // 86400)
    one = settlement_windows(dataset, 1)
    three = settlement_windows(dataset, 3)
    assert set(days) <= set(one)  # instant settlements may add days of their own
    assert len(three) == -(-len(one) // 3)
    assert list(three) == list(one[::3])


def test_components_join_every_linked_node_and_only_those() -> None:
    left = np.array([0, 2, 5, 6], dtype=np.int64)
    right = np.array([1, 3, 6, 2], dtype=np.int64)
    labels = components(8, left, right)
    assert labels.tolist() == [0, 0, 2, 2, 4, 2, 2, 7]
