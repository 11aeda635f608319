"""Comments with attachments in Chromium: what a reviewer does and sees (issue 13, item 6).

The file picker is the browser's own (AppTest cannot upload), and the download is a real
download: the bytes that come back are the bytes attached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.db import connect
from core.review import list_comments
from tests.app_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    Server,
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
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
EXCEPTION = 5


@pytest.fixture(scope="module")
def database(module_db_url: str) -> str:
    conn = connect(module_db_url)
    build(conn, payments=600, seed=5)
    conn.close()
    return module_db_url


@pytest.fixture(scope="module")
def server(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("comments-browser") / "server.log"
    with running_server(database, log) as running:
        yield running


@pytest.fixture
def page(server: Server) -> Iterator[object]:
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1440, "height": 900}, accept_downloads=True)
        yield tab
        browser.close()


def _open(page: object, server: Server) -> None:
    page.goto(f"{server.url}/?exception={EXCEPTION}")  # type: ignore[attr-defined]
    wait_rendered(page)
    page.wait_for_selector(f"text=#{EXCEPTION} ·", timeout=30_000)  # type: ignore[attr-defined]


def _post(page: object, text: str, files: list[Path]) -> None:
    box = page.get_by_label("Comment", exact=True)  # type: ignore[attr-defined]
    box.fill(text)
    box.press("Tab")  # the text area sends its value when it loses focus
    wait_rendered(page)
    if files:
        picker = page.locator('[data-testid="stFileUploader"] input[type="file"]')  # type: ignore[attr-defined]
        picker.set_input_files([str(f) for f in files])
        for f in files:
            page.wait_for_selector(f"text={f.name}", timeout=30_000)  # type: ignore[attr-defined]
        wait_rendered(page)
    page.get_by_role("button", name="Add comment").click()  # type: ignore[attr-defined]
    wait_rendered(page)


def test_a_reviewer_attaches_a_file_sees_it_in_the_thread_and_downloads_the_same_bytes(
    server: Server, page: object, database: str, tmp_path: Path
) -> None:
    screenshot = tmp_path / "dashboard.png"
    screenshot.write_bytes(PNG_BYTES)
    _open(page, server)
    body = "Razorpay dashboard shows the refund <b>reversed</b> on the 4th."
    _post(page, body, [screenshot])
    page.wait_for_selector("text=Comment added with 1 attachment", timeout=30_000)  # type: ignore[attr-defined]
    thread = page.locator('[data-testid="stText"]', has_text="dashboard shows")  # type: ignore[attr-defined]
    assert thread.inner_text() == body  # the markup is text, not bold
    assert screen_errors(page) == []
    button = page.get_by_role("button", name="dashboard.png (PNG, 2 KiB)")  # type: ignore[attr-defined]
    with page.expect_download() as waiting:  # type: ignore[attr-defined]
        button.click()
    download = waiting.value
    saved = tmp_path / "downloaded"
    download.save_as(saved)
    assert download.suggested_filename == "dashboard.png"
    assert hashlib.sha256(saved.read_bytes()).digest() == hashlib.sha256(PNG_BYTES).digest()
    conn = connect(database)
    (comment,) = [c for c in list_comments(conn, EXCEPTION) if c.body == body]
    conn.close()
    assert comment.author.startswith("local:")


def test_a_file_whose_bytes_are_not_its_extension_is_refused_on_screen(
    server: Server, page: object, database: str, tmp_path: Path
) -> None:
    disguised = tmp_path / "statement.pdf"
    disguised.write_bytes(PNG_BYTES)
    _open(page, server)
    _post(page, "Bank statement attached", [disguised])
    refusal = page.locator('[data-testid="stAlertContentError"]')  # type: ignore[attr-defined]
    refusal.wait_for(timeout=30_000)
    assert "the content is PNG, not PDF as its name says" in refusal.inner_text()
    conn = connect(database)
    bodies = [c.body for c in list_comments(conn, EXCEPTION)]
    conn.close()
    assert "Bank statement attached" not in bodies
