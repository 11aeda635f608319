"""SQL of identity and roles (users) and of four-eyes approvals (migration 0045)."""

from __future__ import annotations

import sqlite3

USER_COLUMNS = ("email", "role", "active", "added_by", "added_at", "updated_at")
APPROVAL_COLUMNS = (
    "id",
    "exception_id",
    "resolution",
    "amount",
    "note",
    "maker",
    "version",
    "status",
    "checker",
    "checker_note",
    "request_id",
    "created_at",
    "decided_at",
)
_USERS = ", ".join(USER_COLUMNS)
# An approval with its exception's exposure now (what the write-off closes; the approve
# is refused once the exception's version moved, so this is the exposure it was asked on).
_APPROVALS = (
    ", ".join(f"a.{c}" for c in APPROVAL_COLUMNS)
    + ", e.exposure_amount AS exposure_amount"
    + " FROM approvals a LEFT JOIN exceptions e ON e.id = a.exception_id"
)

# -- users --------------------------------------------------------------------------------


def get_user(conn: sqlite3.Connection, email: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"SELECT {_USERS} FROM users WHERE email = ?", (email,)
    ).fetchone()
    return row


def list_users(conn: sqlite3.Connection, *, active_only: bool = False) -> list[sqlite3.Row]:
    where = " WHERE active = 1" if active_only else ""
    return conn.execute(f"SELECT {_USERS} FROM users{where} ORDER BY email").fetchall()


def insert_user(conn: sqlite3.Connection, email: str, role: str, added_by: str, now: int) -> None:
    conn.execute(
        "INSERT INTO users (email, role, active, added_by, added_at, updated_at)"
        " VALUES (?, ?, 1, ?, ?, ?)",
        (email, role, added_by, now, now),
    )


def update_user(conn: sqlite3.Connection, email: str, *, role: str, active: bool, now: int) -> None:
    conn.execute(
        "UPDATE users SET role = ?, active = ?, updated_at = ? WHERE email = ?",
        (role, 1 if active else 0, now, email),
    )


def count_active_admins(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COUNT(*) FROM users WHERE active = 1 AND role = 'admin'").fetchone()
    return int(row[0])


# -- approvals ----------------------------------------------------------------------------


def insert_approval(
    conn: sqlite3.Connection,
    *,
    exception_id: int,
    resolution: str,
    amount: int,
    note: str,
    maker: str,
    version: int,
    request_id: str,
    now: int,
) -> int:
    cursor = conn.execute(
        "INSERT INTO approvals (exception_id, resolution, amount, note, maker, version,"
        " request_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (exception_id, resolution, amount, note, maker, version, request_id, now),
    )
    return int(cursor.fetchall()[0][0])


def get_approval(conn: sqlite3.Connection, approval_id: int) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"SELECT {_APPROVALS} WHERE a.id = ?", (approval_id,)
    ).fetchone()
    return row


def pending_approval_for(conn: sqlite3.Connection, exception_id: int) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        f"SELECT {_APPROVALS} WHERE a.exception_id = ? AND a.status = 'pending'",
        (exception_id,),
    ).fetchone()
    return row


def list_approvals(
    conn: sqlite3.Connection, *, status: str | None = "pending", limit: int = 200
) -> list[sqlite3.Row]:
    if status is None:
        return conn.execute(f"SELECT {_APPROVALS} ORDER BY a.id DESC LIMIT ?", (limit,)).fetchall()
    return conn.execute(
        f"SELECT {_APPROVALS} WHERE a.status = ? ORDER BY a.id LIMIT ?",
        (status, limit),
    ).fetchall()


def decide_approval(
    conn: sqlite3.Connection,
    approval_id: int,
    *,
    status: str,
    checker: str,
    checker_note: str | None,
    now: int,
) -> bool:
    """Mark a pending approval approved or rejected; whether it was still pending."""
    cursor = conn.execute(
        "UPDATE approvals SET status = ?, checker = ?, checker_note = ?, decided_at = ?"
        " WHERE id = ? AND status = 'pending'",
        (status, checker, checker_note, now, approval_id),
    )
    return cursor.rowcount == 1
