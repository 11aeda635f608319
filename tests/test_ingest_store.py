"""Storing datasets: one transaction, idempotent, upserts by key, read back identically."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from core.__main__ import main
from core.dataset import Dataset
from core.db.raw import read_dataset
from core.ingest import frames_from_items, import_dataset, load_dataset, store_dataset

from .conftest import SPEC_EXAMPLE

DATASET = SPEC_EXAMPLE / "dataset"
RAW_TABLES = ("payments", "refunds", "settlements", "recon_rows", "bank_lines")


def _counts(conn: sqlite3.Connection) -> dict[str, int]:
    tables = (*RAW_TABLES, "imports")
    return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "dataset"
    shutil.copytree(DATASET, target)
    return target


def test_import_writes_every_raw_table_and_records_the_import(conn: sqlite3.Connection) -> None:
    report = import_dataset(conn, DATASET)
    assert _counts(conn) == {
        "payments": 400,
        "refunds": 15,
        "settlements": 33,
        "recon_rows": 375,
        "bank_lines": 64,
        "imports": 1,
    }
    assert report.import_id == 1 and not report.already_imported
    stored = json.loads(conn.execute("SELECT report_json FROM imports").fetchone()[0])
    assert stored["content_hash"] == report.content_hash
    assert stored["has_bank_statement"] is True
    assert {f["file"] for f in stored["files"]} >= {"payments.json", "bank_statement.csv"}


def test_importing_the_same_files_again_is_a_no_op(conn: sqlite3.Connection) -> None:
    first = import_dataset(conn, DATASET)
    before = _counts(conn)
    again = import_dataset(conn, DATASET)
    assert again.already_imported and again.import_id == first.import_id
    assert _counts(conn) == before


def test_changed_rows_are_updated_in_place_never_duplicated(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(conn, DATASET)
    folder = _copy(tmp_path)
    path = folder / "settlements.csv"
    path.write_bytes(path.read_bytes().replace(b",155915082,", b",155915083,", 1))
    report = import_dataset(conn, folder)
    assert not report.already_imported and report.import_id == 2
    counts = _counts(conn)
    assert counts["settlements"] == 33 and counts["payments"] == 400 and counts["imports"] == 2
    amount = conn.execute(
        "SELECT amount, import_id FROM settlements WHERE id = 'setl_zmoEBJJpl9oLDD'"
    ).fetchone()
    assert tuple(amount) == (155915083, 2)


def test_replace_empties_raw_tables_but_keeps_audit_and_exceptions(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(conn, DATASET)
    conn.execute(
        "INSERT INTO audit_log (created_at, actor, action, entity_type, entity_id,"
        " payload_json, prev_hash, hash) VALUES (0, 'a', 'x', 't', '1', '{}', '', 'h1')"
    )
    conn.execute(
        "INSERT INTO exceptions (entity_type, entity_id, reason_code, reason_codes,"
        " exposure_class, exposure_amount, first_run_id, last_run_id, opened_at, updated_at)"
        " VALUES ('payment', 'pay_x', 'AMOUNT_MISMATCH', 'AMOUNT_MISMATCH', 'amount_at_risk',"
        " 5, 1, 1, 0, 0)"
    )
    folder = _copy(tmp_path)
    (folder / "bank_statement.csv").unlink()
    (folder / "refunds.csv").unlink()
    report = import_dataset(conn, folder, replace=True)
    assert report.replaced
    counts = _counts(conn)
    assert counts["bank_lines"] == 0 and counts["refunds"] == 0 and counts["payments"] == 400
    assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM exceptions").fetchone()[0] == 1
    assert not read_dataset(conn).has_bank_statement


def test_replace_with_the_latest_content_after_a_merge_rebuilds(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    folder = _copy(tmp_path)
    (folder / "refunds.csv").unlink()
    import_dataset(conn, DATASET)  # refunds present
    import_dataset(conn, folder)  # merged on top: the 15 refunds stay
    assert _counts(conn)["refunds"] == 15
    report = import_dataset(conn, folder, replace=True)
    assert not report.already_imported
    assert _counts(conn)["refunds"] == 0
    again = import_dataset(conn, folder, replace=True)
    assert again.already_imported


def test_read_dataset_returns_what_load_dataset_built(conn: sqlite3.Connection) -> None:
    import_dataset(conn, DATASET)
    loaded, _ = load_dataset(DATASET)
    stored = read_dataset(conn)
    for name in ("payments", "refunds", "settlements", "recon", "bank"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(stored, name), obj=name)
    assert stored.has_bank_statement


def test_bank_statement_without_transactions_still_means_bank_checks(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    folder = _copy(tmp_path)
    header = (folder / "bank_statement.csv").read_text(encoding="utf-8").split("\n")[:6]
    (folder / "bank_statement.csv").write_text("\n".join(header) + "\n", encoding="utf-8")
    dataset, _ = load_dataset(folder)
    assert dataset.has_bank_statement and len(dataset.bank) == 0
    import_dataset(conn, folder)
    assert read_dataset(conn).has_bank_statement


def test_store_dataset_from_api_items(conn: sqlite3.Connection) -> None:
    items = json.loads((DATASET / "payments.json").read_text(encoding="utf-8"))["items"]
    payments = frames_from_items("payments", items, "razorpay:payments")
    dataset = Dataset(payments=payments)
    report = store_dataset(
        conn, dataset, source="razorpay_api", location="2026-05-01..2026-06-30", content_hash="h"
    )
    assert report.written["payments"] == 400 and not report.has_bank_statement
    again = store_dataset(
        conn, dataset, source="razorpay_api", location="2026-05-01..2026-06-30", content_hash="h"
    )
    assert again.already_imported
    assert _counts(conn)["payments"] == 400


def test_store_rolls_back_everything_when_a_write_fails(conn: sqlite3.Connection) -> None:
    loaded, _report = load_dataset(DATASET)
    broken = loaded.settlements.copy()
    broken.loc[0, "status"] = pd.NA  # violates NOT NULL in the settlements table
    dataset = Dataset(payments=loaded.payments, settlements=broken, recon=loaded.recon)
    with pytest.raises(sqlite3.IntegrityError):
        store_dataset(conn, dataset, source="files", location="x", content_hash="y")
    assert all(n == 0 for n in _counts(conn).values())


def test_cli_prints_the_import_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "cli.sqlite"
    assert main(["import", str(DATASET), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "payments.json: 400 rows, json, amounts in paise" in out
    assert "bank_statement.csv: 64 rows, csv, layout HDFC" in out
    assert "Import #1: upserted: payments 400" in out
    assert main(["import", str(DATASET), "--db", str(db)]) == 0
    assert "Already imported (import #1): nothing written." in capsys.readouterr().out
