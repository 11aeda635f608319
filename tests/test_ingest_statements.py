"""Bank statements stored one after another (core.ingest.statements): an overlapping
download stores only its new lines, and no statement's line replaces another's. On the
hand-written HDFC statement of tests/fixtures/real_exports (docs/ingest.md, "Statements
that overlap")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.dataset import BANK_COLUMNS, Dataset, empty_frame
from core.db import open_database
from core.db.raw import read_bank_lines
from core.db.runs import list_runs, read_outcome_frame
from core.engine import EngineParams
from core.errors import RefusedError
from core.ingest import import_dataset, store_dataset
from core.ingest.load import load_dataset
from core.ingest.statements import CONTENT_COLUMNS, place_among_stored, place_bank_lines
from core.pipeline import reconcile_database
from tests import conftest

db_url = conftest.db_url

ROOT = Path(__file__).resolve().parents[1]
EXPORT = ROOT / "tests" / "fixtures" / "real_exports" / "dashboard_csv"
AS_OF = "2026-08-10T23:59:59+05:30"
HEADER_ONLY = ("payments.csv", "settlements.csv", "settlement_recon.csv")
NEW_CREDIT = (
    "01/08/26,NEFT CR-UTIB0000001-RAZORPAY SOFTWARE PVT LTD-UTIBN52621400099,"
    "UTIBN52621400099,01/08/26,,999.00,163547.61"
)


def _statement_lines() -> tuple[str, list[str]]:
    header, *lines = (EXPORT / "bank_statement.csv").read_text("utf-8").splitlines()
    return header, lines


def _bank_only_folder(folder: Path, lines: list[str]) -> Path:
    """A folder holding a bank statement of `lines` (and the required Razorpay files, empty)."""
    folder.mkdir(parents=True)
    header, _ = _statement_lines()
    (folder / "bank_statement.csv").write_text("\n".join([header, *lines]) + "\n", "utf-8")
    for name in HEADER_ONLY:
        first = (EXPORT / name).read_text("utf-8").splitlines()[0]
        (folder / name).write_text(first + "\n", "utf-8")
    return folder


def _content(frame: pd.DataFrame) -> Counter[tuple[object, ...]]:
    return Counter(tuple(row) for row in frame[list(CONTENT_COLUMNS)].astype(str).to_numpy())


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_a_statement_downloaded_again_over_overlapping_days_stores_only_its_new_lines(
    db_url: str, tmp_path: Path
) -> None:
    _, lines = _statement_lines()
    later = _bank_only_folder(tmp_path / "w2", [*lines[-8:], NEW_CREDIT])
    with open_database(db_url) as conn:
        import_dataset(conn, EXPORT)
        before = read_bank_lines(conn)
        report = import_dataset(conn, later)
        after = read_bank_lines(conn)
    assert (report.bank_lines_known, report.bank_lines_renamed) == (8, 1)
    assert report.written["bank_lines"] == 1
    assert len(after) == len(before) + 1 == len(lines) + 1
    # Every line stored before is still there under its id, unchanged.
    kept = after.set_index("id").loc[before["id"]].reset_index()
    pd.testing.assert_frame_equal(kept[before.columns], before)
    # The new credit could not take `bank_statement.csv:10` (line 10 of the first statement).
    new = after[~after["id"].isin(before["id"])].iloc[0]
    assert new["id"] == f"w2@{report.content_hash[:8]}/bank_statement.csv:10"
    assert new["utr"] == "UTIBN52621400099" and int(new["credit"]) == 99900
    assert "8 bank line(s) already stored from an earlier statement" in "\n".join(report.lines())


def test_another_statements_line_never_replaces_a_stored_line_of_the_same_number(
    db_url: str, tmp_path: Path
) -> None:
    """The data loss this prevents: a second statement's line 2 replaced the first's."""
    _, lines = _statement_lines()
    other = _bank_only_folder(tmp_path / "week2", [NEW_CREDIT])
    with open_database(db_url) as conn:
        import_dataset(conn, EXPORT)
        first = read_bank_lines(conn)
        import_dataset(conn, other)
        stored = read_bank_lines(conn)
    assert len(stored) == len(lines) + 1
    assert _content(stored) == _content(first) + _content(
        stored[stored["utr"] == "UTIBN52621400099"]
    )
    line_two = stored[stored["id"] == "bank_statement.csv:2"].iloc[0]
    assert (
        line_two["narration"] == first[first["id"] == "bank_statement.csv:2"].iloc[0]["narration"]
    )


def test_import_day_of_an_overlapping_statement_opens_no_duplicate_credit(
    db_url: str, tmp_path: Path
) -> None:
    _, lines = _statement_lines()
    day0 = tmp_path / "2026-07-31"
    shutil.copytree(EXPORT, day0)
    day1 = _bank_only_folder(tmp_path / "2026-08-01", [*lines[-8:], NEW_CREDIT])
    db = db_url
    first = _cli("import-day", str(day0), "--db", str(db), "--as-of", AS_OF)
    second = _cli("import-day", str(day1), "--db", str(db), "--as-of", AS_OF)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "8 bank line(s) already stored from an earlier statement" in second.stdout
    # The day's files reported as `import` reports them; an empty file claims no unit.
    assert "bank_statement.csv: 9 rows, csv, layout HDFC" in second.stdout
    assert "payments.csv: 0 rows, csv; layout Razorpay dashboard" in second.stdout
    # The same day again: its rows are stored already; the day is still reconciled.
    again = _cli("import-day", str(day1), "--db", str(db), "--as-of", AS_OF)
    assert again.returncode == 0, again.stderr
    assert "Already imported (import #2): the raw tables are unchanged" in again.stdout
    assert "nothing written" not in again.stdout and "run 3: incremental" in again.stdout
    with open_database(str(db)) as conn:
        runs = list_runs(conn)
        assert [r.kind for r in reversed(runs)] == ["full", "incremental", "incremental"]
        day_run = read_outcome_frame(conn, runs[0].id)
        base_run = read_outcome_frame(conn, runs[2].id)
        credits = read_bank_lines(conn)
        params = EngineParams.from_dict(runs[0].params)
        full = reconcile_database(conn, params, runs[0].as_of, "files")
        full_run = read_outcome_frame(conn, full.run_id)
    codes = ";".join(day_run["reason_codes"].fillna("").astype(str))
    assert "DUPLICATE_BANK_CREDIT" not in codes
    # One more credit than the first day: the new one, unmatched (no settlement names it).
    assert len(credits) == len(lines) + 1
    assert len(day_run) == len(base_run) + 1
    pd.testing.assert_frame_equal(day_run, full_run)


def test_a_day_folder_reused_every_day_keeps_each_days_lines(tmp_path: Path) -> None:
    """A download job that always writes to `latest/`: day 2's line 2 is not day 1's."""
    _, lines = _statement_lines()
    db = tmp_path / "db.sqlite"
    latest = tmp_path / "latest"
    shutil.copytree(EXPORT, latest)
    assert _cli("import-day", str(latest), "--db", str(db), "--as-of", AS_OF).returncode == 0
    shutil.rmtree(latest)
    _bank_only_folder(latest, [NEW_CREDIT])
    done = _cli("import-day", str(latest), "--db", str(db), "--as-of", AS_OF)
    assert done.returncode == 0, done.stderr
    with open_database(str(db)) as conn:
        stored = read_bank_lines(conn)
    assert len(stored) == len(lines) + 1
    renamed = stored[stored["utr"] == "UTIBN52621400099"].iloc[0]
    assert renamed["id"].startswith("latest@") and renamed["id"].endswith("/bank_statement.csv:2")
    assert (stored["id"] == "latest/bank_statement.csv:2").sum() == 1


def test_identical_lines_of_one_file_are_as_many_lines_as_the_file_shows() -> None:
    """Two equal credits on one day, no balance column: a statement showing both after one
    was stored adds the second only."""
    line = {
        "file": "bank_statement.csv",
        "txn_date": "2026-07-03",
        "value_date": "2026-07-03",
        "narration": "NEFT CR-RAZORPAY-UTR1",
        "reference": "UTR1",
        "utr": "UTR1",
        "debit": 0,
        "credit": 100,
        "balance": pd.NA,
    }
    stored = _bank([{**line, "id": "a/bank_statement.csv:2", "line_no": 2}])
    day = Dataset(
        bank=_bank(
            [
                {**line, "id": "b/bank_statement.csv:2", "line_no": 2},
                {**line, "id": "b/bank_statement.csv:3", "line_no": 3},
            ]
        ),
        has_bank_statement=True,
    )
    placed = place_bank_lines(day, stored, "b@00000000")
    assert (placed.known, placed.renamed) == (1, 0)
    assert placed.dataset.bank["id"].tolist() == ["b/bank_statement.csv:3"]


def test_a_blank_reference_is_the_same_whether_stored_as_empty_or_missing() -> None:
    line = {
        "id": "bank_statement.csv:2",
        "file": "bank_statement.csv",
        "line_no": 2,
        "txn_date": "2026-07-20",
        "value_date": "2026-07-20",
        "narration": "NEFT CR-SBIN0001234-MEHTA TRADERS",
        "utr": pd.NA,
        "debit": 0,
        "credit": 1_250_000,
        "balance": 13_943_685,
    }
    stored = _bank([{**line, "reference": pd.NA}])
    day = Dataset(bank=_bank([{**line, "reference": ""}]), has_bank_statement=True)
    assert place_bank_lines(day, stored, "x@0").known == 1


def _bank(rows: list[dict[str, object]]) -> pd.DataFrame:
    if not rows:
        return empty_frame(BANK_COLUMNS)
    frame = pd.DataFrame(rows)
    return frame[list(BANK_COLUMNS)].astype(BANK_COLUMNS)


@settings(max_examples=40, deadline=None)
@given(
    transactions=st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from([100, 250, 100]), st.booleans()),
        min_size=1,
        max_size=25,
    ),
    windows=st.lists(st.tuples(st.integers(1, 6), st.integers(0, 5)), min_size=1, max_size=6),
)
def test_statements_of_overlapping_whole_days_store_each_transaction_once(
    transactions: list[tuple[int, int, bool]], windows: list[tuple[int, int]]
) -> None:
    """Any sequence of downloads, each covering whole days (first day, length), stores
    exactly the transactions of the days they cover, each once: equal transactions of one
    day included (no balance column to tell them apart)."""
    ledger = [
        {
            "txn_date": f"2026-07-0{day}",
            "value_date": f"2026-07-0{day}",
            "narration": "NEFT CR" if credit else "CHRG",
            "reference": "",
            "utr": pd.NA,
            "debit": 0 if credit else amount,
            "credit": amount if credit else 0,
            "balance": pd.NA,
        }
        for day, amount, credit in sorted(transactions)
    ]
    stored = empty_frame(BANK_COLUMNS)
    covered: set[str] = set()
    for number, (first, length) in enumerate(windows):
        days = {f"2026-07-0{d}" for d in range(first, min(first + length, 6) + 1)}
        covered |= days
        rows = [row for row in ledger if row["txn_date"] in days]
        name = "bank_statement.csv"  # every download's name: ids clash, lines must not
        statement = _bank(
            [
                {**row, "file": name, "id": f"{name}:{i + 2}", "line_no": i + 2}
                for i, row in enumerate(rows)
            ]
        )
        placed = place_bank_lines(Dataset(bank=statement), stored, f"d{number}@0")
        assert placed.known + len(placed.dataset.bank) == len(statement)
        stored = pd.concat([stored, placed.dataset.bank], ignore_index=True)
        assert stored["id"].is_unique
    wanted = _bank(
        [
            {**row, "file": "x", "id": f"x:{i}", "line_no": i}
            for i, row in enumerate(r for r in ledger if r["txn_date"] in covered)
        ]
    )
    assert _content(stored) == _content(wanted)


def test_an_import_that_finds_its_lines_taken_meanwhile_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    folder = _bank_only_folder(tmp_path / "w2", [NEW_CREDIT])
    dataset, loaded = load_dataset(folder)
    db = tmp_path / "db.sqlite"
    with open_database(str(db)) as conn:
        import_dataset(conn, EXPORT)
        placed = place_among_stored(conn, dataset, str(folder), loaded.content_hash)
        assert placed.renamed == 1
        # Another import stores a line under the id this one was given, before it stores.
        taken = placed.dataset.bank["id"].iloc[0]
        conn.execute("UPDATE bank_lines SET id = ? WHERE id = 'bank_statement.csv:3'", (taken,))
        count = conn.execute("SELECT count(*) FROM imports").fetchone()[0]
        with pytest.raises(RefusedError, match="another import stored bank lines while"):
            store_dataset(
                conn,
                placed.dataset,
                source="files",
                location=str(folder),
                content_hash=loaded.content_hash,
                placed=placed,
            )
        assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == count
        assert conn.execute("SELECT count(*) FROM bank_lines").fetchone()[0] == 17


def test_a_staging_started_for_an_upsert_without_placed_lines_is_a_programming_error(
    tmp_path: Path,
) -> None:
    dataset, loaded = load_dataset(EXPORT)
    with open_database(str(tmp_path / "db.sqlite")) as conn:
        with pytest.raises(ValueError, match="bank lines placed first"):
            store_dataset(
                conn,
                dataset,
                source="files",
                location=str(EXPORT),
                content_hash=loaded.content_hash,
                staging=object(),  # type: ignore[arg-type]
            )
        assert conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
