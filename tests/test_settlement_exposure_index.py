"""The Settlement page's picker (`core.views.settlement.settlement_choices`): settlements
ranked by their open exceptions' exposure, that sum read from migration 0102's covering
index on SQLite, on both databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from core.benchmark import generate
from core.db.backend import is_postgres
from core.engine import EngineParams
from core.pipeline import reconcile_folder_into_db
from core.review.actions import OPEN_STATUSES
from core.views.settlement import settlement_choices


def test_settlement_choices_rank_by_open_exposure_read_from_the_covering_index(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "ds", payments=1500, seed=31)
    reconcile_folder_into_db(db_conn, tmp_path / "ds", params=EngineParams(), as_of=generated.as_of)
    exposure: dict[str, int] = {}
    for settlement_id, status, amount in db_conn.execute(
        "SELECT settlement_id, status, exposure_amount FROM exceptions"
    ):
        if status in OPEN_STATUSES and settlement_id is not None:
            exposure[str(settlement_id)] = exposure.get(str(settlement_id), 0) + int(amount)
    choices = settlement_choices(db_conn, "", limit=1000)
    settlements = [str(r[0]) for r in db_conn.execute("SELECT id FROM settlements")]
    assert sorted(c["id"] for c in choices) == sorted(settlements)
    assert {c["id"]: int(c["exposure"]) for c in choices} == {
        s: exposure.get(s, 0) for s in settlements
    }
    ranked = [int(c["exposure"]) for c in choices]
    assert ranked == sorted(ranked, reverse=True) and ranked[0] > 0
    if not is_postgres(db_conn):
        plan = " ".join(
            str(r[3])
            for r in db_conn.execute(
                "EXPLAIN QUERY PLAN SELECT settlement_id, sum(exposure_amount) FROM exceptions"
                " WHERE status IN ('OPEN', 'ASSIGNED') GROUP BY settlement_id"
            )
        )
        assert "COVERING INDEX exceptions_open_settlement" in plan
