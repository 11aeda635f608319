"""House rules that code review alone would let slip."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import SPEC_EXAMPLE

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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(tree: ast.AST, package: str) -> list[str]:
    """Every module a file names as an import, wherever it stands (top level or inside a
    function): `import a.b`, `from a import b` (a.b when b is a module, else a), relative
    imports, and string literals given to `importlib.import_module`."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names += [base, *(f"{base}.{a.name}" for a in node.names)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.append(node.args[0].value)
    return names


def _core_import_graph() -> dict[str, set[str]]:
    """core module -> the core modules it imports. An import of a package's attribute that
    is not a module counts as an import of the package; a module's own ancestors (imported
    by Python before it anyway) are left out."""
    files = {_module_name(p): p for p in _python_files("core")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for imported in _imported_names(ast.parse(path.read_text(encoding="utf-8")), package):
            while imported and imported not in files:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):
                targets.add(imported)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_sees_a_cycle_through_a_lazy_import_module_call() -> None:
    tree = ast.parse(
        "import importlib\ndef later():\n    return importlib.import_module('core.b')\n"
    )
    graph = {"core.a": set(_imported_names(tree, "core")) - {"importlib"}, "core.b": {"core.a"}}
    assert graph["core.a"] == {"core.b"}
    assert _cycles(graph) == [["core.a", "core.b"]]
    assert _cycles({"core.a": {"core.b"}, "core.b": set()}) == []


def test_core_modules_import_one_another_without_a_cycle() -> None:
    graph = _core_import_graph()
    assert "core.views.runs" in graph["core.bootstrap"]  # the graph sees real arrows
    assert _cycles(graph) == []


def test_the_views_package_reexports_nothing() -> None:
    init = ast.parse((ROOT / "core" / "views" / "__init__.py").read_text(encoding="utf-8"))
    assert [type(n).__name__ for n in init.body] == ["Expr"]  # its docstring only


def test_ui_and_pages_import_core_plainly() -> None:
    """No importlib, no __import__, no `module("core.x", ...)` helper in ui/ or pages/: every
    core package they use is a plain import a reader (and the graph above) can see."""
    offenders = []
    for folder in ("ui", "pages"):
        for path in _python_files(folder):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                name = (
                    node.id
                    if isinstance(node, ast.Name)
                    else node.attr
                    if isinstance(node, ast.Attribute)
                    else None
                )
                imports_importlib = (
                    isinstance(node, ast.Import) and any(a.name == "importlib" for a in node.names)
                ) or (isinstance(node, ast.ImportFrom) and node.module == "importlib")
                if imports_importlib or name in ("import_module", "__import__", "module"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_a_reconcile_on_sqlite_imports_no_postgresql_driver(tmp_path: Path) -> None:
    """psycopg takes ~0.2 s to import; the command line on SQLite files never needs it."""
    db = tmp_path / "r.sqlite"
    code = (
        "import sys; from core.__main__ import main; "
        "code = main(['reconcile', sys.argv[1], '--db', sys.argv[2], '--out', sys.argv[3]]); "
        "print(code, 'psycopg' in sys.modules)"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(SPEC_EXAMPLE / "dataset"),
            str(db),
            str(tmp_path / "r.csv"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.stdout.strip().splitlines()[-1] == "0 False", done.stderr
