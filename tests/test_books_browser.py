"""The Books page's GST tab in a real browser: a person uploads Razorpay's tax invoice as
CSV and sees it explained (a real difference, here); a malformed CSV is refused with its
file, line and column on the screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.books.ledger import rebuild_ledger
from core.db import connect
from tests.app_browser import (
    CHROMIUM,
    SCREENSHOTS,
    running_server,
    screen_errors,
    wait_rendered,
)
from tests.app_builder import build

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium"),
]
GOLDEN = Path(__file__).parent / "fixtures" / "books" / "tax_invoice_2026-06.csv"


def _gst_tab(page: object, url: str) -> None:
    page.goto(f"{url}/books")  # type: ignore[attr-defined]
    wait_rendered(page)
    page.get_by_role("tab", name="GST on fees").click(timeout=120_000)  # type: ignore[attr-defined]
    # The month's GST figures read the raw tables: computed on request, never on render.
    page.get_by_role("button", name="Compute the GST figures for").click(timeout=120_000)  # type: ignore[attr-defined]
    page.wait_for_selector("text=Input tax credit", timeout=120_000)  # type: ignore[attr-defined]


def test_an_uploaded_invoice_csv_is_explained_and_a_bad_one_is_refused_with_its_position(
    db_url: str, tmp_path: Path, browser: object
) -> None:
    conn = connect(db_url)
    build(conn, payments=300, seed=3)
    rebuild_ledger(conn)  # as a completed run does (the builder stands in for one)
    conn.close()
    # The golden invoice without its month line (the page's month is the builder's latest).
    invoice = tmp_path / "tax_invoice.csv"
    lines = GOLDEN.read_text(encoding="utf-8").splitlines()
    invoice.write_text("\n".join(x for x in lines if not x.startswith("month,")) + "\n")
    bad = tmp_path / "bad_invoice.csv"
    bad.write_text("component,amount\ntaxable_value,12.345\n", encoding="utf-8")
    with running_server(db_url, tmp_path / "server.log") as server:
        page = browser.new_page(viewport={"width": 1440, "height": 2400})  # type: ignore[attr-defined]
        _gst_tab(page, server.url)
        page.set_input_files('input[type="file"]', str(invoice))
        page.wait_for_selector("text=a real difference to raise with Razorpay", timeout=120_000)
        wait_rendered(page)
        assert "The invoice differs from the fees charged by ₹" in page.inner_text("body")
        assert screen_errors(page) == []
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "books-gst-invoice-upload.png"), full_page=True)

        page.set_input_files('input[type="file"]', str(bad))
        page.wait_for_selector("text=The invoice was not read", timeout=120_000)
        errors = " ".join(screen_errors(page))
        assert "bad_invoice.csv:2:2:" in errors, errors
        assert "not a rupee amount" in errors


def test_a_stale_ledger_is_named_on_screen_and_the_books_appear_only_when_asked(
    db_url: str, tmp_path: Path, browser: object
) -> None:
    conn = connect(db_url)
    build(conn, payments=300, seed=3)
    rebuild_ledger(conn)
    with conn:  # an edit after the run, behind the engine's back
        conn.execute(
            "UPDATE payments SET amount = amount + 700"
            " WHERE id = (SELECT min(id) FROM payments WHERE status = 'captured')"
        )
    conn.close()
    with running_server(db_url, tmp_path / "server.log") as server:
        page = browser.new_page(viewport={"width": 1440, "height": 2000})  # type: ignore[attr-defined]
        page.goto(f"{server.url}/books")
        wait_rendered(page)
        body = page.inner_text("body")
        assert "Raw data were changed since the books were derived" in body
        assert "Opening" not in body  # no figure from the stale ledger
        page.get_by_role("button", name="Compute them for this session only").click()
        page.wait_for_selector("text=computed for this session", timeout=120_000)
        page.wait_for_selector("text=Unexplained residual of", timeout=120_000)
        wait_rendered(page)
        # the metrics paint after the caption; wait until all four are on screen
        page.wait_for_function(
            "document.querySelectorAll('[data-testid=\"stMetricLabel\"]').length >= 4",
            timeout=120_000,
        )
        labels = [m.inner_text() for m in page.query_selector_all('[data-testid="stMetricLabel"]')]
        assert [x.strip() for x in labels] == ["Opening", "Closing", "Open items", "Residual"]
        # today's books: the edit is exactly the residual, named as such
        assert screen_errors(page) == ["Unexplained residual of ₹7.00: see the entities below."]
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "books-stale-ledger.png"), full_page=True)
