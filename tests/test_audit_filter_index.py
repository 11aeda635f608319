"""The Audit page's Actor and Action filters (`core.db.audit.distinct_values`): the distinct
values of the trail, read from migration 0103's indexes on SQLite, on both databases."""

from __future__ import annotations

import sqlite3

import pytest

from core.db import audit
from core.db.backend import is_postgres
from core.engine import EngineParams
from core.pipeline import reconcile_folder_into_db
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import ts


@pytest.mark.parametrize("column", ["actor", "action", "entity_type"])
def test_the_audit_filters_list_every_distinct_value_read_from_an_index(
    db_conn: sqlite3.Connection, column: str
) -> None:
    reconcile_folder_into_db(
        db_conn,
        SPEC_EXAMPLE / "dataset",
        params=EngineParams(),
        as_of=ts("2026-06-30T23:59:59+05:30"),
    )
    stored = [str(r[0]) for r in db_conn.execute(f"SELECT {column} FROM audit_log")]
    assert len(stored) > len(set(stored)) > 0  # repeated values, so DISTINCT has work to do
    assert audit.distinct_values(db_conn, column) == sorted(set(stored))
    if not is_postgres(db_conn):
        plan = " ".join(
            str(r[3])
            for r in db_conn.execute(
                f"EXPLAIN QUERY PLAN SELECT DISTINCT {column} FROM audit_log ORDER BY 1"
            )
        )
        assert "COVERING INDEX" in plan, plan
