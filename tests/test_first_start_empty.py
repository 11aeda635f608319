"""The app's first start on an operator's database can leave it empty (tester report of
2026-12-04, finding 7: on an empty PostgreSQL database the first visit put the 5,000-payment
benchmark, 175 exceptions and 179 audit entries in for good). RAZORRECON_FIRST_START says
`benchmark` or `empty`; unset, SQLite (`make run`) and the demo get the benchmark as before,
PostgreSQL stays empty and the Overview says how to import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import bootstrap
from core.db import connect
from core.db.views import OPEN_STATUSES
from core.errors import ConfigError
from tests.app_signin import signed_in
from tests.conftest import ROOT

REAL_MONTH = ROOT / "tests" / "fixtures" / "real_exports" / "dashboard_csv"

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")


@pytest.fixture(autouse=True)
def _a_fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "_ready_paths", set())


def _counts(url: str) -> dict[str, int]:
    conn = connect(url)
    try:
        return {
            t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
            for t in ("imports", "payments", "runs", "exceptions", "audit_log")
        }
    finally:
        conn.close()


def _text(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in (*at.info, *at.markdown, *at.caption, *at.metric))


def test_first_start_setting_defaults_to_the_benchmark_on_sqlite_and_empty_on_postgresql(
    tmp_path: Path,
) -> None:
    sqlite_file = str(tmp_path / "x.sqlite")
    server = "postgresql://app:pw@127.0.0.1:5432/recon"
    assert bootstrap.first_start_builds_benchmark(sqlite_file, env={}) is True
    assert bootstrap.first_start_builds_benchmark(server, env={}) is False
    setting = bootstrap.FIRST_START_SETTING
    assert bootstrap.first_start_builds_benchmark(sqlite_file, env={setting: "empty"}) is False
    assert bootstrap.first_start_builds_benchmark(server, env={setting: "Benchmark"}) is True
    demo = {"RAZORRECON_DEMO": "1", setting: "empty"}  # the demo serves only the benchmark
    assert bootstrap.first_start_builds_benchmark(sqlite_file, env=demo) is True
    with pytest.raises(ConfigError, match=r"'benchmark'.*'empty'"):
        bootstrap.first_start_builds_benchmark(server, env={setting: "yes"})


def test_first_start_on_postgresql_stays_empty_says_how_to_import_then_shows_the_month(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAZORRECON_FIRST_START", raising=False)
    monkeypatch.setenv("DATABASE_URL", pg_url)
    monkeypatch.setenv("RAZORRECON_ADMINS", "admin@example.com")
    at = signed_in("admin@example.com")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _text(at)
    assert "No completed reconciliation yet" in shown and "import-day" in shown
    assert "empty, nothing imported yet" in shown
    counts = _counts(pg_url)
    assert counts == {"imports": 0, "payments": 0, "runs": 0, "exceptions": 0, "audit_log": 1}
    # (the one audit entry: RAZORRECON_ADMINS' admin added at sign-in)

    as_of = "2026-07-31T23:59:59+05:30"
    command = ["-m", "core", "import-day", str(REAL_MONTH), "--db", pg_url, "--as-of", as_of]
    done = subprocess.run([sys.executable, *command], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    at = signed_in("admin@example.com")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    conn = connect(pg_url)
    try:
        marks = ", ".join("?" for _ in OPEN_STATUSES)
        n, paise = conn.execute(
            "SELECT count(*), CAST(coalesce(sum(exposure_amount), 0) AS BIGINT) FROM exceptions"
            f" WHERE status IN ({marks})",
            tuple(OPEN_STATUSES),
        ).fetchone()
        sources = [r[0] for r in conn.execute("SELECT source FROM imports")]
    finally:
        conn.close()
    assert "benchmark" not in sources and n > 0
    metric = next(m for m in at.metric if m.label == "Open exceptions")
    assert metric.value == f"{n:,}", (metric.value, n, paise)


def test_sqlite_told_to_start_empty_stays_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "cold.sqlite")
    monkeypatch.setenv("DATABASE_URL", path)
    monkeypatch.setenv("RAZORRECON_FIRST_START", "empty")
    monkeypatch.setenv("RAZORRECON_ADMINS", "admin@example.com")
    at = signed_in("admin@example.com")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "No completed reconciliation yet" in _text(at)
    assert _counts(path)["payments"] == 0 and _counts(path)["imports"] == 0


def test_every_page_renders_on_a_database_left_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", str(tmp_path / "empty.sqlite"))
    monkeypatch.setenv("RAZORRECON_FIRST_START", "empty")
    monkeypatch.setenv("RAZORRECON_ADMINS", "admin@example.com")
    at = signed_in("admin@example.com")
    at.run()
    for page in (
        "pages/exceptions.py",
        "pages/settlement.py",
        "pages/books.py",
        "pages/investigation.py",
        "pages/data.py",
        "pages/evaluation.py",
        "pages/audit.py",
        "pages/approvals.py",
        "pages/admin.py",
    ):
        at.switch_page(page)
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not at.error, (page, [e.value for e in at.error])
