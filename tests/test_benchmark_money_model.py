"""`generate(..., money_model=True)`: Razorpay's money model beyond the spec (docs/engine.md).

Determinism, every new case in both splits, settlement arithmetic and bank credits, and the
labels' rules on hand-checked cases.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from core.benchmark import generate, read_ground_truth, rules
from core.benchmark.labels import money_payment_label, money_refund_label
from core.benchmark.money import SHARES

NEW_FILES = (
    "instant_settlements.csv",
    "instant_settlement_payouts.csv",
    "disputes.csv",
    "transfers.csv",
)


@pytest.fixture(scope="module")
def money_benchmark(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("money")
    generate(out, payments=5000, seed=42, money_model=True)
    return out


def _read(folder: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(folder / name, dtype=str, keep_default_na=False)


def test_same_seed_same_bytes_and_labels(tmp_path: Path) -> None:
    first = generate(tmp_path / "a", payments=400, seed=11, money_model=True)
    second = generate(tmp_path / "b", payments=400, seed=11, money_model=True)
    assert first.fingerprint == second.fingerprint
    assert first.ground_truth.read_bytes() == second.ground_truth.read_bytes()
    assert set(NEW_FILES) <= set(first.files)
    other = generate(tmp_path / "c", payments=400, seed=12, money_model=True)
    assert other.fingerprint != first.fingerprint


def test_option_off_writes_the_spec_files_only(tmp_path: Path) -> None:
    on = generate(tmp_path / "x", payments=300, seed=5)  # on by default
    off = generate(tmp_path / "x", payments=300, seed=5, money_model=False)  # files removed
    again = generate(tmp_path / "y", payments=300, seed=5, money_model=False)
    assert off.fingerprint == again.fingerprint
    assert off.fingerprint != on.fingerprint
    assert not any((tmp_path / "x" / name).exists() for name in NEW_FILES)
    header = (tmp_path / "x" / "payments.csv").read_text().splitlines()[0]
    assert "base_amount" not in header and "settled_by" not in header


def test_every_new_case_is_in_both_splits(money_benchmark: Path) -> None:
    truth = read_ground_truth(money_benchmark / "ground_truth.csv")
    kinds = {
        "international": "payment",
        "international_amount_mismatch": "payment",
        "international_refund": "refund",
        "settled_by_other": "payment",
        "hold_released": "payment",
        "instant_clean": "instant_settlement",
        "instant_short_payout": "instant_settlement",
        "instant_missing_credit": "instant_settlement",
        "instant_reversed": "instant_settlement",
    }
    scenarios = [f"{kinds.get(name, name.split('_')[0])}/{name}" for name in SHARES]
    scenarios += [
        "transfer/transfer_clean",
        "bank_entry/matched_instant",
    ]
    for scenario in scenarios:
        splits = set(truth.loc[truth["scenario"] == scenario, "split"])
        assert splits == {"development", "held_out"}, scenario
    held = truth[truth["split"] == "held_out"]
    for code in rules.MONEY_MODEL_CODES:
        assert (held["reason_code"] == code).any(), code
    assert (held["reason_code"] == rules.DISPUTE_UNDER_REVIEW).any()
    assert (held["match_method"] == rules.DIRECT).any()
    assert (held["exposure_class"] == "realised_loss").any()


def test_new_labels_follow_the_rules(money_benchmark: Path) -> None:
    truth = read_ground_truth(money_benchmark / "ground_truth.csv").set_index("scenario")
    expect = {
        "payment/international": ("MATCHED", ""),
        "payment/international_amount_mismatch": ("EXCEPTION", "AMOUNT_MISMATCH"),
        "payment/settled_by_other": ("MATCHED", ""),
        "payment/hold_released": ("MATCHED", ""),
        "refund/international_refund": ("MATCHED", ""),
        "dispute/dispute_won": ("MATCHED", ""),
        "dispute/dispute_won_not_reversed": ("EXCEPTION", "DISPUTE_REVERSAL_MISSING"),
        "dispute/dispute_lost": ("EXCEPTION", "DISPUTE_LOST"),
        "dispute/dispute_open": ("EXCEPTION", "DISPUTE_OPEN"),
        "dispute/dispute_under_review": ("PENDING", "DISPUTE_UNDER_REVIEW"),
        "transfer/transfer_clean": ("MATCHED", ""),
        "transfer/transfer_reversed": ("MATCHED", ""),
        "transfer/transfer_reversal_mismatch": ("EXCEPTION", "TRANSFER_REVERSAL_MISMATCH"),
        "transfer/transfer_amount_mismatch": ("EXCEPTION", "TRANSFER_AMOUNT_MISMATCH"),
        "transfer/transfer_missing": ("EXCEPTION", "MISSING_RECONCILIATION_RECORD"),
        "instant_settlement/instant_clean": ("MATCHED", ""),
        "instant_settlement/instant_short_payout": ("EXCEPTION", "BANK_UTR_AMOUNT_MISMATCH"),
        "instant_settlement/instant_missing_credit": ("EXCEPTION", "MISSING_BANK_ENTRY"),
        "instant_settlement/instant_reversed": ("EXCEPTION", "INSTANT_PAYOUT_REVERSED"),
    }
    for scenario, (status, code) in expect.items():
        rows = truth.loc[[scenario]]
        assert set(rows["status"]) == {status}, scenario
        assert set(rows["reason_code"]) == {code}, scenario
    assert set(truth.loc[["dispute/dispute_lost"], "exposure_class"]) == {"realised_loss"}
    assert set(truth.loc[["payment/settled_by_other"], "match_method"]) == {"direct"}
    # A lone dispute reversal credit (no debit, no disputes file) has no outcome, so no label.
    assert "recon_row/dispute_reversal" not in truth.index
    from core.root_causes import ROOT_CAUSES

    exceptions = truth[truth["status"] == "EXCEPTION"]
    assert set(exceptions["root_cause"]) <= set(ROOT_CAUSES)


def test_settlement_sums_and_bank_credits_hold(money_benchmark: Path) -> None:
    truth = read_ground_truth(money_benchmark / "ground_truth.csv")
    recon = pd.read_csv(money_benchmark / "settlement_recon.csv", keep_default_na=False)
    settlements = pd.read_csv(money_benchmark / "settlements.csv", keep_default_na=False)
    planted = set(
        truth.loc[
            truth["scenario"].isin(["settlement/sum_mismatch", "settlement/sum_and_bank_amount"]),
            "entity_id",
        ]
    )
    sums = recon[recon["settlement_id"] != ""].groupby("settlement_id")[["credit", "debit"]].sum()
    net = (sums["credit"] - sums["debit"]).reindex(settlements["id"]).to_numpy()
    broken = set(settlements.loc[settlements["amount"].to_numpy() != net, "id"])
    assert broken == planted
    # New rows ride in ordinary settlements.
    assert {"reversal", "transfer", "adjustment"} <= set(recon["type"])
    assert (recon["transfer_id"] != "").sum() >= 4
    # Instant payouts: each processed payout's UTR is on one IMPS credit (short or missing
    # only where planted).
    payouts = _read(money_benchmark, "instant_settlement_payouts.csv")
    statement = (money_benchmark / "bank_statement.csv").read_text()
    scenario = truth.set_index("entity_id")["scenario"]
    for _, payout in payouts[payouts["status"] == "processed"].iterrows():
        case = scenario[payout["instant_settlement_id"]]
        lines = [line for line in statement.splitlines() if payout["utr"] in line]
        if case.endswith("missing_credit"):
            assert lines == []
            continue
        assert len(lines) == 1
        fields = next(csv.reader([lines[0]]))
        assert fields[1].startswith("IMPS/")
        paise = int(fields[5].replace(",", "").replace(".", ""))
        if case.endswith("short_payout"):
            assert paise < int(payout["amount_settled"])
        else:
            assert paise == int(payout["amount_settled"])
    # International payments: INR base_amount, fee on it; the JPY one in whole yen.
    payments = _read(money_benchmark, "payments.csv")
    foreign = payments[payments["currency"] != "INR"]
    assert {"USD", "EUR", "GBP", "JPY"} <= set(foreign["currency"])
    assert (foreign["base_amount"] != "").all()
    assert (payments.loc[payments["settled_by"] == "Axis Bank", "id"].size) >= 2


def test_payment_rules_on_hand_checked_cases() -> None:
    base = {"inr": 10_000, "fee": 236, "late": False, "overdue": True, "root_cause": ""}
    row = {"amount": 10_000, "credit": 9_764, "held": False}

    def label(**facts: object) -> dict[str, str]:
        return money_payment_label({"id": "pay_x", "scenario": "s", **base, **facts})

    ok = label(rows=[row], settled_by="Razorpay")
    assert (ok["status"], ok["reason_code"]) == ("MATCHED", "")
    # INR compared with INR: the row settles less than base_amount.
    short = label(rows=[{**row, "amount": 9_000, "credit": 8_764}], settled_by="Razorpay")
    assert short["reason_codes"] == "AMOUNT_MISMATCH"
    # Same amount, different fee: code 4 on INR.
    fee = label(rows=[{**row, "credit": 9_700}], settled_by="Razorpay")
    assert fee["reason_code"] == "SETTLEMENT_AMOUNT_DISCREPANCY"
    # Settled by someone else, no row: MATCHED direct; with Razorpay, overdue: missing.
    other = label(rows=[], settled_by="Axis Bank")
    assert (other["status"], other["match_method"]) == ("MATCHED", "direct")
    assert label(rows=[], settled_by="razorpay")["reason_code"] == "MISSING_RECONCILIATION_RECORD"
    # A held row superseded by its release is no duplicate; a held row alone is ON_HOLD.
    released = label(rows=[{**row, "held": True}, row], settled_by="Razorpay")
    assert released["status"] == "MATCHED"
    held = label(rows=[{**row, "held": True}], settled_by="Razorpay")
    assert (held["status"], held["reason_code"]) == ("PENDING", "ON_HOLD")
    twice = label(rows=[row, row], settled_by="Razorpay")
    assert twice["reason_code"] == "DUPLICATE_RECONCILIATION_RECORD"


def test_refund_dispute_instant_transfer_rules() -> None:
    refund = {"id": "rfnd_x", "scenario": "s", "inr": 5_000, "fee": 0, "rows": 1, "overdue": True}
    assert money_refund_label({**refund, "debit": 5_000})["status"] == "MATCHED"
    assert money_refund_label({**refund, "debit": 5_100})["reason_code"] == "REFUND_AMOUNT_MISMATCH"

    assert rules.dispute_outcome("won", 100, 100) == ("MATCHED", "")
    assert rules.dispute_outcome("closed", 100, 40) == ("EXCEPTION", "DISPUTE_REVERSAL_MISSING")
    assert rules.dispute_outcome("lost", 100, 0) == ("EXCEPTION", "DISPUTE_LOST")
    assert rules.dispute_outcome("open", 0, 0) == ("EXCEPTION", "DISPUTE_OPEN")
    assert rules.dispute_outcome("under_review", 100, 0) == ("PENDING", "DISPUTE_UNDER_REVIEW")
    assert rules.exposure_class("DISPUTE_LOST") == "realised_loss"

    instant = rules.instant_settlement_codes
    assert instant(0, 500, [500], True, True, True) == ("MATCHED", [], "")
    assert instant(0, 500, [480], True, True, True)[1] == ["BANK_UTR_AMOUNT_MISMATCH"]
    assert instant(0, 500, [], True, True, True)[1] == ["MISSING_BANK_ENTRY"]
    assert instant(0, 500, [], True, False, True) == ("PENDING", ["AWAITING_BANK_CREDIT"], "")
    assert instant(200, 500, [500], True, True, True)[1] == ["INSTANT_PAYOUT_REVERSED"]
    assert instant(0, 500, [], True, True, False) == ("MATCHED", [], "no_bank_statement")
    assert instant(0, 0, [], False, True, True) == ("PENDING", ["AWAITING_SETTLEMENT"], "")

    transfer = rules.transfer_codes
    assert transfer(1, 1_003, 1_000, 3, 0, 0, True) == ("MATCHED", [])
    assert transfer(1, 1_010, 1_000, 3, 0, 0, True)[1] == ["TRANSFER_AMOUNT_MISMATCH"]
    assert transfer(1, 1_003, 1_000, 3, 400, 500, True)[1] == ["TRANSFER_REVERSAL_MISMATCH"]
    assert transfer(0, 0, 1_000, 3, 0, 0, True)[1] == ["MISSING_RECONCILIATION_RECORD"]
    assert transfer(0, 0, 1_000, 3, 0, 0, False) == ("PENDING", ["AWAITING_SETTLEMENT"])
    assert transfer(2, 1_003, 1_000, 3, 0, 0, True)[1] == ["DUPLICATE_RECONCILIATION_RECORD"]


def test_small_dataset_without_faults_or_bank(tmp_path: Path) -> None:
    result = generate(
        tmp_path, payments=200, seed=3, money_model=True, faults=False, bank_statement=False
    )
    truth = read_ground_truth(result.ground_truth)
    new = truth[truth["entity_type"].isin(["dispute", "transfer", "instant_settlement"])]
    assert len(new) and set(new["status"]) <= {"MATCHED", "PENDING"}
    instant = new[new["entity_type"] == "instant_settlement"]
    assert set(instant["match_method"]) == {"no_bank_statement"}
