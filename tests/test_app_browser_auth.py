"""Sign-in and the demo in a real browser: Streamlit's OpenID Connect sign-in against a real
OIDC provider on 127.0.0.1 (oidc-provider-mock: discovery, authorize, token, JWKS,
userinfo), four eyes across two people, and two demo visitors in separate sandboxes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.db import connect, migrate
from tests.app_browser import (
    CHROMIUM,
    SCREENSHOTS,
    free_port,
    open_exception,
    running_server,
    screen_errors,
    wait_rendered,
)
from tests.app_builder import build
from tests.review_support import add_people

playwright_api = pytest.importorskip("playwright.sync_api")
oidc_mock = pytest.importorskip("oidc_provider_mock")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium"),
]
PEOPLE = {"asha": "asha@example.com", "approver": "approver@example.com"}


@pytest.fixture
def provider() -> Iterator[str]:
    """A real OpenID Connect provider on 127.0.0.1 that knows two people (verified emails)."""
    from werkzeug.serving import make_server

    users = [
        oidc_mock.User(sub=sub, claims={"email": email, "email_verified": True, "name": sub})
        for sub, email in PEOPLE.items()
    ]
    server = make_server("127.0.0.1", 0, oidc_mock.app(user_claims=users), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


@pytest.fixture
def database(db_url: str) -> str:
    conn = connect(db_url)
    build(conn, payments=300, seed=3)
    add_people(conn)
    conn.close()
    return db_url


def _status(database: str, exception_id: int) -> str:
    conn = connect(database)
    try:
        row = conn.execute("SELECT status FROM exceptions WHERE id = ?", (exception_id,))
        return str(row.fetchone()[0])
    finally:
        conn.close()


def _open_exception_id(database: str) -> int:
    conn = connect(database)
    try:
        return int(
            conn.execute("SELECT min(id) FROM exceptions WHERE status = 'OPEN'").fetchone()[0]
        )
    finally:
        conn.close()


def _shot(page: object, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]


def _sign_in(context: object, url: str, who: str) -> object:
    page = context.new_page()  # type: ignore[attr-defined]
    page.goto(url)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Authorize Client", timeout=30_000)  # the provider's page
    page.get_by_role("button", name=who, exact=True).click()
    # Back, signed in: the sidebar names the address as text (ui.format.md puts an invisible
    # WORD JOINER before its @, so it never becomes a link).
    shown = PEOPLE[who].replace("@", "\u2060?@").replace(".", "\\.")
    page.wait_for_selector(f"text=/{shown}/", timeout=60_000)
    wait_rendered(page)
    return page


def test_oidc_sign_in_and_four_eyes_reviewer_asks_approver_approves(
    provider: str, database: str, browser: object, tmp_path: Path
) -> None:
    port = free_port()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        'cookie_secret = "browser-test-cookie-secret-0123456789"\n'
        'client_id = "razorrecon"\n'
        'client_secret = "razorrecon-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    env = {"RAZORRECON_FOUR_EYES_PAISE": "1000000", "RAZORRECON_DEMO": ""}
    with running_server(
        database,
        tmp_path / "streamlit.log",
        env,
        port=port,
        extra_args=(f"--secrets.files={secrets}",),
    ) as server:
        anonymous = browser.new_page()  # type: ignore[attr-defined]
        anonymous.goto(server.url)
        anonymous.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
        assert "Data source" not in anonymous.inner_text("body")  # nothing before sign-in

        reviewer = _sign_in(browser.new_context(), server.url, "asha")  # type: ignore[attr-defined]
        sidebar = reviewer.inner_text('[data-testid="stSidebar"]')  # type: ignore[attr-defined]
        assert "asha@example.com" in sidebar.replace("\u2060", "") and "Reviewer" in sidebar
        assert "Approvals" not in sidebar and "Admin" not in sidebar
        reviewer.goto(f"{server.url}/investigation?exception=3")  # type: ignore[attr-defined]
        wait_rendered(reviewer)
        reviewer.wait_for_selector("text=#3 ·", timeout=30_000)  # type: ignore[attr-defined]
        reviewer.fill('textarea[aria-label="Note (required)"]', "Unrecoverable short payment.")  # type: ignore[attr-defined]
        reviewer.get_by_text("Written off", exact=True).click()  # type: ignore[attr-defined]
        wait_rendered(reviewer)
        reviewer.fill('input[aria-label="Amount written off (₹)"]', "25,000")  # type: ignore[attr-defined]
        reviewer.keyboard.press("Tab")  # type: ignore[attr-defined]
        wait_rendered(reviewer)
        reviewer.get_by_role("button", name="Resolve").click()  # type: ignore[attr-defined]
        reviewer.wait_for_selector("text=is pending approval", timeout=60_000)  # type: ignore[attr-defined]
        _shot(reviewer, "four-eyes-requested")
        assert _status(database, 3) != "RESOLVED"

        approver = _sign_in(browser.new_context(), server.url, "approver")  # type: ignore[attr-defined]
        approver.goto(f"{server.url}/approvals")  # type: ignore[attr-defined]
        wait_rendered(approver)
        _shot(approver, "four-eyes-approvals-page")
        approver.get_by_role("button", name="Approve").wait_for(timeout=30_000)  # type: ignore[attr-defined]  # type: ignore[attr-defined]
        approver.get_by_role("button", name="Approve").click()  # type: ignore[attr-defined]
        approver.wait_for_selector("text=approved: exception #3 is RESOLVED", timeout=60_000)  # type: ignore[attr-defined]
        _shot(approver, "four-eyes-approved")
        assert screen_errors(approver) == []
        assert _status(database, 3) == "RESOLVED"
        conn = connect(database)
        actors = conn.execute(
            "SELECT action, actor FROM audit_log WHERE entity_id = '3'"
            " AND action LIKE 'exception.%' AND actor != 'engine' ORDER BY seq"
        ).fetchall()
        conn.close()
        assert [tuple(a) for a in actors] == [
            ("exception.write_off_requested", "asha@example.com"),
            ("exception.resolved", "approver@example.com"),
        ]


# Demo mode is SQLite only by design (a private copy of the file per visitor); on PostgreSQL
# it fails closed: test_app_demo_reset's test_the_app_in_demo_mode_on_postgresql_says_why...
@pytest.mark.sqlite_only
def test_two_demo_visitors_work_in_separate_sandboxes(browser: object, tmp_path: Path) -> None:
    # The demo copies only the synthetic benchmark with nothing people did (core.demo
    # template_problems): a database of its own, without the sign-in tests' people.
    database = str(tmp_path / "benchmark.sqlite")
    conn = connect(database)
    migrate(conn)
    build(conn, payments=300, seed=3)
    conn.close()
    sandboxes = tmp_path / "sandboxes"
    env = {"RAZORRECON_DEMO": "1", "RAZORRECON_DEMO_DIR": str(sandboxes)}
    with running_server(database, tmp_path / "streamlit.log", env) as server:
        visitors = []
        for _ in range(2):
            page = browser.new_context().new_page()  # type: ignore[attr-defined]
            page.goto(server.url)
            page.wait_for_selector("text=Demo sign-in", timeout=60_000)
            page.get_by_role("button", name="Sign in as the demo reviewer").click()
            page.wait_for_selector('[data-testid="stMetric"]', timeout=60_000)
            wait_rendered(page)
            visitors.append(page)
        first, second = visitors
        assert "demo reviewer" in first.inner_text('[data-testid="stSidebar"]')
        for page in visitors:  # in-app navigation keeps the session (and its sandbox)
            page.get_by_role("link", name="Investigation").click()
            wait_rendered(page)
        exception_id = str(_open_exception_id(database))
        for page in visitors:
            open_exception(
                page, exception_id
            )  # both visitors on the same exception, each in its sandbox
        first.fill('textarea[aria-label="Note (required)"]', "Demo visitor one decides.")
        first.get_by_role("button", name="Resolve").click()
        first.wait_for_selector(f"text=Exception #{exception_id} is now RESOLVED", timeout=60_000)
        _shot(first, "demo-visitor-one")

        second.reload()  # a reload is a new session: still never the other visitor's data
        second.wait_for_selector("text=Demo sign-in", timeout=60_000)
        second.get_by_role("button", name="Sign in as the demo reviewer").click()
        # Signed in on the page the reload was on (Investigation: before sign-in every page
        # is registered, hidden, so the link survives; before, it fell back to Overview).
        second.wait_for_selector('[data-testid="stSidebar"] >> text=demo reviewer', timeout=60_000)
        wait_rendered(second)
        second.get_by_role("link", name="Investigation").click()
        wait_rendered(second)
        open_exception(second, exception_id)
        body = second.inner_text("body")
        _shot(second, "demo-visitor-two")
        assert "RESOLVED" not in body and "Demo visitor one decides." not in body
        assert _status(database, int(exception_id)) != "RESOLVED"  # the shared data untouched
        assert screen_errors(first) == [] and screen_errors(second) == []
        # Each session's copy in a folder of its own, where RAZORRECON_DEMO_DIR says.
        assert len(list(sandboxes.glob("razorrecon-demo-*/sandbox.sqlite"))) >= 2


def _oidc_secrets(tmp_path: Path, provider: str, port: int) -> Path:
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        'cookie_secret = "browser-test-cookie-secret-0123456789"\n'
        'client_id = "razorrecon"\n'
        'client_secret = "razorrecon-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    return secrets


@pytest.mark.sqlite_only
@pytest.mark.parametrize("script", ["app.py", "serve.py"])
def test_first_visitor_after_a_restart_sees_only_sign_in_and_one_click_signs_in(
    provider: str, database: str, browser: object, tmp_path: Path, script: str
) -> None:
    # The very first session of a new server process (a restart): before the fix, with
    # `streamlit run app.py`, Streamlit ran it as a v1 multipage app (a pages/ folder
    # beside the script) and the sidebar listed the raw page files to an anonymous
    # visitor; its Sign in button, drawn under that run, lost its first click.
    port = free_port()
    secrets = _oidc_secrets(tmp_path, provider, port)
    env = {"RAZORRECON_DEMO": ""}
    with running_server(
        database,
        tmp_path / "streamlit.log",
        env,
        port=port,
        extra_args=(f"--secrets.files={secrets}",),
        script=script,
    ) as server:
        page = browser.new_context().new_page()  # type: ignore[attr-defined]
        page.goto(server.url)
        page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
        wait_rendered(page)
        _shot(page, f"first-visitor-{script.removesuffix('.py')}")
        assert page.locator('[data-testid="stSidebarNav"]').count() == 0
        body = page.inner_text("body")
        for raw in ("approvals", "admin", "investigation", "settlement"):
            assert raw not in body.lower(), raw
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_selector("text=Authorize Client", timeout=15_000)  # one click
        page.get_by_role("button", name="asha", exact=True).click()
        page.wait_for_selector("text=/asha\u2060?@example\\.com/", timeout=60_000)
        wait_rendered(page)
        assert screen_errors(page) == []
