"""A reconciliation run answers the webhook marks that were open when it started."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest

from core.engine import EngineParams
from core.ingest import import_dataset
from core.pipeline import reconcile_database
from core.razorpay.webhooks import handle_webhook, open_marks, sign
from tests.conftest import SPEC_EXAMPLE


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


SECRET = "whsec_pipeline_test"
AS_OF = int(dt.datetime.fromisoformat("2026-06-30T23:59:59+05:30").timestamp())


def _payment_captured(payment_id: str) -> bytes:
    payment = {
        "id": payment_id,
        "entity": "payment",
        "amount": 150000,
        "currency": "INR",
        "status": "captured",
        "captured": True,
        "order_id": "order_WebhookOnly01",
        "method": "upi",
        "fee": 0,
        "tax": 0,
        "amount_refunded": 0,
        "international": False,
        "created_at": AS_OF - 3600,
    }
    event = {
        "entity": "event",
        "event": "payment.captured",
        "contains": ["payment"],
        "payload": {"payment": {"entity": payment}},
        "created_at": AS_OF - 3500,
    }
    return json.dumps(event, separators=(",", ":")).encode()


def test_a_run_clears_the_marks_it_reconciled_and_sees_the_webhook_payment(
    conn: sqlite3.Connection,
) -> None:
    import_dataset(conn, SPEC_EXAMPLE / "dataset")
    body = _payment_captured("pay_WebhookOnly001")
    headers = {"X-Razorpay-Signature": sign(body, SECRET), "X-Razorpay-Event-Id": "evt_P1"}
    assert handle_webhook(conn, body, headers, secret=SECRET).verdict == "accepted"
    assert [m[2] for m in open_marks(conn)] == ["pay_WebhookOnly001"]

    result = reconcile_database(conn, EngineParams(), AS_OF, "files")

    assert open_marks(conn) == []
    row = result.outcomes[result.outcomes["entity_id"] == "pay_WebhookOnly001"]
    assert list(row["status"]) == ["PENDING"]  # captured an hour ago: not yet due
