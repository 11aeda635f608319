from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from core.audit import (
    GENESIS_HASH,
    AuditEvent,
    AuditFilter,
    append,
    append_many_beside,
    canonical_json,
    export,
    parse_time,
    query,
    row_hash,
    verify,
    write_export,
)
from core.db import connect, transaction
from core.db.backend import is_postgres
from core.errors import InputError
from tests.conftest import ROOT


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


@pytest.fixture
def db_path(db_url: str) -> str:
    return db_url


def _fill(conn: sqlite3.Connection, n: int, actor: str = "asha") -> list[int]:
    return [
        append(
            conn,
            actor=actor,
            action="exception.commented",
            entity_type="exception",
            entity_id=str(i),
            payload={"note": f"comment {i}", "amount": i * 100},
            now=1_700_000_000 + i,
        )
        for i in range(n)
    ]


def _drop_triggers(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TRIGGER audit_log_no_update")
    conn.execute("DROP TRIGGER audit_log_no_delete")


def _restore_triggers(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log"
        " BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END"
    )
    conn.execute(
        "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log"
        " BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END"
    )


@contextmanager
def _triggers_off(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A connection that can edit the trail behind its append-only triggers: on SQLite
    anyone with the file drops them (restored after); on PostgreSQL only the owner role can,
    by disabling them (the app role may not: tests/test_db_postgres.py)."""
    if not is_postgres(conn):
        _drop_triggers(conn)
        yield conn
        _restore_triggers(conn)
        return
    owner = connect(os.environ["DATABASE_OWNER_URL"])
    try:
        owner.execute("ALTER TABLE audit_log DISABLE TRIGGER USER")
        yield owner
        owner.execute("ALTER TABLE audit_log ENABLE TRIGGER USER")
    finally:
        owner.close()


def test_append_chains_each_row_to_the_previous_one(conn: sqlite3.Connection) -> None:
    seqs = _fill(conn, 3)
    assert seqs == [1, 2, 3]
    rows = conn.execute("SELECT seq, prev_hash, hash FROM audit_log ORDER BY seq").fetchall()
    assert rows[0]["prev_hash"] == GENESIS_HASH
    assert rows[1]["prev_hash"] == rows[0]["hash"]
    assert rows[2]["prev_hash"] == rows[1]["hash"]
    first = conn.execute("SELECT * FROM audit_log WHERE seq = 1").fetchone()
    assert first["hash"] == row_hash(
        1,
        first["created_at"],
        "asha",
        "exception.commented",
        "exception",
        "0",
        first["payload_json"],
        GENESIS_HASH,
    )
    assert json.loads(first["payload_json"]) == {"note": "comment 0", "amount": 0}


def test_verify_passes_on_an_untouched_trail(conn: sqlite3.Connection) -> None:
    _fill(conn, 5)
    result = verify(conn)
    assert result.ok and result.rows_checked == 5 and result.head_seq == 5
    assert (
        result.head_hash == conn.execute("SELECT hash FROM audit_log WHERE seq = 5").fetchone()[0]
    )


def test_verify_passes_on_an_empty_trail(conn: sqlite3.Connection) -> None:
    result = verify(conn)
    assert result.ok and result.rows_checked == 0 and result.head_hash == GENESIS_HASH


def test_the_database_refuses_update_and_delete_of_audit_rows(conn: sqlite3.Connection) -> None:
    _fill(conn, 2)
    # SQLite: the triggers refuse; PostgreSQL: the app role has no UPDATE/DELETE privilege
    refused = "permission denied" if is_postgres(conn) else "append-only"
    with pytest.raises(sqlite3.DatabaseError, match=refused):
        conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE seq = 1")
    with pytest.raises(sqlite3.DatabaseError, match=refused):
        conn.execute("DELETE FROM audit_log WHERE seq = 2")
    assert verify(conn).ok


def test_verify_names_a_row_edited_after_its_trigger_was_dropped(
    conn: sqlite3.Connection,
) -> None:
    _fill(conn, 5)
    with _triggers_off(conn) as editor:
        editor.execute('UPDATE audit_log SET payload_json = \'{"note":"nothing"}\' WHERE seq = 3')
    result = verify(conn)
    assert not result.ok and result.broken_seq == 3
    assert "edited" in result.problem


def test_verify_catches_an_edit_whose_hash_was_recomputed(conn: sqlite3.Connection) -> None:
    _fill(conn, 5)
    row = conn.execute("SELECT * FROM audit_log WHERE seq = 2").fetchone()
    forged = row_hash(
        2,
        row["created_at"],
        "mallory",
        row["action"],
        row["entity_type"],
        row["entity_id"],
        row["payload_json"],
        row["prev_hash"],
    )
    with _triggers_off(conn) as editor:
        editor.execute("UPDATE audit_log SET actor = 'mallory', hash = ? WHERE seq = 2", (forged,))
    result = verify(conn)
    assert not result.ok and result.broken_seq == 3
    assert "prev_hash" in result.problem


def test_verify_names_the_row_after_a_deleted_one(conn: sqlite3.Connection) -> None:
    _fill(conn, 5)
    with _triggers_off(conn) as editor:
        editor.execute("DELETE FROM audit_log WHERE seq = 3")
    result = verify(conn)
    assert not result.ok and result.broken_seq == 4
    assert "missing" in result.problem


def test_verify_catches_two_swapped_rows(conn: sqlite3.Connection) -> None:
    _fill(conn, 5)
    with _triggers_off(conn) as editor:
        editor.execute("UPDATE audit_log SET seq = -2 WHERE seq = 2")
        editor.execute("UPDATE audit_log SET seq = 2 WHERE seq = 3")
        editor.execute("UPDATE audit_log SET seq = 3 WHERE seq = -2")
    result = verify(conn)
    assert not result.ok and result.broken_seq == 2


def test_verify_fails_when_the_append_only_triggers_are_gone(conn: sqlite3.Connection) -> None:
    _fill(conn, 2)
    with _triggers_off(conn):  # PostgreSQL: disabled, which verify counts as gone
        result = verify(conn)
    assert not result.ok and "trigger" in result.problem
    assert verify(conn).ok


def test_an_anchor_catches_a_cut_off_tail(conn: sqlite3.Connection) -> None:
    _fill(conn, 4)
    head = verify(conn)
    anchor = f"{head.head_seq}:{head.head_hash}"
    assert verify(conn, anchor=anchor).ok
    with _triggers_off(conn) as editor:
        editor.execute("DELETE FROM audit_log WHERE seq = 4")
    assert verify(conn).ok  # a cut tail leaves a valid shorter chain...
    result = verify(conn, anchor=anchor)
    assert not result.ok and "anchor" in result.problem  # ...which the anchor exposes


def test_an_append_rolled_back_with_its_caller_leaves_no_gap(conn: sqlite3.Connection) -> None:
    _fill(conn, 2)
    with pytest.raises(RuntimeError), transaction(conn):
        append(conn, actor="a", action="x", entity_type="t", entity_id="1", payload={})
        raise RuntimeError("decision failed")
    assert append(conn, actor="a", action="y", entity_type="t", entity_id="1", payload={}) == 3
    assert verify(conn).ok


def test_the_chain_cannot_fork_even_without_the_lock(conn: sqlite3.Connection) -> None:
    _fill(conn, 1)
    head = conn.execute("SELECT hash FROM audit_log").fetchone()[0]
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO audit_log (seq, created_at, actor, action, entity_type, entity_id,"
            " payload_json, prev_hash, hash) VALUES (5, 0, 'a', 'b', 'c', 'd', '{}', ?, 'x')",
            (GENESIS_HASH,),
        )
    assert head


def test_append_refuses_blank_actor(conn: sqlite3.Connection) -> None:
    with pytest.raises(InputError, match="actor"):
        append(conn, actor=" ", action="x", entity_type="t", entity_id="1", payload={})
    assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == 0


APPENDER = """
import sys
from core.audit import append
from core.db import connect
conn = connect(sys.argv[1])
for i in range(int(sys.argv[3])):
    append(conn, actor=sys.argv[2], action="test.append", entity_type="t", entity_id=str(i),
           payload={"i": i})
conn.close()
"""


def test_the_chain_resumes_across_processes_and_concurrent_writers_never_fork(
    db_path: Path,
) -> None:
    subprocess.run(
        [sys.executable, "-c", APPENDER, str(db_path), "first", "5"], cwd=ROOT, check=True
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(db_path), f"w{k}", "25"], cwd=ROOT)
        for k in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    conn = connect(db_path)
    result = verify(conn)
    assert result.ok and result.rows_checked == 105
    actors = [r[0] for r in conn.execute("SELECT actor FROM audit_log ORDER BY seq")]
    assert actors[:5] == ["first"] * 5
    assert sorted(set(actors[5:])) == ["w0", "w1", "w2", "w3"]
    conn.close()


def test_query_filters_by_actor_action_entity_and_time(conn: sqlite3.Connection) -> None:
    _fill(conn, 3, actor="asha")
    append(
        conn,
        actor="ravi",
        action="exception.resolved",
        entity_type="exception",
        entity_id="7",
        payload={},
        now=1_700_000_100,
    )
    assert [e.actor for e in query(conn, AuditFilter(actor="ravi"))] == ["ravi"]
    assert len(query(conn, AuditFilter(action="exception.commented"))) == 3
    assert [e.seq for e in query(conn, AuditFilter(entity_id="1"))] == [2]
    window = AuditFilter(since=1_700_000_001, until=1_700_000_003)
    assert [e.seq for e in query(conn, window, newest_first=False)] == [2, 3]
    assert [e.seq for e in query(conn, limit=2)] == [4, 3]


def test_export_writes_csv_and_json_lines_by_extension(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    _fill(conn, 3)
    assert export(conn, tmp_path / "trail.csv") == 3
    with (tmp_path / "trail.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["seq"] for r in rows] == ["1", "2", "3", "anchor"]  # the head, last
    assert rows[1]["prev_hash"] == rows[0]["hash"]
    assert json.loads(rows[3]["payload_json"])["seq"] == 3
    assert export(conn, tmp_path / "trail.jsonl", AuditFilter(entity_id="2")) == 1
    lines = (tmp_path / "trail.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["entity_id"] == "2"
    assert json.loads(lines[-1])["anchor"]["seq"] == 3
    with pytest.raises(InputError, match="format"):
        export(conn, tmp_path / "trail.xlsx")


def test_parse_time_reads_ist_dates_and_offsets() -> None:
    assert parse_time("2026-01-01") == 1_767_205_800  # 2026-01-01 00:00 IST
    assert parse_time("2026-01-01", end=True) == 1_767_205_800 + 86_400
    assert parse_time("2026-01-01T00:00:00+00:00") == 1_767_225_600
    with pytest.raises(InputError, match="since"):
        parse_time("yesterday", field="since")


def test_write_export_streams_to_an_open_file(conn: sqlite3.Connection) -> None:
    import io

    _fill(conn, 2)
    buffer = io.StringIO()
    assert write_export(conn, buffer, "jsonl") == 2
    lines = [json.loads(x) for x in buffer.getvalue().splitlines()]
    assert [x["seq"] for x in lines[:-1]] == [1, 2]
    assert lines[-1]["anchor"]["seq"] == 2


def test_payloads_from_pandas_are_stored_as_plain_numbers(conn: sqlite3.Connection) -> None:
    import datetime as dt

    import numpy as np

    append(
        conn,
        actor="engine",
        action="run.persisted",
        entity_type="run",
        entity_id="1",
        payload={"rows": np.int64(5), "day": dt.date(2026, 1, 2)},
    )
    stored = conn.execute("SELECT payload_json FROM audit_log").fetchone()[0]
    assert stored == '{"day":"2026-01-02","rows":5}'
    assert verify(conn).ok


def test_append_many_beside_hashes_on_a_worker_while_the_work_runs_and_writes_the_same_rows(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.audit import chain

    _fill(conn, 2)
    events = [
        AuditEvent("engine", "batch.appended", "batch", str(i), {"n": i, "note": "x"})
        for i in range(3)
    ]
    # Each side waits for the other: both return True only if they ran at the same time
    # (one after the other, the first waits out its timeout and records False).
    hashing = threading.Event()
    work_ran = threading.Event()
    seen: list[tuple[str, bool, bool]] = []
    prepare = chain._prepare

    def prepare_beside_the_work(*args: Any) -> list[Any]:
        hashing.set()
        seen.append(("hash", work_ran.wait(timeout=10), threading.current_thread() is main))
        return prepare(*args)

    def work() -> None:
        seen.append(("work", hashing.wait(timeout=10), threading.current_thread() is main))
        work_ran.set()

    main = threading.current_thread()
    monkeypatch.setattr(chain, "_prepare", prepare_beside_the_work)
    with transaction(conn):
        seqs = append_many_beside(conn, events, work, now=1_700_000_100)
    assert seqs == [3, 4, 5]
    assert sorted(seen) == [("hash", True, False), ("work", True, True)]
    rows = conn.execute("SELECT * FROM audit_log ORDER BY seq").fetchall()
    prev = rows[1]["hash"]
    for row, event in zip(rows[2:], events, strict=True):
        assert row["prev_hash"] == prev
        assert row["hash"] == row_hash(
            row["seq"],
            1_700_000_100,
            "engine",
            "batch.appended",
            "batch",
            event.entity_id,
            canonical_json(dict(event.payload)),
            prev,
        )
        prev = row["hash"]
    assert verify(conn).ok


def test_append_many_beside_raises_a_bad_event_after_the_work_and_rolls_back_with_its_caller(
    conn: sqlite3.Connection,
) -> None:
    from core.db import review as review_sql

    _fill(conn, 1)
    ran: list[bool] = []

    def work() -> None:
        review_sql.begin_search_deferred(conn)  # a write the caller's rollback undoes
        ran.append(True)

    with pytest.raises(InputError, match="actor"), transaction(conn):
        append_many_beside(conn, [AuditEvent(" ", "x", "t", "1", {})], work)
    assert ran == [True]
    assert conn.execute("SELECT count(*) FROM audit_log").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM exception_search_deferred").fetchone()[0] == 0
    assert verify(conn).ok
