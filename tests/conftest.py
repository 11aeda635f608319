"""Shared fixtures. Real SQLite files in WAL mode under pytest's tmp_path."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.db import connect, migrate

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPEC_EXAMPLE = FIXTURES / "spec_example"


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
