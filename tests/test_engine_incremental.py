"""Incremental runs (core.engine.incremental): a chain of daily loads, each reconciled
incrementally from the previous outcomes, gives exactly the outcomes of a full run over
the union of everything loaded so far, at every step (docs/engine.md, *Incremental runs*).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.benchmark import generate
from core.dataset import Dataset
from core.engine import EngineParams, reconcile
from core.engine.incremental import merge_rows, reconcile_incremental
from core.ingest import load_dataset
from tests.incremental_support import daily_loads

PARAMS = EngineParams()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, int]:
    """A 300-payment benchmark with faults and the whole money model (disputes, transfers,
    instant settlements, fuzzy and consolidated bank credits), as the importer reads it."""
    folder = tmp_path_factory.mktemp("incremental") / "dataset"
    generated = generate(folder, payments=300, seed=5)
    dataset, _ = load_dataset(Path(folder))
    return dataset, int(generated.as_of)


def _empty_outcomes() -> pd.DataFrame:
    return reconcile(Dataset(), PARAMS, 0)


def _chain(world: tuple[Dataset, int], **shape: float | int) -> list[dict[str, int]]:
    """Reconcile every load incrementally and in full; assert both agree at each step."""
    dataset, as_of = world
    stored, previous = Dataset(has_bank_statement=True), _empty_outcomes()
    reports = []
    for load in daily_loads(dataset, as_of, **shape):  # type: ignore[arg-type]
        merged, replaced = merge_rows(stored, load.day)
        full = reconcile(merged, PARAMS, load.as_of)
        step = reconcile_incremental(merged, load.day, replaced, previous, PARAMS, load.as_of)
        pd.testing.assert_frame_equal(step.outcomes, full)
        reports.append(step.stats)
        stored, previous = merged, step.outcomes
    return reports


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    days=st.integers(10, 13),
    late_share=st.sampled_from([0.0, 0.05, 0.2]),
    bank_late_share=st.sampled_from([0.0, 0.3, 0.6]),
    correction_share=st.sampled_from([0.0, 0.03, 0.08]),
    resend_share=st.sampled_from([0.0, 0.05]),
    seed=st.integers(0, 2**32 - 1),
)
def test_incremental_chain_equals_full_run_over_random_daily_loads(
    world: tuple[Dataset, int],
    days: int,
    late_share: float,
    bank_late_share: float,
    correction_share: float,
    resend_share: float,
    seed: int,
) -> None:
    reports = _chain(
        world,
        days=days,
        late_share=late_share,
        bank_late_share=bank_late_share,
        correction_share=correction_share,
        resend_share=resend_share,
        seed=seed,
    )
    assert len(reports) == days + 1
    assert all(r["reconciled"] + r["carried_forward"] > 0 for r in reports)


def test_late_rows_and_corrections_of_every_table_keep_the_chain_identical(
    world: tuple[Dataset, int],
) -> None:
    """The harshest fixed shape: many late rows, a late bank statement, many corrections."""
    reports = _chain(
        world,
        days=10,
        late_share=0.3,
        bank_late_share=0.7,
        correction_share=0.15,
        resend_share=0.1,
        seed=2026,
    )
    assert sum(r["reconciled"] for r in reports[1:]) > 0
