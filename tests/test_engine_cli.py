"""`python -m core reconcile` (spec section 8) and the pipeline behind `--db`."""

from __future__ import annotations

import csv
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core.__main__ import main
from core.db import connect
from core.db import runs as db_runs
from core.engine import EngineParams, reconcile
from core.engine.cli import parse_as_of
from core.ingest import import_dataset, load_dataset
from core.pipeline import reconcile_database, reconcile_folder_into_db
from tests.conftest import ROOT, SPEC_EXAMPLE, database_rows, is_postgres
from tests.engine_support import ts

DATASET = SPEC_EXAMPLE / "dataset"
AS_OF_TEXT = "2026-06-30T23:59:59+05:30"
AS_OF = ts(AS_OF_TEXT)


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's database tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


def _expected() -> pd.DataFrame:
    return pd.read_csv(SPEC_EXAMPLE / "expected_outcomes.csv", dtype=str, keep_default_na=False)


def _results(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_reconcile_writes_the_spec_example_results(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    assert main(["reconcile", str(DATASET), "--out", str(out), "--as-of", AS_OF_TEXT]) == 0
    got = _results(out)
    want = _expected()
    merged = want.merge(got, on=["entity_type", "entity_id"], suffixes=("_want", ""))
    assert len(merged) == len(want) == len(got)
    assert (merged["status_want"] == merged["status"]).all()
    assert (merged["reason_code_want"] == merged["reason_code"]).all()


def test_reconcile_runs_as_a_module(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "reconcile",
            str(DATASET),
            "--out",
            str(out),
            "--as-of",
            AS_OF_TEXT,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "EXCEPTION=73" in done.stdout
    with out.open(newline="") as handle:
        header = next(csv.reader(handle))
    assert header[0] == "entity_type" and header[-1] == "match_method"


def test_reconcile_with_db_stores_dataset_run_outcomes_and_exceptions(
    tmp_path: Path, db_url: str
) -> None:
    out, db = tmp_path / "results.csv", db_url
    args = ["reconcile", str(DATASET), "--out", str(out), "--as-of", AS_OF_TEXT, "--db", db]
    assert main(args) == 0
    conn = connect(db)
    try:
        run = db_runs.latest_completed_run(conn)
        assert run is not None and run.status == "completed" and run.as_of == AS_OF
        assert run.params["settlement_days"] == 2
        assert {"payments.json", "settlements.csv", "import"} <= set(run.input_hashes)
        assert {"load_s", "reconcile_s", "store_dataset_s", "persist_s", "sync_s"} <= set(
            run.timings or {}
        )
        assert db_runs.count_outcomes(conn, run.id) == len(_results(out))
        assert conn.execute("SELECT COUNT(*) FROM payments").fetchone()[0] == 400
        exceptions = conn.execute("SELECT COUNT(*) FROM exceptions").fetchone()[0]
        assert exceptions == int((_results(out)["status"] == "EXCEPTION").sum())
    finally:
        conn.close()
    # A second run of the same data keeps the same exceptions open, none duplicated.
    assert main(args) == 0
    conn = connect(db)
    try:
        assert len(db_runs.list_runs(conn)) == 2
        again = conn.execute("SELECT COUNT(*) FROM exceptions WHERE status = 'OPEN'").fetchone()
        assert again[0] == exceptions
    finally:
        conn.close()


def test_bad_input_exits_2_naming_file_line_column_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], db_url: str
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(DATASET, folder)
    lines = (folder / "settlements.csv").read_text(encoding="utf-8-sig").splitlines()
    lines[3] = lines[3].replace(",94991438,", ",9499x438,")
    (folder / "settlements.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, db = tmp_path / "out" / "results.csv", tmp_path / "out" / "recon.sqlite"
    # SQLite: no database file may appear; PostgreSQL: every row stays as it was
    target = db_url if is_postgres(db_url) else str(db)
    before = database_rows(db_url)
    code = main(["reconcile", str(folder), "--out", str(out), "--db", target])
    assert code == 2
    assert "settlements.csv:4:amount" in capsys.readouterr().err
    assert not out.exists() and not db.exists()
    assert database_rows(db_url) == before


def test_bad_input_leaves_an_existing_database_and_results_untouched(
    tmp_path: Path, db_url: str
) -> None:
    out, db = tmp_path / "results.csv", db_url
    assert (
        main(["reconcile", str(DATASET), "--out", str(out), "--as-of", AS_OF_TEXT, "--db", db]) == 0
    )
    before_csv, before_rows = out.read_bytes(), database_rows(db)
    before_size = None if is_postgres(db) else Path(db).stat().st_size
    folder = tmp_path / "dataset"
    shutil.copytree(DATASET, folder)
    (folder / "payments.json").unlink()
    assert main(["reconcile", str(folder), "--out", str(out), "--db", db]) == 2
    assert out.read_bytes() == before_csv
    conn = connect(db)
    try:
        assert len(db_runs.list_runs(conn)) == 1
    finally:
        conn.close()
    assert database_rows(db) == before_rows
    assert before_size is None or Path(db).stat().st_size == before_size


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--as-of", "yesterday"], "--as-of"),
        (["--holidays", "missing.txt"], "missing.txt"),
    ],
)
def test_bad_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    out = tmp_path / "results.csv"
    assert main(["reconcile", str(DATASET), "--out", str(out), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_bad_holiday_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    holidays = tmp_path / "holidays.txt"
    holidays.write_text("2026-08-15\n15/08/2026\n")
    code = main(
        ["reconcile", str(DATASET), "--out", str(tmp_path / "r.csv"), "--holidays", str(holidays)]
    )
    assert code == 2
    assert "holidays.txt:2:1" in capsys.readouterr().err


def test_calendar_options_reach_the_engine(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    args = ["reconcile", str(DATASET), "--out", str(out), "--as-of", AS_OF_TEXT]
    assert main(args) == 0
    default = _results(out)
    assert main([*args, "--settlement-days", "30", "--grace-days", "0", "--bank-days", "30"]) == 0
    relaxed = _results(out)
    for code in ("MISSING_RECONCILIATION_RECORD", "MISSING_BANK_ENTRY"):
        assert (default["reason_code"] == code).sum() > 0
        assert (relaxed["reason_code"] == code).sum() == 0


def test_holidays_file_moves_due_dates(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    holidays = tmp_path / "holidays.txt"
    # Every working day from May 2026 a holiday: no bank credit is overdue yet.
    days = pd.bdate_range("2026-05-01", "2026-07-31").strftime("%Y-%m-%d")
    holidays.write_text("\n".join(days) + "\n")
    args = ["reconcile", str(DATASET), "--out", str(out), "--as-of", AS_OF_TEXT]
    assert main([*args, "--holidays", str(holidays)]) == 0
    assert (_results(out)["reason_code"] == "MISSING_BANK_ENTRY").sum() == 0


def test_as_of_accepts_offsets_naive_ist_and_dates() -> None:
    assert parse_as_of("2026-06-30T23:59:59+05:30") == AS_OF
    assert parse_as_of("2026-06-30T23:59:59") == AS_OF  # no offset means IST
    assert parse_as_of("2026-06-30T18:29:59Z") == AS_OF
    assert parse_as_of("2026-06-30") == AS_OF  # a date means the end of that IST day


def test_reconcile_database_matches_reconciling_the_files(conn: sqlite3.Connection) -> None:
    import_dataset(conn, DATASET)
    stored = reconcile_database(conn, EngineParams(), AS_OF, "files")
    direct = reconcile(load_dataset(DATASET)[0], EngineParams(), AS_OF)
    pd.testing.assert_frame_equal(stored.outcomes, direct)
    run = db_runs.get_run(conn, stored.run_id)
    assert run is not None and run.status == "completed"
    assert set(run.input_hashes) >= {"payments", "recon", "bank", "dataset"}
    assert stored.sync is not None


def test_reconcile_folder_into_db_stores_and_syncs(conn: sqlite3.Connection) -> None:
    result = reconcile_folder_into_db(conn, DATASET, params=EngineParams(), as_of=AS_OF)
    exceptions = int((result.outcomes["status"] == "EXCEPTION").sum())
    assert conn.execute("SELECT COUNT(*) FROM exceptions").fetchone()[0] == exceptions
    assert db_runs.count_outcomes(conn, result.run_id) == len(result.outcomes)
    assert result.timings["sync_s"] >= 0


def test_results_file_gets_ordinary_permissions(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    assert main(["reconcile", str(DATASET), "--out", str(out), "--as-of", AS_OF_TEXT]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["results.csv"]


def test_pipeline_marks_long_abandoned_runs_failed(conn: sqlite3.Connection) -> None:
    crashed = db_runs.start_run(
        conn, as_of=AS_OF, source="files", params={}, input_hashes={}, started_at=1_000
    )
    reconcile_folder_into_db(conn, DATASET, params=EngineParams(), as_of=AS_OF)
    run = db_runs.get_run(conn, crashed)
    assert run is not None and run.status == "failed"


def test_a_reconcile_of_a_dataset_folder_imports_neither_parquet_nor_the_window_store(
    tmp_path: Path,
) -> None:
    """Whether the folder is a window store is a file check (core.engine.store_layout): the
    store's modules (Parquet, the partitioner) are start-up time a dataset folder never needs."""
    code = (
        "import sys; from core.__main__ import main; "
        "code = main(['reconcile', sys.argv[1], '--out', sys.argv[2]]); "
        "print(code, 'pyarrow.parquet' in sys.modules, 'core.engine.distributed' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(DATASET), str(tmp_path / "r.csv")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.strip().splitlines()[-1] == "0 False False", done.stderr
    assert (tmp_path / "r.csv").read_bytes().startswith(b"entity_type,")
