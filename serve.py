"""`streamlit run serve.py`: the Streamlit app (app.py) with the Razorpay webhook endpoint
beside it, on the same port: `POST /api/webhooks/razorpay`.

Streamlit 1.67 serves an `st.App` through uvicorn/Starlette when `streamlit run` finds one
in the script; the extra route is a plain Starlette endpoint. All webhook logic lives in
`core.razorpay.webhooks.handle_webhook` (raw body + headers in, result out); this module only
reads the request, runs the handler in a worker thread with its own database connection, and
writes the answer.

Every request passes `Guard` first (pure ASGI, so HTTP and the WebSocket handshake alike):

- a Host the sign-in mode does not answer to (core.hosts: in local mode only localhost,
  127.0.0.1 and [::1]) is refused before Streamlit sees it, 403 for a page, the handshake
  refused for the WebSocket: a page on an attacker's name rebound to 127.0.0.1 (DNS
  rebinding) gets nothing. The webhook path is exempt: a delivery is authenticated by its
  signature, not by the name it was sent to.
- every answer says the app may be framed by itself only (`Content-Security-Policy:
  frame-ancestors 'self'`, `X-Frame-Options: SAMEORIGIN`): no other site can frame the
  local admin and overlay its buttons (clickjacking).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread
import streamlit as st
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from core import hosts
from ui import auth, warm

if TYPE_CHECKING:
    from core.razorpay.webhooks import WebhookResult

WEBHOOK_PATH = "/api/webhooks/razorpay"
APP_SCRIPT = Path(__file__).with_name("app.py")
FRAME_HEADERS = (
    (b"content-security-policy", b"frame-ancestors 'self'"),
    (b"x-frame-options", b"SAMEORIGIN"),
)


class Guard:
    """Refuse a foreign Host (HTTP and WebSocket); mark every answer not to be framed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope.get("path") != WEBHOOK_PATH:
            host = Headers(scope=scope).get("host")
            current_mode = auth.mode()
            if not hosts.host_allowed(host, hosts.allowed_names(current_mode, auth.redirect_uri())):
                await _refuse(scope, receive, send, hosts.refusal(host, current_mode))
                return

        async def framed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in FRAME_HEADERS:
                    headers[name.decode()] = value.decode()
            await send(message)

        await self.app(scope, receive, framed)


async def _refuse(scope: Scope, receive: Receive, send: Send, message: str) -> None:
    if scope["type"] == "websocket":
        await WebSocket(scope, receive, send).close(code=1008, reason="host refused")
        return
    response = PlainTextResponse(
        message, status_code=403, headers=dict((k.decode(), v.decode()) for k, v in FRAME_HEADERS)
    )
    await response(scope, receive, send)


async def razorpay_webhook(request: Request) -> JSONResponse:
    """Read the raw body (bounded), hand it to the framework-free handler, answer its verdict."""
    from core.razorpay.webhooks import MAX_BODY_BYTES

    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_BODY_BYTES:
            break  # read no further: the handler rejects (413) and logs it
    headers = {key: value for key, value in request.headers.items()}
    result = await anyio.to_thread.run_sync(_handle, bytes(body), headers)
    return JSONResponse(result.as_json(), status_code=result.status)


def _handle(body: bytes, headers: dict[str, str]) -> WebhookResult:
    from core.db import open_database
    from core.razorpay.config import webhook_secret_from_env
    from core.razorpay.webhooks import handle_webhook

    with open_database() as conn:
        return handle_webhook(conn, body, headers, secret=webhook_secret_from_env())


app = st.App(
    APP_SCRIPT,
    routes=[Route(WEBHOOK_PATH, razorpay_webhook, methods=["POST"])],
    middleware=[Middleware(Guard)],
)

# Once per server process, as uvicorn imports this module and before any session: every
# page's modules, so no one's first render of a page pays for importing them (ui.warm).
warm.imports()
