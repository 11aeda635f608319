"""The investigator's evidence of a dispute or a transfer (`core.db.investigate`:
`recon_rows_for_dispute`, `transfer_reversal_rows`): every recon row naming it, found through
migration 0107's partial indexes instead of by reading every recon row; on both databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core.benchmark import generate
from core.db import investigate as db
from core.db.backend import is_postgres
from core.engine import EngineParams
from core.pipeline import reconcile_folder_into_db
from tests.conftest import postgres_index_definitions


def _names_it_as_transfer_reversal(row: sqlite3.Row, transfer_id: str) -> bool:
    return (row["transfer_id"] == transfer_id and row["type"] != "transfer") or (
        row["type"] == "reversal" and row["entity_id"] == transfer_id and not row["transfer_id"]
    )


def test_dispute_and_transfer_evidence_finds_every_row_naming_them_through_an_index(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "ds", payments=1500, seed=31)
    reconcile_folder_into_db(db_conn, tmp_path / "ds", params=EngineParams(), as_of=generated.as_of)
    recon = db_conn.execute(
        "SELECT row_key, type, entity_id, dispute_id, transfer_id FROM recon_rows"
    ).fetchall()
    exceptions = db_conn.execute("SELECT entity_type, entity_id FROM exceptions").fetchall()
    disputes = sorted({str(e[1]) for e in exceptions if e[0] == "dispute"})
    transfers = sorted({str(e[1]) for e in exceptions if e[0] == "transfer"})
    assert disputes and transfers

    statements: list[str] = []
    if not is_postgres(db_conn):
        db_conn.set_trace_callback(statements.append)  # the statements as run, values bound
    found = 0
    for dispute_id in disputes:
        rows = db.recon_rows_for_dispute(db_conn, dispute_id)
        assert sorted(r["row_key"] for r in rows) == sorted(
            r["row_key"] for r in recon if r["dispute_id"] == dispute_id
        )
        found += len(rows)
    for transfer_id in transfers:
        rows = db.transfer_reversal_rows(db_conn, transfer_id)
        assert sorted(r["row_key"] for r in rows) == sorted(
            r["row_key"] for r in recon if _names_it_as_transfer_reversal(r, transfer_id)
        )
        found += len(rows)
    assert found > 0  # rows were there to find, not only empty answers

    if is_postgres(db_conn):
        partial = postgres_index_definitions(db_conn, "recon_rows")
        assert "WHERE (dispute_id IS NOT NULL)" in partial["recon_rows_dispute"]
        assert "WHERE (transfer_id IS NOT NULL)" in partial["recon_rows_transfer"]
        return
    db_conn.set_trace_callback(None)
    plans = [
        " ".join(str(r[3]) for r in db_conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
        for statement in statements
        if "FROM recon_rows" in statement
    ]
    assert len(plans) == len(disputes) + len(transfers)
    for plan in plans:
        assert "SCAN recon_rows" not in plan, plan
        assert "recon_rows_dispute" in plan or "recon_rows_transfer" in plan, plan


def test_the_evidence_benchmark_times_one_exception_of_every_kind(tmp_path: Path) -> None:
    from benchmarks.evidence import evidence_table, measure_evidence
    from core.db import connect, migrate

    generated = generate(tmp_path / "ds", payments=1500, seed=31)
    conn = connect(tmp_path / "bench.sqlite")
    migrate(conn)
    reconcile_folder_into_db(conn, tmp_path / "ds", params=EngineParams(), as_of=generated.as_of)
    kinds = {
        (str(r[0]), str(r[1])): int(r[2])
        for r in conn.execute(
            "SELECT entity_type, reason_code, min(id) FROM exceptions GROUP BY 1, 2"
        )
    }
    conn.close()
    rows = measure_evidence(tmp_path / "bench.sqlite", repeats=2)
    assert {(r["entity_type"], r["reason_code"]): r["exception_id"] for r in rows} == kinds
    assert all(r["sections"] > 1 for r in rows)  # the exception and what its tools read
    assert evidence_table(rows).count("\n") == len(rows) + 1
