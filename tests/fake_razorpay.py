"""A stand-in for Razorpay's API on 127.0.0.1: a real threaded HTTP server, Basic auth,
pagination, and injectable 429s, 5xx storms, slow answers and dropped connections.

Endpoints (the ones `razorpay` 2.0.1 calls for the sync):
- GET /v1/payments, /v1/refunds, /v1/settlements, /v1/settlements/ondemand, /v1/disputes,
  /v1/transfers: `from`/`to` (inclusive, on created_at), `count` (at most 100, like
  Razorpay), `skip`; newest first, then by id.
- `expand[]`, as Razorpay: a payment carries its `card` object only with `expand[]=card`
  (a dataset's flat card_* columns are served as that object); an instant settlement
  carries its `ondemand_payouts` collection only with `expand[]=ondemand_payouts`
  (razorpay.com/docs/api/payments/fetch-payment-expanded-card,
  razorpay.com/docs/api/settlements/instant/fetch-all-payout).
- GET /v1/settlements/recon/combined: `year`, `month`, optional `day`, `count` (at most
  1,000), `skip`. A recon row belongs to the IST day of its `settled_at`, or of its
  `created_at` when it was not settled (the real API lists only settled rows; the fake serves
  every row so a dataset round-trips whole).
Anything else (and any method but GET) answers 404/405 and is recorded, so tests can prove the
client never tried.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

IST = ZoneInfo("Asia/Kolkata")
KEY_ID = "rzp_test_FakeKey000001"
KEY_SECRET = "fake_secret_for_tests"


TRICKLE_LIMIT_S = 60.0  # a trickling answer ends after this long whatever the client does


def ist_day(unix_seconds: int) -> dt.date:
    return dt.datetime.fromtimestamp(int(unix_seconds), tz=IST).date()


@dataclass
class Fault:
    """An injected failure. `status` answers with that code (JSON error body unless
    `html_body`); `delay` sleeps first (longer than the client's read timeout = a timeout);
    `drop` closes the connection without an answer. Applies to requests whose path starts
    with `path` (and, if given, whose query contains `query`), `times` times (None: forever),
    after `after` matching requests have passed.
    """

    status: int | None = None
    delay: float = 0.0
    drop: bool = False
    path: str = "/"
    query: dict[str, str] = field(default_factory=dict)
    times: int | None = 1
    after: int = 0
    retry_after: str | None = None
    html_body: bool = False
    # A slow-loris answer: the status line, then the headers (`trickle_headers`) or, after
    # complete headers claiming a huge body, the body, one byte every `trickle` seconds, for
    # at most TRICKLE_LIMIT_S or until the client hangs up.
    trickle: float = 0.0
    trickle_headers: bool = False


@dataclass
class Logged:
    method: str
    path: str
    query: dict[str, str]
    status: int


@dataclass
class FakeState:
    payments: list[dict[str, Any]] = field(default_factory=list)
    refunds: list[dict[str, Any]] = field(default_factory=list)
    settlements: list[dict[str, Any]] = field(default_factory=list)
    recon: list[dict[str, Any]] = field(default_factory=list)
    instant_settlements: list[dict[str, Any]] = field(default_factory=list)  # no payouts
    instant_payouts: list[dict[str, Any]] = field(default_factory=list)  # by parent id
    disputes: list[dict[str, Any]] = field(default_factory=list)
    transfers: list[dict[str, Any]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    rate_limit_every: int = 0  # every Nth request answers 429 (0: never)
    rate_limit_retry_after: str | None = "0"  # the Retry-After of those 429s (None: no header)
    error_every: int = 0  # every Nth request (not already a 429) answers `error_status`
    error_status: int = 502
    date_clock: Callable[[], float] | None = None  # Unix seconds for the Date header
    admit: Callable[[], bool] | None = None  # a rate limiter: False answers 429, no Retry-After
    log: list[Logged] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    served: int = 0
    on_request: Callable[[int], None] | None = None
    # Hostile paging: the entity lists answer from the first item whatever `skip` says
    # (`ignore_skip`), or `page_size` items whatever `count` asks (None: as asked).
    ignore_skip: bool = False
    page_size: int | None = None
    hook_errors: list[BaseException] = field(default_factory=list)  # raised by on_request


def _error(code: str, description: str) -> bytes:
    return json.dumps({"error": {"code": code, "description": description}}).encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def date_time_string(self, timestamp: float | None = None) -> str:
        clock = self.server.state.date_clock
        if timestamp is None and clock is not None:
            timestamp = clock()
        return super().date_time_string(timestamp)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def _record(self, path: str, query: dict[str, str], status: int) -> None:
        state = self.server.state
        with state.lock:
            state.log.append(Logged(self.command, path, query, status))

    def do_POST(self) -> None:
        self._refuse()

    def do_PUT(self) -> None:
        self._refuse()

    def do_PATCH(self) -> None:
        self._refuse()

    def do_DELETE(self) -> None:
        self._refuse()

    def _refuse(self) -> None:
        parts = urlsplit(self.path)
        self._record(parts.path, {}, 405)
        self._send(405, _error("BAD_REQUEST_ERROR", "the fake is read-only"))

    def do_GET(self) -> None:
        state = self.server.state
        parts = urlsplit(self.path)
        parsed = parse_qs(parts.query)
        query = {k: v[-1] for k, v in parsed.items()}
        expand = frozenset(parsed.get("expand[]", []))
        with state.lock:
            state.served += 1
            number = state.served
            fault = self._pick_fault(parts.path, query)
        if state.on_request is not None:
            try:
                state.on_request(number)
            except Exception as error:  # a test's hook failed: answer 500, never hang up
                with state.lock:
                    state.hook_errors.append(error)
                self._record(parts.path, query, 500)
                self._send(500, _error("SERVER_ERROR", f"the fake's on_request hook: {error!r}"))
                return
        if not self._authorised():
            self._record(parts.path, query, 401)
            self._send(401, _error("BAD_REQUEST_ERROR", "The api key provided is invalid"))
            return
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.trickle:
                self._record(parts.path, query, 200)
                self._trickle(fault)
                return
            if fault.drop:
                self._record(parts.path, query, 0)
                self.close_connection = True
                self.connection.close()
                return
            if fault.status is not None:
                self._record(parts.path, query, fault.status)
                body = (
                    b"<html><body>502 Bad Gateway</body></html>"
                    if fault.html_body
                    else _error("SERVER_ERROR", f"injected {fault.status}")
                )
                headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                self._send(fault.status, body, headers)
                return
        if state.admit is not None and not state.admit():
            self._record(parts.path, query, 429)
            self._send(429, _error("BAD_REQUEST_ERROR", "Too many requests"))
            return
        if state.rate_limit_every and number % state.rate_limit_every == 0:
            self._record(parts.path, query, 429)
            retry_after = state.rate_limit_retry_after
            self._send(
                429,
                _error("BAD_REQUEST_ERROR", "Too many requests"),
                {"Retry-After": retry_after} if retry_after is not None else {},
            )
            return
        if state.error_every and number % state.error_every == 0:
            self._record(parts.path, query, state.error_status)
            self._send(state.error_status, b"<html><body>Bad Gateway</body></html>")
            return
        try:
            status, payload = self._route(parts.path, query, expand)
        except ValueError as exc:
            status, payload = 400, {"error": {"code": "BAD_REQUEST_ERROR", "description": str(exc)}}
        self._record(parts.path, query, status)
        self._send(status, json.dumps(payload).encode())

    def _trickle(self, fault: Fault) -> None:
        self.close_connection = True
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        if fault.trickle_headers:
            pending = b"X-Slow: " + b"a" * 100_000
        else:
            head += b"Content-Length: 1000000000\r\n\r\n" + b'{"entity": "collection", "items": ['
            pending = b" " * 100_000
        ends = time.monotonic() + TRICKLE_LIMIT_S
        try:
            self.wfile.write(head)
            self.wfile.flush()
            for byte in pending:
                if time.monotonic() > ends or self.server.stopping.is_set():
                    return
                time.sleep(fault.trickle)
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except OSError:  # the client hung up
            return

    def _pick_fault(self, path: str, query: dict[str, str]) -> Fault | None:
        state = self.server.state
        for fault in state.faults:
            if not path.startswith(fault.path):
                continue
            if any(query.get(k) != v for k, v in fault.query.items()):
                continue
            if fault.after > 0:
                fault.after -= 1
                continue
            if fault.times is not None:
                if fault.times <= 0:
                    continue
                fault.times -= 1
            return fault
        return None

    def _authorised(self) -> bool:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            decoded = base64.b64decode(header[6:]).decode()
        except ValueError:
            return False
        return decoded == f"{self.server.key_id}:{self.server.key_secret}"

    def _route(
        self, path: str, query: dict[str, str], expand: frozenset[str] = frozenset()
    ) -> tuple[int, dict[str, Any]]:
        state = self.server.state
        lists = {
            "/v1/payments": state.payments,
            "/v1/refunds": state.refunds,
            "/v1/settlements": state.settlements,
            "/v1/settlements/ondemand": state.instant_settlements,
            "/v1/disputes": state.disputes,
            "/v1/transfers": state.transfers,
        }
        if path in lists:
            count = int(query.get("count", "10"))
            if count > 100:
                raise ValueError("The count may not be greater than 100.")
            low = int(query.get("from", "0"))
            high = int(query.get("to", str(2**40)))
            skip = 0 if state.ignore_skip else int(query.get("skip", "0"))
            count = state.page_size or count
            chosen = [i for i in lists[path] if low <= int(i["created_at"]) <= high]
            chosen.sort(key=lambda i: (-int(i["created_at"]), str(i["id"])))
            page = chosen[skip : skip + count]
            if path == "/v1/payments":
                page = [_payment(i, "card" in expand) for i in page]
            elif path == "/v1/settlements/ondemand":
                payouts = state.instant_payouts if "ondemand_payouts" in expand else None
                page = [_instant(i, payouts) for i in page]
            return 200, _collection(page)
        if path == "/v1/settlements/recon/combined":
            count = int(query.get("count", "1000"))
            if count > 1000:
                raise ValueError("The count may not be greater than 1000.")
            year, month = int(query["year"]), int(query["month"])
            day = int(query["day"]) if "day" in query else None
            skip = int(query.get("skip", "0"))
            chosen = []
            for row in state.recon:
                when = ist_day(int(row.get("settled_at") or row["created_at"]))
                if (when.year, when.month) == (year, month) and day in (None, when.day):
                    chosen.append(row)
            return 200, _collection(chosen[skip : skip + count])
        return 404, {"error": {"code": "BAD_REQUEST_ERROR", "description": "no such URL"}}


def _collection(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"entity": "collection", "count": len(items), "items": items}


_CARD_KEYS = {  # a flat card_* column of a dataset -> key of the API's `card` object
    "card_network": "network",
    "card_type": "type",
    "card_international": "international",
    "card_sub_type": "sub_type",
}


def _payment(item: dict[str, Any], with_card: bool) -> dict[str, Any]:
    """A payment as the list answers it: the `card` object only when expanded."""
    served = {k: v for k, v in item.items() if k != "card" and k not in _CARD_KEYS}
    card = item.get("card")
    if not isinstance(card, dict):
        flat = {key: item[k] for k, key in _CARD_KEYS.items() if item.get(k) is not None}
        card = flat or None
    if with_card and card is not None:
        if isinstance(card.get("international"), str):
            card = {**card, "international": card["international"].lower() == "true"}
        served["card"] = {"entity": "card", **card}
    return served


def _instant(item: dict[str, Any], payouts: list[dict[str, Any]] | None) -> dict[str, Any]:
    """An instant settlement: with its payouts as a collection when expanded (`payouts`)."""
    if payouts is None:
        return dict(item)
    own = [dict(p) for p in payouts if p.get("instant_settlement_id") == item["id"]]
    for payout in own:
        payout.pop("instant_settlement_id", None)  # the API nests them; no parent field
    return {**item, "ondemand_payouts": _collection(own)}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, state: FakeState, key_id: str, key_secret: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.key_id = key_id
        self.key_secret = key_secret
        self.stopping = threading.Event()  # ends trickling answers


class FakeRazorpay:
    """Start with `with FakeRazorpay() as fake:`; `fake.base_url` is what RAZORPAY_BASE_URL
    should be. Data lives in `fake.state` (lists of API-shaped dicts).
    """

    def __init__(self, key_id: str = KEY_ID, key_secret: str = KEY_SECRET) -> None:
        self.state = FakeState()
        self.key_id = key_id
        self.key_secret = key_secret
        self._server = _Server(self.state, key_id, key_secret)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeRazorpay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        if self.state.hook_errors and exc[0] is None:  # a failing hook fails the test
            raise AssertionError("the fake's on_request hook raised") from self.state.hook_errors[0]

    def inject(self, fault: Fault) -> Fault:
        with self.state.lock:
            self.state.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self.state.lock:
            self.state.faults.clear()
            self.state.rate_limit_every = 0
            self.state.error_every = 0

    def requests(self, *, path: str | None = None, status: int | None = None) -> list[Logged]:
        with self.state.lock:
            log = list(self.state.log)
        return [
            r
            for r in log
            if (path is None or r.path == path) and (status is None or r.status == status)
        ]

    def load_dataset(self, folder: Path) -> None:
        """Serve the spec-shaped dataset in `folder` (JSON envelopes or API-shaped CSV)."""
        self.state.payments = read_items(folder, "payments")
        self.state.refunds = read_items(folder, "refunds")
        self.state.settlements = read_items(folder, "settlements")
        self.state.recon = read_items(folder, "settlement_recon")
        self.serve_instant_settlements(
            read_items(folder, "instant_settlements"),
            read_items(folder, "instant_settlement_payouts"),
        )
        self.state.disputes = read_items(folder, "disputes")
        self.state.transfers = read_items(folder, "transfers")

    def serve_instant_settlements(
        self, settlements: list[dict[str, Any]], payouts: list[dict[str, Any]] | None = None
    ) -> None:
        """Serve these instant settlements; payouts nested in them (`ondemand_payouts`, a
        collection or a list) join `payouts`, keyed by their parent's id."""
        own: list[dict[str, Any]] = []
        found = [dict(p) for p in payouts or []]
        for item in settlements:
            nested = item.get("ondemand_payouts")
            if isinstance(nested, dict):
                nested = nested.get("items")
            for payout in nested if isinstance(nested, list) else []:
                found.append({**payout, "instant_settlement_id": item["id"]})
            own.append({k: v for k, v in item.items() if k != "ondemand_payouts"})
        self.state.instant_settlements = own
        self.state.instant_payouts = found


_INT_FIELDS = {
    "amount",
    "amount_requested",
    "amount_settled",
    "amount_pending",
    "amount_reversed",
    "amount_deducted",
    "base_amount",
    "respond_by",
    "processed_at",
    "reversed_at",
    "on_hold_until",
    "fee",
    "tax",
    "fees",
    "debit",
    "credit",
    "amount_refunded",
    "created_at",
    "settled_at",
    "posted_at",
}
_BOOL_FIELDS = {"captured", "international", "on_hold", "settled"}


def _typed(name: str, value: str) -> Any:
    """A CSV cell as the API would send it (ints, booleans, JSON notes, null for empty)."""
    if value == "":
        return None
    if name in _INT_FIELDS:
        return int(value)
    if name in _BOOL_FIELDS:
        return value.strip().lower() in {"true", "1"}
    if name == "notes":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def read_items(folder: Path, name: str) -> list[dict[str, Any]]:
    """The items of `<name>.json` or `<name>.csv` in `folder` ([] when absent)."""
    import csv

    json_path, csv_path = folder / f"{name}.json", folder / f"{name}.csv"
    if json_path.exists():
        data = json.loads(json_path.read_text(encoding="utf-8-sig"))
        return list(data["items"] if isinstance(data, dict) else data)
    if csv_path.exists():
        with csv_path.open(encoding="utf-8-sig", newline="") as handle:
            return [{k: _typed(k, v) for k, v in row.items()} for row in csv.DictReader(handle)]
    return []


SYNTHETIC_PREFIX = "pay_Synth"  # no spec example id starts so (match it with GLOB, not LIKE)


def make_payments(count: int, *, day: dt.date, start_index: int = 0) -> list[dict[str, Any]]:
    """`count` captured payments spread over one IST day, with distinct ids."""
    base = int(dt.datetime.combine(day, dt.time(0, 0), tzinfo=IST).timestamp())
    items = []
    for n in range(start_index, start_index + count):
        amount = 10_000 + (n * 7919) % 5_000_000
        fee = amount * 2 // 100
        items.append(
            {
                "id": f"{SYNTHETIC_PREFIX}{n:09d}",
                "entity": "payment",
                "amount": amount,
                "currency": "INR",
                "status": "captured",
                "order_id": f"order_Synth{n:09d}",
                "invoice_id": None,
                "international": False,
                "method": "upi",
                "amount_refunded": 0,
                "refund_status": None,
                "captured": True,
                "description": "Test order",
                "email": f"c{n}@example.com",
                "contact": "+919800000000",
                "notes": {"n": str(n)},
                "fee": fee,
                "tax": fee * 18 // 118,
                "error_code": None,
                "created_at": base + (n * 37) % 86_400,
            }
        )
    return items


class TokenBucket:
    """A rate limiter for `FakeState.admit`: `rate` requests per second on `clock`, bursts of
    up to `burst`. Each admitted request takes a token; none left answers 429.
    """

    def __init__(self, rate: float, burst: float, clock: Callable[[], float]) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.tokens = burst
        self.at = clock()

    def __call__(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
