"""The Overview's run summary stored from the frames by the Data page's Reconcile
(`core.bootstrap.reconcile_stored`) and by the streamed build (`reconcile --stream --db`,
its parts added up window by window): the very summary `compute_run_summary` gives from the
database after the run, under the database's data version, on both databases; computed in
SQL as before when an import came in during the run."""

from __future__ import annotations

import collections
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

import core.ingest.stream
import core.review
import core.streamed
import core.views.runs
from core.benchmark import generate
from core.bootstrap import reconcile_stored
from core.db import open_database
from core.db import views as db
from core.db.runs import get_run, read_outcome_frame
from core.engine import EngineParams
from core.streamed import stream_folder_into_db
from core.views.common import Total
from core.views.runs import PendingLine, compute_run_summary
from core.views.summary_ahead import SummaryAhead, combine, summary_ahead
from tests.test_pipeline_incremental import _import_plainly, split_into_days
from tests.test_run_summary_stored import _payload, _stored_is_a_fresh_computation

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))


class _Counted:
    """compute_run_summary, counting its calls (the SQL summary the frames replace)."""

    def __init__(self) -> None:
        self.calls = 0
        self.real = core.views.runs.compute_run_summary

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.real(*args)


def _day_folders(root: Path, seed: int) -> tuple[list[Path], int]:
    generated = generate(root / "full", payments=400, seed=seed)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=n) for n in (3, 1)]
    return split_into_days(root / "full", root / "days", cuts), generated.as_of


def _importing_before_the_sync(db_url: str, folder: Path) -> Any:
    """core.review.sync_exceptions, with another connection importing `folder` just before
    it runs (a webhook's import landing while the run is stored)."""
    real = core.review.sync_exceptions

    def another_import_first(*args: Any, **kwargs: Any) -> Any:
        with open_database(db_url) as other:
            _import_plainly(other, folder)
        return real(*args, **kwargs)

    return another_import_first


@pytest.mark.parametrize("seed", [5, 17, 23])
def test_the_data_pages_reconcile_stores_the_summary_its_frames_give(
    seed: int, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Imports, then Reconcile; more imports, Reconcile again: each run's summary is stored
    from the run's frames (no SQL summary), byte for byte a fresh computation's."""
    folders, as_of = _day_folders(tmp_path, seed)
    with open_database(db_url) as conn:
        for batch in (folders[:2], folders[2:]):
            for folder in batch:
                _import_plainly(conn, folder)
            counted = _Counted()
            with monkeypatch.context() as patch:
                patch.setattr(core.views.runs, "compute_run_summary", counted)
                run_id = reconcile_stored(conn, as_of=as_of)
            assert counted.calls == 0, "the summary was computed in SQL"
            run = get_run(conn, run_id)
            assert run is not None and run.timings is not None
            assert "run_summary_s" in run.timings
            _stored_is_a_fresh_computation(db_url, run_id)


def test_the_data_pages_reconcile_computes_the_summary_when_an_import_lands_during_it(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A webhook's import stored while the run syncs the queue: the frames' summary is not
    stored (the tables hold rows it did not count); the SQL summary is, as before."""
    folders, as_of = _day_folders(tmp_path, 31)
    another_import_first = _importing_before_the_sync(db_url, folders[2])
    with open_database(db_url) as conn:
        for folder in folders[:2]:
            _import_plainly(conn, folder)
        counted = _Counted()
        with monkeypatch.context() as patch:
            patch.setattr(core.review, "sync_exceptions", another_import_first)
            patch.setattr(core.views.runs, "compute_run_summary", counted)
            run_id = reconcile_stored(conn, as_of=as_of)
        run = get_run(conn, run_id)
        assert run is not None and run.timings is not None
        assert "run_summary_s" not in run.timings
        assert counted.calls == 1
    _stored_is_a_fresh_computation(db_url, run_id)


@pytest.mark.parametrize(("seed", "days_per_window"), [(19, 2), (41, 3), (7, 1)])
def test_a_streamed_build_stores_the_summary_added_up_window_by_window(
    seed: int, days_per_window: int, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many windows, a settlement id named by payments of more than one of them (here one
    no settlement row has: a stored settlement's rows share one window, its component):
    the parts added up are the run's frame summarised whole, and the stored summary is the
    one `compute_run_summary` gives from the database after the build."""
    generated = generate(tmp_path / "ds", payments=800, seed=seed)
    parts: list[SummaryAhead] = []

    def kept(given: Any) -> SummaryAhead:
        parts.extend(given)
        return combine(parts)

    counted = _Counted()
    monkeypatch.setattr(core.streamed, "combine", kept)
    monkeypatch.setattr(core.views.runs, "compute_run_summary", counted)
    with open_database(db_url) as conn:
        built = stream_folder_into_db(
            conn,
            tmp_path / "ds",
            EngineParams(),
            generated.as_of,
            days_per_window=days_per_window,
            block_bytes=64 << 10,
        )
    monkeypatch.undo()
    assert counted.calls == 0, "the summary was computed in SQL"
    assert built.windows > 5
    named = collections.Counter(sid for part in parts for sid, _, _ in part.by_settlement)
    assert any(times > 1 for times in named.values())
    with open_database(db_url) as conn:
        whole = summary_ahead(None, [(read_outcome_frame(conn, built.run_id), None)])
    added = combine(parts)
    assert (added.pending_lines, added.by_settlement) == (whole.pending_lines, whole.by_settlement)
    _stored_is_a_fresh_computation(db_url, built.run_id)


def test_a_streamed_build_computes_the_summary_when_an_import_lands_during_it(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folders, as_of = _day_folders(tmp_path, 8)
    another_import_first = _importing_before_the_sync(db_url, folders[2])
    monkeypatch.setattr(core.review, "sync_exceptions", another_import_first)
    with open_database(db_url) as conn:
        built = stream_folder_into_db(conn, folders[0], EngineParams(), as_of, days_per_window=2)
        # Stored by the SQL fallback under the version after the interloper's import.
        cached = db.get_run_summary(conn, built.run_id)
        assert cached is not None
        assert cached["summary_json"] == _payload(compute_run_summary(conn, built.run_id))
        assert cached["data_version"] == db.data_version(conn)
        assert db.data_version(conn).endswith(f":{built.import_id + 1}")


def test_a_streamed_build_whose_store_resolves_a_repeated_payment_stores_the_tables_summary(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A payment id met twice (captured, then a later block's copy not captured), with the
    import's check of ids across blocks taken away (it refuses such a file: see
    tests/test_streamed_import_across_blocks.py): the store keeps one row, so the frames'
    parts (which saw both) are not stored; the SQL summary of the tables is."""
    monkeypatch.setattr(core.ingest.stream, "_ids_repeated_across_blocks", lambda *_: [])
    generated = generate(tmp_path / "ds", payments=600, seed=3)
    payments = tmp_path / "ds" / "payments.csv"
    lines = payments.read_text().splitlines(keepends=True)
    captured = next(line for line in lines[1:] if ",captured," in line and ",true," in line)
    again = captured.replace(",captured,", ",authorized,", 1).replace(",true,", ",false,", 1)
    payments.write_text("".join([*lines, again]))
    with open_database(db_url) as conn:
        built = stream_folder_into_db(
            conn, tmp_path / "ds", EngineParams(), generated.as_of, block_bytes=16 << 10
        )
        assert built.raw_rows["payments"] == len(lines)  # header + the repeat: one more
    _stored_is_a_fresh_computation(db_url, built.run_id)


def test_parts_combine_by_summing_a_settlement_named_in_two_of_them() -> None:
    first = SummaryAhead(
        captured=Total(3, 700),
        pending_lines=(PendingLine("payment", "NO_SETTLEMENT", 2, 500),),
        by_settlement=(("setl_b", 4, 3), ("setl_c", 1, 1)),
    )
    second = SummaryAhead(
        captured=Total(2, 300),
        pending_lines=(
            PendingLine("payment", "AMOUNT_MISMATCH", 1, 90),
            PendingLine("payment", "NO_SETTLEMENT", 1, 10),
        ),
        by_settlement=(("setl_a", 2, 0), ("setl_b", 5, 5)),
    )
    assert combine([first, second]) == SummaryAhead(
        captured=Total(5, 1000),
        pending_lines=(
            PendingLine("payment", "AMOUNT_MISMATCH", 1, 90),
            PendingLine("payment", "NO_SETTLEMENT", 3, 510),
        ),
        by_settlement=(("setl_a", 2, 0), ("setl_b", 9, 8), ("setl_c", 1, 1)),
    )
