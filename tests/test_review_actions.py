from __future__ import annotations

import os
import sqlite3

import pytest

from core.audit import verify
from core.db import connect
from core.db.backend import is_postgres
from core.errors import InputError, NotFoundError, RefusedError
from core.review import (
    act,
    assign,
    bulk_assign,
    bulk_escalate,
    comment,
    escalate,
    get_exception,
    history,
    mark_investigated,
    reopen,
    resolve,
    sync_exceptions,
)
from tests.review_support import Finding, add_people, exception_id, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


FRIDAY_NOON_IST = 1_767_940_200


@pytest.fixture(autouse=True)
def _people(conn: sqlite3.Connection) -> None:
    add_people(conn)


def _one_open(conn: sqlite3.Connection, entity: str = "pay_1", exposure: int = 10_000) -> int:
    sync_exceptions(conn, write_run(conn, [Finding(entity, exposure_amount=exposure)]))
    return exception_id(conn, entity)


def _counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    return (
        conn.execute(
            "SELECT COUNT(*) FROM exception_events WHERE request_id IS NOT NULL"
        ).fetchone()[0],
        conn.execute(
            "SELECT COUNT(*) FROM audit_log WHERE actor NOT IN ('engine', 'test-setup')"
        ).fetchone()[0],
        conn.execute("SELECT COUNT(*) FROM action_requests").fetchone()[0],
    )


def _set_status(conn: sqlite3.Connection, exc: int, status: str) -> None:
    conn.execute("UPDATE exceptions SET status = ? WHERE id = ?", (status, exc))


def test_three_identical_resolves_make_one_decision_and_one_audit_entry(
    conn: sqlite3.Connection,
) -> None:
    exc = _one_open(conn)
    results = [
        resolve(
            conn, exc, actor="asha@example.com", note="fee refunded by Razorpay", request_id="req-1"
        )
        for _ in range(3)
    ]
    assert [r.replayed for r in results] == [False, True, True]
    assert {(r.to_status, r.version, r.audit_seq, r.event_id) for r in results} == {
        ("RESOLVED", 2, results[0].audit_seq, results[0].event_id)
    }
    assert _counts(conn) == (1, 1, 1)
    assert get_exception(conn, exc).status == "RESOLVED"
    assert verify(conn).ok


def test_the_same_request_id_with_another_payload_is_refused(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    resolve(conn, exc, actor="asha@example.com", note="fee refunded", request_id="req-1")
    with pytest.raises(RefusedError, match="different action or payload"):
        resolve(conn, exc, actor="asha@example.com", note="a different note", request_id="req-1")
    with pytest.raises(RefusedError, match="different action or payload"):
        escalate(conn, exc, actor="asha@example.com", note="fee refunded", request_id="req-1")
    assert _counts(conn) == (1, 1, 1)


def test_a_stale_version_is_refused_with_a_clear_message(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    assign(
        conn,
        exc,
        actor="lead@example.com",
        assignee="ravi@example.com",
        request_id="a1",
        expected_version=1,
    )
    with pytest.raises(RefusedError) as refused:
        resolve(
            conn, exc, actor="asha@example.com", note="done", request_id="r1", expected_version=1
        )
    message = str(refused.value)
    assert "version 2" in message and "version 1" in message and "Reload" in message
    assert "assigned by lead" in message
    assert get_exception(conn, exc).status == "ASSIGNED"


def test_two_reviewers_on_one_version_cannot_both_resolve(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    seen = get_exception(conn, exc).version
    resolve(
        conn,
        exc,
        actor="asha@example.com",
        note="matched by hand",
        request_id="asha-1",
        expected_version=seen,
    )
    with pytest.raises(RefusedError, match="changed since you loaded it"):
        resolve(
            conn,
            exc,
            actor="ravi@example.com",
            note="write off",
            request_id="ravi-1",
            expected_version=seen,
        )
    assert [e.actor for e in history(conn, exc) if e.action == "resolved"] == ["asha@example.com"]


def test_the_full_lifecycle_is_recorded_in_history_and_audit(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    assert (
        assign(
            conn, exc, actor="lead@example.com", assignee="ravi@example.com", request_id="1"
        ).to_status
        == "ASSIGNED"
    )
    inv = mark_investigated(
        conn, exc, actor="ravi@example.com", note="bank short by fee", request_id="2"
    )
    assert inv.to_status == "INVESTIGATED"
    comment(conn, exc, actor="ravi@example.com", note="asked Razorpay support", request_id="3")
    done = resolve(
        conn, exc, actor="ravi@example.com", note="fee credited next cycle", request_id="4"
    )
    assert (done.from_status, done.to_status, done.version) == ("INVESTIGATED", "RESOLVED", 4)
    back = reopen(conn, exc, actor="lead@example.com", note="credit never arrived", request_id="5")
    assert (back.to_status, back.assignee) == ("OPEN", None)
    esc = escalate(
        conn,
        exc,
        actor="lead@example.com",
        note="needs finance",
        request_id="6",
        assignee="cfo@example.com",
    )
    assert (esc.to_status, esc.assignee) == ("ESCALATED", "cfo@example.com")
    steps = [(e.action, e.from_status, e.to_status) for e in history(conn, exc)]
    assert steps == [
        ("opened", None, "OPEN"),
        ("assigned", "OPEN", "ASSIGNED"),
        ("investigated", "ASSIGNED", "INVESTIGATED"),
        ("commented", "INVESTIGATED", "INVESTIGATED"),
        ("resolved", "INVESTIGATED", "RESOLVED"),
        ("reopened", "RESOLVED", "OPEN"),
        ("escalated", "OPEN", "ESCALATED"),
    ]
    actions = [
        r[0]
        for r in conn.execute(
            "SELECT action FROM audit_log WHERE entity_type = 'exception' AND entity_id = ?"
            " ORDER BY seq",
            (str(exc),),
        )
    ]
    assert actions == [f"exception.{a}" for a, _, _ in steps]
    assert verify(conn).ok


# Which (action, from status) pairs the rules allow; every other pair is refused.
LEGAL = {
    ("assign", "OPEN"),
    ("assign", "ASSIGNED"),
    ("assign", "INVESTIGATED"),
    ("assign", "ESCALATED"),
    ("investigate", "ASSIGNED"),
    ("investigate", "ESCALATED"),
    ("resolve", "OPEN"),
    ("resolve", "ASSIGNED"),
    ("resolve", "INVESTIGATED"),
    ("resolve", "ESCALATED"),
    ("escalate", "OPEN"),
    ("escalate", "ASSIGNED"),
    ("escalate", "INVESTIGATED"),
    ("reopen", "RESOLVED"),
    ("reopen", "ESCALATED"),
    ("reopen", "AUTO_CLEARED"),
}
EXPECTED_TARGET = {
    "investigate": "INVESTIGATED",
    "resolve": "RESOLVED",
    "escalate": "ESCALATED",
    "reopen": "OPEN",
}
ALL_STATUSES = ("OPEN", "ASSIGNED", "INVESTIGATED", "RESOLVED", "ESCALATED", "AUTO_CLEARED")


@pytest.mark.parametrize("status", ALL_STATUSES)
@pytest.mark.parametrize("action", ["assign", "investigate", "resolve", "escalate", "reopen"])
def test_only_legal_moves_are_allowed(conn: sqlite3.Connection, action: str, status: str) -> None:
    exc = _one_open(conn)
    _set_status(conn, exc, status)
    kwargs = {"assignee": "ravi@example.com"} if action == "assign" else {"note": "why"}
    if (action, status) in LEGAL:
        result = act(conn, action, exc, actor="asha@example.com", request_id="r", **kwargs)
        expected = EXPECTED_TARGET.get(action, "ASSIGNED" if status == "OPEN" else status)
        assert result.to_status == expected == get_exception(conn, exc).status
    else:
        with pytest.raises(RefusedError, match=f"cannot {action}"):
            act(conn, action, exc, actor="asha@example.com", request_id="r", **kwargs)
        assert get_exception(conn, exc).status == status
        assert _counts(conn) == (0, 0, 0)


@pytest.mark.parametrize("action", ["resolve", "escalate", "reopen", "comment"])
def test_resolve_escalate_reopen_and_comment_need_a_note(
    conn: sqlite3.Connection, action: str
) -> None:
    exc = _one_open(conn)
    with pytest.raises(InputError, match="note"):
        act(conn, action, exc, actor="asha@example.com", note="   ", request_id="r")
    assert _counts(conn) == (0, 0, 0)


def test_an_action_needs_an_actor_a_request_id_and_assign_an_assignee(
    conn: sqlite3.Connection,
) -> None:
    exc = _one_open(conn)
    with pytest.raises(InputError, match="actor"):
        resolve(conn, exc, actor="", note="x", request_id="r")
    with pytest.raises(InputError, match="request_id"):
        resolve(conn, exc, actor="asha@example.com", note="x", request_id=" ")
    with pytest.raises(InputError, match="assignee"):
        assign(conn, exc, actor="asha@example.com", assignee="", request_id="r")
    with pytest.raises(NotFoundError):
        resolve(conn, 999, actor="asha@example.com", note="x", request_id="r")
    assert _counts(conn) == (0, 0, 0)


def test_a_comment_keeps_status_and_version(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    result = comment(
        conn, exc, actor="asha@example.com", note="looked at the bank PDF", request_id="c1"
    )
    record = get_exception(conn, exc)
    assert (result.to_status, result.version) == ("OPEN", 1)
    assert (record.status, record.version) == ("OPEN", 1)
    assert history(conn, exc)[-1].note == "looked at the bank PDF"


def test_reopen_gives_a_new_due_date_from_exposure(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn, exposure=20_000_000)  # over a lakh: one working day
    resolve(conn, exc, actor="asha@example.com", note="done", request_id="r1")
    act(
        conn,
        "reopen",
        exc,
        actor="asha@example.com",
        note="not done",
        request_id="r2",
        now=FRIDAY_NOON_IST,
    )
    assert get_exception(conn, exc).due_date == "2026-01-12"


def test_resolve_sets_closed_at_and_reopen_clears_it(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    act(
        conn,
        "resolve",
        exc,
        actor="asha@example.com",
        note="ok",
        request_id="r1",
        now=1_800_000_000,
    )
    assert get_exception(conn, exc).closed_at == 1_800_000_000
    reopen(conn, exc, actor="asha@example.com", note="again", request_id="r2")
    assert get_exception(conn, exc).closed_at is None


def test_a_refused_action_writes_nothing_and_its_request_id_stays_free(
    conn: sqlite3.Connection,
) -> None:
    exc = _one_open(conn)
    with pytest.raises(RefusedError):
        mark_investigated(
            conn, exc, actor="asha@example.com", request_id="r1"
        )  # OPEN: assign first
    assert _counts(conn) == (0, 0, 0)
    assign(conn, exc, actor="asha@example.com", assignee="asha@example.com", request_id="r0")
    assert (
        mark_investigated(conn, exc, actor="asha@example.com", request_id="r1").to_status
        == "INVESTIGATED"
    )


def test_bulk_assign_applies_to_the_legal_ones_and_replays(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding(f"pay_{i}") for i in range(4)]))
    ids = [exception_id(conn, f"pay_{i}") for i in range(4)]
    resolve(conn, ids[0], actor="asha@example.com", note="done", request_id="r0")
    result = bulk_assign(
        conn,
        [*ids, 999],
        actor="lead@example.com",
        assignee="ravi@example.com",
        request_id="bulk-1",
        expected_versions={ids[3]: 7},
    )
    assert sorted(r.exception_id for r in result.applied) == ids[1:3]
    reasons = dict(result.skipped)
    assert set(reasons) == {ids[0], ids[3], 999}
    assert "RESOLVED" in reasons[ids[0]] and "version" in reasons[ids[3]]
    assert "does not exist" in reasons[999]
    again = bulk_assign(
        conn,
        [999, *ids],
        actor="lead@example.com",
        assignee="ravi@example.com",
        request_id="bulk-1",
        expected_versions={ids[3]: 7},
    )
    assert again.replayed and again.applied == tuple(
        a.__class__(**{**a.__dict__, "replayed": True}) for a in result.applied
    )
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM exception_events WHERE request_id = 'bulk-1'"
        ).fetchone()[0]
        == 2
    )
    with pytest.raises(RefusedError):
        bulk_assign(
            conn,
            ids,
            actor="lead@example.com",
            assignee="someone.else@example.com",
            request_id="bulk-1",
        )
    assert verify(conn).ok


def test_bulk_escalate_needs_a_note_and_escalates_each(conn: sqlite3.Connection) -> None:
    sync_exceptions(conn, write_run(conn, [Finding("a"), Finding("b")]))
    ids = [exception_id(conn, "a"), exception_id(conn, "b")]
    with pytest.raises(InputError, match="note"):
        bulk_escalate(conn, ids, actor="lead@example.com", note="", request_id="e1")
    result = bulk_escalate(conn, ids, actor="lead@example.com", note="month end", request_id="e1")
    assert [r.to_status for r in result.applied] == ["ESCALATED", "ESCALATED"]
    assert {get_exception(conn, i).status for i in ids} == {"ESCALATED"}


def test_a_human_decision_survives_a_rerun_of_the_engine(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    assign(conn, exc, actor="lead@example.com", assignee="ravi@example.com", request_id="a")
    resolve(conn, exc, actor="ravi@example.com", note="accepted", request_id="b")
    sync_exceptions(conn, write_run(conn, [Finding("pay_1")]))
    record = get_exception(conn, exc)
    assert (record.status, record.assignee) == ("RESOLVED", "ravi@example.com")
    assert [e.action for e in history(conn, exc)] == ["opened", "assigned", "resolved"]


def test_reloading_data_never_erases_the_audit_trail(conn: sqlite3.Connection) -> None:
    exc = _one_open(conn)
    resolve(conn, exc, actor="ravi@example.com", note="accepted", request_id="b")
    before = conn.execute("SELECT seq, hash FROM audit_log ORDER BY seq").fetchall()
    sync_exceptions(conn, write_run(conn, []))  # a reloaded benchmark without the finding
    after = conn.execute("SELECT seq, hash FROM audit_log ORDER BY seq").fetchall()
    assert [tuple(r) for r in after[: len(before)]] == [tuple(r) for r in before]
    with pytest.raises(sqlite3.IntegrityError, match="never deleted"):
        conn.execute("DELETE FROM exceptions")
    # SQLite: the trigger; PostgreSQL: the app role has no DELETE on the history at all...
    with pytest.raises(sqlite3.DatabaseError, match=r"append-only|permission denied"):
        conn.execute("DELETE FROM exception_events")
    if is_postgres(conn):  # ...and the same trigger stops the owner role
        owner = connect(os.environ["DATABASE_OWNER_URL"])
        try:
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                owner.execute("DELETE FROM exception_events")
        finally:
            owner.close()
    assert verify(conn).ok
