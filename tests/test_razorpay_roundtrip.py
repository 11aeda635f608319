"""Done when: a sync from the paginated, rate-limiting fake, exported and reconciled with the
bank statement beside it, gives the same outcomes as reconciling the original files.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from core.__main__ import main
from tests import test_razorpay_export
from tests.conftest import SPEC_EXAMPLE
from tests.razorpay_support import SPEC_DATASET

if TYPE_CHECKING:
    from tests.razorpay_fixtures import SyncedTemplate

pytest_plugins = ("tests.razorpay_fixtures",)

# The synced database on SQLite and on PostgreSQL (tests/conftest.py's db_url).
synced_db = test_razorpay_export.synced_db

AS_OF = "2026-06-30T23:59:59+05:30"  # the spec example's as-of


def reconcile(folder: Path, results: Path) -> pd.DataFrame:
    assert main(["reconcile", str(folder), "--out", str(results), "--as-of", AS_OF]) == 0
    return pd.read_csv(results, dtype=str, keep_default_na=False)


def test_synced_exported_and_reconciled_gives_the_outcomes_of_the_original_files(
    synced_template: SyncedTemplate, synced_db: str, tmp_path: Path
) -> None:
    assert synced_template.statuses.count(429) > 0  # the fake did rate-limit that sync
    out = tmp_path / "exported"
    assert main(["export", str(out), "--db", synced_db]) == 0
    shutil.copyfile(SPEC_DATASET / "bank_statement.csv", out / "bank_statement.csv")

    exported = reconcile(out, tmp_path / "exported_results.csv")
    original = reconcile(SPEC_DATASET, tmp_path / "original_results.csv")

    pd.testing.assert_frame_equal(exported, original)
    assert (tmp_path / "exported_results.csv").read_bytes() == (
        tmp_path / "original_results.csv"
    ).read_bytes()
    expected = pd.read_csv(SPEC_EXAMPLE / "expected_outcomes.csv", dtype=str).fillna("")
    assert len(exported) == len(expected)  # every entity got its one outcome
    got = exported.set_index(["entity_type", "entity_id"])
    for row in expected.itertuples(index=False):
        outcome = got.loc[(row.entity_type, row.entity_id)]
        assert (outcome["status"], outcome["reason_code"]) == (row.status, row.reason_code), row
