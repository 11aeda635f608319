from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from core.db import applied_migrations, connect, database_path, migrate, transaction
from core.db.connection import HOUSE_PAGE_SIZE, page_size_of
from tests.run_lock_support import four_kib_file


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


# SQLite only: journal_mode and foreign_keys are SQLite's per-connection PRAGMAs; PostgreSQL
# always logs ahead and always enforces keys (test_a_row_pointing_at_no_parent_is_refused).
@pytest.mark.sqlite_only
def test_connection_uses_wal_and_foreign_keys(db_path: Path) -> None:
    conn = connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    conn.close()


def test_a_new_database_file_is_made_with_the_house_page_size(tmp_path: Path) -> None:
    conn = connect(tmp_path / "new.sqlite")
    migrate(conn)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == HOUSE_PAGE_SIZE
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_twelve_sessions_opening_one_new_file_at_once_all_get_it_in_wal(tmp_path: Path) -> None:
    # CI stop 37: eight sessions on a cold database, one died on "database is locked" from
    # the WAL switch, which SQLite refuses at once (no busy wait) when two switch together.
    # It met about 3 new files in 100 here; 300 files make a miss all but certain.
    failures: list[str] = []
    modes: list[str] = []

    def open_and_create(path: Path) -> None:
        try:
            conn = connect(path)
            try:
                modes.append(str(conn.execute("PRAGMA journal_mode").fetchone()[0]))
                conn.execute("CREATE TABLE IF NOT EXISTS t (a INTEGER)")
            finally:
                conn.close()
        except sqlite3.OperationalError as error:
            failures.append(f"{path.name}: {error}")

    for attempt in range(300):
        path = tmp_path / f"new-{attempt}.sqlite"
        threads = [threading.Thread(target=open_and_create, args=(path,)) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert failures == []
    assert modes == ["wal"] * 3600


def test_a_database_made_with_smaller_pages_keeps_them_and_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("PRAGMA page_size = 4096")
    old.execute("PRAGMA journal_mode = WAL")
    old.execute("CREATE TABLE kept (n INTEGER)")
    old.executemany("INSERT INTO kept VALUES (?)", [(n,) for n in range(3_000)])
    old.close()
    conn = connect(path)
    migrate(conn)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    assert conn.execute("SELECT count(*), sum(n) FROM kept").fetchone()[:] == (3_000, 4_498_500)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_a_backup_copy_is_made_with_its_sources_page_size(tmp_path: Path) -> None:
    source_path = tmp_path / "source.sqlite"
    four_kib_file(source_path)
    source = connect(source_path)
    migrate(source)
    source.execute("CREATE TABLE kept (n INTEGER)")
    source.executemany("INSERT INTO kept VALUES (?)", [(n,) for n in range(500)])
    # SQLite refuses to copy pages of one size into a WAL file of another...
    mismatched = connect(tmp_path / "default.sqlite")
    assert page_size_of(mismatched) != page_size_of(source)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        source.backup(mismatched)
    mismatched.close()
    # ...so a copy's file takes its source's.
    copy = connect(tmp_path / "copy.sqlite", page_size=page_size_of(source))
    source.backup(copy)
    assert page_size_of(copy) == 4096
    assert copy.execute("SELECT count(*), sum(n) FROM kept").fetchone()[:] == (500, 124_750)
    copy.close()
    source.close()


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


def test_audit_log_refuses_update_and_delete(conn: sqlite3.Connection) -> None:
    from core.audit import append
    from core.db.backend import is_postgres

    append(conn, actor="a", action="x", entity_type="t", entity_id="1", payload={})
    # SQLite: the append-only triggers; PostgreSQL: the app role holds no such privilege
    # (and the same triggers stop its owner: tests/test_db_postgres.py)
    refused = "permission denied" if is_postgres(conn) else "append-only"
    with pytest.raises(sqlite3.DatabaseError, match=refused):
        conn.execute("UPDATE audit_log SET actor = 'b'")
    with pytest.raises(sqlite3.DatabaseError, match=refused):
        conn.execute("DELETE FROM audit_log")
    assert conn.execute("SELECT actor FROM audit_log").fetchall()[0][0] == "a"


def test_a_row_pointing_at_no_parent_is_refused(conn: sqlite3.Connection) -> None:
    with pytest.raises(sqlite3.IntegrityError, match=r"FOREIGN KEY|foreign key"):
        conn.execute(
            "INSERT INTO settlements (id, amount, status, created_at, import_id)"
            " VALUES ('setl_x', 1, 'processed', 0, 99)"
        )
    if conn.in_transaction:
        conn.rollback()
    assert conn.execute("SELECT count(*) FROM settlements").fetchone()[0] == 0


def test_postgresql_urls_are_served_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://app:secret@127.0.0.1:5432/recon"
    assert database_path(url) == url
    assert database_path("postgresql+psycopg://app@db/recon") == "postgresql://app@db/recon"
    # argparse's type=Path folds the double slash; the URL is still recognised.
    assert database_path(str(Path(url))) == url
    monkeypatch.setenv("DATABASE_URL", url)
    assert database_path() == url
