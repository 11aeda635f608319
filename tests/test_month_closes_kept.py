"""A closed month is kept as closed (migration 0116, docs/books.md section 4): the database
refuses to update or delete a close's row in month_closes and what it kept in
month_close_books, on SQLite for anyone with the file and on PostgreSQL for the owner role
too (TRUNCATE as well); `audit verify` names a guard that was dropped."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

import pytest

from core.__main__ import main
from core.audit import verify
from core.db import connect, transaction
from core.db.books import insert_close_books, insert_month_close
from tests.conftest import db_conn

conn = db_conn
KEPT = "a closed month is kept as closed"


def _close(conn: sqlite3.Connection, month: str, closing: int, snapshot_json: str) -> None:
    """`month` closed (its row and what it kept), as core.books.close stores one."""
    with transaction(conn):
        insert_month_close(
            conn,
            month=month,
            closed_at=1_780_000_000,
            closed_by="cfo@example.com",
            run_id=None,
            closing=closing,
            residual=0,
            snapshot_json=snapshot_json,
            request_id=f"close-{month}",
            through_import_id=1,
        )
        insert_close_books(conn, month, daily_json="[]", journal=b"x", vouchers=30)


@pytest.fixture
def closed(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """May 2026 closed, with its kept balance by day and journal."""
    _close(conn, "2026-05", 15_587_995, '{"captured": 31780789}')
    yield conn


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE month_closes SET closing = closing + 1",
        "UPDATE month_closes SET snapshot_json = '{\"captured\": 31780790}'",
        "DELETE FROM month_closes",
        "UPDATE month_close_books SET vouchers = 29",
        "DELETE FROM month_close_books",
    ],
)
def test_the_database_refuses_to_change_or_remove_a_closed_months_kept_rows(
    closed: sqlite3.Connection, sql: str
) -> None:
    # PostgreSQL's app role holds no UPDATE or DELETE on them at all (the owner meets the
    # triggers: test_postgresql_refuses_the_owner_too_and_truncate)
    refused = pytest.raises(sqlite3.DatabaseError, match=f"{KEPT}|permission denied")
    with refused, transaction(closed):
        closed.execute(sql)
    row = closed.execute(
        "SELECT c.closing, c.snapshot_json, b.vouchers FROM month_closes c"
        " JOIN month_close_books b ON b.month = c.month"
    ).fetchall()
    assert [tuple(r) for r in row] == [(15_587_995, '{"captured": 31780789}', 30)]


def test_a_second_month_is_still_closed_beside_the_first(closed: sqlite3.Connection) -> None:
    _close(closed, "2026-06", 0, "{}")
    assert closed.execute("SELECT count(*) FROM month_close_books").fetchone()[0] == 2


def test_audit_verify_names_a_dropped_close_guard(
    closed: sqlite3.Connection, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(closed).ok
    owner = closed if "://" not in db_url else connect(os.environ["DATABASE_OWNER_URL"])
    try:
        with transaction(owner):
            owner.execute(
                "DROP TRIGGER month_close_books_no_delete"
                + ("" if owner is closed else " ON month_close_books")
            )
    finally:
        if owner is not closed:
            owner.close()
    assert not verify(closed).ok
    assert main(["audit", "verify", "--db", db_url]) == 1
    assert "month_close_books_no_delete" in capsys.readouterr().out


@pytest.mark.postgres
def test_postgresql_refuses_the_owner_too_and_truncate(pg_url: str) -> None:
    from core.db import open_database

    with open_database(pg_url) as app:
        _close(app, "2026-05", 1, "{}")
    owner = connect(os.environ["DATABASE_OWNER_URL"])
    try:
        for sql in (
            "UPDATE month_closes SET closing = 2",
            "DELETE FROM month_close_books",
            "TRUNCATE month_close_books",
            "TRUNCATE month_closes CASCADE",
        ):
            with pytest.raises(sqlite3.IntegrityError, match=KEPT):
                owner.execute(sql)
        assert owner.execute("SELECT closing FROM month_closes").fetchone()[0] == 1
    finally:
        owner.close()
