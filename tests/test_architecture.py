"""House rules that code review alone would let slip."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQL_CALL = re.compile(r"\.(execute|executemany|executescript)\(|read_sql|to_sql\(")


def _python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_nothing_under_core_imports_streamlit() -> None:
    offenders = []
    for path in _python_files("core"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "streamlit" or n.startswith("streamlit.") for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_sql_is_executed_only_inside_core_db() -> None:
    offenders = []
    for folder in ("core", "pages"):
        for path in _python_files(folder):
            relative = path.relative_to(ROOT)
            if relative.parts[:2] == ("core", "db"):
                continue
            if SQL_CALL.search(path.read_text(encoding="utf-8")):
                offenders.append(str(relative))
    for path in [ROOT / "app.py", ROOT / "evaluation.py"]:
        if path.exists() and SQL_CALL.search(path.read_text(encoding="utf-8")):
            offenders.append(path.name)
    assert offenders == []


def test_pages_stay_thin() -> None:
    fat = {
        str(p.relative_to(ROOT)): n
        for p in _python_files("pages")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 150
    }
    assert fat == {}
