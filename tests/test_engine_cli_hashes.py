"""The files' sha256 is computed only where it is recorded: `reconcile --db` stores each
file's real digest; `reconcile` without a database skips hashing and reads the same data."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pandas as pd

from core.__main__ import main
from core.db import connect
from core.db import runs as db_runs
from core.pipeline import load_folder
from tests.conftest import SPEC_EXAMPLE

DATASET = SPEC_EXAMPLE / "dataset"
AS_OF_TEXT = "2026-06-30T23:59:59+05:30"
DATASET_FILE_NAMES = (
    "bank_statement.csv",
    "payments.json",
    "refunds.csv",
    "settlement_recon.csv",
    "settlements.csv",
)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_folder_loaded_without_hashing_has_the_same_data_and_no_hashes() -> None:
    hashed = load_folder(DATASET)
    unhashed = load_folder(DATASET, hashing=False)
    assert unhashed.input_hashes == {}
    assert unhashed.report.content_hash == ""
    # The entity CSVs (Arrow streams them) are not hashed; a small bank statement still is.
    entity_csvs = ("refunds.csv", "settlements.csv", "settlement_recon.csv")
    assert {
        f.file: f.sha256 for f in unhashed.report.files if f.file in entity_csvs
    } == dict.fromkeys(entity_csvs, "")
    for name in ("payments", "refunds", "settlements", "recon", "bank"):
        pd.testing.assert_frame_equal(
            getattr(unhashed.dataset, name), getattr(hashed.dataset, name)
        )
    assert hashed.report.content_hash != ""
    for name, digest in hashed.input_hashes.items():
        if (DATASET / name).is_file():
            assert digest == _digest(DATASET / name)


def test_reconcile_with_db_records_every_files_real_sha256(tmp_path: Path, db_url: str) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(DATASET, folder)
    out = tmp_path / "results.csv"
    assert main(["reconcile", str(folder), "--out", str(out), "--as-of", AS_OF_TEXT]) == 0
    without_db = out.read_bytes()
    args = ["reconcile", str(folder), "--out", str(out), "--as-of", AS_OF_TEXT, "--db", db_url]
    assert main(args) == 0
    assert out.read_bytes() == without_db
    conn = connect(db_url)
    try:
        run = db_runs.latest_completed_run(conn)
    finally:
        conn.close()
    assert run is not None
    files = sorted(p.name for p in folder.iterdir() if p.is_file())
    assert files == sorted(DATASET_FILE_NAMES)
    assert {name: run.input_hashes[name] for name in files} == {
        name: _digest(folder / name) for name in files
    }
    assert run.input_hashes["import"] != ""
