from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core.db import applied_migrations, connect, database_path, migrate, transaction


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


@pytest.fixture
def db_path(db_url: str) -> str:
    return db_url


def test_database_url_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "sqlite:///data/x.sqlite")
    assert database_path() == "data/x.sqlite"
    assert database_path("sqlite:////abs/y.sqlite") == "/abs/y.sqlite"
    monkeypatch.delenv("DATABASE_URL")
    assert database_path() == "razorrecon.sqlite"


@pytest.mark.sqlite_only
def test_connection_uses_wal_and_foreign_keys(db_path: Path) -> None:
    conn = connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    conn.close()


def test_migrations_are_recorded_and_rerun_is_a_no_op(db_path: Path) -> None:
    conn = connect(db_path)
    names = applied_migrations(conn)
    assert names and names[0] == "0001_base"
    assert migrate(conn) == []
    conn.close()


def test_transaction_rolls_back_on_error(conn: sqlite3.Connection) -> None:
    with pytest.raises(RuntimeError), transaction(conn):
        conn.execute(
            "INSERT INTO imports (source, location, content_hash, imported_at, report_json)"
            " VALUES ('t', 't', 'h', 0, '{}')"
        )
        raise RuntimeError("boom")
    assert conn.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 0


@pytest.mark.sqlite_only
def test_audit_log_refuses_update_and_delete(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO audit_log (created_at, actor, action, entity_type, entity_id,"
        " payload_json, prev_hash, hash) VALUES (0, 'a', 'x', 't', '1', '{}', '', 'h1')"
    )
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE audit_log SET actor = 'b'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM audit_log")


def test_postgresql_urls_are_served_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://app:secret@127.0.0.1:5432/recon"
    assert database_path(url) == url
    assert database_path("postgresql+psycopg://app@db/recon") == "postgresql://app@db/recon"
    # argparse's type=Path folds the double slash; the URL is still recognised.
    assert database_path(str(Path(url))) == url
    monkeypatch.setenv("DATABASE_URL", url)
    assert database_path() == url
