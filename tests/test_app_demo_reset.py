"""The demo's "Reset demo" puts the benchmark back (issue 13, item 5): after a visitor
replaced the data, reconciled something else and decided an exception in their sandbox,
one click restores the synthetic benchmark exactly as the shared database holds it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import access, demo
from core.db import connect, migrate
from core.engine import EngineParams
from core.errors import ConfigError
from core.ingest import import_dataset
from core.pipeline import reconcile_database
from core.review import list_exceptions, resolve
from tests.app_builder import build
from tests.conftest import ROOT, SPEC_EXAMPLE
from tests.engine_support import AS_OF
from tests.run_lock_support import four_kib_file
from ui import keys

pytestmark = pytest.mark.usefixtures("streamlit_navigation_v2")
BANNER = "These data are the synthetic benchmark"


@pytest.fixture
def benchmark_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "benchmark.sqlite"
    conn = connect(path)
    migrate(conn)
    build(conn, payments=400, seed=3)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", str(path))
    monkeypatch.setenv(demo.DEMO_ENV, "1")
    monkeypatch.setenv(demo.DIR_ENV, str(tmp_path / "sandboxes"))  # not the machine's /tmp
    yield path


def _state(path: Path) -> dict[str, object]:
    """What 'the benchmark' means for a visitor: its data, its latest run, its queue."""
    conn = connect(path)
    conn.row_factory = sqlite3.Row
    try:
        run = conn.execute(
            "SELECT id, source, as_of FROM runs WHERE status = 'completed' ORDER BY id DESC"
        ).fetchone()
        return {
            "payments": conn.execute("SELECT count(*) FROM payments").fetchone()[0],
            "imports": conn.execute("SELECT count(*) FROM imports").fetchone()[0],
            "run": tuple(run),
            "open": conn.execute(
                "SELECT count(*) FROM exceptions WHERE status NOT IN ('RESOLVED', 'AUTO_CLEARED')"
            ).fetchone()[0],
        }
    finally:
        conn.close()


def _banner_shown(at: AppTest) -> bool:
    return any(BANNER in i.value for i in at.info)


def test_reset_demo_restores_the_benchmark_after_a_replace_a_run_and_a_decision(
    benchmark_db: Path,
) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    at.button(key=f"{keys.DEMO_SIGN_IN}-admin").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _banner_shown(at)
    sandbox = Path(at.session_state[keys.DEMO_SANDBOX])
    benchmark = _state(benchmark_db)

    # The visitor replaces the benchmark with other files, reconciles them, decides one.
    conn = connect(sandbox)
    first = list_exceptions(conn, limit=1)[0]
    resolve(conn, first.id, actor=demo.PERSONAS["admin"], note="demo", request_id="demo-1")
    import_dataset(conn, SPEC_EXAMPLE / "dataset", replace=True)
    reconcile_database(conn, EngineParams(), AS_OF, "files")
    conn.close()
    changed = _state(sandbox)
    assert changed != benchmark and changed["run"][1] == "files"  # type: ignore[index]
    at.run()
    assert not _banner_shown(at)

    at.button(key=keys.DEMO_RESET).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert _state(sandbox) == benchmark
    assert _banner_shown(at)
    assert any("back to the start" in s.value for s in at.success)
    assert _state(benchmark_db) == benchmark  # the shared database never changed
    conn = connect(sandbox)
    assert access.get_user(conn, demo.PERSONAS["admin"]).role == "admin"  # still signed in
    conn.close()


def test_demo_mode_on_a_postgresql_database_is_refused_with_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://razorrecon_app:secret@127.0.0.1:5432/razorrecon"
    monkeypatch.setenv(demo.DIR_ENV, str(tmp_path / "sandboxes"))
    with pytest.raises(ConfigError, match="RAZORRECON_DEMO=1 needs a SQLite database"):
        demo.create_sandbox(url)
    assert list((tmp_path / "sandboxes").glob(f"{demo.PREFIX}*")) == []  # no folder left
    with pytest.raises(ConfigError, match="point DATABASE_URL at a SQLite file"):
        demo.reset_sandbox(url, tmp_path / "sandbox.sqlite")
    assert not (tmp_path / "sandbox.sqlite").exists()


@pytest.mark.postgres
def test_the_app_in_demo_mode_on_postgresql_says_why_and_offers_no_sign_in(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = connect(pg_url)
    build(conn, payments=50, seed=3)
    conn.close()
    monkeypatch.setenv("DATABASE_URL", pg_url)
    monkeypatch.setenv(demo.DEMO_ENV, "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("RAZORRECON_DEMO=1 needs a SQLite database" in e.value for e in at.error)
    assert not [b for b in at.button if str(b.key).startswith(keys.DEMO_SIGN_IN)]
    assert keys.DEMO_SANDBOX not in at.session_state


def test_a_sandbox_copies_a_template_made_with_4_kib_pages(tmp_path: Path) -> None:
    # A demo's shared database from before new files took 8 KiB pages: each visitor's copy
    # takes its page size (SQLite's backup refuses pages of another size in WAL mode).
    template = tmp_path / "old-template.sqlite"
    four_kib_file(template)
    conn = connect(template)
    migrate(conn)
    build(conn, payments=120, seed=4)
    conn.close()
    sandbox = demo.create_sandbox(template)
    try:
        assert _state(sandbox) == _state(template)
        demo.reset_sandbox(template, sandbox)
        assert _state(sandbox) == _state(template)
    finally:
        demo.remove_sandbox(sandbox)
