from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import core.db.audit
from core.audit import verify
from core.db import connect
from core.errors import RefusedError
from core.review import ActionResult, get_exception, resolve, sync_exceptions
from tests.conftest import ROOT
from tests.review_support import Finding, add_people, exception_id, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


@pytest.fixture
def db_path(db_url: str) -> str:
    return db_url


def _seed(db_path: Path) -> int:
    conn = connect(db_path)
    add_people(conn)
    sync_exceptions(conn, write_run(conn, [Finding("pay_1")]))
    exc = exception_id(conn, "pay_1")
    conn.close()
    return exc


def _effects(db_path: Path) -> tuple[int, int, int, str, int]:
    conn = connect(db_path)
    try:
        events = conn.execute(
            "SELECT COUNT(*) FROM exception_events WHERE action = 'resolved'"
        ).fetchone()[0]
        audits = conn.execute(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'exception.resolved'"
        ).fetchone()[0]
        requests = conn.execute("SELECT COUNT(*) FROM action_requests").fetchone()[0]
        status, version = conn.execute("SELECT status, version FROM exceptions").fetchone()
        assert verify(conn).ok
        return events, audits, requests, status, version
    finally:
        conn.close()


def _in_threads(n: int, work: object) -> list[object]:
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)  # type: ignore[operator]
        except Exception as exc:  # collected and asserted by the caller
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def test_fifty_threads_sending_one_request_id_make_exactly_one_effect(db_path: Path) -> None:
    exc = _seed(db_path)

    def work(i: int) -> ActionResult:
        conn = connect(db_path)
        try:
            return resolve(
                conn, exc, actor="asha@example.com", note="settled late", request_id="click-1"
            )
        finally:
            conn.close()

    results = _in_threads(50, work)
    assert all(isinstance(r, ActionResult) for r in results), results
    actions = [r for r in results if isinstance(r, ActionResult)]
    assert sum(not r.replayed for r in actions) == 1
    assert len({(r.audit_seq, r.event_id, r.version) for r in actions}) == 1
    assert _effects(db_path) == (1, 1, 1, "RESOLVED", 2)


def test_two_reviewers_racing_on_one_version_leave_exactly_one_decision(db_path: Path) -> None:
    exc = _seed(db_path)
    conn = connect(db_path)
    add_people(conn, {f"reviewer{i}@example.com": "reviewer" for i in range(10)})
    conn.close()

    def work(i: int) -> ActionResult:
        conn = connect(db_path)
        try:
            return resolve(
                conn,
                exc,
                actor=f"reviewer{i}@example.com",
                note=f"decision {i}",
                request_id=f"req-{i}",
                expected_version=1,
            )
        finally:
            conn.close()

    results = _in_threads(10, work)
    wins = [r for r in results if isinstance(r, ActionResult)]
    refusals = [r for r in results if isinstance(r, RefusedError)]
    assert (len(wins), len(refusals)) == (1, 9)
    assert _effects(db_path) == (1, 1, 1, "RESOLVED", 2)


def test_four_processes_sending_one_request_id_make_exactly_one_effect(db_path: Path) -> None:
    exc = _seed(db_path)
    command = [
        sys.executable,
        "-m",
        "core",
        "review",
        "resolve",
        str(exc),
        "--db",
        str(db_path),
        "--actor",
        "asha@example.com",
        "--note",
        "bank credit found",
        "--request-id",
        "click-7",
    ]
    procs = [
        subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outputs
    replays = sum("nothing changed" in out for out, _ in outputs)
    assert replays == 3
    assert _effects(db_path) == (1, 1, 1, "RESOLVED", 2)


def test_a_failing_audit_write_leaves_neither_decision_nor_audit(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exc = _seed(db_path)

    def broken(conn: sqlite3.Connection, rows: object) -> None:
        raise OSError("disk full while writing the audit row")

    monkeypatch.setattr(core.db.audit, "insert_rows", broken)
    conn = connect(db_path)
    with pytest.raises(OSError):
        resolve(conn, exc, actor="asha@example.com", note="done", request_id="r1")
    conn.close()
    assert _effects(db_path) == (0, 0, 0, "OPEN", 1)


CRASH_IN_AUDIT_WRITE = """
import os, sys
import core.db.audit
from core.db import connect
from core.review import resolve

def crash(conn, rows):
    os._exit(9)  # the process dies between the decision and its audit row

core.db.audit.insert_rows = crash
conn = connect(sys.argv[1])
resolve(conn, int(sys.argv[2]), actor="asha@example.com", note="done", request_id="r1")
"""


def test_a_process_crash_between_decision_and_audit_leaves_neither(db_path: Path) -> None:
    exc = _seed(db_path)
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_IN_AUDIT_WRITE, str(db_path), str(exc)], cwd=ROOT, timeout=120
    )
    assert proc.returncode == 9
    assert _effects(db_path) == (0, 0, 0, "OPEN", 1)
    conn = connect(db_path)
    retried = resolve(conn, exc, actor="asha@example.com", note="done", request_id="r1")
    assert not retried.replayed and get_exception(conn, exc).status == "RESOLVED"
    conn.close()
    assert _effects(db_path) == (1, 1, 1, "RESOLVED", 2)
