"""Hostile numbers and dates on the command line end in a one-line refusal (exit 2,
argparse-style), never a traceback, and the calendar has one upper bound for the command
line and the Data page (independent attacker, round 3, finding 8)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.calendar import CALENDAR_LIMITS, CalendarParams
from core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DATASET = "tests/fixtures/spec_example/dataset"
HUGE = "99999999999999999999"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bounds")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "reconcile",
            DATASET,
            "--out",
            str(folder / "r.csv"),
            "--as-of",
            "2026-06-30T23:59:59+05:30",
            "--db",
            str(folder / "db.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return folder / "db.sqlite"


CASES = [
    (
        ["reconcile", DATASET, "--out", "{tmp}/o.csv", "--settlement-days", HUGE],
        "--settlement-days",
    ),
    (
        ["reconcile", DATASET, "--out", "{tmp}/o.csv", "--settlement-days", "1000000000"],
        "at most 30",
    ),
    (["reconcile", DATASET, "--out", "{tmp}/o.csv", "--international-days", "61"], "at most 60"),
    (["reconcile", DATASET, "--out", "{tmp}/o.csv", "--grace-days", HUGE], "--grace-days"),
    (["reconcile", DATASET, "--out", "{tmp}/o.csv", "--bank-days", "31"], "at most 30"),
    (["rollforward", "--db", "{db}", "--month", "9999-12"], "--month"),
    (["rollforward", "--db", "{db}", "--month", "0000-12"], "--month"),
    (["journal", "--db", "{db}", "--month", "9999-12"], "--month"),
    (["close", "--db", "{db}", "--month", "9999-12"], "--month"),
    (["generate", "{tmp}/g", "--payments", "100000000000"], "at most 10,000,000"),
    (["generate", "{tmp}/g", "--seed", "-1"], "--seed"),
    (["review", "show", HUGE, "--db", "{db}"], "EXCEPTION_ID"),
    (["investigate", HUGE, "--db", "{db}"], "EXCEPTION_ID"),
    (["packet", "--db", "{db}", "--exception", HUGE, "--out", "{tmp}/p.zip"], "--exception"),
    (
        ["packet", "--db", "{db}", "--exception", "1", "--out", "{tmp}/p.zip", "--as-of", HUGE],
        "--as-of",
    ),
]


@pytest.mark.parametrize(
    ("argv", "named"), CASES, ids=[" ".join(c[0][:1] + c[0][-2:]) for c in CASES]
)
def test_hostile_numbers_and_dates_are_refused_in_one_line_with_exit_2(
    database: Path, tmp_path: Path, argv: list[str], named: str
) -> None:
    args = [a.format(tmp=tmp_path, db=database) for a in argv]
    done = subprocess.run(
        [sys.executable, "-m", "core", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    assert named in done.stderr.strip().splitlines()[-1], done.stderr[-500:]
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "g").exists()


def test_the_calendar_refuses_days_beyond_the_data_pages_bounds() -> None:
    assert CALENDAR_LIMITS == {
        "settlement_days": 30,
        "international_days": 60,
        "grace_days": 30,
        "bank_days": 30,
    }
    with pytest.raises(ConfigError, match="settlement_days: at most 30 working days"):
        CalendarParams(settlement_days=1_000_000_000)
    with pytest.raises(ConfigError, match="grace_days: must be 0 or more"):
        CalendarParams(grace_days=-1)
    assert CalendarParams(settlement_days=30, international_days=60).settlement_days == 30


def test_the_data_page_takes_its_bounds_from_the_calendar() -> None:
    page = (ROOT / "pages" / "data.py").read_text()
    assert "CALENDAR_LIMITS" in page and ", 0, 30," not in page and ", 0, 60," not in page
