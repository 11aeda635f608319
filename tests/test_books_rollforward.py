"""The Razorpay receivable's roll-forward (core.books, docs/books.md): it closes to the open
items on the spec's example and on the benchmark, and a raw row taken out of the store
behind the engine's back shows up as exactly its amount in the residual."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.books import (
    FLOW_LINES,
    daily_balances,
    exception_entities,
    ledger_events,
    month_rollforward,
)
from core.books.rollforward import text_isin
from core.books.store import stored_events
from core.db import connect
from core.engine import EngineParams, reconcile
from core.pipeline import load_folder, reconcile_folder_into_db
from tests.conftest import SPEC_EXAMPLE
from tests.engine_support import ts

AS_OF = ts("2026-06-30T23:59:59+05:30")


def _daily(folder: Path) -> pd.DataFrame:
    dataset = load_folder(folder).dataset
    outcomes = reconcile(dataset, EngineParams(), AS_OF)
    return daily_balances(ledger_events(dataset, exception_entities(outcomes)))


def test_spec_example_closes_to_open_items_every_day_with_zero_residual() -> None:
    days = _daily(SPEC_EXAMPLE / "dataset")
    assert len(days) > 10
    assert (days["residual"] == 0).all()
    assert (days["closing"] == days["open_items"]).all()


def test_benchmark_closes_to_open_items_every_day_with_zero_residual(
    benchmark_5k: Path,
) -> None:
    days = _daily(benchmark_5k)
    assert (days["residual"] == 0).all()
    # the benchmark has every kind of movement the roll-forward names
    moved = {line for line in FLOW_LINES if (days[line] != 0).any()}
    assert {"captured", "fees", "refunds", "dispute_debits", "settlements"} <= moved


def test_each_day_opens_with_the_previous_days_closing(benchmark_5k: Path) -> None:
    days = _daily(benchmark_5k)
    assert (days["opening"].iloc[1:].to_numpy() == days["closing"].iloc[:-1].to_numpy()).all()
    movement = days[list(FLOW_LINES)].sum(axis=1)
    assert (days["opening"] + movement == days["closing"]).all()


def test_months_chain_and_month_closing_is_the_last_days_closing(benchmark_5k: Path) -> None:
    dataset = load_folder(benchmark_5k).dataset
    outcomes = reconcile(dataset, EngineParams(), AS_OF)
    events = ledger_events(dataset, exception_entities(outcomes))
    may = month_rollforward(events, "2026-05")
    june = month_rollforward(events, "2026-06")
    assert june.opening == may.closing
    assert may.opening + sum(a for _, a in may.movements) == may.closing
    assert june.closing == sum(a for _, a in june.open_items)
    assert june.residual == 0 and june.drilldown == ()
    days = daily_balances(events)
    assert june.closing == int(days["closing"].iloc[-1])


def test_without_the_runs_exceptions_every_difference_is_unexplained() -> None:
    dataset = load_folder(SPEC_EXAMPLE / "dataset").dataset
    month = month_rollforward(ledger_events(dataset), "2026-06")
    assert month.residual != 0
    assert sum(a for *_, a in month.drilldown) == month.residual


@pytest.fixture
def stored_benchmark(benchmark_5k: Path, db_url: str) -> str:
    conn = connect(db_url)
    reconcile_folder_into_db(conn, benchmark_5k, params=EngineParams(), as_of=AS_OF)
    conn.close()
    return db_url


def _settled_payment_row(conn: sqlite3.Connection) -> tuple[str, int, str, str]:
    row = conn.execute(
        "SELECT r.row_key, r.credit, r.settlement_id, r.settled_at FROM recon_rows r"
        " JOIN settlements s ON s.id = r.settlement_id"
        " JOIN outcomes o ON o.entity_type = 'settlement' AND o.entity_id = s.id"
        " WHERE r.type = 'payment' AND s.status = 'processed' AND o.status = 'MATCHED'"
        " ORDER BY r.row_key LIMIT 1"
    ).fetchone()
    return str(row[0]), int(row[1]), str(row[2]), str(row[3])


def test_a_recon_row_removed_behind_the_engines_back_is_exactly_the_residual(
    stored_benchmark: str,
) -> None:
    conn = connect(stored_benchmark)
    try:
        before = month_rollforward(stored_events(conn), "2026-06")
        assert before.residual == 0
        key, credit, settlement, _ = _settled_payment_row(conn)
        with conn:
            conn.execute("DELETE FROM recon_rows WHERE row_key = ?", (key,))
        after = month_rollforward(stored_events(conn), "2026-06")
    finally:
        conn.close()
    assert credit > 0
    assert after.residual == -credit
    assert [(t, i, a) for _, t, i, a in after.drilldown] == [("settlement", settlement, -credit)]


def test_a_refund_removed_behind_the_engines_back_is_exactly_the_residual(
    stored_benchmark: str,
) -> None:
    conn = connect(stored_benchmark)
    try:
        row = conn.execute(
            "SELECT f.id, r.debit FROM refunds f JOIN recon_rows r ON r.entity_id = f.id"
            " JOIN outcomes o ON o.entity_type = 'refund' AND o.entity_id = f.id"
            " JOIN settlements s ON s.id = r.settlement_id"
            " WHERE o.status = 'MATCHED' AND s.status = 'processed' ORDER BY f.id LIMIT 1"
        ).fetchone()
        with conn:
            conn.execute("DELETE FROM refunds WHERE id = ?", (row[0],))
        after = month_rollforward(stored_events(conn), "2026-06")
    finally:
        conn.close()
    # its settled recon row now debits the balance for no refund the books know
    assert after.residual == int(row[1])
    assert [(t, i, a) for _, t, i, a in after.drilldown] == [("recon_row", row[0], int(row[1]))]


def test_rollforward_cli_prints_json_that_ties_out(
    stored_benchmark: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from core.__main__ import main

    assert main(["rollforward", "--db", str(stored_benchmark), "--month", "2026-06", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["residual"] == 0
    assert data["opening"] + sum(data["movements"].values()) == data["closing"]
    assert data["closing"] == sum(data["open_items"].values())


def test_rollforward_cli_refuses_a_month_that_is_not_yyyy_mm(stored_benchmark: str) -> None:
    from core.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["rollforward", "--db", str(stored_benchmark), "--month", "2026-13"])
    assert exc.value.code == 2


def test_journal_cli_writes_tally_xml_with_configured_ledger_names(
    stored_benchmark: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from core.__main__ import main

    names = tmp_path / "ledgers.json"
    names.write_text(json.dumps({"bank": "HDFC Current A/c"}), encoding="utf-8")
    args = ["journal", "--db", str(stored_benchmark), "--month", "2026-06"]
    assert main([*args, "--format", "tally", "--ledgers", str(names)]) == 0
    xml = capsys.readouterr().out
    assert xml.startswith("<ENVELOPE>") and "<LEDGERNAME>HDFC Current A/c</LEDGERNAME>" in xml
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("voucher,date,kind,reference,ledger")


_KEYS = st.one_of(st.none(), st.sampled_from(["pay_1", "pay_2", "rfnd_1", "", " pay_1"]))


@given(values=st.lists(_KEYS, max_size=30), candidates=st.lists(_KEYS, max_size=10))
def test_the_arrow_isin_answers_what_pandas_isin_answers(
    values: list[str | None], candidates: list[str | None]
) -> None:
    """The roll-forward's text membership test (Arrow's is_in) against pandas' own, missing
    values included, for candidates given as a Series, an Index and (no missing) a set."""
    series = pd.Series(values, dtype=object).astype(str)
    pool = pd.Series(candidates, dtype=object).astype(str)
    expected = series.isin(pool).tolist()
    assert text_isin(series, pool).tolist() == expected
    assert text_isin(series, pd.Index(pool)).tolist() == expected
    named = {c for c in candidates if c is not None}
    assert text_isin(series, named).tolist() == series.isin(named).tolist()


def test_the_drilldown_keeps_the_rows_of_entities_whose_differences_do_not_cancel() -> None:
    day = pd.Timestamp("2026-06-10").date()
    events = pd.DataFrame(
        {
            "ts": [1, 2, 3, 4, 5],
            "day": [day] * 5,
            "line": ["unexplained"] * 5,
            "entity_type": ["payment", "payment", "payment", None, "refund"],
            "entity_id": ["pay_1", "pay_1", "pay_2", "pay_3", "rfnd_1"],
            "amount": [500, -500, 700, 900, -300],
        }
    )
    drilldown = month_rollforward(events, "2026-06").drilldown
    # pay_1 cancels out; a row naming no entity type belongs to no entity.
    assert drilldown == (
        ("2026-06-10", "payment", "pay_2", 700),
        ("2026-06-10", "refund", "rfnd_1", -300),
    )
