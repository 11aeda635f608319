"""Roles and four eyes, in core: who may act, and a large write-off needs a second person."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from core import access, demo
from core.audit import verify
from core.db import access as access_sql
from core.db import connect, migrate
from core.errors import InputError, RefusedError
from core.review import (
    approve,
    assign,
    get_exception,
    history,
    list_approvals,
    reject,
    resolve,
    sync_exceptions,
)
from tests.app_builder import build
from tests.review_support import Finding, add_people, exception_id, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


REVIEWER, APPROVER, CFO = "asha@example.com", "approver@example.com", "cfo@example.com"


@pytest.fixture(autouse=True)
def _people(conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(access.FOUR_EYES_ENV, "1000000")  # ₹10,000
    add_people(conn)


def _open(conn: sqlite3.Connection, entity: str = "pay_1", exposure: int = 5_000_000) -> int:
    sync_exceptions(conn, write_run(conn, [Finding(entity, exposure_amount=exposure)]))
    return exception_id(conn, entity)


def _audit(conn: sqlite3.Connection, action: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT actor, payload_json FROM audit_log WHERE action = ? ORDER BY seq", (action,)
    )
    return [(str(a), str(p)) for a, p in rows]


def test_an_unknown_name_cannot_act_and_the_refusal_is_audited(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    for name in ("cfo", "engine", "nobody@example.com"):
        with pytest.raises(RefusedError, match="not a user here"):
            resolve(conn, exc, actor=name, note="x", request_id=f"r-{name}")
    assert get_exception(conn, exc).status == "OPEN"
    assert [a for a, _ in _audit(conn, "access.refused")] == ["cfo", "engine", "nobody@example.com"]


def test_a_viewer_reads_but_cannot_resolve(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    with pytest.raises(RefusedError, match="viewer; resolve needs the reviewer role"):
        resolve(conn, exc, actor="viewer@example.com", note="x", request_id="v1")
    assert get_exception(conn, exc).status == "OPEN"


def test_a_deactivated_person_can_no_longer_act_but_stays_in_history(
    conn: sqlite3.Connection,
) -> None:
    exc = _open(conn)
    assign(conn, exc, actor=REVIEWER, assignee="ravi@example.com", request_id="a1")
    change = access.deactivate(conn, REVIEWER, actor="admin@example.com")
    assert change.changed and not change.active
    with pytest.raises(RefusedError, match="deactivated"):
        resolve(conn, exc, actor=REVIEWER, note="x", request_id="r1")
    assert [e.actor for e in history(conn, exc) if e.action == "assigned"] == [REVIEWER]
    assert access.get_user(conn, REVIEWER) is not None  # never deleted
    assert access.deactivate(conn, REVIEWER, actor="admin@example.com").changed is False


def test_only_an_admin_manages_users_and_every_change_is_audited(conn: sqlite3.Connection) -> None:
    with pytest.raises(RefusedError, match="needs the admin role"):
        access.add_user(conn, "new@example.com", "reviewer", actor=CFO)
    added = access.add_user(conn, " New@Example.com ", "reviewer", actor="admin@example.com")
    assert (added.email, added.role, added.changed) == ("new@example.com", "reviewer", True)
    assert (
        access.add_user(conn, "new@example.com", "reviewer", actor="admin@example.com").changed
        is False
    )
    with pytest.raises(RefusedError, match="change the role with grant"):
        access.add_user(conn, "new@example.com", "approver", actor="admin@example.com")
    access.grant(conn, "new@example.com", "approver", actor="admin@example.com")
    assert access.get_user(conn, "new@example.com").role == "approver"
    actions = [
        a
        for (a,) in conn.execute(
            "SELECT action FROM audit_log WHERE entity_id = 'new@example.com' ORDER BY seq"
        )
    ]
    assert actions == ["access.refused", "user.added", "user.role_changed"]
    with pytest.raises(InputError, match="not an email"):
        access.add_user(conn, "cfo", "admin", actor="admin@example.com")
    assert verify(conn).ok


MARKDOWN_LINK = "[re-authenticate_to_approve](//phish.example/login)@example.com"


@pytest.mark.parametrize(
    "address",
    [MARKDOWN_LINK, "(x)@example.com", "a<b>@example.com", "a@[127.0.0.1]", "ü@example.com"],
)
def test_an_address_with_brackets_parentheses_or_spaces_is_not_an_email(
    conn: sqlite3.Connection, address: str
) -> None:
    with pytest.raises(InputError, match="not an email"):
        access.add_user(conn, address, "reviewer", actor="admin@example.com")
    assert access.get_user(conn, address) is None
    for real in ("o'brien+tag@example.co.in", "first.last@sub.example.com"):
        assert access.normalise_email(real) == real


def test_a_person_stored_with_such_an_address_cannot_act_and_an_admin_deactivates_them(
    conn: sqlite3.Connection,
) -> None:
    exc = _open(conn)
    with conn:  # stored before addresses were checked this closely
        access_sql.insert_user(conn, MARKDOWN_LINK, "reviewer", "admin@example.com", 1)
    with pytest.raises(RefusedError, match="not an address this workbench accepts"):
        resolve(conn, exc, actor=MARKDOWN_LINK, note="x", request_id="r1")
    assert get_exception(conn, exc).status == "OPEN"
    change = access.deactivate(conn, MARKDOWN_LINK, actor="admin@example.com")
    assert change.changed and not change.active


def test_the_first_admins_come_from_configuration_once(conn: sqlite3.Connection) -> None:
    assert access.config_admins("Boss@Example.com, ops@example.com") == [
        "boss@example.com",
        "ops@example.com",
    ]
    assert access.seed_admins(conn, ["boss@example.com"]) == ["boss@example.com"]
    assert access.seed_admins(conn, ["boss@example.com"]) == []
    assert access.get_user(conn, "boss@example.com").role == "admin"


def test_an_assignee_must_be_an_active_reviewer(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    with pytest.raises(InputError, match="not an active user"):
        assign(conn, exc, actor=REVIEWER, assignee="cfo", request_id="a1")
    with pytest.raises(InputError, match="not an active user"):
        assign(conn, exc, actor=REVIEWER, assignee="viewer@example.com", request_id="a2")


def test_a_resolution_carries_its_type(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    done = resolve(
        conn,
        exc,
        actor=REVIEWER,
        note="fixed in Razorpay",
        request_id="r1",
        resolution="corrected_at_source",
    )
    assert (done.to_status, done.resolution) == ("RESOLVED", "corrected_at_source")
    assert '"resolution":"corrected_at_source"' in _audit(conn, "exception.resolved")[0][1]
    other = _open(conn, "pay_2")
    with pytest.raises(InputError, match="needs the amount"):
        resolve(conn, other, actor=REVIEWER, note="x", request_id="r2", resolution="written_off")
    with pytest.raises(InputError, match="only a write-off carries an amount"):
        resolve(conn, other, actor=REVIEWER, note="x", request_id="r3", amount=100)


def test_a_write_off_at_or_below_the_threshold_resolves_at_once(conn: sqlite3.Connection) -> None:
    exc = _open(conn, exposure=1_000_000)
    done = resolve(
        conn,
        exc,
        actor=REVIEWER,
        note="small fee",
        request_id="w1",
        resolution="written_off",
        amount=1_000_000,
    )
    assert (done.to_status, done.approval_id, done.amount) == ("RESOLVED", None, 1_000_000)


def test_a_write_off_typed_below_the_threshold_still_needs_an_approver_when_it_closes_more(
    conn: sqlite3.Connection,
) -> None:
    exc = _open(conn, exposure=4_281_938)  # ₹42,819.38 at risk; the threshold is ₹10,000
    asked = resolve(
        conn,
        exc,
        actor=REVIEWER,
        note="written off",
        request_id="w1",
        resolution="written_off",
        amount=1_000_000,
    )
    assert asked.approval_id is not None and asked.to_status == "OPEN"
    assert get_exception(conn, exc).status == "OPEN"
    ((_, payload),) = _audit(conn, "exception.write_off_requested")
    assert '"four_eyes_amount":4281938' in payload and '"write_off_amount":1000000' in payload
    (pending,) = list_approvals(conn)
    assert (pending.amount, pending.exposure_amount) == (1_000_000, 4_281_938)
    assert not _audit(conn, "exception.resolved")


def test_a_write_off_larger_than_the_exposure_is_refused(conn: sqlite3.Connection) -> None:
    exc = _open(conn, exposure=500_000)
    with pytest.raises(InputError, match=r"more than exception \d+'s exposure of ₹5,000\.00"):
        resolve(
            conn,
            exc,
            actor=REVIEWER,
            note="x",
            request_id="w1",
            resolution="written_off",
            amount=500_001,
        )
    assert get_exception(conn, exc).status == "OPEN"
    assert not _audit(conn, "exception.resolved")
    done = resolve(
        conn,
        exc,
        actor=REVIEWER,
        note="x",
        request_id="w1",
        resolution="written_off",
        amount=500_000,
    )
    assert done.to_status == "RESOLVED"


def test_four_eyes_maker_cannot_approve_an_approver_can(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    asked = resolve(
        conn,
        exc,
        actor=CFO,
        note="unrecoverable",
        request_id="w1",
        resolution="written_off",
        amount=1_000_001,
    )
    assert asked.approval_id is not None and asked.to_status == "OPEN"
    assert get_exception(conn, exc).status == "OPEN"
    with pytest.raises(RefusedError, match="awaiting approval"):
        resolve(conn, exc, actor=REVIEWER, note="explained", request_id="r2")
    with pytest.raises(RefusedError, match="four eyes"):
        approve(conn, asked.approval_id, actor=CFO, request_id="a-self")
    with pytest.raises(RefusedError, match="needs the approver role"):
        approve(conn, asked.approval_id, actor=REVIEWER, request_id="a-rev")
    assert get_exception(conn, exc).status == "OPEN"
    refusals = _audit(conn, "access.refused")
    assert [a for a, _ in refusals] == [CFO, REVIEWER]
    assert "four eyes" in refusals[0][1]

    done = approve(conn, asked.approval_id, actor=APPROVER, request_id="a1", note="agreed")
    again = approve(conn, asked.approval_id, actor=APPROVER, request_id="a1", note="agreed")
    assert done.to_status == "RESOLVED" and again.replayed
    assert get_exception(conn, exc).status == "RESOLVED"
    ((actor, payload),) = _audit(conn, "exception.resolved")
    assert actor == APPROVER
    assert f'"maker":"{CFO}"' in payload and '"write_off_amount":1000001' in payload
    assert [e.action for e in history(conn, exc)][-2:] == ["write_off_requested", "resolved"]
    with pytest.raises(RefusedError, match="already approved"):
        approve(conn, asked.approval_id, actor="admin@example.com", request_id="a2")
    assert verify(conn).ok


def test_a_rejected_write_off_leaves_the_exception_open(conn: sqlite3.Connection) -> None:
    exc = _open(conn)
    asked = resolve(
        conn,
        exc,
        actor=REVIEWER,
        note="write it off",
        request_id="w1",
        resolution="written_off",
        amount=2_000_000,
    )
    with pytest.raises(InputError):
        reject(conn, asked.approval_id, actor=APPROVER, note=" ", request_id="x1")
    rejected = reject(
        conn, asked.approval_id, actor=APPROVER, note="chase the bank", request_id="x2"
    )
    assert rejected.to_status == "OPEN"
    assert len(_audit(conn, "exception.write_off_rejected")) == 1
    done = resolve(conn, exc, actor=REVIEWER, note="bank paid", request_id="r3")
    assert done.to_status == "RESOLVED"


def test_the_threshold_is_configurable(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(access.FOUR_EYES_ENV, "100")
    exc = _open(conn)
    asked = resolve(
        conn, exc, actor=REVIEWER, note="x", request_id="w1", resolution="written_off", amount=101
    )
    assert asked.approval_id is not None
    assert access.four_eyes_threshold("") == access.DEFAULT_FOUR_EYES_PAISE


def _benchmark(folder: Path) -> Path:
    """A demo's shared database: the synthetic benchmark and nothing people did (the demo
    copies nothing else: core.demo.template_problems), unlike this module's `db_path`."""
    path = folder / "benchmark.sqlite"
    conn = connect(path)
    migrate(conn)
    build(conn, payments=200, seed=3)
    conn.close()
    return path


def test_demo_sandboxes_are_made_and_swept_in_the_named_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sandboxes" / "not-yet-made"
    monkeypatch.setenv(demo.DIR_ENV, str(root))
    sandbox = demo.create_sandbox(_benchmark(tmp_path))
    assert sandbox.parent.parent == root and oct(sandbox.parent.stat().st_mode)[-3:] == "700"
    demo.sweep(now=time.time() + demo.IDLE_SECONDS - 60)  # used within the idle time: kept
    assert sandbox.exists()
    demo.sweep(now=time.time() + demo.IDLE_SECONDS + 60)  # idle longer: removed
    assert not sandbox.parent.exists() and root.is_dir()


def test_a_sandbox_whose_copy_fails_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sandboxes"
    monkeypatch.setenv(demo.DIR_ENV, str(root))
    with pytest.raises(sqlite3.OperationalError):
        demo.create_sandbox(tmp_path / "no-such-database.sqlite")  # opened read-only: refused
    assert list(root.glob(f"{demo.PREFIX}*")) == []


def test_a_demo_sandbox_is_a_private_copy_with_personas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(demo.DIR_ENV, str(tmp_path / "sandboxes"))
    db_path = _benchmark(tmp_path)
    conn = connect(db_path)
    exc = int(conn.execute("SELECT min(id) FROM exceptions WHERE status = 'OPEN'").fetchone()[0])
    conn.close()
    one, two = demo.create_sandbox(db_path), demo.create_sandbox(db_path)
    try:
        assert one.parent != two.parent and oct(one.parent.stat().st_mode)[-3:] == "700"
        first = connect(one)
        resolve(first, exc, actor=demo.PERSONAS["reviewer"], note="demo", request_id="d1")
        first.close()
        for path, status in ((one, "RESOLVED"), (two, "OPEN"), (db_path, "OPEN")):
            c = connect(path)
            assert get_exception(c, exc).status == status, path
            c.close()
        demo.reset_sandbox(db_path, one)
        c = connect(one)
        assert get_exception(c, exc).status == "OPEN"
        assert access.get_user(c, demo.PERSONAS["approver"]).role == "approver"
        c.close()
    finally:
        demo.remove_sandbox(one)
        demo.remove_sandbox(two)
    assert not one.parent.exists()


def test_verify_names_a_role_changed_without_an_audit_entry(conn: sqlite3.Connection) -> None:
    assert verify(conn).ok
    with conn:
        conn.execute("UPDATE users SET role = 'admin' WHERE email = ?", (REVIEWER,))
    result = verify(conn)
    assert not result.ok and result.broken_user == REVIEWER
    assert result.problem == (
        f"user {REVIEWER}: role is 'admin' but the trail gives 'reviewer' "
        "(changed without an audit entry)"
    )


def test_verify_names_a_person_deactivated_or_added_without_an_audit_entry(
    conn: sqlite3.Connection,
) -> None:
    with conn:
        conn.execute("UPDATE users SET active = 0 WHERE email = ?", (REVIEWER,))
    assert "active is False but the trail gives True" in verify(conn).problem
    with conn:
        conn.execute("UPDATE users SET active = 1 WHERE email = ?", (REVIEWER,))
    assert verify(conn).ok
    with conn:
        access_sql.insert_user(conn, "quiet@example.com", "admin", "nobody", 1)
    result = verify(conn)
    assert result.broken_user == "quiet@example.com"
    assert "has no user.added entry in the trail" in result.problem


def test_verify_names_an_approval_changed_without_an_audit_entry(
    conn: sqlite3.Connection,
) -> None:
    exc = _open(conn)
    asked = resolve(
        conn,
        exc,
        actor=REVIEWER,
        note="unrecoverable",
        request_id="w1",
        resolution="written_off",
        amount=2_000_000,
    )
    assert verify(conn).ok
    with conn:
        conn.execute(
            "UPDATE approvals SET status = 'approved', checker = ? WHERE id = ?",
            (APPROVER, asked.approval_id),
        )
    result = verify(conn)
    assert not result.ok and result.broken_approval == asked.approval_id
    assert result.problem == (
        f"approval {asked.approval_id}: status is 'approved' but the trail gives 'pending' "
        "(changed without an audit entry)"
    )
