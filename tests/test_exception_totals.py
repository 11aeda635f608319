"""The stored totals of the exception queue (migration 0101, `exception_totals`): kept by
the database's triggers through every write, whoever makes it, they always equal a GROUP BY
over the exceptions; the Overview's figures read from them."""

from __future__ import annotations

import os
import sqlite3

import pytest

from core.db import connect, transaction
from core.db.backend import is_postgres
from core.db.page_reads import (
    begin_totals_deferred,
    end_totals_deferred,
    recompute_exception_totals,
)
from core.db.views import exception_status_counts, exposure_by_class_and_code
from core.review import assign, escalate, reopen, resolve, sync_exceptions
from tests.guard_support import guards_off
from tests.review_support import Finding, add_people, exception_id, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    add_people(db_conn)
    return db_conn


NOON_IST = 1_767_940_200  # 2026-01-09 12:00 IST
DAY = 86_400


def _stored(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return sorted(
        tuple(r)
        for r in conn.execute(
            "SELECT status, exposure_class, reason_code, dated, created_day, n, exposure"
            " FROM exception_totals"
        )
    )


def _grouped(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    """The oracle: the same totals, counted from the exceptions now."""
    return sorted(
        tuple(r)
        for r in conn.execute(
            "SELECT status, exposure_class, reason_code,"
            " CASE WHEN entity_created_at IS NULL THEN 0 ELSE 1 END,"
            " CASE WHEN entity_created_at IS NULL THEN 0"
            " ELSE (entity_created_at + 19800) / 86400 END,"
            " count(*), CAST(sum(exposure_amount) AS BIGINT)"
            " FROM exceptions GROUP BY 1, 2, 3, 4, 5"
        )
    )


def _run(conn: sqlite3.Connection, findings: list[Finding], days: dict[str, int | None]) -> int:
    """A run of `findings`; the entities in `days` were created that many days before noon
    (None: no date), the rest have no date."""
    run_id = write_run(conn, findings, status="running")  # completed: its rows are fixed (0113)
    with transaction(conn):
        for entity, ago in days.items():
            conn.execute(
                "UPDATE outcomes SET entity_created_at = ? WHERE run_id = ? AND entity_id = ?",
                (None if ago is None else NOON_IST - ago * DAY, run_id, entity),
            )
        conn.execute("UPDATE runs SET status = 'completed' WHERE id = ?", (run_id,))
    return run_id


FIRST = [
    Finding("pay_1", exposure_amount=10_000),
    Finding("pay_2", exposure_amount=25_000),
    Finding("pay_3", reason_code="NOT_SETTLED", exposure_class="awaiting_settlement"),
    Finding("pay_4", reason_code="NOT_SETTLED", exposure_class="awaiting_settlement"),
    Finding("pay_5", reason_code="DISPUTE_OPEN", exposure_class="disputed", exposure_amount=7),
    Finding("pay_6", reason_code="ORPHAN", exposure_class="structural", exposure_amount=0),
    Finding("pay_7", exposure_amount=99_999),
]
DAYS = {"pay_1": 0, "pay_2": 3, "pay_3": 3, "pay_4": 40, "pay_5": 95, "pay_7": None}


def test_the_stored_totals_equal_a_group_by_after_syncs_decisions_and_reopenings(
    conn: sqlite3.Connection,
) -> None:
    assert _stored(conn) == _grouped(conn) == []
    sync_exceptions(conn, _run(conn, FIRST, DAYS))
    assert len(_stored(conn)) >= 5
    assert _stored(conn) == _grouped(conn)

    one, two, three = (exception_id(conn, e) for e in ("pay_1", "pay_2", "pay_7"))
    assign(conn, one, actor="lead@example.com", assignee="ravi@example.com", request_id="a")
    resolve(conn, one, actor="ravi@example.com", note="credited", request_id="b")
    escalate(conn, two, actor="lead@example.com", note="needs finance", request_id="c")
    resolve(conn, three, actor="lead@example.com", note="refund seen", request_id="d")
    assert _stored(conn) == _grouped(conn)
    reopen(conn, one, actor="lead@example.com", note="credit never arrived", request_id="e")
    assert _stored(conn) == _grouped(conn)

    # The next run: pay_3 and pay_6 are gone (auto-cleared), pay_2 moved (refreshed, a day
    # older), pay_7's exposure moved after its decision (reopened), pay_8 is new.
    second = [f for f in FIRST if f.entity_id not in ("pay_3", "pay_6", "pay_7")]
    second = [
        Finding("pay_2", exposure_amount=30_000) if f.entity_id == "pay_2" else f for f in second
    ]
    second += [Finding("pay_7", exposure_amount=5), Finding("pay_8", exposure_amount=1)]
    sync_exceptions(conn, _run(conn, second, {**DAYS, "pay_2": 4, "pay_8": 200}))
    assert (
        conn.execute("SELECT count(*) FROM exceptions WHERE status = 'AUTO_CLEARED'").fetchone()[0]
        == 2
    )
    assert _stored(conn) == _grouped(conn)

    # The third run has pay_3 again: the auto-cleared exception reopens.
    sync_exceptions(conn, _run(conn, [*second, FIRST[2]], DAYS))
    assert (
        conn.execute(
            "SELECT status FROM exceptions WHERE id = ?",
            (exception_id(conn, "pay_3", "NOT_SETTLED"),),
        ).fetchone()[0]
        == "OPEN"
    )
    assert _stored(conn) == _grouped(conn)


def test_the_stored_totals_follow_rows_changed_and_removed_behind_the_apps_back(
    conn: sqlite3.Connection,
) -> None:
    sync_exceptions(conn, _run(conn, FIRST, DAYS))
    with transaction(conn):  # a hand-made fix: several rows, every column the totals key on
        conn.execute(
            "UPDATE exceptions SET status = 'RESOLVED' WHERE entity_id IN (?, ?)",
            ("pay_1", "pay_4"),
        )
        conn.execute(
            "UPDATE exceptions SET exposure_class = 'realised_loss',"
            " exposure_amount = exposure_amount + 1, entity_created_at = NULL"
            " WHERE entity_id = 'pay_2'"
        )
    # The reason code too, past the refusal of 0113 (an exception's identity; the owner's).
    with guards_off(conn, "exceptions") as editor, transaction(editor):
        editor.execute("UPDATE exceptions SET reason_code = 'FEE' WHERE entity_id = 'pay_2'")
    with transaction(conn):
        conn.execute("UPDATE exceptions SET entity_created_at = 0 WHERE entity_id = 'pay_3'")
        conn.execute("UPDATE exceptions SET assignee = 'x' WHERE entity_id = 'pay_5'")
    assert _stored(conn) == _grouped(conn)

    # Rows added and then removed by hand, past the refusal of 0040 (dropped by the owner).
    with transaction(conn):
        conn.executemany(
            "INSERT INTO exceptions (entity_type, entity_id, reason_code, reason_codes,"
            " exposure_class, exposure_amount, entity_created_at, status, first_run_id,"
            " last_run_id, opened_at, updated_at)"
            " SELECT 'payment', ?, 'FEE', 'FEE', 'realised_loss', 123, ?, 'OPEN',"
            " max(id), max(id), 0, 0 FROM runs",
            [("pay_hand", NOON_IST - 5 * DAY), ("pay_hand2", None)],
        )
    assert _stored(conn) == _grouped(conn)
    if is_postgres(conn):
        owner = connect(os.environ["DATABASE_OWNER_URL"])
        try:
            owner.execute("DROP TRIGGER exceptions_no_delete ON exceptions")
        finally:
            owner.close()
    else:
        conn.execute("DROP TRIGGER exceptions_no_delete")
    with transaction(conn):
        conn.execute("DELETE FROM exceptions WHERE entity_id = 'pay_hand'")
    assert _stored(conn) == _grouped(conn)
    with transaction(conn):
        conn.execute("DELETE FROM exceptions WHERE entity_id LIKE 'pay_hand%'")
    assert conn.execute("SELECT count(*) FROM exceptions").fetchone()[0] == len(FIRST)
    assert _stored(conn) == _grouped(conn)
    assert not any(row[5] == 0 for row in _stored(conn))  # emptied totals leave


def test_a_bulk_writer_may_defer_its_new_rows_and_add_them_set_based(
    conn: sqlite3.Connection,
) -> None:
    """A sync inside the deferring transaction: its new exceptions (above the mark) are
    left to `end_totals_deferred`, even when changed again before it; the rows below the
    mark are kept by the triggers meanwhile."""
    sync_exceptions(conn, _run(conn, FIRST, DAYS))
    second = [*FIRST[:4], Finding("pay_8", exposure_amount=3), Finding("pay_9")]
    with transaction(conn):
        mark = int(conn.execute("SELECT max(id) FROM exceptions").fetchone()[0])
        begin_totals_deferred(conn, mark)
        sync_exceptions(conn, _run(conn, second, {**DAYS, "pay_8": 12}))  # 2 new, 3 cleared
        conn.execute("UPDATE exceptions SET status = 'ESCALATED' WHERE entity_id = 'pay_9'")
        new = conn.execute("SELECT count(*) FROM exceptions WHERE id > ?", (mark,)).fetchone()
        assert new[0] == 2
        below = _grouped(conn)
        stored = _stored(conn)
        assert sum(int(str(r[5])) for r in stored) == sum(int(str(r[5])) for r in below) - 2
        end_totals_deferred(conn)
        assert _stored(conn) == _grouped(conn)
    conn.execute("UPDATE exceptions SET status = 'OPEN' WHERE entity_id = 'pay_9'")
    assert _stored(conn) == _grouped(conn)  # the triggers keep every row again
    assert conn.execute("SELECT count(*) FROM exception_totals_deferred").fetchone()[0] == 0


def test_a_sync_adds_its_new_exceptions_to_the_totals_set_based(
    conn: sqlite3.Connection,
) -> None:
    """The sync defers the totals itself: with the per-row insert trigger gone, its new
    exceptions still reach the totals, by `end_totals_deferred`, and no flag is left."""
    if is_postgres(conn):
        owner = connect(os.environ["DATABASE_OWNER_URL"])
        try:
            owner.execute("DROP TRIGGER exception_totals_insert ON exceptions")
        finally:
            owner.close()
    else:
        conn.execute("DROP TRIGGER exception_totals_insert")
    sync_exceptions(conn, _run(conn, FIRST, DAYS))
    assert _stored(conn) and _stored(conn) == _grouped(conn)
    assert conn.execute("SELECT count(*) FROM exception_totals_deferred").fetchone()[0] == 0


def test_the_totals_can_be_rebuilt_from_the_exceptions(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, _run(conn, FIRST, DAYS))
    with transaction(conn):
        conn.execute("DELETE FROM exception_totals WHERE status = 'OPEN' AND dated = 1")
        assert _stored(conn) != _grouped(conn)
        recompute_exception_totals(conn)
    assert _stored(conn) == _grouped(conn)


def test_the_overview_figures_read_from_the_totals_equal_those_over_the_exceptions(
    conn: sqlite3.Connection,
) -> None:
    sync_exceptions(conn, _run(conn, FIRST, DAYS))
    lead = "lead@example.com"
    escalate(conn, exception_id(conn, "pay_2"), actor=lead, note="n", request_id="x")
    resolve(conn, exception_id(conn, "pay_4", "NOT_SETTLED"), actor=lead, note="n", request_id="y")
    statuses = {r["status"]: (r["n"], r["exposure"]) for r in exception_status_counts(conn)}
    assert statuses == {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT status, count(*), CAST(sum(exposure_amount) AS BIGINT) FROM exceptions"
            " GROUP BY status"
        )
    }
    assert set(statuses) == {"OPEN", "ESCALATED", "RESOLVED"}
    open_ones = ("OPEN", "ASSIGNED", "INVESTIGATED", "ESCALATED")
    codes = exposure_by_class_and_code(conn)
    assert codes == sorted(
        (
            {"exposure_class": r[0], "reason_code": r[1], "n": r[2], "exposure": r[3]}
            for r in conn.execute(
                "SELECT exposure_class, reason_code, count(*), CAST(sum(exposure_amount)"
                " AS BIGINT) FROM exceptions WHERE status IN (?, ?, ?, ?)"
                " GROUP BY exposure_class, reason_code",
                open_ones,
            )
        ),
        key=lambda r: (-int(r["exposure"]), str(r["reason_code"])),
    )
    assert sum(int(r["n"]) for r in codes) == len(FIRST) - 1
