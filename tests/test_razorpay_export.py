"""`export`: the stored data written back as a dataset that the importer reads unchanged."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from core.__main__ import main
from core.db import connect, transaction
from core.db.backend import is_postgres_url
from core.db.pg_bulk import publish_sqlite
from core.errors import NotFoundError, RefusedError
from core.ingest import import_dataset, load_dataset, store_dataset
from core.razorpay.export import export_dataset
from tests import conftest
from tests.razorpay_support import SPEC_DATASET, assert_same_entities, sorted_frame

if TYPE_CHECKING:
    from tests.razorpay_fixtures import SyncedTemplate

pytest_plugins = ("tests.razorpay_fixtures",)  # synced_template

# This module's tests run on SQLite and on PostgreSQL (tests/conftest.py).
conn = conftest.db_conn


@pytest.fixture
def synced_db(synced_template: SyncedTemplate, db_url: str, tmp_path: Path) -> str:
    """The synced template on this test's database: a private copy of the SQLite file, or
    its rows published into the fresh PostgreSQL database by COPY in one transaction (the
    cold start's path, core.db.pg_bulk.publish_sqlite)."""
    if not is_postgres_url(db_url):
        path = tmp_path / "synced.sqlite"
        shutil.copyfile(synced_template.path, path)
        return str(path)
    source, target = connect(synced_template.path), connect(db_url)
    try:
        with transaction(target):
            publish_sqlite(source, target)
    finally:
        source.close()
        target.close()
    return db_url


def test_a_synced_database_exports_the_original_entities(synced_db: str, tmp_path: Path) -> None:
    out = tmp_path / "export"
    conn = connect(synced_db)
    try:
        report = export_dataset(conn, out)
    finally:
        conn.close()

    assert report.files == (
        "payments.json",
        "refunds.json",
        "settlements.json",
        "settlement_recon.json",
    )
    assert dict(report.counts) == {
        "payments.json": 400,
        "refunds.json": 15,
        "settlements.json": 33,
        "settlement_recon.json": 375,
    }
    assert report.bank_ids_preserved is None
    exported, loaded = load_dataset(out)
    original, _ = load_dataset(SPEC_DATASET)
    assert_same_entities(exported, original)
    assert not exported.has_bank_statement
    assert {f.file: f.amount_unit for f in loaded.files} == dict.fromkeys(report.files, "paise")


def test_the_exported_data_with_the_bank_statement_beside_it_is_the_original_dataset(
    synced_db: str, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    assert main(["export", str(out), "--db", synced_db]) == 0
    shutil.copyfile(SPEC_DATASET / "bank_statement.csv", out / "bank_statement.csv")

    exported, _ = load_dataset(out)
    original, _ = load_dataset(SPEC_DATASET)

    assert_same_entities(exported, original, bank=True)
    assert exported.has_bank_statement


def test_stored_bank_lines_are_exported_with_their_original_ids(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(conn, SPEC_DATASET)
    out = tmp_path / "export"

    report = export_dataset(conn, out)

    assert report.bank_ids_preserved is True
    exported, _ = load_dataset(out)
    original, _ = load_dataset(SPEC_DATASET)
    assert_same_entities(exported, original, bank=True)
    lines = (out / "bank_statement.csv").read_text(encoding="utf-8").splitlines()
    assert lines[5].startswith("Date,Narration,Chq./Ref.No.,Value Dt")  # line 6: the header
    assert lines[6].startswith("17/05/26,ACH D- TP ACH INDIAN CLEARING-")  # id ...:7


def test_bank_lines_from_several_files_are_renumbered_consistently(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    original, _ = load_dataset(SPEC_DATASET)
    bank = original.bank.copy()
    half = len(bank) // 2
    bank.loc[: half - 1, "file"] = "hdfc_may.csv"
    bank.loc[half:, "file"] = "hdfc_june.csv"
    bank["id"] = bank["file"] + ":" + bank["line_no"].astype("string")
    dataset = type(original)(
        payments=original.payments,
        settlements=original.settlements,
        recon=original.recon,
        bank=bank,
        has_bank_statement=True,
    )
    store_dataset(conn, dataset, source="test", location="two files", content_hash="two-files")
    out = tmp_path / "export"

    report = export_dataset(conn, out)

    assert report.bank_ids_preserved is False
    exported, _ = load_dataset(out)
    in_file_order = bank.sort_values(["file", "line_no"], kind="stable").reset_index(drop=True)
    assert exported.bank["id"].tolist() == [
        f"bank_statement.csv:{n}" for n in range(2, len(bank) + 2)
    ]
    columns = ["txn_date", "value_date", "narration", "reference", "utr", "debit", "credit"]
    pd.testing.assert_frame_equal(
        exported.bank[[*columns, "balance"]], in_file_order[[*columns, "balance"]]
    )


def test_export_refuses_to_mix_with_an_existing_dataset_unless_told_to_overwrite(
    synced_db: str, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "payments.csv").write_text("id,amount\n", encoding="utf-8")
    conn = connect(synced_db)
    try:
        with pytest.raises(RefusedError, match=r"payments\.csv"):
            export_dataset(conn, out)
        assert sorted(p.name for p in out.iterdir()) == ["payments.csv"]

        export_dataset(conn, out, overwrite=True)
    finally:
        conn.close()
    assert sorted(p.name for p in out.iterdir()) == [
        "payments.json",
        "refunds.json",
        "settlement_recon.json",
        "settlements.json",
    ]


def test_exporting_an_empty_database_is_refused(conn: sqlite3.Connection, tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="run `sync` or `import` first"):
        export_dataset(conn, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_exported_items_keep_the_api_shape(synced_db: str, tmp_path: Path) -> None:
    import json

    conn = connect(synced_db)
    try:
        export_dataset(conn, tmp_path)
    finally:
        conn.close()
    payments = json.loads((tmp_path / "payments.json").read_text(encoding="utf-8"))
    recon = json.loads((tmp_path / "settlement_recon.json").read_text(encoding="utf-8"))

    assert payments["entity"] == "collection" and payments["count"] == 400
    first = sorted_frame(pd.DataFrame(payments["items"]), "id").iloc[0].to_dict()
    assert first["entity"] == "payment" and isinstance(first["captured"], bool)
    assert isinstance(first["amount"], int)
    assert all("row_key" not in row for row in recon["items"])
    assert {type(row["on_hold"]) for row in recon["items"]} == {bool}


REAL_EXPORTS = Path(__file__).parent / "fixtures" / "real_exports" / "api_json"


def test_disputes_transfers_and_instant_settlements_survive_import_and_export(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    original, _ = load_dataset(REAL_EXPORTS)
    assert len(original.disputes) and len(original.transfers) and len(original.instant_payouts)
    import_dataset(conn, REAL_EXPORTS)
    out = tmp_path / "export"
    report = export_dataset(conn, out)
    assert {
        "instant_settlements.json",
        "instant_settlement_payouts.json",
        "disputes.json",
        "transfers.json",
    } <= set(report.files)
    shutil.copy(REAL_EXPORTS / "bank_statement.csv", out / "bank_statement.csv")
    again, _ = load_dataset(out)
    for table in ("payments", "refunds", "instant_settlements", "instant_payouts", "disputes"):
        pd.testing.assert_frame_equal(
            sorted_frame(getattr(again, table), "id"),
            sorted_frame(getattr(original, table), "id"),
            obj=table,
        )
    pd.testing.assert_frame_equal(
        sorted_frame(again.transfers, "id"), sorted_frame(original.transfers, "id")
    )
