"""Pricing by card network and type (core.books.pricing, core.ingest.cards): RuPay debit,
other debit, credit and corporate cards are priced by their own plan lines; unknown card
details fall back to the plan's `card` line, or are listed as "cannot classify" (never an
overcharge) when the plan has none."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from core.books.pricing import (
    PricingPlan,
    PricingRule,
    fee_check,
    overcharged,
    unclassified_cards,
)
from core.dataset import PAYMENT_COLUMNS, Dataset
from core.db import connect
from core.db.raw import read_dataset
from core.ingest import load_dataset, store_dataset
from core.ingest.entities import frames_from_items
from tests.engine_support import ts

CARD_RULES = (
    PricingRule("rupay_debit", 0),
    PricingRule("debit", 40),
    PricingRule("credit", 190),
    PricingRule("corporate", 300),
    PricingRule("international", 350),
)


def _fee(amount: int, bp: int) -> tuple[int, int]:
    base = (amount * bp + 5000) // 10000
    tax = (base * 18 + 50) // 100
    return base + tax, tax


def _card(pid: str, network: str | None, kind: str | None, **extra: object) -> dict[str, object]:
    return {
        "id": pid,
        "amount": 100_000,
        "method": "card",
        "card_network": network,
        "card_type": kind,
        **extra,
    }


def _dataset(rows: list[dict[str, object]]) -> Dataset:
    base = {
        "currency": "INR",
        "status": "captured",
        "captured": True,
        "amount_refunded": 0,
        "international": False,
        "created_at": ts("2026-06-10T10:00"),
    }
    frame = pd.DataFrame([{**base, **r} for r in rows], columns=list(PAYMENT_COLUMNS))
    return Dataset(payments=frame.astype(PAYMENT_COLUMNS))


def _classes(data: Dataset, plan: PricingPlan) -> dict[str, str]:
    check = fee_check(data, (plan,))
    return dict(zip(check["payment_id"], check["method_class"], strict=True))


def test_card_payments_are_classed_by_network_type_sub_type_and_international() -> None:
    rows = [
        _card("pay_rupay", "RuPay", "debit"),
        _card("pay_visa_debit", "Visa", "debit"),
        _card("pay_mc_credit", "MasterCard", "credit"),
        _card("pay_business", "Visa", "credit", card_sub_type="business"),
        _card("pay_abroad", "Visa", "credit", card_international="true"),
        _card("pay_flagged", "Visa", "debit", international=True),
        _card("pay_unknown", None, None),
        _card("pay_prepaid", "Visa", "prepaid"),
    ]
    for row in rows:
        row["fee"], row["tax"] = 0, 0
    plan = PricingPlan(1, 0, (*CARD_RULES, PricingRule("card", 200)))
    assert _classes(_dataset(rows), plan) == {
        "pay_rupay": "rupay_debit",
        "pay_visa_debit": "debit",
        "pay_mc_credit": "credit",
        "pay_business": "corporate",
        "pay_abroad": "international",
        "pay_flagged": "international",
        "pay_unknown": "card",
        "pay_prepaid": "card",
    }


def test_each_card_class_is_checked_against_its_own_line() -> None:
    # Every payment is charged the credit-card rate (1.90%): only the credit card is right;
    # the cheaper classes are overcharged by exactly the difference, the dearer ones not.
    charged, tax = _fee(100_000, 190)
    rows = [
        _card("pay_rupay", "RuPay", "debit"),
        _card("pay_debit", "Visa", "debit"),
        _card("pay_credit", "Visa", "credit"),
        _card("pay_corporate", "Visa", "credit", card_sub_type="business"),
        _card("pay_abroad", "Amex", "credit", card_international="true"),
    ]
    for row in rows:
        row["fee"], row["tax"] = charged, tax
    plan = PricingPlan(1, 0, CARD_RULES)
    over = overcharged(fee_check(_dataset(rows), (plan,))).set_index("payment_id")
    assert dict(over["overcharge"]) == {
        "pay_debit": charged - _fee(100_000, 40)[0],
        "pay_rupay": charged - 0,
    }
    assert dict(over["method_class"]) == {"pay_debit": "debit", "pay_rupay": "rupay_debit"}


def test_unknown_card_details_use_the_card_line_when_the_plan_has_one() -> None:
    charged, tax = _fee(100_000, 200)
    rows = [_card("pay_unknown", None, None, fee=charged, tax=tax)]
    plan = PricingPlan(1, 0, (*CARD_RULES, PricingRule("card", 200)))
    check = fee_check(_dataset(rows), (plan,))
    assert list(check["fee_plan"]) == [charged] and overcharged(check).empty
    assert unclassified_cards(_dataset(rows), (plan,)).empty


def test_unknown_card_details_without_a_card_line_cannot_be_classified_not_overcharged() -> None:
    charged, tax = _fee(100_000, 900)  # far above any line
    rows = [
        _card("pay_unknown", None, None, fee=charged, tax=tax),
        _card("pay_prepaid", "Visa", "prepaid", fee=charged, tax=tax),
        _card("pay_credit", "Visa", "credit", fee=charged, tax=tax),
    ]
    plan = PricingPlan(3, 0, CARD_RULES)
    data = _dataset(rows)
    assert list(overcharged(fee_check(data, (plan,)))["payment_id"]) == ["pay_credit"]
    lost = unclassified_cards(data, (plan,))
    assert list(lost["payment_id"]) == ["pay_prepaid", "pay_unknown"]
    assert set(lost["plan_version"]) == {3}


def test_the_api_card_object_fills_the_card_columns_and_survives_the_database(
    tmp_path: Path, db_url: str
) -> None:
    card = {"id": "card_1", "entity": "card", "network": "RuPay", "type": "debit"}
    items = [
        {
            "id": "pay_1",
            "entity": "payment",
            "amount": 10_000,
            "currency": "INR",
            "status": "captured",
            "captured": True,
            "method": "card",
            "created_at": ts("2026-06-10T10:00"),
            "fee": 0,
            "tax": 0,
            "card_id": "card_1",
            "card": {**card, "international": False, "sub_type": "consumer"},
        },
        {
            "id": "pay_2",
            "entity": "payment",
            "amount": 10_000,
            "currency": "INR",
            "status": "captured",
            "captured": True,
            "method": "upi",
            "created_at": ts("2026-06-10T10:00"),
            "card": None,
        },
    ]
    frame = frames_from_items("payments", items, "api")
    assert frame.loc[0, "card_network"] == "RuPay" and frame.loc[0, "card_type"] == "debit"
    assert frame.loc[0, "card_international"] == "false"
    assert frame.loc[0, "card_sub_type"] == "consumer"
    assert frame.loc[1, ["card_network", "card_type"]].isna().all()

    folder = tmp_path / "dataset"
    folder.mkdir()
    (folder / "payments.json").write_text(json.dumps({"entity": "collection", "items": items}))
    (folder / "settlements.csv").write_text("id,amount,status,fees,tax,utr,created_at\n")
    (folder / "settlement_recon.csv").write_text(
        "entity_id,type,debit,credit,amount,currency,fee,tax,settlement_id,created_at\n"
    )
    dataset, report = load_dataset(folder)
    conn = connect(db_url)
    store_dataset(
        conn,
        dataset,
        source="test",
        location=str(folder),
        content_hash=report.content_hash,
        files=report.files,
    )
    stored = read_dataset(conn).payments.set_index("id")
    conn.close()
    assert stored.loc["pay_1", "card_network"] == "RuPay"
    assert stored.loc["pay_1", "card_sub_type"] == "consumer"
    assert pd.isna(stored.loc["pay_2", "card_network"])


def test_a_report_with_card_network_and_type_columns_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "dataset"
    folder.mkdir()
    (folder / "payments.csv").write_text(
        "Payment ID,Amount,Currency,Status,Payment Method,Created At,Card Network,Card Type\n"
        "pay_1,100.00,INR,captured,card,10/06/2026 10:00:00,RuPay,debit\n"
    )
    (folder / "settlements.csv").write_text("id,amount,status,fees,tax,utr,created_at\n")
    (folder / "settlement_recon.csv").write_text(
        "entity_id,type,debit,credit,amount,currency,fee,tax,settlement_id,created_at\n"
    )
    dataset, _ = load_dataset(folder)
    row = dataset.payments.iloc[0]
    assert (row["card_network"], row["card_type"]) == ("RuPay", "debit")


def test_real_api_exports_carry_card_objects_that_classify_their_payments() -> None:
    real = Path(__file__).parent / "fixtures" / "real_exports" / "api_json"
    dataset, _ = load_dataset(real)
    pay = dataset.payments
    cards = pay[pay["method"] == "card"]
    assert len(cards) > 0 and cards["card_network"].notna().all()
    plan = PricingPlan(1, 0, (*CARD_RULES, PricingRule("card", 200)))
    check = fee_check(dataset, (plan,)).set_index("payment_id")
    for pid, row in cards.set_index("id").iterrows():
        if pid not in check.index:
            continue  # not captured
        klass = check.loc[pid, "method_class"]
        abroad = bool(row["international"]) or row["card_international"] == "true"
        if abroad or str(row["currency"]) != "INR":
            assert klass == "international", pid
        elif row["card_type"] == "credit":
            assert klass == "credit", pid
        elif row["card_type"] == "debit":
            assert klass in ("debit", "rupay_debit"), pid
