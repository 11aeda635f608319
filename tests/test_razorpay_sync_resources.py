"""What the sync pulls beyond payments, refunds, settlements and recon: the card of a card
payment (`expand[]=card`), instant settlements with their payouts
(`expand[]=ondemand_payouts`), disputes and Route transfers (docs/razorpay.md, "Sync").

The stand-in answers as Razorpay does: a payment carries its `card` only when the list asks
for it, an instant settlement its payouts likewise, so each test here fails on a sync that
does not ask or does not fetch these lists.
"""

from __future__ import annotations

import datetime as dt
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import requests

from core.__main__ import main
from core.books.pricing import payment_class
from core.calendar import IST
from core.db import connect, migrate
from core.db.raw import read_dataset
from core.db.razorpay import raw_table_counts
from core.errors import InputError
from core.ingest import load_dataset, store_dataset
from core.razorpay.client import RESOURCES
from core.razorpay.export import export_dataset
from core.razorpay.status import sync_status
from core.razorpay.sync import SyncReport, sync
from tests import conftest
from tests.engine_support import UTR1, find, ts
from tests.fake_razorpay import KEY_ID, KEY_SECRET, FakeRazorpay, make_payments
from tests.razorpay_support import fake_settings, sorted_frame
from tests.test_engine_instant_transfers import build_all, full_world

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


# This module's `conn` tests run on SQLite and on PostgreSQL (tests/conftest.py).
conn = conftest.db_conn


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
    # so the pricing check classes them by their card, not as card payments of unknown kind
    classes = payment_class(
        stored["method"],
        stored["international"],
        stored[["card_network", "card_type", "card_sub_type"]],
    )
    assert classes.to_dict() == {visa: "credit", rupay: "rupay_debit", upi: "upi"}
    pages = fake.requests(path="/v1/payments")
    assert pages and all(r.query.get("expand[]") == "card" for r in pages)


# -- instant settlements, disputes, transfers ------------------------------------------


def merchant_tables() -> dict[str, list[dict[str, Any]]]:
    """tests/test_engine_instant_transfers.full_world(): pay_P2 paid out early by the instant
    settlement setlod_I1 (its payout setlodp_P1 credited by IMPS, bank_statement.csv:6) and
    the Route transfer trf_T1 settled in setl_S1; plus two disputes whose money moved in
    setl_S1: disp_L on pay_P1, lost (₹50 debited), and disp_W on pay_P0, won (₹30 debited,
    then credited back)."""
    tables = full_world()
    tables["disputes"] = [
        {"id": "disp_L", "payment_id": "pay_P1", "amount": 5_000, "amount_deducted": 5_000,
         "status": "lost", "reason_code": "fraudulent", "created_at": ts("2026-06-02T09:00")},
        {"id": "disp_W", "payment_id": "pay_P0", "amount": 3_000, "amount_deducted": 0,
         "status": "won", "reason_code": "product_not_received",
         "created_at": ts("2026-06-01T09:00")},
    ]  # fmt: skip
    in_s1 = {"settled_at": ts("2026-06-03T12:00"), "settlement_id": "setl_S1",
             "settlement_utr": UTR1}  # fmt: skip
    tables["recon"] += [
        {"entity_id": "adj_L1", "type": "adjustment", "amount": 5_000, "debit": 5_000,
         "dispute_id": "disp_L", "payment_id": "pay_P1", "created_at": ts("2026-06-02T09:00"),
         **in_s1},
        {"entity_id": "adj_W1", "type": "adjustment", "amount": 3_000, "debit": 3_000,
         "dispute_id": "disp_W", "payment_id": "pay_P0", "created_at": ts("2026-06-01T09:00"),
         **in_s1},
        {"entity_id": "adj_W2", "type": "adjustment", "amount": 3_000, "credit": 3_000,
         "dispute_id": "disp_W", "payment_id": "pay_P0", "created_at": ts("2026-06-02T15:00"),
         **in_s1},
    ]  # fmt: skip
    find(tables, "settlements", id="setl_S1")["amount"] -= 5_000  # the lost dispute's debit
    find(tables, "bank", reference=UTR1)["credit"] -= 5_000
    return tables


MERCHANT_FROM, MERCHANT_TO = dt.date(2026, 5, 1), dt.date(2026, 6, 10)  # every entity's day


@pytest.fixture(scope="module")
def merchant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """merchant_tables() as a dataset folder (stored, then exported: JSON envelopes and the
    bank statement in HDFC's layout)."""
    folder = tmp_path_factory.mktemp("merchant")
    source = connect(folder / "source.sqlite")
    try:
        migrate(source)
        store_dataset(
            source, build_all(merchant_tables()), source="test", location="merchant_tables",
            content_hash="merchant_tables",
        )  # fmt: skip
        export_dataset(source, folder / "dataset")
    finally:
        source.close()
    return folder / "dataset"


def reconcile(folder: Path, results: Path) -> pd.DataFrame:
    assert main(["reconcile", str(folder), "--out", str(results), "--as-of", AS_OF]) == 0
    return pd.read_csv(results, dtype=str, keep_default_na=False)


def test_instant_settlements_disputes_and_transfers_are_stored_as_their_files_would_be(
    conn: sqlite3.Connection, fake: FakeRazorpay, merchant: Path
) -> None:
    fake.load_dataset(merchant)
    fake.state.rate_limit_every = 5  # retried, as any other request

    report = run_sync(conn, fake, MERCHANT_FROM, MERCHANT_TO)

    assert {
        r: by_resource(report)[r] for r in ("instant_settlements", "disputes", "transfers")
    } == {
        "instant_settlements": (1, 2, 0),  # the settlement and its one payout
        "disputes": (2, 2, 0),
        "transfers": (1, 1, 0),
    }
    pages = fake.requests(path="/v1/settlements/ondemand", status=200)
    assert len(pages) == (MERCHANT_TO - MERCHANT_FROM).days + 1  # one page a day
    assert all(r.query.get("expand[]") == "ondemand_payouts" for r in pages)
    assert {r.method for r in fake.requests()} == {"GET"}
    stored, (original, _) = read_dataset(conn), load_dataset(merchant)
    for table in NEW_TABLES:
        pd.testing.assert_frame_equal(
            sorted_frame(getattr(stored, table), "id"),
            sorted_frame(getattr(original, table), "id"),
            obj=table,
        )
    status = sync_status(conn)
    assert {w.resource for w in status.watermarks if w.complete} == set(RESOURCES)
    counts = raw_table_counts(conn)
    assert [counts[t] for t in NEW_TABLES] == [1, 1, 2, 1]

    again = run_sync(conn, fake, MERCHANT_FROM, MERCHANT_TO)  # idempotent, payouts included

    assert (again.inserted, again.updated) == (0, 0)


def test_a_synced_merchant_with_instant_settlements_disputes_and_transfers_reconciles_right(
    conn: sqlite3.Connection, fake: FakeRazorpay, merchant: Path, tmp_path: Path
) -> None:
    fake.load_dataset(merchant)
    run_sync(conn, fake, MERCHANT_FROM, MERCHANT_TO)
    out = tmp_path / "exported"
    export_dataset(conn, out)
    shutil.copyfile(merchant / "bank_statement.csv", out / "bank_statement.csv")

    synced = reconcile(out, tmp_path / "synced.csv")

    got = synced.set_index(["entity_type", "entity_id"])
    status = {key: (row["status"], row["reason_code"]) for key, row in got.iterrows()}
    # the payment the instant settlement paid is settled, its IMPS credit is its payout's
    assert status[("payment", "pay_P2")] == ("MATCHED", "")
    assert status[("instant_settlement", "setlod_I1")] == ("MATCHED", "")
    assert status[("bank_entry", "bank_statement.csv:6")] == ("MATCHED", "")
    assert got.loc[("bank_entry", "bank_statement.csv:6"), "settlement_id"] == "setlod_I1"
    assert status[("dispute", "disp_L")] == ("EXCEPTION", "DISPUTE_LOST")
    assert status[("dispute", "disp_W")] == ("MATCHED", "")
    assert status[("transfer", "trf_T1")] == ("MATCHED", "")
    assert not {"MISSING_SETTLEMENT", "UNMATCHED_BANK_CREDIT", "DISPUTE_DEBIT"} & set(
        synced["reason_code"]
    )
    # and every outcome is the one the merchant's own files give
    pd.testing.assert_frame_equal(synced, reconcile(merchant, tmp_path / "files.csv"))


def test_a_dispute_razorpay_reports_with_an_unknown_status_fails_its_day_and_writes_nothing(
    conn: sqlite3.Connection, fake: FakeRazorpay, merchant: Path
) -> None:
    fake.load_dataset(merchant)
    won = next(d for d in fake.state.disputes if d["id"] == "disp_W")  # the earlier one
    won["status"] = "pending_decision"
    bad_day = dt.datetime.fromtimestamp(won["created_at"], tz=IST).date()

    with pytest.raises(InputError) as refused:
        run_sync(conn, fake, MERCHANT_FROM, MERCHANT_TO)

    assert f"razorpay:disputes:{bad_day.isoformat()}" in str(refused.value)
    assert "pending_decision" in str(refused.value)
    start = int(dt.datetime.combine(bad_day, dt.time(0), tzinfo=IST).timestamp())
    stored = read_dataset(conn)
    assert len(stored.payments) > 0  # the days before it are stored
    assert (stored.payments["created_at"] >= start).sum() == 0
    assert len(stored.disputes) == 0  # disp_L's day comes after it: never reached
    assert sync_status(conn).state == "failed"


def test_a_field_the_api_leaves_out_of_every_transfer_keeps_its_stored_value(
    conn: sqlite3.Connection, fake: FakeRazorpay, merchant: Path
) -> None:
    fake.load_dataset(merchant)
    fake.state.transfers[0]["recipient_settlement_id"] = "setl_LinkedAcc1"
    run_sync(conn, fake, MERCHANT_FROM, MERCHANT_TO)
    for transfer in fake.state.transfers:
        del transfer["recipient_settlement_id"]  # a later answer without the field at all

    again = run_sync(conn, fake, MERCHANT_FROM, MERCHANT_TO)

    assert by_resource(again)["transfers"] == (1, 0, 0)
    kept = read_dataset(conn).transfers.set_index("id").loc["trf_T1", "recipient_settlement_id"]
    assert kept == "setl_LinkedAcc1"
