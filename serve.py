"""`streamlit run serve.py`: the Streamlit app (app.py) with the Razorpay webhook endpoint
beside it, on the same port: `POST /api/webhooks/razorpay`.

Streamlit 1.67 serves an `st.App` through uvicorn/Starlette when `streamlit run` finds one
in the script; the extra route is a plain Starlette endpoint. All webhook logic lives in
`core.razorpay.webhooks.handle_webhook` (raw body + headers in, result out); this module only
reads the request, runs the handler in a worker thread with its own database connection, and
writes the answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread
import streamlit as st
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ui import warm

if TYPE_CHECKING:
    from core.razorpay.webhooks import WebhookResult

WEBHOOK_PATH = "/api/webhooks/razorpay"
APP_SCRIPT = Path(__file__).with_name("app.py")


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


app = st.App(APP_SCRIPT, routes=[Route(WEBHOOK_PATH, razorpay_webhook, methods=["POST"])])

# Once per server process, as uvicorn imports this module and before any session: every
# page's modules, so no one's first render of a page pays for importing them (ui.warm).
warm.imports()
