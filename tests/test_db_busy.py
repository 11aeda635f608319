"""A database whose write lock another process holds for longer than the busy timeout
(RAZORRECON_BUSY_TIMEOUT_S) stops any command with one line naming the database and the
wait, exit 3 (refused), nothing written: never a traceback (core.__main__). On PostgreSQL
the same setting is every session's lock_timeout: a row or table lock another session holds
stops a command the same way, while a migrator and a bulk load still wait as long as they
must (core.db.backend.lock_waits_unbounded)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

import pytest

from core.__main__ import main
from core.db import connect
from core.db.backend import busy_timeout_ms
from core.errors import ConfigError
from core.ingest import import_dataset
from core.ingest.report import ImportReport
from core.review import sync_exceptions
from tests.busy_support import write_lock_held
from tests.conftest import SPEC_EXAMPLE, database_rows
from tests.review_support import Finding, add_people, exception_id, write_run

ROOT = Path(__file__).resolve().parents[1]
AS_OF = "2026-06-30T23:59:59+05:30"
IMPORT_DAY = (sys.executable, "-m", "core", "import-day")
migrate_module = import_module("core.db.migrate")  # core.db.migrate is also a function's name


@pytest.fixture
def db(db_path: Path) -> Path:
    return db_path  # conftest's fresh, migrated SQLite file


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
def test_a_postgresql_session_waits_for_a_lock_as_long_as_the_busy_timeout(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for seconds, lock_timeout in (("2.5", "2500ms"), ("0", "1ms"), ("", "30s")):
        monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", seconds)  # 0: no wait, never "no limit"
        conn = connect(pg_url)
        try:
            assert conn.execute("SHOW lock_timeout").fetchone()[0] == lock_timeout
        finally:
            conn.close()
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="RAZORRECON_BUSY_TIMEOUT_S"):
        connect(pg_url)


def _says_postgresql_is_busy(err: str, waited: str) -> None:
    [line] = err.splitlines()
    assert line.startswith("error: database postgresql://"), line
    assert "is busy: another session held a lock this command needed" in line
    assert f"this command waited {waited} (PostgreSQL's lock_timeout)" in line
    assert "RAZORRECON_BUSY_TIMEOUT_S" in line
    assert ":***@" in line or "@" not in line  # never the password


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_the_postgresql_write_lock_held_past_the_busy_timeout_stops_a_command_with_exit_3(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", "0.5")
    before = database_rows(pg_url)
    with write_lock_held(pg_url):
        code = main(["users", "add", "someone@example.com", "--role", "viewer", "--db", pg_url])
    err = capsys.readouterr().err
    assert code == 3, err
    _says_postgresql_is_busy(err, "0.5 s")
    assert database_rows(pg_url) == before


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_a_row_lock_another_postgresql_session_holds_stops_a_review_command_with_exit_3(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = connect(pg_url)
    try:
        add_people(conn)
        sync_exceptions(conn, write_run(conn, [Finding("pay_locked")]))
        locked = exception_id(conn, "pay_locked")
    finally:
        conn.close()
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", "0.5")
    before = database_rows(pg_url)
    other = connect(pg_url)  # e.g. a person's psql session, mid-transaction
    try:
        other.execute("BEGIN")
        other.execute("SELECT id FROM exceptions WHERE id = ? FOR UPDATE", (locked,)).fetchone()
        resolve = ["review", "resolve", str(locked), "--db", pg_url, "--note", "paid"]
        code = main([*resolve, "--actor", "asha@example.com", "--request-id", "r1"])
        other.execute("ROLLBACK")
    finally:
        other.close()
    err = capsys.readouterr().err
    assert code == 3, err
    _says_postgresql_is_busy(err, "0.5 s")
    assert database_rows(pg_url) == before
    assert main([*resolve, "--actor", "asha@example.com", "--request-id", "r1"]) == 0  # again


@pytest.mark.postgres
@pytest.mark.timeout(180)
def test_import_day_on_a_postgresql_table_another_session_locks_exits_3_and_writes_nothing(
    pg_url: str,
) -> None:
    before = database_rows(pg_url)
    other = connect(pg_url)
    try:
        other.execute("BEGIN")
        other.execute("LOCK TABLE payments IN SHARE MODE")  # read, but nobody writes
        done = subprocess.run(
            [*IMPORT_DAY, str(SPEC_EXAMPLE / "dataset"), "--db", pg_url, "--as-of", AS_OF],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=150,
            env={**os.environ, "RAZORRECON_BUSY_TIMEOUT_S": "1"},
        )
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    _says_postgresql_is_busy(done.stderr, "1 s")
    assert database_rows(pg_url) == before


def _waiting_for_a_lock(pg_url: str, deadline_s: float = 60) -> None:
    """Until another session of this database waits for a lock (pg_locks: not granted)."""
    watcher = connect(pg_url)
    try:
        stop = time.monotonic() + deadline_s
        while time.monotonic() < stop:
            row = watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND database ="
                " (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()
            if row[0]:
                return
            time.sleep(0.05)
        raise AssertionError("nobody waited for a lock")
    finally:
        watcher.close()


def _on_a_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """`work` started on a thread; the list receives its result or its exception."""
    answer: list[object] = []

    def run() -> None:
        try:
            answer.append(work())
        except BaseException as error:  # handed to the test to assert on
            answer.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_a_replacing_import_waits_past_the_busy_timeout_for_a_reader_and_is_stored(
    pg_url: str, benchmark_1500: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", "0.2")
    conn = connect(pg_url)
    try:
        import_dataset(conn, SPEC_EXAMPLE / "dataset")
    finally:
        conn.close()
    reader = connect(pg_url)  # a long read: its snapshot's table locks stay until it ends
    reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    reader.execute("SELECT count(*) FROM payments").fetchone()

    def replace() -> object:
        mine = connect(pg_url)
        try:
            return import_dataset(mine, benchmark_1500, replace=True)
        finally:
            mine.close()

    thread, answer = _on_a_thread(replace)
    try:
        _waiting_for_a_lock(pg_url)  # TRUNCATE waits for the reader...
        time.sleep(1.0)  # ...for longer than the busy timeout
    finally:
        reader.execute("ROLLBACK")
        reader.close()
        thread.join()
    [report] = answer
    assert isinstance(report, ImportReport), report
    assert report.replaced and report.written["payments"] == 1500


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_a_migrator_waits_past_the_busy_timeout_for_the_one_before_it(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = migrate_module.available_migrations

    def with_one_more(dialect: str = "sqlite") -> list[tuple[str, str]]:
        return [*real(dialect), ("9999_busy_test", "SELECT 1")]

    monkeypatch.setattr(migrate_module, "available_migrations", with_one_more)
    monkeypatch.setenv("RAZORRECON_BUSY_TIMEOUT_S", "0.2")
    first = connect(pg_url)  # another process migrating, for longer than the busy timeout
    first.execute("BEGIN")
    first.execute("SELECT pg_advisory_xact_lock(?)", (migrate_module.MIGRATE_LOCK,)).fetchone()

    def migrate() -> object:
        mine = connect(pg_url)
        try:
            return migrate_module.migrate_with_owner(mine)
        finally:
            mine.close()

    thread, answer = _on_a_thread(migrate)
    try:
        _waiting_for_a_lock(pg_url)
        time.sleep(1.0)
    finally:
        first.execute("ROLLBACK")
        first.close()
        thread.join()
    assert answer == [["9999_busy_test"]]
