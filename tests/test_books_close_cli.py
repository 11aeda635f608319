"""`python -m core close --db PATH --month YYYY-MM [--actor EMAIL]`: a month closed from the
command line, as the Books page closes it (an independent tester automating month end
found no way to): the same admin check, the same audited close, the same kept snapshot;
closing it again changes nothing."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest

from core import access
from core.__main__ import main
from core.audit import AuditFilter, query
from core.books.close import books_view, closed_months
from core.books.ledger import ledger_for
from core.db import connect
from tests.books_late_support import migrated, reconciled


@pytest.fixture
def db(benchmark_1500: Path, tmp_path: Path) -> Path:
    path = tmp_path / "books.sqlite"
    with migrated(path) as conn:
        reconciled(conn, benchmark_1500)
        access.add_user(conn, "viewer@example.com", "viewer", actor=access.os_operator())
        access.add_user(conn, "boss@example.com", "admin", actor=access.os_operator())
    return path


def _closes(db: Path) -> dict[str, tuple[str, int]]:
    conn = connect(db)
    try:
        return {m: (c.closed_by, c.snapshot.closing) for m, c in closed_months(conn).items()}
    finally:
        conn.close()


def test_an_admin_closes_a_month_from_the_command_line_as_the_page_would(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = connect(db)
    try:
        closing = books_view(
            ledger_for(conn, "2026-05").events_for("2026-05"), "2026-05", {}
        ).closing
    finally:
        conn.close()

    assert (
        main(["close", "--db", str(db), "--month", "2026-05", "--actor", "boss@example.com"]) == 0
    )
    said = capsys.readouterr().out
    assert main(["close", "--db", str(db), "--month", "2026-05"]) == 0  # again: unchanged
    again = capsys.readouterr().out

    assert _closes(db) == {"2026-05": ("boss@example.com", closing)}
    assert said.startswith("2026-05 closed: closed by boss@example.com at ")
    assert again.startswith("2026-05 was already closed: closed by boss@example.com at ")
    conn = connect(db)
    try:
        entries = query(conn, AuditFilter(action="month_closed"))
    finally:
        conn.close()
    assert [(e.actor, e.entity_id) for e in entries] == [("boss@example.com", "2026-05")]


def test_the_operating_system_login_closes_as_admin_and_a_viewer_is_refused_and_audited(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = ["close", "--db", str(db), "--month", "2026-04", "--actor", "viewer@example.com"]
    assert main(refused) == 3
    assert "viewer@example.com is viewer; close a month needs the admin role" in (
        capsys.readouterr().err
    )
    assert _closes(db) == {}

    assert main(["close", "--db", str(db), "--month", "2026-04"]) == 0
    assert _closes(db)["2026-04"][0] == getpass.getuser()
    conn = connect(db)
    try:
        refusals = query(conn, AuditFilter(action="access.refused"))
    finally:
        conn.close()
    assert [(e.actor, e.entity_id) for e in refusals] == [("viewer@example.com", "2026-04")]


def test_closing_a_database_that_is_not_there_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.sqlite"
    assert main(["close", "--db", str(missing), "--month", "2026-05"]) == 2
    assert "no such database" in capsys.readouterr().err
    assert not missing.exists()


def test_a_month_the_data_have_not_reached_the_end_of_is_refused_and_nothing_is_written(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An independent tester closed 2027-03 (a typo for 2026-03) with exit 0: for good.
    for month in ("2027-03", "2026-07"):
        assert main(["close", "--db", str(db), "--month", month]) == 3
        said = capsys.readouterr().err
        assert f"{month} was not closed: it has not ended in the data: the latest run" in said
        assert "is as of 2026-06-30 23:59 IST" in said
    assert _closes(db) == {}
    conn = connect(db)
    try:
        assert query(conn, AuditFilter(action="month_closed")) == []
    finally:
        conn.close()

    # The run's as-of is the last second of June: June has ended in the data.
    assert main(["close", "--db", str(db), "--month", "2026-06"]) == 0
    assert list(_closes(db)) == ["2026-06"]


def test_a_month_is_refused_before_anything_is_reconciled(tmp_path: Path) -> None:
    from core.books.close import not_ended_problem

    assert not_ended_problem(None, "2026-06") == (
        "nothing is reconciled yet; reconcile the month's data first"
    )
