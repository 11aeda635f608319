"""Done when: a sync from the paginated, rate-limiting fake, exported and reconciled with the
bank statement beside it, gives the same outcomes as reconciling the original files.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from core.calendar import IST
from core.db import connect
from core.ingest import load_dataset
from core.razorpay.export import export_dataset
from tests.razorpay_support import SPEC_DATASET

if TYPE_CHECKING:
    from tests.razorpay_fixtures import SyncedTemplate

engine = pytest.importorskip("core.engine", reason="the engine is not on main yet")

pytest_plugins = ("tests.razorpay_fixtures",)

AS_OF = int(dt.datetime(2026, 6, 30, 23, 59, 59, tzinfo=IST).timestamp())  # the spec's as-of


def outcomes(folder: Path) -> pd.DataFrame:
    dataset, _ = load_dataset(folder)
    result = engine.reconcile(dataset, engine.EngineParams(), AS_OF)
    return result.sort_values(["entity_type", "entity_id"]).reset_index(drop=True)


def test_synced_exported_and_reconciled_gives_the_outcomes_of_the_original_files(
    synced_template: SyncedTemplate, synced_db: Path, tmp_path: Path
) -> None:
    assert synced_template.statuses.count(429) > 0  # the fake did rate-limit that sync
    out = tmp_path / "exported"
    conn = connect(synced_db)
    try:
        export_dataset(conn, out)
    finally:
        conn.close()
    shutil.copyfile(SPEC_DATASET / "bank_statement.csv", out / "bank_statement.csv")

    exported = outcomes(out)
    original = outcomes(SPEC_DATASET)

    assert len(original) > 0
    pd.testing.assert_frame_equal(exported, original)
