"""Issue 13 in Chromium at 1440×900: what a reviewer sees (each fails on the code before)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.db import connect
from tests.app_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    SCREENSHOTS,
    Server,
    running_server,
    screen_errors,
    wait_rendered,
)
from tests.app_builder import build

SHOTS = SCREENSHOTS
playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium"),
]


@pytest.fixture(scope="module")
def server(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("workbench-browser")
    conn = connect(module_db_url)
    build(conn, payments=600, seed=5)
    conn.close()
    with running_server(module_db_url, folder / "server.log") as running:
        yield running


@pytest.fixture
def page(server: Server) -> Iterator[object]:
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1440, "height": 900})
        yield tab
        browser.close()


def test_a_deep_link_to_an_exception_opens_it_without_404s(server: Server, page: object) -> None:
    failed: list[str] = []
    page.on(  # type: ignore[attr-defined]
        "response", lambda r: failed.append(r.url) if r.status >= 400 else None
    )
    page.goto(f"{server.url}/?exception=5")  # type: ignore[attr-defined]
    wait_rendered(page)
    page.wait_for_selector("text=#5 ·", timeout=30_000)  # type: ignore[attr-defined]
    assert "/investigation" in page.url  # type: ignore[attr-defined]
    assert failed == []
    assert screen_errors(page) == []


def test_the_status_filter_shows_all_four_default_statuses(server: Server, page: object) -> None:
    page.goto(f"{server.url}/exceptions")  # type: ignore[attr-defined]
    wait_rendered(page)
    for label in ("Open", "Assigned", "Investigated", "Escalated"):
        chip = page.get_by_role("button", name=label, exact=True)  # type: ignore[attr-defined]
        chip.first.wait_for(state="visible", timeout=30_000)  # fails if hidden or absent


def test_the_queue_table_fits_1440_without_a_sideways_scroll(server: Server, page: object) -> None:
    page.goto(f"{server.url}/exceptions")  # type: ignore[attr-defined]
    wait_rendered(page)
    page.wait_for_selector('[data-testid="stDataFrame"] .dvn-scroller')  # type: ignore[attr-defined]
    overflow = page.evaluate(  # type: ignore[attr-defined]
        "() => { const s = document.querySelector('[data-testid=\"stDataFrame\"] .dvn-scroller');"
        " return s.scrollWidth - s.clientWidth; }"
    )
    assert overflow <= 1, f"the queue scrolls sideways by {overflow} px"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "exceptions-1440.png"))  # type: ignore[attr-defined]
