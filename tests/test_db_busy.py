"""A database whose write lock another process holds for longer than the busy timeout
(RAZORRECON_BUSY_TIMEOUT_S) stops any command with one line naming the database and the
wait, exit 3 (refused), nothing written: never a traceback (core.__main__)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.__main__ import main
from core.db import connect
from core.db.backend import WRITE_LOCK
from core.db.connection import busy_timeout_ms
from core.errors import ConfigError
from tests.conftest import SPEC_EXAMPLE

ROOT = Path(__file__).resolve().parents[1]
AS_OF = "2026-06-30T23:59:59+05:30"
IMPORT_DAY = (sys.executable, "-m", "core", "import-day")


@pytest.fixture
def db(db_path: Path) -> Path:
    return db_path  # conftest's fresh, migrated SQLite file


@contextmanager
def write_lock_held(db: Path) -> Iterator[None]:
    """Another connection holding the database's write lock (BEGIN IMMEDIATE) meanwhile."""
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


def _count(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.timeout(20)
def test_users_add_on_a_locked_database_says_so_in_one_line_and_exits_3(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", "0.5")
    users = _count(db, "users")
    with write_lock_held(db):
        code = main(["users", "add", "someone@example.com", "--role", "viewer", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 3, err
    [line] = err.splitlines()
    assert line.startswith(f"error: database {db} is busy: another process held its write lock")
    assert "0.5 s" in line and "RAZORRECON_BUSY_TIMEOUT_S" in line
    assert _count(db, "users") == users


@pytest.mark.timeout(120)
def test_import_day_on_a_locked_database_exits_3_without_a_traceback_and_writes_nothing(
    db: Path,
) -> None:
    with write_lock_held(db):
        done = subprocess.run(
            [*IMPORT_DAY, str(SPEC_EXAMPLE / "dataset"), "--db", str(db), "--as-of", AS_OF],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=90,
            env={**os.environ, "RAZORRECON_BUSY_TIMEOUT_S": "1"},
        )
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert f"database {db} is busy" in done.stderr and "1 s" in done.stderr
    assert _count(db, "runs") == 0 and _count(db, "imports") == 0


def test_the_busy_timeout_is_read_from_the_environment_and_a_bad_value_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RAZORRECON_BUSY_TIMEOUT_S", raising=False)
    assert busy_timeout_ms() == 30_000
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", "2.5")
    assert busy_timeout_ms() == 2_500
    conn = connect(tmp_path / "y.sqlite")
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2_500
    conn.close()
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", bad)
        with pytest.raises(ConfigError, match="RAZORRECON_BUSY_TIMEOUT_S"):
            busy_timeout_ms()


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_a_postgresql_lock_timeout_is_said_in_one_line_with_exit_3_too(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=500")  # a role's or server's setting
    holder = connect(pg_url)
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,)).fetchone()
        code = main(["users", "add", "someone@example.com", "--role", "viewer", "--db", pg_url])
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    err = capsys.readouterr().err
    assert code == 3, err
    [line] = err.splitlines()
    assert line.startswith("error: database postgresql://") and "lock_timeout" in line
    assert ":***@" in line or "@" not in line  # never the password
    monkeypatch.delenv("PGOPTIONS")
    conn = connect(pg_url)
    try:
        gone = conn.execute("SELECT 1 FROM users WHERE email = ?", ("someone@example.com",))
        assert gone.fetchone() is None
    finally:
        conn.close()
