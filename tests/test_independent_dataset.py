"""Issue 3's acceptance: a dataset written independently to spec section 2, scored through
`python -m core reconcile` like a user would run it.

`tests/independent/` writes eight dataset folders from the spec text alone (every file
variation sections 2-3 permit: CSV and JSON, envelope and list, paise and rupees, BOM,
CRLF, reordered, extra and absent columns, five bank layouts, custom calendars) with the
outcome the spec gives each entity. Each folder is reconciled by the real CLI in a
subprocess; the results are compared entity by entity.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.independent.score import (
    ROOT,
    Run,
    Verdict,
    file_problems,
    reconcile,
    score,
    summarise,
)
from tests.independent.writer import DatasetSpec, hdfc_csv_paise, write_suite


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Run], list[Verdict]]:
    root = tmp_path_factory.mktemp("independent")
    specs = write_suite(root / "datasets")
    out = root / "results"
    out.mkdir()
    runs = [reconcile(spec, out) for spec in specs]
    return runs, [v for run in runs for v in score(run)]


def test_independent_datasets_reconcile_with_well_formed_results(
    scored: tuple[list[Run], list[Verdict]],
) -> None:
    runs, _ = scored
    assert {run.spec.name: file_problems(run) for run in runs} == {
        run.spec.name: [] for run in runs
    }


def test_independent_dataset_outcomes_are_at_least_99_5_percent_right(
    scored: tuple[list[Run], list[Verdict]],
) -> None:
    _, verdicts = scored
    summary = summarise(verdicts)
    assert summary.total > 2000
    assert summary.accuracy >= 0.995, [v.describe() for v in summary.wrong]


def test_independent_dataset_every_reason_code_has_recall_of_at_least_95_percent(
    scored: tuple[list[Run], list[Verdict]],
) -> None:
    _, verdicts = scored
    recall = summarise(verdicts).recall
    codes = {label for label in recall if label not in ("MATCHED", "ABSENT")}
    assert len(codes) >= 20  # every code of spec section 5 and both pending reasons
    low = {label: (hit, n) for label, (hit, n) in recall.items() if hit < 0.95 * n}
    assert low == {}


def test_independent_dataset_agrees_exactly_on_every_entity_the_spec_fixes(
    scored: tuple[list[Run], list[Verdict]],
) -> None:
    _, verdicts = scored
    sure = [v for v in verdicts if v.expect is None or v.expect.sure]
    disagreements = [v.describe() for v in sure if not v.right or v.problems]
    assert disagreements == []


def _run_cli(folder: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "core", "reconcile", str(folder), "--out", str(out), *options]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def _corrupt_line(path: Path, line_no: int, old: str, new: str) -> None:
    raw = path.read_bytes().decode("utf-8")
    newline = "\r\n" if "\r\n" in raw else "\n"
    lines = raw.split(newline)
    assert old in lines[line_no - 1], lines[line_no - 1]
    lines[line_no - 1] = lines[line_no - 1].replace(old, new, 1)
    path.write_bytes(newline.join(lines).encode("utf-8"))


@pytest.fixture()
def dataset(tmp_path: Path) -> DatasetSpec:
    return hdfc_csv_paise(tmp_path / "datasets")


def test_independent_dataset_with_a_malformed_amount_fails_closed_naming_file_line_column(
    dataset: DatasetSpec, tmp_path: Path
) -> None:
    recon = dataset.folder / "settlement_recon.csv"
    header = recon.read_text(encoding="utf-8-sig").splitlines()[0].split(",")
    fourth = recon.read_text(encoding="utf-8-sig").splitlines()[3].split(",")
    _corrupt_line(recon, 4, f",{fourth[header.index('credit')]},", ",12x34,")
    out = tmp_path / "results.csv"
    proc = _run_cli(dataset.folder, out, *dataset.options)
    assert proc.returncode == 2
    assert "settlement_recon.csv:4:credit" in proc.stderr
    assert not out.exists()


def test_independent_bank_statement_with_a_bad_date_fails_closed_naming_file_line_column(
    dataset: DatasetSpec, tmp_path: Path
) -> None:
    bank = dataset.folder / "bank_statement.csv"
    line_no = 9  # banner (4), header, separator, then data
    day = bank.read_text(encoding="utf-8").splitlines()[line_no - 1].split(",")[0]
    _corrupt_line(bank, line_no, day, "31/02/26")
    out = tmp_path / "results.csv"
    proc = _run_cli(dataset.folder, out, *dataset.options)
    assert proc.returncode == 2
    assert f"bank_statement.csv:{line_no}:" in proc.stderr and "Date" in proc.stderr
    assert not out.exists()
