"""Webhook limits through the real route (`streamlit run serve.py`): unsigned deliveries are
counted, not stored; malformed signed bodies answer 400 and are logged; future-dated events
are refused; the log is pruned by age."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
import requests

from core.db import connect
from core.razorpay.webhooks import sign
from serve import WEBHOOK_PATH
from tests.fake_razorpay import read_items
from tests.razorpay_support import SPEC_DATASET
from tests.test_razorpay_webhook_server import SECRET, Served, served  # noqa: F401

pytestmark = pytest.mark.slow


def _payment() -> dict[str, Any]:
    return copy.deepcopy(
        next(p for p in read_items(SPEC_DATASET, "payments") if p["status"] == "captured")
    )


def _event(created_at: int, payment: dict[str, Any]) -> bytes:
    body = {
        "entity": "event",
        "event": "payment.captured",
        "contains": ["payment"],
        "payload": {"payment": {"entity": payment}},
        "created_at": created_at,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def _signed(body: bytes, event_id: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-Razorpay-Event-Id": event_id,
        "X-Razorpay-Signature": sign(body, SECRET),
    }


def _query(site: Served, sql: str) -> list[tuple[Any, ...]]:
    return site.query(sql)


def test_unsigned_requests_are_counted_not_stored(served: Served) -> None:  # noqa: F811
    body = _event(int(time.time()), _payment())
    with requests.Session() as session:
        for n in range(500):
            answer = session.post(
                served.base_url + WEBHOOK_PATH,
                data=body + b" " * (n % 7),
                headers={"X-Razorpay-Event-Id": f"evt_U{n}", "X-Razorpay-Signature": "0" * 64},
                timeout=30,
            )
            assert answer.status_code == 401
    assert _query(served, "SELECT COUNT(*) FROM razorpay_webhook_log") == [(0,)]
    counted = _query(
        served, "SELECT verdict, SUM(count) FROM razorpay_webhook_rejections GROUP BY verdict"
    )
    assert counted == [("bad_signature", 500)]


def test_malformed_signed_bodies_answer_400_and_are_logged(served: Served) -> None:  # noqa: F811
    nested = b'{"entity":"event","payload":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    shallow_but_deep = b'{"entity":"event","payload":' + b"[" * 40 + b"]" * 40 + b"}"
    huge = b'{"entity":"event","event":"payment.captured","created_at":' + b"9" * 5000 + b"}"
    long_amount = _payment()
    body_long = _event(int(time.time()), long_amount).replace(
        f'"amount":{long_amount["amount"]}'.encode(), b'"amount":' + b"1" * 25
    )
    bodies = {"evt_M1": nested, "evt_M2": shallow_but_deep, "evt_M3": huge, "evt_M4": body_long}
    for event_id, body in bodies.items():
        answer = served.post(body, _signed(body, event_id))
        assert answer.status_code == 400, (event_id, answer.text)
        assert answer.json()["verdict"] == "malformed"
    logged = _query(served, "SELECT event_id, verdict FROM razorpay_webhook_log ORDER BY id")
    assert logged == [(e, "malformed") for e in bodies]


def test_an_event_dated_in_the_future_is_refused_and_blocks_nothing(
    served: Served,  # noqa: F811
) -> None:
    payment = _payment()
    future = _event(4_102_444_800, payment)  # 2100-01-01
    refused = served.post(future, _signed(future, "evt_F1"))
    assert (refused.status_code, refused.json()["verdict"]) == (422, "refused")
    assert "ahead of this server's clock" in refused.json()["message"]
    real = _event(int(time.time()) - 60, payment)
    accepted = served.post(real, _signed(real, "evt_F2"))
    assert (accepted.status_code, accepted.json()["verdict"]) == (200, "accepted")
    assert accepted.json()["upserted"] == [f"payment:{payment['id']}"]
    logged = _query(served, "SELECT event_id, verdict FROM razorpay_webhook_log ORDER BY id")
    assert logged == [("evt_F1", "refused"), ("evt_F2", "accepted")]


def test_the_delivery_log_is_pruned_by_age(served: Served) -> None:  # noqa: F811
    payment = _payment()
    first = _event(int(time.time()) - 120, payment)
    assert served.post(first, _signed(first, "evt_P1")).status_code == 200
    conn = connect(served.db)
    with conn:
        conn.execute(
            "INSERT INTO razorpay_webhook_log (received_at, event_id, verdict, reason,"
            " body_sha256, body_bytes) VALUES (?, 'evt_old', 'accepted', 'old', 'x', 1)",
            (int(time.time()) - 31 * 86_400,),
        )
    conn.close()
    second = _event(int(time.time()) - 60, payment)
    assert served.post(second, _signed(second, "evt_P2")).status_code == 200
    kept = _query(served, "SELECT event_id FROM razorpay_webhook_log ORDER BY id")
    assert kept == [("evt_P1",), ("evt_P2",)]


def test_limits_come_from_the_environment_and_bad_values_are_named() -> None:
    from core.errors import ConfigError
    from core.razorpay.webhooks import WebhookLimits, limits_from_env

    assert limits_from_env({}) == WebhookLimits(30, 300)
    got = limits_from_env(
        {"RAZORPAY_WEBHOOK_LOG_DAYS": "7", "RAZORPAY_WEBHOOK_MAX_SKEW_SECONDS": "60"}
    )
    assert got == WebhookLimits(7, 60)
    with pytest.raises(ConfigError, match="RAZORPAY_WEBHOOK_LOG_DAYS"):
        limits_from_env({"RAZORPAY_WEBHOOK_LOG_DAYS": "0"})
