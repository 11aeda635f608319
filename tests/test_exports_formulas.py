"""Every CSV export neutralises spreadsheet formulas in text cells; numbers stay numbers."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pandas as pd

from core import audit
from core.db.views import QueueFilter
from core.engine import EngineParams, reconcile, write_results_csv
from core.ingest import load_dataset
from core.review import assign, sync_exceptions
from core.views.queue import queue, queue_csv
from tests import conftest
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import ts
from tests.review_support import Finding, add_people, write_run

# This module's `conn` tests run on SQLite and on PostgreSQL (tests/conftest.py).
conn = conftest.db_conn

DANGEROUS = ['=HYPERLINK("http://evil/x")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"]


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


# People are emails (core.access); these begin as spreadsheet formulas do, in characters
# an address may hold (no brackets, parentheses or quotes other than ': core.access).
ACTOR = "=cmd|'/c@evil.in"
ASSIGNEES = ["=hyperlink|x@evil.in", "+1+1@evil.in", "-2+3@evil.in"]


def _planted(conn: sqlite3.Connection) -> None:
    add_people(conn, {ACTOR: "admin", **dict.fromkeys(ASSIGNEES, "reviewer")})
    findings = [Finding(value, exposure_amount=10_000 + n) for n, value in enumerate(DANGEROUS)]
    sync_exceptions(conn, write_run(conn, findings))
    for n, row in enumerate(queue(conn, QueueFilter(), page_size=50).items):
        assignee = ASSIGNEES[n % len(ASSIGNEES)]
        assign(conn, row.id, actor=ACTOR, assignee=assignee, request_id=f"r{n}")


def test_queue_csv_prefixes_formula_cells_and_keeps_paise_numbers(conn: sqlite3.Connection) -> None:
    _planted(conn)
    rows = _rows(queue_csv(conn, QueueFilter(statuses=())).decode("utf-8"))
    header, body = rows[0], rows[1:]
    ids = {r[header.index("entity_id")] for r in body}
    assert ids == {"'" + v for v in DANGEROUS}
    assert {r[header.index("assignee")] for r in body} == {"'" + a for a in ASSIGNEES}
    for r in body:
        for column in ("exposure_amount", "difference", "version"):
            value = r[header.index(column)]
            assert not value.startswith("'") and int(value) == int(value)
    assert any(int(r[header.index("difference")]) < 0 for r in body)


def test_audit_csv_prefixes_formula_cells_and_jsonl_stays_exact(conn: sqlite3.Connection) -> None:
    _planted(conn)
    stream = io.StringIO()
    audit.write_export(conn, stream, "csv", audit.AuditFilter(action="exception.assigned"))
    rows = _rows(stream.getvalue())
    header, body = rows[0], [r for r in rows[1:] if r[0] != "anchor"]
    assert len(body) == len(DANGEROUS)
    assert {r[header.index("actor")] for r in body} == {"'" + ACTOR}
    assert {r[header.index("entity_id")] for r in body} <= {str(i) for i in range(1, 99)}
    assert all(int(r[header.index("seq")]) > 0 for r in body)
    lines = io.StringIO()
    audit.write_export(conn, lines, "jsonl", audit.AuditFilter(action="exception.assigned"))
    assert '"actor":"=cmd|' in lines.getvalue()  # JSON lines keep values exactly


def test_results_csv_prefixes_formula_cells_and_keeps_amounts(tmp_path: Path) -> None:
    dataset, _ = load_dataset(SPEC_EXAMPLE / "dataset")
    outcomes = reconcile(dataset, EngineParams(), ts("2026-06-30T23:59:59+05:30"))
    outcomes.loc[0, "entity_id"] = '=HYPERLINK("http://evil/x")'
    outcomes.loc[1, "reason_code"] = "@SUM(A1)"
    outcomes.loc[0, "difference"] = -500
    out = tmp_path / "results.csv"
    write_results_csv(outcomes, out)
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert got.loc[0, "entity_id"] == '\'=HYPERLINK("http://evil/x")'
    assert got.loc[1, "reason_code"] == "'@SUM(A1)"
    assert got.loc[0, "difference"] == "-500"
    assert got.loc[2, "entity_id"] == outcomes.loc[2, "entity_id"]
