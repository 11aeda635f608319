"""`python -m core generate`: writes the dataset, says what it wrote, refuses bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.__main__ import main
from core.benchmark import GROUND_TRUTH_FILE, generate

ROOT = Path(__file__).resolve().parent.parent


def test_generate_command_writes_the_same_dataset_as_the_function(tmp_path: Path, capsys) -> None:
    code = main(["generate", str(tmp_path / "cli"), "--payments", "300", "--seed", "9"])
    assert code == 0
    reference = generate(tmp_path / "fn", payments=300, seed=9)
    out = capsys.readouterr().out
    assert reference.fingerprint in out
    assert "ground_truth.csv" in out
    for name in (*reference.files, GROUND_TRUTH_FILE):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "fn" / name).read_bytes()


def test_generate_command_takes_as_of_and_switches(tmp_path: Path) -> None:
    code = main(
        [
            "generate",
            str(tmp_path),
            "--payments",
            "300",
            "--as-of",
            "2026-03-31T23:59:59",
            "--no-faults",
            "--no-bank-statement",
        ]
    )
    assert code == 0
    assert not (tmp_path / "bank_statement.csv").exists()
    truth = (tmp_path / GROUND_TRUTH_FILE).read_text()
    assert "EXCEPTION" not in truth
    assert "no_bank_statement" in truth


def test_generate_command_exits_2_on_bad_arguments(tmp_path: Path) -> None:
    for extra in (["--payments", "10"], ["--as-of", "yesterday"]):
        done = subprocess.run(
            [sys.executable, "-m", "core", "generate", str(tmp_path), *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2, extra
        assert done.stderr.startswith("error: "), done.stderr
        assert not (tmp_path / "payments.csv").exists()
