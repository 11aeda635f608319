"""`python -m core reconcile` as a whole process: the early parse of the big CSV files
(started before pandas is imported) and the exit without interpreter teardown
(core.__main__.start_early_parse, exit_now; docs/benchmark.md, sixth round)."""

from __future__ import annotations

import datetime as dt
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from core.__main__ import EXIT_WITHOUT_FREEING, early_parse_folder, main, start_early_parse
from core.benchmark import generate
from core.ingest import load as ingest_load
from core.ingest import readers
from tests.conftest import ROOT
from tests.test_pipeline_incremental import split_into_days

AS_OF = "2026-06-30T23:59:59+05:30"
IST = dt.timezone(dt.timedelta(hours=5, minutes=30))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated API-layout dataset: payments.csv and settlement_recon.csv among it."""
    folder = tmp_path_factory.mktemp("generated") / "dataset"
    assert main(["generate", str(folder), "--payments", "3000"]) == 0
    assert (folder / "payments.csv").is_file() and (folder / "settlement_recon.csv").is_file()
    return folder


def _reconcile_args(folder: Path, out: Path | str) -> list[str]:
    return ["reconcile", str(folder), "--out", str(out), "--as-of", AS_OF]


def _taken_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file every CSV of any size is parsed early; returns the names the load took."""
    monkeypatch.setattr(readers, "LARGE_FILE_BYTES", 0)
    taken: list[str] = []
    original: Callable[..., object] = ingest_load.take_prefetched_csv

    def recording(path: Path, *args: object) -> object:
        found = original(path, *args)
        if found is not None:
            taken.append(path.name)
        return found

    monkeypatch.setattr(ingest_load, "take_prefetched_csv", recording)
    return taken


def test_early_parse_is_only_for_a_reconcile_that_stores_nothing() -> None:
    assert early_parse_folder(["reconcile", "d", "--out", "r.csv"]) == "d"
    assert early_parse_folder(["reconcile", "--out=r.csv", "--as-of", "x", "d"]) == "d"
    assert early_parse_folder(["reconcile", "--partitions", "d", "--out", "-"]) == "d"
    assert early_parse_folder(["reconcile", "d", "--out", "r.csv", "--db", "x"]) is None
    assert early_parse_folder(["reconcile", "d", "--out", "r.csv", "--db=x"]) is None
    assert early_parse_folder(["reconcile", "d", "--out", "r.csv", "--stream"]) is None
    assert early_parse_folder(["reconcile", "d", "--d", "x"]) is None  # --db or --days-per-window?
    assert early_parse_folder(["reconcile", "d", "e", "--out", "r.csv"]) is None
    assert early_parse_folder(["reconcile", "--out"]) is None
    assert early_parse_folder(["reconcile", "-h"]) is None
    assert early_parse_folder(["import", "d", "--db", "x"]) is None
    assert early_parse_folder([]) is None


def test_the_early_read_of_the_command_line_uses_reconciles_own_options_without_pandas() -> None:
    code = (
        "import sys\n"
        "from core.__main__ import early_parse_folder\n"
        "print(early_parse_folder(['reconcile', 'd', '--out', 'r.csv', '--days', '3']),\n"
        "      early_parse_folder(['reconcile', 'd', '--out', 'r.csv', '--grace-days', 'x']),\n"
        "      'pandas' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    # An abbreviation argparse accepts is accepted; a value it refuses is refused.
    assert done.stdout.split() == ["d", "None", "False"]


def test_an_early_parse_is_taken_and_gives_the_same_results(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain.csv"
    assert main(_reconcile_args(generated, plain)) == 0
    taken = _taken_parses(monkeypatch)
    early = tmp_path / "early.csv"
    start_early_parse(_reconcile_args(generated, early))
    assert main(_reconcile_args(generated, early)) == 0
    assert {"payments.csv", "settlement_recon.csv"} <= set(taken)
    assert early.read_bytes() == plain.read_bytes()
    assert not readers._PREFETCHED  # nothing left behind


def test_an_early_parse_of_a_bad_file_fails_with_the_same_problems(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(generated, folder)
    lines = (folder / "payments.csv").read_text(encoding="utf-8").splitlines()
    lines[5] += ',"unclosed'  # line 6: one field too many, its quote never closed
    (folder / "payments.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(_reconcile_args(folder, tmp_path / "plain.csv")) == 2
    plain_err = capsys.readouterr().err
    assert "payments.csv:6" in plain_err
    taken = _taken_parses(monkeypatch)
    start_early_parse(_reconcile_args(folder, tmp_path / "early.csv"))
    assert main(_reconcile_args(folder, tmp_path / "early.csv")) == 2
    assert "payments.csv" in taken
    assert capsys.readouterr().err == plain_err
    assert not (tmp_path / "plain.csv").exists() and not (tmp_path / "early.csv").exists()


def test_a_file_changed_after_its_early_parse_began_is_read_again(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(generated, folder)
    taken = _taken_parses(monkeypatch)
    start_early_parse(_reconcile_args(folder, tmp_path / "r.csv"))
    payments = folder / "payments.csv"
    lines = payments.read_text(encoding="utf-8").splitlines()
    payments.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # one payment fewer
    assert main(_reconcile_args(folder, tmp_path / "r.csv")) == 0
    assert "payments.csv" not in taken and "settlement_recon.csv" in taken
    assert main(_reconcile_args(folder, tmp_path / "again.csv")) == 0
    assert (tmp_path / "r.csv").read_bytes() == (tmp_path / "again.csv").read_bytes()


def _module_run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
    )


def test_a_process_ending_without_teardown_writes_complete_outputs(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """results.csv on a pipe (far more than a pipe's buffer) and in a file are the in-process
    run's, byte for byte, and the report reaches its stream whole."""
    plain = tmp_path / "plain.csv"
    assert main(_reconcile_args(generated, plain)) == 0
    report = capsys.readouterr().out
    piped = _module_run(_reconcile_args(generated, "-"))
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout) > 1 << 16
    assert piped.stdout == plain.read_bytes()
    filed = _module_run(_reconcile_args(generated, tmp_path / "filed.csv"))
    assert filed.returncode == 0, filed.stderr
    assert (tmp_path / "filed.csv").read_bytes() == plain.read_bytes()
    tail = report.strip().splitlines()[-1].split("timings:")[0]  # timings differ run to run
    assert filed.stdout.decode().strip().splitlines()[-1].startswith(tail)
    assert len(filed.stdout.decode().splitlines()) == len(report.splitlines())


def test_a_process_ending_without_teardown_keeps_its_error_exit_codes(
    generated: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "dataset"
    shutil.copytree(generated, folder)
    lines = (folder / "payments.csv").read_text(encoding="utf-8").splitlines()
    lines[5] += ',"unclosed'
    (folder / "payments.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bad = _module_run(_reconcile_args(folder, tmp_path / "r.csv"))
    assert bad.returncode == 2
    assert b"payments.csv:6" in bad.stderr and bad.stderr.endswith(b"\n")
    assert not (tmp_path / "r.csv").exists()
    missing = _module_run(_reconcile_args(tmp_path / "nowhere", tmp_path / "r.csv"))
    assert missing.returncode == 2 and b"no such dataset folder" in missing.stderr
    wrong = _module_run(["reconcile", str(folder), "--out", "r.csv", "--grace-days", "-1"])
    assert wrong.returncode == 2 and b"--grace-days" in wrong.stderr


def test_import_day_ending_without_teardown_stores_the_same_run_as_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`import-day` ends without interpreter teardown too (EXIT_WITHOUT_FREEING): its
    database and snapshot are closed by then, so a day stored by the process is the one an
    in-process call stores, and its report reaches stdout whole."""
    generated = generate(tmp_path / "full", payments=1500, seed=11)
    last = dt.datetime.fromtimestamp(generated.as_of, tz=IST).date()
    cut = last - dt.timedelta(days=2)
    days = split_into_days(tmp_path / "full", tmp_path / "days", [cut])
    as_ofs = [f"{cut - dt.timedelta(days=1)}T23:59:59+05:30", AS_OF]
    assert "import-day" in EXIT_WITHOUT_FREEING
    reports = []
    for name, run in (("process", _module_run), ("in-process", None)):
        db = tmp_path / name / "day.sqlite"
        db.parent.mkdir()
        for day, as_of in zip(days, as_ofs, strict=True):
            args = ["import-day", str(day), "--db", str(db), "--as-of", as_of]
            if run is None:
                assert main(args) == 0
                reports.append(capsys.readouterr().out)
            else:
                done = run(args)
                assert done.returncode == 0, done.stderr
                reports.append(done.stdout.decode())
        assert any((db.parent / "day.sqlite.snapshots").glob("run-2.*.arrow"))
    assert "incremental over run 1" in reports[1]
    for process, in_process in ((reports[0], reports[2]), (reports[1], reports[3])):
        assert process.splitlines()[-1].startswith("timings: ")
        # the first line names the database; the timings differ run to run
        mine, theirs = (r.split("timings:")[0].splitlines()[1:] for r in (process, in_process))
        assert mine == theirs
    outcomes = []
    for name in ("process", "in-process"):
        conn = sqlite3.connect(tmp_path / name / "day.sqlite")
        outcomes.append(conn.execute("SELECT * FROM outcomes ORDER BY 1, 2, 3").fetchall())
        conn.close()
    assert outcomes[0] == outcomes[1] and len(outcomes[0]) > 0
