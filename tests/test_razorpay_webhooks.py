"""Webhook deliveries through `handle_webhook`: signature, inbox, order, marks, rejections."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from core.db import connect
from core.razorpay.status import sync_status
from core.razorpay.webhooks import WebhookResult, clear_marks, handle_webhook, open_marks, sign
from tests.fake_razorpay import read_items
from tests.razorpay_support import SPEC_DATASET


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    """This module's tests run on SQLite and on PostgreSQL (tests/conftest.py)."""
    return db_conn


SECRET = "whsec_test_3f9a"
PAYMENTS = {p["id"]: p for p in read_items(SPEC_DATASET, "payments")}
REFUNDS = read_items(SPEC_DATASET, "refunds")
SETTLEMENTS = read_items(SPEC_DATASET, "settlements")
STATE_TABLES = (
    "payments",
    "refunds",
    "settlements",
    "imports",
    "razorpay_webhook_inbox",
    "razorpay_entity_versions",
    "rereconcile_marks",
)


def event(name: str, created_at: int, **entities: dict[str, Any]) -> dict[str, Any]:
    return {
        "entity": "event",
        "account_id": "acc_TestMerchant01",
        "event": name,
        "contains": list(entities),
        "payload": {kind: {"entity": entity} for kind, entity in entities.items()},
        "created_at": created_at,
    }


def body_of(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def deliver(
    conn: sqlite3.Connection,
    body: bytes | dict[str, Any],
    event_id: str | None,
    *,
    signature: str | None = None,
    secret: str | None = SECRET,
    now: int = 1_782_900_000,
) -> WebhookResult:
    raw = body if isinstance(body, bytes) else body_of(body)
    headers = {"Content-Type": "application/json"}
    headers["X-Razorpay-Signature"] = signature if signature is not None else sign(raw, SECRET)
    if event_id is not None:
        headers["X-Razorpay-Event-Id"] = event_id
    return handle_webhook(conn, raw, headers, secret=secret, now=now)


def state(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {
        t: [tuple(r) for r in conn.execute(f"SELECT * FROM {t} ORDER BY 1")] for t in STATE_TABLES
    }


def log(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return [
        tuple(r)
        for r in conn.execute("SELECT event_id, verdict FROM razorpay_webhook_log ORDER BY id")
    ]


def captured_payment() -> dict[str, Any]:
    payment = next(p for p in PAYMENTS.values() if p["status"] == "captured")
    return copy.deepcopy(payment)


def test_a_signed_payment_captured_is_upserted_marked_and_kept_in_the_inbox(
    conn: sqlite3.Connection,
) -> None:
    payment = captured_payment()

    result = deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_A1")

    assert (result.status, result.verdict) == (200, "accepted")
    assert result.upserted == (f"payment:{payment['id']}",), result
    row = conn.execute("SELECT amount, status, fee FROM payments WHERE id = ?", (payment["id"],))
    assert tuple(row.fetchone()) == (payment["amount"], "captured", payment["fee"])
    assert [(m[1], m[2], m[3]) for m in open_marks(conn)] == [
        ("payment", payment["id"], "payment.captured")
    ]
    inbox = conn.execute("SELECT event, outcome, body FROM razorpay_webhook_inbox").fetchall()
    assert [tuple(r)[:2] for r in inbox] == [("payment.captured", "applied")]
    assert json.loads(inbox[0]["body"])["payload"]["payment"]["entity"]["id"] == payment["id"]
    assert log(conn) == [("evt_A1", "accepted")]


def test_a_redelivered_event_changes_nothing(conn: sqlite3.Connection) -> None:
    delivery = event("payment.captured", 1_782_000_000, payment=captured_payment())
    deliver(conn, delivery, "evt_A2")
    before = state(conn)

    again = deliver(conn, delivery, "evt_A2")
    replayed = deliver(conn, {**delivery, "created_at": 1_782_000_500}, "evt_A2")

    under_new_id = deliver(conn, delivery, "evt_A3")  # the id header is not signed

    assert (again.status, again.verdict) == (200, "duplicate")
    assert (replayed.status, replayed.verdict) == (200, "duplicate")
    assert "different body" in replayed.message
    assert (under_new_id.status, under_new_id.verdict) == (200, "duplicate")
    assert "already received as event evt_A2" in under_new_id.message
    assert state(conn) == before
    assert log(conn) == [
        ("evt_A2", "accepted"),
        ("evt_A2", "duplicate"),
        ("evt_A2", "duplicate"),
        ("evt_A3", "duplicate"),
    ]


@pytest.mark.parametrize(
    "signature",
    [
        "",
        "0" * 64,
        sign(b'{"event":"payment.captured"}', SECRET),
        "not-hex-at-all",
    ],
    ids=["empty", "zeros", "signature-of-another-body", "garbage"],
)
def test_a_bad_signature_changes_nothing(conn: sqlite3.Connection, signature: str) -> None:
    delivery = body_of(event("payment.captured", 1_782_000_000, payment=captured_payment()))
    before = state(conn)

    result = deliver(conn, delivery, "evt_B1", signature=signature)

    assert (result.status, result.verdict) == (401, "bad_signature")
    assert state(conn) == before
    # unsigned: counted, not stored
    assert conn.execute("SELECT COUNT(*) FROM razorpay_webhook_log").fetchone()[0] == 0
    counted = conn.execute("SELECT verdict, count FROM razorpay_webhook_rejections").fetchall()
    assert [tuple(r) for r in counted] == [("bad_signature", 1)]


def test_a_signature_made_with_another_secret_is_rejected(conn: sqlite3.Connection) -> None:
    delivery = body_of(event("payment.captured", 1_782_000_000, payment=captured_payment()))

    result = deliver(conn, delivery, "evt_B2", signature=sign(delivery, "someone-elses-secret"))

    assert result.verdict == "bad_signature"
    assert conn.execute("SELECT COUNT(*) FROM payments").fetchone()[0] == 0


def test_the_same_json_reserialised_with_different_bytes_is_rejected(
    conn: sqlite3.Connection,
) -> None:
    original = body_of(event("payment.captured", 1_782_000_000, payment=captured_payment()))
    signature = sign(original, SECRET)
    parsed = json.loads(original)
    variants = [
        json.dumps(parsed, indent=2).encode(),
        json.dumps(parsed).encode(),  # default separators add spaces
        json.dumps(parsed, sort_keys=True, separators=(",", ":")).encode(),
        original + b"\n",
    ]
    for n, variant in enumerate(variants):
        assert json.loads(variant) == parsed and variant != original
        result = deliver(conn, variant, f"evt_C{n}", signature=signature)
        assert (result.status, result.verdict) == (401, "bad_signature")
    assert conn.execute("SELECT COUNT(*) FROM payments").fetchone()[0] == 0

    assert deliver(conn, original, "evt_C9", signature=signature).verdict == "accepted"


def refund_and_payment() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A processed refund, its payment before the refund and after it."""
    refund = copy.deepcopy(next(r for r in REFUNDS if r["payment_id"] in PAYMENTS))
    before = copy.deepcopy(PAYMENTS[refund["payment_id"]])
    before.update(status="captured", amount_refunded=0, refund_status=None)
    after = copy.deepcopy(before)
    after.update(amount_refunded=refund["amount"], refund_status="partial")
    if refund["amount"] == before["amount"]:
        after.update(status="refunded", refund_status="full")
    return refund, before, after


def test_events_arriving_out_of_order_keep_the_newest_state(db_path: Path, tmp_path: Path) -> None:
    refund, before, after = refund_and_payment()
    captured = event("payment.captured", 1_782_000_000, payment=before)
    refunded = event("refund.processed", 1_782_003_600, refund=refund, payment=after)
    in_order, reversed_order = connect(db_path), connect(tmp_path / "other.sqlite")
    from core.db import migrate

    migrate(reversed_order)
    try:
        deliver(in_order, captured, "evt_D1")
        deliver(in_order, refunded, "evt_D2")
        deliver(reversed_order, refunded, "evt_D2")
        late = deliver(reversed_order, captured, "evt_D1")

        assert late.verdict == "accepted" and late.upserted == ()
        assert late.skipped and "newer event" in late.skipped[0]
        query = "SELECT id, status, amount_refunded FROM payments"
        for conn in (in_order, reversed_order):
            assert [tuple(r) for r in conn.execute(query)] == [
                (after["id"], after["status"], refund["amount"])
            ]
            stored = conn.execute("SELECT id, payment_id, status FROM refunds").fetchall()
            assert [tuple(r) for r in stored] == [(refund["id"], after["id"], "processed")]
            marks = {(m[1], m[2]) for m in open_marks(conn)}
            assert marks == {("payment", after["id"]), ("refund", refund["id"])}
    finally:
        in_order.close()
        reversed_order.close()


@pytest.mark.parametrize(
    ("status", "later_by"),
    [
        ("created", 0),
        # Razorpay: "failed is not final, so a failed settlement may be retried and still
        # reach processed": processed is final (core.ingest.lifecycle). Dated later, so only
        # the lifecycle, not the newest-event rule, keeps it out.
        ("failed", 60),
    ],
)
def test_a_late_event_never_moves_a_status_backwards(
    conn: sqlite3.Connection, status: str, later_by: int
) -> None:
    settlement = copy.deepcopy(next(s for s in SETTLEMENTS if s["status"] == "processed"))
    deliver(conn, event("settlement.processed", 1_782_000_000, settlement=settlement), "evt_E1")
    older_view = {**settlement, "status": status, "utr": None}

    result = deliver(
        conn,
        event("settlement.processed", 1_782_000_000 + later_by, settlement=older_view),
        "evt_E2",
    )

    assert result.verdict == "accepted" and result.upserted == ()
    assert result.skipped == (
        f"settlement:{settlement['id']} (stored status processed is past {status})",
    )
    row = conn.execute("SELECT status, utr FROM settlements WHERE id = ?", (settlement["id"],))
    assert tuple(row.fetchone()) == ("processed", settlement["utr"])


def test_a_later_payment_event_that_lowers_amount_refunded_is_skipped(
    conn: sqlite3.Connection,
) -> None:
    refund, _, after = refund_and_payment()
    deliver(conn, event("refund.processed", 1_782_000_000, refund=refund, payment=after), "evt_E5")
    stale = {**after, "amount_refunded": 0, "refund_status": None}  # its status as stored

    result = deliver(conn, event("payment.captured", 1_782_000_060, payment=stale), "evt_E6")

    assert result.verdict == "accepted" and result.upserted == ()
    assert result.skipped == (
        f"payment:{after['id']} (stored amount_refunded {refund['amount']} is higher than 0)",
    )
    row = conn.execute("SELECT status, amount_refunded FROM payments WHERE id = ?", (after["id"],))
    assert tuple(row.fetchone()) == (after["status"], refund["amount"])


def test_a_settlement_processed_is_upserted_and_marks_the_settlement(
    conn: sqlite3.Connection,
) -> None:
    settlement = copy.deepcopy(next(s for s in SETTLEMENTS if s["status"] == "processed"))

    result = deliver(
        conn, event("settlement.processed", 1_782_000_000, settlement=settlement), "evt_F1"
    )

    assert result.upserted == (f"settlement:{settlement['id']}",)
    row = conn.execute("SELECT amount, utr FROM settlements").fetchone()
    assert tuple(row) == (settlement["amount"], settlement["utr"])
    assert [(m[1], m[2]) for m in open_marks(conn)] == [("settlement", settlement["id"])]


def test_a_dispute_marks_its_payment(conn: sqlite3.Connection) -> None:
    payment = captured_payment()
    dispute = {
        "id": "disp_TestDispute01",
        "entity": "dispute",
        "payment_id": payment["id"],
        "amount": payment["amount"],
        "currency": "INR",
        "status": "open",
        "reason_code": "chargeback",
        "created_at": 1_782_000_000,
    }

    result = deliver(
        conn,
        event("payment.dispute.created", 1_782_000_100, payment=payment, dispute=dispute),
        "evt_G1",
    )

    assert result.verdict == "accepted"
    assert [(m[1], m[2], m[3]) for m in open_marks(conn)] == [
        ("payment", payment["id"], "payment.dispute.created"),
        ("dispute", dispute["id"], "payment.dispute.created"),
    ]
    lost = {**dispute, "status": "lost"}
    without_payment = event("payment.dispute.lost", 1_782_100_000, dispute=lost)
    assert deliver(conn, without_payment, "evt_G2").verdict == "accepted"
    assert [(m[1], m[3]) for m in open_marks(conn)][2:] == [
        ("dispute", "payment.dispute.lost"),
        ("payment", "payment.dispute.lost"),
    ]


def malformed_bodies() -> list[tuple[str, bytes, str | None]]:
    good = event("payment.captured", 1_782_000_000, payment=captured_payment())
    no_id = copy.deepcopy(good)
    del no_id["payload"]["payment"]["entity"]["id"]
    bad_amount = copy.deepcopy(good)
    bad_amount["payload"]["payment"]["entity"]["amount"] = "a lot"
    negative = copy.deepcopy(good)
    negative["payload"]["payment"]["entity"]["amount"] = -5
    no_payload = {k: v for k, v in good.items() if k != "payload"}
    return [
        ("not-json", b"{not json", "evt_M1"),
        ("not-utf8", b'{"event": "\xff"}', "evt_M2"),
        ("an-array", b"[1, 2]", "evt_M3"),
        ("no-created-at", body_of({k: v for k, v in good.items() if k != "created_at"}), "evt_M4"),
        ("no-payload", body_of(no_payload), "evt_M5"),
        ("entity-without-id", body_of(no_id), "evt_M6"),
        ("amount-not-a-number", body_of(bad_amount), "evt_M7"),
        ("negative-amount", body_of(negative), "evt_M8"),
        ("duplicate-keys", b'{"event":"a","event":"b","created_at":1,"payload":{}}', "evt_M9"),
        ("no-event-id-header", body_of(good), None),
        ("event-id-with-spaces", body_of(good), "evt 1; drop table"),
        ("captured-without-payment", body_of(event("payment.captured", 1_782_000_000)), "evt_MA"),
    ]


@pytest.mark.parametrize(
    ("body", "event_id"),
    [(b, e) for _, b, e in malformed_bodies()],
    ids=[name for name, _, _ in malformed_bodies()],
)
def test_a_malformed_delivery_with_a_valid_signature_changes_nothing(
    conn: sqlite3.Connection, body: bytes, event_id: str | None
) -> None:
    before = state(conn)

    result = deliver(conn, body, event_id)

    assert (result.status, result.verdict) == (400, "malformed")
    assert state(conn) == before
    assert [v for _, v in log(conn)] == ["malformed"]


def test_an_oversized_body_is_refused_before_its_signature_is_checked(
    conn: sqlite3.Connection,
) -> None:
    body = b'{"padding": "' + b"x" * 1_000_000 + b'"}'

    result = deliver(conn, body, "evt_L1")

    assert (result.status, result.verdict) == (413, "malformed")
    assert conn.execute("SELECT COUNT(*) FROM razorpay_webhook_log").fetchone()[0] == 0
    counted = conn.execute("SELECT verdict, count FROM razorpay_webhook_rejections").fetchall()
    assert [tuple(r) for r in counted] == [("too_large", 1)]


def test_without_a_configured_secret_every_delivery_is_refused(conn: sqlite3.Connection) -> None:
    result = deliver(
        conn, event("payment.captured", 1, payment=captured_payment()), "evt_H1", secret=None
    )

    assert (result.status, result.verdict) == (503, "unconfigured")
    assert conn.execute("SELECT COUNT(*) FROM razorpay_webhook_inbox").fetchone()[0] == 0


def test_an_event_we_do_not_use_is_kept_in_the_inbox_as_ignored(conn: sqlite3.Connection) -> None:
    result = deliver(conn, event("order.paid", 1_782_000_000, order={"id": "order_X1"}), "evt_I1")

    assert (result.status, result.verdict) == (200, "accepted")
    outcome = conn.execute("SELECT outcome FROM razorpay_webhook_inbox").fetchone()[0]
    assert outcome == "ignored" and open_marks(conn) == []


def test_marks_stay_open_until_a_run_clears_them(conn: sqlite3.Connection) -> None:
    payment = captured_payment()
    deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_J1")
    marks = open_marks(conn)
    settlement = next(s for s in SETTLEMENTS if s["status"] == "processed")
    deliver(conn, event("settlement.processed", 1_782_000_000, settlement=settlement), "evt_J2")

    cleared = clear_marks(conn, through_id=marks[-1][0], run_id=7)

    assert cleared == 1
    assert [(m[1], m[2]) for m in open_marks(conn)] == [("settlement", settlement["id"])]


def test_sync_status_counts_webhook_deliveries(conn: sqlite3.Connection) -> None:
    delivery = event("payment.captured", 1_782_000_000, payment=captured_payment())
    deliver(conn, delivery, "evt_K1", now=1_782_900_000)
    deliver(conn, delivery, "evt_K1", now=1_782_900_001)
    deliver(conn, delivery, "evt_K2", signature="0" * 64, now=1_782_900_002)

    webhooks = sync_status(conn).webhooks

    assert (webhooks.accepted, webhooks.duplicates, webhooks.rejected) == (1, 1, 1)
    assert webhooks.last_accepted_at == 1_782_900_000
    assert webhooks.last_rejected_at == 1_782_900_002
    assert "bad_signature" in (webhooks.last_rejected_reason or "")
    assert sync_status(conn).pending_rereconcile == 1


def test_sync_status_reads_no_raw_table_count(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Data page's Razorpay tab reads the status on every render: counting every raw
    table there (10M payments, 20M recon rows) is a full scan the page never shows."""
    from core.db import razorpay as db

    def refused(_conn: sqlite3.Connection) -> dict[str, int]:
        raise AssertionError("the status counted the raw tables")

    monkeypatch.setattr(db, "raw_table_counts", refused)
    deliver(conn, event("payment.captured", 1_782_000_000, payment=captured_payment()), "evt_R")

    assert sync_status(conn).webhooks.accepted == 1


def test_a_field_the_event_leaves_out_keeps_the_value_a_dashboard_report_stored(
    conn: sqlite3.Connection,
) -> None:
    """A payment entity in a webhook has no `settled_by` when Razorpay settles; a Dashboard
    report names the bank of a direct settlement. The event stores what it carries and
    keeps the stored bank, as a sync does (docs/ingest.md, "Switching layouts"); blanking
    it would turn a bank-settled payment into a missing settlement."""
    payment = captured_payment()
    payment.pop("settled_by", None)
    deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_S1")
    with conn:  # as a Dashboard Payments report's "Settled By" stored it
        conn.execute("UPDATE payments SET settled_by = 'Axis Bank' WHERE id = ?", (payment["id"],))

    refunded = dict(payment, status="refunded", amount_refunded=payment["amount"])
    refund = dict(REFUNDS[0], payment_id=payment["id"], amount=payment["amount"])
    result = deliver(
        conn,
        event("refund.processed", 1_782_000_100, refund=refund, payment=refunded),
        "evt_S2",
    )

    assert f"payment:{payment['id']}" in result.upserted, result
    row = conn.execute(
        "SELECT status, amount_refunded, settled_by FROM payments WHERE id = ?", (payment["id"],)
    ).fetchone()
    assert tuple(row) == ("refunded", payment["amount"], "Axis Bank")


def test_a_delivery_that_stores_rows_is_audited_once_with_what_it_stored(
    conn: sqlite3.Connection,
) -> None:
    """An independent attacker (F6): accepted deliveries changed raw rows and the audit
    trail said nothing. One entry per delivery that stored rows, in its transaction; a
    redelivery, a forged one and an event we do not use add none."""
    from core.audit import AuditFilter, query, verify

    payment = captured_payment()
    body = event("payment.captured", 1_782_000_000, payment=payment)
    deliver(conn, body, "evt_W1")
    deliver(conn, body, "evt_W1")  # Razorpay retries: a duplicate
    deliver(conn, body, "evt_W2", signature="0" * 64)  # forged
    deliver(conn, event("order.paid", 1_782_000_050, order={"id": "order_X"}), "evt_W3")

    entries = query(conn, AuditFilter(action="razorpay.webhook_applied"))
    assert [(e.actor, e.entity_type, e.entity_id) for e in entries] == [
        ("razorpay-webhook", "razorpay_event", "evt_W1")
    ]
    (entry,) = entries
    assert entry.payload["event"] == "payment.captured"
    assert entry.payload["upserted"] == [f"payment:{payment['id']}"]
    assert verify(conn).ok


def test_a_dispute_event_stores_the_dispute_newest_status_winning(
    conn: sqlite3.Connection,
) -> None:
    """Disputes have a raw table (won, lost and open decide different outcomes); a
    dispute webhook stores its dispute as a sync or an import would, and an older event
    arriving later does not undo a newer one (an independent sync tester noticed the
    webhook kept only the mark)."""
    payment = captured_payment()
    dispute = {
        "id": "disp_TestDispute02",
        "entity": "dispute",
        "payment_id": payment["id"],
        "amount": 50_000,
        "currency": "INR",
        "amount_deducted": 50_000,
        "status": "open",
        "phase": "chargeback",
        "reason_code": "fraudulent",
        "respond_by": 1_782_600_000,
        "created_at": 1_782_000_000,
    }
    lost = event("payment.dispute.lost", 1_782_200_000, dispute={**dispute, "status": "lost"})
    opened = event("payment.dispute.created", 1_782_000_100, payment=payment, dispute=dispute)

    first = deliver(conn, lost, "evt_D2")
    late = deliver(conn, opened, "evt_D1")  # the older event arrives last

    assert "dispute:disp_TestDispute02" in first.upserted
    assert "dispute:disp_TestDispute02" in " ".join(late.skipped)
    row = conn.execute(
        "SELECT status, amount, amount_deducted, payment_id FROM disputes WHERE id = ?",
        (dispute["id"],),
    ).fetchone()
    assert tuple(row) == ("lost", 50_000, 50_000, payment["id"])


def test_deliveries_keep_audit_verify_passing_and_a_payment_edited_after_is_named(
    conn: sqlite3.Connection,
) -> None:
    """Each stored row carries its MAC (core.rowmac), the second delivery's upsert keeping
    the stored values of a field it leaves out (its rows' MACs computed from what was
    stored); a payment edited by hand after is named (attacker round 3, F2)."""
    from core.audit import verify

    payment = captured_payment()
    deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_M1")
    refunded = dict(payment, status="refunded", amount_refunded=payment["amount"])
    refunded.pop("settled_by", None)
    refund = dict(REFUNDS[0], payment_id=payment["id"], amount=payment["amount"])
    deliver(
        conn, event("refund.processed", 1_782_000_100, refund=refund, payment=refunded), "evt_M2"
    )
    result = verify(conn)
    assert result.ok, result.problem
    with conn:
        conn.execute("UPDATE payments SET amount_refunded = 0 WHERE id = ?", (payment["id"],))
    result = verify(conn)
    assert not result.ok and payment["id"] in result.problem
