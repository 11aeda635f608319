"""`python -m core import-day DAY_DIR --db X` end to end on SQLite files: day folders cut
from a generated benchmark are merged and reconciled incrementally, and the last run's
outcomes equal a full run over the database's raw tables (docs/engine.md, *Incremental
runs*)."""

from __future__ import annotations

import csv
import datetime as dt
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from core.benchmark import generate
from core.db import open_database, transaction
from core.db.runs import get_run, latest_completed_run, list_runs, read_outcome_frame
from core.engine import EngineParams
from core.engine.cli import parse_as_of
from core.pipeline import reconcile_database, reconcile_day_into_db
from tests.guard_support import guards_off

ROOT = Path(__file__).resolve().parents[1]
IST = dt.timezone(dt.timedelta(hours=5, minutes=30))
ARRIVAL = {"settlement_recon.csv": ("settled_at", "created_at")}
PARAMS = EngineParams()


def _ts(text: str) -> int:
    return parse_as_of(text)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True
    )


def _day_of_seconds(value: str) -> dt.date:
    return dt.datetime.fromtimestamp(int(value), tz=IST).date()


def split_into_days(folder: Path, out: Path, cuts: list[dt.date]) -> list[Path]:
    """The benchmark's files cut into len(cuts) + 1 day folders: a row goes to the first
    folder whose cut is after its arrival day (created_at; a recon row's settled_at; a bank
    line's date), the last folder takes the rest. Same layouts as the full folder."""
    days = [out / f"day{i}" for i in range(len(cuts) + 1)]
    for day in days:
        day.mkdir(parents=True)

    def bucket(day: dt.date) -> int:
        return next((i for i, cut in enumerate(cuts) if day < cut), len(cuts))

    for path in sorted(folder.glob("*.csv")):
        if path.name in ("ground_truth.csv", "tax_invoice.csv"):
            continue
        if path.name == "bank_statement.csv":
            lines = path.read_text(encoding="utf-8").splitlines()
            start = next(i for i, line in enumerate(lines) if line.startswith("Date,"))
            header, body = lines[start], [x for x in lines[start + 1 :] if not x.startswith("*")]
            parts: list[list[str]] = [[] for _ in days]
            for line in body:
                when = dt.datetime.strptime(line.split(",")[0], "%d/%m/%y").date()
                parts[bucket(when)].append(line)
            for day, rows in zip(days, parts, strict=True):
                if rows:
                    (day / path.name).write_text("\n".join([header, *rows]) + "\n", "utf-8")
            continue
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        columns = ARRIVAL.get(path.name, ("created_at",))
        when = frame[columns[0]].where(frame[columns[0]] != "", frame[columns[-1]])
        target = [bucket(_day_of_seconds(v)) if v else 0 for v in when]
        for i, day in enumerate(days):
            rows = frame[[t == i for t in target]]
            if len(rows) or path.name in (
                "payments.csv",
                "settlements.csv",
                "settlement_recon.csv",
            ):
                rows.to_csv(day / path.name, index=False, quoting=csv.QUOTE_MINIMAL)
    return days


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[str]]:
    root = tmp_path_factory.mktemp("import-day")
    generated = generate(root / "full", payments=300, seed=21)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cuts = [last - dt.timedelta(days=2), last - dt.timedelta(days=1)]
    folders = split_into_days(root / "full", root / "days", cuts)
    as_ofs = [f"{cut - dt.timedelta(days=1)}T23:59:59+05:30" for cut in cuts]
    return folders, [*as_ofs, dt.datetime.fromtimestamp(generated.as_of, tz=IST).isoformat()]


def test_import_day_chain_equals_a_full_run_over_the_stored_data(
    days: tuple[list[Path], list[str]], db_url: str
) -> None:
    folders, as_ofs = days
    db = db_url
    outputs = []
    for folder, as_of in zip(folders, as_ofs, strict=True):
        done = _cli("import-day", str(folder), "--db", str(db), "--as-of", as_of)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert "full (no completed run to carry forward)" in outputs[0]
    assert "incremental over run 1" in outputs[1]
    assert "incremental over run 2" in outputs[2]

    with open_database(db) as conn:
        runs = list_runs(conn)
        assert [(r.kind, r.base_run_id) for r in reversed(runs)] == [
            ("full", None),
            ("incremental", 1),
            ("incremental", 2),
        ]
        last = runs[0]
        assert last.scope is not None
        total = last.scope["reconciled"] + last.scope["carried_forward"]
        assert last.scope["reconciled"] < total
        incremental = read_outcome_frame(conn, last.id)
        params = EngineParams.from_dict(last.params)
        full = reconcile_database(conn, params, last.as_of, "files")
        stored_full = get_run(conn, full.run_id)
        assert stored_full is not None and stored_full.kind == "full"
        pd.testing.assert_frame_equal(incremental, read_outcome_frame(conn, full.run_id))
        # The incremental run brought the queue up to date: the full run finds nothing to
        # open, reopen, refresh or clear.
        sync = full.sync
        assert (sync.opened, sync.reopened, sync.auto_cleared, sync.refreshed) == (0, 0, 0, 0)
        assert sync.kept > 0

        # The same day imported again: carried forward from the full run, nothing changes.
        again = reconcile_day_into_db(conn, folders[-1], params=params, as_of=last.as_of)
        assert (again.kind, again.base_run_id) == ("incremental", full.run_id)
        pd.testing.assert_frame_equal(
            read_outcome_frame(conn, again.run.run_id), read_outcome_frame(conn, full.run_id)
        )


def test_full_flag_and_changed_parameters_reconcile_everything(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    with open_database(tmp_path / "full.sqlite") as conn:
        first = reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        asked = reconcile_day_into_db(
            conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]), full=True
        )
        assert (asked.kind, asked.scope) == ("full", {"reason": "a full run was asked for"})
        slower = replace(PARAMS, calendar=replace(PARAMS.calendar, settlement_days=3))
        changed = reconcile_day_into_db(conn, folders[2], params=slower, as_of=_ts(as_ofs[2]))
        assert changed.kind == "full"
        assert changed.scope["reason"] == f"the parameters differ from run {asked.run.run_id}'s"
        latest = latest_completed_run(conn)
        assert latest is not None and latest.kind == "full" and latest.base_run_id is None
        assert first.kind == "full"


def test_a_bad_day_folder_exits_2_naming_the_cell_and_writes_nothing(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db = tmp_path / "bad.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
    bad = tmp_path / "bad-day"
    bad.mkdir()
    (bad / "payments.csv").write_text(
        "id,amount,currency,status,captured,created_at\npay_X1,12x,INR,captured,true,1775023919\n"
    )
    (bad / "settlements.csv").write_text("id,amount,status,utr,created_at\n")
    (bad / "settlement_recon.csv").write_text("entity_id,type,debit,credit,amount\n")
    done = _cli("import-day", str(bad), "--db", str(db), "--as-of", as_ofs[1])
    assert done.returncode == 2
    assert "payments.csv:2:amount" in done.stderr
    with open_database(db) as conn:
        assert len(list_runs(conn)) == 1
        assert conn.execute("SELECT count(*) FROM payments WHERE id = 'pay_X1'").fetchone()[0] == 0


def _day_without(folder: Path, out: Path, *names: str) -> Path:
    shutil.copytree(folder, out)
    for name in names:
        (out / name).unlink()
    return out


def _stored_ids(db: Path, table: str) -> set[str]:
    with open_database(db) as conn:
        return {row[0] for row in conn.execute(f"SELECT id FROM {table}")}


def test_a_day_folder_without_a_payments_file_adds_none_and_keeps_the_stored_ones(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db = tmp_path / "no-payments.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
    stored = _stored_ids(db, "payments")
    settlements = _stored_ids(db, "settlements")
    day = _day_without(folders[2], tmp_path / "settlements-only", "payments.csv")

    done = _cli("import-day", str(day), "--db", str(db), "--as-of", as_ofs[2])

    assert done.returncode == 0, done.stderr
    assert "incremental over run 1" in done.stdout
    assert "  payments." not in done.stdout  # the import report names no payments file
    assert _stored_ids(db, "payments") == stored  # none added, none lost
    assert _stored_ids(db, "settlements") > settlements  # the day's settlements stored


def test_a_day_folder_with_payments_only_is_merged_as_a_day_without_settlements(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db = tmp_path / "payments-only.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
    settlements = _stored_ids(db, "settlements")
    keep = {"payments.csv"}
    drop = [p.name for p in folders[1].iterdir() if p.name not in keep]
    day = _day_without(folders[1], tmp_path / "payments-only", *drop)

    done = _cli("import-day", str(day), "--db", str(db), "--as-of", as_ofs[1])

    assert done.returncode == 0, done.stderr
    assert _stored_ids(db, "settlements") == settlements
    added = pd.read_csv(day / "payments.csv", dtype=str)["id"]
    assert set(added) <= _stored_ids(db, "payments")


def test_a_first_import_day_and_a_day_with_no_dataset_file_are_still_refused(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    folders, as_ofs = days
    db = tmp_path / "first.sqlite"
    day = _day_without(folders[0], tmp_path / "no-payments", "payments.csv")
    done = _cli("import-day", str(day), "--db", str(db), "--as-of", as_ofs[0])
    # Into an empty database the day is the first import: the contract's files are required.
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: payments.csv: required file missing: payments.csv, payments.json, "
        "payments.xlsx or payments.xls"
    ]
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
    empty = tmp_path / "empty-day"
    empty.mkdir()
    (empty / "notes.txt").write_text("nothing here\n")
    done = _cli("import-day", str(empty), "--db", str(db), "--as-of", as_ofs[1])
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {empty}: no dataset file in the folder: a day needs at least one of payments,"
        " refunds, settlements, settlement_recon, instant_settlements,"
        " instant_settlement_payouts, disputes, transfers, reversals (.csv, .json, .xlsx or"
        " .xls) or a bank statement"
    ]
    with open_database(db) as conn:
        assert len(list_runs(conn)) == 1


def test_an_incremental_day_is_stored_counted_and_summarised_without_its_whole_frame(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    from core.engine.results import counts, summary_lines

    folders, as_ofs = days
    with open_database(tmp_path / "parts.sqlite") as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert day.kind == "incremental" and day.read_from.startswith("snapshot")
        # Stored (fresh rows + carried copies), counted, summarised and snapshotted (a
        # delta) from the parts: the run's whole frame was never built.
        assert day.run.whole is None and "outcomes" not in vars(day.run)
        lines = summary_lines(day.summary_frame())
        assert "outcomes" not in vars(day.run)
        stored = read_outcome_frame(conn, day.run.run_id)
        record = get_run(conn, day.run.run_id)
        assert record is not None and record.counts == counts(stored)
        assert lines == summary_lines(stored)
        # Asked for, the frame is built from the parts and equals what was stored.
        pd.testing.assert_frame_equal(stored, day.run.outcomes)


def _copy_spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The early copies of the base run's outcomes (core.db.runs.copy_base_outcomes) made
    from here on: (run id, rows copied) each."""
    import core.db.runs as db_runs

    made: list[tuple[int, int]] = []
    real = db_runs.copy_base_outcomes

    def spy(*args: object, **kwargs: object) -> tuple[int, int]:
        made.append(real(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setattr(db_runs, "copy_base_outcomes", spy)
    return made


def _second_day_outcomes(folders: list[Path], as_ofs: list[str], path: Path) -> pd.DataFrame:
    """The outcomes of the second day's run, the first two days imported undisturbed."""
    with open_database(path) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        clean = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        return read_outcome_frame(conn, clean.run.run_id)


def test_a_store_failing_after_the_carried_copy_began_leaves_no_completed_run(
    days: tuple[list[Path], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.ingest
    from core.db.runs import count_outcomes

    folders, as_ofs = days
    expected = _second_day_outcomes(folders, as_ofs, tmp_path / "clean.sqlite")
    with open_database(tmp_path / "broken.sqlite") as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        copies = _copy_spy(monkeypatch)
        real_store = core.ingest.store_dataset

        def store_fails(*args: object, **kwargs: object) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(core.ingest, "store_dataset", store_fails)
        with pytest.raises(OSError, match="disk full"):
            reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        # The copy was made (committed under the running run 2) before the store failed.
        assert len(copies) == 1 and copies[0][0] == 2 and copies[0][1] > 0
        failed = get_run(conn, 2)
        assert failed is not None and failed.status == "failed"
        assert failed.error == "OSError: disk full"
        assert count_outcomes(conn, 2) == 0
        latest = latest_completed_run(conn)
        assert latest is not None and latest.id == 1

        monkeypatch.setattr(core.ingest, "store_dataset", real_store)
        again = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert (again.kind, again.base_run_id, again.run.run_id) == ("incremental", 1, 3)
        pd.testing.assert_frame_equal(read_outcome_frame(conn, 3), expected)
        following = reconcile_day_into_db(conn, folders[2], params=PARAMS, as_of=_ts(as_ofs[2]))
        assert (following.kind, following.base_run_id) == ("incremental", 3)


def test_the_keys_decided_again_are_deleted_by_the_copy_before_the_day_is_stored(
    days: tuple[list[Path], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.db.runs as db_runs

    folders, as_ofs = days
    expected = _second_day_outcomes(folders, as_ofs, tmp_path / "clean.sqlite")
    with open_database(tmp_path / "early.sqlite") as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        copies = _copy_spy(monkeypatch)
        deleted_later: list[int] = []
        real_drop = db_runs._drop_skipped

        def drop_spy(conn: object, run_id: int, carry: db_runs.CarryForward) -> None:
            deleted_later.append(len(carry.skip_ids))
            real_drop(conn, run_id, carry)  # type: ignore[arg-type]

        monkeypatch.setattr(db_runs, "_drop_skipped", drop_spy)
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert day.kind == "incremental" and day.scope["reconciled"] > 0
        # The copy held only the carried rows when it ended; none was left to delete later.
        assert copies == [(2, day.scope["carried_forward"])]
        assert deleted_later == [0]
        pd.testing.assert_frame_equal(read_outcome_frame(conn, 2), expected)


def test_keys_deleted_from_the_copy_that_are_not_the_runs_fail_the_run(
    days: tuple[list[Path], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.pipeline
    from core.db.runs import count_outcomes

    folders, as_ofs = days
    with open_database(tmp_path / "mismatch.sqlite") as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        real_plan = core.pipeline._carry_plan

        def one_key_short(*args: object) -> object:
            forward, fresh, counted = real_plan(*args)  # type: ignore[arg-type, misc]
            return replace(forward, skip_ids=forward.skip_ids[1:]), fresh, counted

        monkeypatch.setattr(core.pipeline, "_carry_plan", one_key_short)
        with pytest.raises(ValueError, match="not the run's"):
            reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        failed = get_run(conn, 2)
        assert failed is not None and failed.status == "failed"
        assert count_outcomes(conn, 2) == 0
        latest = latest_completed_run(conn)
        assert latest is not None and latest.id == 1


def _staged_spy(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> list[Path]:
    """Every day's fresh outcomes staged (STAGING_MIN_ROWS 0); returns the staging files
    core.db.runs._insert_staged copied from (each checked to exist then), failing after
    the copy when `fail`."""
    import core.db.runs as db_runs
    from core.db import staging

    monkeypatch.setattr(staging, "STAGING_MIN_ROWS", 0)
    copied: list[Path] = []
    real = db_runs._insert_staged

    def spy(conn: object, run_id: int, staged: tuple[str, int], *, whole: bool) -> None:
        real(conn, run_id, staged, whole=whole)  # type: ignore[arg-type]
        (path,) = [r[2] for r in conn.execute("PRAGMA database_list") if r[1] == staged[0]]  # type: ignore[attr-defined]
        assert Path(path).is_file()
        copied.append(Path(path))
        if fail:
            raise OSError("disk full")

    monkeypatch.setattr(db_runs, "_insert_staged", spy)
    return copied


@pytest.mark.parametrize("early_drop", [True, False])
def test_a_large_days_fresh_outcomes_are_staged_and_stored_as_small_days_are(
    days: tuple[list[Path], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    early_drop: bool,
) -> None:
    import core.pipeline
    from core.engine.results import counts

    folders, as_ofs = days
    with open_database(tmp_path / "direct.sqlite") as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        direct = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        expected = read_outcome_frame(conn, direct.run.run_id)
        expected_record = get_run(conn, direct.run.run_id)
    with open_database(tmp_path / "staged.sqlite") as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        copied = _staged_spy(monkeypatch)
        if not early_drop:  # the keys decided again are still in the copy: deleted first
            monkeypatch.setattr(core.pipeline._BaseCopy, "drop_early", lambda *args: None)
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert day.kind == "incremental" and day.scope["reconciled"] > 0
        assert len(copied) == 1 and not copied[0].exists()  # removed after the run
        stored = read_outcome_frame(conn, day.run.run_id)
        pd.testing.assert_frame_equal(stored, expected)
        record = get_run(conn, day.run.run_id)
        assert record is not None and expected_record is not None
        assert record.status == "completed" and record.counts == counts(stored)
        assert record.counts == expected_record.counts


def test_a_failure_after_the_fresh_outcomes_were_staged_leaves_no_completed_run(
    days: tuple[list[Path], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.db.runs import count_outcomes

    folders, as_ofs = days
    expected = _second_day_outcomes(folders, as_ofs, tmp_path / "clean.sqlite")
    with open_database(tmp_path / "broken.sqlite") as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        copied = _staged_spy(monkeypatch, fail=True)
        with pytest.raises(OSError, match="disk full"):
            reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert len(copied) == 1  # staged, and copied in, before the failure
        failed = get_run(conn, 2)
        assert failed is not None and failed.status == "failed"
        assert failed.error == "OSError: disk full"
        assert count_outcomes(conn, 2) == 0
        latest = latest_completed_run(conn)
        assert latest is not None and latest.id == 1

        # The day's raw tables were stored before the failure: run again, it is reconciled
        # in full over them, to the same outcomes.
        monkeypatch.undo()
        again = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert again.run.run_id == 3
        pd.testing.assert_frame_equal(read_outcome_frame(conn, 3), expected)


def _first_day_then_a_forced_full_run(
    conn: sqlite3.Connection,
    folders: list[Path],
    as_ofs: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> list[tuple[int, int]]:
    """The first day stored; the next day's base copies recorded (`_copy_spy`) and its plan
    told it needs a full run."""
    import core.engine.incremental

    reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
    copies = _copy_spy(monkeypatch)
    monkeypatch.setattr(
        core.engine.incremental, "needs_full_run", lambda before, after: "a test says so"
    )
    return copies


def test_a_day_found_to_need_a_full_run_after_the_copy_began_stores_it_under_the_same_id(
    days: tuple[list[Path], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    folders, as_ofs = days
    with open_database(tmp_path / "full-after-copy.sqlite") as conn:
        copies = _first_day_then_a_forced_full_run(conn, folders, as_ofs, monkeypatch)
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert len(copies) == 1 and copies[0][0] == 2
        assert (day.kind, day.run.run_id, day.scope) == ("full", 2, {"reason": "a test says so"})
        assert [(r.id, r.status) for r in list_runs(conn)] == [(2, "completed"), (1, "completed")]
        stored = conn.execute("SELECT count(*) FROM outcomes WHERE run_id = 2").fetchone()[0]
        assert stored == len(day.run.outcomes)


def test_a_day_found_to_need_a_full_run_lets_other_writers_in_while_it_reconciles(
    days: tuple[list[Path], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    import core.engine.incremental
    import core.pipeline

    folders, as_ofs = days
    path = tmp_path / "full-after-copy.sqlite"
    with open_database(path) as conn:
        copies = _first_day_then_a_forced_full_run(conn, folders, as_ofs, monkeypatch)
        real_reconcile = core.pipeline.reconcile
        took_lock: list[bool] = []

        def reconcile_beside_a_writer(*args: object, **kwargs: object) -> object:
            # Another process's write while the full run reconciles: the copy no plan
            # will come for must not hold the write lock through it (busy timeout).
            other = sqlite3.connect(path, timeout=3, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                took_lock.append(True)
            finally:
                other.close()
            return real_reconcile(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(core.pipeline, "reconcile", reconcile_beside_a_writer)
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
        assert took_lock == [True]
        assert len(copies) == 1 and (day.kind, day.run.run_id) == ("full", 2)
        assert [(r.id, r.status) for r in list_runs(conn)] == [(2, "completed"), (1, "completed")]


def test_snapshot_files_hashed_at_start_up_are_taken_by_the_day_run(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    from core import snapshot_ahead
    from core.__main__ import start_snapshot_hashing

    folders, as_ofs = days
    db = tmp_path / "ahead.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        base = latest_completed_run(conn)
    assert base is not None and base.snapshot is not None
    start_snapshot_hashing(["import-day", str(folders[1]), "--db", str(db)])
    hashed = set(snapshot_ahead._AHEAD)
    assert {Path(name).name for name in hashed} == {
        entry["file"] for entry in base.snapshot["files"].values()
    }
    with open_database(db) as conn:
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
    assert day.read_from == "snapshot of run 1"
    assert snapshot_ahead._AHEAD == {}  # every file's hash was taken, none computed again


def test_start_up_hashing_reads_the_line_as_import_days_own_parser_does(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    from core import snapshot_ahead
    from core.__main__ import start_snapshot_hashing

    folders, as_ofs = days
    db = tmp_path / "parsed.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
    snapshot_ahead._AHEAD.clear()
    # Lines import-day refuses, or that keep no snapshot: nothing is hashed.
    for refused in (
        ["import-day", "--db", str(db)],  # no DAY_DIR
        ["import-day", str(folders[1]), "--db", str(db), "--no-snapshots"],
        ["import-day", str(folders[1]), "--db", str(db), "--snapshots", "x", "--no-snapshots"],
    ):
        start_snapshot_hashing(refused)
        assert snapshot_ahead._AHEAD == {}, refused
    # `--db=FILE` and an abbreviated option, as argparse reads them.
    start_snapshot_hashing(["import-day", f"--db={db}", "--as", "2026-06-30", str(folders[1])])
    assert len(snapshot_ahead._AHEAD) == len(snapshot_ahead.snapshot_paths(str(db), None)) > 0
    snapshot_ahead._AHEAD.clear()


def test_a_snapshot_file_altered_after_it_was_hashed_at_start_up_is_hashed_again(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    from core import snapshot_ahead

    folders, as_ofs = days
    db = tmp_path / "altered.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
    paths = snapshot_ahead.snapshot_paths(str(db), None)
    snapshot_ahead.hash_ahead(paths)
    outcomes = next(p for p in paths if ".outcomes." in p.name)
    snapshot_ahead._AHEAD[str(outcomes.resolve())].result()  # hashed before the change
    with open(outcomes, "r+b") as file:  # altered in place: same inode and size
        file.seek(64)
        file.write(b"\xff" * 64)
    with open_database(db) as conn:
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[1]))
    assert day.read_from == (f"tables ({outcomes.name} does not match the sha256 its run recorded)")
    snapshot_ahead._AHEAD.clear()


def _import_plainly(conn: sqlite3.Connection, folder: Path) -> int:
    """A day folder stored as `import` (or a webhook) stores rows: no run; its import id."""
    from core.activity import record_import
    from core.ingest import store_dataset
    from core.pipeline import load_folder, qualify_bank_lines

    loaded = load_folder(folder)
    report = store_dataset(
        conn,
        qualify_bank_lines(loaded.dataset, folder.name),
        source="files",
        location=str(folder),
        content_hash=loaded.report.content_hash,
    )
    assert report.import_id is not None and not report.already_imported
    # Audited as the `import` command records it: the raw tables' counts are explained.
    record_import(conn, report, actor="cli", how="import command")
    return report.import_id


def _is_a_full_run_behind(conn: sqlite3.Connection, day: Any, base_id: int, as_of: int) -> None:
    """The day was reconciled in full because run `base_id` did not read every import, and
    its outcomes equal a full run over the stored tables."""
    reason = f"data imported after run {base_id} was not reconciled by it"
    assert (day.kind, day.scope) == ("full", {"reason": reason})
    _full_run_equals(conn, day.run.run_id, as_of)


def _full_run_equals(conn: sqlite3.Connection, run_id: int, as_of: int) -> None:
    full = reconcile_database(conn, PARAMS, as_of, "files")
    pd.testing.assert_frame_equal(
        read_outcome_frame(conn, run_id), read_outcome_frame(conn, full.run_id)
    )


def test_an_import_stored_in_the_second_its_base_run_started_is_reconciled_by_the_next_day(
    days: tuple[list[Path], list[str]], db_url: str
) -> None:
    from core.db import transaction

    folders, as_ofs = days
    with open_database(db_url) as conn:
        first = reconcile_day_into_db(
            conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]), snapshots=None
        )
        run = get_run(conn, first.run.run_id)
        assert run is not None
        plain = _import_plainly(conn, folders[1])
        # Stored in the very second run 1 started: by whole seconds it looks reconciled.
        with transaction(conn):
            conn.execute("UPDATE imports SET imported_at = ? WHERE id = ?", (run.started_at, plain))
        day = reconcile_day_into_db(
            conn, folders[2], params=PARAMS, as_of=_ts(as_ofs[2]), snapshots=None
        )
        _is_a_full_run_behind(conn, day, run.id, _ts(as_ofs[2]))


def _day_with_an_import_stored_during_it(
    conn: sqlite3.Connection,
    db: str | Path,
    day: tuple[Path, int],
    interloper: Path,
) -> Any:
    """Reconcile a day while another import (a webhook's, which takes no run lock) is stored
    between the day's read of the stored state and its store: just before its own rows."""
    import core.pipeline

    real_stage = core.pipeline._stage_fresh

    def store_another_import_first(*args: Any, **kwargs: Any) -> Any:
        with open_database(db) as other:
            _import_plainly(other, interloper)
        return real_stage(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(core.pipeline, "_stage_fresh", store_another_import_first)
        return reconcile_day_into_db(conn, day[0], params=PARAMS, as_of=day[1])


def test_an_import_stored_while_a_day_reconciles_is_not_counted_as_reconciled_by_it(
    days: tuple[list[Path], list[str]], db_url: str
) -> None:
    """A webhook stores rows without the run lock: one landing after the day's run read the
    stored state (here: just before the day's own rows are stored) was not in its data."""
    from core.db.raw import latest_import_id

    folders, as_ofs = days
    with open_database(db_url) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        second = _day_with_an_import_stored_during_it(
            conn, db_url, (folders[1], _ts(as_ofs[1])), folders[2]
        )
        assert second.kind == "incremental"
        run = get_run(conn, second.run.run_id)
        # The interloper went in as import 2, the day as import 3.
        assert run is not None and run.through_import_id == 1 and latest_import_id(conn) == 3
        day = reconcile_day_into_db(conn, folders[2], params=PARAMS, as_of=_ts(as_ofs[2]))
        _is_a_full_run_behind(conn, day, run.id, _ts(as_ofs[2]))


def test_each_kind_of_run_records_the_last_import_its_data_included(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    from core.db.raw import latest_import_id
    from core.pipeline import reconcile_folder_into_db

    folders, as_ofs = days
    with open_database(tmp_path / "through.sqlite") as conn:
        day = reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        plain = _import_plainly(conn, folders[1])
        stored = reconcile_database(conn, PARAMS, _ts(as_ofs[1]), "files")
        replaced = reconcile_folder_into_db(conn, folders[2], params=PARAMS, as_of=_ts(as_ofs[2]))
        through = {r.id: r.through_import_id for r in list_runs(conn)}
        assert through == {
            day.run.run_id: 1,
            stored.run_id: plain,
            replaced.run_id: latest_import_id(conn),
        }
        assert latest_import_id(conn) == 3


def test_reconciled_through_stops_before_an_import_the_run_did_not_read(
    conn: sqlite3.Connection,
) -> None:
    from core.db import transaction
    from core.db.raw import insert_import, reconciled_through

    with transaction(conn):
        for n in (1, 2, 3):
            insert_import(
                conn,
                source="files",
                location=f"day{n}",
                content_hash=f"h{n}",
                imported_at=1_750_000_000,
                report_json="{}",
            )
    assert reconciled_through(conn, 1, 2) == 2  # the run's own import, next after its read
    assert reconciled_through(conn, 1, 3) == 1  # import 2 came between: not claimed
    assert reconciled_through(conn, 0, 1) == 1  # read at no import (0), stored the first
    assert reconciled_through(conn, 0, 2) == 0  # import 1 came between: 0, never NULL
    assert reconciled_through(conn, 3, None) == 3  # stored nothing: what it read
    assert reconciled_through(conn, 3, 3) == 3  # its content was the latest import already


def test_a_snapshot_left_by_a_day_an_import_came_in_during_is_not_used_by_the_next_day(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    """The day's snapshot holds the tables as the run read them plus the day: an import
    stored between the read and the day's own rows (a webhook) is not in it, so it may not
    stand at the day's import. It did: the next day, its import already stored (no new
    import), took the snapshot as the tables and reconciled without the webhook's rows."""
    folders, as_ofs = days
    db = tmp_path / "snapshot-interloper.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        second = _day_with_an_import_stored_during_it(
            conn, db, (folders[1], _ts(as_ofs[1])), folders[2]
        )
        assert second.read_from == "snapshot of run 1"
        # The same day again: already imported, so the latest import stays the day's (3).
        again = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[2]))
        assert again.kind == "full"
        assert again.read_from == "tables (data was imported after the snapshot)"
        _full_run_equals(conn, again.run.run_id, _ts(as_ofs[2]))


def test_a_first_day_an_import_came_in_during_does_not_fall_back_to_whole_seconds(
    days: tuple[list[Path], list[str]], db_url: str
) -> None:
    """The first day into an empty database read no import; one stored between its read and
    its store (a webhook) is not in its data. Its run recorded through_import_id NULL, the
    mark of a run stored before the column, so the next day compared whole seconds: the
    import in the run's second counted as reconciled and the day was carried forward."""
    folders, as_ofs = days
    with open_database(db_url) as conn:
        first = _day_with_an_import_stored_during_it(
            conn, db_url, (folders[0], _ts(as_ofs[0])), folders[2]
        )
        run = get_run(conn, first.run.run_id)
        assert run is not None and run.through_import_id == 0  # read none: claims none
        # Both imports in the second the run started: by whole seconds, all reconciled.
        with transaction(conn):
            conn.execute("UPDATE imports SET imported_at = ?", (run.started_at,))
        day = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[2]))
        _is_a_full_run_behind(conn, day, run.id, _ts(as_ofs[2]))


def test_a_run_stored_before_runs_recorded_their_last_import_is_not_carried_forward(
    days: tuple[list[Path], list[str]], tmp_path: Path
) -> None:
    """A run stored before migration 0106 (through_import_id NULL) by a day a webhook's
    import came in during, as the code before stored it: its snapshot at the day's import,
    without the webhook's rows; the webhook's import in its second. Judged by whole seconds
    and its snapshot, the next day was carried forward over data without those rows, and
    every later day after it. One full run from the tables now."""
    import json

    folders, as_ofs = days
    db = tmp_path / "upgraded.sqlite"
    with open_database(db) as conn:
        reconcile_day_into_db(conn, folders[0], params=PARAMS, as_of=_ts(as_ofs[0]))
        second = _day_with_an_import_stored_during_it(
            conn, db, (folders[1], _ts(as_ofs[1])), folders[2]
        )
        old = get_run(conn, second.run.run_id)
        assert old is not None and old.snapshot is not None
        # as the code before migration 0106 left it (and before 0113, which now refuses it)
        with guards_off(conn, "runs"), transaction(conn):
            conn.execute(
                "UPDATE runs SET through_import_id = NULL, snapshot_json = ? WHERE id = ?",
                (json.dumps({**old.snapshot, "import_id": 3}), old.id),
            )
            conn.execute("UPDATE imports SET imported_at = ?", (old.started_at,))
        again = reconcile_day_into_db(conn, folders[1], params=PARAMS, as_of=_ts(as_ofs[2]))
        why = f"run {old.id} does not record the last import it reconciled"
        assert (again.kind, again.scope, again.read_from) == (
            "full",
            {"reason": why},
            f"tables ({why})",
        )
        _full_run_equals(conn, again.run.run_id, _ts(as_ofs[2]))
        run = get_run(conn, again.run.run_id)
        assert run is not None and run.through_import_id == 3
