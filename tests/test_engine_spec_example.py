"""The spec's worked example (section 9): every entity gets exactly the expected outcome."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from core.engine import EngineParams, reconcile
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import load_example, ts

AS_OF = ts("2026-06-30T23:59:59+05:30")


@pytest.fixture(scope="module")
def outcomes() -> pd.DataFrame:
    return reconcile(load_example(SPEC_EXAMPLE / "dataset"), EngineParams(), AS_OF)


@pytest.fixture(scope="module")
def expected() -> pd.DataFrame:
    path: Path = SPEC_EXAMPLE / "expected_outcomes.csv"
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_spec_example_has_an_outcome_for_exactly_the_expected_entities(
    outcomes: pd.DataFrame, expected: pd.DataFrame
) -> None:
    got = set(zip(outcomes["entity_type"], outcomes["entity_id"], strict=True))
    want = set(zip(expected["entity_type"], expected["entity_id"], strict=True))
    assert got == want
    assert len(outcomes) == len(got)  # exactly one outcome per entity


def test_spec_example_every_outcome_is_as_expected(
    outcomes: pd.DataFrame, expected: pd.DataFrame
) -> None:
    got = outcomes.set_index(["entity_type", "entity_id"])
    wrong = []
    for row in expected.itertuples(index=False):
        mine = got.loc[(row.entity_type, row.entity_id)]
        codes = str(mine["reason_codes"]).split(";")
        problems = []
        if mine["status"] != row.status:
            problems.append(f"status {mine['status']} != {row.status}")
        if str(mine["reason_code"]) != row.reason_code:
            problems.append(f"reason_code {mine['reason_code']!r} != {row.reason_code!r}")
        if row.reason_code and codes[0] != row.reason_code:
            problems.append(f"reason_codes {mine['reason_codes']!r} do not start with it")
        for also in filter(None, row.also_codes.split(";")):
            if also not in codes:
                problems.append(f"{also} missing from {mine['reason_codes']!r}")
        if row.match_method and mine["match_method"] != row.match_method:
            problems.append(f"match_method {mine['match_method']!r} != {row.match_method!r}")
        if problems:
            wrong.append((row.entity_type, row.entity_id, problems))
    assert wrong == []


def test_spec_example_counts_per_status(outcomes: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert outcomes["status"].value_counts().to_dict() == (
        expected["status"].value_counts().to_dict()
    )


def test_spec_example_matched_settlements_by_utr_say_so(outcomes: pd.DataFrame) -> None:
    settlements = outcomes[outcomes["entity_type"] == "settlement"]
    matched = settlements[settlements["status"] == "MATCHED"]
    assert set(matched["match_method"]) == {"utr", "fuzzy_utr"}
    assert (matched["match_method"] == "fuzzy_utr").sum() == 1


def test_spec_example_exposure_follows_the_class_table(outcomes: pd.DataFrame) -> None:
    exceptions = outcomes[outcomes["status"] == "EXCEPTION"]
    for row in exceptions.itertuples(index=False):
        if row.exposure_class == "amount_at_risk":
            assert row.exposure_amount == abs(row.difference)
        elif row.exposure_class == "awaiting_settlement":
            assert row.exposure_amount == row.expected_amount
        elif row.exposure_class == "structural":
            assert row.exposure_amount == 0
        else:
            assert row.exposure_class == "disputed"
            assert row.exposure_amount == row.actual_amount > 0
    others = outcomes[outcomes["status"] != "EXCEPTION"]
    assert set(others["exposure_class"]) == {""}
    assert set(others["exposure_amount"]) == {0}
