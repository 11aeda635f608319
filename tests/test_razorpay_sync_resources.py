"""What the sync pulls beyond the plain lists: the card of a card payment (`expand[]=card`)
(docs/razorpay.md, "Sync").

The stand-in answers as Razorpay does: a payment carries its `card` only when the list asks
for it, so each test here fails on a sync that does not ask.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import requests

from core.db import connect, migrate
from core.db.raw import read_dataset
from core.razorpay.sync import SyncReport, sync
from tests.fake_razorpay import KEY_ID, KEY_SECRET, FakeRazorpay, make_payments
from tests.razorpay_support import fake_settings

DAY = dt.date(2026, 6, 8)
AFTER = dt.date(2026, 7, 15)  # "today": every synced day is over
AS_OF = "2026-06-30T23:59:59+05:30"
VISA_CREDIT = {"id": "card_V1", "network": "Visa", "type": "credit", "international": False,
               "sub_type": "consumer", "last4": "1111"}  # fmt: skip
RUPAY_DEBIT = {"id": "card_R1", "network": "RuPay", "type": "debit", "international": False,
               "sub_type": "consumer", "last4": "2222"}  # fmt: skip
NEW_TABLES = ("instant_settlements", "instant_payouts", "disputes", "transfers")


@pytest.fixture
def fake() -> Iterator[FakeRazorpay]:
    with FakeRazorpay() as server:
        yield server


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = connect(tmp_path / "synced.sqlite")
    migrate(connection)
    yield connection
    connection.close()


def run_sync(
    conn: sqlite3.Connection, fake: FakeRazorpay, first: dt.date, last: dt.date
) -> SyncReport:
    return sync(conn, fake_settings(fake), first, last, today=AFTER, sleep=lambda _: None)


def by_resource(report: SyncReport) -> dict[str, tuple[int, int, int]]:
    return {r.resource: (r.items, r.inserted, r.updated) for r in report.resources}


# -- cards -------------------------------------------------------------------------------


def card_payments() -> list[dict[str, Any]]:
    """Three payments on DAY: a Visa credit card, a RuPay debit card and a UPI payment."""
    visa, rupay, upi = make_payments(3, day=DAY)
    visa.update(method="card", card_id="card_V1", card=VISA_CREDIT)
    rupay.update(method="card", card_id="card_R1", card=RUPAY_DEBIT)
    return [visa, rupay, upi]


def test_the_stand_in_leaves_a_payments_card_out_unless_the_list_asks_for_it(
    fake: FakeRazorpay,
) -> None:
    fake.state.payments = card_payments()
    url, auth = f"{fake.base_url}/v1/payments", (KEY_ID, KEY_SECRET)

    plain = requests.get(url, auth=auth, timeout=10).json()["items"]
    expanded = requests.get(url, params={"expand[]": "card"}, auth=auth, timeout=10).json()

    assert all("card" not in item for item in plain)  # as Razorpay: the id only
    assert {item["id"]: item.get("card", {}).get("network") for item in expanded["items"]} == {
        p["id"]: (p["card"]["network"] if "card" in p else None) for p in card_payments()
    }


def test_synced_card_payments_keep_their_network_and_type(
    conn: sqlite3.Connection, fake: FakeRazorpay
) -> None:
    fake.state.payments = card_payments()

    run_sync(conn, fake, DAY, DAY)

    pages = fake.requests(path="/v1/payments")
    assert pages and all(r.query.get("expand[]") == "card" for r in pages)
    stored = read_dataset(conn).payments.set_index("id")
    columns = ["card_network", "card_type", "card_international", "card_sub_type"]
    got = {
        pid: tuple(None if pd.isna(v) else v for v in stored.loc[pid, columns])
        for pid in stored.index
    }
    visa, rupay, upi = (p["id"] for p in card_payments())
    assert got == {
        visa: ("Visa", "credit", "false", "consumer"),
        rupay: ("RuPay", "debit", "false", "consumer"),
        upi: (None, None, None, None),
    }
