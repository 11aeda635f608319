"""A database that cannot be reached, as core.db.connection names it: a PostgreSQL server
stopped for real (the tests' own, `pg_ctl stop`, then started again) before a connection
or under an open one, a SQLite file that cannot be opened. The error names the database
without its password and says why in a few words; `reachable` says whether it answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core.db import connect
from core.db.connection import reachable, unreachable_error
from core.errors import DatabaseUnreachableError, StorageError
from tests.postgres_server import PASSWORD
from tests.test_app_database_down import _sqlite_unreachable


def test_an_unopenable_sqlite_file_is_unreachable_until_it_is_back(tmp_path: Path) -> None:
    database = tmp_path / "recon.sqlite"
    connect(str(database)).close()
    with _sqlite_unreachable(database):
        with pytest.raises(sqlite3.OperationalError) as raised:
            connect(str(database))
        down = unreachable_error(raised.value, str(database))
        assert down is not None and not down.midway
        assert down.database == str(database) and down.reason == "the file cannot be opened"
        assert not reachable(str(database))
    assert reachable(str(database))
    assert unreachable_error(sqlite3.OperationalError("no such table: x")) is None


@pytest.mark.postgres
def test_a_stopped_postgresql_server_is_unreachable_before_and_under_a_connection(
    pg_url: str, postgres_server: object
) -> None:
    open_before = connect(pg_url)
    postgres_server.pause()  # type: ignore[attr-defined]
    try:
        with pytest.raises(DatabaseUnreachableError) as raised:
            connect(pg_url)
        down = raised.value
        assert isinstance(down, StorageError)  # the CLI's exit code (4) as before
        assert down.reason == "connection refused" and not down.midway
        assert PASSWORD not in down.database and PASSWORD not in str(down)
        assert not reachable(pg_url)
        with pytest.raises(sqlite3.OperationalError) as cut:
            open_before.execute("SELECT 1").fetchone()
        midway = unreachable_error(cut.value, pg_url)
        assert midway is not None and midway.midway and PASSWORD not in str(midway)
    finally:
        open_before.close()
        postgres_server.resume()  # type: ignore[attr-defined]
    assert reachable(pg_url)
