"""The Books ledger carried forward by `import-day` (docs/engine.md, "The Books ledger after
import-day"): after a chain of day folders, with rows arriving late and corrections (a wrong
version first, the right one a day later), the stored ledger equals a full derivation from
scratch row for row, on both databases, without the whole ledger ever being derived again;
the Books page renders it as current; a change behind the engine's back still leaves it
stale, and the next day does not carry a stale ledger forward."""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import core.books.carry
import core.books.ledger
import core.pipeline
from core.benchmark import generate
from core.books.ledger import derive_ledger, ledger_status, rebuild_ledger
from core.db import books_ledger as sql
from core.db import connect
from core.db.runs import get_run
from core.engine import EngineParams
from core.engine.cli import parse_as_of
from core.errors import RefusedError
from core.pipeline import reconcile_day_into_db
from tests.guard_support import guards_off
from tests.test_books_ledger import _assert_same_books
from tests.test_pipeline_incremental import split_into_days

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
PARAMS = EngineParams()
# Tables whose rows are sent late or corrected (key column, the column a wrong version
# changes, and its wrong value: None takes another row's value).
CORRECTED = {
    "payments.csv": ("status", "failed"),
    "refunds.csv": ("status", "pending"),
    "settlement_recon.csv": ("settlement_id", None),
}


def _disturb(folders: list[Path], seed: int) -> None:
    """Rows of each day sent a day late; a share of them sent first with a wrong value and
    corrected the next day (same key, the right row)."""
    rng = np.random.default_rng(seed)
    for i, folder in enumerate(folders[:-1]):
        later = folders[i + 1]
        for path in sorted(folder.glob("*.csv")):
            if path.name == "bank_statement.csv":
                continue
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            if len(frame) == 0:
                continue
            late = rng.random(len(frame)) < 0.15
            wrong = ~late & (rng.random(len(frame)) < 0.08) & (path.name in CORRECTED)
            moved = [frame[late]]
            stays = frame[~late].copy()
            if wrong.any():
                column, value = CORRECTED[path.name]
                right = frame[wrong]
                mask = wrong[~late]
                if value is None:
                    others = frame[column][frame[column] != ""].to_numpy()
                    picked = others[rng.integers(0, len(others), int(mask.sum()))]
                    stays.loc[mask, column] = picked[::-1]
                else:
                    stays.loc[mask, column] = value
                moved.append(right)
            stays.to_csv(path, index=False)
            target = later / path.name
            there = (
                pd.read_csv(target, dtype=str, keep_default_na=False)
                if target.exists()
                else frame.iloc[0:0]
            )
            pd.concat([*moved, there], ignore_index=True).to_csv(target, index=False)


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[int]]:
    root = tmp_path_factory.mktemp("books-import-day")
    generated = generate(root / "full", payments=400, seed=31)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=n) for n in (4, 3, 2, 1)]
    folders = split_into_days(root / "full", root / "days", cuts)
    _disturb(folders, seed=7)
    as_ofs = [parse_as_of(f"{cut - dt.timedelta(days=1)}T23:59:59+05:30") for cut in cuts]
    return folders, [*as_ofs, int(generated.as_of)]


def _assert_equals_a_full_derivation(conn: sqlite3.Connection) -> None:
    """The stored lines and counts against a derivation from the raw tables, row for row."""
    derived = derive_ledger(conn)
    days = sql.read_days(conn).sort_values(["day", "line"], ignore_index=True)
    mine = derived.ledger.days.assign(day=[d.isoformat() for d in derived.ledger.days["day"]])
    pd.testing.assert_frame_equal(
        days.astype({"amount": np.int64, "events": np.int64}),
        mine.astype({"day": object, "line": object}).reset_index(drop=True),
        check_dtype=False,
    )
    detail = sql.read_unexplained(conn, None)
    detail = detail.sort_values(["day", "entity_type", "entity_id"], ignore_index=True)
    theirs = derived.ledger.unexplained
    theirs = theirs.assign(day=[d.isoformat() for d in theirs["day"]])
    pd.testing.assert_frame_equal(
        detail.astype({"amount": np.int64}),
        theirs.sort_values(["day", "entity_type", "entity_id"], ignore_index=True),
        check_dtype=False,
    )
    state = sql.ledger_state(conn)
    assert state is not None and state["events"] == derived.events


def _unflag_some_exceptions(conn: sqlite3.Connection, run_id: int) -> None:
    """Some of the run's exceptions taken back in the database (not in the run's snapshot,
    which import-day carries forward), past the refusal of 0113 (an owner's hand edit), and
    the ledger derived again (as an admin does): their differences are now `unexplained`,
    and the next day's run flags them again, so the day's change moves them between the
    two lines."""
    with guards_off(conn, "outcomes") as editor, editor:
        editor.execute(
            "UPDATE outcomes SET status = 'PENDING' WHERE run_id = ? AND status = 'EXCEPTION'"
            " AND entity_type IN ('payment', 'refund', 'settlement')"
            " AND entity_id IN (SELECT entity_id FROM outcomes WHERE run_id = ?"
            " AND status = 'EXCEPTION' ORDER BY entity_id LIMIT 12)",
            (run_id, run_id),
        )
    assert rebuild_ledger(conn).current
    assert len(sql.read_unexplained(conn, None)) > 0


@pytest.fixture
def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every derivation of the whole ledger after a run (core.pipeline calls it)."""
    calls: list[int] = []
    real = core.books.ledger.rebuild_after_run

    def counting(*args: Any, **kwargs: Any) -> float:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(core.books.ledger, "rebuild_after_run", counting)
    return calls


def test_a_chain_of_days_with_late_rows_and_corrections_keeps_the_ledger_a_full_derivation(
    chain: tuple[list[Path], list[int]], db_url: str, rebuilds: list[int]
) -> None:
    folders, as_ofs = chain
    conn = connect(db_url)
    try:
        unexplained: list[int] = []
        for n, (folder, as_of) in enumerate(zip(folders, as_ofs, strict=True)):
            done = reconcile_day_into_db(conn, folder, params=PARAMS, as_of=as_of)
            status = ledger_status(conn)
            assert status.current, status.reason
            assert status.run_id == done.run.run_id
            if n == 0:
                assert done.kind == "full" and rebuilds == [1]
                _unflag_some_exceptions(conn, done.run.run_id)
                unexplained.append(len(sql.read_unexplained(conn, None)))
                continue
            assert done.kind == "incremental"
            assert rebuilds == [1], "the day derived the whole ledger again"
            run = get_run(conn, done.run.run_id)
            assert run is not None and run.timings is not None
            assert "books_ledger_s" in run.timings
            _assert_equals_a_full_derivation(conn)
            unexplained.append(len(sql.read_unexplained(conn, None)))
        # The drill-down lines were carried too: the day flagged those differences again.
        assert unexplained[0] > 0 and unexplained[1] < unexplained[0]
        _assert_same_books(conn)
    finally:
        conn.close()


def _insert_a_payment_without_an_import(conn: sqlite3.Connection) -> None:
    """A copy of a stored payment under a new id, written straight into the table."""
    row = conn.execute("SELECT * FROM payments ORDER BY id LIMIT 1")
    names = [d[0] for d in row.description]
    kept = [i for i, name in enumerate(names) if name != "row_order"]  # PostgreSQL identity
    first = row.fetchone()
    columns = [names[i] for i in kept]
    values = [first[i] for i in kept]
    values[columns.index("id")] = "pay_behind_the_back"
    marks = ", ".join("?" for _ in columns)
    with conn:
        conn.execute(f"INSERT INTO payments ({', '.join(columns)}) VALUES ({marks})", values)


def _update_a_payment(conn: sqlite3.Connection) -> None:
    with conn:
        conn.execute(
            "UPDATE payments SET amount = amount + 500"
            " WHERE id = (SELECT min(id) FROM payments WHERE status = 'captured')"
        )


def _import_a_sync(conn: sqlite3.Connection) -> None:
    from core.dataset import Dataset
    from core.ingest import store_dataset

    store_dataset(conn, Dataset(), source="razorpay_api", location="sync", content_hash="s1")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_update_a_payment, "Raw data were changed"),
        (_insert_a_payment_without_an_import, ""),
        (_import_a_sync, ""),  # named as an import or a raw change, by backend
    ],
)
def test_a_change_behind_the_engines_back_is_never_carried_forward_by_a_day(
    chain: tuple[list[Path], list[int]],
    db_url: str,
    rebuilds: list[int],
    change: Any,
    reason: str,
) -> None:
    folders, as_ofs = chain
    conn = connect(db_url)
    try:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=as_ofs[0])
        assert ledger_status(conn).current
        change(conn)
        assert not ledger_status(conn).current
        if change is _insert_a_payment_without_an_import:  # a row count no entry recorded:
            with pytest.raises(RefusedError, match="payments"):  # refused (core.audit.rawcheck)
                reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=as_ofs[1])
            assert not ledger_status(conn).current
            return
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=as_ofs[1])
        status = ledger_status(conn)
        # Only an import makes import-day consider a full run (its own decision).
        assert day.kind == "incremental" or change is _import_a_sync
        if day.kind == "full":  # import-day reconciled every entity: the ledger derived whole
            assert rebuilds == [1, 1]
            assert status.current and status.run_id == day.run.run_id
        else:
            assert day.kind == "incremental" and rebuilds == [1]
            assert not status.current and status.run_id != day.run.run_id
            assert reason in status.reason
            # An admin derives it again: current.
            assert rebuild_ledger(conn).current
        _assert_equals_a_full_derivation(conn)
    finally:
        conn.close()


def test_a_raw_change_after_a_carried_day_marks_the_ledger_stale(
    chain: tuple[list[Path], list[int]], db_url: str
) -> None:
    folders, as_ofs = chain
    conn = connect(db_url)
    try:
        for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
            reconcile_day_into_db(conn, folder, params=PARAMS, as_of=as_of)
        assert ledger_status(conn).current
        _update_a_payment(conn)
        status = ledger_status(conn)
        assert not status.current and "changed since" in status.reason
    finally:
        conn.close()


@pytest.mark.usefixtures("streamlit_navigation_v2")
def test_books_renders_the_carried_ledger_as_current_without_reading_the_raw_tables(
    chain: tuple[list[Path], list[int]], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.books_app_support import count_dataset_reads, open_books
    from tests.review_support import add_people

    folders, as_ofs = chain
    conn = connect(db_url)
    try:
        for folder, as_of in zip(folders[:3], as_ofs[:3], strict=True):
            day = reconcile_day_into_db(conn, folder, params=PARAMS, as_of=as_of)
        assert day.kind == "incremental"
        add_people(conn)
    finally:
        conn.close()
    monkeypatch.setenv("DATABASE_URL", db_url)
    count_dataset_reads(monkeypatch, refuse=True)
    at = open_books("viewer@example.com")
    assert not at.warning
    assert {m.label for m in at.metric} == {"Opening", "Closing", "Open items", "Residual"}


def test_a_day_finds_the_ledger_change_on_a_thread_and_uses_it_only_for_the_flags_it_reads(
    chain: tuple[list[Path], list[int]], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folders, as_ofs = chain
    threads: list[str] = []
    real_change = core.books.carry.ledger_change
    real_flags = core.pipeline._engine_flags

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real_change(*args, **kwargs)

    def with_the_base_runs_flags(*args: Any, **kwargs: Any) -> Any:
        old, _ = real_flags(*args, **kwargs)
        return old, old

    monkeypatch.setattr(core.books.carry, "ledger_change", recording)
    conn = connect(db_url)
    try:
        for n, (folder, as_of) in enumerate(zip(folders[:3], as_ofs[:3], strict=True)):
            if n == 2:  # a change found for other flags than the run stored: not used
                monkeypatch.setattr(core.pipeline, "_engine_flags", with_the_base_runs_flags)
            done = reconcile_day_into_db(conn, folder, params=PARAMS, as_of=as_of)
            assert ledger_status(conn).current
            if n > 0:
                assert done.kind == "incremental"
                _assert_equals_a_full_derivation(conn)
        assert threads == ["ledger_0", "ledger_0", "MainThread"]
    finally:
        conn.close()
