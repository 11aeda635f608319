"""A new SQLite database takes its first store through a rollback journal, not the WAL
(core.db.connection.rollback_journal_while_new; docs/benchmark.md, "`--db` at 1M, fifth
round"): the same data, WAL again afterwards, and a crash meanwhile rolled back."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchmarks.db_checksums import checksums
from core import pipeline
from core.db import connect, open_database, transaction
from core.db import staging as staging_module
from core.db.connection import rollback_journal_while_new
from core.engine import EngineParams
from core.engine.cli import parse_as_of
from core.pipeline import reconcile_folder_into_db
from tests.conftest import ROOT

AS_OF = parse_as_of("2026-06-30T23:59:59+05:30")


def _mode(path: Path) -> str:
    conn = connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def test_a_new_database_is_in_the_rollback_journal_inside_and_in_wal_after(
    tmp_path: Path,
) -> None:
    with open_database(tmp_path / "new.sqlite") as conn:
        with rollback_journal_while_new(conn) as switched:
            inside = conn.execute("PRAGMA journal_mode").fetchone()[0]
        after = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert (switched, inside, after) == (True, "delete", "wal")


def test_a_database_open_on_another_connection_stays_in_wal(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    with open_database(path) as conn:
        other = connect(path)
        other.execute("SELECT count(*) FROM runs").fetchone()  # holds the file open
        with rollback_journal_while_new(conn) as switched:
            inside = conn.execute("PRAGMA journal_mode").fetchone()[0]
        other.close()
        busy = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    assert (switched, inside) == (False, "wal")
    assert busy == 30_000  # the connection's own timeout is back


def test_a_database_that_holds_a_run_keeps_the_wal(tmp_path: Path, benchmark_1500: Path) -> None:
    with open_database(tmp_path / "used.sqlite") as conn:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        with rollback_journal_while_new(conn) as switched:
            inside = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert (switched, inside) == (False, "wal")


def test_a_failed_first_store_leaves_the_new_database_empty_and_in_wal(tmp_path: Path) -> None:
    path = tmp_path / "failed.sqlite"
    with open_database(path) as conn:
        with pytest.raises(RuntimeError), rollback_journal_while_new(conn), transaction(conn):
            conn.execute(
                "INSERT INTO imports (source, location, content_hash, imported_at, report_json)"
                " VALUES ('t', 't', 'h', 0, '{}')"
            )
            raise RuntimeError("the store failed")
        assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
    assert _mode(path) == "wal"


_KILLED_MID_LOAD = """
import os, sys
from core.db import open_database
from core.db.connection import rollback_journal_while_new
with open_database(sys.argv[1]) as conn, rollback_journal_while_new(conn):
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO imports (id, source, location, content_hash, imported_at, report_json)"
        " VALUES (1, 't', 't', 'h', 0, '{}')"
    )
    conn.execute("PRAGMA cache_size = 64")  # small: pages reach the file before the commit
    conn.executemany(
        "INSERT INTO payments (id, amount, status, created_at, import_id)"
        " VALUES (?, 100, 'captured', 0, 1)",
        ((f"pay_{i:08d}",) for i in range(20_000)),
    )
    os._exit(9)  # killed before the commit
"""


def test_a_process_killed_mid_load_leaves_a_journal_the_next_connection_rolls_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "killed.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_LOAD, str(path)], cwd=ROOT, check=False
    )
    assert done.returncode == 9
    assert Path(f"{path}-journal").exists()  # the hot journal of the unfinished load
    conn = connect(path)
    try:
        counts = [
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("imports", "payments")
        ]
        assert counts == [0, 0]
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_a_first_store_through_the_rollback_journal_stores_what_the_wal_stores(
    tmp_path: Path, benchmark_1500: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staging_module, "STAGING_MIN_ROWS", 100)  # the staged copy too
    switches: list[bool] = []

    @contextmanager
    def recorded(conn: sqlite3.Connection) -> Iterator[bool]:
        with rollback_journal_while_new(conn) as switched:
            switches.append(switched)
            yield switched

    monkeypatch.setattr(pipeline, "rollback_journal_while_new", recorded)
    journaled, through_wal = tmp_path / "journaled.sqlite", tmp_path / "wal.sqlite"
    with open_database(journaled) as conn:
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
    with open_database(through_wal) as conn:
        other = connect(through_wal)  # open elsewhere: the store goes through the WAL
        other.execute("SELECT count(*) FROM runs").fetchone()
        reconcile_folder_into_db(conn, benchmark_1500, params=EngineParams(), as_of=AS_OF)
        other.close()
    first, second = checksums(str(journaled)), checksums(str(through_wal))
    assert switches == [True, False]
    assert first == second
    assert int(first["payments"].split()[0]) > 0 and int(first["exceptions"].split()[0]) > 0
    assert _mode(journaled) == _mode(through_wal) == "wal"
