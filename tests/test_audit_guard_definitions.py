"""`audit verify` compares each guard trigger (core.db.audit.GUARD_TRIGGERS) with the
definition its migration creates, not only its name (docs/review.md, "Audit trail"): a
guard recreated under its own name to fire never (SQLite `WHEN 0`, PostgreSQL `WHEN
(false)`), a PostgreSQL guard whose function was replaced by one that lets everything
through, or one disabled or enabled only for replication, fails verify naming it. The
expected definitions are read from the migration files (core.db.guards). On SQLite files
and the PostgreSQL the tests start; PostgreSQL's edits are the owner role's (the app role
may not make them)."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from core.__main__ import main
from core.audit import append, verify
from core.db import connect
from core.db.audit import GUARD_TRIGGERS, altered_guards, migration_triggers
from core.db.backend import is_postgres
from core.db.guards import created_definitions


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    append(
        db_conn,
        actor="asha",
        action="exception.commented",
        entity_type="note",
        entity_id="1",
        payload={"note": "a trail to verify"},
    )
    return db_conn


def _dialect(conn: sqlite3.Connection) -> str:
    return "postgresql" if is_postgres(conn) else "sqlite"


@contextmanager
def _owner(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A connection that may change the schema: SQLite's file is anyone's who can write it;
    on PostgreSQL only the owner role's."""
    if not is_postgres(conn):
        yield conn
        return
    owner = connect(os.environ["DATABASE_OWNER_URL"])
    try:
        yield owner
    finally:
        owner.close()


def _table_of(conn: sqlite3.Connection, name: str) -> str:
    return next(table for table, names in migration_triggers(conn).items() if name in names)


@contextmanager
def _recreated(conn: sqlite3.Connection, name: str, text: str) -> Iterator[None]:
    """Guard `name` dropped and created again as `text`; as its migration creates it after."""
    created = created_definitions(_dialect(conn)).triggers[name].sql
    drop = f"DROP TRIGGER {name}" + (f" ON {_table_of(conn, name)}" if is_postgres(conn) else "")
    with _owner(conn) as owner:
        owner.execute(drop)
        owner.execute(text)
        try:
            yield
        finally:
            owner.execute(drop)
            owner.execute(created)


def _never_firing(conn: sqlite3.Connection, name: str) -> str:
    """The migration's text of guard `name` with a condition that is never true."""
    text = created_definitions(_dialect(conn)).triggers[name].sql.rstrip().rstrip(";")
    if is_postgres(conn):
        if " WHEN (" in text:
            return text.replace(" WHEN (", " WHEN (false AND ", 1)
        return text.replace("EXECUTE FUNCTION", "WHEN (false) EXECUTE FUNCTION", 1)
    if re.search(r"\sWHEN\s", text):
        return re.sub(r"\sWHEN\s", " WHEN 0 AND ", text, count=1)
    return re.sub(r"\sBEGIN\s", " WHEN 0 BEGIN ", text, count=1)


def test_every_guard_is_defined_in_the_migrations_and_holds_as_created(
    conn: sqlite3.Connection,
) -> None:
    created = created_definitions(_dialect(conn)).triggers
    assert {name for names in GUARD_TRIGGERS.values() for name in names} <= set(created)
    assert altered_guards(conn) == {}
    assert verify(conn).ok


@pytest.mark.parametrize(
    ("name", "migration"),
    [
        ("runs_completed_no_update", "0113_completed_runs_immutable"),
        ("outcomes_completed_no_delete", "0113_completed_runs_immutable"),
        ("exceptions_identity_fixed", "0113_completed_runs_immutable"),
        ("audit_log_no_update", "0001_base"),
        ("runs_snapshot_recorded_once", "0114_run_snapshot_recorded_once"),
        ("month_closes_no_update", "0116_month_closes_kept"),
        ("exception_events_no_update", "0040_review_audit"),
        ("approvals_decided_once", "0045_access"),
        ("exception_totals_update", "0101_exception_totals"),
    ],
)
def test_a_guard_recreated_under_its_name_to_fire_never_fails_verify_naming_it(
    conn: sqlite3.Connection,
    db_url: str,
    name: str,
    migration: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _recreated(conn, name, _never_firing(conn, name)):
        result = verify(conn)
        assert not result.ok
        assert result.problem == (
            f"protective trigger(s) altered: {name} (its definition is not the one"
            f" {migration} creates)"
        )
        assert main(["audit", "verify", "--db", db_url]) == 1
        assert f"{name} (its definition is not the one {migration} creates)" in (
            capsys.readouterr().out
        )
    assert verify(conn).ok


def test_a_books_ledger_trigger_recreated_to_fire_never_fails_verify_naming_it(
    conn: sqlite3.Connection, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ledger's triggers refuse nothing, but one that no longer fires leaves the Books
    page's stored figures stale after a correction: verify checks them as it checks the
    guards (SQLite: books_ledger_payments_update; PostgreSQL: books_ledger_payments)."""
    name = next(n for n in migration_triggers(conn)["payments"] if n.startswith("books_ledger"))
    with _recreated(conn, name, _never_firing(conn, name)):
        assert not verify(conn).ok
        assert main(["audit", "verify", "--db", db_url]) == 1
        assert f"{name} (its definition is not the one" in capsys.readouterr().out
    assert verify(conn).ok


def test_a_guard_recreated_from_its_own_text_spaced_and_cased_otherwise_still_holds(
    conn: sqlite3.Connection,
) -> None:
    name = "runs_completed_no_delete"  # its literals are in lower case already
    text = created_definitions(_dialect(conn)).triggers[name].sql
    # every run of spaces outside a quoted literal (one followed by an even number of quotes)
    spaced = re.sub(r"\s+(?=(?:[^']*'[^']*')*[^']*$)", "\n\t  ", text).lower()
    assert spaced != text.lower()
    with _recreated(conn, name, spaced):
        assert altered_guards(conn) == {}
        assert verify(conn).ok


def test_a_guard_dropped_and_one_altered_are_both_named(conn: sqlite3.Connection) -> None:
    with (
        _recreated(
            conn, "runs_completed_no_delete", _never_firing(conn, "runs_completed_no_delete")
        ),
        _owner(conn) as owner,
    ):
        where = " ON exceptions" if is_postgres(conn) else ""
        owner.execute(f"DROP TRIGGER exceptions_identity_fixed{where}")
        try:
            problem = verify(conn).problem
        finally:
            owner.execute(
                created_definitions(_dialect(conn)).triggers["exceptions_identity_fixed"].sql
            )
    assert problem == (
        "protective trigger(s) missing: exceptions_identity_fixed; protective trigger(s)"
        " altered: runs_completed_no_delete (its definition is not the one"
        " 0113_completed_runs_immutable creates)"
    )


@pytest.mark.postgres
def test_a_guards_function_replaced_by_one_that_lets_everything_through_fails_verify(
    pg_url: str,
) -> None:
    created = created_definitions("postgresql").functions["razorrecon_refuse_completed_outcome"]
    with connect(pg_url) as conn, _owner(conn) as owner:
        assert verify(conn).ok
        owner.execute(
            "CREATE OR REPLACE FUNCTION razorrecon_refuse_completed_outcome() RETURNS trigger"
            " LANGUAGE plpgsql AS $$ BEGIN IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;"
            " RETURN NEW; END $$"
        )
        try:
            problem = verify(conn).problem
        finally:
            owner.execute(created.sql.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
        assert verify(conn).ok
    why = (
        "its function razorrecon_refuse_completed_outcome is not the one"
        " 0113_completed_runs_immutable creates"
    )
    assert problem == (
        f"protective trigger(s) altered: outcomes_completed_no_delete ({why});"
        f" outcomes_completed_no_update ({why})"
    )


@pytest.mark.postgres
def test_a_guard_disabled_or_enabled_only_for_replication_fails_verify(pg_url: str) -> None:
    with connect(pg_url) as conn, _owner(conn) as owner:
        for enable, said in (
            ("DISABLE TRIGGER", "disabled"),
            ("ENABLE REPLICA TRIGGER", "enabled only for replication sessions"),
        ):
            owner.execute(f"ALTER TABLE runs {enable} runs_snapshot_recorded_once")
            try:
                problem = verify(conn).problem
            finally:
                owner.execute("ALTER TABLE runs ENABLE TRIGGER runs_snapshot_recorded_once")
            assert problem.startswith(
                f"protective trigger(s) altered: runs_snapshot_recorded_once ({said}"
            )
        assert verify(conn).ok


@pytest.mark.postgres
def test_a_truncate_guard_disabled_fails_verify(pg_url: str) -> None:
    """Row triggers do not see TRUNCATE; its statement guards are checked as the others."""
    with connect(pg_url) as conn, _owner(conn) as owner:
        owner.execute("ALTER TABLE outcomes DISABLE TRIGGER outcomes_no_truncate")
        try:
            problem = verify(conn).problem
        finally:
            owner.execute("ALTER TABLE outcomes ENABLE TRIGGER outcomes_no_truncate")
        assert problem.startswith("protective trigger(s) altered: outcomes_no_truncate (disabled")
        assert verify(conn).ok
