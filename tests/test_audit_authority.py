"""`audit verify` replays who may decide, not only what was decided: each decision's actor
must be, at that point of the trail, an active user with the role the decision needs (or
the command line's operator, or the local single user), the engine's own entries are the
engine's alone, and a write-off above the four-eyes limit carries an approval by another
approver. An independent attacker (round 3, F1) appended a consistent, hash-chained entry
and an UPDATE of `exceptions`, writing off ₹66 lakh "by" a non-user, and verify passed."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from core import access
from core.audit import append, verify
from core.db import transaction
from core.review import approve, get_exception, resolve, sync_exceptions
from tests.review_support import Finding, add_people, exception_id, write_run

REVIEWER, APPROVER, CFO = "asha@example.com", "approver@example.com", "cfo@example.com"
EXPOSURE = 662_067_668  # ₹66,20,676.68


@pytest.fixture
def conn(db_conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> sqlite3.Connection:
    """SQLite and PostgreSQL (the app role, which may INSERT into the trail)."""
    monkeypatch.setenv(access.FOUR_EYES_ENV, "1000000")  # ₹10,000
    add_people(db_conn)
    return db_conn


def _open(conn: sqlite3.Connection, *entities: str) -> int:
    """The first of the exceptions opened on `entities` (default pay_1), in one run."""
    names = entities or ("pay_1",)
    sync_exceptions(conn, write_run(conn, [Finding(e, exposure_amount=EXPOSURE) for e in names]))
    return exception_id(conn, names[0])


def _forge(
    conn: sqlite3.Connection,
    exc_id: int,
    actor: str,
    action: str = "exception.resolved",
    **extra: Any,
) -> int:
    """What the attacker did with plain write access: one chained entry and an UPDATE of
    `exceptions` consistent with it (no approval, no audited code path)."""
    row = conn.execute(
        "SELECT status, version, assignee, exposure_amount, exposure_class, reason_code"
        " FROM exceptions WHERE id = ?",
        (exc_id,),
    ).fetchone()
    status, version = ("RESOLVED", row[1] + 1)
    payload: dict[str, Any] = {
        "request_id": f"forged-{exc_id}-{actor}",
        "from_status": row[0],
        "to_status": status,
        "note": "approved by CFO",
        "assignee": row[2],
        "version": version,
        "exposure_amount": row[3],
        "exposure_class": row[4],
        "reason_code": row[5],
        "resolution": "written_off",
        "write_off_amount": row[3],
        **extra,
    }
    with transaction(conn):
        seq = append(
            conn,
            actor=actor,
            action=action,
            entity_type="exception",
            entity_id=str(exc_id),
            payload=payload,
        )
        conn.execute(
            "UPDATE exceptions SET status = ?, version = ? WHERE id = ?", (status, version, exc_id)
        )
    return seq


def test_verify_names_a_write_off_forged_in_the_name_of_someone_who_is_not_a_user(
    conn: sqlite3.Connection,
) -> None:
    exc = _open(conn)
    assert verify(conn).ok
    seq = _forge(conn, exc, "cfo@corp.example")
    assert get_exception(conn, exc).status == "RESOLVED"
    result = verify(conn)
    assert not result.ok
    assert f"row {seq}" in result.problem and "cfo@corp.example" in result.problem
    assert "not a user" in result.problem
    assert any(v.startswith(f"row {seq}:") for v in result.violations)


def test_verify_names_a_write_off_above_the_four_eyes_limit_made_without_an_approval(
    conn: sqlite3.Connection,
) -> None:
    exc = _open(conn)
    seq = _forge(conn, exc, APPROVER)  # a real approver, but alone
    result = verify(conn)
    assert not result.ok
    assert f"row {seq}" in result.problem and "four eyes" in result.problem
    assert "approval" in result.problem


def test_verify_names_an_approval_decided_by_its_own_maker(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    asked = resolve(
        conn, exc, actor=CFO, note="lost", request_id="w1", resolution="written_off", amount=5
    )
    assert asked.approval_id is not None and verify(conn).ok
    seq = _forge(conn, exc, CFO, approval_id=asked.approval_id, maker=CFO, checker=CFO)
    conn.execute(
        "UPDATE approvals SET status = 'approved', checker = ? WHERE id = ?",
        (CFO, asked.approval_id),
    )
    conn.commit()
    result = verify(conn)
    assert not result.ok
    assert f"row {seq}" in result.problem and "own" in result.problem


def test_verify_names_a_decision_by_a_reviewer_where_an_approver_is_needed_and_by_the_engine(
    conn: sqlite3.Connection,
) -> None:
    first = _open(conn, "pay_1", "pay_2")
    second = exception_id(conn, "pay_2")
    asked = resolve(
        conn, first, actor=CFO, note="lost", request_id="w1", resolution="written_off", amount=5
    )
    approval = asked.approval_id
    seq = _forge(conn, first, REVIEWER, approval_id=approval, maker=CFO, checker=REVIEWER)
    conn.execute(
        "UPDATE approvals SET status = 'approved', checker = ? WHERE id = ?", (REVIEWER, approval)
    )
    conn.commit()
    engine_seq = _forge(conn, second, "engine", resolution="explained", write_off_amount=None)
    result = verify(conn)
    assert not result.ok
    said = "\n".join(result.violations)
    assert f"row {seq}:" in said and "approver" in said
    assert f"row {engine_seq}:" in said and "engine" in said


def test_verify_names_a_decision_by_a_person_deactivated_before_it(
    conn: sqlite3.Connection,
) -> None:
    exc = _open(conn)
    access.deactivate(conn, REVIEWER, actor="admin@example.com")
    seq = _forge(conn, exc, REVIEWER, resolution="explained", write_off_amount=None)
    result = verify(conn)
    assert not result.ok
    assert f"row {seq}" in result.problem and "deactivated" in result.problem


def test_verify_names_an_engine_entry_made_by_a_person(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    with transaction(conn):
        seq = append(
            conn,
            actor=REVIEWER,
            action="exception.auto_cleared",
            entity_type="exception",
            entity_id=str(exc),
            payload={"run_id": 1, "exposure_amount": EXPOSURE, "to_status": "AUTO_CLEARED"},
        )
        conn.execute("UPDATE exceptions SET status = 'AUTO_CLEARED', version = version + 1")
    result = verify(conn)
    assert not result.ok
    assert f"row {seq}" in result.problem and "engine" in result.problem


def test_the_audited_paths_pass_the_authority_replay(conn: sqlite3.Connection) -> None:
    """Four eyes, a write-off at the limit, a role change and the operator's own acts."""
    exc = _open(conn, "pay_1", "pay_2")
    small = exception_id(conn, "pay_2")
    asked = resolve(
        conn, exc, actor=CFO, note="lost", request_id="w1", resolution="written_off", amount=5
    )
    assert asked.approval_id is not None
    approve(conn, asked.approval_id, actor=APPROVER, request_id="a1", note="agreed")
    access.grant(conn, REVIEWER, "viewer", actor="admin@example.com")
    access.grant(conn, REVIEWER, "reviewer", actor="admin@example.com")
    operator = access.os_operator()
    resolve(conn, small, actor=operator, note="explained", request_id="r1")
    result = verify(conn)
    assert result.ok, result.problem
    assert result.violations == ()


def test_a_forgery_consistent_with_every_rule_in_a_real_reviewers_name_passes_without_anchors(
    conn: sqlite3.Connection,
) -> None:
    """What verify cannot prove (docs/review.md): a below-limit decision forged in the name
    of a real, active reviewer is indistinguishable from theirs; only an anchor made before
    it, kept where the writer cannot reach, shows that the chain was extended."""
    exc = _open(conn)
    _forge(conn, exc, REVIEWER, resolution="explained", write_off_amount=None)
    assert verify(conn).ok
