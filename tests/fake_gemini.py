"""A local stand-in for the Gemini REST API on 127.0.0.1, for the real google-genai SDK.

It serves `POST /{v1,v1beta}/models/{model}:generateContent`, records every request
(path, headers, raw body) and answers from a per-model script: a valid JSON answer, an
HTTP error, a hang (for client timeouts), malformed text, a truncated answer
(finishReason MAX_TOKENS), or a function call. Nothing here is a mock of the SDK: the SDK
builds real HTTP requests and parses real responses.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATH = re.compile(r"^/(?P<version>v1|v1beta)/models/(?P<model>[^/:]+):generateContent$")


@dataclass(frozen=True)
class FakeRequest:
    version: str
    model: str
    headers: dict[str, str]
    raw: str
    body: dict[str, Any]

    @property
    def user_text(self) -> str:
        """The text of the first user message (the evidence prompt)."""
        return str(self.body["contents"][0]["parts"][0]["text"])

    def evidence(self) -> dict[str, Any]:
        """The quoted evidence JSON inside <evidence> ... </evidence>."""
        text = self.user_text
        inner = text.split("<evidence>", 1)[1].rsplit("</evidence>", 1)[0]
        return dict(json.loads(inner))

    @property
    def function_responses(self) -> list[dict[str, Any]]:
        found = []
        for content in self.body["contents"]:
            for part in content.get("parts", []):
                if "functionResponse" in part:
                    found.append(part["functionResponse"])
        return found


@dataclass(frozen=True)
class Reply:
    """What the server sends: status, JSON body, and an optional delay before it."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None  # sent instead of `body` (for bodies that are not JSON)


Behaviour = Reply | Callable[[FakeRequest], Reply]


def answer(
    payload: dict[str, Any] | str,
    *,
    finish: str = "STOP",
    prompt_tokens: int = 1200,
    output_tokens: int = 300,
) -> Reply:
    """A generateContent response whose text is `payload` (JSON-encoded if a dict)."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return Reply(
        200,
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": finish,
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": output_tokens,
                "totalTokenCount": prompt_tokens + output_tokens,
            },
            "modelVersion": "fake",
        },
    )


def function_call(name: str, args: dict[str, Any], call_id: str = "call-1") -> Reply:
    return function_calls((name, args, call_id))


def function_calls(*calls: tuple[str, dict[str, Any], str]) -> Reply:
    """One model turn asking for one or more tool calls: (name, args, call id) each."""
    return Reply(
        200,
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"functionCall": {"id": call_id, "name": name, "args": args}}
                            for name, args, call_id in calls
                        ],
                    },
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 1000,
                "candidatesTokenCount": 20,
                "totalTokenCount": 1020,
            },
        },
    )


class ToolUsingModel:
    """A scripted model that uses the tools: on the first request it asks for the calls
    `plan(request)` returns; once the SDK and our loop send the function responses back, it
    answers with `answer_from(request, outputs)`, where `outputs` maps each call id to the
    parsed JSON the tool returned. Every call it asked for is kept in `asked`."""

    def __init__(
        self,
        plan: Callable[[FakeRequest], list[tuple[str, dict[str, Any]]]],
        answer_from: Callable[[FakeRequest, dict[str, Any]], dict[str, Any]],
    ) -> None:
        self.plan = plan
        self.answer_from = answer_from
        self.asked: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, request: FakeRequest) -> Reply:
        responses = request.function_responses
        if not responses:
            calls = [(name, args, f"call-{n}") for n, (name, args) in enumerate(self.plan(request))]
            self.asked += [(call_id, name, args) for name, args, call_id in calls]
            return function_calls(*calls)
        outputs: dict[str, Any] = {}
        for response in responses:
            body = response.get("response", {})
            outputs[str(response.get("id"))] = (
                json.loads(body["output"]) if "output" in body else {"error": body.get("error")}
            )
        return answer(self.answer_from(request, outputs))


def error(status: int, label: str = "UNAVAILABLE") -> Reply:
    return Reply(status, {"error": {"code": status, "message": f"fake {label}", "status": label}})


def hang(seconds: float) -> Reply:
    """Answer well, but only after `seconds` (longer than the client's timeout)."""
    return Reply(answer({"late": True}).status, answer({"late": True}).body, delay=seconds)


class FakeGemini:
    """The server. `script[model]` is a behaviour or a list of them (the last repeats)."""

    def __init__(self) -> None:
        self.requests: list[FakeRequest] = []
        self.script: dict[str, Behaviour | list[Behaviour]] = {}
        self.default: Behaviour = error(404, "NOT_FOUND")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def requests_for(self, model: str) -> list[FakeRequest]:
        return [r for r in self.requests if r.model == model]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next(self, request: FakeRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            planned = self.script.get(request.model, self.default)
            if isinstance(planned, list):
                behaviour = planned.pop(0) if len(planned) > 1 else planned[0]
            else:
                behaviour = planned
        return behaviour(request) if callable(behaviour) else behaviour

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8")
                match = PATH.match(self.path.split("?", 1)[0])
                if not match:
                    self._send(error(404, "NOT_FOUND"))
                    return
                request = FakeRequest(
                    version=match["version"],
                    model=match["model"],
                    headers={k.lower(): v for k, v in self.headers.items()},
                    raw=raw,
                    body=json.loads(raw),
                )
                reply = fake._next(request)
                if reply.delay and fake._stop.wait(reply.delay):
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


@contextmanager
def running() -> Iterator[FakeGemini]:
    server = FakeGemini()
    server.start()
    try:
        yield server
    finally:
        server.stop()
