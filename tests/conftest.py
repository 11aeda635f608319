"""Shared fixtures. Real SQLite files in WAL mode under pytest's tmp_path."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from core.benchmark import generate
from core.db import connect, migrate

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPEC_EXAMPLE = FIXTURES / "spec_example"

# Tests assert behaviour and never time themselves: hypothesis's default 200 ms deadline per
# example made properties fail on a loaded machine (two test workers beside other jobs).
settings.register_profile("house", deadline=None)
settings.load_profile("house")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh, migrated SQLite file."""
    path = tmp_path / "razorrecon.sqlite"
    conn = connect(path)
    migrate(conn)
    conn.close()
    return path


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    connection = connect(db_path)
    yield connection
    connection.close()


@pytest.fixture
def streamlit_navigation_v2(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest resets Streamlit's 'pages/ folder means v1 multipage app' flag before every
    run; the real server clears it once app.py has called st.navigation. Do the same."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self: PagesManager, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture
def browser() -> Iterator[object]:
    """Debian's headless Chromium, driven by Playwright (tests.app_browser's settings)."""
    from playwright.sync_api import sync_playwright

    from tests.app_browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


# --- PostgreSQL: one server per pytest process (xdist worker), one database per test. ---
# tests/postgres_server.py starts it as the unprivileged `postgres` user. A database test
# runs on both backends through `db_url` / `db_conn` (the PostgreSQL run is marked
# `postgres`: select it with `-m postgres`, leave it out with `-m "not postgres"`).


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "postgres: runs against a real PostgreSQL server the tests start"
    )
    config.addinivalue_line(
        "markers",
        "sqlite_only: uses SQLite's own SQL (e.g. dropping its triggers) in a module whose "
        "other tests run on both backends; tests/test_db_postgres.py proves the same on "
        "PostgreSQL",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A `sqlite_only` test is not collected for its PostgreSQL parameter (per test or
    per module)."""

    def on_postgres(item: pytest.Item) -> bool:
        params = getattr(getattr(item, "callspec", None), "params", {})
        return "postgres" in (params.get("db_url"), params.get("module_db_url"))

    kept = [
        item for item in items if not (item.get_closest_marker("sqlite_only") and on_postgres(item))
    ]
    if len(kept) != len(items):
        items[:] = kept


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[object]:
    from tests.postgres_server import PostgresServer, postgres_bin

    if postgres_bin() is None:
        pytest.fail("PostgreSQL is not installed (apt-get install postgresql; .ci/run does)")
    server = PostgresServer().start()
    # The app's first start leaves an empty PostgreSQL database empty unless told otherwise
    # (core.bootstrap.first_start_builds_benchmark); the tests written for the cold start on
    # PostgreSQL ask for the benchmark, as an operator would. tests/test_first_start_empty.py
    # takes the setting away to prove the default.
    mp = pytest.MonkeyPatch()
    mp.setenv("RAZORRECON_FIRST_START", os.environ.get("RAZORRECON_FIRST_START", "benchmark"))
    try:
        server.migrate_template()
        yield server
    finally:
        mp.undo()
        server.stop()


@pytest.fixture
def pg_url(postgres_server: object) -> Iterator[str]:
    """The app role's URL of a fresh, migrated PostgreSQL database (a template clone);
    DATABASE_OWNER_URL is set to the owner role's URL of the same database."""
    from tests.postgres_server import OWNER_ROLE, PostgresServer

    assert isinstance(postgres_server, PostgresServer)
    name = postgres_server.fresh_database()
    mp = pytest.MonkeyPatch()
    mp.setenv("DATABASE_OWNER_URL", postgres_server.url(name, OWNER_ROLE))
    try:
        yield postgres_server.url(name)
    finally:
        mp.undo()
        postgres_server.release_database(name)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, migrated database: a SQLite file's path, or a PostgreSQL URL."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    path = tmp_path / "razorrecon.sqlite"
    connection = connect(path)
    migrate(connection)
    connection.close()
    return str(path)


@pytest.fixture
def db_conn(db_url: str) -> Iterator[sqlite3.Connection]:
    """A connection to `db_url`. A module whose `conn` (or `db_path`) tests should run on both
    databases says `conn = conftest.db_conn` (and `db_path = conftest.db_url`): one line, an
    assignment, so ruff's F811 does not fire on the tests' `conn` arguments."""
    connection = connect(db_url)
    yield connection
    connection.close()


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def module_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """`db_url` shared by one module's tests (e.g. one app server for a browser module): a
    fresh, migrated SQLite file or PostgreSQL database (app role; tests.app_browser gives
    the server the owner's URL beside it)."""
    if request.param == "postgres":
        from tests.postgres_server import PostgresServer

        server = request.getfixturevalue("postgres_server")
        assert isinstance(server, PostgresServer)
        name = server.fresh_database()
        try:
            yield server.url(name)
        finally:
            server.release_database(name)
        return
    path = tmp_path_factory.mktemp("module-db") / "razorrecon.sqlite"
    connection = connect(path)
    migrate(connection)
    connection.close()
    yield str(path)


def is_postgres(db_url: str) -> bool:
    """Whether `db_url` (a `db_url` fixture value or a --db argument) is PostgreSQL."""
    return db_url.startswith("postgresql://")


def database_rows(db_url: str) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table but schema_migrations, sorted: what "nothing was written"
    compares on either backend (on PostgreSQL read as the owner role, which sees them all)."""
    import os

    if is_postgres(db_url):
        conn = connect(os.environ.get("DATABASE_OWNER_URL") or db_url)
        listing = "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
    else:
        conn = connect(db_url)
        listing = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'"
    try:
        tables = sorted(str(r[0]) for r in conn.execute(listing) if r[0] != "schema_migrations")
        return {
            t: sorted((tuple(r) for r in conn.execute(f"SELECT * FROM {t}")), key=repr)
            for t in tables
        }
    finally:
        conn.close()


@pytest.fixture(scope="session")
def benchmark_5k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded 5,000-payment benchmark (seed 42), made once per test process: read only."""
    out = tmp_path_factory.mktemp("benchmark-5k")
    generate(out, payments=5000, seed=42)
    return out


@pytest.fixture(scope="session")
def benchmark_1500(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A smaller seeded benchmark (1,500 payments, seed 7), made once per process: read only."""
    out = tmp_path_factory.mktemp("benchmark-1500")
    generate(out, payments=1500, seed=7)
    return out


def postgres_index_definitions(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """PostgreSQL: index name -> its definition (pg_indexes.indexdef) for `table`."""
    return {
        str(r[0]): str(r[1])
        for r in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ?", (table,)
        )
    }
