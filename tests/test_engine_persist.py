"""Runs and outcomes in SQLite (core.db.runs via core.engine.persist_run): one transaction,
'running' then 'completed', failures recognisable, stale runs discarded."""

from __future__ import annotations

import importlib
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from core.db import connect
from core.db import runs as db_runs
from core.engine import (
    EngineParams,
    discard_stale_runs,
    latest_completed_run,
    persist_run,
    reconcile,
)
from core.engine.persist import outcome_chunks, outcome_rows
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import load_example, ts


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


AS_OF = ts("2026-06-30T23:59:59+05:30")
# The module, not the function `core.db.migrate` that the package re-exports.
migrate_module = importlib.import_module("core.db.migrate")


@pytest.fixture(scope="module")
def outcomes() -> pd.DataFrame:
    return reconcile(load_example(SPEC_EXAMPLE / "dataset"), EngineParams(), AS_OF)


def _persist(conn: sqlite3.Connection, outcomes: pd.DataFrame) -> int:
    return persist_run(
        conn,
        outcomes,
        params=EngineParams(),
        as_of=AS_OF,
        source="files",
        input_hashes={"payments.json": "ab" * 32},
        timings={"reconcile_s": 0.5},
    )


def test_persist_run_stores_the_run_and_every_outcome(
    conn: sqlite3.Connection, outcomes: pd.DataFrame
) -> None:
    run_id = _persist(conn, outcomes)
    run = db_runs.get_run(conn, run_id)
    assert run is not None
    assert (run.status, run.as_of, run.source) == ("completed", AS_OF, "files")
    assert run.finished_at is not None and run.finished_at >= run.started_at
    assert run.params == EngineParams().to_dict()
    assert run.input_hashes == {"payments.json": "ab" * 32}
    assert run.timings is not None and run.timings["reconcile_s"] == 0.5
    assert run.timings["persist_s"] >= 0
    assert run.counts is not None and run.counts["outcomes"] == len(outcomes)
    assert run.counts["by_status"]["EXCEPTION"] == int((outcomes["status"] == "EXCEPTION").sum())
    assert db_runs.count_outcomes(conn, run_id) == len(outcomes)


def test_stored_outcomes_read_back_equal_to_the_frame(
    conn: sqlite3.Connection, outcomes: pd.DataFrame
) -> None:
    run_id = _persist(conn, outcomes)
    stored = [tuple(r) for r in db_runs.read_outcomes(conn, run_id)]
    assert stored == list(outcome_rows(outcomes))
    nulls = [r for r in db_runs.read_outcomes(conn, run_id) if r["entity_type"] == "settlement"]
    assert all(r["order_id"] is None for r in nulls)  # null stays NULL, not '' or 'nan'
    exceptions = db_runs.read_outcomes(conn, run_id, status="EXCEPTION")
    assert len(exceptions) == int((outcomes["status"] == "EXCEPTION").sum())
    assert all(isinstance(r["exposure_amount"], int) for r in exceptions)


def test_latest_completed_run_is_the_newest_completed(
    conn: sqlite3.Connection, outcomes: pd.DataFrame
) -> None:
    assert latest_completed_run(conn) is None
    first = _persist(conn, outcomes)
    second = _persist(conn, outcomes)
    db_runs.start_run(conn, as_of=AS_OF, source="files", params={}, input_hashes={})
    latest = latest_completed_run(conn)
    assert latest is not None and latest.id == second > first


def test_a_failure_while_writing_outcomes_leaves_a_failed_run_and_no_outcomes(
    conn: sqlite3.Connection, outcomes: pd.DataFrame
) -> None:
    good = _persist(conn, outcomes)
    broken = outcomes.copy()
    broken.loc[broken.index[-1], "status"] = "BOGUS"  # violates the CHECK on the last row
    with pytest.raises(sqlite3.IntegrityError):
        _persist(conn, broken)
    runs = db_runs.list_runs(conn)
    failed = runs[0]
    assert failed.status == "failed" and failed.error and "IntegrityError" in failed.error
    assert db_runs.count_outcomes(conn, failed.id) == 0
    latest = latest_completed_run(conn)
    assert latest is not None and latest.id == good


def test_a_run_left_running_by_a_crash_is_recognised_and_discarded(
    conn: sqlite3.Connection,
) -> None:
    crashed = db_runs.start_run(
        conn, as_of=AS_OF, source="files", params={}, input_hashes={}, started_at=1_000
    )
    fresh = db_runs.start_run(conn, as_of=AS_OF, source="files", params={}, input_hashes={})
    assert latest_completed_run(conn) is None
    assert discard_stale_runs(conn, older_than_seconds=3600) == [crashed]
    crashed_run = db_runs.get_run(conn, crashed)
    fresh_run = db_runs.get_run(conn, fresh)
    assert crashed_run is not None and crashed_run.status == "failed"
    assert crashed_run.error is not None and "abandoned" in crashed_run.error
    assert fresh_run is not None and fresh_run.status == "running"


def test_complete_run_refuses_a_run_that_is_not_running(
    conn: sqlite3.Connection, outcomes: pd.DataFrame
) -> None:
    run_id = _persist(conn, outcomes)
    with pytest.raises(ValueError, match="not running"):
        db_runs.complete_run(conn, run_id, chunks=[[[]] * 15], timings={}, counts={})
    assert db_runs.count_outcomes(conn, run_id) == len(outcomes)


def test_outcomes_written_in_chunks_are_all_stored_in_order(
    conn: sqlite3.Connection, outcomes: pd.DataFrame
) -> None:
    run_id = db_runs.start_run(conn, as_of=AS_OF, source="files", params={}, input_hashes={})
    chunks = list(outcome_chunks(outcomes, size=50))
    assert len(chunks) == -(-len(outcomes) // 50)
    db_runs.complete_run(conn, run_id, chunks=chunks, timings={}, counts={})
    stored = [tuple(r) for r in db_runs.read_outcomes(conn, run_id)]
    assert stored == list(outcome_rows(outcomes))


def test_outcomes_survive_the_0021_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outcomes: pd.DataFrame
) -> None:
    # A database migrated up to 0020 with a stored run keeps every outcome through 0021.
    early = tmp_path / "early"
    early.mkdir()
    for name in ("0001_base.sql", "0020_outcomes_clustered.sql"):
        shutil.copy(migrate_module.MIGRATIONS_DIR / name, early / name)
    full = migrate_module.MIGRATIONS_DIR
    monkeypatch.setattr(migrate_module, "MIGRATIONS_DIR", early)
    conn = connect(tmp_path / "old.sqlite")
    try:
        migrate_module.migrate(conn)
        run_id = _persist(conn, outcomes)
        monkeypatch.setattr(migrate_module, "MIGRATIONS_DIR", full)
        assert "0021_outcomes_status_check" in migrate_module.migrate(conn)
        assert db_runs.count_outcomes(conn, run_id) == len(outcomes)
        schema = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'outcomes'").fetchone()
        assert "status = 'PENDING'" in schema[0] and "WITHOUT ROWID" in schema[0]
        with pytest.raises(sqlite3.IntegrityError):
            db_runs.complete_run(
                conn,
                db_runs.start_run(conn, as_of=0, source="x", params={}, input_hashes={}),
                chunks=[
                    [
                        [v]
                        for v in (
                            "payment",
                            "pay_X",
                            "BOGUS",
                            "",
                            "",
                            None,
                            0,
                            0,
                            0,
                            "",
                            0,
                            "",
                            None,
                            None,
                            None,
                        )
                    ]
                ],
                timings={},
                counts={},
            )
    finally:
        conn.close()
