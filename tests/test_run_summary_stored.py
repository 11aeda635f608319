"""The Overview's run summary stored by the commands that store a run from the command
line (`reconcile --db`, `import-day`), computed from the frames they hold
(core.views.summary_ahead): the very summary `compute_run_summary` gives from the database
after the run, under the data version the database is at, on both databases; not stored
when an import the run did not read landed in the tables."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

import core.review
import core.views.runs
from core.__main__ import main
from core.benchmark import generate
from core.db import open_database
from core.db import views as db
from core.db.runs import list_runs
from core.engine import EngineParams
from core.engine.cli import parse_as_of
from core.pipeline import reconcile_day_into_db
from core.views.overview import overview
from core.views.runs import SUMMARY_FORMAT, RunSummary, compute_run_summary
from tests.test_books_ledger_import_day import _disturb
from tests.test_pipeline_incremental import _import_plainly, split_into_days

IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
PARAMS = EngineParams()


def _iso(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=IST).isoformat()


def _payload(summary: RunSummary) -> str:
    """The summary as app_run_summaries holds it (core.views.runs.run_summary's JSON)."""
    return json.dumps({"format": SUMMARY_FORMAT, **asdict(summary)})


def _stored_is_a_fresh_computation(db_url: str, run_id: int) -> None:
    """The summary stored for the run is, byte for byte, the one computed now from the
    database, and its data version is the database's."""
    with open_database(db_url) as conn:
        cached = db.get_run_summary(conn, run_id)
        assert cached is not None, f"run {run_id} has no stored summary"
        assert cached["data_version"] == db.data_version(conn)
        fresh = compute_run_summary(conn, run_id)
        assert cached["summary_json"] == _payload(fresh)
        # Not an empty summary that would equal anything.
        assert fresh.captured.count and fresh.match_rate and fresh.pending_lines


@pytest.mark.parametrize("seed", [5, 17, 23])
def test_reconcile_db_stores_the_summary_the_database_gives_after_the_run(
    seed: int, db_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "data"
    generated = generate(folder, payments=400, seed=seed)
    code = main(
        [
            "reconcile",
            str(folder),
            "--db",
            db_url,
            "--out",
            str(tmp_path / "results.csv"),
            "--as-of",
            _iso(generated.as_of),
        ]
    )
    assert code == 0
    with open_database(db_url) as conn:
        run_id = list_runs(conn)[0].id
    _stored_is_a_fresh_computation(db_url, run_id)


def _days(root: Path, seed: int, disturb: bool) -> tuple[list[Path], list[str]]:
    """Day folders cut from a generated dataset (rows arriving late and corrected the next
    day when `disturb`), and the as-of of each."""
    generated = generate(root / "full", payments=400, seed=seed)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=n) for n in (4, 3, 2, 1)]
    folders = split_into_days(root / "full", root / "days", cuts)
    if disturb:
        _disturb(folders, seed=seed + 1)
    as_ofs = [f"{cut - dt.timedelta(days=1)}T23:59:59+05:30" for cut in cuts]
    return folders, [*as_ofs, _iso(generated.as_of)]


@pytest.mark.parametrize(("seed", "disturb"), [(31, True), (8, True), (21, False)])
def test_each_import_day_stores_the_summary_the_database_gives_after_it(
    seed: int, disturb: bool, db_url: str, tmp_path: Path
) -> None:
    """A chain of days: the first a full run, the others incremental, with late rows,
    corrections of earlier rows and refunds of earlier payments; after each day the stored
    summary is a fresh computation's."""
    folders, as_ofs = _days(tmp_path, seed, disturb)
    for folder, as_of in zip(folders, as_ofs, strict=True):
        assert main(["import-day", str(folder), "--db", db_url, "--as-of", as_of]) == 0
        with open_database(db_url) as conn:
            run_id = list_runs(conn)[0].id
        _stored_is_a_fresh_computation(db_url, run_id)
    with open_database(db_url) as conn:
        kinds = [r.kind for r in reversed(list_runs(conn))]
    assert kinds[0] == "full" and kinds[1:] == ["incremental"] * (len(folders) - 1)


def test_a_full_import_day_over_a_stored_chain_stores_the_summary_too(
    db_url: str, tmp_path: Path
) -> None:
    folders, as_ofs = _days(tmp_path, 12, True)
    for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
        assert main(["import-day", str(folder), "--db", db_url, "--as-of", as_of]) == 0
    assert (
        main(["import-day", str(folders[2]), "--db", db_url, "--as-of", as_ofs[2], "--full"]) == 0
    )
    with open_database(db_url) as conn:
        last = list_runs(conn)[0]
    assert last.kind == "full"
    _stored_is_a_fresh_computation(db_url, last.id)


def test_no_summary_is_stored_when_an_import_lands_between_the_days_read_and_its_store(
    db_url: str, tmp_path: Path
) -> None:
    import core.pipeline

    folders, as_ofs = _days(tmp_path, 31, False)
    interloper = tmp_path / "interloper"
    shutil.copytree(folders[2], interloper)
    with open_database(db_url) as conn:
        day = _second_day_with_an_import_before(
            conn, db_url, folders, as_ofs, (core.pipeline, "_stage_fresh"), interloper
        )
        assert "run_summary_s" not in day.run.timings


def _second_day_with_an_import_before(
    conn: Any,
    db_url: str,
    folders: list[Path],
    as_ofs: list[str],
    step: tuple[Any, str],
    interloper: Path,
) -> Any:
    """Day 0, then day 1 with `interloper` imported by another connection just before the
    day's `step` (module, function name) runs; day 1's run stored no summary."""
    module, name = step
    real = getattr(module, name)

    def another_import_first(*args: Any, **kwargs: Any) -> Any:
        with open_database(db_url) as other:
            _import_plainly(other, interloper)
        return real(*args, **kwargs)

    reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=parse_as_of(as_ofs[0]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, name, another_import_first)
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=parse_as_of(as_ofs[1]))
    assert db.get_run_summary(conn, day.run.run_id) is None
    return day


def test_no_summary_is_stored_when_an_import_lands_after_the_runs_own(
    db_url: str, tmp_path: Path
) -> None:
    """A webhook's import stored once the day's rows are in (here: while the queue syncs):
    the tables hold rows the summary did not count, so the version is not claimed."""
    folders, as_ofs = _days(tmp_path, 31, False)
    with open_database(db_url) as conn:
        day = _second_day_with_an_import_before(
            conn, db_url, folders, as_ofs, (core.review, "sync_exceptions"), folders[2]
        )
        # The Overview computes it then, from the tables as they are.
        summary = core.views.runs.run_summary(conn, day.run.run_id)
        assert _payload(summary) == _payload(compute_run_summary(conn, day.run.run_id))


def test_the_overview_after_a_command_line_run_reads_the_stored_summary(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folders, as_ofs = _days(tmp_path, 8, True)
    for folder, as_of in zip(folders[:2], as_ofs[:2], strict=True):
        assert main(["import-day", str(folder), "--db", db_url, "--as-of", as_of]) == 0

    def recomputed(*args: Any) -> Any:
        raise AssertionError("the Overview computed the run summary again")

    monkeypatch.setattr(core.views.runs, "compute_run_summary", recomputed)
    with open_database(db_url) as conn:
        shown = overview(conn)
        assert shown is not None and shown.run.id == list_runs(conn)[0].id
        assert shown.summary.captured.count > 0 and shown.summary.match_rate


def test_the_overviews_captured_total_counts_a_foreign_payment_at_its_inr_base_amount(
    db_url: str, tmp_path: Path
) -> None:
    """A new user's walkthrough: the Overview's Captured added a payment in yen, euros or
    dollars at its own minor units as if paise (¥16,700 read as ₹167). Both the summary
    computed from the frames (stored by the command) and the one from SQL take the INR
    base_amount, as the engine and the Books do."""
    import csv

    folder = tmp_path / "bench"
    generate(folder, payments=2000, seed=5)
    rows = list(csv.DictReader((folder / "payments.csv").open(encoding="utf-8")))
    captured = [
        r for r in rows if r["captured"] == "true" or r["status"] in ("captured", "refunded")
    ]
    foreign = [r for r in captured if r["currency"] != "INR"]
    assert foreign and all(r["base_amount"] for r in foreign)
    expected = sum(int(r["base_amount"] or r["amount"]) for r in foreign) + sum(
        int(r["amount"]) for r in captured if r["currency"] == "INR"
    )

    argv = ["reconcile", str(folder), "--out", str(tmp_path / "r.csv"), "--db", db_url]
    assert main([*argv, "--as-of", "2026-06-30T23:59:59+05:30"]) == 0
    with open_database(db_url) as conn:
        (run,) = list_runs(conn)
        stored = json.loads(db.get_run_summary(conn, run.id)["summary_json"])
        fresh = compute_run_summary(conn, run.id)

    assert fresh.captured.count == len(captured)
    assert fresh.captured.paise == stored["captured"]["paise"] == expected


def test_the_overview_names_an_import_stored_after_the_run_read_the_data(
    db_url: str, tmp_path: Path
) -> None:
    from tests.conftest import SPEC_EXAMPLE

    argv = ["reconcile", str(SPEC_EXAMPLE / "dataset"), "--out", str(tmp_path / "r.csv")]
    assert main([*argv, "--db", db_url, "--as-of", "2026-06-30T23:59:59+05:30"]) == 0
    with open_database(db_url) as conn:
        first = overview(conn)
    folder = tmp_path / "more"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    text = (folder / "payments.json").read_text(encoding="utf-8")
    (folder / "payments.json").write_text(
        text.replace('"description": "', '"description": "Re ', 1)
    )
    assert main(["import", str(folder), "--db", db_url]) == 0
    with open_database(db_url) as conn:
        later = overview(conn)
        (newest,) = conn.execute("SELECT max(id) FROM imports").fetchone()

    assert first is not None and first.newer_import is None
    assert later is not None and later.newer_import is not None
    assert later.newer_import[0] == int(newest)


def test_overview_captured_takes_a_foreign_payments_inr_from_its_recon_row_or_counts_it_unknown(
    db_url: str, tmp_path: Path
) -> None:
    """A Dashboard Payments report carries no base_amount: a payment in dollars then added
    ₹0 to the Overview's Captured, silently (tester finding 11). Its INR amount is its first
    payment recon row's amount, as the Books take it; a payment with neither is counted
    apart as having no INR amount yet. The stored summary and the one from SQL agree."""
    import csv

    folder = tmp_path / "bench"
    generate(folder, payments=2000, seed=5)
    with (folder / "payments.csv").open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header, rows = list(reader.fieldnames or []), list(reader)
    captured = [
        r for r in rows if r["captured"] == "true" or r["status"] in ("captured", "refunded")
    ]
    foreign = [r for r in captured if r["currency"] != "INR"]
    assert len(foreign) >= 2
    for r in rows:
        if r["currency"] != "INR":
            r["base_amount"] = ""  # as the Dashboard report: no such column
    with (folder / "payments.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    unsettled = foreign[0]["id"]  # its recon row not yet in the data
    with (folder / "settlement_recon.csv").open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        recon_header, recon = list(reader.fieldnames or []), list(reader)
    recon = [r for r in recon if r["entity_id"] != unsettled]
    with (folder / "settlement_recon.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=recon_header)
        writer.writeheader()
        writer.writerows(recon)
    row_amount = {}
    for r in recon:
        if r["type"] == "payment":
            row_amount.setdefault(r["entity_id"], int(r["amount"]))
    expected = sum(row_amount.get(r["id"], 0) for r in foreign) + sum(
        int(r["amount"]) for r in captured if r["currency"] == "INR"
    )

    argv = ["reconcile", str(folder), "--out", str(tmp_path / "r.csv"), "--db", db_url]
    assert main([*argv, "--as-of", "2026-06-30T23:59:59+05:30"]) == 0
    with open_database(db_url) as conn:
        (run,) = list_runs(conn)
        stored = json.loads(db.get_run_summary(conn, run.id)["summary_json"])
        fresh = compute_run_summary(conn, run.id)

    assert fresh.captured.count == len(captured)
    assert fresh.captured.paise == stored["captured"]["paise"] == expected
    assert fresh.captured_unpriced == stored["captured_unpriced"] == 1
    assert stored == json.loads(_payload(fresh))
