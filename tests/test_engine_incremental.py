"""Incremental runs (core.engine.incremental): a chain of daily loads, each reconciled
incrementally from the previous outcomes, gives exactly the outcomes of a full run over
the union of everything loaded so far, at every step (docs/engine.md, *Incremental runs*).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.benchmark import generate
from core.dataset import Dataset
from core.engine import EngineParams, reconcile
from core.engine.incremental import (
    FAMILY_JOINS,
    TABLE_KEYS,
    IncrementalState,
    _fingerprints,
    build_state,
    merge_rows,
    reconcile_incremental,
)
from core.engine.partition import PARTITION_JOINS, row_families
from core.ingest import load_dataset
from tests.incremental_support import daily_loads

PARAMS = EngineParams()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, int]:
    """A 250-payment benchmark with faults and the whole money model (disputes, transfers,
    instant settlements, fuzzy and consolidated bank credits), as the importer reads it."""
    folder = tmp_path_factory.mktemp("incremental") / "dataset"
    generated = generate(folder, payments=250, seed=5)
    dataset, _ = load_dataset(Path(folder))
    return dataset, int(generated.as_of)


def _empty_outcomes() -> pd.DataFrame:
    return reconcile(Dataset(), PARAMS, 0)


def _chain(
    world: tuple[Dataset, int], params: EngineParams = PARAMS, **shape: float | int
) -> list[dict[str, int]]:
    """Reconcile every load incrementally and in full; assert both agree at each step, with
    the families carried from run to run (IncrementalState) and without them."""
    dataset, as_of = world
    stored = Dataset(has_bank_statement=dataset.has_bank_statement)
    previous = _empty_outcomes()
    state = build_state(stored)
    reports = []
    for load in daily_loads(dataset, as_of, **shape):  # type: ignore[arg-type]
        merged, replaced = merge_rows(stored, load.day)
        assert_absent_columns_kept(merged, replaced, load.day)
        full = reconcile(merged, params, load.as_of)
        step = reconcile_incremental(merged, load.day, replaced, previous, params, load.as_of)
        pd.testing.assert_frame_equal(step.outcomes, full)
        indexed = reconcile_incremental(
            merged, load.day, replaced, previous, params, load.as_of, state=state
        )
        pd.testing.assert_frame_equal(indexed.outcomes, full)
        assert indexed.state is not None
        assert_same_state(indexed.state, build_state(merged))
        reports.append(step.stats)
        stored, previous, state = merged, step.outcomes, indexed.state
    return reports


def assert_absent_columns_kept(merged: Dataset, replaced: Dataset, day: Dataset) -> None:
    """A stored row the day replaced keeps its values of the columns the day lacks (as the
    raw tables' upsert keeps them); the day's own values of the others."""
    for table, columns in day.absent.items():
        old = getattr(replaced, table)
        if not len(old) or not columns:
            continue
        key = TABLE_KEYS[table]
        now = getattr(merged, table).set_index(key).loc[old[key]]
        for column in columns:
            pd.testing.assert_series_equal(
                now[column].reset_index(drop=True), old[column].reset_index(drop=True)
            )


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = np.unique(np.stack([a, b]), axis=1)
    return pairs.shape[1] == len(np.unique(a)) == len(np.unique(b))


def assert_same_state(carried: IncrementalState, built: IncrementalState) -> None:
    """Same rows in the same families (labels may differ), and the key index finds, for
    every key, the family the rows carrying it are in."""
    tables = list(FAMILY_JOINS)
    for table in tables:
        assert carried.keys[table].equals(built.keys[table])
    a = np.concatenate([carried.family[t] for t in tables])
    b = np.concatenate([built.family[t] for t in tables])
    assert _same_partition(a, b)
    assert (a < carried.families).all()
    translate = dict(zip(a.tolist(), b.tolist(), strict=True))
    mapped = np.array([translate[x] for x in carried.key_family.tolist()], dtype=np.int64)
    assert (np.diff(carried.key_print.astype(np.float64)) >= 0).all()
    got = set(zip(carried.key_print.tolist(), mapped.tolist(), strict=True))
    assert got == set(zip(built.key_print.tolist(), built.key_family.tolist(), strict=True))


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    days=st.integers(10, 12),
    late_share=st.sampled_from([0.0, 0.05, 0.2]),
    bank_late_share=st.sampled_from([0.0, 0.3, 0.6]),
    correction_share=st.sampled_from([0.0, 0.03, 0.08]),
    resend_share=st.sampled_from([0.0, 0.05]),
    seed=st.integers(0, 2**32 - 1),
    dashboard_share=st.sampled_from([0.0, 0.5]),
)
def test_incremental_chain_equals_full_run_over_random_daily_loads(
    world: tuple[Dataset, int],
    days: int,
    late_share: float,
    bank_late_share: float,
    correction_share: float,
    resend_share: float,
    seed: int,
    dashboard_share: float,
) -> None:
    reports = _chain(
        world,
        days=days,
        late_share=late_share,
        bank_late_share=bank_late_share,
        correction_share=correction_share,
        resend_share=resend_share,
        seed=seed,
        dashboard_share=dashboard_share,
    )
    assert len(reports) == days + 1
    assert all(r["reconciled"] + r["carried_forward"] > 0 for r in reports)


def test_late_rows_and_corrections_of_every_table_keep_the_chain_identical(
    world: tuple[Dataset, int],
) -> None:
    """The harshest fixed shape: many late rows, a late bank statement, many corrections."""
    reports = _chain(
        world,
        days=8,
        late_share=0.3,
        bank_late_share=0.7,
        correction_share=0.15,
        resend_share=0.1,
        seed=2026,
    )
    assert sum(r["reconciled"] for r in reports[1:]) > 0


def test_days_in_a_layout_lacking_columns_keep_stored_values_and_the_chain_identical(
    world: tuple[Dataset, int],
) -> None:
    """Days downloaded from the Dashboard (no base_amount, card fields, recon payment_id,
    transfer status) among API days, corrections and re-sends of stored rows included: the
    merge keeps the stored values of what a day lacks, and the chain stays identical."""
    dataset, as_of = world
    loads = daily_loads(
        dataset,
        as_of,
        days=8,
        late_share=0.2,
        bank_late_share=0.3,
        correction_share=0.15,
        resend_share=0.2,
        seed=77,
        dashboard_share=0.6,
    )
    assert any(load.day.absent for load in loads)
    stored = Dataset(has_bank_statement=dataset.has_bank_statement)
    kept = 0
    for load in loads:
        merged, replaced = merge_rows(stored, load.day)
        if load.day.absent:
            kept += len(replaced.payments)
        stored = merged
    assert kept > 0  # stored payments were met by Dashboard days
    _chain(
        world,
        days=8,
        late_share=0.2,
        bank_late_share=0.3,
        correction_share=0.15,
        resend_share=0.2,
        seed=77,
        dashboard_share=0.6,
    )


@pytest.fixture(scope="module")
def quiet_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, int]:
    """800 payments without planted faults: what stays open is what time has not settled."""
    folder = tmp_path_factory.mktemp("incremental-quiet") / "dataset"
    generated = generate(folder, payments=800, seed=9, faults=False)
    dataset, _ = load_dataset(Path(folder))
    return dataset, int(generated.as_of)


def test_a_days_load_reconciles_a_small_part_and_carries_the_rest_forward(
    quiet_world: tuple[Dataset, int],
) -> None:
    dataset, as_of = quiet_world
    first, last = daily_loads(
        dataset, as_of, days=1, late_share=0.0, bank_late_share=0.0,
        correction_share=0.0, resend_share=0.0, seed=1,
    )  # fmt: skip
    base, _ = merge_rows(Dataset(has_bank_statement=True), first.day)
    previous = reconcile(base, PARAMS, first.as_of)
    merged, replaced = merge_rows(base, last.day)
    step = reconcile_incremental(merged, last.day, replaced, previous, PARAMS, last.as_of)

    pd.testing.assert_frame_equal(step.outcomes, reconcile(merged, PARAMS, last.as_of))
    total = len(step.outcomes)
    assert step.stats["reconciled"] + step.stats["carried_forward"] == total
    assert step.stats["reconciled"] * 5 < total
    assert step.stats["subset_payments"] * 5 < len(merged.payments)
    # A payment matched on the first day is carried forward untouched, row for row.
    matched = previous[(previous["entity_type"] == "payment") & (previous["status"] == "MATCHED")]
    oldest = matched.iloc[0]
    assert oldest["entity_id"] not in step.plan.keep["payment"].to_pylist()
    again = step.outcomes[
        (step.outcomes["entity_type"] == "payment")
        & (step.outcomes["entity_id"] == oldest["entity_id"])
    ]
    assert again.iloc[0].equals(oldest)


def _payment_outcome(outcomes: pd.DataFrame, entity_type: str, entity_id: str) -> pd.Series:
    rows = outcomes[(outcomes["entity_type"] == entity_type) & (outcomes["entity_id"] == entity_id)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_a_correction_reopens_a_matched_payment_and_its_settlement_then_closes_them(
    quiet_world: tuple[Dataset, int],
) -> None:
    dataset, as_of = quiet_world
    previous = reconcile(dataset, PARAMS, as_of)
    matched = previous[(previous["entity_type"] == "payment") & (previous["status"] == "MATCHED")]
    payment_id = str(matched.iloc[len(matched) // 2]["entity_id"])
    rows = dataset.recon[dataset.recon["entity_id"] == payment_id]
    settlement_id = str(rows.iloc[0]["settlement_id"])
    assert _payment_outcome(previous, "settlement", settlement_id)["status"] == "MATCHED"

    wrong = rows.copy()
    wrong["credit"] = wrong["credit"] - 100  # the gateway's corrected row: 1 rupee short
    day = Dataset(recon=wrong.reset_index(drop=True), has_bank_statement=True)
    merged, replaced = merge_rows(dataset, day)
    step = reconcile_incremental(merged, day, replaced, previous, PARAMS, as_of)
    pd.testing.assert_frame_equal(step.outcomes, reconcile(merged, PARAMS, as_of))
    payment = _payment_outcome(step.outcomes, "payment", payment_id)
    assert payment["status"] == "EXCEPTION"
    assert payment["reason_code"] == "SETTLEMENT_AMOUNT_DISCREPANCY"
    settlement = _payment_outcome(step.outcomes, "settlement", settlement_id)
    assert settlement["reason_code"] == "SETTLEMENT_SUM_MISMATCH"

    fixed = Dataset(recon=rows.reset_index(drop=True), has_bank_statement=True)
    merged_again, replaced_again = merge_rows(merged, fixed)
    back = reconcile_incremental(merged_again, fixed, replaced_again, step.outcomes, PARAMS, as_of)
    pd.testing.assert_frame_equal(back.outcomes, previous)


def test_the_first_transfers_switch_to_a_full_run_with_identical_outcomes(
    world: tuple[Dataset, int],
) -> None:
    """While no transfers file came, transfer rows are outcomes of their own; the first
    transfers change how every such row is judged, so nothing is carried forward."""
    dataset, as_of = world
    assert len(dataset.transfers) > 0
    without = replace(dataset, transfers=dataset.transfers.iloc[0:0])
    previous = reconcile(without, PARAMS, as_of)
    day = Dataset(transfers=dataset.transfers, has_bank_statement=True)
    merged, replaced = merge_rows(without, day)
    step = reconcile_incremental(merged, day, replaced, previous, PARAMS, as_of)
    assert step.stats["carried_forward"] == 0
    pd.testing.assert_frame_equal(step.outcomes, reconcile(merged, PARAMS, as_of))


def test_exceptions_the_as_of_cannot_move_are_carried_forward_at_any_later_or_earlier_as_of(
    world: tuple[Dataset, int],
) -> None:
    """A family's EXCEPTION that does not come from the clock (an amount mismatch, a
    duplicate, a wrong mapping, ...) is carried forward, not decided again; the outcomes
    still equal a full run with the as-of moved a month ahead or back to the middle of the
    payments, where PENDING items go overdue or overdue ones are pending again."""
    dataset, as_of = world
    created = dataset.payments["created_at"].to_numpy(dtype="int64")
    middle = int(sorted(created)[len(created) // 2])
    previous = reconcile(dataset, PARAMS, as_of)
    family = previous["entity_type"].isin(["payment", "refund", "transfer", "recon_row"])
    settled = (
        family
        & (previous["status"] == "EXCEPTION")
        & ~previous["reason_codes"].fillna("").str.contains("MISSING_RECONCILIATION_RECORD")
    )
    assert settled.sum() > 0
    empty = Dataset(has_bank_statement=True)
    for moved in (as_of + 30 * 86_400, middle):
        merged, replaced = merge_rows(dataset, empty)
        step = reconcile_incremental(merged, empty, replaced, previous, PARAMS, moved)
        pd.testing.assert_frame_equal(step.outcomes, reconcile(merged, PARAMS, moved))
        kept = set(step.plan.keep["payment"].to_pylist())
        settled_ids = set(previous.loc[settled, "entity_id"])
        assert len(settled_ids - kept) > 0
        assert step.stats["reconciled"] < int((previous["status"] != "MATCHED").sum())


def test_incremental_chain_equals_full_run_on_every_independent_dataset(tmp_path: Path) -> None:
    """Data we did not generate: the conformance datasets written from the spec alone
    (tests/independent), each with its own calendar options, cut into daily loads."""
    import argparse

    from core.engine.cli import params_from_args, parse_as_of, register
    from tests.independent.writer import write_suite

    specs = write_suite(tmp_path)
    assert len(specs) >= 8
    for number, spec in enumerate(specs):
        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        args = parser.parse_args(["reconcile", str(spec.folder), "--out", "-", *spec.options])
        dataset, _ = load_dataset(spec.folder, args.amount_unit)
        reports = _chain(
            (dataset, parse_as_of(args.as_of)),
            params_from_args(args),
            days=6,
            late_share=0.1,
            bank_late_share=0.3,
            correction_share=0.05,
            resend_share=0.05,
            seed=number,
        )
        assert sum(r["carried_forward"] for r in reports[1:]) > 0, spec.folder


def test_a_state_that_does_not_match_the_stored_rows_is_ignored_and_the_run_stays_exact(
    world: tuple[Dataset, int],
) -> None:
    """A state kept from other data (here: from a smaller stored dataset) must not steer
    the plan: it falls back to the closure over all rows and says so."""
    dataset, as_of = world
    loads = daily_loads(
        dataset,
        as_of,
        days=3,
        late_share=0.1,
        bank_late_share=0.3,
        correction_share=0.05,
        resend_share=0.0,
        seed=11,
    )
    stored = Dataset(has_bank_statement=dataset.has_bank_statement)
    previous = _empty_outcomes()
    for load in loads[:-1]:
        merged, _ = merge_rows(stored, load.day)
        stored, previous = merged, reconcile(merged, PARAMS, load.as_of)
    wrong = build_state(merge_rows(Dataset(), loads[0].day)[0])
    last = loads[-1]
    merged, replaced = merge_rows(stored, last.day)
    step = reconcile_incremental(
        merged, last.day, replaced, previous, PARAMS, last.as_of, state=wrong
    )
    pd.testing.assert_frame_equal(step.outcomes, reconcile(merged, PARAMS, last.as_of))
    assert step.stats["family_index"] == 0
    assert step.state is not None
    assert_same_state(step.state, build_state(merged))


def test_partition_components_lie_inside_incremental_families(
    world: tuple[Dataset, int],
) -> None:
    """One definition of a family (core.engine.partition.row_families): the incremental
    joins are a superset of the partitioner's, so every partition component is inside
    one incremental family."""
    dataset, _ = world
    tables = {t: getattr(dataset, t) for t in FAMILY_JOINS}
    narrow, _ = row_families(tables, PARTITION_JOINS)
    wide, _ = row_families(tables, FAMILY_JOINS, blank_is_key=True)
    for table in PARTITION_JOINS:
        for column, namespace in PARTITION_JOINS[table]:
            assert (column, namespace) in FAMILY_JOINS[table]
    a = np.concatenate([narrow[t] for t in PARTITION_JOINS])
    b = np.concatenate([wide[t] for t in PARTITION_JOINS])
    pairs = np.unique(np.stack([a, b]), axis=1)
    assert pairs.shape[1] == len(np.unique(a))  # each component maps to one family
    assert len(np.unique(b)) < len(np.unique(a))  # and families join some of them


def test_family_lookup_by_fingerprint_finds_every_family_of_a_seed_even_on_collisions(
    world: tuple[Dataset, int],
) -> None:
    """The state's key index finds every family carrying a seed key; two keys sharing a
    fingerprint only add families (a larger affected set, still exact)."""
    dataset, _ = world
    state = build_state(dataset)
    payment_ids = dataset.payments["id"].astype("string")
    seeds = pa.array(payment_ids.iloc[:5].tolist(), pa.large_string())
    found = state.families_of(seeds)
    assert set(np.flatnonzero(found)) == set(state.family["payments"][:5].tolist())
    # Force a collision: every key gets the seed's fingerprint; it finds every family.
    collided = replace(state, key_print=np.full_like(state.key_print, _fingerprints(seeds)[0]))
    everything = collided.families_of(seeds[:1])
    assert set(np.flatnonzero(everything)) == set(state.key_family.tolist())


def test_a_state_written_as_arrays_reads_back_the_same_and_bad_arrays_are_refused(
    world: tuple[Dataset, int],
) -> None:
    """`state_arrays` / `state_from_arrays` (the snapshot's state files) give back the state
    build_state made for the same dataset; arrays that cannot describe it (another size,
    a label out of range, an unsorted key index) give no state at all."""
    from core.engine.incremental import state_arrays, state_from_arrays

    dataset, _ = world
    built = build_state(dataset)
    arrays = state_arrays(built)
    back = state_from_arrays(dataset, built.families, arrays)
    assert back is not None
    assert_same_state(back, built)
    for table in FAMILY_JOINS:
        assert (back.family[table] == built.family[table]).all()
    family = arrays["family"].to_numpy()
    prints = arrays["key_print"].to_numpy()
    bad = [
        (built.families, {**arrays, "family": pa.array(family[:-1])}),
        (int(family.max()), arrays),  # the largest label out of range
        (built.families, {**arrays, "key_print": pa.array(prints[::-1].copy())}),
        (built.families, {k: v for k, v in arrays.items() if k != "key_family"}),
    ]
    for families, broken in bad:
        assert state_from_arrays(dataset, families, broken) is None


@settings(max_examples=60, deadline=None)
@given(
    ids=st.sets(
        st.text(alphabet="AZaz09_\u00e9\u00ff", min_size=3, max_size=3).filter(
            lambda t: len(t.encode()) == 4
        ),
        min_size=1,
        max_size=60,
    ),
    picks=st.lists(st.integers(0, 2), min_size=60, max_size=60),
)
def test_fresh_ids_placed_among_carried_ids_by_binary_search_match_a_joint_sort(
    ids: set[str], picks: list[int]
) -> None:
    """`_merge_sorted` (fixed-width ids, non-ASCII bytes included) puts every fresh id where
    Arrow's byte-order sort of fresh and carried ids together puts it."""
    import pyarrow.compute as pc

    from core.engine.incremental import _merge_sorted

    ordered = sorted(ids, key=lambda t: t.encode())
    # 0: a previous id carried, 1: a previous id decided again (fresh), 2: a new fresh id.
    kinds = picks[: len(ordered)]
    previous = [t for t, k in zip(ordered, kinds, strict=True) if k in (0, 1)]
    carry = np.array([k == 0 for k in kinds if k in (0, 1)], dtype=bool)
    fresh = [t for t, k in zip(ordered, kinds, strict=True) if k in (1, 2)]
    carried = [t for t, c in zip(previous, carry, strict=True) if c]
    found = _merge_sorted(
        pa.chunked_array([pa.array(fresh, pa.large_string())]),
        pa.chunked_array([pa.array(previous, pa.large_string())]),
        carry,
    )
    if not previous:
        assert found is None or len(found[0]) == len(fresh)
        return
    assert found is not None
    at, slots = found
    both = pa.array(fresh + carried, pa.large_string())
    expected = pc.sort_indices(both).to_numpy()
    assert list(np.flatnonzero(expected < len(fresh))) == list(at)
    assert list(np.flatnonzero(slots)) == list(at)
