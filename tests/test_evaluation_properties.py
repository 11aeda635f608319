"""Properties of the engine on generated data (hypothesis): one outcome per entity,
repeatable, blind to row order, and quiet when no fault is planted."""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.benchmark import generate, read_ground_truth

engine = pytest.importorskip("core.engine")
ingest = pytest.importorskip("core.ingest")

SETTINGS = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
sizes = st.integers(min_value=200, max_value=600)
seeds = st.integers(min_value=0, max_value=100_000)
ENTITY_FILES = ("payments.csv", "refunds.csv", "settlements.csv", "settlement_recon.csv")


def _reconcile(folder: Path, as_of: int) -> pd.DataFrame:
    dataset, _ = ingest.load_dataset(folder)
    outcomes = engine.reconcile(dataset, engine.EngineParams(), as_of)
    return outcomes.reset_index(drop=True)


def _results_bytes(outcomes: pd.DataFrame, path: Path) -> bytes:
    engine.write_results_csv(outcomes, path)
    return path.read_bytes()


@SETTINGS
@given(payments=sizes, seed=seeds)
def test_every_entity_gets_exactly_one_outcome(tmp_path_factory, payments: int, seed: int) -> None:
    folder = tmp_path_factory.mktemp("one")
    generated = generate(folder, payments=payments, seed=seed)
    outcomes = _reconcile(folder, generated.as_of)
    keys = list(zip(outcomes["entity_type"], outcomes["entity_id"], strict=True))
    assert len(keys) == len(set(keys))
    truth = read_ground_truth(generated.ground_truth)
    assert set(keys) == set(zip(truth["entity_type"], truth["entity_id"], strict=True))
    assert set(outcomes["status"]) <= {"MATCHED", "PENDING", "EXCEPTION"}


@SETTINGS
@given(payments=sizes, seed=seeds)
def test_a_rerun_gives_identical_results(tmp_path_factory, payments: int, seed: int) -> None:
    folder = tmp_path_factory.mktemp("rerun")
    generated = generate(folder, payments=payments, seed=seed)
    first = _results_bytes(_reconcile(folder, generated.as_of), folder / "first.csv")
    second = _results_bytes(_reconcile(folder, generated.as_of), folder / "second.csv")
    assert first == second


def _shuffle_csv(path: Path, rng: random.Random) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    body = lines[1:]
    rng.shuffle(body)
    path.write_text(lines[0] + "".join(body), encoding="utf-8")


def _shuffle_bank(path: Path, rng: random.Random) -> dict[str, str]:
    """Shuffle the statement's transaction lines; returns old line id -> new line id."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith("********")) + 1
    order = list(range(first, len(lines)))
    rng.shuffle(order)
    path.write_text("".join(lines[:first] + [lines[i] for i in order]), encoding="utf-8")
    return {
        f"{path.name}:{old + 1}": f"{path.name}:{first + new + 1}" for new, old in enumerate(order)
    }


@SETTINGS
@given(payments=sizes, seed=seeds, shuffle_seed=st.integers(0, 2**32 - 1))
def test_shuffling_input_rows_changes_nothing(
    tmp_path_factory, payments: int, seed: int, shuffle_seed: int
) -> None:
    folder = tmp_path_factory.mktemp("shuffle")
    generated = generate(folder, payments=payments, seed=seed)
    before = _reconcile(folder, generated.as_of)
    original = (folder / "payments.csv").read_bytes()
    rng = random.Random(shuffle_seed)
    for name in ENTITY_FILES:
        _shuffle_csv(folder / name, rng)
    moved = _shuffle_bank(folder / "bank_statement.csv", rng)
    after = _reconcile(folder, generated.as_of)
    bank = before["entity_type"] == "bank_entry"
    before.loc[bank, "entity_id"] = before.loc[bank, "entity_id"].map(moved)
    columns = [c for c in before.columns if c != "entity_created_at"]
    expected = before[columns].sort_values(["entity_type", "entity_id"]).reset_index(drop=True)
    got = after[columns].sort_values(["entity_type", "entity_id"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(expected, got)
    assert (folder / "payments.csv").read_bytes() != original  # the shuffle moved rows


@SETTINGS
@given(payments=sizes, seed=seeds, bank=st.booleans())
def test_without_faults_every_entity_is_matched_or_pending(
    tmp_path_factory, payments: int, seed: int, bank: bool
) -> None:
    folder = tmp_path_factory.mktemp("clean")
    generated = generate(folder, payments=payments, seed=seed, faults=False, bank_statement=bank)
    outcomes = _reconcile(folder, generated.as_of)
    assert len(outcomes) > payments // 2
    assert set(outcomes["status"]) <= {"MATCHED", "PENDING"}
    assert "PENDING" in set(outcomes["status"])
