from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from core.audit import verify
from core.db import review as review_sql
from core.db import transaction
from core.db.backend import is_postgres
from core.errors import NotFoundError, RefusedError
from core.review import sync_exceptions
from tests.review_support import Finding, audit_actions, exception_id, statuses, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


MONDAY_NOON_IST = 1_767_940_200  # 2026-01-09 is a Friday; this is Friday 12:00 IST


def test_sync_opens_one_exception_per_finding_with_audit_entries(conn: sqlite3.Connection) -> None:
    run = write_run(conn, [Finding("pay_1"), Finding("pay_2")], matched=["pay_3"])
    summary = sync_exceptions(conn, run)
    assert (summary.opened, summary.kept, summary.reopened, summary.auto_cleared) == (2, 0, 0, 0)
    assert statuses(conn) == {"pay_1:AMOUNT_MISMATCH": "OPEN", "pay_2:AMOUNT_MISMATCH": "OPEN"}
    actions = [a for a, _, _ in audit_actions(conn)]
    assert actions == ["exception.opened", "exception.opened", "exceptions.synced"]
    assert verify(conn).ok


def test_sync_of_the_same_run_twice_changes_nothing(conn: sqlite3.Connection) -> None:
    run = write_run(conn, [Finding("pay_1")])
    sync_exceptions(conn, run)
    before = conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0]
    again = sync_exceptions(conn, run)
    assert (again.opened, again.kept, again.reopened, again.auto_cleared) == (0, 1, 0, 0)
    assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == before
    assert conn.execute("SELECT version FROM exceptions").fetchone()[0] == 1


def test_sync_keeps_status_and_history_of_a_still_holding_exception(
    conn: sqlite3.Connection,
) -> None:
    first = write_run(conn, [Finding("pay_1")])
    sync_exceptions(conn, first)
    exc = exception_id(conn, "pay_1")
    conn.execute(
        "UPDATE exceptions SET status = 'RESOLVED', assignee = 'asha' WHERE id = ?", (exc,)
    )
    second = write_run(conn, [Finding("pay_1")])
    summary = sync_exceptions(conn, second)
    assert (summary.opened, summary.kept, summary.reopened, summary.auto_cleared) == (0, 1, 0, 0)
    row = conn.execute(
        "SELECT status, assignee, first_run_id, last_run_id FROM exceptions WHERE id = ?", (exc,)
    ).fetchone()
    assert tuple(row) == ("RESOLVED", "asha", first, second)


def test_sync_auto_clears_what_no_longer_holds_and_reopens_when_it_returns(
    conn: sqlite3.Connection,
) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_1"), Finding("pay_2")]))
    cleared = sync_exceptions(conn, write_run(conn, [Finding("pay_2")], matched=["pay_1"]))
    assert (cleared.kept, cleared.auto_cleared) == (1, 1)
    assert statuses(conn)["pay_1:AMOUNT_MISMATCH"] == "AUTO_CLEARED"
    back = sync_exceptions(conn, write_run(conn, [Finding("pay_1"), Finding("pay_2")]))
    assert (back.opened, back.kept, back.reopened, back.auto_cleared) == (0, 1, 1, 0)
    assert statuses(conn)["pay_1:AMOUNT_MISMATCH"] == "OPEN"
    exc = exception_id(conn, "pay_1")
    trail = [a for a, t, e in audit_actions(conn) if t == "exception" and e == str(exc)]
    assert trail == ["exception.opened", "exception.auto_cleared", "exception.reopened"]
    events = [
        r[0]
        for r in conn.execute(
            "SELECT action FROM exception_events WHERE exception_id = ? ORDER BY id", (exc,)
        )
    ]
    assert events == ["opened", "auto_cleared", "reopened"]
    assert verify(conn).ok


def test_sync_never_auto_clears_a_resolved_exception(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_1")]))
    conn.execute("UPDATE exceptions SET status = 'RESOLVED'")
    summary = sync_exceptions(conn, write_run(conn, []))
    assert summary.auto_cleared == 0
    assert statuses(conn) == {"pay_1:AMOUNT_MISMATCH": "RESOLVED"}


def test_sync_reopens_a_resolved_exception_whose_exposure_moved(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_1", exposure_amount=500)]))
    conn.execute("UPDATE exceptions SET status = 'RESOLVED'")
    summary = sync_exceptions(conn, write_run(conn, [Finding("pay_1", exposure_amount=900)]))
    assert summary.reopened == 1
    row = conn.execute("SELECT status, exposure_amount FROM exceptions").fetchone()
    assert tuple(row) == ("OPEN", 900)


def test_sync_refreshes_facts_and_moves_the_version_only_on_material_change(
    conn: sqlite3.Connection,
) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_1", exposure_amount=500)]))
    conn.execute("UPDATE exceptions SET status = 'ASSIGNED', assignee = 'ravi'")
    same = sync_exceptions(conn, write_run(conn, [Finding("pay_1", exposure_amount=500)]))
    assert same.refreshed == 0
    assert conn.execute("SELECT version FROM exceptions").fetchone()[0] == 1
    moved = sync_exceptions(conn, write_run(conn, [Finding("pay_1", exposure_amount=700)]))
    assert (moved.kept, moved.refreshed) == (1, 1)
    row = conn.execute(
        "SELECT status, assignee, exposure_amount, version FROM exceptions"
    ).fetchone()
    assert tuple(row) == ("ASSIGNED", "ravi", 700, 2)
    assert audit_actions(conn)[-2][0] == "exception.refreshed"


def test_a_new_primary_code_is_a_new_exception(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_1", "AMOUNT_MISMATCH")]))
    summary = sync_exceptions(conn, write_run(conn, [Finding("pay_1", "WRONG_MAPPING")]))
    assert (summary.opened, summary.auto_cleared) == (1, 1)
    assert statuses(conn) == {
        "pay_1:AMOUNT_MISMATCH": "AUTO_CLEARED",
        "pay_1:WRONG_MAPPING": "OPEN",
    }


def test_sync_refuses_an_older_run_a_failed_run_and_an_unknown_run(
    conn: sqlite3.Connection,
) -> None:
    old = write_run(conn, [Finding("pay_1")])
    new = write_run(conn, [])
    failed = write_run(conn, [], status="failed")
    sync_exceptions(conn, old)
    sync_exceptions(conn, new)
    with pytest.raises(RefusedError, match="older"):
        sync_exceptions(conn, old)
    with pytest.raises(RefusedError, match="failed"):
        sync_exceptions(conn, failed)
    with pytest.raises(NotFoundError):
        sync_exceptions(conn, 999)


def test_sync_sets_due_dates_from_exposure(conn: sqlite3.Connection) -> None:
    run = write_run(
        conn,
        [
            Finding("big", exposure_amount=20_000_000),
            Finding("mid", exposure_amount=2_000_000),
            Finding("small", exposure_amount=100),
            Finding("disp", "DISPUTE_DEBIT", 100, "disputed"),
            Finding("late", "TIMING_WINDOW_EXCEEDED", 0, "structural"),
            Finding("wait", "MISSING_SETTLEMENT", 500, "awaiting_settlement"),
            Finding("odd", "NEW_CODE", 20_000_000, "some_new_class"),
        ],
    )
    sync_exceptions(conn, run, now=MONDAY_NOON_IST)
    due = {r[0]: r[1] for r in conn.execute("SELECT entity_id, due_date FROM exceptions")}
    assert due == {
        "big": "2026-01-12",  # Friday + 1 working day
        "mid": "2026-01-14",
        "small": "2026-01-16",
        "disp": "2026-01-13",
        "late": "2026-01-23",
        "wait": "2026-01-16",
        "odd": "2026-01-12",
    }


def test_sync_inside_a_failed_outer_transaction_leaves_nothing(conn: sqlite3.Connection) -> None:
    from core.db import transaction

    run = write_run(conn, [Finding("pay_1")])
    with pytest.raises(RuntimeError), transaction(conn):
        sync_exceptions(conn, run)
        raise RuntimeError("pipeline failed after sync")
    assert conn.execute("SELECT COUNT(*) FROM exceptions").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0] == 0


def _search_documents(conn: sqlite3.Connection) -> dict[int, tuple[str, str]]:
    key = "id" if is_postgres(conn) else "rowid"
    rows = conn.execute(f"SELECT {key}, ids, notes FROM exception_search ORDER BY {key}")
    return {int(r[0]): (str(r[1]), str(r[2])) for r in rows}


def _documents_as_the_triggers_write_them(conn: sqlite3.Connection) -> dict[int, tuple[str, str]]:
    """Migration 0075's triggers: ids from the row, notes '' then ' ' || note per event."""
    found: dict[int, tuple[str, str]] = {}
    for e in conn.execute(
        "SELECT id, entity_id, order_id, utr, settlement_id FROM exceptions ORDER BY id"
    ):
        ids = " ".join([str(e[1]), *("" if v is None else str(v) for v in e[2:5]), ""])
        notes = conn.execute(
            "SELECT note FROM exception_events WHERE exception_id = ? AND note IS NOT NULL"
            " AND note != '' ORDER BY id",
            (e[0],),
        )
        found[int(e[0])] = (ids, "".join(" " + str(n[0]) for n in notes))
    return found


def test_sync_writes_the_search_documents_the_row_triggers_would_have(
    conn: sqlite3.Connection,
) -> None:
    first = write_run(conn, [Finding("pay_1"), Finding("pay_2", settlement_id=None)])
    sync_exceptions(conn, first)
    # pay_1 is gone (auto-cleared), pay_3 is new, pay_2 holds with a new settlement
    second = write_run(conn, [Finding("pay_2", settlement_id="setl_9"), Finding("pay_3")])
    sync_exceptions(conn, second)
    third = write_run(conn, [Finding("pay_1"), Finding("pay_3", exposure_amount=7)])
    sync_exceptions(conn, third)  # pay_1 reopened, pay_3 refreshed, pay_2 auto-cleared
    documents = _search_documents(conn)
    assert documents == _documents_as_the_triggers_write_them(conn)
    assert documents[exception_id(conn, "pay_1")][1] == (
        " found by the engine no longer found by the engine holds again in this run"
    )
    assert documents[exception_id(conn, "pay_2")][0] == "pay_2   setl_9 "
    assert conn.execute("SELECT COUNT(*) FROM exception_search_deferred").fetchone()[0] == 0


def test_a_syncs_events_follow_the_order_of_its_audit_entries(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_1"), Finding("pay_2")]))
    sync_exceptions(conn, write_run(conn, [Finding("pay_2")]), now=100)  # pay_1 auto-cleared
    # pay_1 reopened, pay_4 and pay_5 new, pay_2 auto-cleared: one sync, event ids in order
    third = write_run(conn, [Finding("pay_5"), Finding("pay_1"), Finding("pay_4")])
    sync_exceptions(conn, third, actor="nightly", now=200)
    events = conn.execute(
        "SELECT v.action, e.entity_id, v.actor, v.note, v.from_status, v.to_status,"
        " v.request_id, v.created_at FROM exception_events v"
        " JOIN exceptions e ON e.id = v.exception_id WHERE v.created_at = 200 ORDER BY v.id"
    ).fetchall()
    assert [tuple(r) for r in events] == [
        (
            "reopened",
            "pay_1",
            "nightly",
            "holds again in this run",
            "AUTO_CLEARED",
            "OPEN",
            None,
            200,
        ),
        ("opened", "pay_4", "nightly", "found by the engine", None, "OPEN", None, 200),
        ("opened", "pay_5", "nightly", "found by the engine", None, "OPEN", None, 200),
        (
            "auto_cleared",
            "pay_2",
            "nightly",
            "no longer found by the engine",
            "OPEN",
            "AUTO_CLEARED",
            None,
            200,
        ),
    ]
    entries = [(action, entity) for action, _, entity in audit_actions(conn)][-5:]
    ids = {e: str(exception_id(conn, e)) for e in ("pay_1", "pay_2", "pay_4", "pay_5")}
    assert entries[:4] == [
        ("exception.reopened", ids["pay_1"]),
        ("exception.opened", ids["pay_4"]),
        ("exception.opened", ids["pay_5"]),
        ("exception.auto_cleared", ids["pay_2"]),
    ]
    assert _search_documents(conn) == _documents_as_the_triggers_write_them(conn)


def test_after_a_sync_the_triggers_index_a_persons_note_again(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("pay_1")]))
    exc = exception_id(conn, "pay_1")
    with transaction(conn):
        review_sql.insert_event(
            conn, (exc, "commented", "asha", "call the bank", None, None, "r1", 5)
        )
    assert _search_documents(conn)[exc][1] == " found by the engine call the bank"


def test_a_refresh_copies_changed_facts_and_moves_only_the_run_ids_of_the_rest(
    conn: sqlite3.Connection,
) -> None:
    first = write_run(conn, [Finding("pay_1"), Finding("pay_2"), Finding("pay_3")])
    sync_exceptions(conn, first, now=100)
    conn.execute("UPDATE exceptions SET not_found_run_id = ? WHERE entity_id = 'pay_3'", (first,))
    # pay_1: a material fact moves; pay_2: one that is not material (UTR); pay_3: nothing.
    second = write_run(
        conn,
        [
            Finding("pay_1", exposure_amount=700),
            Finding("pay_2"),
            Finding("pay_3"),
        ],
        status="running",  # completed, its rows are fixed (migration 0113)
    )
    with transaction(conn):
        conn.execute(
            "UPDATE outcomes SET utr = 'utr_9' WHERE run_id = ? AND entity_id = 'pay_2'", (second,)
        )
        conn.execute("UPDATE runs SET status = 'completed' WHERE id = ?", (second,))
    summary = sync_exceptions(conn, second, now=200)
    assert (summary.kept, summary.refreshed) == (3, 1)
    rows = conn.execute(
        "SELECT entity_id, exposure_amount, utr, version, updated_at, last_run_id,"
        " not_found_run_id FROM exceptions ORDER BY entity_id"
    ).fetchall()
    assert [tuple(r) for r in rows] == [
        ("pay_1", 700, None, 2, 200, second, None),
        ("pay_2", 10_000, "utr_9", 1, 100, second, None),
        ("pay_3", 10_000, None, 1, 100, second, None),
    ]
    # The queue search follows the UTR the refresh copied (trigger of 0075).
    pay_2 = exception_id(conn, "pay_2")
    if not is_postgres(conn):
        ids = conn.execute("SELECT ids FROM exception_search WHERE rowid = ?", (pay_2,))
        assert "utr_9" in ids.fetchone()[0]
    again = sync_exceptions(conn, second, now=300)
    assert again.refreshed == 0
    assert conn.execute("SELECT max(updated_at) FROM exceptions").fetchone()[0] == 200


class _Recorder:
    """A connection that records the SQL run through it (and runs it)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.statements: list[tuple[str, object]] = []

    def execute(self, sql: str, params: object = ()) -> object:
        self.statements.append((sql, params))
        return self.conn.execute(sql, params)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> object:
        return getattr(self.conn, name)


def test_the_sync_joins_read_only_the_runs_exception_outcomes(conn: sqlite3.Connection) -> None:
    """SQLite: the statements that join the run's outcomes with the exceptions go through
    the partial index of the run's EXCEPTION outcomes (or, for the reopen, from the closed
    exceptions by primary key), never the run's whole range of the outcomes' primary key.
    PostgreSQL: by hash, no nested loop (`set_based_plans`)."""
    first = write_run(conn, [Finding("pay_1"), Finding("pay_2")], matched=["pay_3", "pay_4"])
    sync_exceptions(conn, first)
    second = write_run(conn, [Finding("pay_1", exposure_amount=700)], matched=["pay_2"])
    recorder = _Recorder(conn)
    spy: sqlite3.Connection = recorder  # type: ignore[assignment]
    with transaction(conn), review_sql.set_based_plans(conn):
        review_sql.reopen_candidates(spy, second)
        review_sql.changed_facts(spy, second)
        review_sql.count_holding(spy, second)
        review_sql.refresh_from_run(spy, second, 1)
        plans = [
            " | ".join(
                str(r[-1] if not is_postgres(conn) else r[0])
                for r in conn.execute(
                    ("EXPLAIN " if is_postgres(conn) else "EXPLAIN QUERY PLAN ") + sql, params
                ).fetchall()
            )
            for sql, params in recorder.statements
        ]
    assert len(plans) == 5  # reopen, changed, count, refresh (changed facts, run ids only)
    for plan in plans:
        if is_postgres(conn):
            assert "Nested Loop" not in plan, plan
        else:
            assert "PRIMARY KEY (run_id=?)" not in plan, plan
            assert "outcomes_status" in plan or "PRIMARY KEY (run_id=? AND" in plan, plan
    row = conn.execute(
        "SELECT exposure_amount, last_run_id FROM exceptions WHERE entity_id = 'pay_1'"
    )
    assert tuple(row.fetchone()) == (700, second)


def test_a_first_sync_does_not_look_for_exceptions_to_clear_or_mark(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into an empty queue every exception is the run's own: the statements that look for
    ones the run no longer has are not run (they read every new exception). Later syncs
    run them and still clear."""
    asked: list[str] = []
    for name in ("auto_clear_candidates", "auto_clear", "not_found_candidates"):
        original = getattr(review_sql, name)

        def spy(*args: object, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            asked.append(_name)
            return _original(*args, **kw)

        monkeypatch.setattr(review_sql, name, spy)
    first = write_run(conn, [Finding("pay_1"), Finding("pay_2")])
    assert sync_exceptions(conn, first).opened == 2
    assert asked == []
    second = write_run(conn, [Finding("pay_1")])
    assert sync_exceptions(conn, second).auto_cleared == 1
    assert asked == ["auto_clear_candidates", "auto_clear", "not_found_candidates"]
    assert statuses(conn) == {
        "pay_1:AMOUNT_MISMATCH": "OPEN",
        "pay_2:AMOUNT_MISMATCH": "AUTO_CLEARED",
    }
    assert verify(conn).ok
