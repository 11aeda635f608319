"""The database going away under a real browser (`streamlit run app.py`, Chromium): a
comment posted meanwhile is refused with one plain message that says it was not saved,
the sidebar keeps who is signed in, and once the database is back the page returns by
itself (no click) with the comment still in its box. The outage is a SQLite file that
cannot be opened (tests/test_app_database_down.py: there on PostgreSQL too, stopped for
real, under AppTest; AppTest keeps a box's value on the server, the browser must be told)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.db import connect, migrate
from tests.app_browser import CHROMIUM, SCREENSHOTS, running_server, wait_rendered
from tests.app_builder import build
from tests.review_support import add_people
from tests.test_app_database_down import _sqlite_unreachable

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium"),
]


def test_comment_while_the_database_is_unreachable_is_not_saved_and_the_page_returns_with_it(
    browser: object, tmp_path: Path
) -> None:
    database = tmp_path / "db" / "recon.sqlite"
    database.parent.mkdir()
    conn = connect(str(database))
    migrate(conn)
    build(conn, payments=300, seed=11, source="files")
    add_people(conn)
    conn.close()
    body = "Typed while the database goes down."
    with running_server(database, tmp_path / "streamlit.log") as server:
        page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()  # type: ignore[attr-defined]
        page.goto(f"{server.url}/investigation")
        wait_rendered(page)
        page.get_by_label("Comment", exact=True).fill(body)
        with _sqlite_unreachable(database):
            page.get_by_role("button", name="Add comment").click()
            page.wait_for_selector("text=Not saved: the database recon.sqlite", timeout=30_000)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "database-unreachable.png"))
            errors = page.locator('[data-testid="stAlertContentError"]').all_inner_texts()
            assert len(errors) == 1 and "cannot be reached" in errors[0], errors
            assert "unable to open" not in errors[0]
            sidebar = page.inner_text('[data-testid="stSidebar"]')
            assert "Signed in:" in sidebar and "Admin" in sidebar, sidebar
        back = time.monotonic()
        page.wait_for_selector("text=Comments", timeout=30_000)  # no click: it checks itself
        wait_rendered(page)
        assert time.monotonic() - back < 20
        assert page.get_by_label("Comment", exact=True).input_value() == body
        assert page.locator('[data-testid="stAlertContentError"]').count() == 0
        page.get_by_role("button", name="Add comment").click()
        page.wait_for_selector("text=Comment added.", timeout=30_000)
    conn = connect(str(database))
    count = conn.execute("SELECT count(*) FROM review_comments WHERE body = ?", (body,))
    assert count.fetchone()[0] == 1
    conn.close()
