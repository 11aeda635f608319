"""What a completed run decided, the database itself refuses to change (migration 0113,
docs/CONTRACTS.md "What the database refuses"): its outcomes, its decided fields, its
existence, the identity of the exceptions it raised, (0114) the snapshot record it left
once written, and (0117) what it was: its kind, base run and scope. Found by an
independent test (D8): such edits were accepted, `audit verify` still passed, and the
next import-day carried the edited rows forward under counts that no longer described
them. On SQLite files and the PostgreSQL the tests start, after real import-day runs of a
benchmark."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.__main__ import main
from core.audit import verify
from core.benchmark import generate
from core.db import connect, open_database, transaction
from core.db import runs as db_runs
from core.db.backend import is_postgres
from core.engine import EngineParams, discard_stale_runs
from core.engine.cli import parse_as_of
from core.pipeline import reconcile_day_into_db
from tests.conftest import ROOT
from tests.guard_support import guards_off
from tests.test_pipeline_incremental import split_into_days

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
PARAMS = EngineParams()
OUTCOMES_FIXED = "outcomes of a completed run are immutable"
RUN_FIXED = "a completed run is immutable"
STATUS_ONCE = "a run's status is decided once"
IDENTITY_FIXED = "an exception's identity is fixed"
SNAPSHOT_ONCE = "a completed run's snapshot record is written once"
KIND_DECIDED = "a completed run's kind is decided with it"
# One MATCHED payment, a value per OUTCOME_FIELDS entry.
ONE_MATCH = ("payment", "pay_1", "MATCHED", "", "", None, 1, 1, 0, "", 0, "exact", None, None, None)


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[int]]:
    """Three day folders cut from a small generated benchmark, with their as-ofs."""
    root = tmp_path_factory.mktemp("immutable")
    generated = generate(root / "full", payments=300, seed=21)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=2), last - dt.timedelta(days=1)]
    folders = split_into_days(root / "full", root / "days", cuts)
    as_ofs = [parse_as_of(f"{cut - dt.timedelta(days=1)}T23:59:59+05:30") for cut in cuts]
    return folders, [*as_ofs, generated.as_of]


@pytest.fixture
def chain(
    days: tuple[list[Path], list[int]], db_url: str
) -> Iterator[tuple[sqlite3.Connection, list[int]]]:
    """A database after two import-day runs (a full one, then an incremental one)."""
    folders, as_ofs = days
    with open_database(db_url) as conn:
        ids = []
        for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
            done = reconcile_day_into_db(conn, folder, params=PARAMS, as_of=as_of)
            ids.append(done.run.run_id)
        yield conn, ids


def _status_counts(conn: sqlite3.Connection, run_id: int) -> dict[str, int]:
    rows = conn.execute(
        "SELECT status, count(*) FROM outcomes WHERE run_id = ? GROUP BY status", (run_id,)
    )
    return {str(r[0]): int(r[1]) for r in rows}


def _refused(
    conn: sqlite3.Connection, message: str, sql: str, params: tuple[object, ...] = ()
) -> None:
    with pytest.raises(sqlite3.IntegrityError, match=message), transaction(conn):
        conn.execute(sql, params)


def test_the_database_refuses_to_update_or_delete_a_completed_runs_outcomes(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, (first, second) = chain
    before = {run: _status_counts(conn, run) for run in (first, second)}
    assert before[second]["EXCEPTION"] > 0
    _refused(  # D8's edit: exceptions turned into matches
        conn,
        OUTCOMES_FIXED,
        "UPDATE outcomes SET status = 'MATCHED', reason_code = '', reason_codes = '',"
        " exposure_amount = 0, exposure_class = '' WHERE run_id = ? AND status = 'EXCEPTION'",
        (second,),
    )
    _refused(conn, OUTCOMES_FIXED, "UPDATE outcomes SET utr = 'X' WHERE run_id = ?", (first,))
    _refused(conn, OUTCOMES_FIXED, "DELETE FROM outcomes WHERE run_id = ?", (second,))
    _refused(
        conn,
        OUTCOMES_FIXED,
        "DELETE FROM outcomes WHERE run_id = ? AND status = 'EXCEPTION'",
        (first,),
    )
    assert {run: _status_counts(conn, run) for run in (first, second)} == before


def test_a_row_of_a_running_run_may_not_be_moved_into_a_completed_one(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, (_, second) = chain
    running = db_runs.start_run(conn, as_of=0, source="files", params={}, input_hashes={})
    with transaction(conn):
        conn.execute(
            "INSERT INTO outcomes (run_id, entity_type, entity_id, status)"
            " VALUES (?, 'payment', 'pay_FAKE', 'MATCHED')",
            (running,),
        )
    _refused(
        conn, OUTCOMES_FIXED, "UPDATE outcomes SET run_id = ? WHERE run_id = ?", (second, running)
    )
    assert db_runs.count_outcomes(conn, running) == 1


def test_a_running_runs_outcomes_stay_writable_and_a_failed_or_stale_run_is_discarded(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, (first, _) = chain
    copied = db_runs.count_outcomes(conn, first)
    stale, failed = (
        db_runs.start_run(conn, as_of=0, source="files", params={}, input_hashes={}, started_at=1)
        for _ in range(2)
    )
    fields = ", ".join(db_runs.OUTCOME_FIELDS)
    with transaction(conn):  # what the carry copy does while a run is running
        for run in (stale, failed):
            conn.execute(
                f"INSERT INTO outcomes (run_id, {fields}) SELECT ?, {fields}"
                " FROM outcomes WHERE run_id = ?",
                (run, first),
            )
        conn.execute("UPDATE outcomes SET utr = 'edited' WHERE run_id = ?", (failed,))
        deleted = conn.execute(
            "DELETE FROM outcomes WHERE run_id = ? AND status = 'EXCEPTION'", (failed,)
        ).rowcount
    assert 0 < deleted < copied
    db_runs.fail_run(conn, failed, "ValueError: a test's failure")
    assert discard_stale_runs(conn, older_than_seconds=0, keep=failed) == [stale]
    for run in (stale, failed):
        record = db_runs.get_run(conn, run)
        assert record is not None and record.status == "failed"
        assert db_runs.count_outcomes(conn, run) == 0
    assert db_runs.count_outcomes(conn, first) == copied
    _refused(conn, STATUS_ONCE, "UPDATE runs SET status = 'completed' WHERE id = ?", (failed,))
    # A running run that is given up (its id goes to the run stored another way) goes.
    dropped = db_runs.start_run(conn, as_of=0, source="files", params={}, input_hashes={})
    db_runs.discard_run(conn, dropped)
    assert db_runs.get_run(conn, dropped) is None


def test_the_database_refuses_to_change_what_a_completed_run_decided(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, (first, second) = chain
    before = db_runs.get_run(conn, second)
    assert before is not None and before.status == "completed"
    _refused(conn, STATUS_ONCE, "UPDATE runs SET status = 'failed' WHERE id = ?", (second,))
    _refused(conn, STATUS_ONCE, "UPDATE runs SET status = 'running' WHERE id = ?", (first,))
    counts = json.dumps({**(before.counts or {}), "outcomes": 1})
    for sql, params in (
        ("UPDATE runs SET counts_json = ? WHERE id = ?", (counts, second)),
        ("UPDATE runs SET as_of = as_of + 86400 WHERE id = ?", (second,)),
        ("UPDATE runs SET params_json = '{}' WHERE id = ?", (second,)),
        ("UPDATE runs SET input_hashes_json = '{}' WHERE id = ?", (second,)),
        ("UPDATE runs SET source = 'razorpay_api' WHERE id = ?", (second,)),
        ("UPDATE runs SET started_at = 0, finished_at = 1 WHERE id = ?", (second,)),
        ("UPDATE runs SET error = 'x' WHERE id = ?", (second,)),
        ("UPDATE runs SET through_import_id = NULL WHERE id = ?", (second,)),
        ("UPDATE runs SET id = 99 WHERE id = ?", (second,)),
        ("DELETE FROM runs WHERE id = ?", (second,)),
    ):
        _refused(conn, RUN_FIXED, sql, params)
    assert db_runs.get_run(conn, second) == before


def test_a_completed_runs_timings_stay_writable(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, (_, second) = chain
    before = db_runs.get_run(conn, second)
    assert before is not None and before.timings is not None
    db_runs.update_timings(conn, second, {**before.timings, "books_ledger_s": 0.25})
    with transaction(conn):  # writing a decided field with its own value changes nothing
        conn.execute(
            "UPDATE runs SET status = status, counts_json = counts_json,"
            " snapshot_json = snapshot_json, kind = kind, scope_json = scope_json WHERE id = ?",
            (second,),
        )
    after = db_runs.get_run(conn, second)
    assert after is not None
    assert after.timings == {**before.timings, "books_ledger_s": 0.25}
    assert (after.snapshot, after.kind, after.base_run_id, after.scope) == (
        before.snapshot,
        before.kind,
        before.base_run_id,
        before.scope,
    )
    assert (after.status, after.counts, after.as_of) == (before.status, before.counts, before.as_of)


def test_what_a_completed_run_was_is_recorded_with_it_and_then_refused_a_change(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    """import-day records a run's kind, base run and scope in the transaction that
    completes it (before: after, so a full day's record could be rewritten 'incremental'
    over another base, or its scope, the record of what it re-reconciled, replaced)."""
    conn, (first, second) = chain
    runs = [db_runs.get_run(conn, run) for run in (first, second)]
    assert [(r.kind, r.base_run_id) for r in runs if r is not None] == [
        ("full", None),
        ("incremental", first),
    ]
    assert runs[0] is not None and runs[0].scope is not None and "reason" in runs[0].scope
    assert runs[1] is not None and runs[1].scope is not None and runs[1].scope != runs[0].scope
    for sql, params in (
        ("UPDATE runs SET kind = 'incremental', base_run_id = ? WHERE id = ?", (second, first)),
        ("UPDATE runs SET kind = 'full' WHERE id = ?", (second,)),
        ("UPDATE runs SET base_run_id = NULL WHERE id = ?", (second,)),
        ('UPDATE runs SET scope_json = \'{"reason": "x"}\' WHERE id = ?', (second,)),
        ("UPDATE runs SET scope_json = NULL WHERE id = ?", (first,)),
    ):
        _refused(conn, KIND_DECIDED, sql, params)
    assert [db_runs.get_run(conn, run) for run in (first, second)] == runs
    running = db_runs.start_run(conn, as_of=0, source="files", params={}, input_hashes={})
    kind = db_runs.RunKind("incremental", second, {"payments": 1})
    chunks = [[[value] for value in ONE_MATCH]]
    db_runs.complete_run(conn, running, chunks=chunks, timings={}, counts={}, kind=kind)
    stored = db_runs.get_run(conn, running)
    assert stored is not None
    assert (stored.kind, stored.base_run_id, stored.scope) == ("incremental", second, kind.scope)


def _completed_run(conn: sqlite3.Connection) -> int:
    run = db_runs.start_run(conn, as_of=0, source="files", params={}, input_hashes={})
    chunks = [[[value] for value in ONE_MATCH]]
    db_runs.complete_run(conn, run, chunks=chunks, timings={}, counts={"outcomes": 1})
    return run


def test_a_completed_runs_snapshot_record_is_set_once_then_neither_changed_nor_cleared(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    """What import-day writes after a run completes (its snapshot named, then recorded:
    NULL to the record, or NULL again when it left none) stays possible; rewriting the
    record (other files, other hashes, the next day's stored state) or clearing it is
    refused (migration 0114)."""
    conn, _ = chain
    record = {"version": 1, "import_id": 1, "files": {"payments": {"sha256": "a" * 64}}}
    forged = {**record, "files": {"payments": {"sha256": "b" * 64}}}
    running = db_runs.start_run(conn, as_of=0, source="files", params={}, input_hashes={})
    db_runs.record_snapshot(conn, running, forged)  # a running run's is not decided yet
    db_runs.record_snapshot(conn, running, None)
    run = _completed_run(conn)
    db_runs.record_snapshot(conn, run, None)  # a run that left no snapshot
    db_runs.record_snapshot(conn, run, record)  # named once the run is stored
    db_runs.record_snapshot(conn, run, record)  # the same record again changes nothing
    for snapshot in (forged, None):
        with pytest.raises(sqlite3.IntegrityError, match=SNAPSHOT_ONCE):
            db_runs.record_snapshot(conn, run, snapshot)
    _refused(conn, SNAPSHOT_ONCE, "UPDATE runs SET snapshot_json = '{}' WHERE id = ?", (run,))
    stored = db_runs.get_run(conn, run)
    assert stored is not None and stored.snapshot == record


@pytest.mark.sqlite_only
def test_the_snapshot_record_import_day_left_cannot_be_pointed_at_other_files(
    chain: tuple[sqlite3.Connection, list[int]], days: tuple[list[Path], list[int]]
) -> None:
    """The record a real import-day left beside a SQLite file: rewritten to name other
    hashes (files someone put in the folder) or cleared, both refused; the next day still
    reads the snapshot as recorded."""
    conn, (_, second) = chain
    before = db_runs.get_run(conn, second)
    assert before is not None and before.snapshot is not None
    forged = json.dumps({**before.snapshot, "import_id": before.snapshot["import_id"] + 1})
    plain = sqlite3.connect(conn.execute("PRAGMA database_list").fetchone()[2])
    try:
        for sql, params in (
            ("UPDATE runs SET snapshot_json = ? WHERE id = ?", (forged, second)),
            ("UPDATE runs SET snapshot_json = NULL WHERE id = ?", (second,)),
        ):
            with pytest.raises(sqlite3.IntegrityError, match=SNAPSHOT_ONCE):
                plain.execute(sql, params)
    finally:
        plain.close()
    folders, as_ofs = days
    third = reconcile_day_into_db(conn, folders[2], params=PARAMS, as_of=as_ofs[2])
    assert third.read_from == f"snapshot of run {second}"


def test_the_database_refuses_to_change_an_exceptions_identity(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, _ = chain
    row = conn.execute("SELECT id, entity_id FROM exceptions ORDER BY id LIMIT 1").fetchone()
    assert row is not None
    exc = int(row[0])
    for sql in (
        "UPDATE exceptions SET entity_id = 'pay_FAKE' WHERE id = ?",  # D8's edit
        "UPDATE exceptions SET entity_type = 'refund' WHERE id = ?",
        "UPDATE exceptions SET reason_code = 'FEE_MISMATCH' WHERE id = ?",
        "UPDATE exceptions SET first_run_id = 1, opened_at = 0 WHERE id = ?",
        "UPDATE exceptions SET id = -1 WHERE id = ?",
    ):
        _refused(conn, IDENTITY_FIXED, sql, (exc,))
    with transaction(conn):  # what the sync and the review actions write stays writable
        conn.execute(
            "UPDATE exceptions SET assignee = 'asha', updated_at = updated_at + 1,"
            " entity_id = entity_id WHERE id = ?",
            (exc,),
        )
    after = conn.execute("SELECT entity_id, assignee FROM exceptions WHERE id = ?", (exc,))
    assert tuple(after.fetchone()) == (row[1], "asha")


def test_the_next_import_day_stores_rows_its_counts_describe_after_a_refused_edit(
    chain: tuple[sqlite3.Connection, list[int]], days: tuple[list[Path], list[int]]
) -> None:
    """D8 end to end: the edit is refused, so the next day's carry copies the rows the
    engine carried, and its counts describe the rows it stored; the trail verifies."""
    conn, (_, second) = chain
    folders, as_ofs = days
    _refused(
        conn,
        OUTCOMES_FIXED,
        "UPDATE outcomes SET status = 'MATCHED', reason_code = '', reason_codes = '',"
        " exposure_amount = 0, exposure_class = '' WHERE run_id = ? AND status = 'EXCEPTION'",
        (second,),
    )
    third = reconcile_day_into_db(conn, folders[2], params=PARAMS, as_of=as_ofs[2])
    assert third.kind == "incremental"
    run = db_runs.get_run(conn, third.run.run_id)
    assert run is not None and run.counts is not None
    assert _status_counts(conn, run.id) == {k: v for k, v in run.counts["by_status"].items() if v}
    assert verify(conn).ok


def test_audit_verify_reports_a_dropped_or_disabled_run_trigger(
    chain: tuple[sqlite3.Connection, list[int]],
) -> None:
    conn, _ = chain
    assert verify(conn).ok
    for table, name in (
        ("outcomes", "outcomes_completed_no_update"),
        ("runs", "runs_completed_no_update"),
        ("runs", "runs_snapshot_recorded_once"),
        ("runs", "runs_kind_decided"),
        ("exceptions", "exceptions_identity_fixed"),
    ):
        with guards_off(conn, table):
            result = verify(conn)
            assert not result.ok and "trigger" in result.problem and name in result.problem
        assert verify(conn).ok


@pytest.mark.sqlite_only
def test_the_sqlite3_shell_edit_of_d8_is_refused_and_audit_verify_still_passes(
    chain: tuple[sqlite3.Connection, list[int]], db_url: str
) -> None:
    """The tester's own commands: a plain sqlite3 connection (no house settings) on the
    file, then `python -m core audit verify --db`."""
    _, (_, second) = chain
    plain = sqlite3.connect(db_url)
    try:
        for sql in (
            "UPDATE outcomes SET status='MATCHED', reason_code='', reason_codes='',"
            f" exposure_amount=0, exposure_class='' WHERE run_id={second}"
            " AND reason_code='AMOUNT_MISMATCH'",
            f"UPDATE runs SET status='failed' WHERE id={second}",
            f"DELETE FROM outcomes WHERE run_id={second}",
            "UPDATE exceptions SET entity_id='pay_FAKE'",
        ):
            with pytest.raises(sqlite3.IntegrityError, match=r"immutable|decided once|fixed"):
                plain.execute(sql)
    finally:
        plain.close()
    checked = subprocess.run(
        [sys.executable, "-m", "core", "audit", "verify", "--db", db_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.postgres
def test_postgresql_refuses_the_owner_too_and_truncate(pg_url: str) -> None:
    """The triggers hold for the owner role (the app role holds no TRUNCATE on these
    tables at all); TRUNCATE, which row triggers do not see, is refused by its own."""
    with open_database(pg_url) as app:
        run = db_runs.start_run(app, as_of=0, source="files", params={}, input_hashes={})
        db_runs.complete_run(
            app,
            run,
            chunks=[[[value] for value in ONE_MATCH]],
            timings={},
            counts={"outcomes": 1},
        )
        assert is_postgres(app)
    owner = connect(os.environ["DATABASE_OWNER_URL"])
    try:
        for sql, message in (
            ("UPDATE outcomes SET status = 'EXCEPTION'", OUTCOMES_FIXED),
            ("DELETE FROM outcomes", OUTCOMES_FIXED),
            ("TRUNCATE outcomes", OUTCOMES_FIXED),
            ("UPDATE runs SET counts_json = '{}'", RUN_FIXED),
            ("TRUNCATE runs CASCADE", "immutable"),
        ):
            with pytest.raises(sqlite3.IntegrityError, match=message):
                owner.execute(sql)
        assert owner.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 1
    finally:
        owner.close()


def test_audit_verify_reports_a_row_added_to_the_latest_completed_run(
    chain: tuple[sqlite3.Connection, list[int]], db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An INSERT is not refused (the runs' own inserts stay fast), but the latest completed
    run's rows no longer match the counts it recorded, and verify says so: the next
    import-day would carry that row forward."""
    conn, (_, second) = chain
    assert main(["audit", "verify", "--db", db_url]) == 0
    capsys.readouterr()
    with transaction(conn):
        conn.execute(
            "INSERT INTO outcomes (run_id, entity_type, entity_id, status) VALUES (?, ?, ?, ?)",
            (second, "payment", "pay_fake", "MATCHED"),
        )
    assert main(["audit", "verify", "--db", db_url]) == 1
    said = capsys.readouterr()
    assert f"run {second}: its stored outcomes by status" in said.out + said.err
    assert "(rows were added or removed)" in said.out + said.err
