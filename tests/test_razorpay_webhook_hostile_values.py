"""A signed webhook carrying a value the importer refuses is refused (400, nothing stored):
webhooks validate through the importer's frames_from_items, so the amount ceiling and the id
rule hold for deliveries too (independent attacker F4, F5)."""

from __future__ import annotations

import sqlite3

import pytest

from tests.test_razorpay_webhooks import captured_payment, deliver, event, log, state


@pytest.fixture
def conn(db_conn: sqlite3.Connection) -> sqlite3.Connection:
    return db_conn


def test_a_webhook_payment_of_int64_max_paise_is_refused_and_nothing_stored(
    conn: sqlite3.Connection,
) -> None:
    payment = captured_payment()
    payment["amount"] = 9223372036854775807
    before = state(conn)

    result = deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_H1")

    assert (result.status, result.verdict) == (400, "malformed")
    assert "above the ceiling" in result.message, result.message
    assert state(conn) == before
    assert [v for _, v in log(conn)] == ["malformed"]


def test_a_webhook_fee_above_the_ceiling_is_refused(conn: sqlite3.Connection) -> None:
    payment = captured_payment()
    payment["fee"] = 10**12 + 1
    before = state(conn)

    result = deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_H2")

    assert (result.status, result.verdict) == (400, "malformed")
    assert state(conn) == before


@pytest.mark.parametrize(
    "bad_id",
    ["pay_\u202e1000009KAFEDUP", "pay_ABCD\nEFGH1234", "../../etc/passwd"],
    ids=["rlo", "newline", "path"],
)
def test_a_webhook_payment_id_with_a_bidi_newline_or_path_is_refused(
    conn: sqlite3.Connection, bad_id: str
) -> None:
    payment = captured_payment()
    payment["id"] = bad_id
    before = state(conn)

    result = deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_H3")

    assert (result.status, result.verdict) == (400, "malformed")
    assert "path-separator character" in result.message, result.message
    assert state(conn) == before


def test_a_webhook_amount_sent_as_a_digit_string_is_read_as_the_importer_reads_it(
    conn: sqlite3.Connection,
) -> None:
    """Kept: the importer reads `"amount": "47126450"` in a file as 47126450 paise, and a
    webhook goes through the same code; the ceiling applies to it all the same."""
    payment = captured_payment()
    payment["amount"] = str(payment["amount"])

    result = deliver(conn, event("payment.captured", 1_782_000_000, payment=payment), "evt_H4")

    assert (result.status, result.verdict) == (200, "accepted")
    row = conn.execute("SELECT amount FROM payments WHERE id = ?", (payment["id"],)).fetchone()
    assert row[0] == int(payment["amount"])
