"""Migration 0010: raw-table keys as unique indexes, rows and their order kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from core.db import connect, migrate, raw
from core.db.migrate import available_migrations, split_statements
from core.db.raw import read_dataset
from core.ingest import import_dataset, load_dataset

from .conftest import SPEC_EXAMPLE

DATASET = SPEC_EXAMPLE / "dataset"
KEYS = {
    "payments": "id",
    "refunds": "id",
    "settlements": "id",
    "recon_rows": "row_key",
    "bank_lines": "id",
}


# 0010 and the ingest migrations that build on its raw tables.
AFTER_0010_RAW = ("0010", "0015")


def _database_before_0010(path: Path) -> sqlite3.Connection:
    """The migrations before 0010 (and 0011, which the importer reads) applied by hand, as a
    database made before 0010 existed; the later ones build on 0010's tables."""
    conn = connect(path)
    conn.execute(
        "CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
    )
    for name, sql in available_migrations():
        if name >= "0010" and not name.startswith("0011"):
            continue
        for statement in split_statements(sql):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations VALUES (?, 0)", (name,))
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}


def _rows(conn: sqlite3.Connection, table: str) -> list[tuple[object, ...]]:
    return [tuple(r) for r in conn.execute(f"SELECT rowid, * FROM {table} ORDER BY rowid")]


# SQLite only: upgrades a SQLite file made before 0010 (rowids, PRAGMA index_list); no
# PostgreSQL database predates 0010 (the backend arrived with every twin at once);
# test_raw_keys_refuse_a_second_row_with_the_same_key proves 0010's keys on both backends.
def test_0010_keeps_every_row_and_rowid_and_keys_stay_unique(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = _database_before_0010(tmp_path / "old.sqlite")
    assert conn.execute("PRAGMA index_list(payments)").fetchall()  # the old PRIMARY KEY index
    # The importer of that time wrote only the five tables the schema then had.
    old_tables = {
        attribute: (table, key, {c: d for c, d in columns.items() if c in _columns(conn, table)})
        for attribute, (table, key, columns) in raw.RAW_TABLES.items()
        if table in KEYS
    }
    with monkeypatch.context() as patch:
        patch.setattr(raw, "RAW_TABLES", old_tables)
        # Today's writers store each row's MAC (migration 0120); that importer did not.
        for table in KEYS:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN row_mac TEXT")
        import_dataset(conn, DATASET)
        for table in KEYS:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN row_mac")
    before = {table: _rows(conn, table) for table in KEYS}
    assert all(before.values())

    applied = migrate(conn)
    assert applied[0] == "0010_raw_unique_keys"
    assert {f"{n}_" for n in AFTER_0010_RAW} <= {name[:5] for name in applied}

    # Later ingest migrations add columns at the end: the old ones keep every value.
    after = {
        table: [row[: len(old)] for row, old in zip(_rows(conn, table), before[table], strict=True)]
        for table in KEYS
    }
    assert after == before
    for table, key in KEYS.items():
        unique = [r[1] for r in conn.execute(f"PRAGMA index_list({table})") if r[2] and r[3] == "c"]
        assert unique == [f"{table}_{'key' if table == 'recon_rows' else 'id'}"]
        first = conn.execute(f"SELECT {key} FROM {table} LIMIT 1").fetchone()[0]
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(f"INSERT INTO {table} SELECT * FROM {table} WHERE {key} = ?", (first,))
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    loaded, _ = load_dataset(DATASET)
    stored = read_dataset(conn)
    for name in ("payments", "refunds", "settlements", "recon", "bank"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(stored, name), obj=name)
    conn.close()


def test_null_keys_are_refused_after_0010(db_conn: sqlite3.Connection) -> None:
    with pytest.raises(sqlite3.IntegrityError, match=r"NOT NULL|not-null"):
        db_conn.execute(
            "INSERT INTO settlements (id, amount, status, created_at) VALUES (NULL, 1, 'x', 0)"
        )


def test_raw_keys_refuse_a_second_row_with_the_same_key(db_conn: sqlite3.Connection) -> None:
    import_dataset(db_conn, DATASET)
    for table, key in KEYS.items():
        first = db_conn.execute(f"SELECT {key} FROM {table} ORDER BY {key} LIMIT 1").fetchone()[0]
        before = db_conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        row = db_conn.execute(f"SELECT * FROM {table} WHERE {key} = ?", (first,)).fetchone()
        names = [n for n in row.keys() if n != "row_order"]  # noqa: SIM118 (row_order: PG)
        values = [row[n] for n in names]
        insert = (
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
        )
        with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE|unique|duplicate"):
            db_conn.execute(insert, values)
        if db_conn.in_transaction:
            db_conn.rollback()
        assert db_conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == before
