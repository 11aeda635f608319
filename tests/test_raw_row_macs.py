"""A raw row changed by hand is evident: every writer stores a keyed MAC beside each raw row
(core.rowmac, migration 0120), each import, run, sync and webhook entry records the raw
tables' row counts, and `audit verify` and the next run check them. An independent
attacker (round 3, F2) turned an unexplained bank credit into a missing settlement's
credit with one UPDATE; verify passed and the admin's next run auto-cleared both
exceptions in the admin's name. No trigger on the raw tables (an INSERT trigger costs
SQLite its fast table-to-table copy)."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from pathlib import Path

import pytest

from core.__main__ import main
from core.audit import verify
from core.bootstrap import reconcile_stored
from core.calendar import IST
from core.db import open_database, transaction
from core.engine import EngineParams
from core.errors import RefusedError
from core.pipeline import reconcile_database, reconcile_folder_into_db
from tests.conftest import SPEC_EXAMPLE

AS_OF = int(dt.datetime(2026, 6, 30, 23, 59, 59, tzinfo=IST).timestamp())
ADMIN = "admin@corp.example"
TAMPER = (
    "UPDATE bank_lines SET utr = 'KKBKH09081603561', reference = 'KKBKH09081603561',"
    " credit = 131423632 WHERE id = 'bank_statement.csv:52'"
)


def _reconciled(db_url: str, folder: Path = SPEC_EXAMPLE / "dataset") -> None:
    with open_database(db_url) as conn:
        reconcile_folder_into_db(conn, folder, params=EngineParams(), as_of=AS_OF, actor=ADMIN)


def _statuses(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT status FROM exceptions WHERE entity_id IN"
        " ('setl_2PeM10pOuIJoE8', 'bank_statement.csv:52') ORDER BY id"
    ).fetchall()
    return [str(r[0]) for r in rows]


def test_verify_names_the_bank_line_changed_by_hand(db_url: str) -> None:
    _reconciled(db_url)
    with open_database(db_url) as conn:
        assert verify(conn).ok, verify(conn).problem
        with transaction(conn):
            conn.execute(TAMPER)
        result = verify(conn)
    assert not result.ok
    assert "bank_lines" in result.problem and "bank_statement.csv:52" in result.problem


def test_a_bank_line_changed_by_hand_is_run_on_named_by_verify_and_refused_by_the_close(
    db_url: str,
) -> None:
    """A full run checks the counts only (the MACs of every row would cost it 24 CPU s at
    1M payments): an edited row with the count unchanged is named by `audit verify`, and
    the month close, which checks every MAC, refuses while it fails."""
    from core.books.close import close_month, closed_months
    from core.books.ledger import ledger_for

    _reconciled(db_url)
    with open_database(db_url) as conn:
        with transaction(conn):
            conn.execute(TAMPER)
        reconcile_database(conn, EngineParams(), AS_OF, "files", actor=ADMIN)  # proceeds
        result = verify(conn)
        assert not result.ok and "bank_statement.csv:52" in result.problem
        events = ledger_for(conn, "2026-06").events_for("2026-06")
        with pytest.raises(
            RefusedError, match=r"2026-06 was not closed: .*bank_lines.*bank_statement\.csv:52"
        ):
            close_month(conn, events, "2026-06", actor=ADMIN, request_id="close-1")
        assert "2026-06" not in closed_months(conn)
    assert main(["close", "--month", "2026-06", "--db", db_url, "--actor", ADMIN]) == 3


def test_the_close_refuses_while_a_raw_table_count_differs(db_url: str) -> None:
    from core.books.close import close_month
    from core.books.ledger import ledger_for

    _reconciled(db_url)
    with open_database(db_url) as conn:
        with transaction(conn):
            conn.execute("DELETE FROM bank_lines WHERE id = 'bank_statement.csv:52'")
        events = ledger_for(conn, "2026-06").events_for("2026-06")
        with pytest.raises(RefusedError, match=r"2026-06 was not closed: .*bank_lines.*deleted"):
            close_month(conn, events, "2026-06", actor=ADMIN, request_id="close-1")


def test_a_row_given_a_recomputed_mac_without_the_key_is_still_named(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With RAZORRECON_ANCHOR_KEY set, an editor who copies the MAC code but not the key
    makes a MAC that does not verify."""
    from core import rowmac
    from core.db.raw import expected_macs, read_sealed_rows

    monkeypatch.setenv("RAZORRECON_ANCHOR_KEY", "the-operators-secret")
    _reconciled(db_url)
    with open_database(db_url) as conn:
        assert verify(conn).ok, verify(conn).problem
        with transaction(conn):
            conn.execute(TAMPER)
        monkeypatch.delenv("RAZORRECON_ANCHOR_KEY")  # the editor has the code, not the key
        rows = read_sealed_rows(conn, "bank")
        forged = dict(zip(rows["id"], expected_macs("bank", rows), strict=True))
        with transaction(conn):
            conn.execute(
                f"UPDATE bank_lines SET {rowmac.MAC_COLUMN} = ? WHERE id = ?",
                (forged["bank_statement.csv:52"], "bank_statement.csv:52"),
            )
        monkeypatch.setenv("RAZORRECON_ANCHOR_KEY", "the-operators-secret")
        result = verify(conn)
    assert not result.ok and "bank_statement.csv:52" in result.problem


def test_verify_names_a_raw_row_inserted_by_hand(db_url: str) -> None:
    _reconciled(db_url)
    with open_database(db_url) as conn, transaction(conn):
        columns = [
            "id",
            "file",
            "line_no",
            "txn_date",
            "value_date",
            "narration",
            "reference",
            "debit",
            "credit",
            "balance",
            "utr",
            "import_id",
            "row_mac",
        ]
        names = ", ".join(columns)
        conn.execute(
            f"INSERT INTO bank_lines ({names}) SELECT 'bank_statement.csv:999', file, 999,"
            f" txn_date, value_date, narration, reference, debit, credit, balance, utr,"
            f" import_id, row_mac FROM bank_lines WHERE id = 'bank_statement.csv:52'"
        )
    with open_database(db_url) as conn:
        result = verify(conn)
        assert not result.ok
        assert "bank_statement.csv:999" in result.problem  # its copied MAC does not fit
        assert "bank_lines: " in result.problem and "inserted" in result.problem
        with pytest.raises(RefusedError, match="bank_lines"):
            reconcile_stored(conn, as_of=AS_OF, actor=ADMIN)


def test_verify_names_a_raw_table_with_a_row_deleted_by_hand_and_runs_refuse(
    db_url: str,
) -> None:
    folder = SPEC_EXAMPLE / "dataset"
    _reconciled(db_url)
    with open_database(db_url) as conn, transaction(conn):
        conn.execute("DELETE FROM bank_lines WHERE id = 'bank_statement.csv:52'")
    with open_database(db_url) as conn:
        result = verify(conn)
        assert not result.ok
        assert "bank_lines" in result.problem and "deleted" in result.problem
        with pytest.raises(RefusedError, match=r"bank_lines.*deleted"):
            reconcile_stored(conn, as_of=AS_OF, actor=ADMIN)
    # An import adding to the tables refuses too (its entry would vouch for the count).
    assert main(["import", str(folder), "--db", db_url]) == 3


def test_audited_imports_runs_and_a_replace_keep_verify_passing(db_url: str) -> None:
    folder = SPEC_EXAMPLE / "dataset"
    _reconciled(db_url)
    assert main(["import", str(folder), "--db", db_url]) == 0  # the same content: nothing
    with open_database(db_url) as conn:
        reconcile_database(conn, EngineParams(), AS_OF, "files", actor=ADMIN)
        assert verify(conn).ok, verify(conn).problem
    assert main(["import", str(folder), "--db", db_url, "--replace"]) == 0
    with open_database(db_url) as conn:
        result = verify(conn)
    assert result.ok, result.problem


def test_a_replacing_import_clears_a_hand_made_change(db_url: str) -> None:
    """The way back documented: import the data again with replace."""
    _reconciled(db_url)
    with open_database(db_url) as conn, transaction(conn):
        conn.execute(TAMPER)
    assert main(["import", str(SPEC_EXAMPLE / "dataset"), "--db", db_url, "--replace"]) == 0
    with open_database(db_url) as conn:
        result = verify(conn)
    assert result.ok, result.problem


def _owner(db_url: str) -> str:
    """The URL of the role that may change the schema (PostgreSQL: DATABASE_OWNER_URL, as
    core.db.migrate.migrate_with_owner migrates)."""
    return os.environ.get("DATABASE_OWNER_URL", "") if db_url.startswith("postgres") else db_url


def _database_before_0120(db_url: str) -> None:
    """A database as a release before migration 0120 left it: reconciled, its raw rows
    without the row_mac column, 0120 not recorded (PostgreSQL: as the owner role)."""
    from core.db import connect, raw

    _reconciled(db_url)
    conn = connect(_owner(db_url))
    with transaction(conn):
        for table, _, _ in raw.RAW_TABLES.values():
            conn.execute(f"ALTER TABLE {table} DROP COLUMN row_mac")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0120_raw_row_macs'")
    conn.close()


def test_upgrading_past_0120_seals_the_stored_raw_rows_once(db_url: str) -> None:
    """Rows stored before 0120 have no MAC: the upgrade gives them theirs (trusting the data
    as it is then) and records the counts in one entry, so verify passes and a run and a
    close proceed; a hand-made change after the upgrade is named as ever."""
    from core.audit.rawcheck import refuse_unrecorded_changes
    from core.db import connect, migrate

    _database_before_0120(db_url)
    conn = connect(_owner(db_url))
    assert migrate(conn) == ["0120_raw_row_macs"]
    assert migrate(conn) == []  # a second migrate does nothing
    conn.close()
    with open_database(db_url) as conn:
        sealed = conn.execute(
            "SELECT payload_json FROM audit_log WHERE action = ?", ("raw.sealed_at_upgrade",)
        ).fetchall()
        assert len(sealed) == 1
        assert '"bank_lines"' in str(sealed[0][0]) and '"raw_rows"' in str(sealed[0][0])
        assert (
            conn.execute("SELECT count(*) FROM bank_lines WHERE row_mac IS NULL").fetchone()[0] == 0
        )
        result = verify(conn)
        assert result.ok, result.problem
        refuse_unrecorded_changes(conn, macs=True)  # what the month close checks
        reconcile_stored(conn, as_of=AS_OF, actor=ADMIN)
        assert verify(conn).ok, verify(conn).problem
        with transaction(conn):
            conn.execute(TAMPER)
        result = verify(conn)
    assert not result.ok and "bank_statement.csv:52" in result.problem


def _sqlite_before_0120(tmp_path: Path) -> str:
    """A SQLite file as a release before 0120 left it (`_database_before_0120`)."""
    from core.db import connect, migrate

    db = str(tmp_path / "old.sqlite")
    conn = connect(db)
    migrate(conn)
    conn.close()
    _database_before_0120(db)
    return db


def test_a_database_with_raw_rows_is_not_upgraded_past_0120_without_its_python_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """core.db.migrate cannot import the step that seals the rows (core.activity builds on
    core.db): a process that has not loaded it is refused the upgrade, nothing applied,
    instead of leaving the stored rows without MACs and the counts without a base."""
    from core.db import connect, migrate
    from core.db.migrate import _PYTHON_STEPS

    db = _sqlite_before_0120(tmp_path)
    monkeypatch.delitem(_PYTHON_STEPS, "0120_raw_row_macs")
    conn = connect(db)
    with pytest.raises(RuntimeError, match="0120_raw_row_macs needs its Python step"):
        migrate(conn)
    applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    columns = [r[1] for r in conn.execute("PRAGMA table_info(bank_lines)")]
    conn.close()
    assert "0120_raw_row_macs" not in applied and "row_mac" not in columns


def test_the_command_line_seals_the_rows_of_a_database_it_upgrades_past_0120(
    tmp_path: Path,
) -> None:
    """A command on a database loads the upgrade's step before opening it (core.__main__):
    `audit verify` in a fresh process upgrades a database stored before 0120 and passes."""
    import subprocess
    import sys

    db = _sqlite_before_0120(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "core", "audit", "verify", "--db", db],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with open_database(db) as conn:
        sealed = conn.execute(
            "SELECT count(*) FROM audit_log WHERE action = 'raw.sealed_at_upgrade'"
        ).fetchone()[0]
        unsealed = conn.execute("SELECT count(*) FROM bank_lines WHERE row_mac IS NULL").fetchone()
    assert sealed == 1 and unsealed[0] == 0
