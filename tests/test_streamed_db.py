"""`reconcile DIR --stream --db DB` (core.streamed): imported, reconciled and stored in the
database window by window, with the outcomes, raw tables and exception queue the in-memory
path gives, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core.benchmark import generate
from core.db import connect, migrate
from core.db.raw import read_dataset
from core.db.runs import get_run, latest_completed_run, read_outcome_frame
from core.engine import EngineParams
from core.errors import InputError
from core.pipeline import reconcile_folder_into_db
from core.streamed import add_counts, stream_folder_into_db

ROOT = Path(__file__).resolve().parent.parent


def _fresh_sqlite(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    migrate(conn)
    return conn


def _sorted(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    return frame.sort_values(key, kind="stable").reset_index(drop=True)


def _open_exceptions(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    rows = conn.execute("SELECT entity_type, entity_id, reason_code, status FROM exceptions")
    return sorted((str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows)


def test_streamed_run_into_the_database_equals_the_in_memory_run(
    db_conn: sqlite3.Connection, tmp_path: Path
) -> None:
    generated = generate(tmp_path / "ds", payments=3000, seed=19)
    params = EngineParams()
    seen: list[tuple[float, str]] = []
    stored = stream_folder_into_db(
        db_conn,
        tmp_path / "ds",
        params,
        generated.as_of,
        days_per_window=3,
        block_bytes=64 << 10,
        progress=lambda f, m: seen.append((f, m)),
    )
    with _fresh_sqlite(tmp_path / "memory.sqlite") as memory:
        expected = reconcile_folder_into_db(
            memory, tmp_path / "ds", params=params, as_of=generated.as_of
        )
        pd.testing.assert_frame_equal(
            read_outcome_frame(db_conn, stored.run_id),
            read_outcome_frame(memory, expected.run_id),
        )
        assert stored.windows > 1
        assert stored.outcomes == len(expected.outcomes)
        run = get_run(db_conn, stored.run_id)
        assert run is not None and run.status == "completed"
        assert run.counts == get_run(memory, expected.run_id).counts  # type: ignore[union-attr]
        ours, theirs = read_dataset(db_conn), read_dataset(memory)
        for table, key in (("payments", "id"), ("refunds", "id"), ("recon", "row_key")):
            pd.testing.assert_frame_equal(
                _sorted(getattr(ours, table), key), _sorted(getattr(theirs, table), key)
            )
        assert len(ours.settlements) == len(theirs.settlements)
        assert len(ours.bank) == len(theirs.bank)
        assert _open_exceptions(db_conn) == _open_exceptions(memory)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("window" in m for _, m in seen)


def test_streamed_run_into_the_database_writes_nothing_when_a_file_is_bad(
    tmp_path: Path,
) -> None:
    generated = generate(tmp_path / "ds", payments=1500, seed=5)
    payments = tmp_path / "ds" / "payments.csv"
    lines = payments.read_text(encoding="utf-8").splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    cells = lines[7].rstrip("\n").split(",")
    cells[header.index("amount")] = "12x"
    lines[7] = ",".join(cells) + "\n"
    payments.write_text("".join(lines), encoding="utf-8")
    with _fresh_sqlite(tmp_path / "db.sqlite") as conn:
        with pytest.raises(InputError) as caught:
            stream_folder_into_db(conn, tmp_path / "ds", EngineParams(), generated.as_of)
        assert any(p.file == "payments.csv" and p.line == 8 for p in caught.value.problems)
        assert latest_completed_run(conn) is None
        assert len(read_dataset(conn).payments) == 0


def test_cli_stream_db_stores_the_run_and_writes_the_in_memory_results_csv(
    tmp_path: Path,
) -> None:
    generate(tmp_path / "ds", payments=2000, seed=29)
    as_of = "2026-06-30T23:59:59+05:30"

    def reconcile(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "core",
                "reconcile",
                str(tmp_path / "ds"),
                "--as-of",
                as_of,
                *extra,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )

    stream_db = ("--stream", "--db", str(tmp_path / "s.sqlite"))
    done = reconcile(*stream_db, "--out", str(tmp_path / "s.csv"))
    reconcile("--out", str(tmp_path / "m.csv"))
    assert (tmp_path / "s.csv").read_bytes() == (tmp_path / "m.csv").read_bytes()
    assert "run 1 stored in" in done.stdout
    assert "Reconciling and saving" in done.stderr  # the tqdm bar's text
    with connect(tmp_path / "s.sqlite") as conn:
        run = latest_completed_run(conn)
        assert run is not None and run.counts is not None
        assert run.counts["outcomes"] == len((tmp_path / "m.csv").read_text().splitlines()) - 1


def test_counts_of_windows_add_up_to_the_counts_of_the_whole() -> None:
    from core.engine.results import counts

    frame = pd.DataFrame(
        {
            "status": ["MATCHED", "EXCEPTION", "PENDING", "EXCEPTION"],
            "entity_type": ["payment", "payment", "refund", "settlement"],
            "reason_code": [None, "AMOUNT_MISMATCH", "AWAITING", "AMOUNT_MISMATCH"],
            "exposure_class": [None, "amount_at_risk", None, "structural"],
            "exposure_amount": [0, 500, 0, 0],
        }
    )
    whole = counts(frame)
    halves = add_counts(counts(frame.iloc[:2]), counts(frame.iloc[2:]))
    ordered = {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in whole.items()}
    assert halves == ordered
