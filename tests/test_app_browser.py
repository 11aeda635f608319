"""The app in a real browser: `streamlit run app.py` on a temporary database, Debian's
Chromium through Playwright. Screenshots of every page go to test-artifacts/screenshots/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.db import connect
from tests.app_browser import (
    CHROMIUM,
    PAGE_PATHS,
    SCREENSHOTS,
    Server,
    open_exception,
    running_server,
    screen_errors,
    wait_rendered,
)

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium"),
]
RUPEES = re.compile(r"^₹[\d,]+(\.\d\d)?( (L|Cr))?$")
COLD_START_MS = 180_000  # two shared cores: generous; the speed is measured in `make bench`


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cold_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Server, str]]:
    """The app on a cold database: a SQLite file not yet made, or an empty PostgreSQL one."""
    if request.param == "postgres":
        database = str(request.getfixturevalue("pg_url"))
    else:
        database = str(tmp_path / "cold.sqlite")
    with running_server(database, tmp_path / "streamlit.log") as server:
        yield server, database


def _count(database: str, sql: str) -> int:
    conn = connect(database)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def _metric_values(page: object) -> dict[str, str]:
    values = {}
    for metric in page.query_selector_all('[data-testid="stMetric"]'):  # type: ignore[attr-defined]
        label = metric.query_selector('[data-testid="stMetricLabel"]').inner_text().strip()
        value = metric.query_selector('[data-testid="stMetricValue"]').inner_text().strip()
        values[label] = value
    return values


def _shot(page: object, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def test_cold_start_then_every_page_then_resolve_and_audit(
    cold_server: tuple[Server, str], browser: object
) -> None:
    server, database = cold_server
    page = browser.new_page(viewport={"width": 1440, "height": 2200})  # type: ignore[attr-defined]
    page.goto(server.url)
    page.wait_for_selector('[data-testid="stMetric"]', timeout=COLD_START_MS)
    wait_rendered(page)
    metrics = _metric_values(page)
    for label in ("Captured", "Settled", "Credited in bank", "Amount at risk"):
        assert RUPEES.match(metrics[label]), (label, metrics[label])
    assert metrics["Open exceptions"].replace(",", "").isdigit()
    assert metrics["Captured"].endswith(("L", "Cr"))
    assert "synthetic benchmark" in page.inner_text("body")
    assert screen_errors(page) == []

    for name, path in PAGE_PATHS.items():
        page.goto(f"{server.url}/{path}")
        wait_rendered(page)
        page.wait_for_timeout(800)  # charts and tables paint after the script run
        _shot(page, name)
        assert screen_errors(page) == [], name
        assert page.query_selector("h1") is not None, name

    page.goto(f"{server.url}/investigation")
    wait_rendered(page)
    exception_id = str(_count(database, "SELECT min(id) FROM exceptions WHERE status = 'OPEN'"))
    open_exception(page, exception_id)
    page.fill('textarea[aria-label="Note (required)"]', "Confirmed with the bank; closing.")
    page.get_by_role("button", name="Resolve").click()
    page.wait_for_selector(f"text=Exception #{exception_id} is now RESOLVED", timeout=60_000)
    wait_rendered(page)
    _shot(page, "investigation-resolved")
    assert (
        _count(
            database,
            f"SELECT count(*) FROM exceptions WHERE id = {int(exception_id)} "
            "AND status = 'RESOLVED'",
        )
        == 1
    )

    page.goto(f"{server.url}/audit")
    wait_rendered(page)
    page.fill('input[aria-label="Entity id"]', exception_id)
    page.keyboard.press("Enter")
    page.wait_for_selector("text=entries match", timeout=30_000)
    wait_rendered(page)
    matched = int(re.search(r"([\d,]+) entries match", page.inner_text("body")).group(1))
    assert matched >= 2  # opened by the engine, resolved by the reviewer
    page.get_by_role("button", name="Verify the chain").click()
    page.wait_for_selector("text=Chain intact", timeout=60_000)
    _shot(page, "audit-filtered")
    assert screen_errors(page) == []


def test_eight_sessions_on_a_cold_database_bootstrap_once(
    cold_server: tuple[Server, str], browser: object
) -> None:
    server, database = cold_server
    contexts = [browser.new_context() for _ in range(8)]  # type: ignore[attr-defined]
    pages = [c.new_page() for c in contexts]
    for page in pages:
        page.goto(server.url, wait_until="commit")
    for n, page in enumerate(pages):
        page.wait_for_selector('[data-testid="stMetric"]', timeout=COLD_START_MS)
        wait_rendered(page)
        assert screen_errors(page) == [], n
        assert RUPEES.match(_metric_values(page)["Captured"])
    _shot(pages[-1], "overview-eighth-session")
    assert _count(database, "SELECT count(*) FROM imports") == 1
    assert _count(database, "SELECT count(*) FROM runs") == 1
    assert _count(database, "SELECT count(*) FROM runs WHERE status = 'completed'") == 1
    for context in contexts:
        context.close()


def test_a_first_request_to_a_page_url_gets_the_whole_app(
    db_url: str, tmp_path: Path, browser: object
) -> None:
    from tests.app_builder import build

    conn = connect(db_url)
    build(conn, payments=300)
    conn.close()
    with running_server(db_url, tmp_path / "streamlit.log") as server:
        page = browser.new_page(viewport={"width": 1440, "height": 1400})  # type: ignore[attr-defined]
        page.goto(f"{server.url}/investigation?exception=5")
        wait_rendered(page)
        page.wait_for_selector("text=#5 ·", timeout=30_000)
        assert "Data source" in page.inner_text('[data-testid="stSidebar"]')
        assert screen_errors(page) == []


def test_upload_with_a_bad_cell_then_a_good_upload_then_reconcile(
    cold_server: tuple[Server, str], browser: object, tmp_path: Path
) -> None:
    from tests.conftest import SPEC_EXAMPLE

    server, database = cold_server
    page = browser.new_page(viewport={"width": 1440, "height": 1600})  # type: ignore[attr-defined]
    page.goto(server.url)
    page.wait_for_selector('[data-testid="stMetric"]', timeout=COLD_START_MS)
    page.goto(f"{server.url}/data")
    wait_rendered(page)
    good = sorted((SPEC_EXAMPLE / "dataset").iterdir())
    broken = tmp_path / "settlements.csv"
    lines = (SPEC_EXAMPLE / "dataset" / "settlements.csv").read_text("utf-8-sig").splitlines()
    cells = lines[1].split(",")
    cells[2] = "twelve"
    broken.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    files = [str(p) for p in good if p.name != "settlements.csv"] + [str(broken)]

    uploader = page.locator('[data-testid="stFileUploader"] input[type="file"]')
    uploader.set_input_files(files)
    page.get_by_role("button", name="Remove settlements.csv").wait_for(timeout=30_000)
    wait_rendered(page)
    # The database holds the benchmark: Import waits for "replace or keep separate", and
    # Replace for a tick on the sentence naming what it removes.
    assert page.get_by_role("button", name="Import", exact=True).is_disabled()
    page.get_by_text("Replace what is there").click()
    wait_rendered(page)
    page.get_by_text("Replace them.").click()
    wait_rendered(page)
    page.get_by_role("button", name="Import", exact=True).click()
    page.wait_for_selector("text=The import was refused", timeout=60_000)
    wait_rendered(page)
    _shot(page, "data-import-refused")
    assert _count(database, "SELECT count(*) FROM imports") == 1  # only the cold start's

    page.get_by_role("button", name="Remove settlements.csv").click()
    wait_rendered(page)
    uploader.set_input_files([str(SPEC_EXAMPLE / "dataset" / "settlements.csv")])
    page.get_by_role("button", name="Remove settlements.csv").wait_for(timeout=30_000)
    wait_rendered(page)
    page.get_by_role("button", name="Import", exact=True).click()
    page.wait_for_selector("text=Imported. Run reconciliation", timeout=60_000)
    wait_rendered(page)
    _shot(page, "data-imported")
    assert _count(database, "SELECT count(*) FROM imports") == 2

    page.get_by_role("tab", name="Reconcile").click()
    page.get_by_role("button", name="Run reconciliation").click()
    page.wait_for_selector("text=Reconciliation finished: run #2", timeout=120_000)
    wait_rendered(page)
    _shot(page, "data-reconciled")
    assert screen_errors(page) == []
    assert _count(database, "SELECT count(*) FROM runs WHERE status = 'completed'") == 2
    page.goto(server.url)
    wait_rendered(page)
    assert "Imported files" in page.inner_text('[data-testid="stSidebar"]')
    assert "These data are the synthetic benchmark" not in page.inner_text("body")
