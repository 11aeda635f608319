"""Column mappings for unknown statement layouts: made once, saved, versioned, reused."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from core.__main__ import main
from core.db import connect
from core.errors import InputError
from core.ingest import import_dataset, load_dataset
from core.ingest.bank import parse_bank_statement, unrecognised_header
from core.ingest.mappings import (
    make_mapping,
    mapping_history,
    save_statement_mapping,
    saved_mappings,
)
from core.ingest.readers import ReadFailure

from .conftest import FIXTURES, SPEC_EXAMPLE


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


CUSTOM = FIXTURES / "bank" / "custom_mapped.csv"
ASSIGNMENTS = {
    "Posted On": "txn_date",
    "Details": "narration",
    "Instrument Id": "reference",
    "Money In": "credit",
    "Money Out": "debit",
    "Running Total": "balance",
}


def test_an_unknown_layout_is_refused_and_its_header_offered_for_mapping() -> None:
    data = CUSTOM.read_bytes()
    with pytest.raises(ReadFailure):
        parse_bank_statement("custom_mapped.csv", data)
    guess = unrecognised_header("custom_mapped.csv", data)
    assert guess is not None and guess.line == 2
    assert guess.cells[0] == "Posted On" and len(guess.cells) == 6


def test_a_saved_mapping_reads_the_statement_and_names_the_layout(
    conn: sqlite3.Connection,
) -> None:
    data = CUSTOM.read_bytes()
    saved = save_statement_mapping(conn, "custom_mapped.csv", data, ASSIGNMENTS, actor="asha")
    assert saved.version == 1
    frame, report, problems = parse_bank_statement("x.csv", data, saved_mappings(conn))
    assert problems == []
    assert report.bank_layout == "saved mapping 'custom_mapped.csv' v1"
    assert frame["credit"].tolist() == [13_500_000, 0]
    assert frame["debit"].tolist() == [0, 11_800]
    assert frame["utr"].tolist()[0] == "AXISCN1153863727"
    assert frame["utr"].isna().tolist()[1]  # an account number is not a UTR
    assert unrecognised_header("x.csv", data, saved_mappings(conn)) is None


def test_saving_again_makes_a_new_version_and_the_latest_is_used(conn: sqlite3.Connection) -> None:
    data = CUSTOM.read_bytes()
    save_statement_mapping(conn, "a.csv", data, ASSIGNMENTS, name="coop", actor="asha")
    without_balance = {k: v for k, v in ASSIGNMENTS.items() if v != "balance"}
    save_statement_mapping(conn, "a.csv", data, without_balance, name="coop", actor="ravi")
    assert [m.version for m in mapping_history(conn)] == [1, 2]
    (latest,) = saved_mappings(conn)
    assert latest.version == 2
    frame, _, _ = parse_bank_statement("a.csv", data, [latest])
    assert frame["balance"].isna().all()


def test_a_mapping_that_misreads_the_statement_is_not_saved(conn: sqlite3.Connection) -> None:
    wrong = {**ASSIGNMENTS, "Details": "credit", "Money In": "narration"}
    with pytest.raises(InputError) as caught:
        save_statement_mapping(conn, "c.csv", CUSTOM.read_bytes(), wrong, actor="asha")
    assert str(caught.value.problems[0]).startswith("c.csv:3:Details: malformed amount")
    assert saved_mappings(conn) == ()


def test_a_mapping_needs_a_date_and_an_amount_and_real_columns() -> None:
    header = ["Posted On", "Details", "Money In"]
    with pytest.raises(InputError) as caught:
        make_mapping(header, {"Details": "narration", "Nope": "credit", "Money In": "cash"})
    assert [str(p) for p in caught.value.problems] == [
        "bank mapping: Nope: no such column in the header",
        "bank mapping: Money In: unknown field 'cash'; expected one of txn_date, value_date, "
        "narration, reference, credit, debit, amount, direction, balance",
        "bank mapping: map a column to txn_date (or value_date)",
        "bank mapping: map a column to credit and debit, or to amount",
    ]


def test_a_folder_with_a_mapped_statement_imports(tmp_path: Path, conn: sqlite3.Connection) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    shutil.copy(CUSTOM, folder / "bank_statement.csv")
    with pytest.raises(InputError):
        load_dataset(folder)  # no mapping: refused, naming the file
    save_statement_mapping(conn, "bank_statement.csv", CUSTOM.read_bytes(), ASSIGNMENTS, actor="a")
    report = import_dataset(conn, folder)
    assert report.written["bank_lines"] == 2
    assert report.files[-1].bank_layout == "saved mapping 'bank_statement.csv' v1"


def test_cli_saves_lists_and_imports_with_a_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.sqlite")
    maps = [a for column, field in ASSIGNMENTS.items() for a in ("--map", f"{column}={field}")]
    assert main(["bank-mapping", "save", "--db", db, "--file", str(CUSTOM), *maps]) == 0
    assert "Saved mapping 'custom_mapped.csv' v1" in capsys.readouterr().out
    assert main(["bank-mapping", "list", "--db", db]) == 0
    listed = capsys.readouterr().out
    assert "Posted On=txn_date" in listed and "header: Posted On, Details" in listed
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    shutil.copy(CUSTOM, folder / "bank_statement.csv")
    assert main(["import", str(folder), "--db", db]) == 0
    assert "layout saved mapping 'custom_mapped.csv' v1" in capsys.readouterr().out
    bad = ["bank-mapping", "save", "--db", db, "--file", str(CUSTOM), "--map", "Details"]
    assert main(bad) == 2


def test_reconcile_with_db_applies_the_mappings_saved_in_that_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "run.sqlite")
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    shutil.copy(CUSTOM, folder / "bank_statement.csv")
    run = ["reconcile", str(folder), "--out", str(tmp_path / "r.csv"), "--as-of", "2026-06-30"]
    assert main([*run, "--db", db]) == 2  # unknown layout and nothing saved yet
    maps = [a for column, field in ASSIGNMENTS.items() for a in ("--map", f"{column}={field}")]
    assert main(["bank-mapping", "save", "--db", db, "--file", str(CUSTOM), *maps]) == 0
    capsys.readouterr()
    assert main([*run, "--db", db]) == 0
    results = (tmp_path / "r.csv").read_text()
    # The mapped statement's RAZORPAY credit (line 3) was read and reconciled.
    assert "bank_entry,bank_statement.csv:3,EXCEPTION,UNMATCHED_BANK_CREDIT" in results


class _Upload:
    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        self._data = data

    def getvalue(self) -> bytes:
        return self._data


def test_data_page_offers_the_form_for_an_unknown_statement_and_saves_its_mapping(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.access import local_user
    from ui import actions, auth

    monkeypatch.setenv("DATABASE_URL", str(db_path))
    admin = local_user()  # saving a mapping is an admin's setting (ui.auth)
    monkeypatch.setattr(
        auth, "current", lambda: auth.Session(admin.actor, "admin", "local", admin, admin.actor)
    )
    uploads = [_Upload("Bank_Statement.csv", CUSTOM.read_bytes())]
    found = actions.unmapped_statement(uploads)
    assert found is not None
    name, data, guess = found
    assert name == "bank_statement.csv" and guess.cells[:2] == ("Posted On", "Details")
    saved = actions.save_bank_mapping(name, data, ASSIGNMENTS, "coop")
    assert saved.name == "coop" and saved.version == 1
    assert actions.unmapped_statement(uploads) is None
    assert actions.unmapped_statement([_Upload("payments.csv", b"id\n")]) is None


def test_cli_saves_a_mapping_only_as_an_admin_never_as_a_typed_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "roles.sqlite")
    maps = [a for column, field in ASSIGNMENTS.items() for a in ("--map", f"{column}={field}")]
    save = ["bank-mapping", "save", "--db", db, "--file", str(CUSTOM), *maps]
    assert main([*save, "--actor", "cfo"]) == 3  # not a user here: refused
    assert main(["users", "add", "viewer@example.in", "--role", "viewer", "--db", db]) == 0
    assert main([*save, "--actor", "viewer@example.in"]) == 3  # a viewer is no admin
    assert main(save) == 0  # the OS account that owns the database file
    conn = connect(db)
    try:
        assert len(mapping_history(conn)) == 1
        actors = conn.execute(
            "SELECT action, actor FROM audit_log WHERE action IN"
            " ('access.refused', 'bank_mapping_saved') ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    assert [a for a, _ in actors] == ["access.refused", "access.refused", "bank_mapping_saved"]
    assert actors[-1][1] not in ("cfo", "cli", "viewer@example.in")
