"""The engine cannot read the ground truth: not by import, not from the dataset folder."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.benchmark import GROUND_TRUTH_FILE, generate

ROOT = Path(__file__).resolve().parent.parent
ENGINE_SIDE = ("core/engine", "core/ingest", "core/pipeline.py", "core/db")
FORBIDDEN = ("core.benchmark", "core.evaluation")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_engine_importer_and_pipeline_import_nothing_from_the_benchmark() -> None:
    pytest.importorskip("core.engine")
    files = [
        path
        for part in ENGINE_SIDE
        for path in ((ROOT / part).rglob("*.py") if (ROOT / part).is_dir() else [ROOT / part])
        if path.exists()
    ]
    assert any("engine" in str(p) for p in files)
    offenders = {
        str(path.relative_to(ROOT)): name
        for path in files
        for name in _imports(path)
        if name.startswith(FORBIDDEN)
    }
    assert offenders == {}


def test_reconciling_loads_no_benchmark_module() -> None:
    pytest.importorskip("core.engine")
    script = (
        "import sys\n"
        "from core.engine import EngineParams, reconcile\n"
        "from core.ingest import load_dataset\n"
        f"dataset, _ = load_dataset({str(ROOT / 'tests/fixtures/spec_example/dataset')!r})\n"
        "reconcile(dataset, EngineParams(), 1782844199)\n"
        "names = ('core.benchmark', 'core.evaluation')\n"
        "print(sorted(m for m in sys.modules if m.startswith(names)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_results_are_byte_identical_without_the_ground_truth(tmp_path: Path) -> None:
    pytest.importorskip("core.engine.cli")
    generated = generate(tmp_path / "with", payments=400, seed=21)
    shutil.copytree(tmp_path / "with", tmp_path / "without")
    (tmp_path / "without" / GROUND_TRUTH_FILE).unlink()
    outputs = []
    for name in ("with", "without"):
        out = tmp_path / f"results-{name}.csv"
        subprocess.run(
            [sys.executable, "-m", "core", "reconcile", str(tmp_path / name), "--out", str(out),
             "--as-of", generated.as_of_iso],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )  # fmt: skip
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") > 400
