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
from core.db.backend import is_postgres
from core.db.raw import read_dataset
from core.ingest import frames_from_items, import_dataset, load_dataset, store_dataset

from .conftest import SPEC_EXAMPLE


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


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


def test_an_upsert_rewrites_only_the_rows_whose_content_changed(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(conn, DATASET)
    folder = _copy(tmp_path)
    path = folder / "settlements.csv"
    path.write_bytes(path.read_bytes().replace(b",155915082,", b",155915083,", 1))
    report = import_dataset(conn, folder)  # every row sent again, one of them changed
    assert report.import_id == 2 and report.written["settlements"] == 33
    by_import = {
        table: dict(
            conn.execute(
                f"SELECT import_id, count(*) FROM {table} GROUP BY import_id ORDER BY import_id"
            ).fetchall()
        )
        for table in ("settlements", "payments", "recon_rows")
    }
    # The changed settlement is rewritten (the second import's); the rows sent again
    # unchanged are left as stored, under the import that last changed them.
    assert by_import == {
        "settlements": {1: 32, 2: 1},
        "payments": {1: 400},
        "recon_rows": {1: 375},
    }
    amount = conn.execute(
        "SELECT amount, import_id FROM settlements WHERE id = 'setl_zmoEBJJpl9oLDD'"
    ).fetchone()
    assert tuple(amount) == (155915083, 2)
    loaded, _ = load_dataset(folder)
    stored = read_dataset(conn)
    for name in ("payments", "refunds", "settlements", "recon", "bank"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(stored, name), obj=name)


def test_replace_empties_raw_tables_but_keeps_audit_and_exceptions(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    from core.audit import append

    import_dataset(conn, DATASET)
    append(conn, actor="a", action="x", entity_type="t", entity_id="1", payload={})
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


def _raw_schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """Every schema object of the raw tables: (type, name, CREATE text). On PostgreSQL its
    catalogue's account of the same: tables with their columns, and indexes."""
    marks = ", ".join("?" for _ in RAW_TABLES)
    if is_postgres(conn):
        query = (
            "SELECT 'table', table_name, string_agg(column_name || ' ' || data_type || ' '"
            " || is_nullable, ', ' ORDER BY ordinal_position) FROM information_schema.columns"
            f" WHERE table_schema = 'public' AND table_name IN ({marks}) GROUP BY table_name"
            " UNION ALL SELECT 'index', indexname, indexdef FROM pg_indexes"
            f" WHERE schemaname = 'public' AND tablename IN ({marks}) ORDER BY 1, 2"
        )
        return [tuple(r) for r in conn.execute(query, (*RAW_TABLES, *RAW_TABLES)).fetchall()]
    rows = conn.execute(
        "SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE tbl_name IN"
        f" ({marks}) ORDER BY type, name",
        RAW_TABLES,
    ).fetchall()
    return [tuple(r) for r in rows]


def _sqlite_file_is_sound(conn: sqlite3.Connection) -> bool:
    """SQLite's own checks of its file (PostgreSQL has no such PRAGMAs: True there)."""
    if is_postgres(conn):
        return True
    return (
        conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        and conn.execute("PRAGMA foreign_key_check").fetchall() == []
    )


def test_bulk_import_into_empty_tables_keeps_every_index(conn: sqlite3.Connection) -> None:
    before = _raw_schema(conn)
    assert any(kind == "index" and sql for kind, _, sql in before)  # secondary indexes exist
    import_dataset(conn, DATASET)
    assert _raw_schema(conn) == before
    assert _sqlite_file_is_sound(conn)
    if is_postgres(conn):  # with few rows its planner may scan instead; make it show
        conn.execute("SET enable_seqscan = off")
        explain = "EXPLAIN SELECT * FROM recon_rows WHERE settlement_id = ?"
        plan = " ".join(str(r[0]) for r in conn.execute(explain, ("x",)))
        conn.execute("RESET enable_seqscan")
    else:
        plan = " ".join(
            str(r[3])
            for r in conn.execute(
                "EXPLAIN QUERY PLAN SELECT * FROM recon_rows WHERE settlement_id = ?", ("x",)
            )
        )
    assert "recon_rows_settlement" in plan


def test_replace_over_stored_rows_keeps_schema_and_stores_only_the_new_rows(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(conn, DATASET)
    before = _raw_schema(conn)
    folder = _copy(tmp_path)
    path = folder / "settlements.csv"
    path.write_bytes(path.read_bytes().replace(b",155915082,", b",155915083,", 1))
    report = import_dataset(conn, folder, replace=True)
    assert report.replaced and report.import_id == 2
    assert _raw_schema(conn) == before
    assert _sqlite_file_is_sound(conn)
    assert _counts(conn) == {
        "payments": 400,
        "refunds": 15,
        "settlements": 33,
        "recon_rows": 375,
        "bank_lines": 64,
        "imports": 2,
    }
    ids = {
        t: {r[0] for r in conn.execute(f"SELECT DISTINCT import_id FROM {t}")} for t in RAW_TABLES
    }
    assert ids == {t: {2} for t in RAW_TABLES}
    loaded, _ = load_dataset(folder)
    stored = read_dataset(conn)
    for name in ("payments", "refunds", "settlements", "recon", "bank"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(stored, name), obj=name)


def _payments_with_a_repeated_id() -> pd.DataFrame:
    loaded, _ = load_dataset(DATASET)
    payments = loaded.payments.head(130).copy()  # with the repeat: two 64-row statements and 3
    repeat = payments.iloc[[0]].copy()
    repeat["amount"] = repeat["amount"] + 1
    return pd.concat([payments, repeat], ignore_index=True)


@pytest.mark.parametrize("table_state", ["empty", "holding rows"])
def test_a_frame_repeating_a_key_stores_one_row_with_the_last_values(
    conn: sqlite3.Connection, table_state: str
) -> None:
    payments = _payments_with_a_repeated_id()
    schema = _raw_schema(conn)
    if table_state == "holding rows":
        store_dataset(
            conn, Dataset(payments=payments.iloc[[1]]), source="t", location="t", content_hash="a"
        )
    store_dataset(conn, Dataset(payments=payments), source="t", location="t", content_hash="b")
    rows = conn.execute("SELECT id, amount FROM payments").fetchall()
    assert len(rows) == 130
    stored = {r[0]: r[1] for r in rows}
    first_id = str(payments.loc[0, "id"])
    assert stored[first_id] == int(payments.loc[130, "amount"])
    assert _raw_schema(conn) == schema
    assert _sqlite_file_is_sound(conn)


@pytest.mark.parametrize("table_state", ["empty", "holding rows"])
def test_values_that_look_like_null_sentinels_are_stored_exactly(
    conn: sqlite3.Connection, table_state: str
) -> None:
    loaded, _ = load_dataset(DATASET)
    payments = loaded.payments.head(137).copy()  # two full 64-row statements and a remainder
    payments["description"] = pd.array(["0", "", pd.NA] * 45 + ["x", "y"], dtype="string")
    payments["fee"] = pd.array([0, pd.NA, 5] * 45 + [pd.NA, 7], dtype="Int64")
    payments["order_id"] = pd.array([pd.NA, "0"] * 68 + ["order_1"], dtype="string")
    if table_state == "holding rows":
        store_dataset(
            conn, Dataset(payments=payments.tail(1)), source="t", location="t", content_hash="a"
        )
    store_dataset(conn, Dataset(payments=payments), source="t", location="t", content_hash="b")
    stored = read_dataset(conn).payments
    if table_state == "holding rows":  # the stored row keeps its place; the rest follow it
        stored = pd.concat([stored.iloc[1:], stored.iloc[:1]], ignore_index=True)
    pd.testing.assert_frame_equal(stored, payments.reset_index(drop=True))
    kinds = conn.execute(
        "SELECT DISTINCT description, fee IS NULL FROM payments"
        " WHERE description = '0' OR description = ''"
    ).fetchall()  # '0' and '' stay text, never NULL; fee 0 stays 0, NULL only where NA
    assert sorted((type(d).__name__, d, bool(n)) for d, n in kinds) == [
        ("str", "", True),
        ("str", "0", False),
    ]
    if not is_postgres(conn):  # SQLite's storage classes (PostgreSQL's columns are typed)
        kinds = conn.execute(
            "SELECT DISTINCT typeof(description), typeof(fee) FROM payments"
            " WHERE description = '0' OR description = ''"
        ).fetchall()
        assert sorted(tuple(k) for k in kinds) == [("text", "integer"), ("text", "null")]


def _header_only_bank(tmp_path: Path) -> Path:
    folder = _copy(tmp_path)
    header = (folder / "bank_statement.csv").read_text(encoding="utf-8").split("\n")[:6]
    (folder / "bank_statement.csv").write_text("\n".join(header) + "\n", encoding="utf-8")
    return folder


def _sync_like_import(conn: sqlite3.Connection, content_hash: str) -> None:
    """What a Razorpay sync or webhook stores: API items, never a bank statement."""
    items = json.loads((DATASET / "payments.json").read_text(encoding="utf-8"))["items"][:3]
    payments = frames_from_items("payments", items, "razorpay:payments")
    store_dataset(
        conn,
        Dataset(payments=payments),
        source="razorpay_api",
        location="x",
        content_hash=content_hash,
    )


def test_a_later_api_import_keeps_the_bank_checks_of_an_earlier_statement(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    folder = _header_only_bank(tmp_path)
    import_dataset(conn, folder)
    assert _counts(conn)["bank_lines"] == 0 and read_dataset(conn).has_bank_statement
    _sync_like_import(conn, "sync-1")
    _sync_like_import(conn, "sync-2")
    assert _counts(conn)["imports"] == 3
    assert read_dataset(conn).has_bank_statement


def test_a_replace_without_a_statement_ends_the_bank_checks_of_earlier_imports(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    import_dataset(conn, _header_only_bank(tmp_path))
    no_bank = tmp_path / "no_bank"
    shutil.copytree(DATASET, no_bank)
    (no_bank / "bank_statement.csv").unlink()
    import_dataset(conn, no_bank, replace=True)
    _sync_like_import(conn, "sync-1")
    assert not read_dataset(conn).has_bank_statement
    # A merge (no replace) of a folder with a statement brings them back.
    import_dataset(conn, _header_only_bank(tmp_path / "again"))
    assert read_dataset(conn).has_bank_statement


def test_read_dataset_returns_awkward_text_and_large_integers_exactly(
    conn: sqlite3.Connection,
) -> None:
    loaded, _ = load_dataset(DATASET)
    payments = loaded.payments.head(8).copy()
    awkward = [
        'quote " and \\ backslash',
        "line\nbreak\ttab\r",
        "null",
        "{}",
        "☕ café 𝄞 ₹",
        "",
        "0",
    ]
    payments["description"] = pd.array([*awkward, pd.NA], dtype="string")
    payments["notes"] = pd.array(['{"a": "b\\"c"}', "[]", *[pd.NA] * 6], dtype="string")
    payments["amount"] = [2**63 - 1, 0, 1, 2**53 + 1, 10**15, 7, 8, 9]
    payments["fee"] = pd.array([-(2**63) + 1, 2**53 + 1, pd.NA, 0, 1, 2, 3, 4], dtype="Int64")
    store_dataset(conn, Dataset(payments=payments), source="t", location="t", content_hash="h")
    stored = read_dataset(conn)
    pd.testing.assert_frame_equal(stored.payments, payments.reset_index(drop=True))
    for name in ("refunds", "settlements", "recon", "bank"):
        pd.testing.assert_frame_equal(getattr(stored, name), getattr(Dataset(), name), obj=name)


def test_a_frame_of_other_dtypes_is_stored_as_the_column_types_say(
    conn: sqlite3.Connection,
) -> None:
    loaded, _ = load_dataset(DATASET)
    payments = loaded.payments.head(3).copy()
    payments["description"] = pd.Series([0, "x", None], dtype=object)  # not the string dtype
    payments["fee"] = pd.Series([0, None, 7], dtype=object)
    store_dataset(conn, Dataset(payments=payments), source="t", location="t", content_hash="h")
    order = "CASE id " + " ".join(f"WHEN '{p}' THEN {i}" for i, p in enumerate(payments["id"]))
    if is_postgres(conn):  # typed columns: what comes back is what was stored
        rows = conn.execute(f"SELECT description, fee FROM payments ORDER BY {order} END")
        got = [(d, type(d).__name__, f, type(f).__name__) for d, f in rows.fetchall()]
        assert got == [("0", "str", 0, "int"), ("x", "str", None, "NoneType"),
                       (None, "NoneType", 7, "int")]  # fmt: skip
        return
    rows = conn.execute(
        "SELECT description, typeof(description), fee, typeof(fee) FROM payments ORDER BY rowid"
    ).fetchall()
    assert [tuple(r) for r in rows] == [
        ("0", "text", 0, "integer"),
        ("x", "text", None, "null"),
        (None, "null", 7, "integer"),
    ]
