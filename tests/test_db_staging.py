"""Bulk writes through staging files (core.db.staging): the database ends up holding exactly
what binding every value directly would have written, and nothing else.

Staging files, ATTACH, WAL checkpoints and SQLite storage classes are SQLite's own: on
PostgreSQL no staging file is ever written (core.db.staging.worth_staging), bulk rows go in
by COPY (core.db.pg_bulk). So the staging tests stay on SQLite, each naming the PostgreSQL
test at the end of this module that proves the same property of COPY."""

from __future__ import annotations

import datetime as dt
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from core.benchmark.generator import generate
from core.db import connect, migrate, staging
from core.db.connection import background_checkpoints
from core.db.raw import RAW_TABLES as _HOUSE_RAW_TABLES
from core.db.staging import StagedTable, write_staged_file
from core.engine import EngineParams
from core.engine import persist as engine_persist
from core.errors import StorageError
from core.ingest import load_dataset, store_dataset
from core.ingest import stage as ingest_stage
from core.ingest.stage import staging_raw_tables
from core.pipeline import reconcile_day_into_db, reconcile_folder_into_db

RAW_TABLES = tuple(table for table, _, _ in _HOUSE_RAW_TABLES.values())


@pytest.fixture(scope="module")
def benchmark_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A generated dataset with every column kind: NULLs, notes JSON, non-ASCII text."""
    folder = tmp_path_factory.mktemp("bench") / "dataset"
    result = generate(folder, payments=1_500, seed=11)
    return folder, int(result.as_of)


NEVER = 10**12


def _stage_from(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    """Stage raw tables and outcomes from `rows` rows on (0: always; NEVER: never)."""
    monkeypatch.setattr(staging, "STAGING_MIN_ROWS", rows)


@pytest.fixture
def staged_always(monkeypatch: pytest.MonkeyPatch) -> None:
    _stage_from(monkeypatch, 0)


@pytest.fixture
def staged_never(monkeypatch: pytest.MonkeyPatch) -> None:
    _stage_from(monkeypatch, NEVER)


@pytest.fixture
def staged_files(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables of every staging file written (so a test knows staging really happened)."""
    written: list[str] = []

    def spy(module: Any) -> None:
        real = module.write_staged_file

        def recording(path: Path, tables: Any, *args: Any) -> Any:
            written.extend(t.name for t in tables)
            return real(path, tables, *args)

        monkeypatch.setattr(module, "write_staged_file", recording)

    spy(ingest_stage)
    spy(engine_persist)
    return written


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Staging files go here, so a test can see that none is left behind."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _database(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    migrate(conn)
    return conn


def _rows(conn: sqlite3.Connection, table: str, *, but: str = "") -> list[tuple[Any, ...]]:
    """Every value of every row with its SQLite storage class, in rowid order (outcomes, a
    WITHOUT ROWID table: in key order); the column `but` left out (and with `import_id`,
    `row_mac`: the row's MAC covers its import id, core.rowmac)."""
    left_out = {but, "row_mac"} if but == "import_id" else {but}
    names = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] not in left_out]
    columns = ", ".join(f"{n}, typeof({n})" for n in names)
    if table == "outcomes":
        query = f"SELECT {columns} FROM outcomes ORDER BY run_id, entity_type, entity_id"
    else:
        query = f"SELECT rowid, {columns} FROM {table} ORDER BY rowid"
    return [tuple(r) for r in conn.execute(query)]


def _store(path: Path, folder: Path) -> sqlite3.Connection:
    conn = _database(path)
    dataset, report = load_dataset(folder)
    store_dataset(
        conn,
        dataset,
        source="files",
        location=str(folder),
        content_hash=report.content_hash,
        replace=True,
        files=report.files,
    )
    return conn


@pytest.fixture
def direct_store(
    benchmark_folder: tuple[Path, int], tmp_path: Path, staged_never: None
) -> Iterator[sqlite3.Connection]:
    conn = _store(tmp_path / "direct.sqlite", benchmark_folder[0])
    yield conn
    conn.close()


# SQLite only: staging files; on PostgreSQL see
# test_postgresql_copy_stores_what_sqlite_direct_binding_writes.
def test_staged_raw_tables_hold_exactly_what_direct_binding_writes(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    direct_store: sqlite3.Connection,
    monkeypatch: pytest.MonkeyPatch,
    private_tmp: Path,
    staged_files: list[str],
) -> None:
    _stage_from(monkeypatch, 0)
    staged = _store(tmp_path / "staged.sqlite", benchmark_folder[0])
    assert sorted(staged_files) == sorted(RAW_TABLES)
    for table in RAW_TABLES:
        assert _rows(staged, table) == _rows(direct_store, table), table
    assert _rows(staged, "payments")  # the comparison compared something
    assert staged.execute("PRAGMA foreign_key_check").fetchall() == []
    assert staged.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert staged.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert list(private_tmp.iterdir()) == []  # staging files removed
    staged.close()


# SQLite only: staging files; on PostgreSQL see
# test_db_postgres.test_copy_stores_a_repeated_key_once_with_its_last_values.
def test_a_staged_table_with_a_repeated_key_is_written_by_upserts_instead(
    tmp_path: Path, staged_always: None, private_tmp: Path, staged_files: list[str]
) -> None:
    from .conftest import SPEC_EXAMPLE

    dataset, _ = load_dataset(SPEC_EXAMPLE / "dataset")
    twice = dataset.payments.iloc[[0, 1, 0]].reset_index(drop=True)
    twice.loc[2, "amount"] = 4242
    doubled = type(dataset)(
        payments=twice,
        refunds=dataset.refunds,
        settlements=dataset.settlements,
        recon=dataset.recon,
        bank=dataset.bank,
        has_bank_statement=True,
    )
    conn = _database(tmp_path / "db.sqlite")
    written = store_dataset(
        conn, doubled, source="files", location="x", content_hash="h", replace=True
    )
    rows = conn.execute("SELECT id, amount FROM payments ORDER BY rowid").fetchall()
    assert [tuple(r) for r in rows] == [
        (twice.loc[0, "id"], 4242),  # the last row for the key wins, as with direct upserts
        (twice.loc[1, "id"], int(twice.loc[1, "amount"])),
    ]
    assert written.written["payments"] == 3
    assert "payments" in staged_files
    assert conn.execute("SELECT count(*) FROM recon_rows").fetchone()[0] == len(dataset.recon)
    assert list(private_tmp.iterdir()) == []
    conn.close()


# SQLite only: staging files; on PostgreSQL see
# test_postgresql_copy_stores_what_sqlite_direct_binding_writes.
def test_an_import_id_taken_while_staging_falls_back_to_direct_writes(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    direct_store: sqlite3.Connection,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _stage_from(monkeypatch, 0)
    conn = _database(tmp_path / "db.sqlite")
    dataset, report = load_dataset(benchmark_folder[0])
    with staging_raw_tables(conn, dataset, report.content_hash, replace=True) as staging:
        assert staging is not None and staging.import_id == 1
        other = connect(tmp_path / "db.sqlite")  # another writer records an import meanwhile
        other.execute(
            "INSERT INTO imports (source, location, content_hash, imported_at, report_json)"
            " VALUES ('files', 'elsewhere', 'other', 0, '{}')"
        )
        other.close()
        stored = store_dataset(
            conn,
            dataset,
            source="files",
            location="x",
            content_hash=report.content_hash,
            replace=True,
            staging=staging,
        )
    assert stored.import_id == 2
    ids = conn.execute("SELECT DISTINCT import_id FROM payments").fetchall()
    assert [r[0] for r in ids] == [2]
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    for table in RAW_TABLES:
        assert _rows(conn, table, but="import_id") == _rows(direct_store, table, but="import_id")
    conn.close()


# SQLite only: staging files; on PostgreSQL see
# test_a_failed_copy_leaves_postgresql_as_it_was.
def test_a_staging_folder_that_cannot_be_made_fails_closed_naming_tmpdir(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _stage_from(monkeypatch, 0)
    not_a_folder = tmp_path / "tmp"
    not_a_folder.write_text("a file where the temporary folder should be")
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_folder))
    conn = _database(tmp_path / "db.sqlite")
    dataset, report = load_dataset(benchmark_folder[0])
    with pytest.raises(StorageError, match="TMPDIR") as raised:
        store_dataset(conn, dataset, source="files", location="x", content_hash=report.content_hash)
    assert raised.value.exit_code == 4
    for table in (*RAW_TABLES, "imports"):
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    conn.close()


# SQLite only: staging files and page sizes are SQLite's.
def test_a_staging_file_of_large_pages_copies_every_row_and_index_into_smaller_pages(
    tmp_path: Path,
) -> None:
    schema = (
        "CREATE TABLE t (id TEXT NOT NULL, n INTEGER, note TEXT)",
        "CREATE UNIQUE INDEX t_id ON t (id)",
        "CREATE INDEX t_n ON t (n)",
    )
    rows = pa.table(
        {
            "id": [f"id_{i:05d}" for i in range(5_000)],
            "n": [i % 97 for i in range(5_000)],
            "note": [None if i % 3 else "x" * (i % 300) for i in range(5_000)],
        }
    )
    staged = write_staged_file(tmp_path / "stage.sqlite", [StagedTable("t", schema, rows)])
    check = sqlite3.connect(staged.path)
    assert check.execute("PRAGMA page_size").fetchone()[0] == staging.STAGING_PAGE_SIZE
    check.close()
    house = sqlite3.connect(tmp_path / "house.sqlite", isolation_level=None)
    for statement in schema:
        house.execute(statement)
    assert house.execute("PRAGMA page_size").fetchone()[0] < staging.STAGING_PAGE_SIZE
    with staging.attached(house, {"staged": staged.path}), staging.foreign_keys_off(house):
        assert staging.copy_table(house, "staged", "t") == 5_000
    assert house.execute("SELECT id, n, note FROM t ORDER BY rowid").fetchall() == [
        tuple(r.values()) for r in rows.to_pylist()
    ]
    assert house.execute("SELECT count(*) FROM t INDEXED BY t_n WHERE n = 5").fetchone()[0] == 52
    assert house.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    house.close()


# SQLite only: staging files; on PostgreSQL see
# test_a_failed_copy_leaves_postgresql_as_it_was.
def test_a_staging_file_that_cannot_be_written_is_a_storage_error(tmp_path: Path) -> None:
    table = StagedTable("t", ("CREATE TABLE t (n INTEGER)",), pa.table({"n": [1, 2]}))
    with pytest.raises(StorageError, match="could not write the staging file"):
        write_staged_file(tmp_path / "missing-folder" / "stage.sqlite", [table])


# SQLite only: staging files; on PostgreSQL see
# test_a_failed_copy_leaves_postgresql_as_it_was.
def test_a_failed_writer_thread_leaves_the_database_and_temp_folder_clean(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    private_tmp: Path,
) -> None:
    _stage_from(monkeypatch, 0)
    real = ingest_stage.write_staged_file

    def second_fails(path: Path, tables: Any, *args: Any) -> Any:
        if path.name == "raw1.sqlite":  # the recon group: a real ADBC failure, half-written
            return real(path.parent / "gone" / path.name, tables, *args)
        return real(path, tables, *args)

    monkeypatch.setattr(ingest_stage, "write_staged_file", second_fails)
    conn = _database(tmp_path / "db.sqlite")
    dataset, report = load_dataset(benchmark_folder[0])
    with pytest.raises(StorageError):
        store_dataset(conn, dataset, source="files", location="x", content_hash=report.content_hash)
    for table in (*RAW_TABLES, "imports"):
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    assert list(private_tmp.iterdir()) == []
    conn.close()


# SQLite only: staging files; on PostgreSQL see
# test_ingest_store.test_importing_the_same_files_again_is_a_no_op.
def test_storing_the_same_content_again_stages_nothing(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _stage_from(monkeypatch, 0)
    conn = _store(tmp_path / "db.sqlite", benchmark_folder[0])
    dataset, report = load_dataset(benchmark_folder[0])
    with staging_raw_tables(conn, dataset, report.content_hash, replace=True) as staging:
        assert staging is None
    again = store_dataset(
        conn, dataset, source="files", location="x", content_hash=report.content_hash, replace=True
    )
    assert again.already_imported
    conn.close()


def _a_day_over(dataset: Any) -> Any:
    """A day's dataset over `dataset` stored already: payments and recon rows changed, sent
    again unchanged and new (one new key twice, its second row's values to win), refunds
    sent again unchanged."""
    payments = dataset.payments
    changed = payments.iloc[:20].copy()
    changed["amount"] = changed["amount"] + 1
    new = payments.iloc[20:40].copy()
    new["id"] = [f"pay_day{i:03d}" for i in range(len(new))]
    repeated = new.iloc[[3]].copy()
    repeated["amount"] = 4242
    same = payments.iloc[40:60]
    day_payments = pd.concat([new.iloc[:10], changed, same, new.iloc[10:], repeated])
    recon = dataset.recon
    recon_changed = recon.iloc[:15].copy()
    recon_changed["amount"] = recon_changed["amount"] + 7
    return type(dataset)(
        payments=day_payments.reset_index(drop=True),
        refunds=dataset.refunds.iloc[:5].reset_index(drop=True),
        settlements=dataset.settlements.iloc[:0],
        recon=pd.concat([recon.iloc[15:30], recon_changed]).reset_index(drop=True),
        bank=dataset.bank.iloc[:0],
        has_bank_statement=True,
    )


def _store_a_day(path: Path, folder: Path, staged_files: list[str]) -> sqlite3.Connection:
    """The folder stored (replacing), a Books ledger built (so its update triggers mark a
    change), then `_a_day_over` it upserted; `staged_files` holds the day's staged tables."""
    conn = _store(path, folder)
    conn.execute(
        "INSERT INTO books_ledger (id, run_id, source_version, changed, built_at, events,"
        " format) VALUES (1, NULL, 'v', 0, 0, 0, 1)"
    )
    dataset, _ = load_dataset(folder)
    staged_files.clear()
    store_dataset(conn, _a_day_over(dataset), source="files", location="day", content_hash="day")
    return conn


# SQLite only: staging files; on PostgreSQL see
# test_ingest_store.test_an_upsert_rewrites_only_the_rows_whose_content_changed.
def test_a_staged_day_upserted_into_stored_tables_writes_what_direct_upserts_do(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    private_tmp: Path,
    staged_files: list[str],
) -> None:
    _stage_from(monkeypatch, NEVER)
    direct = _store_a_day(tmp_path / "direct.sqlite", benchmark_folder[0], staged_files)
    assert staged_files == []
    _stage_from(monkeypatch, 0)
    staged = _store_a_day(tmp_path / "staged.sqlite", benchmark_folder[0], staged_files)
    assert sorted(staged_files) == sorted(RAW_TABLES)  # the day went through staging
    for table in RAW_TABLES:  # row ids, values, storage classes and import ids
        assert _rows(staged, table) == _rows(direct, table), table
    day_rows = "SELECT count(*) FROM payments WHERE import_id = 2"
    assert staged.execute(day_rows).fetchone()[0] == 20 + 20  # changed + new: not `same`
    last = "SELECT amount FROM payments WHERE id = 'pay_day003'"
    assert staged.execute(last).fetchone()[0] == 4242
    ledger = "SELECT changed FROM books_ledger"
    assert staged.execute(ledger).fetchone()[0] == direct.execute(ledger).fetchone()[0] == 3
    imports = (
        "SELECT id, content_hash, json_extract(report_json, '$.written'),"
        " json_extract(report_json, '$.exclusive') FROM imports ORDER BY id"
    )
    assert staged.execute(imports).fetchall() == direct.execute(imports).fetchall()
    assert staged.execute("PRAGMA foreign_key_check").fetchall() == []
    assert staged.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert staged.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert list(private_tmp.iterdir()) == []  # staging files removed
    staged.close()
    direct.close()


def _run_tables(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """What a pipeline run leaves, without its clock readings."""
    return {
        "outcomes": _rows(conn, "outcomes"),
        "exceptions": [
            tuple(r)
            for r in conn.execute(
                "SELECT id, entity_type, entity_id, reason_code, status, exposure_class,"
                " exposure_amount, last_run_id FROM exceptions ORDER BY id"
            )
        ],
        "audit": [tuple(r) for r in conn.execute("SELECT action, entity_id FROM audit_log")],
        "runs": [tuple(r) for r in conn.execute("SELECT id, status, counts_json FROM runs")],
        **{table: _rows(conn, table) for table in RAW_TABLES},
    }


def _tables_of(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = connect(path)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    tables = _run_tables(conn)
    conn.close()
    return tables


def _pipeline(path: Path, folder: Path, as_of: int) -> dict[str, list[tuple[Any, ...]]]:
    conn = _database(path)
    reconcile_folder_into_db(conn, folder, params=EngineParams(), as_of=as_of)
    conn.close()
    return _tables_of(path)


# SQLite only: staging files; on PostgreSQL see
# test_postgresql_copy_stores_what_sqlite_direct_binding_writes.
def test_a_staged_pipeline_run_stores_what_a_direct_one_does(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    private_tmp: Path,
    staged_files: list[str],
) -> None:
    folder, as_of = benchmark_folder
    _stage_from(monkeypatch, NEVER)
    direct = _pipeline(tmp_path / "direct.sqlite", folder, as_of)
    assert staged_files == []
    _stage_from(monkeypatch, 0)
    staged = _pipeline(tmp_path / "staged.sqlite", folder, as_of)
    assert sorted(staged_files) == sorted([*RAW_TABLES, "outcomes"])
    assert len(staged["outcomes"]) > 1_500 and staged["exceptions"]
    for name, rows in direct.items():
        assert staged[name] == rows, name
    assert list(private_tmp.iterdir()) == []


# SQLite only: staging files; on PostgreSQL see
# test_engine_cli.test_reconcile_with_db_stores_dataset_run_outcomes_and_exceptions.
def test_persisting_a_run_again_after_staging_keeps_earlier_runs(
    benchmark_folder: tuple[Path, int], tmp_path: Path, staged_always: None
) -> None:
    folder, as_of = benchmark_folder
    conn = _database(tmp_path / "db.sqlite")
    first = reconcile_folder_into_db(conn, folder, params=EngineParams(), as_of=as_of)
    second = reconcile_folder_into_db(conn, folder, params=EngineParams(), as_of=as_of + 86_400)
    counts = dict(conn.execute("SELECT run_id, count(*) FROM outcomes GROUP BY run_id").fetchall())
    assert counts == {first.run_id: len(first.outcomes), second.run_id: len(second.outcomes)}
    conn.close()


# SQLite only: WAL checkpoints are SQLite's PRAGMAs; PostgreSQL checkpoints by itself.
def test_background_checkpoints_restore_the_connection_and_keep_every_commit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db.sqlite"
    conn = _database(path)
    conn.execute("CREATE TABLE filler (n INTEGER, text TEXT)")
    with background_checkpoints(conn):
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        for start in range(0, 40_000, 10_000):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO filler VALUES (?, ?)",
                ((n, "x" * 200) for n in range(start, start + 10_000)),
            )
            conn.execute("COMMIT")
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    conn.close()
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT count(*), sum(n) FROM filler").fetchone() == (
        40_000,
        sum(range(40_000)),
    )
    assert reader.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    reader.close()


# SQLite only: WAL checkpoints are SQLite's PRAGMAs; PostgreSQL checkpoints by itself.
def test_background_checkpoints_leave_an_in_memory_database_alone() -> None:
    conn = connect(":memory:")
    before = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    with background_checkpoints(conn):
        conn.execute("CREATE TABLE t (n)")
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == before
    conn.close()


# SQLite only: staging files; on PostgreSQL see
# test_postgresql_copy_stores_what_sqlite_direct_binding_writes.
def test_outcomes_staged_under_a_run_id_taken_meanwhile_get_the_new_runs_id(
    benchmark_folder: tuple[Path, int], tmp_path: Path, private_tmp: Path
) -> None:
    from core.db.staging import staging_directory
    from core.engine import persist_run, reconcile

    folder, as_of = benchmark_folder
    dataset, _ = load_dataset(folder)
    outcomes = reconcile(dataset, EngineParams(), as_of)
    conn = _database(tmp_path / "db.sqlite")
    with staging_directory() as staging:
        staged = engine_persist.stage_outcomes(conn, outcomes, staging / "outcomes.sqlite")
        assert staged.run_id == 1
        other = connect(tmp_path / "db.sqlite")  # another process starts a run meanwhile
        other.execute(
            "INSERT INTO runs (started_at, status, as_of, source, params_json,"
            " input_hashes_json) VALUES (0, 'failed', 0, 'files', '{}', '{}')"
        )
        other.close()
        run_id = persist_run(
            conn,
            outcomes,
            params=EngineParams(),
            as_of=as_of,
            source="files",
            input_hashes={},
            timings={},
            staged=staged,
        )
    assert run_id == 2
    stored = conn.execute("SELECT run_id, count(*) FROM outcomes GROUP BY run_id").fetchall()
    assert [tuple(r) for r in stored] == [(2, len(outcomes))]
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("SELECT status FROM runs WHERE id = 2").fetchone()[0] == "completed"
    conn.close()


def _cli_reconcile(folder: Path, as_of: int, out: Path, db: Path) -> dict[str, Any]:
    import datetime as dt

    from core.__main__ import main

    when = dt.datetime.fromtimestamp(as_of, tz=dt.UTC).isoformat()
    code = main(["reconcile", str(folder), "--out", str(out), "--db", str(db), "--as-of", when])
    assert code == 0
    return _tables_of(db)


# SQLite only: staging files; on PostgreSQL see
# test_postgresql_copy_stores_what_sqlite_direct_binding_writes.
def test_the_reconcile_command_stores_the_same_whether_staged_or_not(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    staged_files: list[str],
    private_tmp: Path,
) -> None:
    folder, as_of = benchmark_folder
    for value in (NEVER, 0):
        _stage_from(monkeypatch, value)
        name = "staged" if value == 0 else "direct"
        stored = _cli_reconcile(folder, as_of, tmp_path / f"{name}.csv", tmp_path / f"{name}.db")
        if value:
            direct, direct_csv = stored, (tmp_path / "direct.csv").read_bytes()
            assert staged_files == []
    assert sorted(staged_files) == sorted([*RAW_TABLES, "outcomes"])
    assert stored == direct
    assert (tmp_path / "staged.csv").read_bytes() == direct_csv
    assert list(private_tmp.iterdir()) == []


def test_an_attached_staging_file_is_deleted_once_detached_and_kept_if_the_body_fails(
    tmp_path: Path,
) -> None:
    table = StagedTable("t", ("CREATE TABLE t (n INTEGER)",), pa.table({"n": [1, 2, 3]}))
    house = sqlite3.connect(tmp_path / "house.sqlite", isolation_level=None)
    house.execute("CREATE TABLE t (n INTEGER)")
    failing = write_staged_file(tmp_path / "failing.sqlite", [table])
    with pytest.raises(RuntimeError), staging.attached(house, {"s": failing.path}):
        raise RuntimeError("the copy failed")
    assert failing.path.exists()  # the folder's cleanup removes it, not the failed body
    read = write_staged_file(tmp_path / "read.sqlite", [table])
    with staging.attached(house, {"s": read.path}):
        assert staging.copy_table(house, "s", "t") == 3
    assert not read.path.exists()
    assert house.execute("SELECT count(*) FROM t").fetchone()[0] == 3
    assert [r[1] for r in house.execute("PRAGMA database_list")] == ["main"]
    house.close()


# SQLite only: staging files.
def test_the_reconcile_command_frees_its_staging_files_before_the_exception_sync(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    staged_files: list[str],
    private_tmp: Path,
) -> None:
    import core.review

    folder, as_of = benchmark_folder
    _stage_from(monkeypatch, 0)
    left_at_sync: list[list[str]] = []
    real_sync = core.review.sync_exceptions

    def sync_noting_files(*args: Any, **kwargs: Any) -> Any:
        left_at_sync.append(sorted(p.name for p in private_tmp.rglob("*.sqlite")))
        return real_sync(*args, **kwargs)

    monkeypatch.setattr(core.review, "sync_exceptions", sync_noting_files)
    _cli_reconcile(folder, as_of, tmp_path / "out.csv", tmp_path / "db.sqlite")
    assert sorted(staged_files) == sorted([*RAW_TABLES, "outcomes"])
    assert left_at_sync == [[]]  # raw0, raw1 and outcomes deleted once copied
    assert list(private_tmp.iterdir()) == []


# SQLite only: staging files; on PostgreSQL see
# test_pipeline_incremental.test_import_day_chain_equals_a_full_run_over_the_stored_data.
def test_import_day_stages_its_day_before_reconciling_and_stores_what_direct_writes_do(
    benchmark_folder: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    private_tmp: Path,
) -> None:
    from core.db import raw
    from core.engine import incremental
    from tests.test_pipeline_incremental import IST, split_into_days

    folder, as_of = benchmark_folder
    cut = dt.datetime.fromtimestamp(as_of, tz=IST).date() - dt.timedelta(days=2)
    days = split_into_days(folder, tmp_path / "days", [cut])
    first_as_of = int(dt.datetime.combine(cut, dt.time(23, 59, 59), IST).timestamp()) - 86_400
    events: list[str] = []

    def spy(module: Any, name: str, event: str) -> None:
        real = getattr(module, name)

        def recording(*args: Any, **kwargs: Any) -> Any:
            events.append(event)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, recording)

    spy(raw, "staged_raw_tables", "staged")
    spy(incremental, "reconcile_incremental", "reconciled")
    stored = {}
    for value in (NEVER, 0):
        _stage_from(monkeypatch, value)
        path = tmp_path / f"{value}" / "db.sqlite"
        path.parent.mkdir()
        conn = _database(path)
        for day, day_as_of in zip(days, (first_as_of, as_of), strict=True):
            reconcile_day_into_db(conn, day, params=EngineParams(), as_of=day_as_of)
        conn.close()
        stored[value] = _tables_of(path)
    # Direct: the second day's incremental run. Staged: the first day (into empty tables,
    # staged inside store_dataset), then the second day staged before its run reconciles.
    assert events == ["reconciled", "staged", "staged", "reconciled"]
    assert stored[0] == stored[NEVER]
    assert stored[0]["payments"] and len(stored[0]["runs"]) == 2
    assert list(private_tmp.iterdir()) == []


# --- PostgreSQL: COPY instead of staging files (both tests are marked `postgres`). ---


def _neutral(tables: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    return {name: sorted(rows, key=repr) for name, rows in tables.items()}


def _values(conn: sqlite3.Connection, columns: dict[str, list[str]]) -> dict[str, Any]:
    """What a pipeline run leaves, by value only (no rowids, no storage classes)."""
    tables: dict[str, list[tuple[Any, ...]]] = {
        "exceptions": [
            tuple(r)
            for r in conn.execute(
                "SELECT id, entity_type, entity_id, reason_code, status, exposure_class,"
                " exposure_amount, last_run_id FROM exceptions ORDER BY id"
            )
        ],
        "audit": [tuple(r) for r in conn.execute("SELECT action, entity_id FROM audit_log")],
        "runs": [tuple(r) for r in conn.execute("SELECT id, status FROM runs")],
    }
    for table, names in columns.items():
        tables[table] = [tuple(r) for r in conn.execute(f"SELECT {', '.join(names)} FROM {table}")]
    return _neutral(tables)


@pytest.mark.postgres
def test_postgresql_copy_stores_what_sqlite_direct_binding_writes(
    benchmark_folder: tuple[Path, int], tmp_path: Path, pg_url: str
) -> None:
    folder, as_of = benchmark_folder
    lite = _database(tmp_path / "direct.sqlite")
    columns = {
        table: [str(r[1]) for r in lite.execute(f"PRAGMA table_info({table})")]
        for table in (*RAW_TABLES, "outcomes")
    }
    reconcile_folder_into_db(lite, folder, params=EngineParams(), as_of=as_of)
    pg = connect(pg_url)
    reconcile_folder_into_db(pg, folder, params=EngineParams(), as_of=as_of)
    direct, copied = _values(lite, columns), _values(pg, columns)
    assert len(copied["outcomes"]) > 1_500 and copied["exceptions"]
    for name, rows in direct.items():
        assert copied[name] == rows, name
    lite.close()
    pg.close()


@pytest.mark.postgres
def test_a_failed_copy_leaves_postgresql_as_it_was(
    benchmark_folder: tuple[Path, int], monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    from core.db.backend import PgConnection

    real = PgConnection.copy_csv  # the raw tables' bulk path (CSV blocks from Arrow)
    copied: list[str] = []

    def second_fails(self: PgConnection, table: str, columns: Any, blocks: Any) -> None:
        copied.append(table)
        if len(copied) == 2:  # the first table went in; the second breaks half-way
            blocks = iter(blocks)
            real(self, table, columns, [next(blocks)])
            raise StorageError(f"COPY into {table} failed")
        real(self, table, columns, blocks)

    monkeypatch.setattr(PgConnection, "copy_csv", second_fails)
    conn = connect(pg_url)
    dataset, report = load_dataset(benchmark_folder[0])
    with pytest.raises(StorageError, match="COPY into"):
        store_dataset(conn, dataset, source="files", location="x", content_hash=report.content_hash)
    assert len(copied) == 2
    assert not conn.in_transaction
    for table in (*RAW_TABLES, "imports"):
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
    conn.close()
