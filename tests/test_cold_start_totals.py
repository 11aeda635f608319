"""The Overview's and the close report's exception totals after a cold start equal a count
and a sum over the exceptions table, on both databases: right after the first start, and
after a later import and reconciliation (tester report of 2026-12-04, finding 1: on
PostgreSQL the start published the scratch build's `exception_totals` and the database's
own triggers added the same exceptions again)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from core import bootstrap, ingest
from core.db import connect, migrate, pg_bulk, transaction
from core.db.backend import is_postgres_url
from core.db.views import OPEN_STATUSES
from core.engine.cli import parse_as_of
from core.views.overview import overview
from tests.app_builder import bootstrap_builder, build
from tests.conftest import ROOT

REAL_MONTH = ROOT / "tests" / "fixtures" / "real_exports" / "dashboard_csv"


@pytest.fixture(autouse=True)
def _a_fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "_ready_paths", set())


@pytest.fixture
def cold(db_url: str, tmp_path: Path) -> str:
    return db_url if is_postgres_url(db_url) else str(tmp_path / "cold.sqlite")


def _open_in_table(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """Open exceptions per exposure class, counted and summed over the exceptions table."""
    marks = ", ".join("?" for _ in OPEN_STATUSES)
    rows = conn.execute(
        "SELECT exposure_class, count(*), CAST(sum(exposure_amount) AS BIGINT) FROM exceptions"
        f" WHERE status IN ({marks}) GROUP BY exposure_class",
        tuple(OPEN_STATUSES),
    ).fetchall()
    return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}


def _assert_overview_equals_table(conn: sqlite3.Connection) -> None:
    table = _open_in_table(conn)
    ov = overview(conn)
    assert ov is not None
    assert (ov.open_exceptions.count, ov.open_exceptions.paise) == (
        sum(n for n, _ in table.values()),
        sum(p for _, p in table.values()),
    )
    shown = {c: (t.count, t.paise) for c, t in ov.exposure_by_class.items() if t.count}
    assert shown == table
    # The close report's open_exceptions_by_class.csv is these totals (core.books.report).
    statuses = dict(
        conn.execute("SELECT status, count(*) FROM exceptions GROUP BY status").fetchall()
    )
    assert {s: n for s, n in ov.status_counts.items() if n} == statuses


def test_overview_totals_equal_the_exceptions_after_a_first_start_and_a_later_import(
    cold: str,
) -> None:
    result = bootstrap.ensure_ready(cold, builder=bootstrap_builder)
    assert result.status == "built"
    conn = connect(cold)
    try:
        assert _open_in_table(conn)  # the builder's open exceptions are there
        _assert_overview_equals_table(conn)
        dataset, loaded = ingest.load_dataset(REAL_MONTH)
        ingest.store_dataset(
            conn,
            dataset,
            source="files",
            location=str(REAL_MONTH),
            content_hash=loaded.content_hash,
            files=loaded.files,
            replace=True,
        )
        bootstrap.reconcile_stored(conn, as_of=parse_as_of("2026-07-31T23:59:59+05:30"))
        _assert_overview_equals_table(conn)
    finally:
        conn.close()


def test_a_published_build_holds_every_table_as_built(pg_url: str, tmp_path: Path) -> None:
    """Every table the cold start publishes holds on PostgreSQL what the scratch build held:
    as many rows, and the derived tables (kept by triggers on either database) the same rows."""
    build = connect(tmp_path / "build.sqlite")
    migrate(build)
    bootstrap_builder(build, tmp_path, lambda _f, _m: None)
    target = connect(pg_url)
    try:
        with transaction(target):
            pg_bulk.publish_sqlite(build, target)
        tables = target.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        for (table,) in tables:
            if (
                table == "schema_migrations"
                or not build.execute(f"PRAGMA table_info({table})").fetchall()
            ):
                continue  # the migrations' own, or PostgreSQL's own (razorrecon_index_rebuilds)
            built = build.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            published = target.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            assert (table, published) == (table, built)
        totals = (
            "SELECT status, exposure_class, reason_code, dated, created_day, n, exposure"
            " FROM exception_totals ORDER BY 1, 2, 3, 4, 5"
        )
        assert [tuple(r) for r in target.execute(totals)] == [
            tuple(r) for r in build.execute(totals)
        ]
        ledger = "SELECT id, run_id, source_version, changed FROM books_ledger ORDER BY id"
        assert [tuple(r) for r in target.execute(ledger)] == [
            tuple(r) for r in build.execute(ledger)
        ]
    finally:
        target.close()
        build.close()


def test_audit_verify_names_drifted_totals_and_recount_repairs_them(db_url: str) -> None:
    """A summary table that drifted from the exceptions (what the first start's publish left
    on PostgreSQL) fails `audit verify`, naming the key; `exceptions recount` counts it again
    (audited) and verify holds; a second recount writes nothing."""
    conn = connect(db_url)
    try:
        build(conn, payments=60)
        with transaction(conn):  # the double count a publish made: every total twice
            conn.execute("UPDATE exception_totals SET n = 2 * n, exposure = 2 * exposure")
    finally:
        conn.close()
    env = {**os.environ, "RAZORRECON_ANCHOR_DIR": str(Path(db_url).parent)}
    if is_postgres_url(db_url):
        env["RAZORRECON_ANCHOR_DIR"] = tempfile.mkdtemp(prefix="anchors-")

    def core(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "core", *args, "--db", db_url],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )

    broken = core("audit", "verify")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "stored exception totals" in broken.stdout and "more than the table" in broken.stdout
    assert "exceptions recount" in broken.stdout
    repaired = core("exceptions", "recount")
    assert repaired.returncode == 0 and "counted again" in repaired.stdout, repaired.stderr
    assert core("audit", "verify").returncode == 0
    again = core("exceptions", "recount")
    assert again.returncode == 0 and "nothing written" in again.stdout
    conn = connect(db_url)
    try:
        _assert_overview_equals_table(conn)
        actions = [
            r[0]
            for r in conn.execute(
                "SELECT action FROM audit_log WHERE entity_type = ?", ("exception_totals",)
            )
        ]
        assert actions == ["exception_totals.recounted"]
    finally:
        conn.close()
