"""DNS rebinding and framing, against a real `streamlit run` on 127.0.0.1 (F3, F11).

A page on an attacker's name that resolves to 127.0.0.1 is same-origin with the app: the
browser sends that name as Host. In local mode (the app trusts the loopback address) such a
request is refused: by serve.py's middleware before Streamlit sees it (HTTP and the
WebSocket handshake), and by the gate for `streamlit run app.py`. Chromium's
--host-resolver-rules stands in for the rebinding DNS answer (nothing leaves the machine).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from core.db import connect, migrate
from core.hosts import allowed_names, host_allowed, host_name
from tests.app_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    Server,
    free_port,
    running_server,
    wait_rendered,
)
from tests.app_builder import build

REBOUND = "rebind.attacker.test"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("hosts") / "razorrecon.sqlite"
    conn = connect(path)
    migrate(conn)
    build(conn, payments=200, seed=3)
    conn.close()
    return str(path)


@pytest.fixture(scope="module")
def served(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """serve.py as `make run` starts it: local mode (127.0.0.1, no [auth], no demo)."""
    log = tmp_path_factory.mktemp("hosts-log") / "serve.log"
    with running_server(database, log, {"RAZORRECON_DEMO": ""}, script="serve.py") as server:
        yield server


def _get(server: Server, path: str, host: str) -> requests.Response:
    return requests.get(server.url + path, headers={"Host": host}, timeout=30)


def _handshake(server: Server, host: str, origin: str) -> str:
    """The status line the server answers a WebSocket handshake for /_stcore/stream with."""
    request = (
        "GET /_stcore/stream HTTP/1.1\r\n"
        f"Host: {host}\r\nOrigin: {origin}\r\n"
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: streamlit\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(request.encode())
        return s.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_host_names_are_read_without_port_case_or_trailing_dot() -> None:
    assert host_name("LocalHost.:8501") == "localhost"
    assert host_name("[::1]:8501") == "::1"
    assert host_name("127.0.0.1") == "127.0.0.1"
    assert host_name("evil.test@127.0.0.1") is None
    assert host_name("127.0.0.1:99999") is None
    assert host_name("") is None


def test_local_mode_answers_loopback_names_only_and_sign_in_its_redirect_host() -> None:
    local = allowed_names("local")
    assert all(host_allowed(h, local) for h in ("localhost:8501", "127.0.0.1:8501", "[::1]"))
    assert not host_allowed(f"{REBOUND}:8501", local)
    assert not host_allowed(None, local)
    signed = allowed_names("oidc", "https://recon.example.com/oauth2callback")
    assert host_allowed("recon.example.com", signed)
    assert host_allowed("127.0.0.1:8501", signed)
    assert not host_allowed(REBOUND, signed)
    assert allowed_names("demo") is None and host_allowed(REBOUND, None)


@pytest.mark.browser
def test_a_page_asked_for_under_a_rebound_name_is_refused_at_the_door(served: Server) -> None:
    refused = _get(served, "/admin", f"{REBOUND}:{served.port}")
    assert refused.status_code == 403
    assert REBOUND in refused.text and "local mode" in refused.text
    assert _get(served, "/", f"localhost:{served.port}").status_code == 200
    assert _get(served, "/", f"127.0.0.1:{served.port}").status_code == 200
    assert _get(served, "/", f"[::1]:{served.port}").status_code == 200
    # The webhook is authenticated by its signature, not by the name it was sent to (503
    # here: no RAZORPAY_WEBHOOK_SECRET), so a tunnel's Host still reaches it.
    hook = served.url + "/api/webhooks/razorpay"
    assert (
        requests.post(hook, b"{}", headers={"Host": "hooks.example.com"}, timeout=30).status_code
        == 503
    )


@pytest.mark.browser
def test_the_websocket_handshake_under_a_rebound_name_is_refused(served: Server) -> None:
    rebound = f"{REBOUND}:{served.port}"
    assert " 101 " not in _handshake(served, rebound, f"http://{rebound}") + " "
    loopback = f"127.0.0.1:{served.port}"
    assert " 101 " in _handshake(served, loopback, f"http://{loopback}") + " "


@pytest.mark.browser
def test_every_answer_says_only_the_app_itself_may_frame_it(served: Server) -> None:
    for path in ("/", "/admin", "/_stcore/health"):
        answer = _get(served, path, f"127.0.0.1:{served.port}")
        assert answer.headers.get("Content-Security-Policy") == "frame-ancestors 'self'", path
        assert answer.headers.get("X-Frame-Options") == "SAMEORIGIN", path


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's /usr/bin/chromium")
def test_a_rebound_page_on_streamlit_run_app_py_sees_a_refusal_not_the_local_admin(
    database: str, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    rules = f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"
    with (
        running_server(database, tmp_path / "app.log", {"RAZORRECON_DEMO": ""}) as server,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, rules])
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"http://{REBOUND}:{server.port}/admin")
            page.wait_for_selector('[data-testid="stAlertContentError"]', timeout=60_000)
            body = page.inner_text("body")
            assert "Refused" in body and REBOUND in body
            assert "local admin" not in body and "identity provider verifies" not in body
            page.goto(f"http://127.0.0.1:{server.port}/")
            wait_rendered(page)
            assert "local admin" in page.inner_text('[data-testid="stSidebar"]')
        finally:
            browser.close()


@pytest.mark.browser
def test_with_sign_in_the_app_answers_its_redirect_uris_host_and_loopback_only(
    database: str, tmp_path: Path
) -> None:
    port = free_port()
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "http://recon.example.test:{port}/oauth2callback"\n'
        'cookie_secret = "hosts-test-cookie-secret-0123456789abcdef"\n'
        'client_id = "razorrecon"\nclient_secret = "razorrecon-secret"\n'
        'server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    with running_server(
        database,
        tmp_path / "serve.log",
        {"RAZORRECON_DEMO": ""},
        port=port,
        extra_args=(f"--secrets.files={secrets}",),
        script="serve.py",
    ) as server:
        assert _get(server, "/", f"recon.example.test:{port}").status_code == 200
        assert _get(server, "/", f"127.0.0.1:{port}").status_code == 200
        refused = _get(server, "/", f"{REBOUND}:{port}")
        assert refused.status_code == 403 and "sign-in mode" in refused.text
