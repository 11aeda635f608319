"""The outcomes frame and results.csv (spec section 7): columns, order, types, sorting,
determinism, and refusals."""

from __future__ import annotations

import copy
import csv
import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.calendar import CalendarParams
from core.dataset import Dataset
from core.engine import OUTCOME_COLUMNS, RESULT_COLUMNS, EngineParams, reconcile
from core.engine import codes as C
from core.engine.results import counts, write_results_csv
from core.errors import InputError
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import AS_OF, add, build, drop, load_example, ts, world

SECTION_7 = (
    "entity_type, entity_id, status, reason_code, reason_codes, settlement_id, "
    "expected_amount, actual_amount, difference, exposure_class, exposure_amount, match_method"
)


@pytest.fixture(scope="module")
def example() -> pd.DataFrame:
    data = load_example(SPEC_EXAMPLE / "dataset")
    return reconcile(data, EngineParams(), ts("2026-06-30T23:59:59+05:30"))


def test_outcome_columns_are_section_7_then_context() -> None:
    assert ", ".join(RESULT_COLUMNS) == SECTION_7
    assert (*RESULT_COLUMNS, "order_id", "utr", "entity_created_at") == OUTCOME_COLUMNS


def test_outcomes_have_the_columns_in_order_and_integer_money(example: pd.DataFrame) -> None:
    assert tuple(example.columns) == OUTCOME_COLUMNS
    for name in ("expected_amount", "actual_amount", "difference", "exposure_amount"):
        assert example[name].dtype == np.int64
    assert str(example["entity_created_at"].dtype) == "Int64"
    assert (example["difference"] == example["actual_amount"] - example["expected_amount"]).all()


def test_outcomes_are_sorted_by_entity_type_then_entity_id(example: pd.DataFrame) -> None:
    keys = list(zip(example["entity_type"], example["entity_id"], strict=True))
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_results_csv_has_exactly_the_section_7_columns(
    example: pd.DataFrame, tmp_path: Path
) -> None:
    path = tmp_path / "out" / "results.csv"
    write_results_csv(example, path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == list(RESULT_COLUMNS)
    assert len(rows) == len(example) + 1
    assert b"\r\n" not in path.read_bytes()
    back = pd.read_csv(path, dtype=str, keep_default_na=False)
    for name in ("expected_amount", "actual_amount", "difference", "exposure_amount"):
        assert back[name].str.fullmatch(r"-?\d+").all()
        assert (back[name].astype("int64").to_numpy() == example[name].to_numpy()).all()
    assert back["entity_id"].tolist() == example["entity_id"].tolist()
    matched = back[back["status"] == "MATCHED"]
    assert set(matched["reason_code"]) == {""}
    assert list(tmp_path.joinpath("out").iterdir()) == [path]  # no temporary file left


def test_a_failed_write_leaves_no_results_file(example: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    broken = example.drop(columns=["match_method"])
    with pytest.raises(KeyError):
        write_results_csv(broken, path)
    assert list(tmp_path.iterdir()) == []


def test_empty_dataset_gives_no_outcomes() -> None:
    outcomes = reconcile(Dataset(), EngineParams(), AS_OF)
    assert len(outcomes) == 0
    assert tuple(outcomes.columns) == OUTCOME_COLUMNS


def test_same_input_gives_identical_outcomes_whatever_the_row_order() -> None:
    data = load_example(SPEC_EXAMPLE / "dataset")
    first = reconcile(data, EngineParams(), AS_OF)
    rng = np.random.default_rng(5)

    def shuffled(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)

    again = reconcile(
        Dataset(
            payments=shuffled(data.payments),
            refunds=shuffled(data.refunds),
            settlements=shuffled(data.settlements),
            recon=shuffled(data.recon),
            bank=shuffled(data.bank),
            has_bank_statement=True,
        ),
        EngineParams(),
        AS_OF,
    )
    pd.testing.assert_frame_equal(first, again)


def test_duplicate_payment_ids_are_refused_naming_the_id() -> None:
    tables = copy.deepcopy(world())
    add("payments", dict(tables["payments"][0]))(tables)
    with pytest.raises(InputError) as caught:
        reconcile(build(tables), EngineParams(), AS_OF)
    assert "pay_P1" in str(caught.value)
    assert caught.value.problems[0].file == "payments"


def test_unknown_code_is_amount_at_risk() -> None:
    assert C.exposure_class("SOMETHING_NEW") == C.AMOUNT_AT_RISK
    assert C.exposure_amount("SOMETHING_NEW", expected=1_000, actual=400) == 600


@pytest.mark.parametrize(
    ("code", "klass"),
    [
        ("AMOUNT_MISMATCH", "amount_at_risk"),
        ("SETTLEMENT_AMOUNT_DISCREPANCY", "amount_at_risk"),
        ("REFUND_AMOUNT_MISMATCH", "amount_at_risk"),
        ("DUPLICATE_RECONCILIATION_RECORD", "amount_at_risk"),
        ("SETTLEMENT_SUM_MISMATCH", "amount_at_risk"),
        ("BANK_UTR_AMOUNT_MISMATCH", "amount_at_risk"),
        ("DUPLICATE_BANK_CREDIT", "amount_at_risk"),
        ("STATUS_MISMATCH", "amount_at_risk"),
        ("UNMATCHED_BANK_CREDIT", "amount_at_risk"),
        ("MISSING_RECONCILIATION_RECORD", "awaiting_settlement"),
        ("MISSING_SETTLEMENT", "awaiting_settlement"),
        ("SETTLEMENT_FAILED", "awaiting_settlement"),
        ("MISSING_BANK_ENTRY", "awaiting_settlement"),
        ("WRONG_MAPPING", "structural"),
        ("TIMING_WINDOW_EXCEEDED", "structural"),
        ("PAYMENT_ID_MISMATCH", "structural"),
        ("DISPUTE_DEBIT", "disputed"),
    ],
)
def test_exposure_class_table(code: str, klass: str) -> None:
    assert C.exposure_class(code) == klass
    amount = C.exposure_amount(code, expected=1_000, actual=1_300)
    assert (
        amount
        == {
            "amount_at_risk": 300,
            "awaiting_settlement": 1_000,
            "structural": 0,
            "disputed": 1_300,
        }[klass]
    )


def test_every_code_the_engine_emits_has_a_class() -> None:
    emitted = set(
        C.PAYMENT_CODES
        + C.REFUND_CODES
        + C.RECON_ROW_CODES
        + C.SETTLEMENT_CODES
        + C.BANK_ENTRY_CODES
        + C.DISPUTE_CODES
        + C.INSTANT_SETTLEMENT_CODES
        + C.TRANSFER_CODES
        + C.PRICING_CODES
    )
    assert emitted == set(C.EXPOSURE_CLASS)


def test_counts_summarise_status_code_and_exposure(example: pd.DataFrame) -> None:
    facts = counts(example)
    assert facts["outcomes"] == len(example)
    assert sum(facts["by_status"].values()) == len(example)  # type: ignore[attr-defined]
    exceptions = example[example["status"] == "EXCEPTION"]
    assert sum(facts["by_code"].values()) == len(exceptions)  # type: ignore[attr-defined]
    assert sum(facts["exposure_by_class"].values()) == int(  # type: ignore[attr-defined]
        exceptions["exposure_amount"].sum()
    )


def test_counts_key_in_sorted_order_and_leave_out_missing_values() -> None:
    # The stored counts_json keeps its key order: what groupby gave (sorted keys, NaN none).
    frame = pd.DataFrame(
        {
            "entity_type": ["refund", "payment", None, "payment", "refund", "payment"],
            "status": ["PENDING", "MATCHED", "EXCEPTION", "EXCEPTION", None, "EXCEPTION"],
            "reason_code": ["R1", None, "B", "A", "X", "B"],
            "exposure_class": ["c1", None, "c2", "c1", None, "c1"],
            "exposure_amount": [0, 0, 7, 5, 0, 11],
        },
        dtype=object,
    ).astype({"exposure_amount": "int64"})
    facts = counts(frame)
    assert list(facts["by_status"].items()) == [  # type: ignore[attr-defined]
        ("EXCEPTION", 3),
        ("MATCHED", 1),
        ("PENDING", 1),
    ]
    assert list(facts["by_entity_type"].items()) == [  # type: ignore[attr-defined]
        ("payment:EXCEPTION", 2),
        ("payment:MATCHED", 1),
        ("refund:PENDING", 1),
    ]
    assert facts["by_code"] == {"A": 1, "B": 2}
    assert facts["pending_by_reason"] == {"R1": 1}
    assert facts["exposure_by_class"] == {"c1": 16, "c2": 7}


def test_counts_of_a_run_with_no_exception_or_pending_row() -> None:
    frame = pd.DataFrame(
        {
            "entity_type": ["payment"],
            "status": ["MATCHED"],
            "reason_code": [""],
            "exposure_class": [""],
            "exposure_amount": [0],
        }
    )
    facts = counts(frame)
    assert facts["by_status"] == {"MATCHED": 1}
    assert facts["by_code"] == {} and facts["pending_by_reason"] == {}


def test_params_round_trip_through_their_stored_form() -> None:
    params = EngineParams(
        calendar=CalendarParams(
            settlement_days=3,
            international_days=9,
            grace_days=0,
            bank_days=2,
            holidays=frozenset({dt.date(2026, 8, 15)}),
        ),
        fuzzy_utr_max_distance=1,
    )
    assert EngineParams.from_dict(params.to_dict()).to_dict() == params.to_dict()
    assert EngineParams.from_dict(params.to_dict()).calendar == params.calendar


def test_missing_refunds_file_makes_refund_rows_payment_id_mismatches() -> None:
    # A refund row whose refund is not in the dataset is a row without a known entity.
    tables = copy.deepcopy(world())
    drop("refunds", id="rfnd_R1")(tables)
    outcomes = reconcile(build(tables), EngineParams(), AS_OF)
    row = outcomes[(outcomes["entity_type"] == "recon_row")]
    assert row["entity_id"].tolist() == ["rfnd_R1"]
    assert row["reason_code"].tolist() == ["PAYMENT_ID_MISMATCH"]


def test_results_csv_quotes_only_when_a_value_needs_it(tmp_path: Path) -> None:
    tables = copy.deepcopy(world())
    add("recon", {"entity_id": "pay_GHOST,2", "type": "payment", "amount": 5, "credit": 5})(tables)
    outcomes = reconcile(build(tables), EngineParams(), AS_OF)
    path = tmp_path / "results.csv"
    write_results_csv(outcomes, path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert ["recon_row", "pay_GHOST,2"] in [row[:2] for row in rows]
    plain = tmp_path / "plain.csv"
    write_results_csv(reconcile(build(world()), EngineParams(), AS_OF), plain)
    assert '"' not in plain.read_text(encoding="utf-8")
