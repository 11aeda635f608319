from __future__ import annotations

import csv
import json
import os
import sqlite3
from pathlib import Path

import pytest

from core.__main__ import main
from core.access import Principal
from core.db import connect
from core.review import resolve, sync_exceptions
from tests.review_support import Finding, exception_id, write_run


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


@pytest.fixture
def db_path(db_url: str) -> str:
    return db_url


def _editor(db_path: Path | str, trigger: str) -> sqlite3.Connection:
    """A connection with `trigger` out of its way: SQLite's dropped by whoever holds the
    file; PostgreSQL's disabled by the owner role, the only one that may (the app role
    cannot even try: tests/test_db_postgres.py)."""
    if str(db_path).startswith("postgresql://"):
        owner = connect(os.environ["DATABASE_OWNER_URL"])
        owner.execute(f"ALTER TABLE audit_log DISABLE TRIGGER {trigger}")
        return owner
    conn = connect(db_path)
    conn.execute(f"DROP TRIGGER {trigger}")
    return conn


def _seed(db_path: Path) -> None:
    conn = connect(db_path)
    sync_exceptions(conn, write_run(conn, [Finding("pay_1"), Finding("pay_2")]))
    asha = Principal("asha", "reviewer", "os")  # an established identity: no users rows
    resolve(conn, exception_id(conn, "pay_1"), actor=asha, note="ok", request_id="r1")
    conn.close()


def test_audit_verify_exits_0_on_an_untouched_database(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(db_path)
    assert main(["audit", "verify", "--db", str(db_path)]) == 0
    assert "holds: 4 row(s)" in capsys.readouterr().out


def test_audit_verify_exits_1_naming_the_first_broken_row_after_an_edit(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(db_path)
    conn = _editor(db_path, "audit_log_no_update")
    conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE seq = 2")
    if str(db_path).startswith("postgresql://"):  # back on: the edit is the only problem
        conn.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update")
    conn.close()
    assert main(["audit", "verify", "--db", str(db_path)]) == 1
    out = capsys.readouterr().out
    assert "first broken row: seq 2" in out and "edited" in out


def test_audit_verify_with_an_anchor_catches_a_removed_tail(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(db_path)
    assert main(["audit", "verify", "--db", str(db_path), "--json"]) == 0
    head = json.loads(capsys.readouterr().out)
    anchor = f"{head['head_seq']}:{head['head_hash']}"
    conn = _editor(db_path, "audit_log_no_delete")
    conn.execute("DELETE FROM audit_log WHERE seq = 4")
    if str(db_path).startswith("postgresql://"):  # back on: the cut tail is the only problem
        conn.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_delete")
    conn.close()
    assert main(["audit", "verify", "--db", str(db_path), "--anchor", anchor]) == 1
    assert "anchor" in capsys.readouterr().out


def test_audit_export_writes_csv_or_json_lines_by_extension(
    db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _seed(db_path)
    out_csv = tmp_path / "out" / "audit.csv"
    assert main(["audit", "export", "--db", str(db_path), "--out", str(out_csv)]) == 0
    with out_csv.open(encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == 4 + 1  # the rows and the head's anchor
    out_jsonl = tmp_path / "asha.jsonl"
    args = ["audit", "export", "--db", str(db_path), "--out", str(out_jsonl), "--actor", "asha"]
    assert main(args) == 0
    lines = [json.loads(x) for x in out_jsonl.read_text(encoding="utf-8").splitlines()]
    assert [x["action"] for x in lines[:-1]] == ["exception.resolved"]
    assert "anchor" in lines[-1]
    assert main(["audit", "export", "--db", str(db_path), "--out", str(tmp_path / "a.pdf")]) == 2
    assert (
        main(["audit", "export", "--db", str(db_path), "--out", str(out_csv), "--since", "soon"])
        == 2
    )
    capsys.readouterr()
